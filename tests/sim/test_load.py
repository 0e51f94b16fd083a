"""Scaled arrivals, offered load and peak demand (dlsched/sim/load.py, instance.traces.scale_arrivals)."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instance.traces import load_trace, scale_arrivals
from dlsched.sim.load import arrival_scale_for_load, arrival_scale_for_peak, inflate, job_work, offered_load, peak_demand
from tests.sim.helpers import LinearSpeed, cluster, job, trace


def _toy():
    # LinearSpeed: rate = workers, so job j runs iterations / workers seconds holding workers * gpus GPUs
    return trace(job("a", 10.0, 40.0, gpus=1, min_workers=2), job("b", 30.0, 30.0, gpus=2, min_workers=1),
                 job("c", 110.0, 12.0, gpus=1, min_workers=4))


def test_scale_arrivals_keeps_the_first_arrival_order_and_work():
    tr = _toy()
    out = scale_arrivals(tr, 0.25)
    assert [j.arrival for j in out.jobs] == [10.0, 15.0, 35.0]
    assert [j.iterations for j in out.jobs] == [j.iterations for j in tr.jobs] and "x0.25" in out.source
    assert [j.arrival for j in scale_arrivals(tr, 2.0).jobs] == [10.0, 50.0, 210.0]
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(InputError, match="arrival scale"):
            scale_arrivals(tr, bad)


def test_load_trace_time_scale(data):
    path = data / "tiresias/60_job.csv"
    a = [j.arrival for j in load_trace(path).jobs]
    b = [j.arrival for j in load_trace(path, time_scale=0.5).jobs]
    assert b == [a[0] + 0.5 * (x - a[0]) for x in a]


def test_offered_load_by_hand_and_the_scale_for_a_target():
    tr, cl = _toy(), cluster(servers=2, gpus=4)          # 8 GPUs; window 110 - 10 = 100 s
    g, d = job_work(tr, cl, LinearSpeed())
    assert d.tolist() == [20.0, 30.0, 3.0] and g[:, 0].tolist() == [2.0, 2.0, 4.0]
    load = offered_load(tr, cl, LinearSpeed())
    assert load["gpu"] == pytest.approx((40 + 60 + 12) / (8 * 100))   # GPU-seconds / (GPUs x window)
    assert load["cpu"] == pytest.approx((40 + 30 + 12) / (16 * 100))  # a worker holds 1 cpu
    s = arrival_scale_for_load(tr, cl, LinearSpeed(), 0.9)
    assert offered_load(scale_arrivals(tr, s), cl, LinearSpeed())["gpu"] == pytest.approx(0.9)
    with pytest.raises(InputError, match="target load"):
        arrival_scale_for_load(tr, cl, LinearSpeed(), 0.0)


def _brute_peak(g, d, a, cap):
    """The most held at any start time (the peak of a step function is at a start)."""
    return max(sum(g[i] for i in range(len(a)) if a[i] <= t < a[i] + d[i]) for t in a) / cap


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 50), st.integers(1, 30), st.integers(1, 4)), min_size=1, max_size=12),
       s=st.sampled_from([1.0, 0.5, 0.1, 0.01]))
def test_peak_demand_against_brute_force_and_monotone(rows, s):
    rows.sort()
    a = np.array([r[0] for r in rows], dtype=float)
    d = np.array([r[1] for r in rows], dtype=float)
    g = np.array([r[2] for r in rows], dtype=float)
    assert peak_demand(g, d, s * a, 10.0) == pytest.approx(_brute_peak(g, d, s * a, 10.0))
    assert peak_demand(g, d, 0.5 * s * a, 10.0) >= peak_demand(g, d, s * a, 10.0)


def test_scale_for_a_peak_is_the_largest_to_tolerance():
    tr, cl = _toy(), cluster(servers=2, gpus=4)
    g, d = job_work(tr, cl, LinearSpeed())
    a = np.array([j.arrival for j in tr.jobs]) - tr.jobs[0].arrival
    s = arrival_scale_for_peak(tr, cl, LinearSpeed(), 0.75, rel_tol=1e-9)     # 6 of 8 GPUs: c with a or b
    assert peak_demand(g[:, 0], d, s * a, 8.0) >= 0.75 > peak_demand(g[:, 0], d, s * a * math.exp(1e-9) * (1 + 1e-12), 8.0)
    assert s == pytest.approx(30.0 / 80.0)           # c (offset 100 s) starts before b (offset 20 s, 30 s long) ends
    assert arrival_scale_for_peak(tr, cl, LinearSpeed(), 0.5) == 1.0       # c alone holds 4 of 8 as recorded
    with pytest.raises(InputError, match="1 of it"):
        arrival_scale_for_peak(tr, cl, LinearSpeed(), 1.01)                 # all together hold 8 of 8


def test_cli_target_load_and_peak(capsys):
    code = main(["simulate", "dl2:12:3", "--cluster", "dl2:4", "--policy", "fifo", "--speed", "table", "--target-load", "0.8",
                 "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["offered_load"]["gpu"] == pytest.approx(0.8) and doc["arrival_scale"] > 0
    assert doc["arrival_rule"] == "offered gpu load 0.8" and "arrivals x" in doc["trace"]
    code = main(["simulate", "dl2:12:3", "--cluster", "dl2:4", "--policy", "fifo", "--speed", "table", "--arrival-scale", "0.5",
                 "--target-load", "0.8"])
    assert code == 2 and "at most one" in capsys.readouterr().err


@settings(max_examples=30, deadline=None)
@given(st.floats(1.0, 4.0), st.integers(0, 10**6))
def test_inflate_adds_drawn_copies_of_jobs_at_drawn_arrivals(factor, seed):
    tr = _toy()
    out = inflate(tr, factor, seed)
    n = len(tr.jobs)
    assert len(out.jobs) == n + round((factor - 1) * n)
    arrivals = [j.arrival for j in out.jobs]
    assert arrivals == sorted(arrivals)
    by_name = {j.name: j for j in tr.jobs}
    assert all(by_name[j.name] == j for j in out.jobs if "+" not in j.name)   # every original, unchanged
    assert sum("+" not in j.name for j in out.jobs) == n
    for j in out.jobs:
        src = by_name[j.name.split("+")[0]]
        assert (j.iterations, dict(j.worker_demand), j.min_workers) == (src.iterations, dict(src.worker_demand), src.min_workers)
        assert j.arrival in {a.arrival for a in tr.jobs}
    assert [j.name for j in inflate(tr, factor, seed).jobs] == [j.name for j in out.jobs]   # seeded


def test_inflate_identity_and_bad_factor():
    tr = _toy()
    assert inflate(tr, 1.0, 3) is tr
    for bad in (0.5, -1.0, math.inf, math.nan, True):
        with pytest.raises(InputError, match="inflation factor"):
            inflate(tr, bad)


def test_inflation_makes_a_peak_above_the_whole_trace_reachable():
    tr = _toy()
    cl = cluster(1, gpus=8)
    with pytest.raises(InputError):
        arrival_scale_for_peak(tr, cl, LinearSpeed(), 1.5)                  # all together hold 8 of 8
    big = inflate(tr, 3.0, 0)
    s = arrival_scale_for_peak(big, cl, LinearSpeed(), 1.5)
    g, d = job_work(big, cl, LinearSpeed())
    a = np.array([j.arrival for j in big.jobs])
    assert peak_demand(g[:, 0], d, a[0] + s * (a - a[0]), 8.0) >= 1.5


def test_cli_inflate(capsys):
    code = main(["simulate", "dl2:12:3", "--cluster", "dl2:4", "--policy", "fifo", "--speed", "table", "--inflate", "2",
                 "--seed", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["jobs"] == 24 and doc["inflation"] == 2 and doc["inflation_seed"] == 1
    assert "inflated x2, seed 1" in doc["trace"] and doc["completed"] == 24
    assert main(["simulate", "dl2:12:3", "--cluster", "dl2:4", "--policy", "fifo", "--speed", "table", "--inflate", "0.5"]) == 2
    assert "inflation factor" in capsys.readouterr().err

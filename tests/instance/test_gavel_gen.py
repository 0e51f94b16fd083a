"""Seeded Gavel-style traces (dlsched/instance/gavel_gen.py): Gavel's recipe, bursts, bad arguments."""

import math

import numpy as np
import pytest

from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instance.gavel_gen import DISTRIBUTED, gavel_trace, philly_gpus
from dlsched.instance.traces import load_trace
from dlsched.perf.throughputs import load_gavel


def _key(trace):
    return [(j.name, j.arrival, j.job_type, j.iterations, j.min_workers) for j in trace.jobs]


def test_seeded_and_named_by_its_spec(data):
    a, b, c = load_trace("gavel:300:4"), gavel_trace(300, 4), gavel_trace(300, 5)
    assert _key(a) == _key(b)
    assert _key(a) != _key(c)
    assert _key(load_trace("gavel:300")) == _key(gavel_trace(300, 0))
    assert _key(load_trace("gavel:300:4:rate=2,bursts=2,burst_jobs=10")) == _key(gavel_trace(300, 4, 2.0, bursts=2, burst_jobs=10))


def test_philly_sizes_at_gavels_bounds():
    # Gavel: 1 below 0.7, 2 on [0.7, 0.8], 4 on (0.8, 0.95], 8 above
    r = np.array([0.0, 0.6999, 0.7, 0.8, 0.8001, 0.95, 0.9501, 0.9999])
    assert philly_gpus(r).tolist() == [1, 1, 2, 2, 4, 4, 8, 8]


def test_distributions_follow_gavels_recipe(data):
    n = 6000
    trace = gavel_trace(n, 7, rate=3.0)
    table = load_gavel()
    gpus = np.array([j.min_workers for j in trace.jobs])
    assert all(j.max_workers == j.min_workers for j in trace.jobs)
    # shares 0.70 / 0.10 / 0.15 / 0.05, within 4 standard errors
    for size, share in ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05)):
        assert abs((gpus == size).mean() - share) < 4 * math.sqrt(share * (1 - share) / n)
    # one-GPU jobs: every one of the 26 types, about equally; larger ones only the distributed families
    one = [j.job_type for j in trace.jobs if j.min_workers == 1]
    counts = np.array([one.count(t) for t in table.job_types])
    assert len(table.job_types) == 26 and counts.min() > 0
    assert abs(counts - len(one) / 26).max() < 5 * math.sqrt(len(one) / 26)
    multi = {j.job_type for j in trace.jobs if j.min_workers > 1}
    assert multi and all(t.split(" (")[0] in DISTRIBUTED for t in multi)
    assert len(multi) == 19
    # durations on V100s: 20 % long, log10 of minutes uniform on [3, 4] (long) and [1.5, 3] (short)
    minutes = np.log10(np.array([j.meta["v100_seconds"] for j in trace.jobs]) / 60)
    assert minutes.min() >= 1.5 and minutes.max() <= 4.0
    assert abs((minutes > 3).mean() - 0.2) < 4 * math.sqrt(0.16 / n)
    short = minutes[minutes <= 3]
    assert abs(np.median(short) - 2.25) < 0.05
    # work: the job runs its duration on its size's V100s (Gavel's measured steps/s)
    for j in trace.jobs[:200]:
        h = table.steps[(j.job_type, "v100", j.min_workers)]
        assert j.iterations == pytest.approx(j.meta["v100_seconds"] * h, rel=1e-12)
    # arrivals: the first at 0, exponential gaps of mean 3600 / rate
    arr = np.array([j.arrival for j in trace.jobs])
    assert arr[0] == 0.0 and (np.diff(arr) >= 0).all()
    gaps = np.diff(arr)
    assert abs(gaps.mean() - 1200.0) < 4 * 1200.0 / math.sqrt(n)
    assert not any(j.meta["burst"] for j in trace.jobs)


def test_bursts_of_large_jobs(data):
    trace = gavel_trace(400, 3, rate=0.5, bursts=5, burst_jobs=20, burst_seconds=60.0)
    burst = [j for j in trace.jobs if j.meta["burst"]]
    assert len(trace) == 400 and len(burst) == 100
    assert {j.min_workers for j in burst} == {8, 32}
    assert all(j.job_type.split(" (")[0] in DISTRIBUTED for j in burst)
    # five groups, each within its 60 s
    arr = np.sort([j.arrival for j in burst])
    starts = np.r_[0, np.flatnonzero(np.diff(arr) > 60.0) + 1]
    assert len(starts) == 5
    assert all(arr[s:e][-1] - arr[s] <= 60.0 for s, e in zip(starts, np.r_[starts[1:], arr.size]))
    # names follow arrival order
    assert [j.name for j in trace.jobs] == [f"gavel-{i}" for i in range(400)]
    assert [j.arrival for j in trace.jobs] == sorted(j.arrival for j in trace.jobs)


def test_unmeasured_sizes_take_the_simulators_rate(data):
    from dlsched.sim.speed import ThroughputSpeed
    speed = ThroughputSpeed()
    trace = gavel_trace(60, 2, rate=0.5, bursts=2, burst_jobs=30)
    big = [j for j in trace.jobs if j.min_workers == 32]
    assert big
    for j in big:
        h = 32 * speed.per_worker(j.job_type, "v100", 32)
        assert j.iterations == pytest.approx(j.meta["v100_seconds"] * h, rel=1e-12)


@pytest.mark.parametrize("kwargs, where", [({"rate": 0.0}, "rate"), ({"rate": float("nan")}, "rate"),
                                           ({"bursts": -1}, "bursts"), ({"burst_jobs": 0}, "burst_jobs"),
                                           ({"bursts": 3, "burst_jobs": 50}, "bursts"), ({"burst_seconds": -1.0}, "burst_seconds")])
def test_bad_arguments_name_the_option(kwargs, where):
    with pytest.raises(InputError, match=where):
        gavel_trace(100, 0, **kwargs)


@pytest.mark.parametrize("spec, said", [("gavel:10:1:rate=x", "gavel trace option rate: expected a number"),
                                        ("gavel:10:1:speed=2", "KEY=VALUE with KEY one of rate"),
                                        ("gavel:10:1:rate=0", "gavel trace option rate: expected a finite number > 0"),
                                        ("gavel:10:1:bursts=2", "bursts x burst_jobs at most the 10 jobs"),
                                        ("gavel:ten", "gavel:N[:SEED[:KEY=VALUE,...]]"),
                                        # digits of another script are not a count (Python's int() reads them)
                                        ("gavel:\u0663:1", "gavel:N[:SEED[:KEY=VALUE,...]]"),
                                        ("gavel:0", "1 to 1,000,000 jobs"),
                                        # longer than a file name may be: once a traceback from the check for a file
                                        ("gavel:6:1:bursts=1" + "0" * 400, "gavel trace option bursts")])
def test_bad_specs_exit_2_with_a_clear_error(capsys, spec, said):
    code = main(["simulate", spec, "--cluster", "1:1:1", "--policy", "fifo"])
    err = capsys.readouterr().err
    assert code == 2 and said in err and "Traceback" not in err

"""hetplace's exchanges of jobs between GPU types (`dlsched/policies/type_exchange.py`, `HetPlace._exchange`)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.traces import load_trace
from dlsched.policies import type_exchange as tx
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from dlsched.sim.run import load_cluster
from dlsched.sim.speed import make_speed
from tests.sim.helpers import Audit, job, trace
from tests.sim.test_hetplace_types import PerWorkerSpeed


@st.composite
def models(draw):
    G = draw(st.integers(2, 3))
    n = draw(st.integers(2, 7))
    need = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n))
    per = [1] * n
    cap = draw(st.lists(st.integers(0, 16), min_size=G, max_size=G))
    rho = draw(st.lists(st.lists(st.sampled_from([1e-9, 0.1, 0.25, 0.5, 0.9, 0.95, 1.0]), min_size=G, max_size=G),
                        min_size=n, max_size=n))
    rem = draw(st.lists(st.floats(1.0, 100.0), min_size=n, max_size=n))
    return tx.TypeModel(rem, need, rho, per, cap, 1e-9)


@settings(max_examples=150, deadline=None)
@given(models())
def test_the_exchange_never_raises_the_projected_sum_and_its_types_fit_the_gpus(m):
    first, f0, f = tx.exchange(m)
    everyone = np.ones(m.rem.size, dtype=bool)
    base = tx.rounds(m, m.rem, everyone)
    assert f0 == tx.projected(m, base)
    assert f <= f0
    t = tx.rounds(m, m.rem, everyone, first)
    assert f == tx.projected(m, t)                 # the value it claims is that of the assignment it returns
    if first:
        assert f < f0
    for a, g in first:
        assert t[a] == g                           # every promotion holds
    for g in range(m.cap.size):
        assert m.need[t == g].sum() <= m.cap[g] + 1e-9
    assert all(m.ok[a, t[a]] for a in np.flatnonzero(t >= 0))


def test_the_projection_replays_the_rounds_at_each_completion():
    # one fast and one slow GPU; a (2 iterations) and b (4), both at 1 a second on the fast GPU, 0.5 on the slow.
    # By kappa a takes the fast GPU (2 / 0.5 < 4 / 0.5): a ends at 2; b does 1 on the slow GPU, then moves up: 5.
    m = tx.TypeModel([2.0, 4.0], [1, 1], [[1.0, 0.5], [1.0, 0.5]], [1, 1], [1, 1], 1e-9)
    t = tx.rounds(m, m.rem, np.ones(2, dtype=bool))
    assert t.tolist() == [0, 1]
    assert tx.projected(m, t) == pytest.approx(2.0 + 5.0)
    assert tx.projected(m, np.array([1, 0])) == pytest.approx(4.0 + 4.0)    # b first: both end at 4 (a at 0.5 a second)


def burst():
    # One 4-GPU server of each type. L (4 workers, 10 s on the V100s) runs at 0.95 of that on the P100s and 0.2
    # on the K80s; B (4 workers, 10 s on the P100s) holds the P100s; four 1-GPU jobs S (40 s each on a V100) run
    # at 0.9 on a K80. By kappa (L 40 / 0.05 = 800, S 40 / 0.1 = 400, B 40 / 0.5 = 80) the S take the V100s
    # and L, its P100s held by B, runs on the K80s until B ends at 10 s, then on the P100s: L ends at
    # 10 + 32 / 3.8, the S at 40: 188.42 s in all. Exchanged, L takes the V100s and ends at 10, the S run on the
    # K80s at 0.9 to 10 and on the V100s from there: 10 + 31 = 41 each, 184 s in all.
    cl = Cluster.from_groups([(1, {"gpu": 4, "cpu": 16}, "k80"), (1, {"gpu": 4, "cpu": 16}, "p100"),
                              (1, {"gpu": 4, "cpu": 16}, "v100")])
    small = [f"s{i}" for i in range(4)]
    speed = PerWorkerSpeed({"L": {"v100": 1.0, "p100": 0.95, "k80": 0.2}, "B": {"v100": 0.5, "p100": 1.0, "k80": 0.2},
                            **{s: {"v100": 1.0, "p100": 0.5, "k80": 0.9} for s in small}})
    tr = trace(job("L", 0.0, 40.0, min_workers=4), job("B", 0.0, 40.0, min_workers=4), *(job(s, 0.0, 40.0) for s in small))
    return tr, cl, speed


def run(tr, cl, speed, **params):
    audit = Audit(make_policy("hetplace", **params))
    res = simulate(tr, cl, audit, speed)
    assert not audit.problems and res.status == "completed"
    return dict(zip(res.names, res.completion.tolist())), audit.inner


def test_a_large_job_takes_the_fast_gpus_of_several_small_ones_where_the_sum_falls():
    tr, cl, speed = burst()
    got, pol = run(tr, cl, speed)
    assert got == pytest.approx({"L": 10.0, "B": 10.0, **{f"s{i}": 41.0 for i in range(4)}})
    assert pol.exchanges == 1
    # the rule alone (the option off) keeps the small jobs on the V100s: 188.42 s against 184 s
    old, pol = run(tr, cl, speed, exchange=False)
    assert old == pytest.approx({"L": 10.0 + 32.0 / 3.8, "B": 10.0, **{f"s{i}": 40.0 for i in range(4)}})
    assert pol.exchanges == 0
    assert sum(got.values()) < sum(old.values())


def test_a_budgeted_decision_takes_the_rule_alone():
    # the exchange's search is not bounded by a clock: under a budget (however generous) the rule's types
    tr, cl, speed = burst()
    got, pol = run(tr, cl, speed, budget_ms=100000)
    old, _ = run(tr, cl, speed, exchange=False)
    assert pol.exchanges == 0 and got == pytest.approx(old)


@pytest.mark.parametrize("seed", [6, 18])
def test_exchanges_on_generated_bursts_keep_every_placement_feasible(seed):
    tr = load_trace(f"gavel:14:{seed}:bursts=1,burst_jobs=14")
    cl = load_cluster("36:36:36", tr)
    audit = Audit(make_policy("hetplace"))
    res = simulate(tr, cl, audit, make_speed("throughput"), seed=0)
    assert not audit.problems and res.status == "completed"
    assert audit.inner.exchanges > 0

"""Lower bounds on the average JCT (dlsched.sim.bounds): SRPT against brute force, every bound below
what policies and the exact optimum reach."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.sim.bounds import mean_jct_lower_bound, srpt_flow_time
from dlsched.sim.engine import simulate
from dlsched.sim.policies import make_policy
from dlsched.sim.speed import TableSpeed


def test_srpt_by_hand():
    # job 0 (work 4) from 0; job 1 (work 1) at 1 preempts it: 1 ends at 2, 0 at 5
    assert srpt_flow_time(np.array([0.0, 1.0]), np.array([4.0, 1.0])) == pytest.approx((5 - 0) + (2 - 1))
    # an idle gap before a late arrival
    assert srpt_flow_time(np.array([0.0, 10.0]), np.array([2.0, 3.0])) == pytest.approx(2 + 3)


def nonpreemptive_best(release, work):
    best = np.inf
    for order in itertools.permutations(range(len(work))):
        t, total = 0.0, 0.0
        for j in order:
            t = max(t, release[j]) + work[j]
            total += t - release[j]
        best = min(best, total)
    return best


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 5)), min_size=1, max_size=5))
def test_srpt_is_at_most_every_order_and_equals_spt_without_release_dates(jobs):
    release = np.array([r for r, _ in jobs], float)
    work = np.array([w for _, w in jobs], float)
    assert srpt_flow_time(release, work) <= nonpreemptive_best(release, work) + 1e-9
    zero = np.zeros(len(work))
    assert srpt_flow_time(zero, work) == pytest.approx(nonpreemptive_best(zero, work))


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 10_000))
def test_bounds_lie_below_every_policy(seed):
    trace, cluster, speed = dl2_trace(6, seed=seed), dl2_cluster(2), TableSpeed()
    b = mean_jct_lower_bound(trace, cluster, speed, interval=1200.0)
    assert b["bound"] == max(b["isolated"], b["lp"], *b["capacity"].values())
    for name in ("drf", "optimus", "srtf", "fifo"):
        res = simulate(trace, cluster, make_policy(name), speed)
        assert res.status == "completed"
        assert b["bound"] <= float(np.mean(res.jct)) + 1e-6, name
    # jobs alone never finish faster than their isolated bound
    alone = simulate(trace.__class__(trace.jobs[:1], "one"), dl2_cluster(16), make_policy("drf"), speed)
    assert mean_jct_lower_bound(trace.__class__(trace.jobs[:1], "one"), dl2_cluster(16), speed)["isolated"] \
        <= float(alone.jct[0]) + 1e-6

"""Lower bounds on the average JCT (dlsched.sim.bounds): exact on hand cases, below every policy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.sim.bounds import jct_lower_bound, lp_lower_bound, pareto, srpt_completions, trace_lower_bound
from dlsched.sim.engine import simulate
from dlsched.registry import make_policy
from dlsched.sim.speed import TableSpeed

from .helpers import LinearSpeed, TypedSpeed, cluster, job, trace, typed_cluster


def test_srpt_by_hand():
    # job 1 arrives at 1 with 1 s of work, less than job 0's 2 s left: it preempts
    assert srpt_completions(np.array([0.0, 1.0]), np.array([3.0, 1.0])).tolist() == [4.0, 2.0]
    assert srpt_completions(np.array([5.0]), np.array([2.0])).tolist() == [7.0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3)), min_size=1, max_size=3))
def test_srpt_sum_is_the_best_unit_step_preemptive_schedule(jobs):
    """SRPT's ΣC_j equals the minimum over every preemptive schedule in unit steps (integer data: brute force)."""
    rel = np.array([r for r, _ in jobs], dtype=float)
    work = np.array([p for _, p in jobs], dtype=float)
    horizon = int(rel.max() + work.sum())
    assume(horizon <= 6)
    best = np.inf
    for seq in itertools.product(range(len(jobs) + 1), repeat=horizon):   # who runs in each unit step (n = idle)
        left, done, ok = work.copy(), np.full(len(jobs), np.inf), True
        for t, j in enumerate(seq):
            if j < len(jobs):
                if rel[j] > t or left[j] <= 0:
                    ok = False
                    break
                left[j] -= 1
                if left[j] == 0:
                    done[j] = t + 1
        if ok and np.all(np.isfinite(done)):
            best = min(best, done.sum())
    assert srpt_completions(rel, work).sum() == pytest.approx(best)


def test_one_job_alone_is_exact():
    # 3 workers at 1 it/s each, 30 iterations: 10 s at its fastest size, plus the restart
    tr = trace(job("a", arrival=5.0, iterations=30.0, min_workers=1, max_workers=3))
    b = jct_lower_bound(tr, cluster(gpus=4), LinearSpeed(), restart_seconds=2.0)
    assert b["alone"] == pytest.approx(12.0) and b["bound"] == pytest.approx(12.0)
    lp = lp_lower_bound(tr, cluster(gpus=4), LinearSpeed(), 2.0, slot_seconds=1.0)
    assert lp["bound"] == pytest.approx(12.0)


def test_capacity_binds_when_jobs_queue():
    # two 1-GPU jobs of 10 s each at time 0 on a 1-GPU cluster: the best average JCT is 15 s
    tr = trace(job("a", iterations=10.0), job("b", iterations=10.0))
    b = jct_lower_bound(tr, cluster(gpus=1), LinearSpeed())
    assert b["alone"] == pytest.approx(10.0)
    assert b["capacity"]["gpu"] == pytest.approx(15.0) and b["bound"] == pytest.approx(15.0)
    lp = lp_lower_bound(tr, cluster(gpus=1), LinearSpeed(), slot_seconds=1.0)
    assert 10.0 <= lp["bound"] <= 15.0 + 1e-6


def test_pareto_keeps_the_undominated_sizes():
    T = np.array([10.0, 5.0, 5.0, 12.0])
    u = np.array([[0.1], [0.2], [0.3], [0.1]])
    assert pareto(T, u).tolist() == [0, 1]


@pytest.mark.parametrize("seed", [7, 8])
def test_bounds_are_below_every_policy_on_dl2_traces(seed):
    tr, cl, sp = dl2_trace(25, seed), dl2_cluster(6), TableSpeed()
    alone = jct_lower_bound(tr, cl, sp, 30.0)
    lp = lp_lower_bound(tr, cl, sp, 30.0, slot_seconds=1800.0)
    assert lp["status"] == "optimal" and lp["bound"] >= alone["alone"] - 1e-6
    both = trace_lower_bound(tr, cl, sp, 30.0, slot_seconds=1800.0)
    assert both["bound"] == max(alone["bound"], lp["bound"]) and both["lp"] == lp["bound"]
    for name in ("drf", "optimus", "srtf"):
        res = simulate(tr, cl, make_policy(name), sp, seed=seed, restart_seconds=30.0)
        assert res.status == "completed"
        assert max(alone["bound"], lp["bound"]) <= float(np.mean(res.jct)) + 1e-6


# -- the bound beside every run, on clusters of several GPU types ------------------------------

BOUNDED = ("fifo", "srtf", "drf", "tetris", "fluid", "hetplace", "gavel-max-min-fairness-perf",
           "gavel-finish-time-fairness", "gavel-fifo-perf", "gavel-min-total-duration")


@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 600), st.integers(100, 3000), st.integers(1, 3), st.integers(0, 2)),
                min_size=1, max_size=6),
       st.sampled_from([0.0, 20.0]))
def test_the_bound_is_below_every_policy_on_two_gpu_types(rows, restart):
    jobs = [job(f"j{i}", arrival=float(a), iterations=float(k), min_workers=w, max_workers=w + e)
            for i, (a, k, w, e) in enumerate(sorted(rows))]
    tr, cl, sp = trace(*jobs), typed_cluster({"fast": 1, "slow": 2}), TypedSpeed({"fast": 3.0, "slow": 1.0})
    b = jct_lower_bound(tr, cl, sp, restart)
    typed = lp_lower_bound(tr, cl, sp, restart, slot_seconds=100.0)
    assert typed["by_type"] and typed["status"] == "optimal"
    for name in BOUNDED:
        res = simulate(tr, cl, make_policy(name), sp, restart_seconds=restart)
        assert res.status == "completed", name
        assert max(b["bound"], typed["bound"]) <= float(np.mean(res.jct)) * (1 + 1e-9), name


def test_the_lp_by_type_counts_each_types_gpus_apart():
    # three 1-worker jobs of 300 iterations at 0 on one fast GPU (100 s a job) and one slow GPU (300 s):
    # with the GPUs pooled every job could run at the fast rate on either; by type only one at a time can
    tr = trace(*(job(name, iterations=300.0) for name in "abc"))
    cl, sp = typed_cluster({"fast": 1, "slow": 1}, gpus=1), TypedSpeed({"fast": 3.0, "slow": 1.0})
    pooled = lp_lower_bound(tr, cl, sp, slot_seconds=10.0, by_type=False)
    typed = lp_lower_bound(tr, cl, sp, slot_seconds=10.0)
    assert typed["by_type"] and not pooled["by_type"]
    assert typed["bound"] > pooled["bound"] + 20.0
    best = min(float(np.mean(simulate(tr, cl, make_policy(p), sp).jct)) for p in BOUNDED)
    assert typed["bound"] <= best + 1e-6


def test_the_bound_takes_each_size_at_its_best_type():
    # one 2-worker job of 600 iterations: 100 s on the fast type (3/s a worker), 300 s on the slow one;
    # server 0 is slow, so a bound read on server 0 alone would claim 300 s
    cl = typed_cluster({"slow": 1, "fast": 1})
    b = jct_lower_bound(trace(job("a", iterations=600.0, min_workers=2)), cl, TypedSpeed({"fast": 3.0, "slow": 1.0}))
    assert b["alone"] == pytest.approx(100.0)


def test_certified_bound_of_a_run():
    from dlsched.sim.bounds import certified_bound
    from dlsched.sim.speed import Noisy

    tr, cl = trace(job("a", iterations=10.0), job("b", iterations=10.0)), cluster(gpus=1)
    res = simulate(tr, cl, make_policy("fifo"), LinearSpeed())
    got = certified_bound(res, tr, cl, LinearSpeed())
    assert got["lower_bound"] == pytest.approx(15.0) and got["ratio_to_bound"] == pytest.approx(1.0)
    noisy = certified_bound(res, tr, cl, Noisy(LinearSpeed(), 0.3))
    assert noisy["lower_bound"] is None and "noise" in noisy["lower_bound_note"]


def test_a_window_relaxes_the_lp_and_a_wide_one_is_the_lp():
    # three jobs queue on one GPU: a window of one job-length leaves the later ones' work in their
    # tails, free of the capacity rows; a window past the horizon is the LP itself
    tr = trace(*(job(name, arrival=float(a), iterations=100.0) for name, a in (("a", 0), ("b", 10), ("c", 20))))
    cl, sp = cluster(gpus=1), LinearSpeed()
    full = lp_lower_bound(tr, cl, sp, slot_seconds=10.0, horizon=400.0)["bound"]
    narrow = lp_lower_bound(tr, cl, sp, slot_seconds=10.0, horizon=400.0, window=1.0)["bound"]
    wide = lp_lower_bound(tr, cl, sp, slot_seconds=10.0, horizon=400.0, window=50.0)["bound"]
    fifo = float(np.mean(simulate(tr, cl, make_policy("fifo"), sp).jct))
    assert jct_lower_bound(tr, cl, sp)["alone"] - 1e-9 <= narrow < full - 1.0 <= fifo
    assert wide == pytest.approx(full)

"""Gavel's allocation LPs (dlsched.policies.gavel_lp) and its round-based mechanism (dlsched.policies.gavel)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from scipy.optimize import linprog

from dlsched.errors import InputError
from dlsched.policies import gavel_cvxpy, gavel_lp
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate

from .helpers import Audit, LinearSpeed, TypedSpeed, job, trace, typed_cluster

GAVEL = ("gavel-max-min-fairness", "gavel-max-min-fairness-perf", "gavel-finish-time-fairness",
         "gavel-max-sum-throughput", "gavel-min-total-duration", "gavel-fifo-perf")


# -- the LPs on hand-computed optima ------------------------------------------------------------

def test_max_min_fairness_by_hand():
    # three 1-GPU jobs on 2 GPUs of one type: each gets 2/3 of the time
    z = np.ones((3, 1))
    a = gavel_lp.max_min_fairness(z, z, np.array([2.0]))
    assert a.value == pytest.approx(2 / 3) and a.X[:, 0] == pytest.approx([2 / 3] * 3)
    # heterogeneity-aware: T = [[2, 1], [1, 1]] on one GPU of each type; equal-share throughputs 1.5 and 1,
    # W = [[4/3, 2/3], [1, 1]]: job 1 can reach at most 1 (its row sums to <= 1), and both reach 1
    T, z, cap = np.array([[2.0, 1.0], [1.0, 1.0]]), np.ones((2, 2)), np.ones(2)
    W = z * T / ((T * cap).sum(axis=1) / cap.sum())[:, None]
    assert gavel_lp.max_min_fairness(W, z, cap).value == pytest.approx(1.0)
    # the second LP: jobs 0 and 1 share type 0's one GPU (minimum 1/2); job 2 alone on type 1 may
    # stay at 1/2 in the first LP's vertex, and gets all of it once the minimum is kept
    W = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    a = gavel_lp.max_min_fairness(W, np.ones((3, 2)), np.array([1.0, 2.0]))
    assert a.value == pytest.approx(0.5) and a.lps == 2
    assert a.X == pytest.approx(np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 1.0]]))


def test_las_spreads_each_job_over_the_types_it_runs_on_at_one_size():
    # LAS's objective does not see the types: job r runs only on type 0 (1 GPU there), jobs a and b
    # on both; every job reaches 1. The spread gives a and b the room r leaves, [1, 2] GPUs, as
    # [1/3, 2/3] of their time: totals kept, capacity kept (type 0: 1 + 2/3, type 1: 4/3)
    W = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    cap = np.array([2.0, 2.0])
    lp = gavel_lp.max_min_fairness(W, W, cap)
    X = gavel_lp.even_over_types(lp.X, W, cap)
    assert X == pytest.approx(np.array([[1.0, 0.0], [1 / 3, 2 / 3], [1 / 3, 2 / 3]]))
    assert X.sum(axis=1) == pytest.approx(lp.X.sum(axis=1))
    # equal GPU counts: an even split, as Gavel's interior-point solver returns (the problem is
    # symmetric in the types), where a simplex vertex puts a job's time on one type
    z = np.ones((3, 3))
    X = gavel_lp.even_over_types(gavel_lp.max_min_fairness(z, z, np.full(3, 2.0)).X, z, np.full(3, 2.0))
    assert X == pytest.approx(np.full((3, 3), 1 / 3))


def test_max_sum_throughput_and_min_total_duration_by_hand():
    T, z, cap = np.array([[2.0, 1.0], [1.0, 1.0]]), np.ones((2, 2)), np.ones(2)
    a = gavel_lp.max_sum_throughput(T, z, cap)
    assert a.value == pytest.approx(3.0) and a.X == pytest.approx(np.eye(2))
    # 100 and 200 steps at 1 step/s on one GPU: both done by 300 s at the earliest
    m = gavel_lp.min_total_duration(np.ones((2, 1)), np.ones((2, 1)), np.array([1.0]), np.array([100.0, 200.0]))
    assert m.value == pytest.approx(300.0) and m.X[:, 0] == pytest.approx([1 / 3, 2 / 3])


def test_finish_time_fairness_by_hand():
    # two 1-step jobs on one GPU, isolated share 1/2 each (E = 2); job 0 has waited 1 s:
    # rho_0 = (1 + 1/a)/2 = rho_1 = (1/(1-a))/2 at a^2 + a - 1 = 0, rho* = (3 + sqrt 5)/4
    T, z = np.ones((2, 1)), np.ones((2, 1))
    a = gavel_lp.finish_time_fairness(T, z, np.array([1.0]), np.ones(2), np.array([1.0, 0.0]), np.full(2, 2.0))
    assert a.value == pytest.approx((3 + math.sqrt(5)) / 4, rel=1e-8)
    assert a.X[0, 0] == pytest.approx((math.sqrt(5) - 1) / 2, rel=1e-6)


def test_fifo_perf_by_hand():
    # job 0 takes type 1 (3 > 1); job 1 the only free type 0; job 2 fits nowhere and stops the queue
    T = np.array([[1.0, 3.0], [2.0, 1.0], [5.0, 5.0], [1.0, 1.0]])
    a = gavel_lp.fifo_perf(T, np.ones((4, 2)), np.ones(2))
    assert a.X.tolist() == [[0, 1], [1, 0], [0, 0], [0, 0]]


def test_srpt_perf_by_hand():
    # remaining work at the best type: job 4 (0.1 / 4) first needs 2 GPUs and is skipped (it does
    # not stop the queue); job 0 (3 / 3 = 1, ties by row) takes its fastest type 1; job 2 (5 / 5)
    # the free type 0; job 1 (4 / 2) fits no free type; job 3 cannot run anywhere
    T = np.array([[1.0, 3.0], [2.0, 1.0], [5.0, 5.0], [0.0, 0.0], [4.0, 4.0]])
    z = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [2.0, 2.0]])
    R = np.array([3.0, 4.0, 5.0, 1.0, 0.1])
    a = gavel_lp.srpt_perf(T, z, np.array([1.0, 1.0]), R)
    assert a.X.tolist() == [[0, 1], [0, 0], [1, 0], [0, 0], [0, 0]]
    # with 2 GPUs on type 0 job 4 takes both (ties between types: the lower index); job 0 type 1
    b = gavel_lp.srpt_perf(T, z, np.array([2.0, 1.0]), R)
    assert b.X.tolist() == [[0, 1], [0, 0], [0, 0], [0, 0], [1, 0]]


# -- properties on random instances, and the CVXPY statement agrees --------------------------

@st.composite
def instances(draw):
    m, K = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    T = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]), min_size=m * K, max_size=m * K))).reshape(m, K)
    size = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 4.0]), min_size=m, max_size=m)))
    cap = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 4.0, 8.0]), min_size=K, max_size=K)))
    z = np.where(size[:, None] <= cap[None, :], size[:, None], 0.0) * np.ones((1, K))
    T = np.where(z > 0, T, 0.0)
    R = np.array(draw(st.lists(st.floats(1.0, 1e4), min_size=m, max_size=m)))
    t = np.array(draw(st.lists(st.floats(0.0, 1e3), min_size=m, max_size=m)))
    return T, z, cap, R, t


def feasible(X, z, cap, T):
    return (X >= 0).all() and (X <= 1).all() and ((z * X).sum(axis=0) <= cap + 1e-6).all() \
        and (X.sum(axis=1) <= 1 + 1e-6).all() and (X[T <= 0] == 0).all()


def ftf_reachable(T, z, cap, R, t, E, rho) -> bool:
    """Whether some allocation X gives every job with work left a finish-time ratio
    (t_j + R_j / tau_j(X)) / E_j <= rho: tau_j(X) = sum_k T_jk X_jk >= R_j / (rho E_j - t_j), an LP in X."""
    m, K = T.shape
    live = R > 0
    if np.any(rho * E[live] <= t[live]):
        return False
    need = np.where(live, R / np.where(live, rho * E - t, 1.0), 0.0)
    A = np.vstack([np.kron(np.ones(m), np.eye(K)) * z.ravel(), np.kron(np.eye(m), np.ones(K)),
                   -np.kron(np.eye(m), np.ones(K)) * T.ravel()])
    b = np.concatenate([cap, np.ones(m), -need])
    res = linprog(np.zeros(m * K), A_ub=A, b_ub=b, bounds=list(zip(np.zeros(m * K), (T > 0).ravel().astype(float))))
    return res.status == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
@example((np.array([[0.5, 0.0], [0.0, 0.0], [0.5, 0.5]]), np.array([[2.0, 2.0], [1.0, 1.0], [2.0, 2.0]]),
          np.array([2.0, 4.0]), np.ones(3), np.zeros(3)))     # LAS's spread once gave a type 1 + 5e-10
def test_every_lp_is_feasible_and_agrees_with_its_cvxpy_statement(inst):
    T, z, cap, R, t = inst
    share = (T * cap).sum(axis=1) / cap.sum()
    W = np.where(share[:, None] > 0, z * T / np.where(share > 0, share, 1.0)[:, None], 0.0)
    mm = gavel_lp.max_min_fairness(W, z, cap)
    assert feasible(mm.X, z, cap, T)
    live = (W > 0).any(axis=1)
    if live.any():
        assert ((W * mm.X).sum(axis=1)[live] >= mm.value * (1 - 1e-6) - 1e-9).all()   # the second LP keeps the minimum
    assert mm.value == pytest.approx(gavel_cvxpy.max_min_fairness(W, z, cap), rel=1e-6, abs=1e-9)
    if mm.value > 0:
        # the second LP's optimum, stated densely and solved by scipy: max sum W X keeping every live job at the minimum
        m, K = W.shape
        A = np.vstack([np.kron(np.ones(m), np.eye(K)) * z.ravel(), np.kron(np.eye(m), np.ones(K)),
                       -np.kron(np.eye(m), np.ones(K))[live] * W.ravel()])
        b = np.concatenate([cap, np.ones(m), np.full(int(live.sum()), -mm.value * (1 - 1e-9))])
        ref = linprog(-W.ravel(), A_ub=A, b_ub=b, bounds=list(zip(np.zeros(m * K), (W > 0).ravel().astype(float))))
        assert (W * mm.X).sum() == pytest.approx(-ref.fun, rel=1e-6, abs=1e-9)
    # LAS (W = z where the job runs): the spread over types keeps it feasible and every job's total
    Wl = np.where(T > 0, z, 0.0)
    las = gavel_lp.max_min_fairness(Wl, z, cap).X
    spread = gavel_lp.even_over_types(las, Wl, cap)
    assert feasible(spread, z, cap, T) and spread.sum(axis=1) == pytest.approx(las.sum(axis=1), abs=1e-9)
    ms = gavel_lp.max_sum_throughput(T, z, cap)
    assert feasible(ms.X, z, cap, T)
    assert ms.value == pytest.approx(gavel_cvxpy.max_sum_throughput(T, z, cap), rel=1e-6, abs=1e-9)
    runs = (T > 0).any(axis=1)
    md = gavel_lp.min_total_duration(T[runs], z[runs], cap, R[runs])
    assert feasible(md.X, z[runs], cap, T[runs])
    if runs.any():
        assert md.value == pytest.approx(gavel_cvxpy.min_total_duration(T[runs], z[runs], cap, R[runs]), rel=1e-6)
        iso = (gavel_lp.isolated_share(z[runs], cap) * T[runs]).sum(axis=1)
        E = R[runs] / iso
        ft = gavel_lp.finish_time_fairness(T[runs], z[runs], cap, R[runs], t[runs], E)
        assert feasible(ft.X, z[runs], cap, T[runs])
        assert ft.value == pytest.approx(gavel_lp.ftf_ratios(ft.X, T[runs], R[runs], t[runs], E).max())
        # optimal: no allocation reaches a ratio 1e-5 below (an LP in X for a fixed ratio, by scipy)
        assert not ftf_reachable(T[runs], z[runs], cap, R[runs], t[runs], E, ft.value * (1 - 1e-5))
        # Gavel's convex program, by an interior-point conic solver at its default tolerances (1e-8):
        # never better than ours (Clarabel once stopped "optimal" 0.25 % above the optimum, t of 365 s)
        assert ft.value <= gavel_cvxpy.finish_time_fairness(T[runs], z[runs], cap, R[runs], t[runs], E) * (1 + 1e-5)
    ff = gavel_lp.fifo_perf(T, z, cap)
    assert feasible(ff.X, z, cap, T) and set(np.unique(ff.X)) <= {0.0, 1.0}
    sp = gavel_lp.srpt_perf(T, z, cap, R)
    assert feasible(sp.X, z, cap, T) and set(np.unique(sp.X)) <= {0.0, 1.0}
    # maximal: a job left out fits no type with the GPUs the others left
    left = cap - (sp.X * z).sum(axis=0)
    out = sp.X.sum(axis=1) == 0
    assert not ((T[out] > 0) & (z[out] > 0) & (z[out] <= left + 1e-9)).any()


# -- the round mechanism ------------------------------------------------------------------------

def test_two_jobs_share_one_gpu_round_by_round():
    # LAS gives each 1/2; rounds of 360 s alternate (job 0 first, then whoever has received less):
    # 3 rounds of work each, job 0 runs rounds 0, 2, 4 and job 1 rounds 1, 3, 5
    tr = trace(job("a", iterations=3 * 360.0), job("b", iterations=3 * 360.0))
    res = simulate(tr, typed_cluster({"v100": 1}, gpus=1), make_policy("gavel-max-min-fairness"), LinearSpeed())
    assert res.completion.tolist() == pytest.approx([5 * 360.0, 6 * 360.0])


def test_rounds_give_each_job_its_allocation_as_a_share_of_time_whatever_its_size():
    # one server of 2 GPUs; a 2-GPU job a and 1-GPU jobs b and c, all long. LAS: max min(2 X_a, X_b, X_c)
    # under 2 X_a + X_b + X_c <= 2 gives X = (1/3, 2/3, 2/3): a runs alone one round in three, b and c
    # together in the others. The share a job's priority compares with X is its share of the seconds
    # run (Gavel's _job_time_so_far); a share of GPU-seconds would settle at 2 r_a / X_a = r_b / X_b,
    # a in one round of five (6 of the first 30)
    tr = trace(job("a", iterations=1e6, min_workers=2), job("b", iterations=1e6), job("c", iterations=1e6))
    rounds = {}

    class Spy(Audit):
        def schedule(self, state, events):
            out = super().schedule(state, events)
            rounds[state.time] = set(out)
            return out

    audit = Spy(make_policy("gavel-max-min-fairness"))
    simulate(tr, typed_cluster({"v100": 1}, gpus=2), audit, LinearSpeed(), max_time=30 * 360.0 - 1)
    ran = [rounds[t] for t in sorted(rounds)][:30]
    assert not audit.problems and len(ran) == 30
    assert all(r in ({0}, {1, 2}) for r in ran)
    assert sum(r == {0} for r in ran) == 10


def test_a_freed_gpu_idles_until_the_round_ends():
    # on 2 GPUs, job c frees its GPU at 100 s while job a runs on: job b, arriving at 10 s, waits for
    # the next round (360 s); once nothing runs, a round starts at once (Gavel's round ends when its
    # last lease does): job d, arriving at 1000 s on an idle cluster, starts then
    tr = trace(job("a", iterations=500.0), job("c", iterations=100.0), job("b", arrival=10.0, iterations=50.0),
               job("d", arrival=1000.0, iterations=10.0))
    res = simulate(tr, typed_cluster({"v100": 1}, gpus=2), make_policy("gavel-fifo-perf"), LinearSpeed())
    assert res.first_start.tolist() == [0.0, 0.0, 360.0, 1000.0]
    assert res.completion.tolist() == pytest.approx([500.0, 100.0, 410.0, 1010.0])


def test_las_runs_a_job_on_every_type_it_fits():
    # one job alone on a V100 and a K80 (one GPU each): LAS gives it half its time on each, so over
    # its 20 rounds it runs on both (a vertex of the LP put it on one type for the whole run)
    cl = typed_cluster({"v100": 1, "k80": 1}, gpus=1)
    seen = []

    class Spy(Audit):
        def schedule(self, state, events):
            out = super().schedule(state, events)
            seen.extend(cl.gpu_type[s] for pl in out.values() for s in pl.workers)
            return out

    audit = Spy(make_policy("gavel-max-min-fairness"))
    res = simulate(trace(job("a", iterations=20 * 360.0 * 2.5)), cl, audit, TypedSpeed({"v100": 4.0, "k80": 1.0}))
    assert res.status == "completed" and not audit.problems
    assert {"v100", "k80"} <= set(seen) and min(seen.count("v100"), seen.count("k80")) >= 4


def test_an_allocation_holds_for_reset_seconds():
    # Gavel's minimum time between allocations: job a (5000 s) alone, allocated at 0; b arrives at
    # 10 s. By default b has its share at the next round (360 s); with reset_seconds=1000 the
    # allocation of t = 0 holds until the first round at or after 1000 s (1080 s), and b waits
    # beside a free GPU; c, arriving when the cluster is idle and the allocation is 6,000 s old, starts at once
    tr = trace(job("a", iterations=5000.0), job("b", arrival=10.0, iterations=100.0),
               job("c", arrival=12000.0, iterations=10.0))
    cl = typed_cluster({"v100": 1}, gpus=2)
    now = simulate(tr, cl, make_policy("gavel-fifo-perf"), LinearSpeed())
    held = simulate(tr, cl, make_policy("gavel-fifo-perf", reset_seconds=1000.0), LinearSpeed())
    assert now.first_start.tolist() == [0.0, 360.0, 12000.0]
    assert held.first_start.tolist() == [0.0, 1080.0, 12000.0]
    with pytest.raises(InputError, match="reset_seconds"):
        make_policy("gavel-fifo-perf", reset_seconds=-1.0)


@pytest.mark.parametrize("name", GAVEL)
def test_multi_gpu_jobs_never_mix_types_and_fast_jobs_get_fast_gpus(name):
    cl = typed_cluster({"v100": 2, "k80": 2})
    speed = TypedSpeed({"v100": 4.0, "k80": 1.0})
    tr = trace(*[job(f"j{i}", arrival=30.0 * i, iterations=2000.0 + 500 * i, min_workers=w, max_workers=w)
                 for i, w in enumerate([2, 1, 3, 2, 1, 4])])
    seen = []

    class Spy(Audit):
        def schedule(self, state, events):
            out = super().schedule(state, events)
            seen.extend({cl.gpu_type[s] for s in pl.workers} for pl in out.values())
            return out

    audit = Spy(make_policy(name))
    res = simulate(tr, cl, audit, speed)
    assert res.status == "completed" and not audit.problems
    assert seen and all(len(types) == 1 for types in seen)
    if name != "gavel-max-min-fairness":          # the heterogeneity-agnostic one may leave V100s idle
        assert any(types == {"v100"} for types in seen)

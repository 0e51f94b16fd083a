"""Optimus as a simulator policy (MODELS.md §5): the greedy, the placement principle, whole runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.sim.engine import simulate
from dlsched.registry import make_policy
from dlsched.policies.optimus import Optimus, marginal_gain_allocation, place_job, place_principle
from dlsched.sim.speed import TableSpeed

from .helpers import cluster, job, trace


def _times(rem, rates):
    """T[p, w] = rem / rate[p, w], inf where the rate is 0."""
    rates = np.asarray(rates, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(rates > 0, rem / np.where(rates > 0, rates, 1.0), np.inf)


# -- the greedy ----------------------------------------------------------------------------------

def test_heap_gives_the_one_free_worker_to_the_largest_gain():
    # two all-reduce jobs (p = 0), room for 3 workers: both start with 1, the third goes to job 1
    t0 = _times(100.0, [[0, 1.0, 1.5]])   # gain of a 2nd worker: 100 - 66.7 = 33.3
    t1 = _times(100.0, [[0, 1.0, 3.0]])   # gain: 100 - 33.3 = 66.7
    dw = np.array([[1.0], [1.0]])
    dp = np.zeros((2, 1))
    out = marginal_gain_allocation([t0, t1], dw, dp, np.array([3.0]), np.array([3.0]), [(0, 1), (0, 1)])
    assert out == {0: (0, 1), 1: (0, 2)}


def test_gain_is_divided_by_the_dominant_share():
    # job 0's worker needs 2 GPUs, job 1's one: equal time gains, so job 1 (half the share) wins
    t = _times(100.0, [[0, 1.0, 2.0]])
    dw = np.array([[2.0], [1.0]])
    out = marginal_gain_allocation([t, t], dw, np.zeros((2, 1)), np.array([4.0]), np.array([4.0]), [(0, 1), (0, 1)])
    assert out == {0: (0, 1), 1: (0, 2)}


def test_stops_when_no_gain_is_positive():
    # a worker beyond 2 slows the job down: it stops at 2 with resources to spare
    t = _times(50.0, [[0, 1.0, 2.0, 1.8, 1.5]])
    out = marginal_gain_allocation([t], np.array([[1.0]]), np.zeros((1, 1)), np.array([10.0]), np.array([10.0]),
                                   [(0, 1)])
    assert out == {0: (0, 2)}


def test_adds_ps_when_it_helps_and_respects_the_maxima():
    # rate = min(p, w): adding either alone helps only in turns; the arrays bound p <= 3, w <= 4
    rates = np.minimum.outer(np.arange(4), np.arange(5)).astype(float)
    out = marginal_gain_allocation([_times(60.0, rates)], np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]),
                                   np.array([100.0, 100.0]), np.array([100.0, 100.0]), [(1, 1)])
    assert out == {0: (1, 1)}  # neither task alone raises min(p, w): no positive gain
    rates = np.add.outer(np.arange(4), np.arange(5)).astype(float)  # each task helps
    out = marginal_gain_allocation([_times(60.0, rates)], np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]),
                                   np.array([100.0, 100.0]), np.array([100.0, 100.0]), [(1, 1)])
    assert out == {0: (3, 4)}


def test_start_allocations_in_order_while_they_fit():
    t = _times(10.0, [[0, 1.0]])
    out = marginal_gain_allocation([t, t, t], np.ones((3, 1)) * 2, np.zeros((3, 1)), np.array([5.0]), np.array([5.0]),
                                   [(0, 1)] * 3)
    assert out == {0: (0, 1), 1: (0, 1)}


def _naive_greedy(times, dw, dp, cap, free, start, order=None):
    """Reference: recompute every gain at every step and take the largest (no heap); the start
    sizes go to the jobs in ``order`` (default: the list's), equal gains to the job earlier in the list."""
    capn = np.where(cap > 0, cap, 1.0)
    sw, sp = np.maximum((dw / capn).max(1), 1e-12), np.maximum((dp / capn).max(1), 1e-12)
    left = free.astype(float).copy()
    alloc = {}
    for i in (range(len(start)) if order is None else order):
        p0, w0 = start[i]
        need = p0 * dp[i] + w0 * dw[i]
        if np.isfinite(times[i][p0, w0]) and np.all(need <= left + 1e-9):
            alloc[i] = [p0, w0]
            left -= need
    while True:
        best = None
        for i, (p, w) in sorted(alloc.items()):
            T = times[i]
            for kind, (pp, ww), d, s in ((1, (p, w + 1), dw[i], sw[i]), (0, (p + 1, w), dp[i], sp[i])):
                if pp >= T.shape[0] or ww >= T.shape[1] or (kind == 0 and p == 0):
                    continue
                g = (T[p, w] - T[pp, ww]) / s
                if g > 0 and np.all(d <= left + 1e-9) and (best is None or g > best[0]):
                    best = (g, i, kind, d)
        if best is None:
            return {i: tuple(v) for i, v in alloc.items()}
        _, i, kind, d = best
        alloc[i][kind] += 1
        left -= d


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_heap_matches_the_naive_greedy_and_never_exceeds_capacity(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    n = data.draw(st.integers(1, 5))
    times = []
    for _ in range(n):
        P, W = rng.integers(1, 4), rng.integers(1, 6)
        rate = rng.uniform(0.2, 3.0, (P + 1, W + 1))
        rate[0, :] = 0.0
        rate[:, 0] = 0.0
        times.append(_times(rng.uniform(10, 100), rate))
    dw = rng.integers(0, 3, (n, 2)).astype(float)
    dw[:, 0] = np.maximum(dw[:, 0], 1.0)
    dp = rng.integers(0, 3, (n, 2)).astype(float)
    cap = rng.integers(3, 15, 2).astype(float)
    start = [(1, 1)] * n
    out = marginal_gain_allocation(times, dw, dp, cap, cap, start)
    assert out == _naive_greedy(times, dw, dp, cap, cap, start)
    used = sum((p * dp[i] + w * dw[i] for i, (p, w) in out.items()), np.zeros(2))
    assert np.all(used <= cap + 1e-9)
    for i, (p, w) in out.items():
        assert 1 <= p < times[i].shape[0] and 1 <= w < times[i].shape[1]


# -- placement -----------------------------------------------------------------------------------

DW = np.array([1.0, 2.0])   # a worker: 1 GPU, 2 CPUs
DP = np.array([0.0, 2.0])   # a PS: 2 CPUs


def test_one_server_when_it_holds_the_whole_job():
    free = np.array([[4.0, 16.0], [4.0, 16.0]])
    pl = place_principle(free, DW, DP, 4, 2)
    assert pl.servers == frozenset({0}) or pl.servers == frozenset({1})
    assert pl.n_workers == 4 and pl.n_ps == 2


def test_equal_split_over_the_fewest_servers():
    # no server holds 4 workers + 2 PSs (12 CPUs); two servers hold 2 workers + 1 PS each
    free = np.array([[2.0, 8.0], [2.0, 8.0], [2.0, 8.0]])
    pl = place_principle(free, DW, DP, 4, 2)
    assert len(pl.servers) == 2
    assert all(pl.workers[s] == 2 and pl.ps[s] == 1 for s in pl.servers)


def test_fullest_fitting_servers_are_used():
    free = np.array([[8.0, 32.0], [2.0, 8.0], [2.0, 8.0]])
    pl = place_principle(free, DW, DP, 2, 1, capacity=np.array([8.0, 32.0]))
    assert pl.servers in (frozenset({1}), frozenset({2}))


def test_falls_back_to_first_fit_when_no_equal_split_exists():
    # 3 workers + 2 PSs: gcd 1, and no single server holds them all (10 CPUs)
    free = np.array([[2.0, 6.0], [2.0, 6.0]])
    assert place_principle(free, DW, DP, 3, 2) is None
    pl = place_job(free, DW, DP, 3, 2)
    assert pl is not None and pl.n_workers == 3 and pl.n_ps == 2
    used = np.zeros_like(free)
    for s, k in pl.workers.items():
        used[s] += k * DW
    for s, k in pl.ps.items():
        used[s] += k * DP
    assert np.all(used <= free)
    assert place_job(free, DW, DP, 5, 2) is None  # 5 GPUs do not exist


# -- the policy in the engine ------------------------------------------------------------------

class _Checked:
    """Wraps a policy and checks every decision independently of the engine: capacity per server."""

    def __init__(self, inner):
        self.inner, self.name, self.slot_seconds = inner, inner.name, inner.slot_seconds
        self.calls = 0

    def reset(self, ctx):
        self.cap = ctx.cluster.capacity
        self.inner.reset(ctx)

    def schedule(self, state, events):
        d = self.inner.schedule(state, events)
        used = np.zeros_like(self.cap)
        for j, pl in d.placements.items():
            assert j in set(state.active.tolist())
            job = state.jobs[j]
            assert job.min_workers <= pl.n_workers <= job.max_workers and pl.n_ps <= job.max_ps
            for s, k in pl.workers.items():
                used[s] += k * state.demand_w[j]
            for s, k in pl.ps.items():
                used[s] += k * state.demand_p[j]
        assert np.all(used <= self.cap + 1e-9), "over-committed a server"
        self.calls += 1
        return d


@pytest.fixture(scope="module")
def speed():
    return TableSpeed()


@pytest.mark.parametrize("profile", [True, False])
def test_runs_a_small_dl2_trace_without_overcommitting(speed, profile):
    tr = dl2_trace(12, seed=7, max_epochs=3000)
    pol = _Checked(Optimus() if profile else Optimus(profile=()))
    res = simulate(tr, dl2_cluster(3), pol, speed, seed=7, restart_seconds=10.0)
    assert res.status == "completed" and res.completed.all()
    assert pol.calls > 0
    err = pol.inner.model_errors()
    # a checkpoint is recorded at the first call at or past it: a job that ends between calls misses it
    assert 6 <= err["n"][0.75] <= err["n"][0.25] <= 12 and err["n"][0.25] >= 9
    for c in (0.25, 0.5, 0.75):
        assert 0 <= err["remaining"][c] < 0.5
        # without profiling the few sizes a job ran at say little about the rest of the table
        assert 0 <= err["speed"][c] < (0.5 if profile else math.inf)
    assert set(err["speed_by_type"]) == {j.job_type for j in tr.jobs}


def test_registered_in_the_policy_table():
    assert isinstance(make_policy("optimus"), Optimus)


def test_profiling_is_charged_to_the_job(speed):
    tr = dl2_trace(1, seed=3, max_epochs=100)
    with_profile = simulate(tr, dl2_cluster(2), Optimus(profile_seconds=50.0), speed, seed=3)
    assert with_profile.first_start[0] == pytest.approx(tr.jobs[0].arrival + 50.0)


def test_a_lone_job_grows_beyond_its_start_size(speed):
    tr = dl2_trace(1, seed=5, max_epochs=100, types=("resnet-50",))
    pol = Optimus()
    seen = []

    class Spy:
        name, slot_seconds = "spy", pol.slot_seconds

        def reset(self, ctx):
            pol.reset(ctx)

        def schedule(self, state, events):
            d = pol.schedule(state, events)
            seen.extend((pl.n_ps, pl.n_workers) for pl in d.placements.values())
            return d

    res = simulate(tr, dl2_cluster(8), Spy(), speed, seed=5)
    assert res.status == "completed"
    assert max(p + w for p, w in seen) > 2


def test_fixed_size_all_reduce_jobs_run_at_their_size():
    from .helpers import LinearSpeed

    tr = trace(job("a", iterations=50, min_workers=2, max_workers=2), job("b", arrival=1.0, iterations=20))
    pol = _Checked(Optimus(profile=()))
    res = simulate(tr, cluster(1, gpus=3), pol, LinearSpeed(), seed=0)
    assert res.status == "completed" and res.completed.all()
    assert not math.isnan(res.completion[1])


def test_cluster_dominant_resource_shares():
    from dlsched.policies.optimus import task_shares

    dw = np.array([[1.0, 2.0]])   # worker: 1 GPU, 2 CPUs
    dp = np.array([[0.0, 2.0]])   # PS: 2 CPUs
    cap = np.array([4.0, 32.0])
    w, p = task_shares(dw, dp, cap)                  # own dominant shares
    assert w[0] == pytest.approx(0.25) and p[0] == pytest.approx(1 / 16)
    w, p = task_shares(dw, dp, cap, bottleneck=1)    # CPUs are the cluster's dominant resource
    assert w[0] == pytest.approx(1 / 16) and p[0] == pytest.approx(1 / 16)
    w, p = task_shares(dw, dp, cap, bottleneck=0)    # GPUs: a PS holds none, it costs its own share
    assert w[0] == pytest.approx(0.25) and p[0] == pytest.approx(1 / 16)
    with pytest.raises(Exception):
        Optimus(normalise="nope")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(1, 7), servers=st.integers(1, 4), le=st.booleans())
def test_one_shot_policy_is_the_one_greedy_on_the_instance_tau(seed, n, servers, le):
    """The one-shot ``optimus-greedy`` (greedy.greedy_allocation) = the naive greedy on R_j τ_j(w, p)
    read from the instance, starting from (1, 1) in arrival order; p ≤ w under ps_le_workers."""
    from dlsched.instance.smd import SMDOptions
    from dlsched.instance.smd_gen import generate
    from dlsched.policies.greedy import OptimusGreedyPolicy

    inst = generate(n, servers, seed=seed, max_workers=4, max_ps=3, options=SMDOptions(ps_le_workers=le, max_workers=4, max_ps=3))
    order = sorted(range(n), key=lambda j: (inst.arrival[j], j))
    times = []
    for j in range(n):
        T = np.full((inst.max_ps[j] + 1, inst.max_workers[j] + 1), np.inf)
        for p in range(1, inst.max_ps[j] + 1):
            for w in range(max(p, 1) if le else 1, inst.max_workers[j] + 1):
                T[p, w] = inst.iterations[j] * float(inst.tau(j, w, p))
        times.append(T)
    want = _naive_greedy(times, inst.d, inst.e, inst.capacity, inst.capacity, [(1, 1)] * n, order)
    got = OptimusGreedyPolicy().allocate(inst, np.arange(n))
    for j in range(n):
        p, w = want.get(j, (0, 0))
        assert tuple(got[j]) == (w, p)
        assert not le or got[j, 1] <= got[j, 0]


def test_task_shares_amount_is_the_authors_divisor():
    from dlsched.policies.optimus import task_shares

    cap = np.array([768.0, 192.0])                      # cpu, gpu
    dw, dp = np.array([[2.0, 1.0], [2.0, 0.0]]), np.array([[2.0, 0.0], [2.0, 0.0]])
    w, p = task_shares(dw, dp, cap, divisor="amount")
    assert w.tolist() == [1.0, 2.0] and p.tolist() == [2.0, 2.0]   # a GPU worker costs its 1 GPU, a CPU task its 2 CPUs
    w, p = task_shares(dw, dp, cap)
    assert w.tolist() == pytest.approx([1 / 192, 2 / 768]) and p.tolist() == pytest.approx([2 / 768, 2 / 768])
    w, p = task_shares(dw, dp, cap, divisor="none")                  # DL2's simulator divides by nothing
    assert w.tolist() == [1.0, 1.0] and p.tolist() == [1.0, 1.0]


def test_relative_gain_gives_the_spare_worker_to_the_short_job():
    from dlsched.policies.optimus import _fastest

    rates = [[0, 1.0, 1.8]]                               # one all-reduce type, a 2nd worker speeds it by 1.8x
    long, short = _times(1000.0, rates), _times(100.0, [[0, 1.0, 1.9]])
    dw, dp, cap = np.ones((2, 1)), np.zeros((2, 1)), np.array([3.0])
    assert marginal_gain_allocation([long, short], dw, dp, cap, cap, [(0, 1)] * 2) == {0: (0, 2), 1: (0, 1)}
    rel = [T / _fastest(T) for T in (long, short)]
    assert marginal_gain_allocation(rel, dw, dp, cap, cap, [(0, 1)] * 2) == {0: (0, 1), 1: (0, 2)}


def test_oracle_models_are_the_truth(speed):
    from dlsched.policies.optimus import ABLATIONS, make_ablation

    tr = dl2_trace(12, seed=7, max_epochs=3000)
    pol = _Checked(make_ablation("optimus-oracle"))
    assert pol.inner.name == "optimus-oracle" and pol.inner.models == "oracle" and set(ABLATIONS) >= {"optimus-relative"}
    res = simulate(tr, dl2_cluster(3), pol, speed, seed=7, restart_seconds=10.0)
    assert res.status == "completed" and res.completed.all()
    err = pol.inner.model_errors()
    for c in (0.25, 0.5, 0.75):
        assert err["remaining"][c] == pytest.approx(0.0, abs=1e-9) and err["speed"][c] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("models, exact", [("oracle-speed", "speed"), ("oracle-steps", "remaining")])
def test_one_model_replaced_by_the_truth(speed, models, exact):
    tr = dl2_trace(8, seed=3, max_epochs=3000)
    pol = _Checked(Optimus(models=models))
    res = simulate(tr, dl2_cluster(3), pol, speed, seed=3, restart_seconds=10.0)
    assert res.status == "completed" and res.completed.all()
    err = pol.inner.model_errors()
    assert all(err[exact][c] == pytest.approx(0.0, abs=1e-9) for c in (0.25, 0.5, 0.75) if err["n"][c])
    other = "remaining" if exact == "speed" else "speed"
    assert any(err[other][c] > 0 for c in (0.25, 0.5, 0.75) if err["n"][c])


def test_oracle_without_a_vectorised_speed_source_measures_each_size():
    from .helpers import LinearSpeed

    tr = trace(job("a", iterations=40, min_workers=1, max_workers=3), job("b", arrival=1.0, iterations=10, max_workers=2))
    pol = _Checked(Optimus(models="oracle", profile=()))
    res = simulate(tr, cluster(1, gpus=4), pol, LinearSpeed(), seed=0)
    assert res.status == "completed" and res.completed.all()
    assert pol.inner.model_errors()["speed_by_type"] and all(v == 0 for v in pol.inner.model_errors()["speed_by_type"].values())


def test_pairs_step_out_of_a_one_task_local_optimum():
    # rate = min(p, w): neither task alone helps, a worker and a PS together do
    rates = np.minimum.outer(np.arange(4), np.arange(5)).astype(float)
    args = ([_times(60.0, rates)], np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), np.array([100.0, 100.0]),
            np.array([100.0, 100.0]), [(1, 1)])
    assert marginal_gain_allocation(*args) == {0: (1, 1)}
    assert marginal_gain_allocation(*args, pairs=True) == {0: (3, 3)}            # p <= 3: stops there
    tight = (*args[:4], np.array([2.5, 2.5]), args[5])                           # room for one more pair only
    assert marginal_gain_allocation(*tight, pairs=True) == {0: (2, 2)}
    assert Optimus(pairs=True).pairs


def test_normalise_none_divides_by_nothing():
    # DL2's simulator's Optimus: equal time gains, so the job earlier in the list wins whatever the task's size
    t = _times(100.0, [[0, 1.0, 2.0]])
    dw = np.array([[2.0], [1.0]])
    ones = (np.ones(2), np.ones(2))
    out = marginal_gain_allocation([t, t], dw, np.zeros((2, 1)), np.array([5.0]), np.array([5.0]), [(0, 1), (0, 1)], ones)
    assert out == {0: (0, 2), 1: (0, 1)}
    assert Optimus(normalise="none").normalise == "none"


def test_profiling_is_shared_by_jobs_of_one_type(speed):
    # the authors' estimator: the first resnet-50 is profiled at 8 sizes p = w in 1..10 (10 s charged);
    # the second, arriving later, starts from those sizes and is not profiled
    from dlsched.policies.optimus import AUTHORS_PROFILE

    tr = dl2_trace(2, seed=5, max_epochs=200, types=("resnet-50",))
    pol = _Checked(Optimus(profile_seconds=50.0))
    res = simulate(tr, dl2_cluster(8), pol, speed, seed=5)
    assert res.status == "completed" and res.completed.all()
    first, second = (pol.inner._models[j] for j in (0, 1))
    assert first.ready == pytest.approx(tr.jobs[0].arrival + 50.0)
    assert second.ready == pytest.approx(tr.jobs[1].arrival)
    profiled = [k for k in first.measured if k in AUTHORS_PROFILE]
    assert len(profiled) == 8 and len(set(AUTHORS_PROFILE) - set(profiled)) == 2
    # every size the first job measured before the second arrived is known to the second, at the same rate
    assert all(second.measured[k] == first.measured[k] for k in profiled)
    # every size a job ran at is a measured size of it, at the engine's rate (TableSpeed: the table's)
    for j, m in pol.inner._models.items():
        for (p, w), r in m.measured.items():
            assert r == pytest.approx(float(speed.speeds("resnet-50", p, w)))


def test_nnls_speed_model_keeps_the_earlier_estimator(speed):
    from dlsched.policies.optimus import DEFAULT_PROFILE, make_ablation

    pol = make_ablation("optimus-nnls")
    assert pol.speed_model == "nnls" and pol.profile == DEFAULT_PROFILE
    tr = dl2_trace(6, seed=2, max_epochs=2000)
    checked = _Checked(pol)
    res = simulate(tr, dl2_cluster(3), checked, speed, seed=2, restart_seconds=10.0)
    assert res.status == "completed" and res.completed.all()
    # every job profiled at its own 8 sizes, none shared
    assert all(m.ready == pytest.approx(tr.jobs[j].arrival + pol.profile_seconds) for j, m in pol._models.items())
    assert all(not m.measured for m in pol._models.values())


@pytest.mark.parametrize("kw", [{"gain": "seconds"}, {"normalise": "gpu"}, {"models": "true"}, {"speed_model": "curve"}])
def test_unknown_options_are_input_errors(kw):
    from dlsched.errors import InputError

    with pytest.raises(InputError):
        Optimus(**kw)


def _reference_times(n, servers, seed):
    """A small generated SMD instance and, by loops, R_j τ_j(w, p) per job as [p, w] (inf at 0), the
    shortest time of each job and the jobs shortest first."""
    from dlsched.instance.smd import SMDOptions
    from dlsched.instance.smd_gen import generate

    inst = generate(n, servers, seed=seed, max_workers=4, max_ps=3, options=SMDOptions(max_workers=4, max_ps=3))
    times = {}
    for j in range(n):
        T = np.full((inst.max_ps[j] + 1, inst.max_workers[j] + 1), np.inf)
        for p in range(1, inst.max_ps[j] + 1):
            for w in range(1, inst.max_workers[j] + 1):
                T[p, w] = inst.iterations[j] * float(inst.tau(j, w, p))
        times[j] = T
    fastest = {j: T[np.isfinite(T)].min() for j, T in times.items()}
    return inst, times, fastest, sorted(range(n), key=lambda j: (fastest[j], j))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(1, 7), servers=st.integers(1, 4), alpha=st.sampled_from([0.5, 1.0, 2.0]))
def test_srpt_greedy_is_the_greedy_on_times_over_the_shortest_time_to_the_alpha(seed, n, servers, alpha):
    """``srpt-greedy`` (not Optimus) = the naive greedy on R_j τ_j(w, p) / (T_j^min)^α, jobs started
    shortest first; with α = 0 and arrival order it is ``optimus-greedy`` exactly."""
    from dlsched.policies.greedy import OptimusGreedyPolicy, SRPTGreedyPolicy

    inst, times, fastest, order = _reference_times(n, servers, seed)
    want = _naive_greedy([times[j] / fastest[j] ** alpha for j in range(n)], inst.d, inst.e,
                         inst.capacity, inst.capacity, [(1, 1)] * n, order)
    got = SRPTGreedyPolicy(alpha=alpha, start="shortest", pairs=False).allocate(inst, np.arange(n))
    for j in range(n):
        p, w = want.get(j, (0, 0))
        assert tuple(got[j]) == (w, p)
    as_optimus = SRPTGreedyPolicy(alpha=0.0, start="arrival", pairs=False)
    assert (as_optimus.allocate(inst, np.arange(n)) == OptimusGreedyPolicy().allocate(inst, np.arange(n))).all()


def test_srpt_greedy_options_are_checked():
    from dlsched.errors import InputError
    from dlsched.registry import make_policy

    assert make_policy("srpt-greedy").options == {"alpha": 2.0, "start": "shortest", "pairs": True}
    with pytest.raises(InputError):
        make_policy("srpt-greedy", start="longest")
    with pytest.raises(InputError):
        make_policy("srpt-greedy", alpha=-1)


def test_hesrpt_shares_follow_the_closed_form():
    from dlsched.policies.greedy import hesrpt_shares

    assert hesrpt_shares(1, 0.5).tolist() == [1.0]
    th = hesrpt_shares(3, 0.5)                       # 1/(1-p) = 2: (3/3)^2-(2/3)^2, (2/3)^2-(1/3)^2, (1/3)^2
    assert th == pytest.approx([5 / 9, 3 / 9, 1 / 9])
    for m, p in ((5, 0.2), (40, 0.6), (7, 0.95)):
        th = hesrpt_shares(m, p)
        assert th.sum() == pytest.approx(1.0) and (np.diff(th) < 0).all()   # the shortest job gets most
    assert hesrpt_shares(4, 0.999)[0] > 0.97 and np.ptp(hesrpt_shares(4, 0.001)) < 0.01   # linear: SRPT; flat: equal


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(1, 7), servers=st.integers(1, 4),
       p=st.sampled_from([0.3, 0.6, 0.9, "fluid"]))
def test_hesrpt_first_sizes_are_the_fastest_within_each_share(seed, n, servers, p):
    """``hesrpt`` (and ``fluid``) = the naive greedy on R_j τ_j / (T_j^min)^2 started, shortest
    first, at the fastest (p, w) whose dominant share is within the job's heSRPT share (the fluid
    LP's share), else 1 PS + 1 worker."""
    from dlsched.policies.fluid import FluidPolicy, fluid_shares
    from dlsched.policies.greedy import HeSRPTPolicy, hesrpt_shares

    inst, times, fastest, order = _reference_times(n, servers, seed)
    cap = inst.capacity
    first = {}
    if p == "fluid":
        shares = fluid_shares([times[j] for j in range(n)], inst.d, inst.e, cap, order)[0][order]
    else:
        shares = hesrpt_shares(n, p)
    for theta, j in zip(shares, order):
        best = None
        for q in range(1, times[j].shape[0]):
            for w in range(1, times[j].shape[1]):
                share = max((q * inst.e[j][r] + w * inst.d[j][r]) / cap[r] for r in range(cap.size) if cap[r] > 0)
                if share <= theta + 1e-12 and (best is None or times[j][q, w] < times[j][best]):
                    best = (q, w)
        first[j] = best or (1, 1)
    want = _naive_greedy([times[j] / fastest[j] ** 2 for j in range(n)], inst.d, inst.e, cap, cap,
                         [first[j] for j in range(n)], order)
    policy = FluidPolicy(pairs=False) if p == "fluid" else HeSRPTPolicy(speedup_exponent=p, pairs=False)
    got = policy.allocate(inst, np.arange(n))
    for j in range(n):
        q, w = want.get(j, (0, 0))
        assert tuple(got[j]) == (w, q)


def test_hesrpt_options_are_checked():
    from dlsched.errors import InputError
    from dlsched.registry import make_policy

    assert make_policy("hesrpt").options == {"alpha": 2.0, "start": "shortest", "pairs": True, "shares": 0.6}
    assert make_policy("fluid").options == {"alpha": 2.0, "start": "shortest", "pairs": True, "shares": "fluid"}
    for bad in (0.0, 1.0, -0.5, float("nan")):
        with pytest.raises(InputError):
            make_policy("hesrpt", speedup_exponent=bad)

"""The vectorised Optimus greedy (optimus.marginal_gain_allocation, greedy.greedy_allocation) decides
exactly as its definition, written below one job and one step at a time.

Reference: the start sizes given in order, each to a job whose start time is finite while it fits
what is left (Python floats, one subtraction per resource and job); then, repeatedly, of all
(job, task) steps whose time is finite inside the job's grid, the largest positive gain
(T(p, w) - T(p', w')) / share that fits, ties to the job earlier in the list, then worker, PS,
pair. The policies' whole runs (srpt-greedy, hesrpt, optimus-greedy) on random traces mixing
one-size jobs (every OpenB pod) and elastic ones must give every job's start and completion time
bit for bit as the same policy deciding by the reference.
"""

import dataclasses
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.sim.engine import simulate
from dlsched.sim.placement import EPS
from dlsched.policies import fluid, greedy
from dlsched.policies.fluid import FluidPolicy, fluid_shares, pareto_of
from dlsched.policies.optimus import admit_in_order, marginal_gain_allocation, task_shares
from dlsched.sim.speed import DurationSpeed

AMOUNTS = [0.0, 0.1, 0.2, 0.3, 0.7, 1.0, 1.5, 2.0]


def ref_greedy(times, dw, dp, cap, free, start, order=None, pairs=False):
    sw, sp = task_shares(dw, dp, cap)
    left = [float(x) for x in free]
    alloc = {}
    for i in (range(len(start)) if order is None else order):
        p0, w0 = start[i]
        need = [float(p0 * dp[i][r] + w0 * dw[i][r]) for r in range(len(left))]
        if math.isfinite(times[i][p0, w0]) and all(need[r] <= left[r] + EPS for r in range(len(left))):
            alloc[i] = (p0, w0)
            left = [left[r] - need[r] for r in range(len(left))]
    left = np.array(left)
    dead = set()                      # (job, kind, p, w) found not to fit: never again (left only shrinks)
    while True:
        best = None
        for i, (p, w) in alloc.items():
            T = times[i]
            steps = [(0, p, w + 1, dw[i], sw[i])]
            if p > 0:
                steps.append((1, p + 1, w, dp[i], sp[i]))
                if pairs:
                    steps.append((2, p + 1, w + 1, dw[i] + dp[i], sw[i] + sp[i]))
            for kind, pp, ww, d, s in steps:
                if pp >= T.shape[0] or ww >= T.shape[1] or (i, kind, p, w) in dead:
                    continue
                g = (T[p, w] - T[pp, ww]) / s
                if g > 0 and (best is None or (-g, i, kind) < best[0]):
                    best = ((-g, i, kind), i, kind, pp, ww, d)
        if best is None:
            return alloc
        _, i, kind, pp, ww, d = best
        if not np.all(d <= left + EPS):
            dead.add((i, kind) + alloc[i])
            continue
        alloc[i] = (pp, ww)
        left = left - d


def ref_optimus_policy(inst, active, alpha=0.0, start="arrival", pairs=False, shares=None):
    idx = np.sort(np.asarray(active, dtype=np.int64))
    alloc = np.zeros((inst.n_jobs, 2), dtype=np.int64)
    if not idx.size:
        return alloc
    times = [inst.iterations[j] * greedy.tau_grid(inst, int(j)) for j in idx.tolist()]
    fastest = [T[np.isfinite(T)].min(initial=np.inf) for T in times]
    key = (lambda i: (inst.arrival[idx[i]], idx[i])) if start == "arrival" else (lambda i: (fastest[i], idx[i]))
    order = sorted(range(idx.size), key=key)
    thetas = {}
    if shares == "fluid":
        lp = fluid_shares(times, inst.d[idx], inst.e[idx], inst.capacity, order, [pareto_of(inst, int(j)) for j in idx.tolist()])
        thetas = {} if lp is None else dict(enumerate(lp[0].tolist()))
    elif shares is not None:
        thetas = dict(zip(order, greedy.hesrpt_shares(idx.size, shares).tolist()))
    if alpha:
        times = [T / f ** alpha if np.isfinite(f) and f > 0 else T for T, f in zip(times, fastest)]
    first = [(1, int(w0)) for w0 in inst.min_workers[idx]]
    for i in order:
        if i in thetas:
            first[i] = ref_fastest_within(times[i], inst.d[idx[i]], inst.e[idx[i]], inst.capacity, thetas[i]) or first[i]
    for i, (p, w) in ref_greedy(times, inst.d[idx], inst.e[idx], inst.capacity, inst.capacity, first, order, pairs).items():
        alloc[idx[i]] = (w, p)
    return alloc


def ref_fastest_within(T, d, e, capacity, theta):
    """(p, w) of least T[p, w] whose dominant share max_r (p e_r + w d_r) / C_r is at most θ (None if none)."""
    P, W = T.shape
    use = np.arange(P)[:, None, None] * e + np.arange(W)[None, :, None] * d
    share = np.max(np.where(capacity > 0, use / np.where(capacity > 0, capacity, 1.0), 0.0), axis=2)
    within = np.where(np.isfinite(T) & (share <= theta + 1e-12), T, np.inf)
    k = int(np.argmin(within))
    return divmod(k, W) if np.isfinite(within.flat[k]) else None


def _grids(rng, n, fixed_share):
    times = []
    for _ in range(n):
        P, W = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        T = np.full((P + 1, W + 1), np.inf)
        if rng.random() < fixed_share:            # one size only (an OpenB pod: fixed workers, one PS row)
            T[1, W] = rng.uniform(10, 100)
        else:
            T[1:, 1:] = rng.uniform(10, 100) / rng.uniform(0.2, 3.0, (P, W))
            T[rng.random((P + 1, W + 1)) < 0.1] = np.inf
        times.append(T)
    return times


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 12), R=st.integers(1, 3), fixed=st.sampled_from([0.0, 0.5, 1.0]),
       pairs=st.booleans(), shuffled=st.booleans(), stacked=st.booleans())
def test_greedy_equals_its_definition(seed, n, R, fixed, pairs, shuffled, stacked):
    rng = np.random.default_rng(seed)
    times = _grids(rng, n, fixed)
    dw = rng.choice(AMOUNTS, (n, R))
    dp = rng.choice(AMOUNTS, (n, R))
    cap = rng.choice([1.0, 2.5, 3.3, 6.0], R)
    start = [(1, int(np.flatnonzero(np.isfinite(T[1]))[0]) if np.isfinite(T[1]).any() else 1) for T in times]
    order = rng.permutation(n).tolist() if shuffled else None
    want = ref_greedy(times, dw, dp, cap, cap, start, order, pairs)
    got = marginal_gain_allocation(_stack(times) if stacked else times, dw, dp, cap, cap, start, order=order, pairs=pairs)
    assert list(got.items()) == list(want.items())      # the same sizes, given in the same order


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40), R=st.integers(1, 3), room=st.sampled_from([0.6, 1.1, 1.5, 3.0]),
       pairs=st.booleans(), stacked=st.booleans())
def test_greedy_equals_its_definition_with_equal_gains_and_many_rounds(seed, n, R, room, pairs, stacked):
    """Times of a few values (equal gains, within a job and across jobs; gains that grow along a
    job's path) and a cluster that runs out part-way (many tasks that no longer fit): the
    vectorised greedy takes the same tasks in the same order as one step at a time."""
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(n):
        P, W = int(rng.integers(2, 5)), int(rng.integers(2, 8))
        T = np.full((P, W), np.inf)
        T[1:, 1:] = rng.choice([6.0, 8.0, 9.0, 12.0, 24.0], (P - 1, W - 1))
        T[rng.random((P, W)) < 0.1] = np.inf
        times.append(T)
    dw = rng.choice([0.1, 0.5, 1.0, 2.5], (n, R)) * (rng.random((n, R)) < 0.9)
    dp = rng.choice([0.1, 0.5, 1.0], (n, R)) * (rng.random((n, R)) < 0.7)
    cap = (dw + dp).sum(axis=0) * room + 0.5            # room for the start sizes, or not all of them, and some tasks
    start = [(1, 1)] * n
    order = rng.permutation(n).tolist()
    want = ref_greedy(times, dw, dp, cap, cap, start, order, pairs)
    got = marginal_gain_allocation(_stack(times) if stacked else times, dw, dp, cap, cap, start, order=order, pairs=pairs)
    assert list(got.items()) == list(want.items())


def _stack(times):
    """Grids of different shapes as one array, padded with inf, as greedy_allocation passes them."""
    P, W = max(T.shape[0] for T in times), max(T.shape[1] for T in times)
    stack = np.full((len(times), P, W), np.inf)
    for i, T in enumerate(times):
        stack[i, :T.shape[0], :T.shape[1]] = T
    return stack


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(0, 30), R=st.integers(1, 3))
def test_fastest_within_equals_one_job_at_a_time(seed, n, R):
    """The first sizes within a share, for a stack of jobs at once, are each job's own (ties to the first (p, w))."""
    rng = np.random.default_rng(seed)
    T = rng.choice([5.0, 7.0, 9.0, np.inf], (n, 4, 6))
    d, e = rng.choice(AMOUNTS, (n, R)), rng.choice(AMOUNTS, (n, R))
    cap = rng.choice([0.0, 2.0, 5.0, 9.0], R)
    theta = rng.choice([0.0, 0.1, 0.25, 0.5, 1.0], n)
    got = greedy.fastest_within(T, d, e, cap, theta)
    for i in range(n):
        want = ref_fastest_within(T[i], d[i], e[i], cap, theta[i])
        assert tuple(got[i]) == (want if want is not None else (-1, -1))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(0, 300), R=st.integers(1, 4), scale=st.sampled_from([0.05, 0.3, 1.0]),
       negative=st.booleans())
def test_admission_subtracts_in_sequence(seed, n, R, scale, negative):
    """Start sizes in order: the same jobs, and what is left bit for bit, as one subtraction per job and resource."""
    rng = np.random.default_rng(seed)
    needs = rng.uniform(0, 1, (n, R)) * (rng.random((n, R)) < 0.8)
    if negative:
        needs[rng.random((n, R)) < 0.05] *= -1.0
    free = rng.uniform(0, scale * n + 1, R)
    runs = rng.random(n) < 0.9
    order = rng.permutation(n)
    left = free.tolist()
    want = []
    for i in order.tolist():
        if runs[i] and all(needs[i, r] <= left[r] + EPS for r in range(R)):
            want.append(i)
            left = [left[r] - needs[i, r] for r in range(R)]
    got, got_left = admit_in_order(needs, runs, order, free)
    assert got.tolist() == want
    assert got_left.tolist() == left


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(1, 9), servers=st.integers(1, 4),
       variant=st.sampled_from([{}, {"alpha": 2.0, "start": "shortest", "pairs": True},
                                {"alpha": 1.0, "start": "shortest"},
                                {"alpha": 2.0, "start": "shortest", "pairs": True, "shares": 0.6},
                                {"alpha": 2.0, "start": "shortest", "pairs": True, "shares": "fluid"}]))
def test_greedy_allocation_equals_its_definition_on_smd_instances(seed, n, servers, variant):
    from dlsched.instance.smd import SMDOptions
    from dlsched.instance.smd_gen import generate

    inst = generate(n, servers, seed=seed, max_workers=4, max_ps=3, options=SMDOptions(max_workers=4, max_ps=3))
    active = np.flatnonzero(np.random.default_rng(seed).random(n) < 0.8)
    assert (_policy(variant).allocate(inst, active) == ref_optimus_policy(inst, active, **variant)).all()


def _policy(variant):
    """The greedy family's policy deciding as ``ref_optimus_policy(..., **variant)``."""
    kw = {"alpha": variant.get("alpha", 0.0), "pairs": variant.get("pairs", False)}
    if variant.get("shares") == "fluid":
        return FluidPolicy(**kw)
    if variant.get("shares") is not None:
        return greedy.HeSRPTPolicy(speedup_exponent=variant["shares"], **kw)
    return greedy.SRPTGreedyPolicy(start=variant.get("start", "arrival"), **kw)


def _trace(rng, n):
    jobs = []
    for k in range(n):
        size = int(rng.choice([1, 1, 1, 2, 4]))
        elastic = rng.random() < 0.3
        jobs.append(Job(name=f"j{k}", arrival=float(rng.integers(0, 40)) * 7.5, job_type="pod", iterations=float(rng.integers(10, 400)),
                        worker_demand={"gpu": float(rng.choice([0.0, 1.0])), "cpu": float(rng.choice(AMOUNTS[1:]))},
                        min_workers=1 if elastic else size, max_workers=size,
                        meta={"duration": float(rng.integers(10, 400))}))
    return Trace.sorted(jobs, source="random")


class _Reference:
    """The same policy deciding by :func:`ref_optimus_policy`."""

    def allocate(self, view, active):
        return ref_optimus_policy(view, active, **self.options)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), servers=st.integers(1, 6),
       name=st.sampled_from(["optimus-greedy", "srpt-greedy", "hesrpt", "fluid"]))
def test_whole_runs_identical(seed, n, servers, name):
    from dlsched.registry import make_policy

    rng = np.random.default_rng(seed)
    trace = _trace(rng, n)
    cluster = Cluster.homogeneous(servers, {"gpu": 4, "cpu": 3.0})
    fast = make_policy(name)
    ref = make_policy(name)
    ref.__class__ = type("Ref", (_Reference, type(ref)), {})
    a = simulate(trace, cluster, fast, DurationSpeed())
    b = simulate(trace, cluster, ref, DurationSpeed())
    assert a.status == b.status == "completed"
    assert np.array_equal(a.first_start, b.first_start, equal_nan=True)
    assert np.array_equal(a.completion, b.completion, equal_nan=True)


def test_fluid_solves_no_lp_when_every_job_has_one_size(monkeypatch):
    """A one-size job keeps its first size whatever its share, so with only such jobs (every OpenB
    pod) ``fluid`` skips the LP and decides as ``srpt-greedy``."""
    from dlsched.registry import make_policy

    def no_lp(*args, **kw):
        raise AssertionError("the fluid LP was solved")

    rng = np.random.default_rng(7)
    trace = Trace.sorted([dataclasses.replace(j, min_workers=j.max_workers) for j in _trace(rng, 40).jobs], source="one size")
    cluster = Cluster.homogeneous(3, {"gpu": 4, "cpu": 3.0})
    monkeypatch.setattr(fluid, "fluid_shares", no_lp)
    a = simulate(trace, cluster, make_policy("fluid"), DurationSpeed())
    b = simulate(trace, cluster, make_policy("srpt-greedy"), DurationSpeed())
    assert a.status == b.status == "completed"
    assert np.array_equal(a.completion, b.completion, equal_nan=True)

"""The fast DRF (FirstFitPool, drf_fill) decides exactly as a straightforward reference.

The references below are written from the definitions, one server and one grant at a time (no
pointers, no caches): first fit fills servers in index order with floor(free / demand + EPS)
tasks each, PSs first and else workers first; progressive filling grants the lowest dominant
share next and places every grant first fit on a tentative copy of the servers. The fast code
must give the same placements, the same sizes in the same order and, bit for bit, the same free
capacity, on random instances (fractional demands included, and more servers than
FirstFitPool.SCAN so its numpy pass runs), and the same completion times in whole simulations.
"""

import heapq
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.sim.engine import Simulation, simulate
from dlsched.sim.placement import EPS, FirstFitPool, first_fit, hold
from dlsched.policies.bundles import grant, ps_count
from dlsched.policies.drf import DRF, drf_fill, packed
from dlsched.policies.tetris import Tetris
from dlsched.sim.policy import Placement
from tests.sim.helpers import LinearSpeed

AMOUNTS = [0.0, 0.25, 0.3, 0.5, 1.0, 1.7, 2.0, 3.0]


def ref_slots(f, d):
    need = [r for r in range(len(d)) if d[r] > 0]
    if not need:
        return math.inf                # a task that needs nothing fits anywhere, any number of times
    return max(min(math.floor(f[r] / d[r] + EPS) for r in need), 0)


def ref_fill(free, d, count):
    """Counts per server, first fit in index order, or None; ``free`` is a list of rows."""
    out, left = {}, count
    for s, f in enumerate(free):
        k = min(ref_slots(f, d), left)
        if k:
            out[s] = k
            left -= k
    return None if left else out


def ref_first_fit(free, dw, dp, nw, nps):
    rows = [list(map(float, r)) for r in free]
    for order in ((dp, nps, dw, nw), (dw, nw, dp, nps)) if nps else ((dp, 0, dw, nw),):
        d0, c0, d1, c1 = order
        a = ref_fill(rows, d0, c0) if c0 else {}
        if a is None:
            continue
        rest = [[f[r] - a.get(s, 0) * d0[r] for r in range(len(f))] for s, f in enumerate(rows)]
        b = ref_fill(rest, d1, c1) if c1 else {}
        if b is None:
            continue
        w, p = (b, a) if d0 is dp else (a, b)
        return Placement(w, p)
    return None


def ref_hold(free, pl, dw, dp):
    for s in sorted(pl.servers):
        a, b = float(pl.workers.get(s, 0)), float(pl.ps.get(s, 0))
        for r in range(free.shape[1]):
            free[s, r] = free[s, r] - (a * dw[r] + b * dp[r])


def ref_drf_fill(state, cand, total, servers):
    """Progressive filling, one grant at a time, each placed first fit on a copy of ``servers``."""
    jobs, R = state.jobs, len(total)
    avail = [float(x) for x in total]
    sfree = np.array(servers, dtype=float)
    w, p, where, order = {}, {}, {}, []
    heap = [(0.0, int(j)) for j in cand]
    heapq.heapify(heap)
    while heap:
        _, j = heapq.heappop(heap)
        job, dw, dp = jobs[j], state.demand_w[j].tolist(), state.demand_p[j].tolist()
        per = job.workers_per_ps or 0.0
        w0, p0 = w.get(j, 0), p.get(j, 0)
        nw = job.min_workers if w0 == 0 else w0 + 1
        np_ = max(p0, ps_count(nw, job.min_workers, job.max_ps, per))
        add = [(nw - w0) * dw[r] + (np_ - p0) * dp[r] for r in range(R)] if w0 == 0 else \
            [dw[r] + (np_ - p0) * dp[r] for r in range(R)]
        if any(add[r] > avail[r] + EPS for r in range(R)):
            continue
        got = ref_first_fit(sfree, dw, dp, nw - w0, np_ - p0)
        if got is None:
            continue
        ref_hold(sfree, got, dw, dp)
        cw, cp = where.setdefault(j, ({}, {}))
        for s, k in got.workers.items():
            cw[s] = cw.get(s, 0) + k
        for s, k in got.ps.items():
            cp[s] = cp.get(s, 0) + k
        avail = [avail[r] - add[r] for r in range(R)]
        if w0 == 0:
            order.append(j)
        w[j], p[j] = nw, np_
        if nw < job.max_workers:
            share = max((nw * dw[r] + np_ * dp[r]) * (1.0 / total[r] if total[r] > 0 else 0.0) for r in range(R))
            heapq.heappush(heap, (share, j))
        smallest = [min(min(jobs[i].min_workers * state.demand_w[i][r]
                            + ps_count(jobs[i].min_workers, jobs[i].min_workers, jobs[i].max_ps, jobs[i].workers_per_ps or 0.0)
                            * state.demand_p[i][r], state.demand_w[i][r]) for i in cand) for r in range(R)]
        if any(avail[r] < smallest[r] - EPS for r in range(R)):
            break
    return {j: (w[j], p[j]) for j in order}, {j: Placement(*where[j]) for j in order}


vec = st.lists(st.sampled_from(AMOUNTS), min_size=3, max_size=3)


@settings(max_examples=150, deadline=None)
@given(S=st.integers(1, 24), R=st.integers(1, 3), caps=st.lists(st.sampled_from([0.0, 1.0, 2.5, 4.0, 7.3, 8.0]), min_size=3, max_size=3),
       demands=st.lists(st.tuples(vec, vec), min_size=1, max_size=3),
       requests=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 7), st.integers(0, 3)), min_size=1, max_size=40))
def test_pool_takes_as_first_fit_then_hold(S, R, caps, demands, requests):
    free = np.tile(np.array(caps[:R]), (S, 1)) * (1 + np.arange(S)[:, None] % 3)
    pool, ref = FirstFitPool(free), free.copy()
    for u, k, q in requests:
        dw, dp = (np.array(x[:R]) for x in demands[u % len(demands)])
        want = ref_first_fit(ref, dw.tolist(), dp.tolist(), k, q)
        assert want == first_fit(ref, dw, dp, k, q)          # the library's first fit is the reference too
        got = pool.take(dw, dp, k, q)
        if want is None:
            assert got is None
        else:
            assert got is not None and Placement(dict(got[0]), dict(got[1])) == want
            assert [s for s, _ in got[0]] == sorted(want.workers) and [s for s, _ in got[1]] == sorted(want.ps)
            hold(ref, want, dw, dp)
        assert np.array_equal(pool.free, ref)                 # bit for bit


def _trace(rows, R):
    res = ("gpu", "cpu", "mem")[:R]
    jobs = []
    for i, (a, it, g, c, lo, extra, ps, per) in enumerate(sorted(rows)):
        wd = {"gpu": g, "cpu": c, "mem": 0.7 * g}
        jobs.append(Job(f"j{i}", a, "toy", it, {r: wd[r] for r in res}, {r: v for r, v in (("cpu", 1.5), ("mem", 0.3)) if r in res} if ps and R > 1 else {},
                        min_workers=lo, max_workers=lo + extra, max_ps=ps if R > 1 else 0,
                        workers_per_ps=per if per else None))
    return Trace(tuple(jobs), "<random>"), res


rows_st = st.lists(st.tuples(st.sampled_from([0.0, 0.0, 3.0, 7.5, 12.0]), st.sampled_from([5.0, 20.0, 60.0]),
                             st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([0.3, 1.0, 2.0]), st.integers(1, 3),
                             st.integers(0, 4), st.integers(0, 3), st.sampled_from([0, 0, 2.0])), min_size=1, max_size=14)


@settings(max_examples=80, deadline=None)
@given(rows=rows_st, servers=st.integers(1, 14), R=st.integers(1, 3), partial=st.booleans())
def test_drf_fill_equals_reference(rows, servers, R, partial):
    tr, res = _trace(rows, R)
    cap = {"gpu": 4.0, "cpu": 6.5, "mem": 5.0}
    cl = Cluster.homogeneous(servers, {r: cap[r] for r in res})
    sim = Simulation(tr, cl, LinearSpeed())
    sim.advance()
    st_ = sim.state()
    free = cl.capacity.copy()
    if partial:      # servers partly held, unevenly, as a caller's free capacity may be
        free = free * (0.25 + (np.arange(servers)[:, None] % 4) / 4)
    got = drf_fill(st_, sim.active, cl.total(), free)
    want = ref_drf_fill(st_, sim.active.tolist(), cl.total().tolist(), free)
    assert list(got[0].items()) == list(want[0].items())          # the same sizes, in the same order
    assert got[1] == want[1]
    assert all(list(got[1][j].workers) == list(want[1][j].workers) for j in got[1])   # key order too


class RefDRF(DRF):
    name = "drf"

    def schedule(self, state, events):
        sizes, tentative = ref_drf_fill(state, state.active.tolist(), self.total.tolist(), state.cluster.capacity)
        return packed(self.placer.place(state, sizes), sizes, tentative)


def assert_same_runs(rows, servers, R, policy_a, policy_b):
    """Both policies simulate the same random trace to the same starts, completions and usage."""
    tr, res = _trace(rows, R)
    cap = {"gpu": 4.0, "cpu": 6.5, "mem": 5.0}
    cl = Cluster.homogeneous(servers, {r: cap[r] for r in res})
    a = simulate(tr, cl, policy_a, LinearSpeed())
    b = simulate(tr, cl, policy_b, LinearSpeed())
    assert a.status == b.status
    assert np.array_equal(a.completion, b.completion, equal_nan=True)
    assert np.array_equal(a.first_start, b.first_start, equal_nan=True)
    assert np.array_equal(a.segment_used, b.segment_used)


@pytest.mark.parametrize("placer", ["consolidated", "first_fit"])
@settings(max_examples=25, deadline=None)
@given(rows=rows_st, servers=st.integers(1, 10), R=st.integers(2, 3))
def test_whole_runs_identical(placer, rows, servers, R):
    assert_same_runs(rows, servers, R, DRF(placer=placer), RefDRF(placer=placer))


@settings(max_examples=60, deadline=None)
@given(rows=rows_st, servers=st.integers(1, 14), R=st.integers(1, 3), snap=st.sampled_from([1, 2, 5, 64]),
       steps=st.lists(st.lists(st.booleans(), min_size=14, max_size=14), min_size=2, max_size=6))
def test_memo_resumes_to_the_same_filling(rows, servers, R, snap, steps):
    # a FillMemo kept across calls on changing candidate sets (jobs leave and come back, in any mix)
    # answers what a filling from scratch answers, placements and their key order included
    from dlsched.policies.drf import FillMemo

    tr, res = _trace([(0.0, *r[1:]) for r in rows], R)      # every job active at once
    cap = {"gpu": 4.0, "cpu": 6.5, "mem": 5.0}
    cl = Cluster.homogeneous(servers, {r: cap[r] for r in res})
    sim = Simulation(tr, cl, LinearSpeed())
    sim.advance()
    st_ = sim.state()
    memo = FillMemo()
    memo.SNAP = snap
    everyone = sim.active.tolist()
    for keep in steps:
        cand = np.array([j for j, k in zip(everyone, keep) if k], dtype=np.int64)
        for servers_free in (cl.capacity, None):
            got = drf_fill(st_, cand, cl.total(), servers_free, memo)
            want = drf_fill(st_, cand, cl.total(), servers_free)
            assert list(got[0].items()) == list(want[0].items())
            assert got[1] == want[1]
            assert all(list(got[1][j].workers) == list(want[1][j].workers) for j in got[1])


@pytest.mark.parametrize("snap", [1, 3])
@settings(max_examples=25, deadline=None)
@given(rows=rows_st, servers=st.integers(1, 10), R=st.integers(2, 3))
def test_whole_runs_identical_with_and_without_the_memo(snap, rows, servers, R):
    from dlsched.policies.drf import FillMemo

    old = FillMemo.SNAP
    FillMemo.SNAP = snap               # copies of the free capacity every 1 or 3 pops: many resume points
    try:
        assert_same_runs(rows, servers, R, DRF(), DRF(incremental=False))
    finally:
        FillMemo.SNAP = old


class RefTetris(Tetris):
    """Tetris from its definition, one candidate at a time: at every step, among all candidates whose
    next grant fits, the best score; scores within a relative 1e-12 of the best tie, and the earliest
    of them wins."""

    def schedule(self, state, events):
        cand = np.asarray(state.active, dtype=np.int64)
        if not cand.size:
            return {}
        vectors, short, inv_total, avail, w, p, nxt = self.terms(state, cand)
        done, order = set(), []
        while True:
            ok = [i for i in range(cand.size) if i not in done and all(nxt[i] <= avail + EPS)]
            if not ok:
                break
            align = {i: sum(float(nxt[i][r] * inv_total[r]) * float(avail[r] * inv_total[r]) for r in range(avail.size))
                     for i in ok}
            top = max(align.values())
            score = {i: (align[i] / top if top > 0 else 0.0) + self.remaining_weight * short[i] for i in ok}
            best = max(score.values())
            i = min(i for i in ok if score[i] >= best - 1e-12 * abs(best))
            g = grant(i, w, p, order, avail, vectors)
            if g is None:
                done.add(i)
            else:
                nxt[i] = g[2]
        return self.placer.place(state, {int(cand[i]): (int(w[i]), int(p[i])) for i in order})


@settings(max_examples=40, deadline=None)
@given(rows=rows_st, servers=st.integers(1, 10), R=st.integers(2, 3))
def test_tetris_decides_as_its_definition(rows, servers, R):
    assert_same_runs(rows, servers, R, Tetris(), RefTetris())


def _many_jobs(n, seed):
    """n jobs of a few shapes, all at time 0 (many candidates, many of them alike, as in the OpenB pods)."""
    rng = np.random.default_rng(seed)
    shapes = [(1.0, 2.0, 0), (0.5, 1.0, 0), (2.0, 1.0, 1), (1.0, 0.3, 0), (0.25, 2.0, 2)]
    rows = []
    for i in range(n):
        g, c, extra = shapes[int(rng.integers(len(shapes)))]
        rows.append((float(rng.choice([0.0, 0.0, 2.0])), float(rng.choice([5.0, 20.0, 60.0])), g, c, 1, extra, 0, 0))
    return rows


@settings(max_examples=15, deadline=None)
@given(n=st.integers(20, 70), servers=st.integers(3, 12), seed=st.integers(0, 10_000))
def test_tetris_groups_decide_as_its_definition(n, servers, seed):
    # many candidates alike (a few shapes, as the OpenB pods): groups of many members, ties in weight
    assert_same_runs(_many_jobs(n, seed), servers, 3, Tetris(), RefTetris())


AMOUNTS_TIES = [0.0, -0.0, 0.5, 1.0, 1.0, 2.0, 3.0]


def _one_call(n, R, rng, caps):
    """A random call's inputs: shapes drawn from a few (equal next grants), weights with exact ties, ties
    of one unit in the last place and of 3e-13 relative (ties by the rule), others 1e-10 apart (not
    ties), elastic candidates that move between groups, PSs, resources of capacity 0 (different grants,
    equal rows of the product: ties across groups)."""
    total = np.array(caps[:R])
    shapes = rng.choice(AMOUNTS_TIES, (int(rng.integers(1, 5)), R))
    dw = shapes[rng.integers(0, len(shapes), n)]
    dp = rng.choice(AMOUNTS_TIES, (n, R)) * (rng.random((n, 1)) < 0.3)
    minw = rng.integers(1, 3, n)
    maxw = minw + rng.integers(0, 3, n) * (rng.random(n) < 0.5)
    maxp = rng.integers(0, 3, n) * (dp.any(axis=1))
    per = rng.choice([0.0, 0.0, 2.0], n)
    p0 = np.array([ps_count(int(a), int(a), int(b), float(c)) for a, b, c in zip(minw, maxp, per)])
    first = minw[:, None] * dw + p0[:, None] * dp
    base = rng.choice([0.2, 0.5, 0.9, 1.0], n)
    base = base * rng.choice([1.0, 1.0, 1 + 3e-13, 1 + 1e-10], n)
    weighted = np.where(rng.random(n) < 0.3, np.nextafter(base, 2.0), base) * (rng.random(n) < 0.9)
    return total, (minw, maxw, maxp, per, dw, dp, first), weighted


def _steps_of(steps, total, vectors, weighted, *hint):
    """One call of ``steps`` from empty sizes: (first-grant order, sizes, free capacity bytes), and the
    grants taken (the next call's hint) where ``steps`` returns them."""
    inv_total = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
    n = weighted.size
    avail, w, p = total.astype(float).copy(), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    got = steps(vectors, weighted, inv_total, avail, w, p, vectors[-1].copy(), *hint)
    order, taken = got if isinstance(got, tuple) else (got, None)
    return (order, w.tolist(), p.tolist(), avail.tobytes()), taken


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 40), R=st.integers(1, 4), seed=st.integers(0, 2**31 - 1),
       caps=st.lists(st.sampled_from([0.0, 3.0, 8.0, 20.0, 55.5]), min_size=4, max_size=4))
def test_grouped_steps_as_whole_steps(n, R, seed, caps):
    # one call's steps, grouped, against every candidate at every step
    from dlsched.policies.tetris import _grouped_steps, _whole_steps

    total, vectors, weighted = _one_call(n, R, np.random.default_rng(seed), caps)
    assert _steps_of(_grouped_steps, total, vectors, weighted)[0] == _steps_of(_whole_steps, total, vectors, weighted)[0]


@settings(max_examples=150, deadline=None)
@given(n=st.integers(8, 60), R=st.integers(1, 4), seed=st.integers(0, 2**31 - 1), calls=st.integers(2, 6),
       caps=st.lists(st.sampled_from([0.0, 3.0, 8.0, 20.0, 55.5]), min_size=4, max_size=4))
def test_grouped_steps_follow_the_last_call_only_where_they_agree(n, R, seed, calls, caps):
    # consecutive calls on candidate sets that lose members, weights nudged by units in the last place
    # or more, each given the last call's grants as its hint: the same steps as every candidate at
    # every step
    from dlsched.policies.tetris import _grouped_steps, _whole_steps

    rng = np.random.default_rng(seed)
    total, vectors, weighted = _one_call(n, R, rng, caps)
    taken = None
    for _ in range(calls):
        keep = np.flatnonzero(rng.random(n) < 0.9)
        sub = tuple(x[keep] for x in vectors)
        nudge = rng.choice([0.0, 0.0, 1e-16, 2e-13, 1e-9, 1e-3], keep.size) * rng.choice([-1.0, 1.0], keep.size)
        wk = np.where(weighted[keep] > 0, weighted[keep] + nudge, 0.0)
        got, taken = _steps_of(_grouped_steps, total, sub, wk, taken)
        assert got == _steps_of(_whole_steps, total, sub, wk)[0]


@pytest.mark.parametrize("steps", ["_whole_steps", "_grouped_steps"])
def test_tetris_tie_rule(steps):
    # scores within a relative 1e-12 of the best tie and the earliest candidate wins; 1e-11 apart the
    # better score wins: candidates 0 and 1 of one shape, 2 of another (a group of its own) aligned as well
    from dlsched.policies import tetris

    one = np.ones(3, dtype=np.int64)
    dw = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    vectors = (one, one, 0 * one, np.zeros(3), dw, np.zeros_like(dw), dw.copy())
    total = np.array([100.0, 100.0])
    for w1, w2, first in ((0.5 * (1 + 1e-13), 0.5, 0), (0.5 * (1 + 1e-11), 0.5, 1),
                          (0.5, 0.5 * (1 + 1e-13), 0), (0.4, 0.5 * (1 + 1e-11), 2)):
        order = _steps_of(getattr(tetris, steps), total, vectors, np.array([0.5, w1, w2]))[0][0]
        assert order[0] == first


def test_grouped_steps_replay_most_steps():
    # the equivalence above means something only if the replay takes steps: count them on alike calls
    from dlsched.policies.tetris import _grouped_steps, _Groups, _whole_steps

    rng = np.random.default_rng(7)
    n = 400
    shapes = np.array([[1.0, 2.0, 0.5], [0.5, 1.0, 1.0], [2.0, 0.5, 0.25], [0.25, 0.25, 2.0]])
    dw = shapes[rng.integers(0, 4, n)]
    ones = np.ones(n, dtype=np.int64)
    vectors = (ones, ones, 0 * ones, np.zeros(n), dw, np.zeros_like(dw), dw.copy())
    weighted = 1.0 - rng.random(n) * 1e-3
    total = np.array([150.0, 260.0, 190.0])
    taken_by, replay = [], _Groups.replay

    def counted(self, *a):
        k = replay(self, *a)
        taken_by.append(k)
        return k

    _Groups.replay = counted
    try:
        taken = None
        for _ in range(4):
            keep = np.sort(rng.choice(n, n - 5, replace=False))
            sub = tuple(x[keep] for x in vectors)
            got, taken = _steps_of(_grouped_steps, total, sub, weighted[keep], taken)
            assert got == _steps_of(_whole_steps, total, sub, weighted[keep])[0]
    finally:
        _Groups.replay = replay
    steps = len(got[0])
    assert steps > 100 and sum(taken_by) > steps           # over three calls, more than one call's steps replayed

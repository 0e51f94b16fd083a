"""The classic baselines every comparison includes (MODELS.md §7): FIFO, SRTF, DRF, Tetris.

One implementation each. Sizes: a fixed-size job (``min_workers == max_workers``) runs with
exactly its size; FIFO and SRTF give an elastic job its *full size* (``max_workers`` workers and
``max_ps`` PSs, or the largest size that fits the empty cluster); DRF and Tetris grow elastic
jobs bundle by bundle up to ``max_workers``. A PS job's first grant is ``min_workers`` workers
and one PS; each later grant is one worker plus one PS while it has fewer than ``max_ps``
(the "worker+PS bundle" of §7).

Every policy takes ``placer="consolidated"`` (fewest servers) or ``"first_fit"``
(dlsched/sim/placement.py). Remaining-time estimates (SRTF, Tetris) divide the true remaining
iterations (``ClusterState.remaining``, the oracle SRTF is defined with) by the job's rate at its
full size alone on the empty cluster, asked once per job of the speed source.
"""

from __future__ import annotations

import heapq
import math
from typing import Mapping, Sequence

import numpy as np

from dlsched.sim.placement import EPS, FirstFitPool, consolidated, hold, make_placer
from dlsched.sim.policies.alignment import exact, rows_of_product
from dlsched.sim.policy import ClusterState, Event, Placement, PolicyContext


class _Baseline:
    """Shared set-up: the placer, per-job full sizes and nominal rates (cached on first sight)."""

    name = ""
    slot_seconds: float | None = None

    def __init__(self, placer: str = "consolidated"):
        self.placer = make_placer(placer)

    def reset(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.total = ctx.cluster.total()
        self._full: dict[int, tuple[int, int, float]] = {}

    def full(self, state: ClusterState, j: int) -> tuple[int, int, float]:
        """(workers, PSs, rate) of job j at its largest size that fits the empty cluster."""
        got = self._full.get(j)
        if got is None:
            job, cap = state.jobs[j], state.cluster.capacity
            p = job.max_ps if job.uses_ps else 0
            got = (job.min_workers, min(p, 1), 0.0)
            for w in range(job.max_workers, job.min_workers - 1, -1):
                pl = consolidated(cap, state.demand_w[j], state.demand_p[j], w, p)
                if pl is not None:
                    got = (w, p, float(self.ctx.speed.rate(job, pl, state.cluster)))
                    break
            self._full[j] = got
        return got

    def remaining_time(self, state: ClusterState, cand: np.ndarray) -> np.ndarray:
        rate = np.array([self.full(state, j)[2] for j in cand.tolist()])
        with np.errstate(divide="ignore"):
            return np.where(rate > 0, state.remaining[cand] / np.where(rate > 0, rate, 1.0), np.inf)


def grant_vectors(state: ClusterState, cand: np.ndarray):
    """Per candidate: min workers, max workers, max PSs, workers per PS, first-grant vector, per-worker
    and per-PS vectors.

    First grant: ``min_workers`` workers and the PSs they need; a later grant: one worker, plus the
    PSs the job then needs (:func:`ps_count`: one per worker, the MODELS.md §7 bundle, unless the
    job's PS serves ``workers_per_ps`` workers, §3.1).
    """
    minw, maxw, maxp, per, p0 = (a[cand] for a in _job_limits(state.jobs))
    dw, dp = state.demand_w[cand], state.demand_p[cand]
    first = minw[:, None] * dw + p0[:, None] * dp
    return minw, maxw, maxp, per, dw, dp, first


_LIMITS: list = [None, None]      # the last trace's (jobs, arrays): every call of a run asks about the same jobs


def _job_limits(jobs) -> tuple[np.ndarray, ...]:
    """min workers, max workers, max PSs, workers per PS (0: a PS per worker) and first-grant PSs of
    every job, computed once per trace (a tuple of frozen jobs cannot change)."""
    if _LIMITS[0] is jobs and type(jobs) is tuple:
        return _LIMITS[1]
    minw = np.array([j.min_workers for j in jobs], dtype=np.int64)
    maxw = np.array([j.max_workers for j in jobs], dtype=np.int64)
    maxp = np.array([j.max_ps for j in jobs], dtype=np.int64)
    per = np.array([j.workers_per_ps or 0.0 for j in jobs], dtype=float)
    p0 = np.array([ps_count(a, a, b, c) for a, b, c in zip(minw.tolist(), maxp.tolist(), per.tolist())], dtype=np.int64)
    _LIMITS[:] = jobs, (minw, maxw, maxp, per, p0)
    return _LIMITS[1]


def ps_count(w: int, minw: int, maxp: int, per: float) -> int:
    """PSs of a job granted ``w`` workers: none for all-reduce; ``ceil(w / per)`` when a PS serves
    ``per`` workers; else the bundle count 1 + (w - minw); never above ``maxp``."""
    if maxp <= 0 or w <= 0:
        return 0
    if per > 0:
        return min(maxp, max(1, math.ceil(w / per - 1e-9)))
    return min(maxp, 1 + w - minw)


def _next_grant(i, w, p, minw, maxw, maxp, per, dw, dp, first):
    """(workers, PSs, added vector) of candidate i's next grant, or None at its maximum."""
    if w[i] == 0:
        return minw[i], ps_count(int(minw[i]), int(minw[i]), int(maxp[i]), float(per[i])), first[i]
    if w[i] >= maxw[i]:
        return None
    p_new = max(p[i], ps_count(int(w[i]) + 1, int(minw[i]), int(maxp[i]), float(per[i])))
    return w[i] + 1, p_new, dw[i] + (p_new - p[i]) * dp[i]


def grant(i, w, p, order, avail, vectors):
    """Give candidate i its next grant (``vectors`` of :func:`grant_vectors`): its sizes w[i], p[i]
    grow, ``avail`` shrinks, ``order`` gains i at its first grant; returns the grant after it, or None."""
    nw, np_, add = _next_grant(i, w, p, *vectors)
    avail -= add
    if w[i] == 0:
        order.append(i)
    w[i], p[i] = nw, np_
    return _next_grant(i, w, p, *vectors)


class FillMemo:
    """What the last progressive filling did, so that the next one resumes where both agree.

    DRF re-fills every active job at every event, and consecutive calls differ by a few jobs.
    The filling pops grants in the order of the key (dominant share, job): its first pops, up to
    the first one of a job that has left, or of a key above a new job's first key (0, j), are
    the same as last time with the same outcomes, because they see the same free capacity. The
    memo keeps last call's pops (``log``: job, key, outcome) and every :attr:`SNAP` pops a copy of
    the free capacity (``snaps``); the next call restores the last copy at or before that point,
    replays the log up to it (sizes, placements, the heap) and fills on from there: the same
    decisions as filling from scratch, bit for bit (tests/sim/test_drf_equivalence.py).
    """

    #: pops between two copies of the free capacity
    SNAP = 64

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.jobs: set = set()
        self.log: list = []        # (job, key, granted: (workers, PSs, placement so far, next key or None) or None)
        self.snaps: list = []      # (pops done, free per server or None, the pool's mark(), aggregate left)
        self.per_job: tuple = ()   # grant_vectors of every job of the trace, as Python rows (the setting's)

    def setting(self, key: tuple, state: ClusterState) -> None:
        """Start over when the trace, capacity or servers differ from last call's."""
        if key == self.key:
            return
        self.key, self.jobs, self.log, self.snaps = key, set(), [], []
        every = np.arange(len(state.jobs), dtype=np.int64)
        minw, maxw, maxp, per, dw, dp, first = grant_vectors(state, every)
        self.per_job = ([tuple(x) for x in dw.tolist()], [tuple(x) for x in dp.tolist()], first.tolist(),
                        minw.tolist(), maxw.tolist(), maxp.tolist(), per.tolist(), np.minimum(first, dw),
                        _job_limits(state.jobs)[4].tolist())

    def resume_point(self, key: tuple, cand: list[int]) -> int:
        """How many of last call's pops this call repeats (0 when the setting changed)."""
        if key != self.key:
            return 0
        new = set(cand)
        gone = self.jobs - new
        added = new - self.jobs
        first_new = (0.0, min(added)) if added else None
        for t, (j, k, _) in enumerate(self.log):
            if j in gone or (first_new is not None and k > first_new):
                return t
        return len(self.log)


def drf_fill(state: ClusterState, cand: np.ndarray, total: np.ndarray,
             servers: np.ndarray | None = None, memo: FillMemo | None = None
             ) -> tuple[dict[int, tuple[int, int]], dict[int, Placement]]:
    """Dominant resource fairness by progressive filling (MODELS.md §7).

    Repeatedly the candidate with the lowest dominant share max_r a_j^r / C^r (ties: earlier
    arrival) gets its next grant if it fits the aggregate capacity left; a job whose grant does
    not fit stops growing. With ``servers`` (free capacity per server, (S, R)) a grant must also
    fit on the servers: its tasks are placed first fit on a tentative copy, as a cluster's DRF
    hands out tasks on machines (aggregate capacity alone over-sizes jobs whose tasks do not pack,
    e.g. on OASiS's separate worker and PS servers). Returns (workers, PSs) of every job that got
    at least its first grant, in the order of those first grants, and (with ``servers``) the
    tentative placements, which pack by construction. ``memo`` (:class:`FillMemo`, kept by the
    caller between calls) makes a call resume from the last one's pops where they agree; the
    answer is the same with or without it.
    """
    cand = np.asarray(cand, dtype=np.int64)
    if not cand.size:
        return {}, {}
    # the heap loop runs once per grant: plain floats over the few resources beat small numpy calls
    R = range(len(total))
    inv = [1.0 / c if c > 0 else 0.0 for c in total.tolist()]
    avail = total.astype(float).tolist()
    candl = cand.tolist()
    if memo is None:
        minw, maxw, maxp, per, dw, dp, first = grant_vectors(state, cand)
        # no grant of any candidate is smaller than this, so once avail is below it in some resource, stop
        # (a later grant may add no PS: one worker is the least it adds)
        smallest = np.minimum(first, dw).min(axis=0).tolist()
        dwl, dpl, firstl = [tuple(x) for x in dw.tolist()], [tuple(x) for x in dp.tolist()], first.tolist()
        minwl, maxwl, maxpl, perl = minw.tolist(), maxw.tolist(), maxp.tolist(), per.tolist()
        p0l = _job_limits(state.jobs)[4][cand].tolist()
    else:
        key = (id(state.jobs), total.tobytes(), None if servers is None else np.asarray(servers, dtype=float).tobytes())
        memo.setting(key, state)
        DW, DP, FIRST, MINW, MAXW, MAXP, PER, least, P0 = memo.per_job
        smallest = least[cand].min(axis=0).tolist()
        dwl, dpl, firstl = [DW[j] for j in candl], [DP[j] for j in candl], [FIRST[j] for j in candl]
        minwl, maxwl, maxpl, perl = [MINW[j] for j in candl], [MAXW[j] for j in candl], [MAXP[j] for j in candl], \
            [PER[j] for j in candl]
        p0l = [P0[j] for j in candl]
    pool = None if servers is None else FirstFitPool(servers)
    where: dict[int, tuple[dict, dict]] = {}
    w = [0] * cand.size
    p = [0] * cand.size
    order: list[int] = []
    log: list = []
    snaps: list = []
    placed: dict[int, Placement] = {}             # with a memo: each granted job's placement so far
    start = 0
    if memo is not None:
        upto = memo.resume_point(key, candl)
        snap = max((sn for sn in memo.snaps if sn[0] <= upto), key=lambda sn: sn[0], default=None)
        if snap is not None and snap[0] > 0:
            start = snap[0]
            log, snaps = memo.log[:start], [sn for sn in memo.snaps if sn[0] <= start]
            if pool is not None:
                pool.restore(snap[1], snap[2])
            avail = list(snap[3])
        memo.jobs = set(candl)
    pending = {}                                   # job -> its key in the heap, after the replayed pops
    if start:
        at = {j: i for i, j in enumerate(candl)}
        for j, _, granted in log:
            i = at[j]
            pending[j] = None
            if granted is None:
                continue
            nw, np_, pl, nxt = granted
            if w[i] == 0:
                order.append(i)
            w[i], p[i] = nw, np_
            if pl is not None:
                placed[i] = pl
            pending[j] = nxt
    heap = [((0.0, j, i) if j not in pending else (pending[j], j, i)) for i, j in enumerate(candl)
            if pending.get(j, 0.0) is not None]
    heapq.heapify(heap)
    if memo is not None and not snaps:
        snaps.append((0, None if pool is None else pool.free.copy(), None if pool is None else pool.mark(), tuple(avail)))
    while heap:
        share, j, i = heapq.heappop(heap)
        if memo is not None and len(log) % memo.SNAP == 0 and len(log) > snaps[-1][0]:
            snaps.append((len(log), None if pool is None else pool.free.copy(),
                          None if pool is None else pool.mark(), tuple(avail)))
        if w[i] == 0:
            nw, np_, add = minwl[i], p0l[i], firstl[i]       # p0: ps_count(minw, minw, maxp, per)
        else:
            nw = w[i] + 1
            np_ = max(p[i], ps_count(nw, minwl[i], maxpl[i], perl[i]))
            add = [dwl[i][r] + (np_ - p[i]) * dpl[i][r] for r in R]
        fits = True
        for r in R:
            if add[r] > avail[r] + EPS:
                fits = False
                break
        got = None
        if fits and pool is not None:
            got = pool.take(dwl[i], dpl[i], nw - w[i], np_ - p[i])
            fits = got is not None
            if fits:
                if w[i] == 0:
                    where[i] = (dict(got[0]), dict(got[1]))     # got lists distinct servers
                else:
                    if i not in where and i in placed:    # a job granted before the resume point grows on
                        where[i] = (dict(placed[i].workers), dict(placed[i].ps))
                    cw, cp = where.setdefault(i, ({}, {}))
                    for s, k in got[0]:
                        cw[s] = cw.get(s, 0) + k
                    for s, k in got[1]:
                        cp[s] = cp.get(s, 0) + k
        if not fits:
            if memo is not None:
                log.append((j, (share, j), None))
            continue
        for r in R:
            avail[r] -= add[r]
        if w[i] == 0:
            order.append(i)
        w[i], p[i] = nw, np_
        nxt = None
        if nw < maxwl[i]:
            nxt = max((nw * dwl[i][r] + np_ * dpl[i][r]) * inv[r] for r in R)
            heapq.heappush(heap, (nxt, j, i))
        if memo is not None:
            if got is not None:      # a copy unless the job grows no more this call (a later call copies where it grows)
                placed[i] = Placement(*where[i]) if nxt is None else Placement(dict(where[i][0]), dict(where[i][1]))
            log.append((j, (share, j), (nw, np_, placed.get(i), nxt)))
        for r in R:
            if avail[r] < smallest[r] - EPS:
                heap.clear()
                break
    if memo is not None:
        memo.log, memo.snaps = log, snaps
    sizes = {candl[i]: (w[i], p[i]) for i in order}
    if memo is not None:
        return sizes, {candl[i]: placed[i] for i in order if i in placed}
    return sizes, {candl[i]: Placement(where[i][0], where[i][1]) for i in order if i in where}


def packed(placed: dict[int, Placement], sizes: Mapping[int, tuple[int, int]],
           tentative: dict[int, Placement]) -> dict[int, Placement]:
    """The placer's answer if it placed every size in full (it keeps unchanged jobs where they
    are: no restart), else the filling's own placements, which pack every size."""
    full = all(j in placed and (placed[j].n_workers, placed[j].n_ps) == tuple(sz) for j, sz in sizes.items())
    return placed if full or len(tentative) < len(sizes) else tentative


class DRF(_Baseline):
    """DRF: progressive filling, the lowest dominant share gets the next worker+PS bundle (MODELS.md §7)."""

    name = "drf"

    def __init__(self, placer: str = "consolidated", incremental: bool = True):
        super().__init__(placer)
        self.incremental = bool(incremental)

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self._memo = FillMemo() if self.incremental else None

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        sizes, tentative = drf_fill(state, state.active, self.total, state.cluster.capacity, self._memo)
        return packed(self.placer.place(state, sizes), sizes, tentative)


class FIFO(_Baseline):
    """FIFO: strict arrival order at full size, non-preemptive; the head job blocks the queue until it fits."""

    name = "fifo"

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        out = dict(state.allocation)
        free = state.free.copy()
        for j in state.active.tolist():
            if j in out:
                continue
            w, p, _ = self.full(state, j)
            pl = self.placer.fit(free, state.demand_w[j], state.demand_p[j], w, p)
            if pl is None:
                break
            hold(free, pl, state.demand_w[j], state.demand_p[j])
            out[j] = pl
        return out


class SRTF(_Baseline):
    """SRTF: preemptive shortest remaining time first, each job at full size; smaller jobs backfill."""

    name = "srtf"

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        cand = state.active
        if not cand.size:
            return {}
        order = cand[np.argsort(self.remaining_time(state, cand), kind="stable")]
        avail = self.total.astype(float).copy()
        sizes: dict[int, tuple[int, int]] = {}
        for j in order.tolist():
            w, p, _ = self.full(state, j)
            need = w * state.demand_w[j] + p * state.demand_p[j]
            if (need <= avail + EPS).all():
                avail -= need
                sizes[j] = (w, p)
        return self.placer.place(state, sizes)


class Tetris(_Baseline):
    """Tetris: grant the job whose next bundle best aligns with the free resources, favouring less remaining work.

    Score of candidate j with next grant b_j: ⟨free/C, b_j/C⟩ normalised by its maximum over the
    candidates, plus ``remaining_weight`` · (1 − T_j / max T), T_j the remaining-time estimate.
    """

    name = "tetris"

    def __init__(self, placer: str = "consolidated", remaining_weight: float = 1.0):
        super().__init__(placer)
        self.remaining_weight = float(remaining_weight)

    def terms(self, state: ClusterState, cand: np.ndarray):
        """What a call starts from: the grant vectors of the candidates (:func:`grant_vectors`),
        their remaining-work term 1 − T_j / max T (0 where T_j is unknown), 1 / C per resource (0
        where C = 0), the aggregate capacity left, zero sizes w and p, and each candidate's next
        grant vector (its first)."""
        T = self.remaining_time(state, cand)
        finite = np.isfinite(T)
        tmax = T[finite].max() if finite.any() else 1.0
        short = np.where(finite, 1.0 - T / tmax if tmax > 0 else 1.0, 0.0)
        inv_total = np.where(self.total > 0, 1.0 / np.where(self.total > 0, self.total, 1.0), 0.0)
        vectors = grant_vectors(state, cand)
        return (vectors, short, inv_total, self.total.astype(float).copy(), np.zeros(cand.size, dtype=np.int64),
                np.zeros(cand.size, dtype=np.int64), vectors[-1].copy())

    #: relative (and absolute) slack on every bound that decides whether a shortlist is enough: far above
    #: the few units in the last place a product, a division or a sum can round by
    SLACK = 1e-12

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        cand = np.asarray(state.active, dtype=np.int64)
        if not cand.size:
            return {}
        vectors, short, inv_total, avail, w, p, nxt = self.terms(state, cand)
        n = cand.size
        weighted = self.remaining_weight * short
        # a candidate is out for good once its next grant does not fit (avail only shrinks, and its next
        # grant changes only when it is chosen) or it is at its maximum
        out = np.zeros(n, dtype=bool)
        A = nxt * inv_total                # the product's matrix, a row renewed when its candidate's next grant changes
        short_ok = exact(A.shape[1])
        order: list[int] = []
        lst = None                         # the shortlist since the last whole product (_Shortlist), or None
        while True:
            i = None if lst is None else lst.choose(self, A, nxt, avail, inv_total, weighted, out)
            if i is None:
                lst = None
                alive = np.flatnonzero(~out)
                fits = (nxt[alive] <= avail + EPS).all(axis=1)
                out[alive[~fits]] = True
                alive = alive[fits]
                if not alive.size:
                    break
                # over every candidate: a row's rounding depends on its place in the whole product
                align = A @ (avail * inv_total)
                al = align[alive]
                top = al.max()
                score = (al / top if top > 0 else 0.0) + weighted[alive]
                i = int(alive[int(np.argmax(score))])
                if short_ok and top > 0 and alive.size > max(self.WHOLE, 4 * self.SHORT):
                    # longer lists live longer (the scores at the top are dense); a whole product costs ~n
                    lst = _Shortlist(alive, align[alive], score, top, max(self.SHORT, 4 * math.isqrt(alive.size)), self.SLACK,
                                     avail * inv_total)
            g = grant(i, w, p, order, avail, vectors)
            if g is None:
                out[i] = True
            else:
                nxt[i] = g[2]
                A[i] = nxt[i] * inv_total
                if lst is not None:
                    lst.renewed(i)
        return self.placer.place(state, {int(cand[i]): (int(w[i]), int(p[i])) for i in order})

    #: candidates kept in each shortlist (by score, and by alignment) between two whole products
    SHORT = 48
    #: below this many candidates the whole product at every step is cheaper than a shortlist (one call on
    #: the first n OpenB pods at once: the same CPU at n = 2,000, 1.27x less at n = 7,000)
    WHOLE = 2000


class _Shortlist:
    """Tetris's next choices from a few candidates, as the whole product would make them, while a bound says so.

    At a whole product (free capacity v0, alignments a0, best alignment top0, scores s0) keep the K best
    candidates by score and the K best by alignment, with every candidate tied or nearly tied with the
    K-th. Free capacity only shrinks and every term of an alignment is >= 0, so no candidate's
    alignment grows: one left out of the score list scores at most θ + (1/top − 1/top0)·a_out
    (θ its best score at the whole product, a_out its largest alignment then), and one left out of the
    alignment list aligns at most θ_a (their largest alignment then). A step computes the exact
    alignments of the listed candidates that still fit (and of those whose next grant changed,
    :func:`~dlsched.sim.policies.alignment.rows_of_product`), and its choice stands when the best of
    them is above the bound by a margin (``slack``); otherwise the caller takes the whole product again.
    """

    def __init__(self, alive, a0, s0, top0, K, slack, v0):
        self.slack = slack
        self.v0 = v0
        K = min(K, s0.size)
        cut = np.partition(s0, s0.size - K)[s0.size - K] - 1e-6       # the K-th largest score, less a margin
        keep = s0 >= cut
        self.theta = s0[~keep].max() if (~keep).any() else -np.inf
        self.a_out = a0[~keep].max() if (~keep).any() else 0.0
        cut_a = np.partition(a0, a0.size - K)[a0.size - K] * (1 - 1e-6)
        keep_a = a0 >= cut_a
        self.theta_a = a0[~keep_a].max() if (~keep_a).any() else 0.0
        self.rows = alive[keep | keep_a]               # ascending, as alive is
        self.inv_top0 = 1.0 / top0
        self.changed: list[int] = []

    def renewed(self, i: int) -> None:
        """Candidate i's next grant changed: its alignment is no longer bounded by a0; always list it."""
        if i not in self.changed:
            self.changed.append(i)
            self.rows = np.union1d(self.rows, [i])

    def choose(self, tetris, A, nxt, avail, inv_total, weighted, out) -> int | None:
        rows = self.rows[~out[self.rows]]
        fits = (nxt[rows] <= avail + EPS).all(axis=1)
        out[rows[~fits]] = True
        rows = self.rows = rows[fits]
        if not rows.size or self.changed and len(self.changed) > tetris.SHORT:
            return None
        v = avail * inv_total
        align = rows_of_product(A, v, rows)
        top = align.max()
        slack = self.slack
        # every v_r shrank by at least the factor rho (its largest v_r / v0_r), so every alignment did too
        keep = self.v0 > 0
        rho = float((v[keep] / self.v0[keep]).max()) if keep.any() else 0.0
        if not top > self.theta_a * rho * (1 + slack) + slack:
            return None
        score = align / top + weighted[rows]
        k = int(np.argmax(score))
        bound = self.theta + max(0.0, rho / top - self.inv_top0) * self.a_out
        if not score[k] > bound * (1 + slack) + slack:
            return None
        return int(rows[k])

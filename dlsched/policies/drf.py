"""DRF (MODELS.md §7): progressive filling, the active job with the lowest dominant share gets its
next worker+PS bundle (:mod:`dlsched.policies.bundles`), until no bundle fits."""

from __future__ import annotations

import heapq
from typing import Mapping, Sequence

import numpy as np

from dlsched.arguments import checked
from dlsched.policies.bundles import Baseline, _job_limits, grant_vectors, ps_count, take_in_order
from dlsched.sim.placement import EPS, FirstFitPool, PlacerName
from dlsched.sim.policy import ChangePolicy, Changes, ClusterState, Event, Placement, PolicyContext


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

    It earns its lines, the same decisions with and without it: the OpenB pod list at load 0.9 up
    to 28,500 s (4,527 events) takes 19.2 CPU s with it and 56.4 without; ``poisson:10000:0`` at
    load 0.9 on 1,625 x 4 GPUs, the first 3,000 s (1,648 events), 4.6 and 9.4.
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


class DRF(Baseline, ChangePolicy):
    """DRF: progressive filling, the lowest dominant share gets the next worker+PS bundle (MODELS.md §7).

    Answers with :class:`Changes` (the jobs it starts) where no running job changes, else with the
    whole allocation."""

    name = "drf"

    @checked
    def __init__(self, placer: PlacerName = "consolidated", incremental: bool = True):
        super().__init__(placer)
        self.incremental = bool(incremental)

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self._memo = FillMemo() if self.incremental else None
        self._shape: tuple | None = None       # (the trace, its tasks are units, its jobs are rigid, of one size each)

    def candidates(self, state: ClusterState, events: Sequence[Event]) -> np.ndarray:
        """The jobs the filling may grow: every active job (a family's DRF admits fewer)."""
        return state.active

    def changes(self, state: ClusterState, events: Sequence[Event]) -> Changes | dict[int, Placement]:
        cand = self.candidates(state, events)
        if self._shape is None or self._shape[0] is not state.jobs:
            minw, maxw, maxp = _job_limits(state.jobs)[:3]
            rigid = bool((minw == maxw).all())
            self._shape = (state.jobs, unit_tasks(state), rigid, rigid and bool((maxp <= 1).all()))
        _, unit, rigid, fixed = self._shape
        if not unit:
            sizes, tentative = drf_fill(state, cand, self.total, state.cluster.capacity, self._memo)
            return packed(self.placer.place(state, sizes), sizes, tentative)
        # Unit tasks pack whenever their aggregate fits (unit_tasks), so the tentative placement of
        # every grant can never refuse one: the filling on aggregate capacity alone decides the same
        # sizes, and the placer packs them all. A rigid job gets one grant, its first, so with every
        # job rigid the filling is one pass in arrival order (the keys (0, j) pop first). Both earn
        # their lines: the first 3,000 jobs of ITP cluster 04 on 80 x 8 GPUs take 1.3 CPU s, 3.5 s with the servers.
        if rigid:
            cand = np.sort(np.asarray(cand, dtype=np.int64))
            p0 = _job_limits(state.jobs)[4]
            run = state.running
            if fixed and run is not None and np.array_equal(cand[:run.size], run):
                # The running jobs come first in the pass and hold their one size (of one size each:
                # rigid, at most one PS), which together fits, so the pass takes each of them and
                # leaves the aggregate capacity free now (whole units: exact) to the jobs after them.
                # Only those are passed over and placed: without a queue, the jobs that arrived.
                wait = cand[run.size:]
                minw, _, _, _, _, _, first = grant_vectors(state, wait)
                take = take_in_order(first, state.free.sum(axis=0))
                return Changes(self.placer.added(state, _rigid_sizes(wait[take], minw[take], p0)))
            minw, _, _, _, _, _, first = grant_vectors(state, cand)
            take = take_in_order(first, self.total.astype(float))
            taken = cand[take]
            if run is not None and np.isin(run, taken).all():
                # no running job dropped, and a rigid job keeps its one size: only the jobs taken that
                # do not run yet are placed (the placer's answer for all of them, at their cost)
                new = ~np.isin(taken, run)
                return Changes(self.placer.added(state, _rigid_sizes(taken[new], minw[take][new], p0)))
            sizes = _rigid_sizes(taken, minw[take], p0)
        else:
            sizes = drf_fill(state, cand, self.total, None, self._memo)[0]
        return self.placer.place(state, sizes)


def _rigid_sizes(jobs: np.ndarray, workers: np.ndarray, p0: np.ndarray) -> dict[int, tuple[int, int]]:
    """{job: (its workers, its first PS count)} for rigid jobs taken in order."""
    return dict(zip(jobs.tolist(), zip(workers.tolist(), p0[jobs].tolist())))


def unit_tasks(state: ClusterState) -> bool:
    """Whether every task (a worker or a PS) of the trace needs one unit of one resource, or nothing,
    and every server holds whole units of each resource. Then a set of tasks packs on the servers
    (first fit, consolidated, in any order) exactly when their total per resource fits the free
    total: a server with f free units holds f tasks of that resource, and the units are counted
    exactly in floating point."""
    d = np.vstack([state.demand_w, state.demand_p])
    cap = state.cluster.capacity
    return bool(((d == 0) | (d == 1)).all() and ((d > 0).sum(axis=1) <= 1).all() and (cap == np.floor(cap)).all())

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


def drf_fill(state: ClusterState, cand: np.ndarray, total: np.ndarray,
             servers: np.ndarray | None = None) -> tuple[dict[int, tuple[int, int]], dict[int, Placement]]:
    """Dominant resource fairness by progressive filling (MODELS.md §7).

    Repeatedly the candidate with the lowest dominant share max_r a_j^r / C^r (ties: earlier
    arrival) gets its next grant if it fits the aggregate capacity left; a job whose grant does
    not fit stops growing. With ``servers`` (free capacity per server, (S, R)) a grant must also
    fit on the servers: its tasks are placed first fit on a tentative copy, as a cluster's DRF
    hands out tasks on machines (aggregate capacity alone over-sizes jobs whose tasks do not pack,
    e.g. on OASiS's separate worker and PS servers). Returns (workers, PSs) of every job that got
    at least its first grant, in the order of those first grants, and (with ``servers``) the
    tentative placements, which pack by construction.
    """
    cand = np.asarray(cand, dtype=np.int64)
    if not cand.size:
        return {}, {}
    minw, maxw, maxp, per, dw, dp, first = grant_vectors(state, cand)
    # the heap loop runs once per grant: plain floats over the few resources beat small numpy calls
    R = range(len(total))
    inv = [1.0 / c if c > 0 else 0.0 for c in total.tolist()]
    avail = total.astype(float).tolist()
    # no grant of any candidate is smaller than this, so once avail is below it in some resource, stop
    # (a later grant may add no PS: one worker is the least it adds)
    smallest = np.minimum(first, dw).min(axis=0).tolist()
    dwl, dpl, firstl = [tuple(x) for x in dw.tolist()], [tuple(x) for x in dp.tolist()], first.tolist()
    minwl, maxwl, maxpl, perl = minw.tolist(), maxw.tolist(), maxp.tolist(), per.tolist()
    pool = None if servers is None else FirstFitPool(servers)
    where: dict[int, tuple[dict, dict]] = {}
    w = [0] * cand.size
    p = [0] * cand.size
    order: list[int] = []
    heap = [(0.0, j, i) for i, j in enumerate(cand.tolist())]
    heapq.heapify(heap)
    while heap:
        _, j, i = heapq.heappop(heap)
        if w[i] == 0:
            nw, np_, add = minwl[i], ps_count(minwl[i], minwl[i], maxpl[i], perl[i]), firstl[i]
        else:
            nw = w[i] + 1
            np_ = max(p[i], ps_count(nw, minwl[i], maxpl[i], perl[i]))
            add = [dwl[i][r] + (np_ - p[i]) * dpl[i][r] for r in R]
        fits = True
        for r in R:
            if add[r] > avail[r] + EPS:
                fits = False
                break
        if fits and pool is not None:
            got = pool.take(dwl[i], dpl[i], nw - w[i], np_ - p[i])
            fits = got is not None
            if fits:
                cw, cp = where.setdefault(i, ({}, {}))
                for s, k in got[0]:
                    cw[s] = cw.get(s, 0) + k
                for s, k in got[1]:
                    cp[s] = cp.get(s, 0) + k
        if not fits:
            continue
        for r in R:
            avail[r] -= add[r]
        if w[i] == 0:
            order.append(i)
        w[i], p[i] = nw, np_
        if nw < maxwl[i]:
            heapq.heappush(heap, (max((nw * dwl[i][r] + np_ * dpl[i][r]) * inv[r] for r in R), j, i))
        for r in R:
            if avail[r] < smallest[r] - EPS:
                heap.clear()
                break
    sizes = {int(cand[i]): (w[i], p[i]) for i in order}
    return sizes, {int(cand[i]): Placement(where[i][0], where[i][1]) for i in order if i in where}


def packed(placed: dict[int, Placement], sizes: Mapping[int, tuple[int, int]],
           tentative: dict[int, Placement]) -> dict[int, Placement]:
    """The placer's answer if it placed every size in full (it keeps unchanged jobs where they
    are: no restart), else the filling's own placements, which pack every size."""
    full = all(j in placed and (placed[j].n_workers, placed[j].n_ps) == tuple(sz) for j, sz in sizes.items())
    return placed if full or len(tentative) < len(sizes) else tentative


class DRF(_Baseline):
    """DRF: progressive filling, the lowest dominant share gets the next worker+PS bundle (MODELS.md §7)."""

    name = "drf"

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        sizes, tentative = drf_fill(state, state.active, self.total, state.cluster.capacity)
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

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        cand = np.asarray(state.active, dtype=np.int64)
        if not cand.size:
            return {}
        minw, maxw, maxp, per, dw, dp, first = grant_vectors(state, cand)
        T = self.remaining_time(state, cand)
        finite = np.isfinite(T)
        tmax = T[finite].max() if finite.any() else 1.0
        short = np.where(finite, 1.0 - T / tmax if tmax > 0 else 1.0, 0.0)
        inv_total = np.where(self.total > 0, 1.0 / np.where(self.total > 0, self.total, 1.0), 0.0)
        avail = self.total.astype(float).copy()
        w = np.zeros(cand.size, dtype=np.int64)
        p = np.zeros(cand.size, dtype=np.int64)
        nxt = first.copy()                     # the vector of each candidate's next grant
        growing = np.ones(cand.size, dtype=bool)
        order: list[int] = []
        while True:
            ok = growing & (nxt <= avail + EPS).all(axis=1)
            if not ok.any():
                break
            align = (nxt * inv_total) @ (avail * inv_total)
            top = align[ok].max()
            score = np.where(ok, (align / top if top > 0 else 0.0) + self.remaining_weight * short, -np.inf)
            i = int(np.argmax(score))
            nw, np_, add = _next_grant(i, w, p, minw, maxw, maxp, per, dw, dp, first)
            avail -= add
            if w[i] == 0:
                order.append(i)
            w[i], p[i] = nw, np_
            g = _next_grant(i, w, p, minw, maxw, maxp, per, dw, dp, first)
            if g is None:
                growing[i] = False
            else:
                nxt[i] = g[2]
        return self.placer.place(state, {int(cand[i]): (int(w[i]), int(p[i])) for i in order})

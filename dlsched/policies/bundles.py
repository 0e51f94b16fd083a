"""What the classic baselines share (MODELS.md §7): each job's full size and nominal rate, and the
worker+PS grants by which DRF and Tetris grow a job.

Sizes: a fixed-size job (``min_workers == max_workers``) runs with exactly its size; FIFO and SRTF
give an elastic job its *full size* (``max_workers`` workers and ``max_ps`` PSs, or the largest
size that fits the empty cluster); DRF and Tetris grow elastic jobs bundle by bundle up to
``max_workers``. A PS job's first grant is ``min_workers`` workers and one PS; each later grant is
one worker plus one PS while it has fewer than ``max_ps`` (the "worker+PS bundle" of §7).

Every baseline takes ``placer="consolidated"`` (fewest servers) or ``"first_fit"``
(dlsched/sim/placement.py). Remaining-time estimates (SRTF, Tetris) divide the true remaining
iterations (``ClusterState.remaining``, the oracle SRTF is defined with) by the job's rate at its
full size alone on the empty cluster, asked once per job of the speed source.
"""

from __future__ import annotations

import math

import numpy as np

from dlsched.arguments import checked
from dlsched.sim.placement import EPS, EmptyCluster, PlacerName, make_placer
from dlsched.sim.policy import ClusterState, PolicyContext
from dlsched.solvers import first_fit


class Baseline:
    """Shared set-up: the placer, per-job full sizes and nominal rates (cached on first sight)."""

    name = ""
    slot_seconds: float | None = None

    @checked
    def __init__(self, placer: PlacerName = "consolidated"):
        self.placer = make_placer(placer)

    def reset(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.total = ctx.cluster.total()
        self._full: dict[int, tuple[int, int, float]] = {}
        self._known: np.ndarray | None = None     # per job of the trace: full size asked yet
        self._empty = EmptyCluster(ctx.cluster.capacity)

    def full(self, state: ClusterState, j: int) -> tuple[int, int, float]:
        """(workers, PSs, rate) of job j at its largest size that fits the empty cluster."""
        got = self._full.get(j)
        if got is None:
            job = state.jobs[j]
            p = job.max_ps if job.uses_ps else 0
            w, pl = self._empty.largest(state.demand_w[j], state.demand_p[j], job.min_workers, job.max_workers, p)
            got = (job.min_workers, min(p, 1), 0.0) if pl is None else (w, p, float(self.ctx.speed.rate(job, pl, state.cluster)))
            self._full[j] = got
        return got

    def fulls(self, state: ClusterState, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`full` of every candidate as arrays (workers, PSs, rate), asked once per job of the
        trace: a call costs numpy work over the candidates, no Python step per candidate."""
        if self._known is None or self._known.size != len(state.jobs):
            n = len(state.jobs)
            self._known = np.zeros(n, dtype=bool)
            self._fw, self._fp, self._rate = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n)
        for j in cand[~self._known[cand]].tolist():
            self._fw[j], self._fp[j], self._rate[j] = self.full(state, j)
            self._known[j] = True
        return self._fw[cand], self._fp[cand], self._rate[cand]

    def remaining_time(self, state: ClusterState, cand: np.ndarray) -> np.ndarray:
        rate = self.fulls(state, cand)[2]
        with np.errstate(divide="ignore"):
            return np.where(rate > 0, state.remaining[cand] / np.where(rate > 0, rate, 1.0), np.inf)


def take_in_order(need: np.ndarray, avail: np.ndarray) -> np.ndarray:
    """Which rows of ``need`` (n, R) first fit in order takes from ``avail``, a row fitting when
    ``need <= avail + EPS`` (:func:`dlsched.solvers.first_fit.take_in_order`, the loop's decisions
    and floating-point values in numpy passes)."""
    return first_fit.take_in_order(need, avail, EPS)


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

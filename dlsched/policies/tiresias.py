r"""Tiresias's 2D-LAS (Gu et al., NSDI'19): discretised two-dimensional least attained service.

A job's attained service is GPU-seconds, :math:`a_j = \sum_t g_j(t)` (the number of GPUs it held
times the time it held them: ``ClusterState.attained``), so that a wide job ages faster than a
narrow one. Service is discretised into K priority queues by thresholds
:math:`Q_1 < \dots < Q_{K-1}` (``queue_limits``, GPU-seconds, taken in increasing order): a job enters queue 0 on arrival and
moves to queue k + 1 when the service it attained since it (last) entered queue 0 reaches
:math:`Q_{k+1}`. Queues are served in priority order, each in its list order: a job joins at the
back (on arrival, demotion or promotion), and after every decision the jobs left waiting move to
the back in their order, as in Tiresias's simulator, so that the jobs running in a queue keep
running ahead of the ones that wait there. A job that does not fit what the jobs before it left
is skipped (the smaller jobs behind it may run); a running job that no longer fits is preempted. Every job runs at its full size (rigid, as
Tiresias's jobs are). Starvation: with ``starvation`` = :math:`\kappa > 0`, a waiting job of a
queue below 0 that has waited :math:`\kappa` times the time it ran since entering queue 0 goes
back to queue 0 with its count cleared (Tiresias's ``solve_starvation`` knob; 0, its default,
turns this off).

The public simulator's defaults are taken: limits 3,250 and 7,200 GPU-seconds (three queues),
no starvation rule. Demotions and promotions happen between events, so every decision asks to be
called again at the next time a running job crosses its threshold or a waiting job its
starvation limit (``Decision.next_call``). Placement is the baselines' (``placer``,
:mod:`dlsched.policies.bundles`); Tiresias's own profile-guided consolidation is not modelled.
"""

from __future__ import annotations

import math
from typing import Annotated, Sequence

import numpy as np

from dlsched.arguments import Range, checked
from dlsched.policies.bundles import Baseline, take_in_order
from dlsched.sim.placement import EPS, PlacerName
from dlsched.sim.policy import ClusterState, Decision, Event, PolicyContext


class Tiresias(Baseline):
    """Tiresias's 2D-LAS: priority queues on attained GPU-seconds, first-come first-served inside a queue."""

    name = "tiresias"

    @checked
    def __init__(self, placer: PlacerName = "consolidated",
                 queue_limits: Sequence[Annotated[float, Range(gt=0, finite=True)]] = (3250.0, 7200.0),
                 starvation: Annotated[float, Range(ge=0, finite=True)] = 0.0):
        super().__init__(placer)
        self.limits = np.array(sorted({float(q) for q in queue_limits}) + [math.inf])
        self.starvation = float(starvation)

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        names = ctx.cluster.resources
        self._gpu = names.index("gpu") if "gpu" in names else None
        self._queue: np.ndarray | None = None      # per job: its queue
        self._base: np.ndarray | None = None       # attained GPU-seconds when it last entered queue 0
        self._waited: np.ndarray | None = None     # seconds waited since it last entered queue 0, having run
        self._joined: np.ndarray | None = None     # its place in its queue's list (larger: further back)
        self._next = 0
        self._last = 0.0

    def _widths(self, state: ClusterState, cand: np.ndarray, w: np.ndarray, p: np.ndarray) -> np.ndarray:
        """GPUs each candidate holds at its full size (``w`` workers, ``p`` PSs): the rate at which its
        attained service grows."""
        if self._gpu is None:
            return w.astype(float)
        return w * state.demand_w[cand, self._gpu] + p * state.demand_p[cand, self._gpu]

    def _join_back(self, jobs: np.ndarray) -> None:
        self._joined[jobs] = np.arange(self._next, self._next + jobs.size)
        self._next += jobs.size

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> Decision:
        n = len(state.jobs)
        if self._queue is None:
            self._queue = np.zeros(n, dtype=np.int64)
            self._base = np.zeros(n)
            self._waited = np.zeros(n)
            self._joined = np.full(n, -1, dtype=np.int64)
        cand = state.active
        if not cand.size:
            return Decision({})
        dt, self._last = state.time - self._last, state.time
        new = cand[self._joined[cand] < 0]
        self._join_back(new)
        running = np.isin(cand, np.fromiter(state.allocation, dtype=np.int64, count=len(state.allocation)))
        served = state.attained[cand] - self._base[cand]
        # waiting time counts for starvation once a job has run since it entered queue 0
        self._waited[cand[~running & (served > 0)]] += dt
        for k in range(len(self.limits) - 1):     # a long interval may cross more than one threshold
            down = cand[(self._queue[cand] == k) & (served >= self.limits[k] - EPS)]
            if down.size:
                self._queue[down] = k + 1
                self._join_back(down)
        w, p, _ = self.fulls(state, cand)
        width = self._widths(state, cand, w, p)
        if self.starvation > 0:
            ran = np.divide(served, width, out=np.zeros_like(served), where=width > 0)   # seconds run since queue 0
            up = ~running & (self._queue[cand] > 0) & (served > 0) & (self._waited[cand] >= self.starvation * ran - EPS)
            if up.any():
                back = cand[up]
                self._queue[back], self._base[back], self._waited[back] = 0, state.attained[back], 0.0
                self._join_back(back)
                served[up] = 0.0
        order = np.lexsort((self._joined[cand], self._queue[cand]))
        ranked, w, p = cand[order], w[order], p[order]
        # in queue order, each job whose full size fits the aggregate capacity the jobs before it left
        take = take_in_order(w[:, None] * state.demand_w[ranked] + p[:, None] * state.demand_p[ranked],
                             self.total.astype(float))
        out = self.placer.place(state, dict(zip(ranked[take].tolist(), zip(w[take].tolist(), p[take].tolist()))))
        self._join_back(ranked[~np.isin(ranked, np.fromiter(out, dtype=np.int64, count=len(out)))])
        return Decision(out, self._next_jump(state, cand, served, width, out))

    def _next_jump(self, state: ClusterState, cand: np.ndarray, served: np.ndarray, width: np.ndarray,
                   placed: dict) -> float | None:
        """The next time a job runs into its queue's threshold, or a waiting job into its starvation limit."""
        runs = np.isin(cand, np.fromiter(placed, dtype=np.int64, count=len(placed)))
        left = self.limits[self._queue[cand]] - served
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(runs & (width > 0), left / width, math.inf)
            if self.starvation > 0:
                ran = np.where(width > 0, served / width, 0.0)
                starving = ~runs & (self._queue[cand] > 0) & (served > 0)
                t = np.minimum(t, np.where(starving, self.starvation * ran - self._waited[cand], math.inf))
        t = t[t > EPS]
        return state.time + float(t.min()) if t.size and math.isfinite(t.min()) else None

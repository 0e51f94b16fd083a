"""FIFO (MODELS.md §7): strict arrival order, non-preemptive; the head job blocks the queue until it fits."""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from dlsched.policies.bundles import Baseline
from dlsched.sim.placement import hold
from dlsched.sim.policy import ChangePolicy, Changes, ClusterState, Event, Placement, PolicyContext


class FIFO(Baseline, ChangePolicy):
    """FIFO: strict arrival order at full size, non-preemptive; the head job blocks the queue until it fits."""

    name = "fifo"

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self._blocked: tuple[int, np.ndarray] | None = None   # (head job, the free capacity it did not fit)

    def waiting(self, state: ClusterState, j: int) -> bool:
        """Whether active job j, not running, is in the queue now (every one is; a family's FIFO may drop some)."""
        return True

    def size(self, state: ClusterState, j: int) -> tuple[int, int]:
        """(workers, PSs) job j runs with: its largest size that fits the empty cluster."""
        w, p, _ = self.full(state, j)
        return w, p

    def changes(self, state: ClusterState, events: Sequence[Event]) -> Changes:
        """The jobs that start: the queue's head and those after it, in order, while each fits
        (running jobs are never stopped or resized, so nothing else changes)."""
        free = state.free.copy()
        # not queue.tolist(): the queue can be long, the loop stops at its head
        queue = (j for j in map(int, waiting_jobs(state.active, state.allocation, state.running)) if self.waiting(state, j))
        head = next(queue, None)
        start: dict[int, Placement] = {}
        # an arrival frees nothing: a head that did not fit the same free capacity does not fit now
        # (placement is a function of the free capacity), so the queue stays blocked without a search
        if head is not None and self._blocked is not None and self._blocked[0] == head and np.array_equal(self._blocked[1], free):
            return Changes(start)
        self._blocked = None
        for j in itertools.chain(() if head is None else (head,), queue):
            w, p = self.size(state, j)
            pl = self.placer.fit(free, state.demand_w[j], state.demand_p[j], w, p)
            if pl is None:
                self._blocked = (j, free)
                break
            hold(free, pl, state.demand_w[j], state.demand_p[j])
            start[j] = pl
        return Changes(start)


def waiting_jobs(active: np.ndarray, running, held: np.ndarray | None = None) -> np.ndarray:
    """The active jobs not running, in arrival order. Under FIFO the running jobs are the first
    ones of ``active`` (sorted), so that is one comparison of sorted arrays; a general set
    difference otherwise. ``held``: the running jobs' sorted indices if known (``state.running``)."""
    if held is None:
        held = np.sort(np.fromiter(running, dtype=np.int64, count=len(running)))
    k = held.size
    if np.array_equal(active[:k], held):
        return active[k:]
    return active[~np.isin(active, held)]

"""FIFO (MODELS.md §7): strict arrival order, non-preemptive; the head job blocks the queue until it fits."""

from __future__ import annotations

from typing import Sequence

from dlsched.policies.bundles import Baseline
from dlsched.sim.placement import hold
from dlsched.sim.policy import ClusterState, Event, Placement


class FIFO(Baseline):
    """FIFO: strict arrival order at full size, non-preemptive; the head job blocks the queue until it fits."""

    name = "fifo"

    def waiting(self, state: ClusterState, j: int) -> bool:
        """Whether active job j, not running, is in the queue now (every one is; a family's FIFO may drop some)."""
        return True

    def size(self, state: ClusterState, j: int) -> tuple[int, int]:
        """(workers, PSs) job j runs with: its largest size that fits the empty cluster."""
        w, p, _ = self.full(state, j)
        return w, p

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        out = dict(state.allocation)
        free = state.free.copy()
        for j in state.active.tolist():
            if j in out or not self.waiting(state, j):
                continue
            w, p = self.size(state, j)
            pl = self.placer.fit(free, state.demand_w[j], state.demand_p[j], w, p)
            if pl is None:
                break
            hold(free, pl, state.demand_w[j], state.demand_p[j])
            out[j] = pl
        return out

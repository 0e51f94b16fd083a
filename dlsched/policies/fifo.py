"""FIFO (MODELS.md §7): strict arrival order at full size, non-preemptive."""

from __future__ import annotations

from typing import Sequence

from dlsched.policies.bundles import Baseline
from dlsched.sim.placement import hold
from dlsched.sim.policy import ClusterState, Event, Placement


class FIFO(Baseline):
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

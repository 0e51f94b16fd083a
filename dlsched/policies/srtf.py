"""SRTF (MODELS.md §7): preemptive shortest remaining time first, each job at full size."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dlsched.policies.bundles import Baseline, take_in_order
from dlsched.sim.policy import ClusterState, Event, Placement


class SRTF(Baseline):
    """SRTF: preemptive shortest remaining time first, each job at full size; smaller jobs backfill."""

    name = "srtf"

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        cand = state.active
        if not cand.size:
            return {}
        order = cand[np.argsort(self.remaining_time(state, cand), kind="stable")]
        w, p, _ = self.fulls(state, order)
        # in order, each job whose full size fits the aggregate capacity its predecessors left
        take = take_in_order(w[:, None] * state.demand_w[order] + p[:, None] * state.demand_p[order],
                             self.total.astype(float))
        return self.placer.place(state, dict(zip(order[take].tolist(), zip(w[take].tolist(), p[take].tolist()))))

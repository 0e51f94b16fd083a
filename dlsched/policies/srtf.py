"""SRTF (MODELS.md §7): preemptive shortest remaining time first, each job at full size."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dlsched.policies.bundles import Baseline
from dlsched.sim.placement import EPS
from dlsched.sim.policy import ClusterState, Event, Placement


class SRTF(Baseline):
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

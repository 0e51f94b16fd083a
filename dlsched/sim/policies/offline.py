r"""The exact time-indexed optimum (MODELS.md §2.4) as an offline reference policy, for small traces.

:class:`TimeIndexed` is told the whole trace (``offline = True``: ``PolicyContext.future``), solves
the time-indexed MILP of :mod:`dlsched.solvers.smd_time_indexed` once in ``reset`` (min
:math:`\sum_j \omega_j C_j` on slots of Δ, with resizing), and then plays the optimal schedule
slot by slot: at every slot boundary the jobs run the (w, p) the MILP chose for that slot. On a
trace made by :func:`dlsched.sim.policies.smd.to_trace` it solves the family instance itself;
on any other trace the SMD view of :func:`~dlsched.sim.policies.smd.instance_view` (aggregate
capacity, τ from the speed source, slots of ``slot_seconds``). Its total weighted completion
time (in slots) is a lower bound for every policy on the same slot grid (bound <= optimum <=
heuristic); the MILP grows with jobs x configurations x slots, so keep traces small.
"""

from __future__ import annotations

import numpy as np

from dlsched.errors import InputError
from dlsched.sim.placement import make_placer
from dlsched.sim.policies.smd import instance_view
from dlsched.sim.policy import ClusterState, Decision, Placement, PolicyContext
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.smd_time_indexed import time_indexed


class TimeIndexed:
    """Exact time-indexed optimum (MODELS.md §2.4), offline: solved once on the whole trace, then replayed slot by slot."""

    name = "time-indexed"
    offline = True

    def __init__(self, slot_seconds: float = 1200.0, time_limit: float | None = None, placer: str = "first_fit"):
        if not slot_seconds > 0:
            raise InputError("<argument>", "slot_seconds", "a slot length > 0", slot_seconds)
        self.slot_seconds = float(slot_seconds)
        self.time_limit = time_limit
        self.placer = make_placer(placer)

    def reset(self, ctx: PolicyContext) -> None:
        if ctx.future is None:
            raise InputError("<argument>", "policy", "the whole trace (an offline policy needs PolicyContext.future)", None)
        jobs = ctx.future.jobs
        inst = jobs[0].meta.get("smd")
        if inst is not None and all(j.meta.get("smd") is inst for j in jobs):
            self.index = np.array([int(j.meta["index"]) for j in jobs], dtype=np.int64)
            self.slot_seconds = float(inst.slot_seconds)
        else:
            inst = instance_view(jobs, ctx.cluster, ctx.speed, self.slot_seconds)
            self.index = np.arange(len(jobs))
        self.result = time_indexed(inst, SolveOptions(time_limit=self.time_limit, threads=1))
        if not self.result.status.has_solution():
            raise InputError(ctx.future.source, "trace", "a trace whose time-indexed MILP finds a schedule",
                             f"{self.result.status.value}: {self.result.message}")
        self.plan = np.asarray(self.result.solution["schedule"])            # (T, n, 2)

    def schedule(self, state: ClusterState, events) -> Decision:
        k = int(np.floor(state.time / self.slot_seconds + 1e-9))
        row = self.plan[k] if k < self.plan.shape[0] else np.zeros((self.plan.shape[1], 2), np.int64)
        jobs = state.jobs
        sizes = {int(j): (int(row[v, 0]), int(row[v, 1]) if jobs[j].uses_ps else 0)
                 for j, v in zip(state.active.tolist(), self.index[state.active].tolist()) if row[v, 0] > 0}
        placed: dict[int, Placement] = self.placer.place(state, sizes)
        return Decision(placed, next_call=(k + 1) * self.slot_seconds)

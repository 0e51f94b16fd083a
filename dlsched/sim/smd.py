"""Slotted simulation of an SMD cluster with re-planning at every arrival and completion (MODELS.md §2.3, §2.4).

Slots k = 1, 2, ... of length Δ. Job j may run from slot ⌈a_j⌉ + 1 on (it arrives at time a_j,
in slots). A policy maps (the instance with the *remaining* iterations, the active jobs) to an
allocation (w_j, p_j); it is called in slot 1 and in every slot that follows an arrival or a
completion, and the allocation is kept unchanged otherwise (so running jobs may be resized
only at events). A job running (w, p) in a slot progresses Δ / τ_j(w, p) iterations and holds
its resources for the whole slot; it completes in the slot where its progress reaches R_j,
and its completion time C_j is that slot's index. This is exactly the time grid of the
time-indexed model (MODELS.md §2.4), so the two objectives, Σ_j ω_j C_j, compare directly.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from dlsched.instance.smd import SMDInstance, require_aggregate

#: policy(instance with remaining iterations, active job indices) -> (n, 2) int allocation
Policy = Callable[[SMDInstance, np.ndarray], np.ndarray]


@dataclass
class Schedule:
    """w[k, j], p[k, j] for slots k = 0..T-1 (slot k + 1), completion slot per job (-1: none)."""

    w: np.ndarray
    p: np.ndarray
    completion: np.ndarray
    objective: float
    complete: bool
    unschedulable: list[int]
    decisions: int
    decision_seconds: list[float] = field(default_factory=list)

    def as_solution(self) -> dict:
        return {"schedule": np.stack([self.w, self.p], axis=2)}


def simulate(inst: SMDInstance, policy: Policy, max_slots: int | None = None, replan: str = "events") -> Schedule:
    """Run ``policy`` on ``inst`` until every schedulable job completes (or ``max_slots``).

    ``replan="events"``: decide in slot 1 and after every arrival or completion;
    ``"slots"``: decide in every slot.
    """
    require_aggregate(inst)
    n = inst.n_jobs
    delta = float(inst.slot_seconds)
    unsched = set(inst.unschedulable)
    todo = np.array([j not in unsched and inst.iterations[j] > 0 for j in range(n)], dtype=bool)
    remaining = inst.iterations.astype(float).copy()
    start_slot = np.ceil(inst.arrival - 1e-9).astype(np.int64)          # first usable 0-based slot
    completion = np.full(n, -1, dtype=np.int64)
    completion[~todo & (inst.iterations <= 0)] = 0
    if max_slots is None:
        # a generous cap: everything run one after the other on its slowest kept configuration
        slow = sum(math.ceil(inst.iterations[j] * float(inst.configurations(j).tau.max()) / delta)
                   for j in np.flatnonzero(todo))
        max_slots = int(start_slot.max(initial=0) + slow + 2)
    W, P = [], []
    alloc = np.zeros((n, 2), dtype=np.int64)
    every_slot = replan == "slots"
    replan = True
    decisions = 0
    seconds = []
    k = 0
    while todo.any() and k < max_slots:
        active = np.flatnonzero(todo & (start_slot <= k))
        if np.any(start_slot == k) or replan or every_slot:
            if active.size:
                t0 = time.perf_counter()
                alloc = np.asarray(policy(inst.with_remaining(np.where(todo, remaining, 0.0)), active), dtype=np.int64)
                seconds.append(time.perf_counter() - t0)
                decisions += 1
            else:
                alloc = np.zeros((n, 2), dtype=np.int64)
            replan = False
        alloc[~np.isin(np.arange(n), active)] = 0
        W.append(alloc[:, 0].copy())
        P.append(alloc[:, 1].copy())
        run = np.flatnonzero(alloc[:, 0] > 0)
        for j in run.tolist():
            remaining[j] -= delta / float(inst.tau(j, alloc[j, 0], alloc[j, 1]))
            if remaining[j] <= inst.iterations[j] * 1e-9:
                completion[j] = k + 1
                todo[j] = False
                replan = True
        k += 1
    Wa = np.array(W, dtype=np.int64).reshape(-1, n)
    Pa = np.array(P, dtype=np.int64).reshape(-1, n)
    done = completion > 0
    objective = float(np.sum(inst.weight[done] * completion[done]))
    return Schedule(Wa, Pa, completion, objective, not todo.any(), sorted(unsched), decisions, seconds)

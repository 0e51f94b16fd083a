"""A slot-by-slot simulator of the oasis cluster for the baseline policies (MODELS.md §3.3).

Allocations are held from slot to slot until the policy changes them. In slot t every running
job gets its workers and PSs, its remaining work falls by its worker count, and a job whose work
reaches zero completes in slot t (its resources are free from slot t + 1). A policy is called at
every slot and sees which jobs arrived or completed (``events``); what it does in between is its
own business. Jobs still unfinished after slot T earn nothing: they are reported as not
admitted, with their allocations removed (removal keeps every capacity constraint).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dlsched.instance.oasis import OasisInstance, OasisSchedule


def units_on(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Units of ``demand`` (R,) that fit on each server given ``free`` (S, R)."""
    need = demand > 0
    return np.maximum(np.floor(free[:, need] / demand[need] + 1e-9).min(axis=1), 0).astype(np.int64)


def first_fit(free: np.ndarray, demand: np.ndarray, count: int) -> np.ndarray | None:
    """Place ``count`` units on servers in index order (as many per server as fit); None if they do not."""
    if count <= 0:
        return np.zeros(free.shape[0], np.int64)
    u = units_on(free, demand)
    if u.sum() < count:
        return None
    return np.minimum(u, np.maximum(count - (np.cumsum(u) - u), 0))


class Policy(Protocol):
    name: str

    def decide(self, t: int, sim: "SlotSim", arrived: list[int], completed: list[int]) -> None: ...


class SlotSim:
    """State of the cluster during one simulation: free capacity, running allocations, progress."""

    def __init__(self, inst: OasisInstance):
        self.inst = inst
        self.free_w = inst.worker_cap.astype(float).copy()
        self.free_p = inst.ps_cap.astype(float).copy()
        self.alloc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.remaining = inst.work().astype(np.int64).copy()
        self.done = np.zeros(inst.n_jobs, bool)
        self.completion = np.zeros(inst.n_jobs, np.int64)
        self.reasons: dict[int, str] = {}
        self.t = 0

    # allocation changes -----------------------------------------------------------------
    def release(self, i: int) -> None:
        if i in self.alloc:
            y, z = self.alloc.pop(i)
            self.free_w += y[:, None] * self.inst.worker_demand[i]
            self.free_p += z[:, None] * self.inst.ps_demand[i]

    def assign(self, i: int, y: np.ndarray, z: np.ndarray) -> None:
        """Give job i the per-server workers y (H,) and PSs z (K,) (its old allocation released first)."""
        self.release(i)
        if y.sum() == 0:
            return
        self.free_w -= y[:, None] * self.inst.worker_demand[i]
        self.free_p -= z[:, None] * self.inst.ps_demand[i]
        assert (self.free_w > -1e-9).all() and (self.free_p > -1e-9).all(), "policy over-allocated"
        self.alloc[i] = (y.astype(np.int64), z.astype(np.int64))

    def try_bundle(self, i: int, workers: int) -> tuple[np.ndarray, np.ndarray] | None:
        """First-fit placement of ``workers`` workers and their fewest PSs in the free capacity."""
        y = first_fit(self.free_w, self.inst.worker_demand[i], workers)
        if y is None:
            return None
        z = first_fit(self.free_p, self.inst.ps_demand[i], int(self.inst.ps_needed(i, workers)))
        if z is None:
            return None
        return y, z

    def can_finish(self, i: int, t: int, workers: int | None = None) -> bool:
        """Whether job i could still finish by T from slot t at ``workers`` per slot (N_i by default)."""
        w = int(workers or self.inst.chunks[i])
        return t + -(-int(self.remaining[i]) // max(w, 1)) - 1 <= self.inst.horizon


def simulate(inst: OasisInstance, policy: Policy) -> tuple[OasisSchedule, dict]:
    """Run ``policy`` over slots 1..T; returns the schedule (finished jobs only) and statistics."""
    sim = SlotSim(inst)
    order = np.argsort(inst.arrival, kind="stable")
    by_slot: dict[int, list[int]] = {}
    for i in order:
        by_slot.setdefault(int(inst.arrival[i]), []).append(int(i))
    wrows: list[np.ndarray] = []
    prows: list[np.ndarray] = []
    completed: list[int] = []
    decisions = 0
    for t in range(1, inst.horizon + 1):
        sim.t = t
        arrived = []
        for i in by_slot.get(t, []):
            why = inst.infeasible_reason(i)
            if why is not None:
                sim.reasons[i] = why
            else:
                arrived.append(i)
        policy.decide(t, sim, arrived, completed)
        decisions += 1
        completed = []
        for i, (y, z) in list(sim.alloc.items()):
            hs = np.flatnonzero(y)
            ks = np.flatnonzero(z)
            wrows.append(np.column_stack([np.full(len(hs), i), np.full(len(hs), t), hs, y[hs]]))
            prows.append(np.column_stack([np.full(len(ks), i), np.full(len(ks), t), ks, z[ks]]))
            sim.remaining[i] -= int(y.sum())
            if sim.remaining[i] <= 0:
                sim.done[i] = True
                sim.completion[i] = t
                sim.release(i)
                completed.append(i)
    W = np.concatenate(wrows).astype(np.int64) if wrows else np.zeros((0, 4), np.int64)
    P = np.concatenate(prows).astype(np.int64) if prows else np.zeros((0, 4), np.int64)
    for i in range(inst.n_jobs):
        if not sim.done[i] and i not in sim.reasons:
            started = (W[:, 0] == i).any()
            sim.reasons[i] = "did not finish by T" if started else "never started"
    keep_w = sim.done[W[:, 0]] if len(W) else np.zeros(0, bool)
    keep_p = sim.done[P[:, 0]] if len(P) else np.zeros(0, bool)
    sched = OasisSchedule(sim.done.copy(), W[keep_w], P[keep_p], np.where(sim.done, sim.completion, 0),
                          {i: r for i, r in sim.reasons.items() if not sim.done[i]})
    wasted = int(W[~keep_w, 3].sum()) if len(W) else 0
    return sched, {"wasted_worker_slots": wasted, "decisions": decisions}

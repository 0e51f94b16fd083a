"""Baselines on SMD instances (MODELS.md §5, §7): Optimus's greedy marginal gain and DRF.

Both are run on the simulator's SMD slot grid like SMD (:func:`dlsched.sim.policies.smd.run`,
re-planning at every arrival and completion) with the instance's own performance model
τ_j(w, p) (MODELS.md §2.1), so that only the allocation rule differs.

* **Optimus** (§5): every active job starts with 1 PS + 1 worker (in arrival order, as long as
  they fit; the others wait); then, repeatedly, the task (one worker or one PS of some job)
  with the largest positive marginal gain
  ``(R_j τ_j(w, p) − R_j τ_j(w', p')) / dominant share of the added task`` is added (a heap
  with lazy re-evaluation), until no gain is positive or nothing fits. The dominant share of
  a task is max_r demand^r / C^r.
* **DRF** (§7): the simulator's one DRF (:class:`dlsched.sim.policies.baselines.DRF`): progressive
  filling, the active job with the lowest dominant share gets its next worker+PS bundle (a
  worker alone once it has P_j PSs), until no bundle fits.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from dlsched.models.smd import SMDInstance
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import register


def _fits(used, add, cap) -> bool:
    return bool(np.all(used + add <= cap + 1e-9))


def optimus_policy(inst: SMDInstance, active: np.ndarray) -> np.ndarray:
    n = inst.n_jobs
    cap = inst.capacity
    alloc = np.zeros((n, 2), dtype=np.int64)
    used = np.zeros_like(cap)
    order = sorted(active.tolist(), key=lambda j: (inst.arrival[j], j))
    for j in order:
        add = inst.d[j] + inst.e[j]
        if _fits(used, add, cap):
            alloc[j] = (1, 1)
            used += add
    safe_cap = np.where(cap > 0, cap, 1.0)

    def share(v):
        return float(np.max(v / safe_cap))

    def gains(j):
        w, p = alloc[j]
        now = inst.iterations[j] * float(inst.tau(j, w, p))
        out = []
        if w < inst.max_workers[j]:
            out.append(((now - inst.iterations[j] * float(inst.tau(j, w + 1, p))) / max(share(inst.d[j]), 1e-12), 0))
        if p < inst.max_ps[j] and not (inst.options.ps_le_workers and p + 1 > w):
            out.append(((now - inst.iterations[j] * float(inst.tau(j, w, p + 1))) / max(share(inst.e[j]), 1e-12), 1))
        return out

    heap = []
    version = np.zeros(n, dtype=np.int64)
    for j in np.flatnonzero(alloc[:, 0] > 0).tolist():
        for gain, kind in gains(j):
            if gain > 0:
                heapq.heappush(heap, (-gain, j, kind, 0))
    while heap:
        neg, j, kind, ver = heapq.heappop(heap)
        if ver != version[j]:
            continue
        add = inst.d[j] if kind == 0 else inst.e[j]
        if not _fits(used, add, cap):
            continue  # this task does not fit any more; the job's other task may still
        alloc[j, kind] += 1
        used += add
        version[j] += 1
        for gain, k2 in gains(j):
            if gain > 0:
                heapq.heappush(heap, (-gain, j, k2, int(version[j])))
    return alloc


def _run(method: str, policy, instance: SMDInstance, opts: SolveOptions):
    from dlsched.sim.policies.slotted import deadline_of
    from dlsched.sim.policies.smd import run
    from dlsched.solvers.smd import schedule_result

    t0 = time.perf_counter()
    sched = run(instance, policy, deadline=deadline_of(opts))
    return schedule_result(method, instance, sched, time.perf_counter() - t0, opts)


@register("optimus", families=("smd",), description="Optimus greedy marginal gain (MODELS.md §5), event re-planning")
def optimus(instance: SMDInstance, opts: SolveOptions):
    from dlsched.sim.policies.smd import OptimusGreedyPolicy

    return _run("optimus", OptimusGreedyPolicy(instance), instance, opts)


@register("drf", families=("smd",), description="DRF worker+PS bundles by lowest dominant share (MODELS.md §7)")
def drf(instance: SMDInstance, opts: SolveOptions):
    from dlsched.sim.policies.baselines import DRF

    return _run("drf", DRF(placer="first_fit"), instance, opts)

"""Baselines of the OASiS evaluation (MODELS.md §3.3), run in :mod:`dlsched.sim.oasis`.

* ``fifo``: jobs in arrival order, each with a fixed worker count (``workers``, default N_i,
  capped by what the empty cluster holds) and the fewest PSs that serve them; strict head-of-line
  blocking; an allocation is held until the job finishes.
* ``drf``: dominant resource fairness recomputed at every arrival and completion: progressive
  filling, one worker (plus a PS when the bandwidth rule needs one) at a time to the active job
  with the lowest dominant share, until nothing more fits.
* ``risk_reward``: our reading of a risk-reward heuristic (docs/oasis.md): at every event,
  active jobs are ranked by reward per resource, f_i(earliest completion from now) divided by
  the remaining work times the dominant share of one worker bundle; a job whose reward has
  fallen below ``risk`` times its best utility is dropped (the risk of sinking resources in a
  job whose utility is gone); the ranked jobs get N_i workers each, as far as they fit.
* ``dorm``: a Dorm-like utilisation maximiser, in :func:`dorm_policy`: at every event an integer
  program over (workers, PSs) per active job maximises the cluster's utilised share subject to
  aggregate capacities and a fairness floor, then the counts are placed first fit.

Every baseline knows job sizes but not prices; all of them skip a job that cannot finish by T
even at full speed (it could earn nothing), recording the reason.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from dlsched.models.oasis import OasisInstance, schedule_utility
from dlsched.result import Result, Status
from dlsched.sim.oasis import SlotSim, first_fit, simulate, units_on
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import register


def _result(name: str, inst: OasisInstance, sched, info: dict, seconds: float) -> Result:
    return Result(name, Status.FEASIBLE, schedule_utility(inst, sched), None, "max", "completed", None, 0.0,
                  seconds, sched, {"admitted": int(sched.admitted.sum()), "jobs": inst.n_jobs, **info},
                  message="heuristic baseline: no optimality bound")


def _max_workers_empty(inst: OasisInstance, i: int) -> int:
    """Largest worker count of job i (with its PSs) that the empty cluster holds, at most N_i."""
    wmax = int(units_on(inst.worker_cap, inst.worker_demand[i]).sum())
    pmax = int(units_on(inst.ps_cap, inst.ps_demand[i]).sum())
    w = min(int(inst.chunks[i]), wmax)
    while w > 0 and int(inst.ps_needed(i, w)) > pmax:
        w -= 1
    return w


# ----------------------------------------------------------------------------- FIFO

class FifoPolicy:
    name = "fifo"

    def __init__(self, inst: OasisInstance, workers: int | None = None):
        self.size = {i: min(_max_workers_empty(inst, i), int(workers) if workers else int(inst.chunks[i]))
                     for i in range(inst.n_jobs)}
        self.queue: list[int] = []

    def decide(self, t, sim: SlotSim, arrived, completed):
        for i in arrived:
            if self.size[i] < 1 or not sim.can_finish(i, t, self.size[i]):
                sim.reasons[i] = "cannot finish by T at its fixed worker count"
            else:
                self.queue.append(i)
        while self.queue:
            i = self.queue[0]
            if not sim.can_finish(i, t, self.size[i]):
                sim.reasons[i] = "waited until it could no longer finish by T"
                self.queue.pop(0)
                continue
            b = sim.try_bundle(i, self.size[i])
            if b is None:
                break
            sim.assign(i, *b)
            self.queue.pop(0)


@register("fifo", families=("oasis",), params=("workers",),
          description="FIFO with fixed worker/PS counts (OASiS baseline, MODELS.md §3.3)")
def solve_fifo(inst: OasisInstance, opts: SolveOptions, workers: int | None = None) -> Result:
    t0 = time.perf_counter()
    sched, info = simulate(inst, FifoPolicy(inst, workers))
    return _result("fifo", inst, sched, info, time.perf_counter() - t0)


# ----------------------------------------------------------------------------- DRF

def _dominant(inst: OasisInstance):
    """Per job, the dominant share of one worker and of one PS (over the whole cluster)."""
    total = inst.worker_cap.sum(axis=0) + inst.ps_cap.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ws = np.where(total > 0, inst.worker_demand / total, 0).max(axis=1)
        ps = np.where(total > 0, inst.ps_demand / total, 0).max(axis=1)
    return ws, ps


class DrfPolicy:
    name = "drf"

    def __init__(self, inst: OasisInstance):
        self.inst = inst
        self.active: list[int] = []
        self.ws, self.ps = _dominant(inst)
        total = inst.worker_cap.sum(axis=0) + inst.ps_cap.sum(axis=0)
        self.total = np.where(total > 0, total, 1.0)

    def admit(self, t, sim, arrived):
        for i in arrived:
            if sim.can_finish(i, t):
                self.active.append(i)
            else:
                sim.reasons[i] = "cannot finish by T even with N workers"

    def decide(self, t, sim: SlotSim, arrived, completed):
        self.admit(t, sim, arrived)
        if not arrived and not completed:
            return
        self.active = [i for i in self.active if not sim.done[i]]
        for i in self.active:
            sim.release(i)
        inst = self.inst
        H, K = inst.n_worker_servers, inst.n_ps_servers
        y = {i: np.zeros(H, np.int64) for i in self.active}
        z = {i: np.zeros(K, np.int64) for i in self.active}
        heap = [(0.0, int(inst.arrival[i]), i) for i in self.active]
        heapq.heapify(heap)
        while heap:
            share, _, i = heapq.heappop(heap)
            Y = int(y[i].sum())
            if Y >= inst.chunks[i]:
                continue
            extra_ps = int(inst.ps_needed(i, Y + 1)) - int(z[i].sum())
            yh = first_fit(sim.free_w, inst.worker_demand[i], 1)
            zk = first_fit(sim.free_p, inst.ps_demand[i], extra_ps) if extra_ps > 0 else np.zeros(K, np.int64)
            if yh is None or zk is None:
                continue                      # this job cannot grow any more: drop it from the filling
            sim.free_w -= yh[:, None] * inst.worker_demand[i]
            sim.free_p -= zk[:, None] * inst.ps_demand[i]
            y[i] += yh
            z[i] += zk
            used = (y[i].sum() * inst.worker_demand[i] + z[i].sum() * inst.ps_demand[i]) / self.total
            heapq.heappush(heap, (float(used.max()), int(inst.arrival[i]), i))
        for i in self.active:
            # give the tentatively taken capacity back, then assign it properly
            sim.free_w += y[i][:, None] * inst.worker_demand[i]
            sim.free_p += z[i][:, None] * inst.ps_demand[i]
        for i in self.active:
            sim.assign(i, y[i], z[i])


@register("drf", families=("oasis",), description="DRF recomputed at arrivals and completions (OASiS baseline)")
def solve_drf(inst: OasisInstance, opts: SolveOptions) -> Result:
    t0 = time.perf_counter()
    sched, info = simulate(inst, DrfPolicy(inst))
    return _result("drf", inst, sched, info, time.perf_counter() - t0)

r"""The SMD family on the simulator (MODELS.md §2.3, §2.4): converter, speed source, policies, runner.

* :func:`to_trace` turns an :class:`SMDInstance` into (Trace, Cluster, speed source) so the same
  jobs can be simulated by every policy. The SMD model has aggregate capacity (schedules place no
  servers), so the cluster is one pooled server holding :math:`C^r`; job j arrives at
  :math:`a_j \Delta` seconds and needs :math:`R_j` iterations at :math:`1/\tau_j(w, p)` per second
  (:class:`SMDSpeed`). Jobs with :math:`R_j = 0` or that fit nowhere are left out of the trace
  (``meta["index"]`` maps trace jobs back to the instance).
* :class:`SMDPolicy` is the SMD decision (outer selection + parametric iteration, §2.3),
  re-deciding at every call; on a generic trace it sees :math:`\tau_j(w, p)` through the
  simulator's speed source (:func:`dlsched.policies.view.instance_view`) and is placed by a shared
  placer (first fit by default). The greedy family (Optimus's greedy on the known τ and its
  variants) is in :mod:`dlsched.policies.greedy` and :mod:`dlsched.policies.fluid`.
* :func:`run` simulates a family instance on the SMD slot grid (:class:`~dlsched.policies.slotted.Slotted`)
  and returns the :class:`Schedule` that ``check_smd`` verifies: C_j is the slot the job completes in.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Annotated

import numpy as np

from dlsched.arguments import Range, checked
from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.instance.smd import SMDInstance, require_aggregate
from dlsched.sim.engine import simulate
from dlsched.sim.slots import completion_slot
from dlsched.policies.slotted import Slotted, deadline_left
from dlsched.policies.view import AllocationPolicy
from dlsched.sim.placement import PlacerName
from dlsched.sim.policy import Placement
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.smd import TIE_BREAK, decide, decide_anytime
from dlsched.policies.budget import BudgetMs, DecisionRecord, Floor, PlaceRate


# ----------------------------------------------------------------------------- converter

class SMDSpeed:
    """Iterations per second of an SMD job: :math:`1/\\tau_j(w, p)` of the instance (MODELS.md §2.1); 0 without a PS."""

    def __init__(self, inst: SMDInstance):
        self.inst = inst

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        w, p = placement.n_workers, placement.n_ps
        if w < 1 or p < 1:
            return 0.0
        return 1.0 / float(self.inst.tau(int(job.meta["index"]), w, p))


def to_trace(inst: SMDInstance) -> tuple[Trace, Cluster, SMDSpeed]:
    """(Trace, pooled one-server Cluster, speed source) of ``inst`` (module docstring)."""
    require_aggregate(inst)
    delta = float(inst.slot_seconds)
    jobs = []
    for j in inst.scheduled:
        jobs.append(Job(name=inst.job_names[j], arrival=float(inst.arrival[j]) * delta, job_type=inst.job_type[j],
                        iterations=float(inst.iterations[j]),
                        worker_demand={r: float(v) for r, v in zip(inst.resources, inst.d[j]) if v > 0},
                        ps_demand={r: float(v) for r, v in zip(inst.resources, inst.e[j]) if v > 0},
                        min_workers=int(inst.min_workers[j]), max_workers=int(inst.max_workers[j]),
                        max_ps=int(inst.max_ps[j]),
                        weight=float(inst.weight[j]), meta={"index": j, "family": "smd", "smd": inst}))
    cluster = Cluster(tuple(inst.resources), inst.capacity[None, :], ("",), np.zeros(1, np.int64), ("pool",),
                      source=f"{inst.source} (pooled capacity)")
    return Trace.sorted(jobs, source=inst.source), cluster, SMDSpeed(inst)


# ----------------------------------------------------------------------------- policies


class SMDPolicy(AllocationPolicy):
    """SMD (MODELS.md §2.3): one decision per call over the active jobs, slot-aware costs by default.

    ``budget_ms`` (default none: every decision solved to the end, as without the option) bounds
    each decision's wall time (docs/smd.md, "Decisions within a budget"): the decision starts from
    a feasible greedy choice and returns the best found when the budget ends. ``incremental``
    (default on under a budget or POP) starts each decision from the previous one's
    configurations, with a decision from scratch every ``refresh`` calls and after any decision whose
    gap exceeds ``refresh_gap``. ``pop_k`` > 1 splits the candidates into that many random groups
    (POP) once at least ``pop_min`` jobs are candidates. Every decision's gap against its own
    problem's lower bound is recorded (:class:`~dlsched.policies.budget.DecisionRecord`).
    """

    name = "smd"

    @checked(extra=decide)       # **kw: decide's keyword options
    def __init__(self, inst: SMDInstance | None = None, opts: SolveOptions | None = None, placer: PlacerName = "first_fit",
                 budget_ms: BudgetMs | None = None, pop_k: Annotated[int, Range(ge=1)] = 1,
                 pop_min: Annotated[int, Range(ge=0)] = 0, incremental: bool = True,
                 refresh: Annotated[int, Range(ge=1)] = 20, refresh_gap: Annotated[float, Range(ge=0, finite=True)] = 0.01, **kw):
        super().__init__(inst, placer)
        self.opts = opts or SolveOptions(threads=1)
        self.kw = {"slot_aware": True, "wait_slots": 1.0, "tie_break": TIE_BREAK, **kw}
        self.decision_record = DecisionRecord(budget_ms)
        self.pop_k, self.pop_min = int(pop_k), int(pop_min)
        self.incremental, self.refresh = bool(incremental), int(refresh)
        self.refresh_gap = float(refresh_gap)

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.decision_record.reset()
        self.rng = np.random.default_rng(ctx.seed)
        self.previous, self.since_scratch = None, 0
        # what a budgeted decision has learnt of its own costs, kept between decisions (docs/smd.md,
        # "Decisions within a budget"): seconds per column of each kind of subproblem, and seconds
        # per job placed at a new size (a prior of PLACE_PRIOR per server until one is measured)
        self.costs: dict = {}
        self.place = PlaceRate(len(ctx.cluster.names))
        # seconds from the answer to the end of the call when it places no job anew (the placer's pass over the
        # running jobs, the view's sizes): kept back from the solver with the placement (at 0.9 ms of a warm
        # decision over 2,000 DL2 jobs it overran a 10-ms budget that the solver's part had used to its margin)
        self.tail = 0.0
        self.answered, self.to_place, self.running_sizes = None, 0, {}
        # the floor of a decision (:class:`~dlsched.policies.budget.Floor`), and the seconds the last one spent in
        # the Lagrangian steps and the parametric iterations (which stop at the budget: not the floor)
        self.floor, self.spent = Floor(), {}
        self.last_answer = None         # "kept start, no view" when the floor did not fit (dlsched.bench.decision reads it)

    def schedule(self, state, events):
        # the budget is the whole call's: started before the view is built, it is read by the solver
        # and keeps back the placement's expected time (allocate)
        self.clock = self.decision_record.clock()
        self.answered, self.last_answer = None, None
        if self.previous is not None and self.floor.binds(self.clock, len(state.active)):
            # the view and the core alone would not fit the budget: the kept start, from the state's arrays (counted as
            # uncertified: its objective and the bound need the core)
            return self.kept_start_answer(state)
        warm = self.previous is not None
        self.running_sizes = {} if warm or self.decision_record.seconds is None else self.held_sizes(state)
        out = super().schedule(state, events)
        if self.answered is not None:
            after = time.perf_counter() - self.answered
            if warm:            # a first decision sizes every job from nothing: not a warm one's floor
                self.floor.measured(self.clock.elapsed() if self.to_place else self.answered - self.clock.start + self.tail,
                                    self.spent.get("steps", 0.0), self.clock.limit, len(state.active))
            if self.to_place:
                self.place.measured(max(after - self.tail, 0.0), self.to_place)
            else:
                self.tail = after
        return out

    def _new_sizes(self, alloc: np.ndarray) -> int:
        """How many jobs ``alloc`` (n, 2) runs at another size than the last answer: the jobs the placer fits."""
        last = self.previous if self.previous is not None else np.zeros_like(alloc)
        return int(np.count_nonzero((alloc[:, 0] > 0) & np.any(alloc != last, axis=1)))

    def allocate(self, view, active):
        if self.decision_record.seconds is None and self.pop_k == 1:
            alloc, out, _ = decide(view, active, self.opts, **self.kw)      # today's decision, to the end
            self.decision_record.record(out.objective, out.bound)
            return alloc
        opts = replace(self.opts, time_limit=self.decision_record.seconds, budget=self.clock)
        if self.previous is None and self.running_sizes:
            # a first budgeted decision on a state with running jobs (a budget set on a policy that decided without
            # one, or a library call): their sizes are the last answer's, kept where the answer cannot be placed in time
            self.previous = self.held_previous(view.n_jobs)
        fresh = (self.previous is None or not self.incremental or self.since_scratch + 1 >= self.refresh
                 or self.decision_record.last_gap(self.refresh_gap))
        pop = self.pop_k if len(active) >= self.pop_min else 1
        dec = decide_anytime(view, active, opts, previous=None if fresh else self.previous, pop_k=pop, rng=self.rng,
                             costs=self.costs, place_seconds=lambda alloc: self.tail + self.place.rate * self._new_sizes(alloc),
                             keep=self.previous, spent=self.spent, **self.kw)
        self.to_place = self._new_sizes(dec.alloc)
        self.previous, self.since_scratch = dec.alloc, 0 if fresh else self.since_scratch + 1
        self.decision_record.record(dec.objective, dec.bound)
        self.answered = time.perf_counter()
        return dec.alloc


# ----------------------------------------------------------------------------- the family runner

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
    termination: str = "completed"

    def as_solution(self) -> dict:
        return {"schedule": np.stack([self.w, self.p], axis=2)}


def slot_cap(inst: SMDInstance) -> int:
    """A generous number of slots: every job run one after the other on its slowest kept configuration."""
    slow = sum(math.ceil(inst.iterations[j] * float(inst.configurations(j).tau.max()) / inst.slot_seconds) for j in inst.scheduled)
    return int(np.ceil(inst.arrival.max(initial=0) - 1e-9) + slow + 2)


def run(inst: SMDInstance, policy, replan: str = "events", max_slots: int | None = None,
        deadline: float | None = None) -> Schedule:
    """Simulate ``policy`` on ``inst``'s slot grid (re-deciding after arrivals and completions, or every slot).

    Arrivals of jobs left out of the trace still trigger a re-decision, as any arrival does.
    ``deadline`` (seconds) runs from this call, the set-up before the engine included.
    """
    until = None if deadline is None else time.monotonic() + deadline
    n, delta = inst.n_jobs, float(inst.slot_seconds)
    unsched = sorted(inst.unschedulable)
    completion = np.full(n, -1, dtype=np.int64)
    completion[inst.iterations <= 0] = 0
    trace_jobs = inst.scheduled
    if not trace_jobs:
        z = np.zeros((0, n), np.int64)
        return Schedule(z, z, completion, 0.0, True, unsched, 0)
    trace, cluster, speed = to_trace(inst)
    kept = set(trace_jobs)
    left_out = [j for j in range(n) if j not in kept]
    wake = np.ceil(inst.arrival[left_out] - 1e-9).astype(np.int64) if left_out else []
    slotted = Slotted(policy, delta, replan=replan, wake=wake)
    cap = slot_cap(inst) if max_slots is None else int(max_slots)
    res = simulate(trace, cluster, slotted, speed, max_time=cap * delta, deadline=deadline_left(until))
    index = np.array([int(j.meta["index"]) for j in trace.jobs], dtype=np.int64)
    done_at = np.asarray(res.completion, dtype=float)
    for t, j in zip(done_at.tolist(), index.tolist()):
        if np.isfinite(t):
            completion[j] = completion_slot(t, delta)
    T = int(max(completion.max(initial=0), max(slotted.history, default=-1) + 1))
    W = np.zeros((T, n), np.int64)
    P = np.zeros((T, n), np.int64)
    held: dict[int, Placement] = {}
    for k in range(T):
        held = slotted.history.get(k, held)
        for tj, pl in held.items():
            j = int(index[tj])
            if completion[j] < 0 or k < completion[j]:
                W[k, j], P[k, j] = pl.n_workers, pl.n_ps
    ok = completion >= 0
    objective = float(np.sum(inst.weight[ok & (completion > 0)] * completion[ok & (completion > 0)]))
    complete = bool(all(completion[j] >= 0 for j in trace_jobs))
    return Schedule(W, P, completion, objective, complete, unsched, slotted.decisions, slotted.decision_seconds,
                    termination=res.status)

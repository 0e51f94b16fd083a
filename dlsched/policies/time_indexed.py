r"""Exact time-indexed schedule of an SMD instance (MODELS.md §2.4): the ``time-indexed`` method
(three front ends) and the offline reference policy that replays it.

The horizon T: the ``horizon`` parameter if given; otherwise one that provably contains an
optimal schedule. With UB the best Σ ω C of the heuristics (SMD, Optimus, DRF) and L_i the
earliest possible completion slot of job i, any schedule better than UB has
``C_j ≤ (UB − Σ_{i≠j} ω_i L_i) / ω_j``; T is the largest of these (capped by the instance's own
``horizon`` when it has one: then ``stats["horizon_provable"]`` is False). The best heuristic
schedule is passed to HiGHS as a MIP start.

The policy ``time-indexed`` (:class:`TimeIndexed`), an offline reference for small traces, is told the whole trace (``offline = True``: ``PolicyContext.future``), solves
the time-indexed MILP above once in ``reset`` (min
:math:`\sum_j \omega_j C_j` on slots of Δ, with resizing), and then plays the optimal schedule
slot by slot: at every slot boundary the jobs run the (w, p) the MILP chose for that slot. On a
trace made by :func:`dlsched.policies.smd.to_trace` it solves the family instance itself;
on any other trace the SMD view of :func:`~dlsched.policies.view.instance_view` (aggregate
capacity, τ from the speed source, slots of ``slot_seconds``). Its total weighted completion
time (in slots) is a lower bound for every policy on the same slot grid (bound <= optimum <=
heuristic); the MILP grows with jobs x configurations x slots, so keep traces small.
"""

from __future__ import annotations

import math
import time

from typing import Annotated

import numpy as np

from dlsched.arguments import MIN_SLOT_SECONDS, Range, checked, flag
from dlsched.errors import InputError
from dlsched.instance.smd import SCHEDULE_OBJECTIVE, SMDInstance, require_aggregate
from dlsched.models import smd_time_indexed as ti
from dlsched.result import Result, Status, make_result
from dlsched.policies.drf import DRF
from dlsched.policies.slotted import deadline_of
from dlsched.policies.greedy import OptimusGreedyPolicy
from dlsched.policies.smd import SMDPolicy, run
from dlsched.policies.view import instance_view
from dlsched.solvers import highs
from dlsched.solvers.backends import BACKENDS, solve_front_end
from dlsched.solvers.milp import column_front_ends
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import register
from dlsched.sim.placement import PlacerName, make_placer
from dlsched.sim.policy import ClusterState, Decision, Placement, PolicyContext


#: the largest time-indexed model built (nonzeros; its build's peak memory grows about 100 bytes per
#: nonzero: a 500-job instance at T in the hundreds went past 20 GB and was killed)
MAX_NONZEROS = 20_000_000
#: build speed of :func:`~dlsched.models.smd_time_indexed.build_matrix` (measured 2.4M nonzeros/s on
#: the shared 2-core machine; taken lower): with a limit, a build predicted past it is not started
BUILD_NONZEROS_PER_SECOND = 1_500_000


def earliest_completion(inst: SMDInstance, j: int) -> int:
    c = inst.configurations(j)
    slots = math.ceil(inst.iterations[j] * float(c.tau.min()) / inst.slot_seconds - 1e-9)
    return int(math.ceil(float(inst.arrival[j]) - 1e-9)) + max(1, slots)


def heuristic_schedules(inst: SMDInstance, opts: SolveOptions) -> dict:
    out = {}
    for name, pol in (("smd", SMDPolicy(inst, opts)), ("optimus", OptimusGreedyPolicy(inst)), ("drf", DRF(placer="first_fit"))):
        s = run(inst, pol, deadline=deadline_of(opts))
        if s.complete:
            out[name] = s
    return out


def provable_horizon(inst: SMDInstance, ub: float) -> int:
    jobs = inst.scheduled
    L = {j: earliest_completion(inst, j) for j in jobs}
    total = sum(inst.weight[j] * L[j] for j in jobs)
    return max([int(math.floor((ub - (total - inst.weight[j] * L[j])) / inst.weight[j] + 1e-9)) for j in jobs] + [1])


def warm_vector(model: ti.TIModel, inst: SMDInstance, sched) -> np.ndarray | None:
    """The heuristic schedule as a column vector of the model (None if it does not fit in T)."""
    if sched.w.shape[0] > model.T:
        return None
    x = np.zeros(model.mf.n_cols)
    X = model.x_index
    jobs = model.jobs
    for jj, j in enumerate(jobs.tolist()):
        c = sched.completion[j]
        if c < 1 or c > model.T:
            return None
        x[model.z_start + jj * model.T + c - 1] = 1.0
    key = {(int(jj), int(w), int(p), int(t)): int(col) for col, jj, w, p, t in X.tolist()}
    for k in range(sched.w.shape[0]):
        for jj, j in enumerate(jobs.tolist()):
            w, p = int(sched.w[k, j]), int(sched.p[k, j])
            if w > 0:
                col = key.get((jj, w, p, k + 1))
                if col is None:
                    return None     # a configuration the Pareto set dropped: skip the warm start
                x[col] = 1.0
    return x


@register("time-indexed", families=("smd",), params=("backend", "resizing", "horizon"), supports=("gap", "raw"),
          backends=BACKENDS,
          description="exact time-indexed MILP (MODELS.md §2.4): min Σ ω_j C_j, with or without resizing")
def time_indexed(instance: SMDInstance, opts: SolveOptions, backend: str = "highs", resizing: bool = True,
                 horizon: int | None = None) -> Result:
    """The §2.4 MILP; the heuristic schedules that bound the horizon and warm-start HiGHS run inside
    the call's budget, and HiGHS gets what remains."""
    resizing = flag(resizing, "resizing")
    require_aggregate(instance)
    opts = opts.started()
    t0 = time.perf_counter()
    heur = heuristic_schedules(instance, opts)
    best = min(heur.values(), key=lambda s: s.objective) if heur else None
    provable = True
    if horizon is None:
        if best is None and opts.budget.expired():
            # the call's time ran out inside the heuristics: a stop, not a fault of the input
            return make_result("time-indexed", opts, sense="min", termination="time_limit", backend=backend, objective_of=SCHEDULE_OBJECTIVE,
                               build_seconds=time.perf_counter() - t0, solver_version=highs.version(),
                               message="the time limit ran out before a heuristic schedule bounded the horizon "
                                       "(give more time, or a horizon)")
        if best is None:
            raise InputError("<argument>", "horizon", "a horizon (no heuristic finished to bound it)", None)
        T = provable_horizon(instance, best.objective)
        if instance.horizon is not None and instance.horizon < T:
            T, provable = int(instance.horizon), False
    else:
        T = int(horizon)
        provable = best is not None and T >= provable_horizon(instance, best.objective)
    # A horizon the user imposed below the provable one restricts the problem: its optimum is
    # only an upper bound (min sense) and its infeasibility says nothing about the instance.
    restricted = horizon is not None and not provable
    nnz = ti.nonzeros(instance, T, resizing=resizing)
    too_big = nnz > MAX_NONZEROS
    if too_big or (opts.clock.limited and nnz / BUILD_NONZEROS_PER_SECOND > opts.clock.remaining()):
        # the build cannot be interrupted: refused up front, by size or by the time left
        why = (f"the time-indexed model would have {nnz:,} nonzeros (at most {MAX_NONZEROS:,}: jobs x T^2 with "
               f"T = {T} slots)" if too_big else
               f"building the time-indexed model ({nnz:,} nonzeros, about {nnz / BUILD_NONZEROS_PER_SECOND:.1f} s) "
               f"would overrun the time left ({opts.clock.remaining():.1f} s)")
        if best is None:
            raise InputError("<argument>", "instance", f"an SMD instance whose time-indexed model can be built ({why}); "
                             "use smd, optimus or drf for larger ones", f"{instance.n_jobs} jobs")
        return make_result("time-indexed", opts, sense="min", termination="memory_limit" if too_big else "time_limit",
                           solution=best.as_solution(), objective=best.objective, backend=backend,
                           objective_of=SCHEDULE_OBJECTIVE, build_seconds=time.perf_counter() - t0,
                           stats={"horizon": T, "nonzeros": nnz, "returned": "heuristic schedule"},
                           solver_version=highs.version(), message=why + ": returned the best heuristic schedule")
    model = ti.build_matrix(instance, T, resizing=resizing)
    build = time.perf_counter() - t0
    stats = {"horizon": T, "horizon_provable": provable, "rows": int(model.mf.n_rows), "cols": int(model.mf.n_cols),
             "heuristic_ub": None if best is None else best.objective}
    warm = warm_vector(model, instance, best) if (best is not None and resizing and backend == "highs") else None
    fe = column_front_ends(model.mf.n_cols, model.mf.c, "min", lambda: model.mf, lambda: ti.build_pyomo(model),
                           lambda: ti.build_cvxpy(model), lambda x: {"schedule": ti.schedule_from_x(instance, model, x)}, warm)
    out, solution, front_build = solve_front_end(fe, backend, opts)
    build += front_build
    termination, bound = out.termination, out.bound
    if restricted:
        # optimal or infeasible only among schedules ending by T: neither is a proof for the instance
        termination = {"optimal": "time_horizon", "infeasible": "time_horizon"}.get(termination, termination)
        bound = None
    messages = []
    if model.unschedulable:
        messages.append("cannot be scheduled (does not fit alone): " + ", ".join(instance.job_names[j] for j in model.unschedulable))
    if out.status == Status.INFEASIBLE:
        messages.append(f"no schedule completes every job within {T} slots")
    if restricted:
        messages.append(f"horizon {T} is below the provable one: optimal only among schedules ending by slot {T}")
    objective = out.objective if solution is not None else None
    if solution is None and best is not None and termination == "time_limit":
        # HiGHS found nothing in the time left: the best heuristic schedule is the best found
        solution, objective, stats["returned"] = best.as_solution(), best.objective, "heuristic schedule"
    return make_result("time-indexed", opts, sense="min", termination=termination, solution=solution, objective_of=SCHEDULE_OBJECTIVE,
                       objective=objective, bound=bound, backend=backend,
                       build_seconds=build, solve_seconds=out.seconds, stats={**stats, **out.stats},
                       solver_version=highs.version(), message="; ".join(messages))


class TimeIndexed:
    """Exact time-indexed optimum (MODELS.md §2.4), offline: solved once on the whole trace, then replayed slot by slot."""

    name = "time-indexed"
    offline = True

    @checked
    def __init__(self, slot_seconds: Annotated[float, Range(ge=MIN_SLOT_SECONDS, finite=True)] = 1200.0,
                 time_limit: Annotated[float, Range(gt=0)] | None = None, placer: PlacerName = "first_fit"):
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
        # every horizon holds the last earliest completion, and the model grows with T: a trace too
        # large even at that horizon is refused before the heuristics that bound T (minutes on ITP)
        floor = max((earliest_completion(inst, j) for j in inst.scheduled), default=1)
        nnz = ti.nonzeros(inst, floor)
        if nnz > MAX_NONZEROS:
            self._too_big(ctx, f"the time-indexed model would have at least {nnz:,} nonzeros (at most "
                               f"{MAX_NONZEROS:,}: jobs x T^2 with T >= {floor} slots, the last earliest completion)")
        self.result = time_indexed(inst, SolveOptions(time_limit=self.time_limit, threads=1))
        if self.result.termination == "memory_limit":      # a heuristic's schedule is no reference
            self._too_big(ctx, self.result.message)
        if not self.result.status.has_solution():
            raise InputError(ctx.future.source, "trace", "a trace whose time-indexed MILP finds a schedule",
                             f"{self.result.status.value}: {self.result.message}")
        self.plan = np.asarray(self.result.solution["schedule"])            # (T, n, 2)
        # each job's last planned slot (-1: none): the MILP's progress row holds within HiGHS's feasibility
        # tolerance, so a job may end its plan a hair short of its iterations (1e-7 of 1.0000001)
        planned = self.plan[:, :, 0] > 0
        self.last = np.where(planned.any(axis=0), planned.shape[0] - 1 - np.argmax(planned[::-1], axis=0), -1)

    @staticmethod
    def _too_big(ctx: PolicyContext, why: str):
        raise InputError(ctx.future.source, "slot_seconds", "a trace and slot whose time-indexed MILP can be built "
                         "(fewer jobs or coarser slots)", why)

    def schedule(self, state: ClusterState, events) -> Decision:
        k = int(np.floor(state.time / self.slot_seconds + 1e-9))
        row = self.plan[k] if k < self.plan.shape[0] else np.zeros((self.plan.shape[1], 2), np.int64)
        jobs = state.jobs
        sizes = {}
        for j, v in zip(state.active.tolist(), self.index[state.active].tolist()):
            # past its plan with work left: the rest at its last planned size
            w, p = self.plan[self.last[v], v] if 0 <= self.last[v] < k else row[v]
            if w > 0:
                sizes[j] = (int(w), int(p) if jobs[j].uses_ps else 0)
        placed: dict[int, Placement] = self.placer.place(state, sizes)
        return Decision(placed, next_call=(k + 1) * self.slot_seconds)

"""The family methods that run a policy on the engine (``dlsched solve --method ...``), through one
adapter, :func:`run_policy` (the family instance's own trace, cluster and speeds: ``to_trace``).

SMD (MODELS.md §2.3, §2.4, §5, §7), on the SMD slot grid (:func:`dlsched.policies.smd.run`)
with the instance's own τ_j(w, p) (§2.1), so that only the allocation rule differs:

* ``smd``: the SMD decomposition re-planned at every arrival and completion
  (:class:`dlsched.policies.smd.SMDPolicy`; ``mode="epoch"``: one §2.2 decision with its
  certified bound);
* ``optimus``: Optimus's greedy marginal gain on the known τ (:class:`dlsched.policies.greedy.OptimusGreedyPolicy`,
  the policy ``optimus-greedy``; Optimus with fitting is the policy ``optimus``);
* ``drf``: the simulator's one DRF (:class:`dlsched.policies.drf.DRF`): progressive filling, the
  active job with the lowest dominant share gets its next worker+PS bundle (a worker alone once
  it has P_j PSs), until no bundle fits.

OASiS (MODELS.md §3.2, §3.3), over slots 1..T (:func:`dlsched.policies.oasis.run`): ``oasis``
(:class:`dlsched.policies.oasis.OasisPolicy`) and the baselines ``fifo``, ``drf``,
``risk_reward``, ``dorm`` (:mod:`dlsched.policies.oasis_baselines`); a run cut short keeps the
jobs finished so far (a feasible schedule, termination ``time_limit``).

The call's time limit is the simulation's wall-clock deadline.
"""

from __future__ import annotations

import time

import numpy as np

from dlsched.errors import InputError
from dlsched.registry import FAMILIES, load_target
from dlsched.instance.oasis import OasisInstance, schedule_utility
from dlsched.instance.smd import SCHEDULE_OBJECTIVE, SMDInstance
from dlsched.result import Result, Status, make_result
from dlsched.policies.drf import DRF
from dlsched.policies.oasis import OasisPolicy, SlotDecide
from dlsched.policies.oasis_baselines import DormPolicy, DrfPolicy, FifoPolicy, RiskRewardPolicy
from dlsched.policies.slotted import deadline_of
from dlsched.policies.greedy import OptimusGreedyPolicy
from dlsched.policies.smd import SMDPolicy
from dlsched.solvers import highs
from dlsched.solvers.options import SolveOptions
from dlsched.arguments import flag
from dlsched.solvers.registry import register
from dlsched.solvers.oasis import price_params
from dlsched.solvers.smd import SELECT, SUBPROBLEMS, TIE_BREAK, decide


def run_policy(instance, policy, *, deadline: float | None = None, **options):
    """Run ``policy`` on the engine over ``instance``'s own trace, cluster and speeds (the family's
    ``to_trace``) and return the family's schedule (SMD: :class:`dlsched.policies.smd.Schedule`;
    OASiS: ``(OasisSchedule, info)``); ``deadline``: wall-clock seconds of the whole run."""
    runner = FAMILIES[instance.family].runner
    if runner is None:
        raise InputError("<argument>", "instance", f"an instance of a family with a policy runner "
                         f"({', '.join(n for n, f in FAMILIES.items() if f.runner)})", instance.family)
    return load_target(runner, f"the {instance.family} runner")(instance, policy, deadline=deadline, **options)

def schedule_result(method: str, inst: SMDInstance, sched, seconds: float, opts: SolveOptions, **stats) -> Result:
    """A :class:`Result` holding a simulated schedule (objective Σ ω_j C_j, slots), through the one
    factory (docs/contract.md): an incomplete schedule is no solution (termination ``time_limit``
    or ``slot_cap``), its partial Σ ω_j C_j kept in ``stats["partial_objective"]``."""
    msgs = []
    if sched.unschedulable:
        msgs.append("cannot be scheduled (does not fit alone): " + ", ".join(inst.job_names[j] for j in sched.unschedulable))
    ds = np.array(sched.decision_seconds) if sched.decision_seconds else np.zeros(1)
    stats = {"decisions": sched.decisions, "decision_seconds_p50": float(np.median(ds)),
             "decision_seconds_max": float(ds.max()), "slots": int(sched.w.shape[0]),
             "unschedulable": len(sched.unschedulable), **stats}
    common = dict(sense="min", backend="highs", stats=stats, solve_seconds=seconds, solver_version=highs.version(),
                  objective_of=SCHEDULE_OBJECTIVE)
    if sched.complete:
        return make_result(method, opts, termination="completed", solution=sched.as_solution(), objective=sched.objective,
                           message="; ".join(msgs), **common)
    termination = "time_limit" if sched.termination == "time_limit" else "slot_cap"
    msgs.append("the time limit ended the simulation before every job completed" if termination == "time_limit"
                else "not every job completed within the slot cap")
    stats["partial_objective"] = sched.objective
    return make_result(method, opts, termination=termination, message="; ".join(msgs), **common)


@register("smd", families=("smd",), params=("mode", "select", "slack", "memory", "slot_aware", "wait_slots", "replan", "sub"),
          supports=("raw",),
          description="SMD: parametric sum-of-ratios decomposition, re-planned at every arrival and completion")
def smd(instance: SMDInstance, opts: SolveOptions, mode: str = "schedule", select: str = "score",
        slack: float = 1.0, memory: bool = True, slot_aware: bool | None = None, wait_slots: float | None = None,
        replan: str = "events", sub: str = "highs") -> Result:
    """``mode="schedule"`` (default): the full schedule, re-planned at every arrival and
    completion (``replan="slots"``: every slot); the decision costs are slot-aware with a
    one-slot wait estimate unless told otherwise. ``mode="epoch"``: one decision (MODELS.md
    §2.2, the instance's own costs) for every job with R_j > 0, with its certified bound."""

    if mode not in ("schedule", "epoch"):
        raise InputError("<argument>", "mode", "'schedule' or 'epoch'", mode)
    if select not in SELECT:
        raise InputError("<argument>", "select", f"one of {SELECT}", select)
    if sub not in SUBPROBLEMS:
        raise InputError("<argument>", "sub", f"one of {SUBPROBLEMS}", sub)
    if replan not in ("events", "slots"):
        raise InputError("<argument>", "replan", "'events' or 'slots'", replan)
    if wait_slots is not None and not float(wait_slots) > 0:
        raise InputError("<argument>", "wait_slots", "a wait estimate > 0 slots", wait_slots)
    memory = flag(memory, "memory")
    t0 = time.perf_counter()
    if mode == "epoch":
        active = np.flatnonzero(instance.iterations > 0)
        kw = dict(slot_aware=flag(slot_aware, "slot_aware") if slot_aware is not None else False,
                  wait_slots=None if wait_slots is None else float(wait_slots), sub=sub)
        alloc, out, core = decide(instance, active, opts, select=select, slack=float(slack), memory=memory, **kw)
        # the bound certifies §2.2 only when every job was a candidate and the costs are the instance's
        exact_scope = core.n_jobs == active.size and not kw["slot_aware"] and kw["wait_slots"] is None
        extra = {} if out.delta is None or sub == "highs" else {"rounding_delta": out.delta}
        if out.optimal and exact_scope:
            termination = "optimal"
        elif opts.clock.expired():
            termination = "time_limit"
        else:       # optimal for the candidates' (or the adapted) costs only, or a fixed point
            termination = "fixed_point"
        return make_result("smd", opts, sense="min", termination=termination, solution={"allocation": alloc},
                           objective=instance.epoch_objective(alloc), bound=out.bound if exact_scope else None,
                           backend="highs", solve_seconds=time.perf_counter() - t0,
                           stats={"iterations": out.iterations, "candidates": int(core.n_jobs), **extra},
                           solver_version=highs.version())
    kw = dict(slot_aware=True if slot_aware is None else flag(slot_aware, "slot_aware"),
              wait_slots=1.0 if wait_slots is None else float(wait_slots), tie_break=TIE_BREAK, sub=sub)
    policy = SMDPolicy(instance, opts, select=select, slack=float(slack), memory=memory, **kw)
    sched = run_policy(instance, policy, replan=replan, deadline=deadline_of(opts))
    return schedule_result("smd", instance, sched, time.perf_counter() - t0, opts)


def _run(method: str, policy, instance: SMDInstance, opts: SolveOptions):
    t0 = time.perf_counter()
    sched = run_policy(instance, policy, deadline=deadline_of(opts))
    return schedule_result(method, instance, sched, time.perf_counter() - t0, opts)


@register("optimus", families=("smd",), description="Optimus greedy marginal gain (MODELS.md §5), event re-planning")
def optimus(instance: SMDInstance, opts: SolveOptions):
    return _run("optimus", OptimusGreedyPolicy(instance), instance, opts)


@register("drf", families=("smd",), description="DRF worker+PS bundles by lowest dominant share (MODELS.md §7)")
def drf(instance: SMDInstance, opts: SolveOptions):
    return _run("drf", DRF(placer="first_fit"), instance, opts)


@register("oasis", families=("oasis",), params=("u_scale", "l_scale", "l_min_share"),
          description="OASiS online primal-dual admission and scheduling (MODELS.md §3.2)")
def solve_oasis(inst: OasisInstance, opts: SolveOptions, u_scale: float = 1.0, l_scale: float = 1.0,
                l_min_share: float = 0.0) -> Result:
    """OASiS on the whole arrival sequence; ``u_scale``/``l_scale`` model estimated U and L;
    ``l_min_share`` selects the jobs L is computed from (:func:`price_params`)."""
    t0 = time.perf_counter()
    policy = OasisPolicy(float(u_scale), float(l_scale), float(l_min_share))
    sched, info = run_policy(inst, policy, deadline=deadline_of(opts))
    secs = time.perf_counter() - t0
    dec = policy.decision if policy.state is not None else np.zeros(0)
    p = policy.state.params if policy.state is not None else price_params(inst, u_scale, l_scale, l_min_share)
    return Result("oasis", Status.FEASIBLE, schedule_utility(inst, sched), None, "max", info["termination"],
                  None, 0.0, secs, sched,
                  {"admitted": int(sched.admitted.sum()), "jobs": inst.n_jobs, "alpha": p.alpha,
                   "decision_seconds_p50": float(np.median(dec)) if len(dec) else 0.0,
                   "decision_seconds_p99": float(np.percentile(dec, 99)) if len(dec) else 0.0,
                   "decision_seconds_max": float(dec.max()) if len(dec) else 0.0,
                   "L1": p.L1, "L2": p.L2, "U1_max": float(p.U1.max()), "U2_max": float(p.U2.max())},
                  message="online heuristic with a 2*alpha competitive guarantee; no optimality bound")


def _result(name: str, inst: OasisInstance, sched, info: dict, seconds: float) -> Result:
    return Result(name, Status.FEASIBLE, schedule_utility(inst, sched), None, "max", info["termination"], None, 0.0,
                  seconds, sched, {"admitted": int(sched.admitted.sum()), "jobs": inst.n_jobs, **info},
                  message="heuristic baseline: no optimality bound")


@register("fifo", families=("oasis",), params=("workers",),
          description="FIFO with fixed worker/PS counts (OASiS baseline, MODELS.md §3.3)")
def solve_fifo(inst: OasisInstance, opts: SolveOptions, workers: int | None = None) -> Result:
    t0 = time.perf_counter()
    sched, info = run_policy(inst, FifoPolicy(workers), deadline=deadline_of(opts))
    return _result("fifo", inst, sched, info, time.perf_counter() - t0)


@register("drf", families=("oasis",), description="DRF recomputed at arrivals and completions (OASiS baseline)")
def solve_drf(inst: OasisInstance, opts: SolveOptions) -> Result:
    t0 = time.perf_counter()
    sched, info = run_policy(inst, DrfPolicy(), deadline=deadline_of(opts))
    return _result("drf", inst, sched, info, time.perf_counter() - t0)


@register("risk_reward", families=("oasis",), params=("risk", "preempt"),
          description="risk-reward heuristic: reward per resource, drop jobs whose utility is gone (OASiS baseline)")
def solve_risk_reward(inst: OasisInstance, opts: SolveOptions, risk: float = 0.05, preempt: bool = False) -> Result:
    t0 = time.perf_counter()
    preempt = flag(preempt, "preempt")
    sched, info = run_policy(inst, SlotDecide(lambda i: RiskRewardPolicy(i, float(risk), preempt), "risk_reward"),
                      deadline=deadline_of(opts))
    return _result("risk_reward", inst, sched, {**info, "preempt": preempt}, time.perf_counter() - t0)


@register("dorm", families=("oasis",), params=("lam",),
          description="Dorm-like utilisation-maximising MILP with a fairness term, re-solved at events (OASiS baseline)")
def solve_dorm(inst: OasisInstance, opts: SolveOptions, lam: float = 1.0) -> Result:
    t0 = time.perf_counter()
    made = []
    slot = SlotDecide(lambda i: made.append(DormPolicy(i, float(lam))) or made[-1], "dorm")
    sched, info = run_policy(inst, slot, deadline=deadline_of(opts))
    return _result("dorm", inst, sched, {**info, "milp_solves": sum(p.solves for p in made)}, time.perf_counter() - t0)

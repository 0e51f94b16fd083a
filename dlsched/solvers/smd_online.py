"""The SMD family's methods that simulate a schedule on the engine (MODELS.md §2.3, §2.4, §5, §7).

* ``smd``: the SMD decomposition re-planned at every arrival and completion
  (:class:`dlsched.sim.policies.smd.SMDPolicy` on the slot grid; ``mode="epoch"``: one §2.2
  decision with its certified bound);
* ``optimus``: Optimus's greedy marginal gain (:func:`dlsched.sim.policies.smd.optimus_policy`);
* ``drf``: the simulator's one DRF (:class:`dlsched.sim.policies.baselines.DRF`): progressive
  filling, the active job with the lowest dominant share gets its next worker+PS bundle (a
  worker alone once it has P_j PSs), until no bundle fits.

All three run on the SMD slot grid (:func:`dlsched.sim.policies.smd.run`) with the instance's own
τ_j(w, p) (MODELS.md §2.1), so that only the allocation rule differs; the call's time limit is the
simulation's wall-clock deadline.
"""

from __future__ import annotations

import time

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.smd import SMDInstance
from dlsched.result import Result, Status
from dlsched.sim.policies.baselines import DRF
from dlsched.sim.policies.slotted import deadline_of
from dlsched.sim.policies.smd import OptimusGreedyPolicy, SMDPolicy, run
from dlsched.solvers import highs
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import flag, register
from dlsched.solvers.smd import SELECT, SUBPROBLEMS, TIE_BREAK, decide


def schedule_result(method: str, inst: SMDInstance, sched, seconds: float, opts: SolveOptions, **stats) -> Result:
    """A :class:`Result` holding a simulated schedule (objective Σ ω_j C_j, slots)."""
    ok = sched.complete
    status = Status.FEASIBLE if ok else Status.NO_SOLUTION
    msg = ""
    if sched.unschedulable:
        msg = "cannot be scheduled (does not fit alone): " + ", ".join(inst.job_names[j] for j in sched.unschedulable)
    termination = "completed" if ok else "time_limit" if sched.termination == "time_limit" else "slot_cap"
    if not ok:
        msg = (msg + "; " if msg else "") + ("the time limit ended the simulation before every job completed"
                                             if termination == "time_limit" else "not every job completed within the slot cap")
    ds = np.array(sched.decision_seconds) if sched.decision_seconds else np.zeros(1)
    res = Result(method, status, sched.objective, None, "min", termination, "highs", 0.0, seconds,
                 sched.as_solution(), {"decisions": sched.decisions, "decision_seconds_p50": float(np.median(ds)),
                                       "decision_seconds_max": float(ds.max()), "slots": int(sched.w.shape[0]),
                                       "unschedulable": len(sched.unschedulable), **stats},
                 highs.version(), opts.as_dict(), msg)
    return res


@register("smd", families=("smd",), params=("mode", "select", "slack", "memory", "slot_aware", "wait_slots", "replan", "sub"),
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
        status = Status.OPTIMAL if out.optimal and exact_scope else Status.FEASIBLE
        extra = {} if out.delta is None or sub == "highs" else {"rounding_delta": out.delta}
        obj = instance.epoch_objective(alloc)
        return Result("smd", status, obj, out.bound if exact_scope else None, "min",
                      "optimal" if out.optimal else "fixed_point", "highs", 0.0, time.perf_counter() - t0,
                      {"allocation": alloc}, {"iterations": out.iterations, "candidates": int(core.n_jobs), **extra},
                      highs.version(), opts.as_dict())
    kw = dict(slot_aware=True if slot_aware is None else flag(slot_aware, "slot_aware"),
              wait_slots=1.0 if wait_slots is None else float(wait_slots), tie_break=TIE_BREAK, sub=sub)
    policy = SMDPolicy(instance, opts, select=select, slack=float(slack), memory=memory, **kw)
    sched = run(instance, policy, replan=replan, deadline=deadline_of(opts))
    return schedule_result("smd", instance, sched, time.perf_counter() - t0, opts)


def _run(method: str, policy, instance: SMDInstance, opts: SolveOptions):
    t0 = time.perf_counter()
    sched = run(instance, policy, deadline=deadline_of(opts))
    return schedule_result(method, instance, sched, time.perf_counter() - t0, opts)


@register("optimus", families=("smd",), description="Optimus greedy marginal gain (MODELS.md §5), event re-planning")
def optimus(instance: SMDInstance, opts: SolveOptions):
    return _run("optimus", OptimusGreedyPolicy(instance), instance, opts)


@register("drf", families=("smd",), description="DRF worker+PS bundles by lowest dominant share (MODELS.md §7)")
def drf(instance: SMDInstance, opts: SolveOptions):
    return _run("drf", DRF(placer="first_fit"), instance, opts)

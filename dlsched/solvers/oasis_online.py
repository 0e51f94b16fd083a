"""The OASiS family's online methods, simulated on the engine over slots 1..T (MODELS.md §3.2, §3.3).

``oasis`` (:class:`dlsched.sim.policies.oasis.OasisPolicy`) and the baselines ``fifo``, ``drf``,
``risk_reward``, ``dorm`` (:mod:`dlsched.sim.policies.oasis_baselines`), each run by
:func:`dlsched.sim.policies.oasis.run`; the call's time limit is the simulation's wall-clock
deadline (a run cut short keeps the jobs finished so far: a feasible schedule, termination
``time_limit``).
"""

from __future__ import annotations

import time

import numpy as np

from dlsched.instance.oasis import OasisInstance, schedule_utility
from dlsched.result import Result, Status
from dlsched.sim.policies.oasis import OasisPolicy, SlotDecide, run
from dlsched.sim.policies.oasis_baselines import DormPolicy, DrfPolicy, FifoPolicy, RiskRewardPolicy
from dlsched.sim.policies.slotted import deadline_of
from dlsched.solvers.oasis import price_params
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import flag, register


@register("oasis", families=("oasis",), params=("u_scale", "l_scale", "l_min_share"),
          description="OASiS online primal-dual admission and scheduling (MODELS.md §3.2)")
def solve_oasis(inst: OasisInstance, opts: SolveOptions, u_scale: float = 1.0, l_scale: float = 1.0,
                l_min_share: float = 0.0) -> Result:
    """OASiS on the whole arrival sequence; ``u_scale``/``l_scale`` model estimated U and L;
    ``l_min_share`` selects the jobs L is computed from (:func:`price_params`)."""
    t0 = time.perf_counter()
    policy = OasisPolicy(float(u_scale), float(l_scale), float(l_min_share))
    sched, info = run(inst, policy, deadline=deadline_of(opts))
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
    sched, info = run(inst, SlotDecide(lambda i: FifoPolicy(i, workers), "fifo"), deadline=deadline_of(opts))
    return _result("fifo", inst, sched, info, time.perf_counter() - t0)


@register("drf", families=("oasis",), description="DRF recomputed at arrivals and completions (OASiS baseline)")
def solve_drf(inst: OasisInstance, opts: SolveOptions) -> Result:
    t0 = time.perf_counter()
    sched, info = run(inst, DrfPolicy(), deadline=deadline_of(opts))
    return _result("drf", inst, sched, info, time.perf_counter() - t0)


@register("risk_reward", families=("oasis",), params=("risk", "preempt"),
          description="risk-reward heuristic: reward per resource, drop jobs whose utility is gone (OASiS baseline)")
def solve_risk_reward(inst: OasisInstance, opts: SolveOptions, risk: float = 0.05, preempt: bool = False) -> Result:
    t0 = time.perf_counter()
    preempt = flag(preempt, "preempt")
    sched, info = run(inst, SlotDecide(lambda i: RiskRewardPolicy(i, float(risk), preempt), "risk_reward"),
                      deadline=deadline_of(opts))
    return _result("risk_reward", inst, sched, {**info, "preempt": preempt}, time.perf_counter() - t0)


@register("dorm", families=("oasis",), params=("lam",),
          description="Dorm-like utilisation-maximising MILP with a fairness term, re-solved at events (OASiS baseline)")
def solve_dorm(inst: OasisInstance, opts: SolveOptions, lam: float = 1.0) -> Result:
    t0 = time.perf_counter()
    made = []
    slot = SlotDecide(lambda i: made.append(DormPolicy(i, float(lam))) or made[-1], "dorm")
    sched, info = run(inst, slot, deadline=deadline_of(opts))
    return _result("dorm", inst, sched, {**info, "milp_solves": sum(p.solves for p in made)}, time.perf_counter() - t0)

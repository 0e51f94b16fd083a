"""Decision quality at scale (issue 27; suite ``decision-scale``): one decision of an optimisation
policy over n active jobs on 6,500 GPUs, within a budget, against the same policy with no budget.

The decision is taken through the policy's own ``schedule`` on the engine's state (so the time of
building the policy's view and placing its answer counts, as in a run): n - 1 jobs arrive at 0,
the last at 1 s, and the decision measured is the one at 1 s, after the one at 0 (taken as the reference
takes it, so every row decides on the reference's state), with the
policy's caches of speeds and configurations built (as they are in a run: the reference policy
builds them once per state and every other policy object of the cell starts with them, :data:`CACHES`). ``incremental``
(SMD) starts it from the decision at 0, consecutive decisions differing by one arrival;
``scratch`` solves it from nothing.
Each row has the objective of the policy's own model (:attr:`DecisionRecord.objectives`), its
certified gap (``uncertified``: the decision answered with none, :class:`DecisionRecord`), the latency, the ratio to the unbudgeted decision on the same state, the kind of answer
where the policy tells it (``answer``: hetplace's ``last_answer``, ``full``, ``step`` or ``kept``); and the
allocation it leaves scored alike for every decision (:func:`held`), with its ratio to the reference's.

Mixes (``mix``): ``dl2``: DL2's job mix (PS jobs, CPU and GPU demands, DL2's speed table) on
DL2's 2-GPU nodes; ``gavel``: the jobs of Gavel's trace ``msr_seed0_0e4a51`` (1,181 jobs,
inflated by :func:`dlsched.sim.load.inflate` when more are asked for) on a Gavel cluster of as
many V100, P100 and K80 servers of 4 GPUs, Gavel's measured throughputs.
"""

from __future__ import annotations

import time
from dataclasses import replace

from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance.cluster_spec import gavel_cluster
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.instance.traces import load_trace
from dlsched.instance.workload import Trace
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.load import inflate
from dlsched.sim.policy import PolicyContext
from dlsched.sim.speed import make_speed

MIXES = ("dl2", "gavel")
GPUS = 6500
#: what a policy keeps across calls that depends on the jobs only (views, speeds, configurations)
CACHES = ("view", "index", "_limits", "_rho_tab", "_rho_known")
#: the policies with an ``incremental`` option: their cells decide from scratch and from the decision before
INCREMENTAL = ("smd", "fluid", "hetplace")
#: the policies with a ``pop_k`` option (POP): their cells also decide with each k of ``pop_k``
POP = ("smd", "fluid", "hetplace")
#: parameters every cell of a policy takes under the caller's: hetplace's cells measure the §4.3 pipeline over
#: the first active jobs (arrival order), whose incremental decision needs that order
CELL_OPTIONS = {"hetplace": {"order": "arrival"}}


def scene(mix: str, n_active: int, seed: int = 0):
    """(trace of ``n_active`` jobs, the last arriving at 1 s, the others at 0; cluster of about 6,500 GPUs; speed)."""
    if mix == "dl2":
        jobs = dl2_trace(n_active, seed).jobs
        cluster, speed = dl2_cluster(GPUS // 2), make_speed("table")
    elif mix == "gavel":
        gavel = load_trace(str(data_dir() / "gavel" / "msr_seed0_0e4a51.trace"))
        jobs = inflate(gavel, max(1.0, n_active / len(gavel)), seed).jobs[:n_active]
        third = GPUS // 3                       # GPUs of each type, on servers of 4
        cluster, speed = gavel_cluster(f"{third}:{third}:{third}"), make_speed("throughput")
    else:
        raise InputError("<argument>", "mix", f"one of {MIXES}", mix)
    jobs = [replace(j, arrival=0.0 if k < len(jobs) - 1 else 1.0) for k, j in enumerate(jobs)]
    return Trace(tuple(jobs), f"{mix}:{n_active}:{seed}"), cluster, speed


def one_decision(policy, trace, cluster, speed, *, seed: int = 0, caches_of=None, first_ms="own") -> dict:
    """The policy's decision at 1 s, after the one at 0: latency (wall and CPU seconds: the budget is
    wall time, and on a shared machine the CPU time is what the decision itself cost), objective,
    gap. ``caches_of``: a
    policy of the same kind already run on this state, whose :data:`CACHES` this one starts with.
    ``first_ms``: the budget of the decision at 0 (ms, None: none; "own": the policy's). A budgeted first
    decision places only what its budget allows, so :func:`decision_task` gives every variant the
    reference's, and they all decide at 1 s on the state the reference decides on."""
    sim = Simulation(trace, cluster, speed, seed=seed)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=seed))
    for attr in CACHES if caches_of is not None else ():
        if hasattr(caches_of, attr):
            setattr(policy, attr, getattr(caches_of, attr))
    events = sim.advance(None)
    own = policy.decision_record.seconds
    if first_ms != "own":
        policy.decision_record.seconds = None if first_ms is None else float(first_ms) / 1000.0
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    policy.decision_record.seconds = own
    policy.decision_record.reset()
    events = sim.advance(1.0)
    state = sim.state()
    t0, c0 = time.perf_counter(), time.process_time()
    decision = policy.schedule(state, events)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    sim.apply(decision, policy.name)          # the engine checks the answer (capacity, sizes)
    rec = policy.decision_record
    return {"seconds": seconds, "cpu_seconds": cpu, "active": int(len(state.active)), "placed": len(decision),
            "objective": rec.objectives[-1] if rec.objectives else None, "gap": rec.gaps[-1] if rec.gaps else None,
            "uncertified": rec.uncertified > 0, "answer": getattr(policy, "last_answer", None), **held(sim.state(), speed)}


def held(state, speed) -> dict:
    """The allocation a decision leaves, scored the same way whatever the policy and its own model: the
    jobs it runs (``running``) and their average time to finish if it were held (``held_jct``: remaining
    iterations over the speed source's rate of each running job's placement; None if none runs). Two
    decisions' objectives compare only when their models agree (hetplace's full decision scores its §4
    view of every admitted job, its incremental one the jobs that run); these compare always, beside the
    number of jobs run."""
    times = [state.remaining[j] / rate for j, pl in state.allocation.items()
             if (rate := float(speed.rate(state.jobs[j], pl, state.cluster))) > 0]
    return {"running": len(state.allocation), "held_jct": float(sum(times) / len(times)) if times else None}


def decision_task(policy: str, mix: str, n_active: int, budgets: list, pop_k: list, seed: int = 0,
                  reference_ms: float | None = None, options: dict | None = None) -> dict:
    """One state, the policy unbudgeted (or at ``reference_ms``) as reference, then every budget (ms) in
    ``budgets`` from scratch and incremental (:data:`INCREMENTAL`), and every k of ``pop_k`` at each budget
    (:data:`POP`, from scratch): rows with objective, gap, latency, objective / reference, :func:`held`'s
    figures and their ratio to the reference's (``held_ratio``), and latency / budget (``overrun``). ``options``: the policy's
    parameters in every decision, the reference's included (fluid's ``lp_jobs``)."""
    trace, cluster, speed = scene(mix, n_active, seed)
    options = {**CELL_OPTIONS.get(policy, {}), **(options or {})}
    ref_params = options if reference_ms is None else {**options, "budget_ms": reference_ms}
    donor = make_policy(policy, **ref_params)
    ref = one_decision(donor, trace, cluster, speed, seed=seed)
    rows = []
    for b in budgets:
        variants = [("scratch", {"incremental": False} if policy in INCREMENTAL else {})]
        if policy in INCREMENTAL:
            variants += [("incremental", {"incremental": True})]
        if policy in POP:
            variants += [(f"pop{k}", {"pop_k": k, "incremental": False}) for k in pop_k]
        for label, params in variants:
            out = one_decision(make_policy(policy, budget_ms=b, **options, **params), trace, cluster, speed, seed=seed,
                               caches_of=donor, first_ms=reference_ms)
            ratio = None if out["objective"] is None or not ref["objective"] else out["objective"] / ref["objective"]
            held_ratio = None if out["held_jct"] is None or not ref["held_jct"] else out["held_jct"] / ref["held_jct"]
            # the whole decision's wall time (view, solve, placement) over its budget: where the budget holds
            rows.append({"budget_ms": b, "variant": label, **out, "ratio_to_reference": ratio,
                         "held_ratio": held_ratio, "overrun": out["seconds"] * 1000.0 / b})
    return {"policy": policy, "mix": mix, "n_active": n_active, "options": options, "gpus": int(cluster.total()[cluster.index("gpu")]),
            "reference": {**ref, "budget_ms": reference_ms}, "rows": rows}

"""``hetplace``'s first decision (order arrival, nothing measured before it) over DL2's scene of ``dlsched.bench.decision``
at budgets of 10 and 100 ms and none (docs/results/decision-scale.md, "hetplace's first budgeted decision"):

    PYTHONPATH=TREE DLSCHED_DATA=/work/shared/data python benchmarks/hetplace_first_decision.py [N] [wall|cpu]

Per decision (none, 10, 100, 10, 100 ms, each a fresh policy on ``scene("dl2", N, 0)``, N = 2,000 by default): its CPU
and wall ms, the active jobs, the jobs it placed, its recorded gap, the decisions counted uncertified, its answer and
whether its placement stopped at the clock. With ``cpu`` every budget's clock (``time.perf_counter``) reads the
process's CPU time, so that on a shared machine the decision does what it would do alone (its wall ms are then CPU ms).
"""

from __future__ import annotations

import json
import sys
import time

from dlsched.bench.decision import scene
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.policy import PolicyContext


def main(n: int, clock: str) -> None:
    if clock == "cpu":
        time.perf_counter = time.process_time      # every budget reads CPU time: the decision as if alone
    trace, cluster, speed = scene("dl2", n, 0)
    for budget in (None, 10, 100, 10, 100):
        sim = Simulation(trace, cluster, speed, seed=0)
        policy = make_policy("hetplace", order="arrival", **({} if budget is None else {"budget_ms": budget}))
        policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
        events = sim.advance(None)
        state = sim.state()
        t0, c0 = time.perf_counter(), time.process_time()
        decision = policy.schedule(state, events)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        sim.apply(decision, policy.name)             # the engine checks the answer
        rec = policy.decision_record
        print(json.dumps({"budget_ms": budget, "cpu_ms": round(cpu * 1e3, 1), "wall_ms": round(wall * 1e3, 1),
                          "active": len(state.active), "placed": len(decision), "gap": rec.gaps[-1] if rec.gaps else None,
                          "uncertified": rec.uncertified, "answer": policy.last_answer,
                          "cut": getattr(policy, "_placement_cut", None)}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, sys.argv[2] if len(sys.argv) > 2 else "wall")

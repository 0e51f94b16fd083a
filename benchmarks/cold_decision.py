"""A budgeted policy's first decision on a large state, two checkouts side by side (docs/results/fluid-budget.md,
"The first decision within the budget").

    DLSCHED_DATA=/work/shared/data OMP_NUM_THREADS=1 python benchmarks/cold_decision.py OLD_TREE NEW_TREE [--json OUT]
        [--policies fluid,smd,hetplace] [--mixes dl2,gavel] [--n 2000,10000] [--budgets 10,100,1000]

For each (policy, mix, n) and each tree in turn (its own process, run in TREE with ``PYTHONPATH=TREE``, since
``python -c`` puts the working directory first on the path): on ``scene(mix, n, 0)`` of
``dlsched.bench.decision`` (n - 1 jobs waiting at 0), a fresh policy at each budget (ms) makes its first call,
``schedule`` at 0 with nothing measured and nothing kept, twice: on a fresh speed source (``cold``: a library
user's single call, every rate read from the speed table) and on one whose rates were read before (``warm``: one
job of each type's τ grid read first, as an engine or an earlier policy on the same source leaves it). Per row:
wall and CPU ms of the call, latency / budget, the jobs placed, what the policy answered and the gap it
recorded; the engine checks each answer (capacity, sizes). ``uptime`` before each tree's process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import numpy as np
from dlsched.bench.decision import scene
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.policy import PolicyContext
from dlsched.policies.view import instance_view
from dlsched.policies.greedy import tau_grid

policy, mix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
budgets = [float(b) for b in sys.argv[4].split(",")]
rows = []
for budget in budgets:
    for warm in (False, True):
        trace, cluster, speed = scene(mix, n, 0)
        sim = Simulation(trace, cluster, speed, seed=0)
        pol = make_policy(policy, budget_ms=budget)
        pol.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
        events = sim.advance(None)
        state = sim.state()
        if warm:
            view = instance_view(state.jobs, cluster, speed)
            for j in np.unique([job.job_type for job in state.jobs], return_index=True)[1].tolist():
                tau_grid(view, int(j))
        t0, c0 = time.perf_counter(), time.process_time()
        decision = pol.schedule(state, events)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        sim.apply(decision, pol.name)
        rec = pol.decision_record
        rows.append({"policy": policy, "mix": mix, "n": n, "budget_ms": budget, "speed": "warm" if warm else "cold",
                     "wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3, "over": wall * 1e3 / budget, "active": len(state.active),
                     "placed": len(decision), "answer": getattr(pol, "last_answer", None),
                     "gap": rec.gaps[-1] if rec.gaps else None})
print(json.dumps(rows))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs=2, help="the old and the new checkout")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--policies", default="fluid,smd,hetplace")
    ap.add_argument("--mixes", default="dl2,gavel")
    ap.add_argument("--n", default="2000,10000")
    ap.add_argument("--budgets", default="10,100,1000")
    args = ap.parse_args()
    rows = []
    for n in args.n.split(","):
        for mix in args.mixes.split(","):
            for policy in args.policies.split(","):
                for label, tree in zip(("old", "new"), args.trees):
                    load = os.getloadavg()[0]
                    t0 = time.time()
                    out = subprocess.run([sys.executable, "-c", CHILD, policy, mix, n, args.budgets], capture_output=True,
                                         text=True, cwd=tree, env={**os.environ, "PYTHONPATH": tree})
                    if out.returncode:
                        print(f"{label} {policy} {mix} {n}: error {out.stderr[-400:]}", flush=True)
                        continue
                    for row in json.loads(out.stdout):
                        row.update(tree=label, load=load)
                        rows.append(row)
                        print(f"{label:3} {policy:8} {mix:5} {n:>5} {row['budget_ms']:>6.0f} ms {row['speed']:4}: "
                              f"wall {row['wall_ms']:8.1f} cpu {row['cpu_ms']:8.1f} x{row['over']:7.2f} "
                              f"placed {row['placed']:5} {row['answer']} gap {row['gap']}  (load {load:.1f})", flush=True)
                    print(f"    ({time.time() - t0:.0f} s)", flush=True)
                    if args.json:
                        with open(args.json, "w") as f:
                            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

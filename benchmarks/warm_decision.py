"""A budgeted policy's warm decisions on a large state, two checkouts side by side (docs/results/fluid-budget.md,
"Warm decisions within 10 ms").

    DLSCHED_DATA=/work/shared/data OMP_NUM_THREADS=1 python benchmarks/warm_decision.py OLD_TREE NEW_TREE [--json OUT]
        [--policies fluid,smd] [--mixes dl2,gavel] [--n 2000,10000] [--budget 10] [--decisions 8] [--first 100000] [--clock wall|cpu]

For each (policy, mix, n) and each tree in turn (its own process, in TREE with ``PYTHONPATH=TREE``): the jobs of
``scene(mix, n + K - 1, 0)`` of ``dlsched.bench.decision`` (K = ``--decisions``), n - 1 of them at 0 and one arriving
at each of 1, 2, ..., K s. The policy with ``budget_ms`` = ``--first`` makes the first decision at 0 (a budget that
does not bind: every job it sizes placed, as a run's state after its first decisions), then its budget is set to
``--budget`` ms and it decides at each arrival (one event since the decision before: a warm decision). Per decision:
wall and CPU ms of ``schedule``, latency / budget, what it answered, its objective and gap. The reference is a second
policy object run the same way with its budget left at ``--first``: its objective at 1 s, on the same state (the
first decisions agree), is what the budgeted one's is divided by. The engine checks every answer (capacity, sizes).
``/proc/loadavg`` before each tree's process. With ``--clock cpu`` every budget's clock (``time.perf_counter``, in
both trees alike) reads the process's CPU time, so that on a shared machine the decision does what it would do alone
(its wall ms are then CPU ms; ``real_wall_ms`` is the wall time).
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
from dataclasses import replace
from dlsched.bench.decision import scene
from dlsched.instance.workload import Trace
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.policy import PolicyContext

policy, mix, n, budget, first, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
real = time.perf_counter
if sys.argv[7] == "cpu":
    # every budget's clock (time.perf_counter) reads this process's CPU time: the decision as if alone on the machine
    time.perf_counter = time.process_time

def run(budget_ms, decisions):
    trace, cluster, speed = scene(mix, n + k - 1, 0)
    # n - 1 jobs at 0, then one arriving at each of 1, 2, ... s: every warm decision follows one event
    trace = Trace(tuple(replace(j, arrival=max(0.0, float(a - n + 2))) for a, j in enumerate(trace.jobs)), trace.source)
    sim = Simulation(trace, cluster, speed, seed=0)
    pol = make_policy(policy, budget_ms=first)
    pol.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    sim.apply(pol.schedule(sim.state(), events), pol.name)
    pol.decision_record.seconds = budget_ms / 1000.0
    rows = []
    for t in range(1, decisions + 1):
        pol.decision_record.reset()
        events = sim.advance(float(t))
        state = sim.state()
        t0, c0, r0 = time.perf_counter(), time.process_time(), real()
        decision = pol.schedule(state, events)
        wall, cpu, real_wall = time.perf_counter() - t0, time.process_time() - c0, real() - r0
        sim.apply(decision, pol.name)
        rec = pol.decision_record
        rows.append({"t": t, "events": len(events), "active": len(state.active), "wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3, "real_wall_ms": real_wall * 1e3,
                     "over": wall * 1e3 / budget_ms, "running": len(sim.state().allocation),
                     "answer": getattr(pol, "last_answer", None), "objective": rec.objectives[-1] if rec.objectives else None,
                     "gap": rec.gaps[-1] if rec.gaps else None})
    return rows

ref = run(first, 1)[0]
rows = run(budget, k)
for r in rows:
    r["ratio"] = None if r["objective"] is None or not ref["objective"] else r["objective"] / ref["objective"]
print(json.dumps({"policy": policy, "mix": mix, "n": n, "budget_ms": budget, "reference": ref, "rows": rows}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs=2, help="the old and the new checkout")
    ap.add_argument("--json", help="write every cell here")
    ap.add_argument("--policies", default="fluid,smd")
    ap.add_argument("--mixes", default="dl2,gavel")
    ap.add_argument("--n", default="2000,10000")
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--first", type=float, default=100000.0)
    ap.add_argument("--decisions", type=int, default=8)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: the budgets' clock reads the process's CPU time (a decision as if alone on a shared machine)")
    args = ap.parse_args()
    cells = []
    for n in args.n.split(","):
        for mix in args.mixes.split(","):
            for policy in args.policies.split(","):
                for label, tree in zip(("old", "new"), args.trees):
                    load = open("/proc/loadavg").read().split()[:3]
                    t0 = time.time()
                    out = subprocess.run([sys.executable, "-c", CHILD, policy, mix, n, str(args.budget), str(args.first),
                                          str(args.decisions), args.clock], capture_output=True, text=True,
                                         cwd=tree, env={**os.environ, "PYTHONPATH": tree})
                    if out.returncode:
                        print(f"{label} {policy} {mix} {n}: error {out.stderr[-600:]}", flush=True)
                        continue
                    cell = {**json.loads(out.stdout), "tree": label, "load": load,
                            "utc": time.strftime("%H:%M:%S", time.gmtime(t0))}
                    cells.append(cell)
                    walls = sorted(r["wall_ms"] for r in cell["rows"])
                    cpus = sorted(r["cpu_ms"] for r in cell["rows"])
                    ratios = [r["ratio"] for r in cell["rows"] if r["ratio"] is not None]
                    gaps = [r["gap"] for r in cell["rows"] if r["gap"] is not None]
                    print(f"{label:3} {policy:5} {mix:5} {n:>5}: wall ms median {walls[len(walls) // 2]:6.1f} max {walls[-1]:6.1f}, "
                          f"cpu median {cpus[len(cpus) // 2]:6.1f} max {cpus[-1]:6.1f}, over max {walls[-1] / args.budget:5.2f}, "
                          f"answers {sorted({str(r['answer']) for r in cell['rows']})}, ratio {ratios[:1]} gap {gaps[:1]} "
                          f"(load {' '.join(load)}, {time.time() - t0:.0f} s)", flush=True)
                    if args.json:
                        with open(args.json, "w") as f:
                            json.dump(cells, f, indent=1)


if __name__ == "__main__":
    main()

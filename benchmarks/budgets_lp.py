"""Decision latency and certified gap of the LP/MILP policies at a range of decision budgets
(docs/results/budgets-lp.md).

    DLSCHED_DATA=/work/shared/data python benchmarks/budgets_lp.py [--budgets none,1,10,100] [--json OUT]
        [--gavel gavel-max-min-fairness-perf] [--oasis oasis,dorm] [--oasis-jobs 300] [--oasis-seed 2]

Whole runs on the engine, one after another in this process: each OASiS policy on the generated paper-setting
instance (``dlsched.instance.oasis_gen.generate(N, seed=S)``, 300 slots, 50 + 50 servers; ``dlsched simulate`` reads
no OASiS instance) and the Gavel policy on Gavel's ``msr_seed0_0e4a51`` trace on ``36:36:36``, at every budget
(``none``: no budget). Per run: decision latency median / p99 / max (ms, every call), the certified gaps' mean / max
over the decisions that recorded one, the decisions counted uncertified, the run's CPU and wall seconds, its average
JCT (Gavel) or jobs finished by T (OASiS), and ``/proc/loadavg`` before it.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dlsched.data import data_dir
from dlsched.instance.oasis_gen import generate
from dlsched.instance.traces import load_trace
from dlsched.policies.oasis import engine_setting
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from dlsched.sim.run import load_cluster, pick_speed


def row(label: str, policy: str, budget, res, wall: float, cpu: float, load: str) -> dict:
    doc = json.loads(res.to_json())
    gaps = np.asarray(res.decision_gaps, float)
    fin = gaps[np.isfinite(gaps)]
    return {"instance": label, "policy": policy, "budget_ms": budget, "decisions": doc["decision_calls"],
            "latency_ms": doc["decision_latency_ms"], "gap_mean": float(fin.mean()) if fin.size else None,
            "gap_max": float(gaps.max()) if gaps.size else None, "gaps": int(gaps.size),
            "gaps_infinite": int((~np.isfinite(gaps)).sum()), "uncertified": doc["decisions_uncertified"],
            "avg_jct": doc.get("avg_jct"), "finished": doc["completed"],
            "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "loadavg": load}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", default="none,1,10,100")
    ap.add_argument("--gavel", default="gavel-max-min-fairness-perf")
    ap.add_argument("--oasis", default="oasis,dorm")
    ap.add_argument("--oasis-jobs", type=int, default=300)
    ap.add_argument("--oasis-seed", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    budgets = [None if b == "none" else float(b) for b in args.budgets.split(",")]
    data = data_dir()
    inst = generate(args.oasis_jobs, seed=args.oasis_seed)
    cases = [(f"oasis paper n={args.oasis_jobs} seed={args.oasis_seed}", p, *engine_setting(inst))
             for p in filter(None, args.oasis.split(","))]
    if args.gavel:
        trace = load_trace(f"{data}/gavel/msr_seed0_0e4a51.trace", None)
        cluster = load_cluster("36:36:36", trace)
        cases.append(("gavel msr_seed0_0e4a51 36:36:36", args.gavel, trace, cluster, pick_speed(None, trace, cluster), None))
    rows = []
    for label, policy, trace, cluster, speed, max_time in cases:
        for b in budgets:
            load = open("/proc/loadavg").read().split()[:3]
            pol = make_policy(policy) if b is None else make_policy(policy, budget_ms=b)
            t0, c0 = time.perf_counter(), time.process_time()
            res = simulate(trace, cluster, pol, speed, max_time=max_time)
            r = row(label, policy, b, res, time.perf_counter() - t0, time.process_time() - c0, " ".join(load))
            rows.append(r)
            print(json.dumps(r), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

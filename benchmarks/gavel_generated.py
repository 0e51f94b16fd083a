"""Policies on generated Gavel-style traces (``gavel:N:SEED:...``), beside the trace's bound by GPU type.

    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data python benchmarks/gavel_generated.py \\
        --spec 'gavel:14:{seed}:bursts=1,burst_jobs=14' --seeds 1-20 \\
        --policies hetplace,gavel-fifo-perf,gavel-max-min-fairness-perf [--cluster 36:36:36] [--slot 600] [--json OUT]

For each seed: the trace ``--spec`` with ``{seed}`` filled in (dlsched/instance/gavel_gen.py), every
policy's average JCT in our simulator (``--speed throughput``, Gavel's measured rates), and the LP
lower bound that counts each GPU type's GPUs apart (``lp_lower_bound``, slots of ``--slot`` s;
``--slot 0`` skips it). Then each policy's mean over the seeds, its mean ratio to the bound, and
CPU seconds (``time.process_time``). These are the traces hetplace's rule for types is tuned on;
Gavel's msr traces are the report (docs/results/gavel.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from dlsched.instance.traces import load_trace
from dlsched.registry import make_policy
from dlsched.sim.bounds import lp_lower_bound
from dlsched.sim.engine import simulate
from dlsched.sim.run import load_cluster
from dlsched.sim.speed import make_speed


def seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="gavel:14:{seed}:bursts=1,burst_jobs=14")
    ap.add_argument("--seeds", default="1-20", help="first-last (inclusive)")
    ap.add_argument("--policies", default="hetplace,gavel-fifo-perf,gavel-max-min-fairness-perf")
    ap.add_argument("--cluster", default="36:36:36")
    ap.add_argument("--slot", type=float, default=600.0, help="the bound's slot length in s (0: no bound)")
    ap.add_argument("--json", default=None, help="write every row here")
    args = ap.parse_args(argv)
    speed = make_speed("throughput")
    names = args.policies.split(",")
    rows, cpu = [], {n: 0.0 for n in names}
    for seed in seeds(args.seeds):
        trace = load_trace(args.spec.format(seed=seed))
        cluster = load_cluster(args.cluster, trace)
        row = {"seed": seed, "jobs": len(trace)}
        if args.slot > 0:
            row["bound_h"] = lp_lower_bound(trace, cluster, speed, slot_seconds=args.slot)["bound"] / 3600
        for name in names:
            t0 = time.process_time()
            s = simulate(trace, cluster, make_policy(name), speed, seed=0).summary()
            cpu[name] += time.process_time() - t0
            row[name] = {"avg_jct_h": s["avg_jct"] / 3600, "p95_h": s["p95_jct"] / 3600, "makespan_h": s["makespan"] / 3600}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{'policy':32s} {'mean avg JCT (h)':>17s} {'mean ratio to bound':>20s} {'CPU s':>8s}")
    for name in names:
        avg = np.mean([r[name]["avg_jct_h"] for r in rows])
        ratio = np.mean([r[name]["avg_jct_h"] / r["bound_h"] for r in rows]) if args.slot > 0 else float("nan")
        print(f"{name:32s} {avg:17.4f} {ratio:20.4f} {cpu[name]:8.1f}")
    if args.slot > 0:
        print(f"{'bound by type':32s} {np.mean([r['bound_h'] for r in rows]):17.4f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"spec": args.spec, "cluster": args.cluster, "rows": rows, "cpu_s": cpu}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

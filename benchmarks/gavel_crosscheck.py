"""Our Gavel policies against Gavel's own simulator on the same msr trace, cluster and throughputs.

    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data python benchmarks/gavel_crosscheck.py \\
        [--trace FILE] [--cluster 36:36:36] [--policies fifo-perf,max-min-fairness-perf,finish-time-fairness] \\
        [--mixed average|slowest] [--failed model|cannot-run] [--reset-seconds S] [--gavel DIR --gavel-python PY] [--json OUT]
        [--single-gpu] [--first N]

Ours: ``dlsched simulate``'s engine with the ``gavel-*`` policies (dlsched/policies/gavel.py), rounds
of ``--round`` seconds, each allocation held at least ``--reset-seconds`` (0, ours by default; 1920
is Gavel's ``minimum_time_between_allocation_resets``), Gavel's throughputs through
``ThroughputSpeed``. Gavel's: its unmodified driver ``scripts/drivers/simulate_scheduler_with_trace.py``
from a checkout of its ``scheduler/`` folder (``--gavel DIR`` or ``$GAVEL_DIR``; the public
stanford-futuredata/gavel code, never copied into this repository), run by ``--gavel-python`` (an
interpreter with Gavel's dependencies: cvxpy with ECOS, grpcio, psutil, matrix_completion,
scikit-learn; its RPC stubs built by its Makefile). Without a checkout that step is skipped with a
note, and only our figures are reported. Gavel's simulator leaves the cluster idle until the next
arrival when its allocation is stale (docs/simulator.md, "Ours against Gavel's own simulator");
a ``--gavel`` copy with the few-line fix given there runs without that.

What both are given, written into a temporary folder: the trace in Gavel's 10-column form (our
7-column msr file's fields, priority 1, no SLO), and Gavel's throughput file with every (job type,
scale factor, GPU type) that the trace needs and Gavel did not measure (missing, or recorded as 0)
set to our speed source's rate, so that both simulators run the same speeds, and every pair of the
trace's (job type, scale factor) entries at one scale factor that the file lacks recorded as [0, 0]
(cannot share: how our ``ThroughputSpeed.pair_rates`` reads a missing pair; Gavel's simulator
reads the pair of every two job types at one scale factor when it packs). Reported per policy:
average JCT, makespan, Jain's index of JCT_iso/JCT (JCT_iso from our engine, for both), and the
ratio ours / Gavel's.

Space sharing (``--policies max-min-fairness-packed``): Gavel's ``MaxMinFairnessPolicyWithPacking``
stops with a cvxpy reshape error once jobs of different scale factors are active (its objective
reshapes the combinations into one row per job, which needs every job in as many combinations, and
it pairs only jobs of one scale factor), and on numpy 2 its ``float(proportional_throughputs[i])``
of a one-element array fails (``float(...item())`` in a copy of its checkout runs it). So the packed
cross-check runs on the trace's 1-GPU jobs (``--single-gpu``: the only ones Gavel's file lets share),
optionally its first N (``--first``).

Cost on 2 shared cores (1,181 jobs): ours 1-25 min a policy (finish-time fairness the slowest);
Gavel's FIFO-perf and max-min fairness 10-15 min each; Gavel's finish-time fairness solves a conic
program per allocation (0.25-7.5 s a call, issue 28), hours for the whole trace.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dlsched.data import data_dir
from dlsched.instance.traces import load_trace
from dlsched.registry import make_policy
from dlsched.result import jain
from dlsched.sim.engine import simulate
from dlsched.sim.policy import Placement
from dlsched.sim.run import load_cluster
from dlsched.sim.speed import ThroughputSpeed

#: our policy (without the ``gavel-`` prefix) -> Gavel's name for it
GAVEL_NAMES = {
    "fifo-perf": "fifo_perf",
    "max-min-fairness": "max_min_fairness",
    "max-min-fairness-perf": "max_min_fairness_perf",
    "finish-time-fairness": "finish_time_fairness_perf",
    "max-sum-throughput": "max_sum_throughput_perf",
    "min-total-duration": "min_total_duration_perf",
    "max-min-fairness-packed": "max_min_fairness_packed",
}
GPU_TYPES = ("v100", "p100", "k80")


def gavel_trace(src: Path, out: Path) -> None:
    """Our 7-column msr trace (type, command, steps flag, data dir, steps, arrival, scale factor) as
    Gavel's 10 columns (type, command, working dir, steps flag, data dir, steps, scale factor,
    priority, SLO, arrival)."""
    rows = []
    for line in src.read_text().splitlines():
        if line.strip():
            jt, cmd, arg, dd, steps, arrival, sf = line.split("\t")
            rows.append("\t".join([jt, cmd, "", arg, dd, steps, sf, "1", "-1", arrival]))
    out.write_text("\n".join(rows) + "\n")


def same_speeds(trace, cluster, speed: ThroughputSpeed, src: Path, out: Path) -> tuple[int, int]:
    """Gavel's throughput file with our rate wherever the trace needs an entry Gavel lacks or records
    as 0, and [0, 0] (cannot share) for each pair of the trace's entries at one scale factor that it
    lacks; returns how many entries and how many pairs were set."""
    doc = json.loads(src.read_text())
    first = {t: cluster.gpu_type.index(t) for t in GPU_TYPES if t in cluster.gpu_type}
    filled = pairs = 0
    jobs = {(j.job_type, j.max_workers): j for j in trace.jobs}
    for job in jobs.values():
        key = str((job.job_type, job.max_workers))
        for t in GPU_TYPES:
            entry = doc.setdefault(t, {}).setdefault(key, {})
            if not entry.get("null"):
                s = first.get(t, 0)
                entry["null"] = float(speed.rate(job, Placement({s: job.max_workers}), cluster))
                filled += 1
            for other_type, sf in jobs:
                other = str((other_type, sf))
                if sf == job.max_workers and other not in entry:
                    entry[other] = [0.0, 0.0]
                    pairs += 1
    out.write_text(json.dumps(doc))
    return filled, pairs


def run_gavel(gavel_dir: Path, python: str, policy: str, trace: Path, throughputs: Path, cluster: str,
              per_server: int, round_seconds: float, timeout: float) -> dict:
    """Gavel's driver on one policy: per-job JCTs (trace order), average JCT, makespan, wall seconds."""
    cmd = [python, "scripts/drivers/simulate_scheduler_with_trace.py", "-t", str(trace), "-p", policy,
           "--throughputs_file", str(throughputs), "-c", cluster, "--num_gpus_per_server",
           ":".join([str(per_server)] * 3), "--seed", "0", "--time_per_iteration", str(int(round_seconds))]
    t0 = time.monotonic()
    try:
        out = subprocess.run(cmd, cwd=gavel_dir, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"timed out after {timeout:g} s"}
    wall = time.monotonic() - t0
    if out.returncode != 0:
        return {"status": "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1]}
    jct = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"^Job (\d+)[^:]*: ([0-9.]+)$", out.stdout, re.M)}
    avg = re.search(r"Average job completion time: ([0-9.]+) seconds", out.stdout)
    total = re.search(r"Total duration: ([0-9.]+) seconds", out.stdout)
    return {"status": "completed", "jct": [jct.get(i, np.nan) for i in range(max(jct) + 1)] if jct else [],
            "avg_jct": float(avg.group(1)) if avg else None, "makespan": float(total.group(1)) if total else None,
            "wall_seconds": wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", default=str(data_dir() / "gavel" / "msr_seed0_0e4a51.trace"))
    ap.add_argument("--cluster", default="36:36:36")
    ap.add_argument("--gpus-per-server", type=int, default=4)
    ap.add_argument("--policies", default="fifo-perf,max-min-fairness-perf,finish-time-fairness")
    ap.add_argument("--round", type=float, default=360.0, help="round length (s), both simulators")
    ap.add_argument("--gavel", default=os.environ.get("GAVEL_DIR"), help="a checkout of Gavel's scheduler/ folder")
    ap.add_argument("--gavel-python", default=sys.executable)
    ap.add_argument("--gavel-timeout", type=float, default=3600.0, help="seconds per Gavel run")
    ap.add_argument("--mixed", default="average", choices=ThroughputSpeed.MIXED,
                    help="a job spanning GPU types: the average of its workers' rates, or the slowest's (Gavel never spans)")
    ap.add_argument("--failed", default="model", choices=ThroughputSpeed.FAILED,
                    help="where Gavel records 0: our calibrated model's rate, or the job cannot run there (Gavel's reading)")
    ap.add_argument("--reset-seconds", type=float, default=0.0,
                    help="ours: the least time an allocation holds (Gavel's own simulator: 1920)")
    ap.add_argument("--single-gpu", action="store_true",
                    help="only the trace's 1-GPU jobs (Gavel's packed policy needs jobs of one scale factor)")
    ap.add_argument("--first", type=int, default=None, metavar="N", help="only the first N jobs (after --single-gpu)")
    ap.add_argument("--json", default=None, metavar="OUT")
    args = ap.parse_args(argv)
    names = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in names if p not in GAVEL_NAMES]
    if unknown:
        ap.error(f"--policies: unknown {unknown}; choose from {', '.join(GAVEL_NAMES)}")
    tmp = tempfile.TemporaryDirectory()
    src = Path(args.trace)
    if args.single_gpu or args.first is not None:
        lines = [ln for ln in src.read_text().splitlines() if ln.strip()]
        lines = [ln for ln in lines if not args.single_gpu or ln.split("\t")[6].strip() == "1"][:args.first]
        src = Path(tmp.name) / src.name
        src.write_text("\n".join(lines) + "\n")
    trace = load_trace(str(src))
    cluster = load_cluster(args.cluster, trace)
    speed = ThroughputSpeed(mixed=args.mixed, failed=args.failed)
    gavel_dir = Path(args.gavel) if args.gavel else None
    if gavel_dir is not None and not (gavel_dir / "scripts/drivers/simulate_scheduler_with_trace.py").is_file():
        print(f"note: {gavel_dir} is not a checkout of Gavel's scheduler/ folder; Gavel's runs skipped")
        gavel_dir = None
    if gavel_dir is None:
        print("note: no Gavel checkout (--gavel / $GAVEL_DIR): only our figures are reported")
    rows = []
    with tmp:
        g_trace, g_tp = Path(tmp.name) / "trace.tsv", Path(tmp.name) / "throughputs.json"
        gavel_trace(src, g_trace)
        filled, pairs = same_speeds(trace, cluster, speed, data_dir() / "gavel" / "simulation_throughputs.json", g_tp)
        for name in names:
            t0 = time.monotonic()
            res = simulate(trace, cluster, make_policy(f"gavel-{name}", round_seconds=args.round,
                                                       reset_seconds=args.reset_seconds), speed, seed=0)
            s = res.summary()
            row = {"policy": name, "ours": {"status": res.status, "avg_jct": s["avg_jct"], "makespan": s["makespan"],
                                            "jain": s["jain_fairness"], "wall_seconds": time.monotonic() - t0}}
            if gavel_dir is not None:
                g = run_gavel(gavel_dir, args.gavel_python, GAVEL_NAMES[name], g_trace, g_tp, args.cluster,
                              args.gpus_per_server, args.round, args.gavel_timeout)
                if g.get("jct") and len(g["jct"]) == len(trace):
                    jct = np.asarray(g["jct"])
                    ok = np.isfinite(jct) & np.isfinite(res.isolated_jct)
                    g["jain"] = jain(res.isolated_jct[ok] / jct[ok])
                g.pop("jct", None)
                row["gavel"] = g
                row["ratio"] = {k: row["ours"][k] / g[k] for k in ("avg_jct", "makespan", "jain") if g.get(k)}
            rows.append(row)
            print(json.dumps(row))
    which = (" (1-GPU jobs" + (f", first {args.first})" if args.first else ")") if args.single_gpu
             else (f" (first {args.first})" if args.first else ""))
    print(f"\n{args.trace}{which} on {args.cluster} ({len(trace)} jobs), rounds of {args.round:g} s, "
          f"ours with allocations held {args.reset_seconds:g} s; "
          f"{filled} throughput entries set to our rates in Gavel's file, {pairs} missing pairs set to [0, 0]")
    print(f"{'policy':24s} {'ours avg JCT h':>15s} {'Gavel avg JCT h':>16s} {'ratio':>6s} {'ours makespan h':>16s} "
          f"{'Gavel makespan h':>17s} {'ours Jain':>9s} {'Gavel Jain':>10s}")
    for r in rows:
        o, g = r["ours"], r.get("gavel", {})

        def h(x):
            return f"{x / 3600:.1f}" if x else "-"
        print(f"{r['policy']:24s} {h(o['avg_jct']):>15s} {h(g.get('avg_jct')):>16s} "
              f"{r.get('ratio', {}).get('avg_jct', float('nan')):6.3f} {h(o['makespan']):>16s} {h(g.get('makespan')):>17s} "
              f"{o['jain']:9.3f} {g.get('jain', float('nan')):10.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"trace": args.trace, "jobs": len(trace), "cluster": args.cluster, "round": args.round,
                                               "mixed": args.mixed, "failed": args.failed, "reset_seconds": args.reset_seconds,
                                               "filled_throughputs": filled, "filled_pairs": pairs,
                                               "single_gpu": args.single_gpu, "first": args.first, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

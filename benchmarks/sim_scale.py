"""Simulator scale: wall seconds of DRF runs at 500, 2,000 and 10,000 generated jobs on a 500-GPU
cluster, the growth exponent, the engine's own time per event apart from the policy's, and the
2,000-job Gavel-derived trace (issue 11 acceptance, docs/results.md "Simulator scale").

Generated traces: ``poisson_trace(n, seed=0, arrival_rate=1/30)`` (jobs of 1, 2, 4 or 8 GPUs, mean
duration 1 h: offered load ≈ 0.9 of 500 GPUs), 125 servers x 4 GPUs, ``DurationSpeed``.
Gavel: the three ``msr_seed0_*.trace`` files merged by arrival (names made unique), the first
2,000 jobs, on 500 V100s (Gavel cluster spec ``500:0:0``, 4 GPUs a server) with Gavel's measured
throughputs (``ThroughputSpeed``).

    PYTHONPATH=$PWD python benchmarks/sim_scale.py [--sizes 500,2000,10000] [--policy drf] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np

from dlsched.bench import environment
from dlsched.data import data_dir
from dlsched.instance.cluster import Cluster
from dlsched.instance.cluster_spec import gavel_cluster
from dlsched.instance.synthetic import poisson_trace
from dlsched.instance.traces import load_gavel_trace
from dlsched.instance.workload import Trace
from dlsched.sim.engine import simulate
from dlsched.sim.policies import make_policy
from dlsched.sim.speed import make_speed


def gavel_2000() -> Trace:
    jobs = []
    for k, path in enumerate(sorted((data_dir() / "gavel").glob("msr_seed0_*.trace"))):
        jobs += [dataclasses.replace(j, name=f"{path.stem}:{j.name}") for j in load_gavel_trace(path).jobs]
    jobs.sort(key=lambda j: j.arrival)
    return Trace(tuple(jobs[:2000]), "gavel msr_seed0_* merged, first 2000 jobs")


def measure(trace: Trace, cluster: Cluster, speed, policy: str) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(trace, cluster, make_policy(policy), speed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = res.summary()
    return {"trace": trace.source, "jobs": len(trace), "policy": policy, "status": s["status"], "wall_seconds": wall, "cpu_seconds": cpu,
            "events": s["events"], "engine_seconds": res.engine_seconds,
            "engine_per_event_us": 1e6 * res.engine_seconds / max(res.n_events, 1),
            "policy_seconds": float(res.decision_seconds.sum()), "policy_median_us": 1e6 * s["decision_median_s"],
            "avg_jct": s["avg_jct"], "gpu_utilisation": s["utilisation"]["gpu"], "unschedulable": s["unschedulable"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,2000,10000")
    ap.add_argument("--policy", default="drf")
    ap.add_argument("--no-gavel", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    cluster = Cluster.homogeneous(125, {"gpu": 4})
    rows = [measure(poisson_trace(n, 0, arrival_rate=1 / 30), cluster, make_speed("duration"), args.policy) for n in sizes]
    if len(sizes) > 1:
        exponent = float(np.polyfit(np.log(sizes), np.log([r["wall_seconds"] for r in rows]), 1)[0])
    else:
        exponent = None
    out = {"generated": rows, "growth_exponent": exponent}
    if not args.no_gavel:
        out["gavel"] = measure(gavel_2000(), gavel_cluster("500:0:0"), make_speed("throughput"), args.policy)
    out["environment"] = environment(policy=args.policy, sizes=sizes, arrival_rate=1 / 30, seed=0)
    if args.json:
        print(json.dumps(out))
        return
    for r in rows + ([out["gavel"]] if "gavel" in out else []):
        print(f"{r['jobs']:6d} jobs {r['policy']:6s} {r['status']:9s} wall {r['wall_seconds']:7.2f} s (cpu {r['cpu_seconds']:6.2f} s)  events {r['events']:6d}  "
              f"engine {r['engine_per_event_us']:6.0f} us/event ({r['engine_seconds']:.2f} s)  policy {r['policy_seconds']:.2f} s "
              f"(median {r['policy_median_us']:.0f} us/call)  GPU util {r['gpu_utilisation']:.3f}  [{r['trace']}]")
    if exponent is not None:
        print(f"growth exponent (wall ~ n^k): k = {exponent:.3f}")


if __name__ == "__main__":
    from dlsched.console import python_stdout_only

    with python_stdout_only():      # HiGHS's banner (environment()) writes to fd 1: keep --json clean
        main()

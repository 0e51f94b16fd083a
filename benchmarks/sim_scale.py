"""Simulator scale: wall seconds of DRF runs at 500, 2,000 and 10,000 generated jobs on a 500-GPU
cluster, the growth exponent, the engine's own time per event apart from the policy's, and the
2,000-job Gavel-derived trace (issue 11 acceptance, docs/results.md "Simulator scale").

Generated traces: ``poisson_trace(n, seed=0, arrival_rate=1/30)`` (jobs of 1, 2, 4 or 8 GPUs, mean
duration 1 h: offered load ≈ 0.9 of 500 GPUs), 125 servers x 4 GPUs, ``DurationSpeed``.
Gavel: the three ``msr_seed0_*.trace`` files merged by arrival (names made unique), the first
2,000 jobs, on 500 V100s (Gavel cluster spec ``500:0:0``, 4 GPUs a server) with Gavel's measured
throughputs (``ThroughputSpeed``).

    PYTHONPATH=$PWD python benchmarks/sim_scale.py [--sizes 500,2000,10000] [--policy drf] [--json]
    PYTHONPATH=$PWD python benchmarks/sim_scale.py --against REV [--repeats 1] [--json]

``--against REV`` measures side by side: the package of commit REV (``git archive`` into a
temporary folder) and this checkout's, each case in a fresh process, old then new, at the same
moment of the machine; it reports both, the ratios old / new, and whether the two made the same
decisions (a digest of every job's start and completion time, bit for bit). Each row records
``digest`` for that comparison.

``--cases`` names the cases instead (``generated:N``, ``gavel``, ``openb:N``): ``openb:N`` is the
first N pods of the Alibaba OpenB pod list, inflated 1.5x and compressed to a peak GPU demand of
1.2x the first N/8152 of the OpenB GPU nodes (docs/results.md "OpenB inflated", seed 0), recorded durations. It checks
that a policy's per-event speed-ups (DRF's FillMemo, Tetris, the Optimus greedy) keep its decisions:

    PYTHONPATH=$PWD python benchmarks/sim_scale.py --against REV --cases openb:3000 --policy tetris
    PYTHONPATH=$PWD python benchmarks/sim_scale.py --against REV --cases openb --max-time 960 --policy drf

(``openb``: all 12,228 pods of the inflated list on all nodes; ``--max-time`` stops at that simulated time.)
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dlsched.data import data_dir
from dlsched.instance.cluster import Cluster
from dlsched.instance.cluster_spec import load_cluster
from dlsched.instance.synthetic import poisson_trace
from dlsched.instance.traces import load_gavel_trace
from dlsched.instance.workload import Trace
from dlsched.sim.engine import simulate
from dlsched.registry import make_policy
from dlsched.sim.speed import make_speed

ARRIVAL_RATE = 1 / 30


def gavel_2000() -> Trace:
    jobs = []
    for k, path in enumerate(sorted((data_dir() / "gavel").glob("msr_seed0_*.trace"))):
        jobs += [dataclasses.replace(j, name=f"{path.stem}:{j.name}") for j in load_gavel_trace(path).jobs]
    jobs.sort(key=lambda j: j.arrival)
    return Trace(tuple(jobs[:2000]), "gavel msr_seed0_* merged, first 2000 jobs")


def openb(n: int | None = None):
    """The first ``n`` OpenB pods (all by default), inflated 1.5x and compressed to a 1.2x peak on
    the first n/8152 of the OpenB GPU nodes (all of them by default)."""
    from dlsched.instance.traces import load_trace
    from dlsched.sim.run import rescale

    d = data_dir() / "alibaba-openb"
    full = load_trace(d / "openb_pod_list_default.csv")
    n = len(full) if n is None else n
    nodes = load_cluster(str(d / "openb_node_list_gpu_node.csv"))
    # the same share of the nodes as of the pods, so that the pods ask for the cluster as the whole list does
    k = max(1, round(nodes.capacity.shape[0] * n / len(full)))
    cluster = dataclasses.replace(nodes, capacity=nodes.capacity[:k], gpu_type=nodes.gpu_type[:k], rack=nodes.rack[:k],
                                  names=nodes.names[:k], source=f"{nodes.source}, first {k} nodes")
    trace, _ = rescale(Trace(full.jobs[:n], f"{full.source}, first {n} pods"), cluster, make_speed("duration"),
                       target_peak=1.2, inflation=1.5, inflation_seed=0)
    return trace, cluster, make_speed("duration")


def case(name: str):
    """(trace, cluster, speed) of a case: ``generated:N``, ``gavel`` or ``openb:N``."""
    if name == "gavel":
        return gavel_2000(), load_cluster("500:0:0"), make_speed("throughput")
    if name.startswith("openb"):
        return openb(int(name.split(":")[1]) if ":" in name else None)
    return poisson_trace(int(name.split(":")[1]), 0, arrival_rate=ARRIVAL_RATE), Cluster.homogeneous(125, {"gpu": 4}), \
        make_speed("duration")


def measure(trace: Trace, cluster: Cluster, speed, policy: str, max_time: float | None = None) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(trace, cluster, make_policy(policy), speed, **({} if max_time is None else {"max_time": max_time}))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = res.summary()
    digest = hashlib.sha256(np.ascontiguousarray(np.stack([res.first_start, res.completion])).tobytes()).hexdigest()[:16]
    return {"trace": trace.source, "jobs": len(trace), "policy": policy, "status": s["status"], "wall_seconds": wall, "cpu_seconds": cpu,
            "events": s["events"], "engine_seconds": res.engine_seconds,
            "engine_per_event_us": 1e6 * res.engine_seconds / max(res.n_events, 1),
            "policy_seconds": float(res.decision_seconds.sum()), "policy_median_us": 1e6 * s["decision_median_s"],
            "avg_jct": s["avg_jct"], "gpu_utilisation": s["utilisation"]["gpu"], "unschedulable": s["unschedulable"],
            "digest": digest}


def exponent(sizes, seconds) -> float | None:
    """k of seconds ~ n^k, least squares on log-log."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0]) if len(sizes) > 1 else None


def in_subprocess(tree: Path, name: str, policy: str, max_time: float | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    extra = [] if max_time is None else ["--max-time", str(max_time)]
    out = subprocess.run([sys.executable, __file__, "--case", name, "--policy", policy, *extra], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def against(rev: str, names: list[str], policy: str, repeats: int, max_time: float | None = None) -> dict:
    """Each case in the package of ``rev`` and in this checkout, alternately; best of ``repeats``."""
    here = Path(__file__).resolve().parent.parent
    sha = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", rev], check=True, capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(here), "archive", sha, "dlsched"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        for name in names:
            runs = {"old": [], "new": []}
            for _ in range(repeats):
                runs["old"].append(in_subprocess(Path(tmp), name, policy, max_time))
                runs["new"].append(in_subprocess(here, name, policy, max_time))
            old, new = (min(runs[k], key=lambda r: r["cpu_seconds"]) for k in ("old", "new"))
            rows.append({"case": name, "old": old, "new": new, "same_decisions": old["digest"] == new["digest"],
                         "cpu_ratio_old_over_new": old["cpu_seconds"] / new["cpu_seconds"],
                         "wall_ratio_old_over_new": old["wall_seconds"] / new["wall_seconds"],
                         "engine_per_event_ratio_old_over_new": old["engine_per_event_us"] / new["engine_per_event_us"]})
    gen = [r for r in rows if r["case"].startswith("generated:")]
    sizes = [r["old"]["jobs"] for r in gen]
    return {"against": sha, "cases": rows,
            "growth_exponent": {k: exponent(sizes, [r[k]["wall_seconds"] for r in gen]) for k in ("old", "new")},
            "growth_exponent_cpu": {k: exponent(sizes, [r[k]["cpu_seconds"] for r in gen]) for k in ("old", "new")}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,2000,10000")
    ap.add_argument("--policy", default="drf")
    ap.add_argument("--no-gavel", action="store_true")
    ap.add_argument("--cases", default=None, help="comma-separated case names instead of --sizes and gavel "
                    "(generated:N, gavel, openb:N, openb: every pod)")
    ap.add_argument("--max-time", type=float, default=None, help="simulate up to this simulated time only")
    ap.add_argument("--against", metavar="REV", help="also run the package of this commit, side by side")
    ap.add_argument("--repeats", type=int, default=1, help="with --against: best of this many runs of each")
    ap.add_argument("--case", help=argparse.SUPPRESS)      # one case, one JSON row (the --against worker)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(measure(*case(args.case), args.policy, args.max_time)))
        return
    from dlsched.bench import environment

    sizes = [int(x) for x in args.sizes.split(",")]
    names = [f"generated:{n}" for n in sizes] + ([] if args.no_gavel else ["gavel"])
    if args.cases:
        names = args.cases.split(",")
        sizes = [int(n.split(":")[1]) for n in names if n.startswith("generated:")]
    env = environment(policy=args.policy, sizes=sizes, arrival_rate=ARRIVAL_RATE, seed=0)
    if args.against:
        out = {**against(args.against, names, args.policy, args.repeats, args.max_time), "environment": env}
        if args.json:
            print(json.dumps(out))
            return
        for r in out["cases"]:
            o, n = r["old"], r["new"]
            print(f"{r['case']:16s} {o['jobs']:6d} jobs  old {o['wall_seconds']:7.2f} s wall ({o['cpu_seconds']:6.2f} s cpu, engine "
                  f"{o['engine_per_event_us']:4.0f} us/event)  new {n['wall_seconds']:7.2f} s wall ({n['cpu_seconds']:6.2f} s cpu, engine "
                  f"{n['engine_per_event_us']:4.0f} us/event)  cpu old/new {r['cpu_ratio_old_over_new']:.2f}x  "
                  f"same decisions: {r['same_decisions']}")
        if out["growth_exponent"]["old"] is not None:
            print(f"growth exponent (wall ~ n^k) against {out['against']}: old k = {out['growth_exponent']['old']:.3f}, "
                  f"new k = {out['growth_exponent']['new']:.3f}")
        return
    rows = [measure(*case(name), args.policy, args.max_time) for name in names]
    gen = [r for name, r in zip(names, rows) if name.startswith("generated:")]
    out = {"generated": gen, "growth_exponent": exponent(sizes, [r["wall_seconds"] for r in gen])}
    out.update({name: r for name, r in zip(names, rows) if not name.startswith("generated:")})
    out["environment"] = env
    if args.json:
        print(json.dumps(out))
        return
    for r in rows:
        print(f"{r['jobs']:6d} jobs {r['policy']:6s} {r['status']:9s} wall {r['wall_seconds']:7.2f} s (cpu {r['cpu_seconds']:6.2f} s)  events {r['events']:6d}  "
              f"engine {r['engine_per_event_us']:6.0f} us/event ({r['engine_seconds']:.2f} s)  policy {r['policy_seconds']:.2f} s "
              f"(median {r['policy_median_us']:.0f} us/call)  GPU util {r['gpu_utilisation']:.3f}  [{r['trace']}]")
    if out["growth_exponent"] is not None:
        print(f"growth exponent (wall ~ n^k): k = {out['growth_exponent']:.3f}")


if __name__ == "__main__":
    from dlsched.console import python_stdout_only

    with python_stdout_only():      # HiGHS's banner (environment()) writes to fd 1: keep --json clean
        main()

"""Real traces under every baseline: a Gavel trace on Gavel's 3-type cluster, and the Alibaba
OpenB pods on the OpenB GPU nodes (issue 11 acceptance; docs/results.md "Real traces").

    PYTHONPATH=$PWD python benchmarks/sim_real_traces.py [--policies fifo,srtf,drf,tetris] [--plot DIR] [--json]

Gavel: ``msr_seed0_0e4a51.trace`` (1,181 jobs) on ``36:36:36`` (V100, P100, K80; 4 GPUs a
server), Gavel's measured throughputs. OpenB: ``openb_pod_list_default.csv`` (8,152 pods) on
``openb_node_list_gpu_node.csv``, recorded durations (``DurationSpeed``). Policies that refuse a
trace (an InputError) are reported as such.

``--target-load L``, ``--target-peak P`` or ``--arrival-scale S`` rescale the arrivals of every
trace run (dlsched/sim/load.py: the offered GPU load, or the peak GPU demand were every job
started on arrival, reaches the target; the factor is decided from the trace alone), as
``dlsched simulate`` does; the figures are then named ``<trace>-<rule>_*.png``.

    PYTHONPATH=$PWD python benchmarks/sim_real_traces.py --only openb --target-load 0.9 --plot DIR

``--inflate F`` first adds copies of jobs drawn from the trace (``--inflate-seed``) until it has F
times its jobs (dlsched/sim/load.py, ``inflate``: the OpenB pod list alone never contends, whatever
the compression); figures are then named ``<trace>-inflateF-<rule>_*.png``:

    PYTHONPATH=$PWD python benchmarks/sim_real_traces.py --only openb --inflate 1.5 --target-peak 1.2

``--keep DIR`` also stores every run's result in ``DIR/<trace>__<policy>.pkl``, so that long runs can be
made one policy a process (or two at once) and ``--replot DIR`` then prints their table (``--json``:
the same rows) and draws one JCT CDF and one utilisation figure of all the stored runs of a trace,
without simulating:

    PYTHONPATH=$PWD python benchmarks/sim_real_traces.py --only openb --inflate 1.5 --target-peak 1.2 --policies drf --keep DIR
    PYTHONPATH=$PWD python benchmarks/sim_real_traces.py --replot DIR --plot DIR
"""

from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

from dlsched.bench import environment
from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance.cluster_spec import load_cluster
from dlsched.instance.traces import load_trace
from dlsched.sim.engine import simulate
from dlsched.sim.plots import jct_cdf, utilisation
from dlsched.registry import make_policy
from dlsched.sim.run import rescale
from dlsched.sim.speed import make_speed

KEYS = ("policy", "status", "completed", "unschedulable", "avg_jct", "median_jct", "p95_jct", "p99_jct", "makespan",
        "avg_queueing_delay", "jain_fairness", "utilisation", "decision_median_s", "events", "wall_seconds")


def settings():
    d = data_dir()
    return {"gavel-3type": (d / "gavel/msr_seed0_0e4a51.trace", "36:36:36", "throughput"),
            "openb": (d / "alibaba-openb/openb_pod_list_default.csv", d / "alibaba-openb/openb_node_list_gpu_node.csv", "duration")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policies", default="fifo,srtf,drf,tetris")
    ap.add_argument("--only", default=None, help="gavel-3type or openb")
    ap.add_argument("--plot", default=None, metavar="DIR")
    ap.add_argument("--target-load", type=float, default=None, metavar="L")
    ap.add_argument("--target-peak", type=float, default=None, metavar="P")
    ap.add_argument("--arrival-scale", type=float, default=None, metavar="S")
    ap.add_argument("--inflate", type=float, default=None, metavar="F", help="inflate the trace to F times its jobs first")
    ap.add_argument("--inflate-seed", type=int, default=0, metavar="SEED")
    ap.add_argument("--deadline", type=float, default=1200.0, metavar="S", help="wall seconds per run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", default=None, metavar="DIR", help="store every run's result in DIR/<trace>__<policy>.pkl")
    ap.add_argument("--replot", default=None, metavar="DIR", help="table and figures of the runs stored in DIR; no simulation")
    args = ap.parse_args()
    if args.replot:
        return replot(Path(args.replot), args.plot, args.json)
    env = environment()       # the revision of the code that runs: runs take hours, commits land meanwhile
    out = {}
    for name, (trace_path, cluster_spec, speed) in settings().items():
        if args.only and name != args.only:
            continue
        trace, cluster = load_trace(trace_path), load_cluster(str(cluster_spec))
        trace, scaling = rescale(trace, cluster, make_speed(speed), arrival_scale=args.arrival_scale,
                                 target_load=args.target_load, target_peak=args.target_peak,
                                 inflation=args.inflate, inflation_seed=args.inflate_seed)
        if args.inflate is not None:
            name = f"{name}-inflate{args.inflate:g}"
        if "arrival_scale" in scaling:
            rule = (f"load{args.target_load:g}" if args.target_load is not None else
                    f"peak{args.target_peak:g}" if args.target_peak is not None else f"scale{args.arrival_scale:g}")
            name = f"{name}-{rule}"
            if not args.json:
                print(f"{name}: arrivals x{scaling['arrival_scale']:.6g} ({scaling['arrival_rule']}), offered load "
                      f"{scaling['offered_load']}, peak demand {scaling['peak_demand']}")
        rows, results = [], []
        for policy in args.policies.split(","):
            try:
                res = simulate(trace, cluster, make_policy(policy), make_speed(speed), deadline=args.deadline)
            except InputError as exc:
                rows.append({"policy": policy, "status": "refused", "message": str(exc)})
                continue
            s = res.summary()
            rows.append({k: s[k] for k in KEYS})
            results.append(res)
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
                (Path(args.keep) / f"{name}__{policy}.pkl").write_bytes(pickle.dumps(res))
            if not args.json:
                show(name, s)
        out[name] = {"trace": trace.source, "cluster": cluster.source, "jobs": len(trace), "speed": speed, **scaling, "runs": rows}
        if args.plot and results:
            figures(results, Path(args.plot), name)
    out["environment"] = env
    if args.json:
        print(json.dumps(out))


def show(name: str, s: dict) -> None:
    print(f"{name:12s} {s['policy']:10s} {s['status']:9s} avg JCT {s['avg_jct']:.4g} s  median {s['median_jct']:.4g}  "
          f"p95 {s['p95_jct']:.4g}  makespan {s['makespan']:.4g}  queueing {s['avg_queueing_delay']:.4g}  "
          f"Jain {s['jain_fairness']:.3f}  util {s['utilisation']}  wall {s['wall_seconds']:.1f} s")


def figures(results, directory: Path, name: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    jct_cdf(results, directory / f"{name}_jct_cdf.png")
    utilisation(results, directory / f"{name}_utilisation.png")


def replot(directory: Path, plot: str | None, as_json: bool) -> None:
    """The table and figures of the runs ``--keep`` stored in ``directory``, one group per trace."""
    groups: dict[str, list] = {}
    for path in sorted(directory.glob("*.pkl")):
        groups.setdefault(path.stem.split("__")[0], []).append(pickle.loads(path.read_bytes()))
    out = {}
    for name, results in groups.items():
        out[name] = {"trace": results[0].trace, "cluster": results[0].cluster, "runs": [{k: r.summary()[k] for k in KEYS} for r in results]}
        if not as_json:
            for r in results:
                show(name, r.summary())
        if plot:
            figures(results, Path(plot), name)
    if as_json:
        print(json.dumps(out))


if __name__ == "__main__":
    from dlsched.console import python_stdout_only

    with python_stdout_only():
        main()

"""Layers against exact HiGHS on a generated MCMDK with many configurations per job.

    PYTHONPATH=. python benchmarks/mcmdk_layers.py --jobs 500 --configs 200 --rows 10 \
        --exact-limit 600 --limit 60 --samples 2,5,10,20,50 --out results/mcmdk-layers

Runs exact HiGHS (1 thread) to its limit, then ``lp-round``, ``core`` and ``sample`` for each N,
recording for every method the time at which its incumbent first came within 1 % of the exact
optimum (or of the best value known, when exact does not finish), its final gap and its
certified gap. Writes ``runs.json`` and ``curve_over_n.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import dlsched
from dlsched.bench import environment
from dlsched.instance.generate import random_mcmdk


def run(inst, method: str, limit: float, **params) -> dict:
    trace = []
    t0 = time.perf_counter()
    res = dlsched.solve(inst, method, time_limit=limit, threads=1,
                        on_incumbent=lambda i: trace.append((i.seconds, i.objective)), **params)
    wall = time.perf_counter() - t0
    if res.objective is not None:
        trace.append((wall, res.objective))
    ok = dlsched.check(inst, res).feasible if res.status.has_solution() else None
    return {"method": method, "params": params, "status": res.status.value, "termination": res.termination,
            "objective": res.objective, "bound": res.bound, "seconds": wall, "checked": ok, "trace": trace,
            "certified_gap": res.gap, "stats": {k: v for k, v in res.stats.items() if isinstance(v, (int, float, str))}}


def time_within(row: dict, ref: float, tol: float) -> float | None:
    hit = [t for t, v in row["trace"] if v >= ref * (1 - tol)]
    return min(hit) if hit else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--configs", type=int, default=200)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exact-limit", type=float, default=600.0)
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--samples", default="2,5,10,20,50")
    ap.add_argument("--out", type=Path, default=Path("results/mcmdk-layers"))
    ap.add_argument("--reuse-exact", type=Path, default=None, help="runs.json of an earlier study: take its exact run")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    inst = random_mcmdk(args.jobs, args.configs, args.rows, args.seed)
    if args.reuse_exact:   # the exact run of an earlier study of the same instance (it takes longest)
        prev = json.loads(args.reuse_exact.read_text())
        assert prev["instance"] == inst.name, (prev["instance"], inst.name)
        rows = [next(r for r in prev["runs"] if r["method"] == "exact")]
    else:
        rows = [run(inst, "exact", args.exact_limit)]
    print(json.dumps({k: rows[-1][k] for k in ("method", "objective", "bound", "seconds", "termination")}), flush=True)
    rows.append(run(inst, "lp-round", args.limit))
    rows.append(run(inst, "core", args.limit))
    for n in [int(s) for s in args.samples.split(",")]:
        rows.append(run(inst, "sample", args.limit, samples=n, seed=args.seed))
        print(json.dumps({k: rows[-1][k] for k in ("method", "params", "objective", "bound", "seconds")}), flush=True)
    exact = rows[0]
    ref = max(r["objective"] for r in rows if r["objective"] is not None)
    optimal = exact["termination"] == "optimal"
    for r in rows:
        r["gap_to_reference"] = None if r["objective"] is None else (ref - r["objective"]) / abs(ref)
        r["time_within_1pct"] = time_within(r, ref, 0.01)
    summary = {"environment": environment(seed=args.seed, time_limit=args.limit, exact_limit=args.exact_limit,
                                          threads=1),
               "instance": inst.name, "jobs": args.jobs, "configs": args.configs, "rows": args.rows,
               "reference": ref, "reference_is_exact_optimum": optimal and ref == exact["objective"],
               "exact_seconds": exact["seconds"], "runs": rows}
    (args.out / "runs.json").write_text(json.dumps(summary, indent=1))
    for r in rows:
        print(f"{r['method']:9s} {str(r['params']):28s} obj {r['objective']}  gap {r['gap_to_reference']:.5f}  "
              f"cert {r['certified_gap']}  t1% {r['time_within_1pct']}  total {r['seconds']:.1f}s  checked {r['checked']}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samp = [r for r in rows if r["method"] == "sample"]
    ns = [r["params"]["samples"] for r in samp]
    fig, ax1 = plt.subplots(figsize=(6.4, 4.2))
    ax1.plot(ns, [100 * r["gap_to_reference"] for r in samp], "o-", label="gap to reference (%)")
    ax1.plot(ns, [100 * (r["certified_gap"] or np.nan) for r in samp], "s--", label="certified gap (%)")
    ax1.set_xscale("log")
    ax1.set_xlabel("N (configurations kept per job)")
    ax1.set_ylabel("gap (%)")
    ax2 = ax1.twinx()
    ax2.plot(ns, [r["seconds"] for r in samp], "^:", color="k", label="seconds")
    ax2.axhline(exact["seconds"], color="grey", lw=0.8)
    ax2.set_ylabel("seconds (grey: exact)")
    ax1.legend(loc="upper center")
    ax1.set_title(f"sample on random_mcmdk({args.jobs}, {args.configs}, {args.rows}, seed={args.seed})")
    fig.tight_layout()
    fig.savefig(args.out / "curve_over_n.png", dpi=120)


if __name__ == "__main__":
    main()

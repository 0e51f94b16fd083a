"""dlsched's methods beside CP-SAT, SCIP and Gurobi on generated classic and scheduling-shaped problems.

    PYTHONPATH=. python benchmarks/peers.py --suite mkp --per-class 3 --limit 10 --json results/peers-mkp.json
    PYTHONPATH=. python benchmarks/peers.py --suite gap --limit 30 --json results/peers-gap.json
    PYTHONPATH=. python benchmarks/peers.py --suite sched --limit 30 --json results/peers-sched.json

Every method gets the same wall-clock limit and one thread; on each instance the methods run
one after the other in an order rotated per instance (so that no method always meets the
machine warm or cold). Instances come from the published generators
(:mod:`dlsched.instance.classic_gen`, :func:`dlsched.instance.generate.random_mcmdk`) with seeds
from ``--seed0`` on (the layers' defaults were chosen on seeds below 100; reported runs use
1000+). Every solution is checked by the independent checker; every bound is checked to lie on
the valid side of every solution found.

Reported per class and method: mean and max gap to the best value any method found, the time
to come within 1% and 0.1% of it (from the incumbent stream; ``-`` if never), and how many
answers were checked feasible. Peers that are not installed are skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

import dlsched
from dlsched.bench import environment
from dlsched.bench.peers import PEERS, available, run_peer
from dlsched.instance.classic_gen import GAP_TYPES, chu_beasley_mkp, gap_instance
from dlsched.instance.generate import random_mcmdk
from dlsched.solvers.tabu import compile_kernel

DLSCHED_METHODS = ("exact", "core", "sample", "hyperplane", "tabu")
#: the decomposition layers (``exact`` is plain HiGHS, one of the references of the target)
LAYERS = ("core", "sample", "hyperplane", "tabu", "lp-round")
#: the open-source references of issue 14's target: the best layer's mean gap no worse than each
REFERENCES = ("exact", "scip", "cpsat")


def instances(suite: str, per_class: int, seed0: int, sizes: list[str] | None):
    """(class label, instance) pairs of one suite."""
    if suite == "mkp":
        alphas = (0.25, 0.5, 0.75)
        for m in (5, 10, 30):
            for n in (100, 250, 500):
                label = f"{m}x{n}"
                if sizes and label not in sizes:
                    continue
                for k in range(per_class):
                    yield label, chu_beasley_mkp(n, m, alphas[k % 3], seed0 + k)
    elif suite == "gap":
        for kind in GAP_TYPES:
            for m, n in ((20, 400), (40, 800), (80, 1600)):
                label = f"{kind}-{m}x{n}"
                if sizes and f"{m}x{n}" not in sizes:
                    continue
                for k in range(per_class):
                    yield label, gap_instance(kind, m, n, seed0 + k)
    elif suite == "sched":
        for jobs, configs, rows in ((2000, 50, 20), (4000, 25, 40)):
            label = f"{jobs}x{configs}x{rows}"
            if sizes and label not in sizes:
                continue
            for k in range(per_class):
                yield label, random_mcmdk(jobs, configs, rows, seed0 + k, tightness=0.3)
    else:
        raise SystemExit(f"unknown suite {suite!r} (mkp, gap, sched)")


def method_spec(spec: str) -> tuple[str, dict]:
    """``name`` or ``name:key=value,key=value`` (a method with parameters, e.g. ``hyperplane:core_share=0.5``)."""
    name, _, rest = spec.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:           # numbers, true/false, lists; anything else (e.g. start=tabu) is a string
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return name, params


def run_dlsched(inst, method: str, limit: float, seed: int) -> dict:
    trace: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    name, params = method_spec(method)
    res = dlsched.solve(inst, name, time_limit=limit, threads=1, seed=seed,
                        on_incumbent=lambda i: trace.append((i.seconds, i.objective)), **params)
    wall = time.perf_counter() - t0
    ok = dlsched.check(inst, res).feasible if res.status.has_solution() else None
    if res.objective is not None:
        trace.append((wall, res.objective))
    return {"method": method, "status": res.status.value, "objective": res.objective, "bound": res.bound,
            "seconds": wall, "trace": trace, "checked": ok, "note": ""}


def run_other(inst, peer: str, limit: float, seed: int) -> dict:
    r = run_peer(peer, inst, limit, seed)
    ok = dlsched.check(inst, r.choice).feasible if r.choice is not None else None
    trace = list(r.trace)
    if r.objective is not None:
        trace.append((r.seconds, r.objective))
    return {"method": peer, "status": r.status, "objective": r.objective, "bound": r.bound, "seconds": r.seconds,
            "trace": trace, "checked": ok, "note": r.note, "version": r.version}


def worse(value: float, ref: float, sense: str) -> float:
    """Relative distance of ``value`` behind ``ref`` (>= 0 when ``ref`` is the best found)."""
    d = (ref - value) if sense == "max" else (value - ref)
    return max(d, 0.0) / max(abs(ref), 1e-9)


def time_to(trace, ref: float, sense: str, tol: float) -> float | None:
    hits = [t for t, v in trace if worse(v, ref, sense) <= tol + 1e-12]
    return min(hits) if hits else None


def bound_violations(rows: list[dict], sense: str) -> list[str]:
    """Bounds on the wrong side of a solution some method found (each is a bug somewhere)."""
    values = [r["objective"] for r in rows if r["objective"] is not None and r["checked"]]
    out = []
    for r in rows:
        b = r["bound"]
        if b is None or not values:
            continue
        best = max(values) if sense == "max" else min(values)
        if (sense == "max" and b < best - 1e-6 * max(1, abs(best))) or (sense == "min" and b > best + 1e-6 * max(1, abs(best))):
            out.append(f"{r['method']}: bound {b} vs solution {best}")
    return out


def summarise(cells: list[dict]) -> list[dict]:
    table: dict[tuple[str, str], list[dict]] = {}
    for c in cells:
        for r in c["runs"]:
            table.setdefault((c["class"], r["method"]), []).append({**r, "gap": r.get("gap"), "sense": c["sense"]})
    out = []
    for (cls, method), rows in table.items():
        gaps = [r["gap"] for r in rows if r["gap"] is not None]
        solved = len(gaps)
        t1 = [r["t1"] for r in rows]
        t01 = [r["t01"] for r in rows]
        out.append({"class": cls, "method": method, "instances": len(rows), "with_solution": solved,
                    "checked": sum(1 for r in rows if r["checked"]),
                    "mean_gap": float(np.mean(gaps)) if solved == len(rows) and gaps else None,
                    "max_gap": float(np.max(gaps)) if solved == len(rows) and gaps else None,
                    "time_to_1pct_median": _median_time(t1),
                    "time_to_0.1pct_median": _median_time(t01),
                    "time_to_1pct_of_bound_median": _median_time([r.get("t1b") for r in rows]),
                    "time_to_0.1pct_of_bound_median": _median_time([r.get("t01b") for r in rows]),
                    "skipped": sum(1 for r in rows if r["status"] == "skipped")})
    return out


def _median_time(ts: list[float | None]) -> float | None:
    """Median over instances with a never-reached target counted as infinite (None if most never reach)."""
    v = sorted(math.inf if t is None else t for t in ts)
    m = v[(len(v) - 1) // 2] if v else math.inf
    return None if math.isinf(m) else float(m)


def _load_note(env: dict) -> str:
    """The machine's 1-minute load average over the run (recorded before and after each instance)."""
    la = env.get("load_average")
    if not la or la.get("mean") is None:
        return ""
    return f"; load average {la['min']:.1f}-{la['max']:.1f} (mean {la['mean']:.1f}) on {env.get('cpus', '?')} cores"


def markdown(summary: list[dict], env: dict) -> str:
    """The summary as a Markdown table: per class, mean / max gap (%) and median time to 0.1% (s)."""
    methods = list(dict.fromkeys(r["method"] for r in summary))
    classes = list(dict.fromkeys(r["class"] for r in summary))
    cell = {(r["class"], r["method"]): r for r in summary}

    def fmt(r):
        if r is None or r["skipped"] == r["instances"]:
            return "skipped"
        if r["mean_gap"] is None:
            return f"{r['with_solution']}/{r['instances']} solved"
        t = [r.get(k) for k in ("time_to_0.1pct_median", "time_to_1pct_of_bound_median", "time_to_0.1pct_of_bound_median")]
        t = ["-" if x is None else f"{x:.1f}" for x in t]
        return f"{100 * r['mean_gap']:.3f} / {100 * r['max_gap']:.3f} / {t[0]} [{t[1]} / {t[2]}]"

    lines = [f"limit {env.get('limit')} s, 1 thread, seeds from {env.get('seed0')}, {env.get('per_class')} per class; "
             "cell: mean gap % / max gap % / median seconds to within 0.1% of the best found "
             "[median seconds to within 1% / 0.1% of the best proven bound]" + _load_note(env),
             "", "| class | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for c in classes:
        lines.append(f"| {c} | " + " | ".join(fmt(cell.get((c, m))) for m in methods) + " |")
    return "\n".join(lines + [""] + target_lines(summary))


def target_lines(summary: list[dict]) -> list[str]:
    """Per class: the best layer's mean gap against each reference that ran (a missing mean gap,
    i.e. some instance without a solution, counts as worse than any gap)."""
    gap = {(r["class"], r["method"]): (math.inf if r["mean_gap"] is None else r["mean_gap"])
           for r in summary if r["skipped"] < r["instances"]}
    classes = list(dict.fromkeys(r["class"] for r in summary))
    out = ["| class | best layer (mean gap %) | target (no worse than " + ", ".join(REFERENCES) + ") |", "|---|---|---|"]
    for c in classes:
        layers = [(v, m) for (k, m), v in gap.items() if k == c and method_spec(m)[0] in LAYERS]
        refs = [(gap[(c, m)], m) for m in REFERENCES if (c, m) in gap]
        if not layers:
            continue
        g, m = min(layers)
        behind = [f"{r} {100 * v:.3f}" for v, r in refs if v < g - 1e-12]
        show = "no solution on some" if math.isinf(g) else f"{100 * g:.3f}"
        out.append(f"| {c} | {m} {show} | " + ("met" if not behind else "missed: " + ", ".join(behind)) + " |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="mkp", choices=("mkp", "gap", "sched"))
    ap.add_argument("--per-class", type=int, default=3)
    ap.add_argument("--seed0", type=int, default=1000)
    ap.add_argument("--limit", type=float, default=None, help="seconds per method (default: 10 mkp, 30 gap/sched)")
    ap.add_argument("--sizes", nargs="*", default=None, help="only these classes, e.g. 10x250 or 80x1600")
    ap.add_argument("--methods", nargs="*", default=list(DLSCHED_METHODS) + list(PEERS),
                    help="dlsched methods (name or name:key=value,...) and peers")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--from-json", type=Path, default=None, help="print the tables of an earlier run's JSON (no solving)")
    ap.add_argument("--markdown", action="store_true", help="print the summary as a Markdown table")
    args = ap.parse_args(argv)
    if args.from_json:
        doc = json.loads(args.from_json.read_text())
        print(markdown(doc["summary"], doc["environment"]) if args.markdown else json.dumps(doc["summary"], indent=1))
        return 0
    limit = args.limit or (10.0 if args.suite == "mkp" else 30.0)
    for m in args.methods:
        if m in PEERS and not available(m):
            print(f"note: {m} skipped ({PEERS[m]} is not installed)", file=sys.stderr)
    if any(m not in PEERS for m in args.methods):
        # numba compiles tabu's kernel once per environment (2-9 s); do it before any timed cell
        # (`tabu` and `hyperplane:start=tabu` use it; loading the cached kernel takes 0.1-0.3 s)
        compile_kernel()
    cells = []
    for idx, (cls, inst) in enumerate(instances(args.suite, args.per_class, args.seed0, args.sizes)):
        order = args.methods[idx % len(args.methods):] + args.methods[:idx % len(args.methods)]
        runs = []
        load_before = os.getloadavg()[0]
        for m in order:
            run = run_other(inst, m, limit, args.seed0) if m in PEERS else run_dlsched(inst, m, limit, args.seed0)
            runs.append(run)
        found = [r["objective"] for r in runs if r["objective"] is not None and r["checked"]]
        best = (max(found) if inst.sense == "max" else min(found)) if found else None
        for r in runs:
            ok = r["objective"] is not None and r["checked"] and best is not None
            r["gap"] = worse(r["objective"], best, inst.sense) if ok else None
            r["t1"] = time_to(r["trace"], best, inst.sense, 0.01) if ok else None
            r["t01"] = time_to(r["trace"], best, inst.sense, 0.001) if ok else None
        bounds = [r["bound"] for r in runs if r["bound"] is not None and abs(r["bound"]) < 1e19]
        best_bound = (min(bounds) if inst.sense == "max" else max(bounds)) if bounds else None
        for r in runs:   # time to within 1% / 0.1% of the best proven bound: a certified distance
            ok = r["objective"] is not None and r["checked"] and best_bound is not None
            r["t1b"] = time_to(r["trace"], best_bound, inst.sense, 0.01) if ok else None
            r["t01b"] = time_to(r["trace"], best_bound, inst.sense, 0.001) if ok else None
        bad = bound_violations(runs, inst.sense)
        cells.append({"class": cls, "instance": inst.name, "sense": inst.sense, "best": best, "best_bound": best_bound,
                      "runs": runs, "load_average": [load_before, os.getloadavg()[0]],
                      "bound_violations": bad, "unchecked": [r["method"] for r in runs if r["checked"] is False]})
        line = "  ".join(f"{r['method']} {100 * r['gap']:.3f}%" if r["gap"] is not None else f"{r['method']} -"
                         for r in sorted(runs, key=lambda r: args.methods.index(r["method"])))
        print(f"[{idx + 1}] {inst.name}: {line}" + (f"  BOUND VIOLATIONS {bad}" if bad else ""), file=sys.stderr, flush=True)
    summary = sorted(summarise(cells), key=lambda r: (r["class"], args.methods.index(r["method"])))
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{args.suite}: gap to the best value found, {limit:g} s, 1 thread")
    for col in ("class", "method", "n", "mean gap %", "max gap %", "t→1% (med)", "t→0.1% (med)", "checked"):
        t.add_column(col)
    fmt = lambda x, k=100, d=3: "-" if x is None else f"{k * x:.{d}f}"  # noqa: E731
    for row in summary:
        t.add_row(row["class"], row["method"], str(row["instances"]), fmt(row["mean_gap"]), fmt(row["max_gap"]),
                  fmt(row["time_to_1pct_median"], 1, 1), fmt(row["time_to_0.1pct_median"], 1, 1),
                  f"{row['checked']}/{row['instances']}" + (" skipped" if row["skipped"] else ""))
    Console(width=160).print(t)
    loads = [x for c in cells for x in c["load_average"]]
    doc = {"environment": environment(suite=args.suite, limit=limit, threads=1, seed0=args.seed0,
                                      per_class=args.per_class,
                                      load_average={"min": min(loads, default=None), "max": max(loads, default=None),
                                                    "mean": float(np.mean(loads)) if loads else None},
                                      peers={p: available(p) for p in PEERS}),
           "summary": summary, "cells": cells}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1, default=str))
    violations = sum(len(c["bound_violations"]) + len(c["unchecked"]) for c in cells)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())

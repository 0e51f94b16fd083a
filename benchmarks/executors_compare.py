"""Same suite, two executors: are the values identical? (issue 13 acceptance)

    python benchmarks/executors_compare.py SUITE --jobs 2 [--max-cells N] --out DIR
        runs SUITE with local processes (--jobs N) into DIR/local.jsonl, then on a Dask
        LocalCluster of N single-threaded workers into DIR/dask.jsonl, timing each, and compares;
    python benchmarks/executors_compare.py --compare A.jsonl B.jsonl
        compares two results files of the same suite.

Compared per cell: status, termination, objective, bound, solver gap, gap to the reference and the
checker's verdict (times aside). Prints one JSON object: cells, identical, the differing cells
with their values, and the wall-clock seconds of each run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

KEYS = ("status", "termination", "objective", "bound", "solver_gap", "gap", "checked")


def compare(a: Path, b: Path) -> dict:
    from dlsched.bench.results import latest, read_results

    (ha, ra), (hb, rb) = read_results(a), read_results(b)
    A = {r["cell"]: r for r in latest(ra)}
    B = {r["cell"]: r for r in latest(rb)}
    both = sorted(set(A) & set(B))
    diff = {c: {k: [A[c].get(k), B[c].get(k)] for k in KEYS if A[c].get(k) != B[c].get(k)} for c in both}
    diff = {c: d for c, d in diff.items() if d}
    return {"files": [str(a), str(b)], "suites": [ha.get("suite"), hb.get("suite")], "git": [ha.get("git"), hb.get("git")],
            "cells": len(both), "only_in_one": len(set(A) ^ set(B)), "identical": len(both) - len(diff), "differ": diff}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", nargs="?")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-cells", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path("results/executors"))
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = ap.parse_args(argv)
    if args.compare:
        print(json.dumps(compare(*args.compare), indent=1))
        return 0
    from dlsched.bench.executors import DaskExecutor, LocalExecutor
    from dlsched.bench.runner import run_suite
    from dlsched.bench.suite import load_suite

    suite = load_suite(args.suite)
    args.out.mkdir(parents=True, exist_ok=True)
    wall = {}
    for name, make in (("local", lambda: LocalExecutor(args.jobs)), ("dask", lambda: DaskExecutor("local", args.jobs))):
        path = args.out / f"{name}.jsonl"
        if path.exists():
            path.unlink()               # a fresh run of each executor, timed from the start
        ex = make()
        t0 = time.perf_counter()
        try:
            run_suite(suite, path, executor=ex, progress=False, max_cells=args.max_cells,
                      command=f"python benchmarks/executors_compare.py {args.suite} --jobs {args.jobs} ({name})")
        finally:
            getattr(ex, "close", lambda: None)()
        wall[name] = time.perf_counter() - t0
    out = compare(args.out / "local.jsonl", args.out / "dask.jsonl")
    out["wall_seconds"] = wall
    print(json.dumps(out, indent=1))
    return 0 if not out["differ"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

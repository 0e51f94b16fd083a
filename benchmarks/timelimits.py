"""Whole-call time limits (docs/contract.md, "Time limit"): worst wall/limit per method.

Every MCMDK method (and backend) runs on three instances at limits 1, 2 and 5 s, one call at a
time, threads=1; the wall time of the whole ``dlsched.solve`` call is measured around it (the
budget starts inside the call, so loading the file is not in these figures: the CLI starts the
budget before loading, and the load time is printed as part of the fixed cost).

Instances: ``random_mcmdk(500, 20, 10, seed=1)`` (500 jobs, 10k columns),
``random_mcmdk(10000, 10, 10, seed=1)`` (100k columns) and OR-Library mknapcb4 problem 0.
Target: wall <= 1.1 x limit + the fixed cost, the cost of steps no limit can interrupt
(process start and imports, loading, and the per-method steps printed in the last column).

    python benchmarks/timelimits.py                       # the full grid (a few minutes)
    python benchmarks/timelimits.py --limits 1 --methods exact:highs core
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import dlsched
from dlsched.data import data_dir
from dlsched.instance.generate import random_mcmdk

METHODS = ("exact:highs", "exact:pyomo", "exact:cvxpy", "core", "sample", "lp-round")


def instances():
    mkp = data_dir() / "orlib" / "mkp" / "mknapcb4.txt"
    t0 = time.perf_counter()
    cb4 = dlsched.load(mkp, problem=0)
    load = time.perf_counter() - t0
    return [("mcmdk-500", random_mcmdk(500, 20, 10, seed=1)), ("mcmdk-100k", random_mcmdk(10000, 10, 10, seed=1)),
            ("mknapcb4-p0", cb4)], load


IMPORTS = {"dlsched": "import dlsched, dlsched.solvers",
           "pyomo": "import pyomo.environ, pyomo.contrib.solver.solvers.highs",
           "cvxpy": "import cvxpy"}


def import_seconds() -> dict[str, float]:
    """Process start + imports (what a CLI call pays before its budget starts), per front end:
    ``dlsched`` alone, and the extra seconds of the Pyomo and CVXPY imports (paid by the first
    call that uses them; the benchmark imports them before timing)."""
    out = {}
    for key, stmt in IMPORTS.items():
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS["dlsched"] + "; " + stmt], check=True)
        out[key] = time.perf_counter() - t0
    return {"dlsched": out["dlsched"], "pyomo": out["pyomo"] - out["dlsched"], "cvxpy": out["cvxpy"] - out["dlsched"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limits", type=float, nargs="+", default=[1.0, 2.0, 5.0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--json", help="also write every run to this file")
    args = ap.parse_args(argv)
    for stmt in IMPORTS.values():     # imports are the fixed cost, measured apart below
        exec(stmt)
    insts, load = instances()
    rows = []
    for spec in args.methods:
        name, _, backend = spec.partition(":")
        params = {"backend": backend} if backend else {}
        for label, inst in insts:
            for limit in args.limits:
                t0 = time.perf_counter()
                res = dlsched.solve(inst, name, time_limit=limit, threads=1, **params)
                wall = time.perf_counter() - t0
                rows.append({"method": spec, "instance": label, "limit": limit, "wall": wall, "ratio": wall / limit,
                             "over": max(0.0, wall - 1.1 * limit), "status": res.status.value,
                             "termination": res.termination, "build": res.build_seconds,
                             "guarded": bool(res.stats.get("guarded", False))})
                print(f"{spec:12s} {label:12s} limit {limit:4.1f}  wall {wall:7.3f}  ratio {wall / limit:5.2f}  "
                      f"{res.status.value:11s} {res.termination}", flush=True)
    imp = import_seconds()
    print("\nworst wall/limit per method (over = wall - 1.1 x limit, the part the fixed cost must cover)")
    print(f"{'method':12s} {'worst ratio':>11s} {'at':>22s} {'max over (s)':>13s}")
    for spec in args.methods:
        mine = [r for r in rows if r["method"] == spec]
        worst = max(mine, key=lambda r: r["ratio"])
        print(f"{spec:12s} {worst['ratio']:11.2f} {worst['instance'] + ' @' + format(worst['limit'], '.0f') + 's':>22s} "
              f"{max(r['over'] for r in mine):13.3f}")
    print(f"\nfixed cost outside any method: process start + imports {imp['dlsched']:.2f} s "
          f"(+{imp['pyomo']:.2f} s for Pyomo, +{imp['cvxpy']:.2f} s for CVXPY on first use); "
          f"loading mknapcb4 p0 {load:.3f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "import_seconds": imp, "load_seconds": load}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Issue 2 acceptance: OR-Library problems with known optima through every front end.

    python benchmarks/orlib_acceptance.py [--time-limit 60] [--json out.json]

mknap1 (7 problems) and every SAC-94 problem with the three backends at gap 0; every GAP
instance with LB = UB in bounds.txt, both senses, on the matrix path. Prints per set: problems,
solved to the reference, checker verdicts, median/max solve seconds, and any that did not finish.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import dlsched
from dlsched.bench import environment
from dlsched.data import data_dir
from dlsched.instance import orlib
from dlsched.result import Status


def run_set(name, cases, backend, time_limit):
    rows = []
    for label, load in cases:
        inst = load()
        res = dlsched.solve(inst, backend=backend, gap=0.0, threads=1, time_limit=time_limit)
        ok = res.status.has_solution() and dlsched.check(inst, res).feasible
        hit = res.status == Status.OPTIMAL and abs(res.objective - inst.reference.objective) <= 1e-6 * max(1, abs(inst.reference.objective))
        rows.append({"problem": label, "status": res.status.value, "objective": res.objective,
                     "reference": inst.reference.objective, "at_reference": hit, "checked": ok,
                     "gap": res.gap, "build_seconds": res.build_seconds, "solve_seconds": res.solve_seconds})
    solve = [r["solve_seconds"] for r in rows]
    return {"set": name, "backend": backend, "problems": len(rows), "at_reference": sum(r["at_reference"] for r in rows),
            "checked": sum(r["checked"] for r in rows), "solve_seconds_median": statistics.median(solve),
            "solve_seconds_max": max(solve), "not_at_reference": [r for r in rows if not r["at_reference"]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--json", default=None, help="write the full results here")
    args = ap.parse_args()
    d = data_dir()
    mknap1 = [(f"mknap1-{k}", lambda k=k: dlsched.load(d / "orlib/mkp/mknap1.txt", problem=k)) for k in range(7)]
    sac94 = [(p.name, lambda p=p: dlsched.load(p)) for p in sorted((d / "orlib/mkp/sac94").glob("*/*.dat"))]
    bounds = orlib.gap_bounds(d / "orlib/gap/bounds.txt")
    gap = [(f"{n}-{s}", lambda n=n, s=s: dlsched.load(d / "orlib/gap" / n, sense=s))
           for (n, s), (lb, ub) in sorted(bounds.items()) if lb == ub]
    t0 = time.time()
    out = []
    for backend in ("highs", "pyomo", "cvxpy"):
        out.append(run_set("mknap1", mknap1, backend, args.time_limit))
        out.append(run_set("sac94", sac94, backend, args.time_limit))
    out.append(run_set("gap (LB=UB, both senses)", gap, "highs", args.time_limit))
    print(f"{'set':28s} {'backend':8s} {'problems':>8s} {'at ref':>7s} {'checked':>7s} {'median s':>9s} {'max s':>7s}")
    for r in out:
        print(f"{r['set']:28s} {r['backend']:8s} {r['problems']:8d} {r['at_reference']:7d} {r['checked']:7d} "
              f"{r['solve_seconds_median']:9.3f} {r['solve_seconds_max']:7.2f}")
        for miss in r["not_at_reference"]:
            print(f"    not at reference: {miss['problem']} status={miss['status']} gap={miss['gap']}")
    print(f"total {time.time() - t0:.1f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"sets": out, "environment": environment(time_limit=args.time_limit, threads=1)}, fh, indent=1)
    return 0 if all(r["at_reference"] == r["problems"] == r["checked"] for r in out) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Build and solve seconds of the three front ends on one large generated MCMDK, side by side.

    python benchmarks/backends.py [--jobs 2000 --configs 50 --rows 20 --seed 0 --time-limit 60 --gap 1e-3]

Each backend builds the same instance and solves it (the LP relaxation, then the MILP with the
same limit, gap and one thread) in the same run; times are printed with their ratio to the
matrix -> highspy path. Build time covers the model object only (not generating the instance),
including CVXPY's canonicalisation, which CVXPY performs inside ``solve()``; Pyomo's translation
into highspy happens inside its solver call and so counts as solve time.
"""

from __future__ import annotations

import argparse
import json
import time

from dlsched.bench import environment
from dlsched.instance.generate import random_mcmdk
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import SolveOptions

BACKENDS = ("highs", "pyomo", "cvxpy")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--configs", type=int, default=50)
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--gap", type=float, default=1e-3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    inst = random_mcmdk(args.jobs, args.configs, args.rows, args.seed)
    gen = time.perf_counter() - t0
    print(f"instance {inst.name}: {inst.n_cols} columns, {inst.n_rows} capacity rows, {inst.A.nnz} nonzeros "
          f"(generated in {gen:.2f} s)")
    # Import the front ends' libraries before timing, so that build time is building.
    for b in BACKENDS:
        solve_core(random_mcmdk(2, 2, 2, 0), SolveOptions(), b)
    rows = []
    for b in BACKENDS:
        lp = solve_core(inst, SolveOptions(threads=1), b, relax=True)
        mip = solve_core(inst, SolveOptions(threads=1, time_limit=args.time_limit, mip_rel_gap=args.gap), b)
        rows.append({"backend": b, "build_seconds": mip.build_seconds, "lp_build_seconds": lp.build_seconds,
                     "lp_solve_seconds": lp.solve_seconds, "lp_value": lp.objective,
                     "milp_solve_seconds": mip.solve_seconds, "milp_status": mip.status.value,
                     "milp_objective": mip.objective, "milp_gap": mip.gap})
        print(f"  {b}: build {mip.build_seconds:.2f} s, LP {lp.solve_seconds:.2f} s, MILP {mip.solve_seconds:.2f} s ({mip.status.value})", flush=True)
    base = rows[0]
    print(f"\n{'backend':8s} {'build s':>9s} {'x matrix':>9s} {'LP s':>8s} {'x matrix':>9s} {'MILP s':>8s} {'x matrix':>9s} {'MILP value':>12s} {'gap':>9s}")
    for r in rows:
        print(f"{r['backend']:8s} {r['build_seconds']:9.3f} {r['build_seconds'] / base['build_seconds']:9.1f} "
              f"{r['lp_solve_seconds']:8.2f} {r['lp_solve_seconds'] / base['lp_solve_seconds']:9.2f} "
              f"{r['milp_solve_seconds']:8.2f} {r['milp_solve_seconds'] / base['milp_solve_seconds']:9.2f} "
              f"{r['milp_objective'] or float('nan'):12.6g} {100 * (r['milp_gap'] or 0):8.4f}%")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "environment": environment(seed=args.seed, time_limit=args.time_limit,
                                                                  gap=args.gap, threads=1)}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where a layer's time goes on one generated Chu–Beasley MKP: its stages, their sizes, seconds and values.

    PYTHONPATH=. python benchmarks/layer_profile.py --m 30 --n 250 --alpha 0.25 --seed 1 --method core --limit 10

Prints the result, the method's statistics (for ``core``: the LP, the lp-round incumbent and one
line per core MILP: kept columns, free jobs, HiGHS's termination, seconds, value) and the last
improving solutions (seconds, value). Use tuning seeds (below 1000): the benchmark reports 1000+.
"""

from __future__ import annotations

import argparse
import json
import time

import dlsched
from dlsched.instance.classic_gen import chu_beasley_mkp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=30)
    ap.add_argument("--n", type=int, default=250)
    ap.add_argument("--alpha", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=1, help="instance seed")
    ap.add_argument("--method", default="core")
    ap.add_argument("--params", default="{}", help="method parameters as JSON")
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--solver-seed", type=int, default=0)
    args = ap.parse_args(argv)
    inst = chu_beasley_mkp(args.n, args.m, args.alpha, args.seed)
    trace: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    res = dlsched.solve(inst, args.method, time_limit=args.limit, threads=1, seed=args.solver_seed,
                        on_incumbent=lambda i: trace.append((round(i.seconds, 2), i.objective)),
                        **json.loads(args.params))
    print(f"{inst.name} {args.method}: objective {res.objective} bound {res.bound} "
          f"wall {time.perf_counter() - t0:.2f} s checked {dlsched.check(inst, res).feasible}")
    for key, value in res.stats.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            print(f"  {key}:")
            for row in value:
                print("    ", row)
        else:
            print(f"  {key}: {value}")
    print("  last improvements (s, value):", trace[-8:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where a layer's time goes on one generated Chu-Beasley MKP: its stages, their sizes, seconds and values.

    python examples/layer_profile.py [--m 30 --n 250 --alpha 0.25 --seed 1 --method core --limit 10]

Prints the result, the method's statistics (for ``core``: the LP, the lp-round incumbent and one
line per core MILP: kept columns, free jobs, HiGHS's termination, seconds, value) and the last
improving solutions (seconds, value). Tune on seeds below 1000: the suites report 1000+.
"""

import argparse
import json

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
    args = ap.parse_args(argv)
    inst = chu_beasley_mkp(args.n, args.m, args.alpha, args.seed)
    stream = []
    res = dlsched.solve(inst, args.method, time_limit=args.limit, threads=1,
                        on_incumbent=lambda i: stream.append((round(i.seconds, 2), i.objective)),
                        **json.loads(args.params))
    print(f"{inst.name} {args.method}: objective {res.objective} bound {res.bound} "
          f"seconds {res.build_seconds + res.solve_seconds:.2f} checked {dlsched.check(inst, res).feasible}")
    for key, value in res.stats.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            print(f"  {key}:", *(f"\n    {row}" for row in value))
        else:
            print(f"  {key}: {value}")
    print("  last improvements (s, value):", stream[-8:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Parameter sweep of ``tabu`` (or ``--method``) on generated Chu–Beasley MKPs, gaps against the best values of earlier peers runs.

    PYTHONPATH=. python benchmarks/tabu_sweep.py --refs /tmp/p21.json --limit 5 \\
        --instances cb-10x250-a0.25-s21 cb-30x250-a0.5-s22 --configs '[{}, {"tenure": 0.02}]'

``--refs``: JSON files written by ``benchmarks/peers.py --json`` (the best value any method found
per instance is the reference; a sweep value above it gives a negative gap). Instances are named
as peers.py names them (``cb-MxN-aALPHA-sSEED``) and rebuilt from the generator. Prints one line
per configuration: the gaps (%) per instance, their mean, and the last run's iterations and
restarts. Use tuning seeds only (below 1000): the benchmark reports 1000+.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import dlsched
from dlsched.instance.classic_gen import chu_beasley_mkp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--refs", type=Path, nargs="+", required=True)
    ap.add_argument("--instances", nargs="+", required=True)
    ap.add_argument("--configs", default="[{}]", help="JSON list of parameter dictionaries")
    ap.add_argument("--limit", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--method", default="tabu", help="the method the configurations are of (e.g. hyperplane)")
    args = ap.parse_args(argv)
    ref: dict[str, float] = {}
    for path in args.refs:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["best"] is not None:
                ref[cell["instance"]] = max(ref.get(cell["instance"], cell["best"]), cell["best"])
    insts = []
    for name in args.instances:
        match = re.fullmatch(r"cb-(\d+)x(\d+)-a([\d.]+)-s(\d+)", name)
        if not match or name not in ref:
            raise SystemExit(f"{name}: not a cb-MxN-aALPHA-sSEED name with a reference in --refs")
        m, n, alpha, seed = match.groups()
        if int(seed) >= 1000:
            raise SystemExit(f"{name}: seeds 1000+ are the reported instances; tune below 1000")
        insts.append(chu_beasley_mkp(int(n), int(m), float(alpha), int(seed)))
    for params in json.loads(args.configs):
        gaps, res = [], None
        for inst in insts:
            res = dlsched.solve(inst, args.method, time_limit=args.limit, threads=1, seed=args.seed, **params)
            assert dlsched.check(inst, res).feasible
            gaps.append(round(100 * (ref[inst.name] - res.objective) / ref[inst.name], 3))
        print(params, gaps, f"mean {sum(gaps) / len(gaps):.3f}", res.stats.get("iterations"),
              res.stats.get("restarts"), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

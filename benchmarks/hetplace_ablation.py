"""Ablation of the hetplace pipeline on the benchmark instances (docs/results.md).

Reads the exact optima from the rows of ``dlsched bench hetplace`` (``results/hetplace/rows.json``)
and re-runs hetplace at N = 8 with one option changed at a time:

    python benchmarks/hetplace_ablation.py [results/hetplace/rows.json]
"""

import json
import sys
import time

import numpy as np

import dlsched
from dlsched.instance.placement_gen import generate

VARIANTS = {
    "default (prices sampler, tangent market, polish)": {},
    "sampler=moves (random moves around the greedy sizing)": {"sampler": "moves"},
    "valuation=throughput": {"valuation": "throughput"},
    "polish=False (market allocation as is)": {"polish": False},
    "noise=0.3": {"noise": 0.3},
}


def main() -> None:
    rows = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "results/hetplace/rows.json"))["rows"]
    rows = [r for r in rows if r["exact_status"] == "optimal"]
    print("| variant (N = 8) | mean gap | max gap | mean s |")
    print("|---|---:|---:|---:|")
    for label, params in VARIANTS.items():
        gaps, secs = [], []
        for r in rows:
            n, seed = r["n_jobs"], r["seed"]
            inst = generate(n, {"k80": n, "p100": n, "v100": n}, seed=seed)
            t = time.perf_counter()
            res = dlsched.solve(inst, method="hetplace", samples=8, seed=seed, **params)
            secs.append(time.perf_counter() - t)
            assert dlsched.check(inst, res).feasible
            gaps.append(res.objective / r["exact_objective"] - 1)
        print(f"| {label} | {100 * np.mean(gaps):.3f}% | {100 * np.max(gaps):.3f}% | {np.mean(secs):.3f} |", flush=True)


if __name__ == "__main__":
    main()

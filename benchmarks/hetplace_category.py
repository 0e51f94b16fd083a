"""Within-category quality: given the optimal sizing (from the exact MCMDK), does the category
step (market + polish + placement) reach the optimum? (docs/results.md)

    python benchmarks/hetplace_category.py [max_n]
"""

import sys

import numpy as np

import dlsched
from dlsched.instance.placement_gen import generate
from dlsched.solvers.hetplace import evaluate_category, market_counts, pack
from dlsched.models.placement import evaluate
from dlsched.instance.placement import GpuAssignment


def main() -> None:
    max_n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    hit = raw_hit = total = 0
    gaps, raw_gaps = [], []
    for n in (8, 16, 32, 64, 128):
        if n > max_n:
            break
        for seed in range(5):
            inst = generate(n, {"k80": n, "p100": n, "v100": n}, seed=seed)
            ex = dlsched.solve(inst, method="exact", threads=1)
            sizes = ex.solution.sizes(n)
            _, val, *_ = evaluate_category(inst, sizes)
            counts, _, _ = market_counts(inst, sizes)
            raw = evaluate(inst, GpuAssignment(pack(inst, counts), np.zeros(inst.n_gpus))).mean()
            total += 1
            gaps.append(val / ex.objective - 1)
            raw_gaps.append(raw / ex.objective - 1)
            hit += gaps[-1] <= 1e-9
            raw_hit += raw_gaps[-1] <= 1e-9
    print(f"instances (n <= {max_n}): {total}")
    print(f"market + polish + placement at the optimal sizing: optimum reached on {hit}, mean gap {100 * np.mean(gaps):.3f}%, max {100 * np.max(gaps):.3f}%")
    print(f"market allocation as is (placed):                   optimum reached on {raw_hit}, mean gap {100 * np.mean(raw_gaps):.3f}%, max {100 * np.max(raw_gaps):.3f}%")


if __name__ == "__main__":
    main()

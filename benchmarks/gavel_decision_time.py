"""Per-decision time of max-min fairness with throughputs: ours (HiGHS) against Gavel's own policy.

    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data python benchmarks/gavel_decision_time.py \\
        [--jobs 64,256,1024,2048] [--repeat 3] [--perturb EPS] [--gavel DIR]

One decision: n jobs waiting, drawn (seeded) from Gavel's measured (job type, scale factor) entries
on V100, P100 and K80, on a cluster of n/4 GPUs of each type (Gavel's entries are about 80 (job
type, scale factor) pairs, so many jobs share a row and ours solves one LP row per class of equal
jobs, ``gavel_lp.classes``; ``--perturb EPS`` multiplies every throughput by a seeded factor in
[1 - EPS, 1 + EPS], so that no two jobs are equal and every job is a class). Ours:
``gavel_lp.max_min_fairness`` on the matrix the policy builds: below 128 classes the max-min LP and
then the second LP that uses what is left; from 128 classes on through the LP's prices
(``gavel_prices.max_min_by_prices``: a coarse LP, a small exact LP, a bound that proves the optimum
and shows whether the second LP could add anything); both timed, and with ``pareto=False`` (the
max-min value alone). Gavel's: ``MaxMinFairnessPolicyWithPerf(solver="ECOS").get_allocation`` from a
checkout of its ``scheduler/`` folder (``--gavel DIR`` or ``$GAVEL_DIR``; run this script with an
interpreter that has Gavel's dependencies, cvxpy with ECOS); skipped with a note without one.
CPU seconds (``time.process_time``, the best of ``--repeat``), one process, side by side; and the
allocation value of both, :math:`\\min_j \\sum_k W_{jk} X_{jk}` recomputed from each X by the same code.
Figures: docs/results/gavel.md, "Decision time".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from dlsched.perf.throughputs import load_gavel
from dlsched.policies import gavel_lp

GPU_TYPES = ("v100", "p100", "k80")


def instance(n: int, seed: int, perturb: float = 0.0):
    """(T (n, 3) steps/s, scale factors (n,), capacities (3,)) drawn from Gavel's measured entries,
    each throughput times a factor in [1 - perturb, 1 + perturb]."""
    table = load_gavel()
    keys = sorted({(jt, sf) for (jt, g, sf) in table.steps if all((jt, t, sf) in table.steps for t in GPU_TYPES)})
    rng = np.random.default_rng(seed)
    pick = [keys[i] for i in rng.integers(0, len(keys), n)]
    T = np.array([[table.steps[(jt, t, sf)] for t in GPU_TYPES] for jt, sf in pick])
    sf = np.array([sf for _, sf in pick], dtype=float)
    cap = np.full(3, max(n // 4, int(sf.max())), dtype=float)
    if perturb:
        T = T * rng.uniform(1 - perturb, 1 + perturb, T.shape)
    return T, sf, cap


def weights(T, z, cap):
    share = (T * cap).sum(axis=1) / cap.sum()
    return z * T / share[:, None]


def cpu(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", default="64,256,1024,2048")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--perturb", type=float, default=0.0, help="throughputs times a factor in [1-EPS, 1+EPS]: no two jobs equal")
    ap.add_argument("--gavel", default=os.environ.get("GAVEL_DIR"), help="a checkout of Gavel's scheduler/ folder")
    args = ap.parse_args(argv)
    gavel = None
    if args.gavel and (Path(args.gavel) / "policies" / "max_min_fairness.py").is_file():
        sys.path[:0] = [str(Path(args.gavel) / "policies"), str(Path(args.gavel))]
        from max_min_fairness import MaxMinFairnessPolicyWithPerf
        gavel = MaxMinFairnessPolicyWithPerf(solver="ECOS")
    else:
        print("note: no Gavel checkout (--gavel / $GAVEL_DIR): only our times are reported")
    print(f"{'jobs':>5s} {'ours s (both LPs)':>18s} {'ours s (max-min only)':>22s} {'Gavel s':>9s} "
          f"{'ours value':>11s} {'Gavel value':>12s} {'rel. diff':>9s}")
    for n in [int(x) for x in args.jobs.split(",")]:
        T, sf, cap = instance(n, args.seed, args.perturb)
        z = np.repeat(sf[:, None], 3, axis=1)
        W = weights(T, z, cap)
        t_both, a = cpu(lambda: gavel_lp.max_min_fairness(W, z, cap), args.repeat)
        t_one, _ = cpu(lambda: gavel_lp.max_min_fairness(W, z, cap, pareto=False), args.repeat)
        ours = float((W * a.X).sum(axis=1).min())
        row = {"jobs": n, "ours_seconds": t_both, "ours_max_min_only_seconds": t_one, "ours_value": ours}
        if gavel is not None:
            thr = {j: {t: float(T[j, k]) for k, t in enumerate(GPU_TYPES)} for j in range(n)}
            sfd = {j: int(sf[j]) for j in range(n)}
            t_g, alloc = cpu(lambda: gavel.get_allocation(thr, sfd, {j: 1.0 for j in range(n)},
                                                          {t: int(c) for t, c in zip(GPU_TYPES, cap)}), args.repeat)
            Xg = np.array([[alloc[j][t] for t in GPU_TYPES] for j in range(n)])
            row.update(gavel_seconds=t_g, gavel_value=float((W * Xg).sum(axis=1).min()))
        g = row.get("gavel_value")
        print(f"{n:5d} {t_both:18.4f} {t_one:22.4f} {row.get('gavel_seconds', float('nan')):9.4f} {ours:11.6g} "
              f"{g if g is not None else float('nan'):12.6g} {abs(ours - g) / g if g else float('nan'):9.2e}")
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does numba earn its place in ``tabu``? The kernel's iterations against the same move evaluation
in numpy, and the kernel's cold-compile and cache-load cost, side by side on one generated MKP.

    PYTHONPATH=. python benchmarks/tabu_speed.py --m 30 --n 250 --alpha 0.25 --seed 1

One "evaluation" is what the kernel does per iteration before choosing a move: the penalised
change of every one-job move and every swap of the search core (dlsched/solvers/tabu.py), here
at the lp-round incumbent. numpy evaluates it with whole-array broadcasting (no Python loop
over moves); the kernel with its compiled loops (including its early stop of a move's row sum).
The compile and load times are measured in fresh processes with an empty and a filled
``NUMBA_CACHE_DIR``. Use tuning seeds (below 1000).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

CHILD = """
import time, numpy as np
t0 = time.perf_counter()
from dlsched.solvers.tabu_kernel import search
t1 = time.perf_counter()
z = np.zeros(1); i = np.zeros(1, dtype=np.int64); b = np.ones(1, dtype=bool)
search(np.zeros((1, 1)), z, np.array([0, 1]), i, np.ones(1), z, i, i, b, b, np.full(1, -1), z.copy(), np.ones(1),
       np.ones(1), i.copy(), i.copy(), np.zeros(3), 1, 1, 2, 1.1, 10.0, True, 0)
print(f"{t1 - t0:.3f} {time.perf_counter() - t1:.3f}")
"""


def child_times(cache_dir: str) -> tuple[float, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    a, b = out.stdout.split()
    return float(a), float(b)


def numpy_evaluation(Ad, g, cap, lam, cur, w, jobs_core, cols_core):
    """Penalised change of every one-job move (MKP: add or drop) and every swap, by broadcasting."""
    def penalty(W):
        return (lam * np.maximum(W - cap, 0.0)).sum(axis=-1)

    pen = penalty(w)
    chosen = jobs_core[cur[jobs_core] >= 0]
    free_cols = cols_core[cur[cols_core] < 0]           # MKP: column c belongs to job c
    drop = -g[chosen] - (penalty(w - Ad[chosen]) - pen)
    add = g[free_cols] - (penalty(w + Ad[free_cols]) - pen)
    W = w - Ad[chosen][:, None, :] + Ad[free_cols][None, :, :]
    swap = g[free_cols][None, :] - g[chosen][:, None] - (penalty(W) - pen)
    return max(drop.max(initial=-np.inf), add.max(initial=-np.inf), swap.max(initial=-np.inf))


def main(argv=None) -> int:
    import dlsched
    from dlsched.instance.classic_gen import chu_beasley_mkp
    from dlsched.solvers.lp import gain

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=30)
    ap.add_argument("--n", type=int, default=250)
    ap.add_argument("--alpha", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--core-share", type=float, default=0.35)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as d:
        cold = child_times(d)
        warm = child_times(d)
    print(f"numba import {cold[0]:.3f} s; first call: cold compile {cold[1]:.3f} s, from the cache {warm[1]:.3f} s "
          f"(import {warm[0]:.3f} s)")

    inst = chu_beasley_mkp(args.n, args.m, args.alpha, args.seed)
    start = dlsched.solve(inst, "lp-round", time_limit=2, threads=1)
    from dlsched.solvers.core import job_slack
    from dlsched.solvers.lp import solve_lp
    from dlsched.solvers.tabu_kernel import search

    lp = solve_lp(inst)
    Ad = np.ascontiguousarray(inst.A.T.toarray())
    g = gain(inst)
    cap = inst.b.astype(float)
    tol = 1e-9 * np.maximum(1.0, cap)
    cur = np.where(np.asarray(start.solution) >= 0, np.arange(inst.n_jobs), -1).astype(np.int64)
    w = Ad[cur[cur >= 0]].sum(axis=0)
    lam = np.maximum(lp.u, 1e-3)
    core = np.sort(np.argsort(job_slack(inst, lp), kind="stable")[:int(np.ceil(args.core_share * inst.n_jobs))])
    allowed = np.zeros(inst.n_cols, dtype=bool)
    allowed[core] = True
    none_ok = allowed.copy()

    t = time.perf_counter()
    for _ in range(args.repeat):
        numpy_evaluation(Ad, g, cap, lam, cur, w, core, core)
    per_numpy = (time.perf_counter() - t) / args.repeat

    state = np.array([0.0, float(g[cur[cur >= 0]].sum()), -np.inf])
    args_k = (Ad, g, inst.job_ptr.astype(np.int64), inst.col_job, cap, tol, core, core, allowed, none_ok, cur.copy(),
              w.copy(), lam.copy(), lam.copy(), np.zeros(inst.n_jobs, dtype=np.int64), cur.copy(), state)
    search(*args_k, 1, 2, 4, 1.1, 1e4, True, 0)
    n = 20 * args.repeat
    t = time.perf_counter()
    search(*args_k, n, 2, 4, 1.1, 1e4, True, 1)
    per_kernel = (time.perf_counter() - t) / n
    print(f"{inst.name}, core {core.size} jobs: numpy {1e6 * per_numpy:.0f} us per evaluation, "
          f"kernel {1e6 * per_kernel:.0f} us per iteration (evaluation + move + weights): {per_numpy / per_kernel:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

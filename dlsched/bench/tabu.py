"""Does numba earn its place in ``tabu``? The kernel's iterations against the same move evaluation
in numpy, and the kernel's cold-compile and cache-load cost, side by side on one generated MKP
(study task ``tabu.speed``, suite ``tabu-speed``).

One "evaluation" is what the kernel does per iteration before choosing a move: the penalised
change of every one-job move and every swap of the search core (dlsched/solvers/tabu.py), here
at the lp-round incumbent. numpy evaluates it with whole-array broadcasting (no Python loop
over moves); the kernel with its compiled loops (including its early stop of a move's row sum).
The compile and load times are measured in fresh processes with an empty and a filled
``NUMBA_CACHE_DIR``. Use tuning seeds (below 1000).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from dlsched import api
from dlsched.instance.classic_gen import chu_beasley_mkp
from dlsched.solvers.core import job_slack
from dlsched.solvers.lp import gain, solve_lp
from dlsched.solvers.tabu_kernel import search

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


def speed_task(m: int = 30, n: int = 250, alpha: float = 0.25, seed: int = 1, core_share: float = 0.35,
               repeat: int = 200) -> dict:
    """Seconds of numba's import, cold compile and cache load, and microseconds per numpy evaluation
    and per kernel iteration (evaluation + move + weights) on ``chu_beasley_mkp(n, m, alpha, seed)``."""
    with tempfile.TemporaryDirectory() as d:
        cold = child_times(d)
        warm = child_times(d)
    inst = chu_beasley_mkp(n, m, alpha, seed)
    start = api.solve(inst, "lp-round", time_limit=2, threads=1)
    lp = solve_lp(inst)
    Ad = np.ascontiguousarray(inst.A.T.toarray())
    g = gain(inst)
    cap = inst.b.astype(float)
    tol = 1e-9 * np.maximum(1.0, cap)
    cur = np.where(np.asarray(start.solution) >= 0, np.arange(inst.n_jobs), -1).astype(np.int64)
    w = Ad[cur[cur >= 0]].sum(axis=0)
    lam = np.maximum(lp.u, 1e-3)
    core = np.sort(np.argsort(job_slack(inst, lp), kind="stable")[:int(np.ceil(core_share * inst.n_jobs))])
    allowed = np.zeros(inst.n_cols, dtype=bool)
    allowed[core] = True
    none_ok = allowed.copy()

    t = time.perf_counter()
    for _ in range(repeat):
        numpy_evaluation(Ad, g, cap, lam, cur, w, core, core)
    per_numpy = (time.perf_counter() - t) / repeat

    state = np.array([0.0, float(g[cur[cur >= 0]].sum()), -np.inf])
    args_k = (Ad, g, inst.job_ptr.astype(np.int64), inst.col_job, cap, tol, core, core, allowed, none_ok, cur.copy(),
              w.copy(), lam.copy(), lam.copy(), np.zeros(inst.n_jobs, dtype=np.int64), cur.copy(), state)
    search(*args_k, 1, 2, 4, 1.1, 1e4, True, 0)
    iterations = 20 * repeat
    t = time.perf_counter()
    search(*args_k, iterations, 2, 4, 1.1, 1e4, True, 1)
    per_kernel = (time.perf_counter() - t) / iterations
    return {"instance": inst.name, "core_jobs": int(core.size), "numba_import_seconds": cold[0],
            "cold_compile_seconds": cold[1], "cache_load_seconds": warm[1],
            "numpy_us_per_evaluation": 1e6 * per_numpy, "kernel_us_per_iteration": 1e6 * per_kernel,
            "kernel_speedup": per_numpy / per_kernel}

r"""The compiled inner loop of the ``tabu`` method (MODELS.md §1): one-job moves on the MCMDK
evaluated against the usage vector, under a penalty for overused capacity.

Imported only when ``tabu`` runs (numba's import and the cache load are then part of the call's
budget; :mod:`dlsched.solvers.tabu` measures and reports them). ``cache=True`` keeps the compiled
code on disk, so only the first call in an environment pays the compilation.

State (all arrays are changed in place, so that a search goes on across calls):

* ``cur[j]``: the column of job j, ``-1`` for none; ``w = Σ_j a_{cur[j]}`` its capacity use;
* ``lam[k] >= lam_floor[k]``: the penalty weight of row k, in gain per unit of overuse;
* ``tabu_until[j]``: the iteration until which job j may not move (unless the move gives a
  feasible solution better than the best, the aspiration rule);
* ``state = [iteration, gain of cur, best feasible gain]``; ``best[:]`` the best feasible ``cur``.

Only the jobs in ``jobs`` move, and only to the columns in ``cols`` (``allowed[c]``) or to none
(``none_ok[j]``). One iteration evaluates every move "job j takes column c (or none)" in
:math:`O(\text{columns} \times m)`:

.. math:: \Delta f = g_c - g_{c_0} - \sum_k \lambda_k \bigl([w_k - a_{c_0,k} + a_{c,k} - b_k]^+ - [w_k - b_k]^+\bigr),

makes the best admissible one (ties broken at random), marks the job tabu for a tenure drawn in
``[tenure_lo, tenure_hi]``, and adapts the weights (strategic oscillation): every overused row's
weight grows by the factor ``lam_up`` (at most ``lam_cap`` times its floor); once the solution
is feasible the weights shrink by the same factor towards their floors.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def penalty(w, cap, tol, lam):
    """Σ_k λ_k [w_k − b_k]⁺ (overuse below ``tol`` counts as none)."""
    p = 0.0
    for k in range(w.size):
        d = w[k] - cap[k]
        if d > tol[k]:
            p += lam[k] * d
    return p


@nb.njit(cache=True)
def search(Ad, g, job_ptr, col_job, cap, tol, jobs, cols, allowed, none_ok, cur, w, lam, lam_floor, tabu_until, best, state,
           n_iter, tenure_lo, tenure_hi, lam_up, lam_cap, swaps, seed):
    """Run ``n_iter`` iterations (module docstring); return True when ``best`` improved. ``seed >= 0``
    seeds numba's generator; ``-1`` continues its stream (a search cut into chunks then draws the
    same numbers however the chunks fall)."""
    if seed >= 0:
        np.random.seed(seed)
    m = cap.size
    it = int(state[0])
    gnow = state[1]
    gbest = state[2]
    improved = False
    wi = np.empty(m)
    for _ in range(n_iter):
        pen = penalty(w, cap, tol, lam)
        top = -np.inf
        bj = -1
        bc = -1
        ties = 0
        for j in jobs:
            c0 = cur[j]
            g0 = g[c0] if c0 >= 0 else 0.0
            taboo = tabu_until[j] > it
            for c in range(job_ptr[j] - 1, job_ptr[j + 1]):
                if c < job_ptr[j]:             # the empty choice
                    if c0 < 0 or not none_ok[j]:
                        continue
                    cc = -1
                elif c == c0 or not allowed[c]:
                    continue
                else:
                    cc = c
                dg = (g[cc] if cc >= 0 else 0.0) - g0
                limit = dg + pen - top + 1e-12       # as for swaps below
                p = 0.0
                feasible = True
                for k in range(m):
                    v = w[k]
                    if cc >= 0:
                        v += Ad[cc, k]
                    if c0 >= 0:
                        v -= Ad[c0, k]
                    d = v - cap[k]
                    if d > tol[k]:
                        p += lam[k] * d
                        feasible = False
                        if p > limit:
                            break
                if p > limit:
                    continue
                if taboo and not (feasible and gnow + dg > gbest + 1e-9):
                    continue
                delta = dg - (p - pen)
                if delta > top + 1e-12:
                    top = delta
                    bj = j
                    bc = cc
                    ties = 1
                elif delta >= top - 1e-12:
                    ties += 1
                    if np.random.randint(ties) == 0:
                        bj = j
                        bc = cc
        bi = -1
        if swaps:
            # swap: chosen job i (droppable) to none, job j without a configuration to column c.
            # The penalty sum and the ranking repeat those of the one-job moves on purpose: a
            # shared helper measured 1.8-2x slower per iteration (the results log, docs/results/index.md, issue 14)
            for i in jobs:
                ci = cur[i]
                if ci < 0 or not none_ok[i]:
                    continue
                ti = tabu_until[i] > it
                for k in range(m):
                    wi[k] = w[k] - Ad[ci, k]
                for c in cols:
                    j = col_job[c]
                    if cur[j] >= 0:
                        continue
                    dg = g[c] - g[ci]
                    # the penalty only grows over the rows: stop once the move cannot reach the best
                    # (it is then infeasible, so aspiration cannot admit it either)
                    limit = dg + pen - top + 1e-12
                    p = 0.0
                    feasible = True
                    for k in range(m):
                        d = wi[k] + Ad[c, k] - cap[k]
                        if d > tol[k]:
                            p += lam[k] * d
                            feasible = False
                            if p > limit:
                                break
                    if p > limit:
                        continue
                    if (ti or tabu_until[j] > it) and not (feasible and gnow + dg > gbest + 1e-9):
                        continue
                    delta = dg - (p - pen)
                    if delta > top + 1e-12:
                        top = delta
                        bi = i
                        bj = j
                        bc = c
                        ties = 1
                    elif delta >= top - 1e-12:
                        ties += 1
                        if np.random.randint(ties) == 0:
                            bi = i
                            bj = j
                            bc = c
        it += 1
        if bi >= 0:                            # the drop half of a swap; the add half follows
            ci = cur[bi]
            for k in range(m):
                w[k] -= Ad[ci, k]
            gnow -= g[ci]
            cur[bi] = -1
            tabu_until[bi] = it + tenure_lo + np.random.randint(tenure_hi - tenure_lo + 1)
        if bj < 0:                             # every move is tabu: wait for one to be released
            continue
        c0 = cur[bj]
        for k in range(m):
            if bc >= 0:
                w[k] += Ad[bc, k]
            if c0 >= 0:
                w[k] -= Ad[c0, k]
        gnow += (g[bc] if bc >= 0 else 0.0) - (g[c0] if c0 >= 0 else 0.0)
        cur[bj] = bc
        tabu_until[bj] = it + tenure_lo + np.random.randint(tenure_hi - tenure_lo + 1)
        feasible = True
        for k in range(m):
            if w[k] - cap[k] > tol[k]:
                feasible = False
                lam[k] = min(lam[k] * lam_up, lam_cap * lam_floor[k])
        if feasible:
            for k in range(m):
                lam[k] = max(lam_floor[k], lam[k] / lam_up)
            if gnow > gbest + 1e-9:
                gbest = gnow
                best[:] = cur
                improved = True
    state[0] = it
    state[1] = gnow
    state[2] = gbest
    return improved

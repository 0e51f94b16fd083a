r"""An MCMDK with one capacity row of whole numbers solved exactly by dynamic programming, with a
certificate that its optimum is unique (MODELS.md §1, the case m = 1 of the multiple-choice knapsack).

With one resource row :math:`a_{o} \in \mathbb{Z}_{\ge 0}`, :math:`b \in \mathbb{Z}`, one column
per job (``exactly_one``, minimisation) the optimum is the classic recursion over the jobs

.. math::

    f_j(c) = \min_{o \in O_j,\ a_o \le c} f_{j-1}(c - a_o) + v_o, \qquad f_0(c) = 0,
    \qquad \text{OPT} = f_n(b),

:math:`f_j(c)` the least cost of jobs 1..j using at most c. The same recursion over the two best
*distinct* choices of every cell (:math:`g_j(c)`: the second least; the choices through different
columns of job j are distinct, so the two best of a cell are among the two best through each
column) gives the runner-up :math:`g_n(b)`. When :math:`g_n(b) - f_n(b)` exceeds a MIP solver's
absolute tolerance, the optimum is unique, and so is the answer of any exact solve: the DP's
answer is the one HiGHS would return (MIP gap 0), in :math:`O(\text{columns} \cdot b)` array steps
instead of a branch and bound. A rigid job has one column besides "defer", so an SMD decision on a
trace of rigid jobs (:mod:`dlsched.solvers.smd`) is of this kind.
"""

from __future__ import annotations

import numpy as np

from dlsched.instance.core import MCMDK

#: the largest table (columns x (capacity + 1)) the DP builds; beyond it the caller solves otherwise
MAX_CELLS = 4_000_000
#: a runner-up closer to the optimum than this (absolute, plus 1e-9 relative) is a tie: HiGHS's
#: ``mip_abs_gap`` is 1e-6, so it might return either
TIE = 1e-6


def one_row(core: MCMDK) -> tuple[int, np.ndarray, int] | None:
    """(row, each column's whole-number use of it, its whole-number capacity) when ``core`` is a
    minimisation with exactly one column per job whose only used row has whole-number uses and
    capacity, and the table fits :data:`MAX_CELLS`; None otherwise."""
    if core.choose != "exactly_one" or core.sense != "min" or core.n_jobs == 0 or np.any(np.diff(core.job_ptr) < 1):
        return None
    A = core.A
    used = np.flatnonzero(np.diff(A.indptr) > 0)
    if used.size != 1:
        return None
    r = int(used[0])
    data = A.data[A.indptr[r]:A.indptr[r + 1]]
    cap = float(core.b[r])
    if not (np.all(data == np.round(data)) and cap == round(cap)):
        return None
    cap_i = int(cap)
    if core.n_cols * (cap_i + 1) > MAX_CELLS:
        return None
    use = np.zeros(core.n_cols, dtype=np.int64)
    use[A.indices[A.indptr[r]:A.indptr[r + 1]]] = data.astype(np.int64)
    return r, use, cap_i


def solve_unique(core: MCMDK, cost: np.ndarray, use: np.ndarray, cap: int) -> tuple[float, np.ndarray] | None:
    """(optimum, choice per job) of ``core`` with costs ``cost`` and the one row's ``use``, ``cap``
    (:func:`one_row`) when the optimum is unique by more than :data:`TIE`; None when a runner-up
    is as good or within it (then another solver must break the tie as it always did)."""
    ptr = core.job_ptr
    n = core.n_jobs
    inf = np.inf
    f = np.zeros(cap + 1)
    g = np.full(cap + 1, inf)
    width = int(np.diff(ptr).max())
    arg = np.empty((n, cap + 1), dtype=np.int16 if width < 2 ** 15 else np.int32)
    cells = np.arange(cap + 1)
    cand_f = np.empty((width, cap + 1))
    cand_g = np.empty((width, cap + 1))
    for j in range(n):
        lo, hi = int(ptr[j]), int(ptr[j + 1])
        k = hi - lo
        cf, cg = cand_f[:k], cand_g[:k]
        for o in range(k):
            a, v = int(use[lo + o]), float(cost[lo + o])
            if a > cap:
                cf[o] = inf
                cg[o] = inf
                continue
            cf[o, :a] = inf
            cg[o, :a] = inf
            np.add(f[:cap + 1 - a], v, out=cf[o, a:])
            np.add(g[:cap + 1 - a], v, out=cg[o, a:])
        best = np.argmin(cf, axis=0)
        arg[j] = best
        f = cf[best, cells]
        cf[best, cells] = inf
        g = np.minimum(cf.min(axis=0), cg.min(axis=0))
    opt = float(f[cap])
    if not np.isfinite(opt) or g[cap] - opt <= TIE + 1e-12 * abs(opt):
        return None
    choice = np.empty(n, dtype=np.int64)
    c = cap
    for j in range(n - 1, -1, -1):
        o = int(arg[j, c])
        choice[j] = o
        c -= int(use[ptr[j] + o])
    return opt, choice

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
    return _unique(core.job_ptr, cost, use, cap)


def solve_unique_classes(core: MCMDK, cost: np.ndarray, use: np.ndarray, cap: int) -> tuple[float, np.ndarray] | None:
    r"""(optimum, choice per job) when the optimum is unique up to exchanging identical jobs, the
    ties :func:`solve_unique` leaves: jobs with the same uses and the same costs less their first
    column's cost form a class (exchanging their columns changes nothing), and a class of m jobs
    of two columns each (a rigid job: defer or run) is one item of m + 1 columns, k = 0..m of its
    jobs on the second column, at cost :math:`\sum_j v_{j0} + k (v_1 - v_0)` and use
    :math:`(m - k) a_0 + k a_1`. When the recursion over the classes has a unique optimum
    (by more than :data:`TIE`), every optimum of the jobs takes the same k of each class; the k
    taken are the last k jobs of the class in the core's order, as HiGHS 1.x chose in every such
    tie seen (74 of 74 on ITP cluster 04's first 1,000 jobs; the same decisions: digests). None
    when no class has two jobs, when a class of several jobs has other than two columns, or when
    the tie remains between classes."""
    ptr = core.job_ptr
    n, width = core.n_jobs, np.diff(ptr)
    W = int(width.max())
    job = np.repeat(np.arange(n), width)
    at = np.arange(ptr[-1]) - ptr[job]
    sig = np.full((n, 1 + 2 * W), np.inf)                    # (columns, costs, uses), padded alike
    sig[:, 0] = width
    sig[job, 1 + at], sig[job, 1 + W + at] = cost - cost[ptr[job]], use
    _, first, cls, count = np.unique(sig, axis=0, return_index=True, return_inverse=True, return_counts=True)
    cls = cls.reshape(-1)
    many = count > 1
    if not many.any() or np.any(width[first[many]] != 2):
        return None
    keep = np.argsort(first, kind="stable")                  # classes in the order of their first job
    first, count, many = first[keep], count[keep], many[keep]
    cls = np.argsort(keep)[cls]
    cw = np.where(many, count + 1, width[first])
    cptr = np.concatenate([[0], np.cumsum(cw)]).astype(np.int64)
    seg = np.repeat(np.arange(first.size), cw)
    k = np.arange(cptr[-1]) - cptr[seg]
    base = ptr[first[seg]]
    m = count[seg]
    one = ~many[seg]
    col = base + np.where(one, k, 0)
    base_sum = np.bincount(cls, weights=cost[ptr[:-1]], minlength=first.size)
    step = cost[np.minimum(base + 1, ptr[-1] - 1)] - cost[base]
    ccost = np.where(one, cost[col], base_sum[seg] + k * step)
    cuse = np.where(one, use[col], (m - k) * use[base] + k * use[np.minimum(base + 1, ptr[-1] - 1)])
    if cptr[-1] * (cap + 1) > MAX_CELLS:
        return None
    out = _unique(cptr, ccost, cuse.astype(np.int64), cap)
    if out is None:
        return None
    opt, cchoice = out
    order = np.argsort(cls, kind="stable")                   # jobs by class, in core order within one
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(np.cumsum(count) - count, count)
    taken = cchoice[cls]
    choice = np.where(many[cls], (rank >= count[cls] - taken).astype(np.int64), taken)
    return opt, choice


def _unique(ptr: np.ndarray, cost: np.ndarray, use: np.ndarray, cap: int) -> tuple[float, np.ndarray] | None:
    """:func:`solve_unique` over the jobs of ``ptr``."""
    n = ptr.size - 1
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

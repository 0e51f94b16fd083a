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
#: the units in which a row's uses may be whole numbers: ones, and thousandths (OpenB's GPU shares,
#: ``gpu_milli``); a use is taken as whole thousandths when within ``UNIT_SLACK`` thousandths of one
#: (3 x 0.46 is 1.3800000000000001). Over 10^5 jobs a sum is then off by under 0.01 of a unit, so
#: a choice that fits the row fits in units; the other way, the caller checks a choice against the
#: row itself (:data:`ROW_TOLERANCE`)
SCALES = (1, 1000)
UNIT_SLACK = 1e-7
#: HiGHS's primal feasibility tolerance: a choice whose row sum exceeds the capacity by more is one
#: HiGHS would not return
ROW_TOLERANCE = 1e-7
#: a runner-up closer to the optimum than this (absolute, plus 1e-9 relative) is a tie: HiGHS's
#: ``mip_abs_gap`` is 1e-6, so it might return either
TIE = 1e-6


def one_row(core: MCMDK) -> tuple[int, np.ndarray, int] | None:
    """(row, each column's whole-number use of it, its whole-number capacity) when ``core`` is a
    minimisation with exactly one column per job and one row that can bind: the only row used, or
    the only one whose uses with every job at its most demanding column exceed its capacity (the
    others hold whatever is chosen). Its uses and capacity are whole numbers of one of
    :data:`SCALES` (then counted in that unit); None otherwise."""
    if core.choose != "exactly_one" or core.sense != "min" or core.n_jobs == 0 or np.any(np.diff(core.job_ptr) < 1):
        return None
    A = core.A
    used = np.flatnonzero(np.diff(A.indptr) > 0)
    if used.size != 1:
        most = np.maximum.reduceat(A[used].toarray(), core.job_ptr[:-1], axis=1).sum(axis=1) if used.size else used
        used = used[most > core.b[used]]
        if used.size != 1:
            return None
    r = int(used[0])
    data = A.data[A.indptr[r]:A.indptr[r + 1]]
    cap = float(core.b[r])
    for q in SCALES:
        units = np.round(data * q)
        if q == 1 and np.all(data == units) and cap == round(cap):
            break
        if q > 1 and np.all(np.abs(data * q - units) <= UNIT_SLACK) and abs(cap * q - round(cap * q)) <= UNIT_SLACK:
            break
    else:
        return None
    use = np.zeros(core.n_cols, dtype=np.int64)
    use[A.indices[A.indptr[r]:A.indptr[r + 1]]] = units.astype(np.int64)
    return r, use, int(round(cap * q))


def solve_unique(core: MCMDK, cost: np.ndarray, use: np.ndarray, cap: int) -> tuple[float, np.ndarray] | None:
    """(optimum, choice per job) of ``core`` with costs ``cost`` and the one row's ``use``, ``cap``
    (:func:`one_row`) when the optimum is unique by more than :data:`TIE`; None when a runner-up
    is as good or within it (then another solver must break the tie as it always did)."""
    if core.n_cols * (cap + 1) > MAX_CELLS:
        return None
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


def solve_reduced(core: MCMDK, cost: np.ndarray, use: np.ndarray, cap: int) -> tuple[float, np.ndarray] | None:
    r"""(optimum, choice per job) as :func:`solve_unique`, when the optimum is unique by more than
    :data:`TIE`, for a core whose table is too large for the DP over its capacity: thousands of
    jobs on a row of millions of units (inflated OpenB: 8,430 pods on 6,212,000 thousandths of a
    GPU), where HiGHS's presolve takes seconds to find a problem of some twenty columns. With
    :math:`M_j = \max_o a_o` over job j's columns and :math:`D = \sum_j M_j - b` what every choice
    must take off the jobs' most demanding uses, columns are removed that no choice within
    :data:`TIE` of the optimum takes, and the jobs left are solved by the recursion over D:

    1. **Rigid jobs** (two columns, the first using nothing: wait, or run with use a and saving
       :math:`l = v_0 - v_1`) with the same a, by increasing l: only the first
       :math:`K = \lceil D / a \rceil` may wait, and any with :math:`l > l_K + \text{TIE}` runs. A
       choice in which one of these waits while one of the first K runs costs more than the
       exchange by more than TIE, and one in which all K wait too (they free D alone) costs l more
       than running it.
    2. **Lagrangian fixing** (:math:`\mu \ge 0` on the row, by bisection for the least price whose
       choice fits, which is then a feasible cost U; L the best bound seen): every choice x costs
       at least :math:`L(\mu) + \sum_j rc_{j x_j}`, with :math:`rc_{jo} = v_o + \mu a_o - \min_{o'}
       (v_{o'} + \mu a_{o'})`, so a column with :math:`rc > U - L + \text{TIE}` is in no choice
       within TIE of the optimum.
    3. **The recursion over D** for the jobs with two columns or more left (the others fixed):
       :math:`f_j(c) = \min_o f_{j-1}(\max(c - (M_j - a_o), 0)) + v_o`, with the runner-up as in
       :func:`solve_unique`; the removed columns cannot make a runner-up within TIE, so the
       certificate holds for the whole core.

    None when the table of step 3 exceeds :data:`MAX_COVER_CELLS`, or a tie remains."""
    ptr = core.job_ptr
    n, width = core.n_jobs, np.diff(ptr)
    job = np.repeat(np.arange(n), width)
    need = int(np.maximum.reduceat(use, ptr[:-1]).sum()) - cap
    alive = np.ones(ptr[-1], dtype=bool)
    # 1. rigid jobs of one size, by saving: the ones no choice near the optimum lets wait run
    second = np.minimum(ptr[:-1] + 1, ptr[-1] - 1)
    rigid = np.flatnonzero((width == 2) & (use[ptr[:-1]] == 0) & (use[second] > 0))
    if rigid.size and need > 0:
        size, save = use[second[rigid]], cost[ptr[rigid]] - cost[second[rigid]]
        order = np.lexsort((save, size))
        size, save, rigid = size[order], save[order], rigid[order]
        start = np.flatnonzero(np.r_[True, size[1:] != size[:-1]])
        count = np.diff(np.r_[start, size.size])
        first = np.repeat(start, count)
        k = -(-need // size)                                             # ceil(D / a)
        last_k = save[np.minimum(first + k - 1, np.repeat(start + count, count) - 1)]
        runs = (np.arange(size.size) - first >= k) & (save > last_k + TIE) & (save > TIE)
        alive[ptr[rigid[runs]]] = False
    # 2. Lagrangian fixing: the bound L(mu) and the cost of the choice at mu, where that fits
    def at(mu):
        m, cols = _cheapest(np.where(alive, cost + mu * use, np.inf), ptr, job)
        fits = int(use[cols].sum()) <= cap
        return float(m.sum() - mu * cap), float(cost[cols].sum()) if fits else np.inf

    lo, hi = 0.0, float(cost.max() - cost.min()) + 1.0          # at hi every job takes its least use
    (best, upper), mu_best = at(0.0), 0.0
    if upper == np.inf:
        for step in range(BISECTIONS + 1):                        # the least price whose choice fits
            mu = hi if step == 0 else 0.5 * (lo + hi)
            bound, cost_mu = at(mu)
            if step == 0 and cost_mu == np.inf:
                return None
            if bound > best:
                best, mu_best = bound, mu
            upper = min(upper, cost_mu)
            lo, hi = (lo, mu) if cost_mu < np.inf else (mu, hi)
    priced = np.where(alive, cost + mu_best * use, np.inf)
    rc = priced - np.minimum.reduceat(priced, ptr[:-1])[job]
    alive &= rc <= upper - best + TIE + 1e-9 * max(1.0, abs(upper))
    # 3. the recursion over what the jobs left must free
    left = np.add.reduceat(alive.astype(np.int64), ptr[:-1])
    if np.any(left == 0):
        return None
    free = left > 1
    fixed_col = np.flatnonzero(alive & ~free[job])
    room = cap - int(use[fixed_col].sum())
    cols = np.flatnonzero(alive & free[job])
    fptr = np.concatenate([[0], np.cumsum(left[free])]).astype(np.int64)
    most = np.maximum.reduceat(use[cols], fptr[:-1]) if cols.size else np.zeros(0, np.int64)
    d = max(int(most.sum()) - room, 0)
    if room < 0 or cols.size * (d + 1) > MAX_COVER_CELLS:
        return None
    out = _unique_cover(fptr, cost[cols], np.repeat(most, left[free]) - use[cols], d) if cols.size else (0.0, np.zeros(0, np.int64))
    if out is None:
        return None
    choice = np.empty(n, dtype=np.int64)
    choice[job[fixed_col]] = fixed_col - ptr[job[fixed_col]]
    choice[free] = cols[fptr[:-1] + out[1]] - ptr[:-1][free]
    return float(cost[fixed_col].sum()) + out[0], choice


#: the largest table of step 3 of :func:`solve_reduced`: its cells cost a few numpy operations each
#: (about 0.1 s at 20 million), where HiGHS's branch and bound on such a core (8,459 pods of inflated
#: OpenB, 267 left after fixing, 24,380 thousandths of a GPU to free) ran for minutes
MAX_COVER_CELLS = 30_000_000
#: bisection steps for the Lagrangian price of :func:`solve_reduced` (any price gives a valid
#: bound; a better one fixes more columns)
BISECTIONS = 40


def _cheapest(x: np.ndarray, ptr: np.ndarray, job: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(minimum, first column reaching it) of ``x`` over every job's columns (``job``: each column's job)."""
    m = np.minimum.reduceat(x, ptr[:-1])
    at = np.flatnonzero(x <= m[job])
    return m, at[np.r_[True, job[at[1:]] != job[at[:-1]]]]


def _unique_cover(ptr: np.ndarray, cost: np.ndarray, free: np.ndarray, need: int) -> tuple[float, np.ndarray] | None:
    """The least cost of one column per job of ``ptr`` whose ``free`` (whole numbers >= 0) add up to at
    least ``need``, and the choice, when the runner-up is worse by more than :data:`TIE`; the
    recursion of :func:`_unique` with the capacity left replaced by what is still to free (in
    slices: cell c of a column that frees r reads cell max(c - r, 0) of the jobs before)."""
    n = ptr.size - 1
    size = need + 1
    cells = np.arange(size)
    f = np.full(size, np.inf)
    f[0] = 0.0
    g = np.full(size, np.inf)
    width = int(np.diff(ptr).max())
    arg = np.empty((n, size), dtype=np.int16 if width < 2 ** 15 else np.int32)
    cand_f = np.empty((width, size))
    cand_g = np.empty((width, size))
    for j in range(n):
        lo, hi = int(ptr[j]), int(ptr[j + 1])
        cf, cg = cand_f[:hi - lo], cand_g[:hi - lo]
        for o in range(hi - lo):
            r, v = min(int(free[lo + o]), size), float(cost[lo + o])
            cf[o, :r], cg[o, :r] = f[0] + v, g[0] + v
            np.add(f[:size - r], v, out=cf[o, r:])
            np.add(g[:size - r], v, out=cg[o, r:])
        if hi - lo == 2:                                  # most jobs: two columns, no sort
            best = (cf[1] < cf[0]).view(np.int8)
            f, runner = np.minimum(cf[0], cf[1]), np.maximum(cf[0], cf[1])
            g = np.minimum(runner, np.minimum(cg[0], cg[1]))
        else:
            best = np.argmin(cf, axis=0)
            f = cf[best, cells]
            cf[best, cells] = np.inf
            g = np.minimum(cf.min(axis=0), cg.min(axis=0))
        arg[j] = best
    opt = float(f[need])
    if not np.isfinite(opt) or g[need] - opt <= TIE + 1e-12 * abs(opt):
        return None
    choice = np.empty(n, dtype=np.int64)
    c = need
    for j in range(n - 1, -1, -1):
        o = int(arg[j, c])
        choice[j] = o
        c = max(c - int(free[ptr[j] + o]), 0)
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

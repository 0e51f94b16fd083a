r"""An MCMDK with one capacity row of whole numbers solved exactly by dynamic programming, to its
canonical optimum (MODELS.md §1, the case m = 1 of the multiple-choice knapsack; the tie rule:
:mod:`dlsched.solvers.ties`).

With one resource row :math:`a_{o} \in \mathbb{Z}_{\ge 0}`, :math:`b \in \mathbb{Z}`, one column
per job (``exactly_one``, minimisation), :math:`M_j = \max_{o \in O_j} a_o` and
:math:`D = \sum_j M_j - b` what every choice must take off the jobs' most demanding uses, the
optimum is the recursion over the jobs from the last, on what is still to free

.. math::

    S_j(c) = \min_{o \in O_j} v_o + S_{j+1}\big(\max(c - (M_j - a_o), 0)\big), \qquad
    S_n(0) = 0,\; S_n(c > 0) = \infty, \qquad \text{OPT} = S_0(D),

:math:`S_j(c)` the least cost of jobs j..n-1 that frees at least c. Keeping every
:math:`S_{j+1}`, the canonical optimum is read forwards: job j takes its latest column o with
:math:`V_{<j} + v_o + S_{j+1}(c - (M_j - a_o))^+ \le \text{OPT} + \varepsilon` (:math:`V_{<j}`
the cost of the columns taken before): the first choice, in the tie rule's order, within the
tolerance of the optimum, in :math:`O(\text{columns} \cdot D)` array steps instead of a branch
and bound. Columns that no choice within the tolerance takes are removed first, so D and the
jobs left are small (:func:`solve`). A rigid job has one column besides "defer", so an SMD
decision on a trace of rigid jobs (:mod:`dlsched.solvers.smd`) is of this kind.
"""

from __future__ import annotations

import numpy as np

from dlsched.instance.core import MCMDK
from dlsched.solvers.first_fit import take_in_order
from dlsched.solvers.ties import tolerance

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


def one_row(core: MCMDK) -> tuple[int, np.ndarray, int] | None:
    """(row, each column's whole-number use of it, its whole-number capacity) when ``core`` is a
    minimisation with exactly one column per job and at most one row that can bind: the only row
    used, or the only one whose uses with every job at its most demanding column exceed its
    capacity (the others hold whatever is chosen). Its uses and capacity are whole numbers of one
    of :data:`SCALES` (then counted in that unit). When no row can bind, (-1, zeros, 0): the
    problem is the one-row problem of a row nobody uses. None otherwise."""
    if core.choose != "exactly_one" or core.sense != "min" or core.n_jobs == 0 or np.any(np.diff(core.job_ptr) < 1):
        return None
    A = core.A
    used = np.flatnonzero(np.diff(A.indptr) > 0)
    if used.size != 1:
        most = np.maximum.reduceat(A[used].toarray(), core.job_ptr[:-1], axis=1).sum(axis=1) if used.size else used
        used = used[most > core.b[used]]
        if used.size == 0:
            return -1, np.zeros(core.n_cols, dtype=np.int64), 0
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


class BudgetSpent(Exception):
    """The running budget given to :func:`solve` ended inside its recursion (no answer)."""


def solve(core: MCMDK, cost: np.ndarray, use: np.ndarray, cap: int, clock=None) -> tuple[float, np.ndarray] | None:
    r"""(optimum, canonical choice per job) of ``core`` with costs ``cost`` and the one row's
    ``use``, ``cap`` (:func:`one_row`): the first choice in the tie rule's order
    (:mod:`dlsched.solvers.ties`) whose cost is within :math:`\varepsilon`
    (:func:`~dlsched.solvers.ties.tolerance`) of the optimum. Thousands of jobs on a row of
    millions of units (inflated OpenB: 8,430 pods on 6,212,000 thousandths of a GPU) are first
    reduced: columns are removed that no choice within :math:`\varepsilon` of the optimum takes,
    or that the canonical one does not take, and the jobs left are solved by the recursion over
    what they must free (module docstring):

    1. **Dominated columns**: one with another in its job of no more use that costs less by more
       than :math:`\varepsilon` (a zero-GPU pod's "wait").
    2. **Bounds**: :math:`\mu \ge 0` on the row, the least price whose choice fits (by bisection
       over the jobs' breakpoints, where a job's cheapest priced column changes);
       L the best Lagrangian bound seen, U the cost of that choice after moving jobs to their
       cheapest columns while the row holds (:func:`_filled`).
    3. **Rigid jobs** (two columns, the first using nothing: wait, or run with use a and saving
       :math:`l = v_0 - v_1 > \varepsilon`) of the same a, by increasing l: at most K wait in any
       choice of :math:`\mathcal{S}`, K the smaller of :math:`\lceil D / a \rceil` (they free D
       alone: one more could run) and the most whose least reduced costs of waiting (step 4) add
       up to no more than :math:`U - L + \varepsilon`; so only the first K may wait, and any with
       :math:`l > l_K + \varepsilon` runs (a choice in which it waits while one of the first K
       runs costs more than the exchange by more than :math:`\varepsilon`). Of those with the same
       saving (an exchange class) the canonical choice lets the last K wait at most: the earlier
       ones run.
    4. **Lagrangian fixing**: every choice x costs at least :math:`L(\mu) + \sum_j rc_{j x_j}`,
       with :math:`rc_{jo} = v_o + \mu a_o - \min_{o'} (v_{o'} + \mu a_{o'})`, so a column with
       :math:`rc > U - L + \varepsilon` is in no choice within :math:`\varepsilon` of the optimum.
    5. **The recursion over what is left to free** for the jobs with two columns or more left (the
       others fixed), in units of the greatest common divisor of what they free, read forwards to
       the canonical choice. The removed columns are in no choice of :math:`\mathcal{S}` or not in
       its first one, so the choice is the whole core's.

    None when the recursion's table exceeds :data:`MAX_TABLE_CELLS` (or nothing fits the row).
    With ``clock`` (a :class:`~dlsched.solvers.options.Budget`), :class:`BudgetSpent` is raised when
    no more than its margin remains inside the recursion, the one step whose time grows with the jobs left and their table
    (a decision under a budget then keeps the best answer it has)."""
    ptr = core.job_ptr
    n, width = core.n_jobs, np.diff(ptr)
    job = np.repeat(np.arange(n), width)
    tol = tolerance(cost, ptr)
    need = int(np.maximum.reduceat(use, ptr[:-1]).sum()) - cap
    # 1. a column with a cheaper one (by more than tol) of no more use in its job is in no choice of S
    alive = ~_dominated(ptr, cost, use, tol)
    # 2. the Lagrangian bound L(mu), and a feasible cost U: the choice at the least price that fits, filled
    def at_price(mu):
        m, cols = _cheapest(np.where(alive, cost + mu * use, np.inf), ptr, job)
        return float(m.sum() - mu * cap), cols, int(use[cols].sum()) <= cap

    best, fit, fits = at_price(0.0)
    mu_best = 0.0
    if not fits:
        # the choice's use only falls as mu grows, and changes only at a job's breakpoints: search
        # the intervals between them for the first whose choice fits; L is largest at its left end
        kinks = _breakpoints(np.where(alive, cost, np.inf), use, ptr)
        probe = np.r_[0.5 * (kinks[:-1] + kinks[1:]), kinks[-1] + 1.0] if kinks.size else np.zeros(0)
        lo, hi = -1, probe.size - 1                              # probe[lo] does not fit, probe[hi] may
        if not probe.size or not at_price(probe[hi])[2]:
            return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if at_price(probe[mid])[2] else (mid, hi)
        fit = at_price(probe[hi])[1]
        mu_best = float(kinks[hi])
        best = max(best, at_price(mu_best)[0])
    upper = _filled(fit, alive, cost, use, cap, ptr, job)
    priced = np.where(alive, cost + mu_best * use, np.inf)
    rc = priced - np.minimum.reduceat(priced, ptr[:-1])[job]          # reduced costs at mu: >= 0
    gap = upper - best + tol + 1e-9 * max(1.0, abs(upper))
    # 3. rigid jobs of one size, by saving: the ones no canonical choice near the optimum lets wait run
    alive[_rigid_run(ptr, cost, use, need, rc, gap, tol)] = False
    # 4. Lagrangian fixing
    alive &= rc <= gap
    # 5. the recursion over what the jobs left must free
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
    frees = np.repeat(most, left[free]) - use[cols]
    # in units of the frees' greatest common divisor g: sum(free) >= d iff sum(free / g) >= ceil(d / g)
    # (OpenB's GPU shares are multiples of 10 thousandths: a table 10 times smaller)
    g = max(int(np.gcd.reduce(frees[frees > 0])), 1) if np.any(frees > 0) else 1
    frees, d = frees // g, -(-d // g)
    if room < 0 or fptr.size * (d + 1) > MAX_TABLE_CELLS:
        return None
    fixed_cost = float(cost[fixed_col].sum())
    opt, pick = _canonical_cover(fptr, cost[cols], frees, d, tol, clock)
    if not np.isfinite(opt):
        return None
    choice = np.empty(n, dtype=np.int64)
    choice[job[fixed_col]] = fixed_col - ptr[job[fixed_col]]
    choice[free] = cols[fptr[:-1] + pick] - ptr[:-1][free]
    return fixed_cost + opt, choice


#: the largest table of step 5 of :func:`solve` (jobs left x (what they must free + 1), kept whole for
#: the forward reading: 8 bytes a cell); its cells cost a few numpy operations each (about 0.1 s at 20
#: million), where HiGHS's branch and bound on such a core (8,459 pods of inflated OpenB, 267 left
#: after fixing, 24,380 thousandths of a GPU to free) ran for minutes
MAX_TABLE_CELLS = 16_000_000


def _cheapest(x: np.ndarray, ptr: np.ndarray, job: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(minimum, first column reaching it) of ``x`` over every job's columns (``job``: each column's job)."""
    m = np.minimum.reduceat(x, ptr[:-1])
    at = np.flatnonzero(x <= m[job])
    return m, at[np.r_[True, job[at[1:]] != job[at[:-1]]]]


def _breakpoints(cost: np.ndarray, use: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    r"""The sorted prices :math:`\mu > 0` at which a job's cheapest column of :math:`v_o + \mu a_o`
    may change: :math:`(v_{o'} - v_o) / (a_o - a_{o'})` for each pair of its columns of which the
    one with more use is cheaper (``cost`` inf: a column removed)."""
    width = np.diff(ptr)
    n, W = width.size, int(width.max(initial=0))
    job = np.repeat(np.arange(n), width)
    at = np.arange(ptr[-1]) - ptr[job]
    c = np.full((n, W), np.inf)
    u = np.zeros((n, W))
    c[job, at], u[job, at] = cost, use
    more = u[:, :, None] > u[:, None, :]                     # (job, o, o'): o uses more than o'
    cheaper = c[:, :, None] < c[:, None, :]
    live = np.isfinite(c[:, :, None]) & np.isfinite(c[:, None, :]) & more & cheaper
    j, o, other = np.nonzero(live)
    return np.unique((c[j, other] - c[j, o]) / (u[j, o] - u[j, other]))


def _dominated(ptr: np.ndarray, cost: np.ndarray, use: np.ndarray, tol: float) -> np.ndarray:
    """Columns with another in their job of no more use that costs less by more than ``tol``: a
    choice taking one costs more than the same choice with the other (zero-GPU pods: waiting)."""
    width = np.diff(ptr)
    n, W = width.size, int(width.max(initial=0))
    job = np.repeat(np.arange(n), width)
    at = np.arange(ptr[-1]) - ptr[job]
    c = np.full((n, W), np.inf)
    u = np.full((n, W), np.iinfo(np.int64).max)
    c[job, at], u[job, at] = cost, use
    # (column, another of its job): dominated when some other is cheaper and uses no more
    beaten = (c[job] < cost[:, None] - tol) & (u[job] <= use[:, None])
    return beaten.any(axis=1)


def _rigid_run(ptr: np.ndarray, cost: np.ndarray, use: np.ndarray, need: int, rc: np.ndarray, gap: float,
               tol: float) -> np.ndarray:
    r"""The "wait" columns of rigid jobs (two columns, the first using nothing, saving
    :math:`l = v_0 - v_1 > \text{tol}`) that no canonical choice of :math:`\mathcal{S}` takes
    (:func:`solve`, step 3). Of the jobs of one size a, by increasing l (and so by increasing
    reduced cost ``rc`` of waiting), at most K wait: K the smaller of :math:`\lceil D/a \rceil` and
    the most whose least reduced costs add up to no more than ``gap`` (U - L + tol: any choice of
    :math:`\mathcal{S}` costs at least L plus its columns' reduced costs)."""
    width = np.diff(ptr)
    second = np.minimum(ptr[:-1] + 1, ptr[-1] - 1)
    save = cost[ptr[:-1]] - cost[second]
    rigid = np.flatnonzero((width == 2) & (use[ptr[:-1]] == 0) & (use[second] > 0) & (save > tol))
    if not rigid.size or need <= 0:
        return np.zeros(0, dtype=np.int64)
    size, save = use[second[rigid]], save[rigid]
    order = np.lexsort((rigid, save, size))                              # by size, saving, core order
    size, save, rigid = size[order], save[order], rigid[order]
    at = np.arange(size.size)
    start = np.flatnonzero(np.r_[True, size[1:] != size[:-1]])
    count = np.diff(np.r_[start, size.size])
    first, end = np.repeat(start, count), np.repeat(start + count, count)
    wait_rc = rc[ptr[rigid]]
    prefix = np.cumsum(wait_rc)
    prefix -= np.repeat(prefix[start] - wait_rc[start], count)           # within the size: rc_1 + .. + rc_k
    affordable = np.bincount(np.repeat(np.arange(start.size), count), weights=prefix <= gap, minlength=start.size)
    k = np.minimum(-(-need // size), np.repeat(affordable.astype(np.int64), count))
    last_k = np.where(k > 0, save[np.clip(first + k - 1, 0, end - 1)], -np.inf)
    runs = (at - first >= k) & (save > last_k + tol)
    # an exchange class (one size, one saving): only its last K may wait
    same = np.flatnonzero(np.r_[True, (size[1:] != size[:-1]) | (save[1:] != save[:-1])])
    class_end = np.repeat(np.r_[same[1:], size.size], np.diff(np.r_[same, size.size]))
    runs |= class_end - 1 - at >= k
    return ptr[rigid[runs]]


def _filled(cols: np.ndarray, alive: np.ndarray, cost: np.ndarray, use: np.ndarray, cap: int, ptr: np.ndarray,
            job: np.ndarray) -> float:
    """The cost of the fitting choice ``cols`` (one column per job) after moving jobs to their cheapest
    ``alive`` column while the row holds, by saving per unit of extra use (first fit): a feasible
    cost U for the fixing of :func:`solve`. The least fitting price's choice alone leaves room
    unused, and every unit of U - L keeps columns alive (inflated OpenB: U - L of 3 pods'
    savings left 2,640 pods to the recursion, 6 after the fill)."""
    target = _cheapest(np.where(alive, cost, np.inf), ptr, job)[1]
    gain, extra = cost[cols] - cost[target], use[target] - use[cols]
    moves = np.flatnonzero(gain > 0)
    order = moves[np.lexsort((moves, -gain[moves] / np.maximum(extra[moves], 1)))]
    taken = take_in_order(extra[order, None].astype(float), np.array([float(cap - int(use[cols].sum()))]))
    return float(cost[cols].sum() - gain[order[taken]].sum())


#: jobs of the recursion between two readings of a budget's clock (a few ms at DL2's 2,000 jobs)
CLOCK_EVERY = 32


def _canonical_cover(ptr: np.ndarray, cost: np.ndarray, free: np.ndarray, need: int, tol: float,
                     clock=None) -> tuple[float, np.ndarray]:
    """(least cost, canonical choice) of one column per job of ``ptr`` whose ``free`` (whole numbers
    >= 0) add up to at least ``need``: the recursion of the module docstring from the last job (in
    slices: cell c of a column that frees r reads cell max(c - r, 0) of the jobs after), every table
    kept, then read forwards, each job taking its latest column that stays within ``tol`` of the
    optimum. The cost is inf when nothing frees enough. :class:`BudgetSpent` when ``clock`` expires."""
    n = ptr.size - 1
    size = need + 1
    S = np.empty((n + 1, size))
    S[n] = np.inf
    S[n, 0] = 0.0
    cand = np.empty(size)
    for j in range(n - 1, -1, -1):
        if clock is not None and j % CLOCK_EVERY == 0 and clock.remaining() <= clock.margin:
            raise BudgetSpent
        lo, hi = int(ptr[j]), int(ptr[j + 1])
        after, here = S[j + 1], S[j]
        here[:] = np.inf
        for o in range(lo, hi):
            r, v = min(int(free[o]), size), float(cost[o])
            cand[:r] = after[0] + v
            np.add(after[:size - r], v, out=cand[r:])
            np.minimum(here, cand, out=here)
    opt = float(S[0, need])
    choice = np.zeros(n, dtype=np.int64)
    if not np.isfinite(opt):
        return opt, choice
    budget, spent, c = opt + tol, 0.0, need
    for j in range(n):
        lo, hi = int(ptr[j]), int(ptr[j + 1])
        rest = S[j + 1, np.maximum(c - free[lo:hi], 0)] + cost[lo:hi] + spent
        within = np.flatnonzero(rest <= budget)
        o = int(within[-1]) if within.size else int(np.argmin(rest))   # (none within: rounding; the cheapest)
        choice[j] = o
        spent += float(cost[lo + o])
        c = max(c - int(free[lo + o]), 0)
    return opt, choice

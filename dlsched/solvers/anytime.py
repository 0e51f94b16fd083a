r"""Anytime pieces for one decision over an exactly-one MCMDK in minimisation form (MODELS.md §1, §2.2):
a feasible greedy choice to start from, the Lagrangian lower bound that certifies any choice,
and POP's random partition of the jobs (Narayanan et al., SOSP'21).

With :math:`c_{jo}` the cost of configuration o of job j, :math:`a_{jo} \in \mathbb{R}^R_{\ge 0}`
its use and :math:`b` the capacity, the problem is
:math:`\min \sum_j c_{j o_j}` s.t. :math:`\sum_j a_{j o_j} \le b`, one configuration per job.
Dualising the capacity rows with prices :math:`\lambda \ge 0` gives, for **every** :math:`\lambda`,

.. math:: L(\lambda) = \sum_j \min_o \big(c_{jo} + \lambda^\top a_{jo}\big) - \lambda^\top b \;\le\; \mathrm{OPT},

which decomposes over jobs (one segment minimum per job, no solver): :func:`lagrangian_bound`
improves :math:`\lambda` by projected subgradient steps (Polyak's step towards a known upper
bound) and returns the best :math:`L` seen. At :math:`\lambda = 0` it is the bound of every job at
its cheapest configuration. The rows are scaled by :math:`1/b` (prices per share of the cluster).
"""

from __future__ import annotations

import numpy as np

from dlsched.instance.core import MCMDK
from dlsched.solvers.options import Budget


def column_shares(core: MCMDK) -> np.ndarray:
    """(columns, rows) share of the capacity each column uses, :math:`a_{jo} / b` (rows with b = 0 dropped)."""
    keep = core.b > 0
    use = np.asarray(core.A[keep].T.todense(), dtype=float)
    return use / core.b[keep][None, :]


def _segment_argmin(x: np.ndarray, job_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(minimum, first column reaching it) of ``x`` over every job's columns (no job without one)."""
    m = np.minimum.reduceat(x, job_ptr[:-1])
    counts = np.diff(job_ptr)
    at = np.flatnonzero(x <= np.repeat(m, counts))
    job = np.repeat(np.arange(counts.size), counts)[at]
    # the columns reaching it in order, so a job's first is where the job changes (not a sort)
    return m, at[np.r_[True, job[1:] != job[:-1]]] if at.size else at


def lagrangian_bound(value: np.ndarray, share: np.ndarray, job_ptr: np.ndarray, upper: float,
                     iters: int = 40, start: np.ndarray | None = None, clock: Budget | None = None) -> tuple[float, np.ndarray]:
    r"""The best :math:`L(\lambda)` (module docstring) over ``iters`` projected subgradient steps from
    ``start`` (default :math:`\lambda = 0`), and the prices that gave it; ``share`` is
    :func:`column_shares`, ``upper`` a known objective (Polyak's target; the bound is valid whatever
    it is). Every job needs at least one column. With ``clock``, the steps stop when its budget is
    spent (after the first: every :math:`L(\lambda)` is a bound, a later one only a better one)."""
    lam = np.zeros(share.shape[1]) if start is None else np.asarray(start, dtype=float)
    if value.size == 0:
        return 0.0, lam
    best, best_lam, theta, stall = -np.inf, lam, 1.0, 0
    for it in range(max(int(iters), 1)):
        if it and clock is not None and clock.expired():
            break
        m, cols = _segment_argmin(value + share @ lam, job_ptr)
        L = float(m.sum() - lam.sum())
        if L > best + 1e-12 * max(1.0, abs(L)):
            best, best_lam, stall = L, lam, 0
        else:
            stall += 1
            if stall >= 4:
                theta, stall = theta / 2, 0
        g = share[cols].sum(axis=0) - 1.0
        g[(lam <= 0) & (g < 0)] = 0.0            # the projection keeps these prices at 0
        norm = float(g @ g)
        if norm <= 1e-18 or not np.isfinite(upper) or upper - L <= 1e-12 * max(1.0, abs(upper)):
            break          # a subgradient of 0: λ is optimal; or the bound has met the objective
        lam = np.maximum(lam + theta * (upper - L) / norm * g, 0.0)
    return best, best_lam


def greedy_choice(core: MCMDK, share: np.ndarray, fixed: np.ndarray | None = None,
                  prices: np.ndarray | None = None) -> np.ndarray:
    r"""A feasible choice (configuration per job, 0 = the job's first column, its zero-use defer
    column): jobs in ``fixed`` (column per job, -1 = free) keep theirs if together they fit; then the
    free jobs by saving per share (defer cost less the cost of their preferred configuration, over
    that configuration's dominant share) take their preferred configuration while the prefix
    fits, and the rest, in the same order, their smallest one while what is left fits. The
    preferred configuration is the cheapest, or at ``prices`` :math:`\lambda` (per share of each
    row) the one of least :math:`c_{jo} + \lambda^\top a_{jo}/b`, the Lagrangian subproblem's
    choice (:func:`lagrangian_bound`'s prices). Whole-array steps, no loop over jobs."""
    n, ptr = core.n_jobs, core.job_ptr
    choice = np.zeros(n, dtype=np.int64)
    if n == 0:
        return choice
    room = np.ones(share.shape[1])
    free = np.ones(n, dtype=bool)
    if fixed is not None:
        held = np.flatnonzero(fixed >= 0)
        total = share[fixed[held]].sum(axis=0)
        if np.all(total <= room + 1e-9):
            choice[held] = fixed[held] - ptr[held]
            free[held] = False
            room = room - total
    run = np.ones(core.n_cols, dtype=bool)
    run[ptr[:-1]] = False                     # column 0 of every job is its defer column
    dom = share.max(axis=1) if share.shape[1] else np.zeros(core.n_cols)
    priced = core.value if prices is None else core.value + share @ prices
    _, cheap = _segment_argmin(np.where(run, priced, np.inf), ptr)
    cheap_val = np.where(np.isfinite(priced[cheap]) & run[cheap], core.value[cheap], np.inf)
    _, small = _segment_argmin(np.where(run, dom, np.inf), ptr)
    saving = core.value[ptr[:-1]] - cheap_val
    cand = free & np.isfinite(cheap_val) & (saving > 0)
    score = np.where(cand, saving / np.maximum(dom[cheap], 1e-12), -np.inf)
    order = np.argsort(-score, kind="stable")
    order = order[cand[order]]
    for cols in (cheap, small):
        if not order.size:
            break
        fill = np.cumsum(share[cols[order]], axis=0)
        fits = np.all(fill <= room[None, :] + 1e-9, axis=1)
        k = int(np.argmin(fits)) if not fits.all() else fits.size
        take = order[:k]
        choice[take] = cols[take] - ptr[take]
        room = room - (fill[k - 1] if k else 0.0)
        order = order[k:]
    return choice


def pop_groups(n: int, k: int, rng: np.random.Generator, weights: np.ndarray | None = None) -> list[np.ndarray]:
    r"""POP's partition: ``n`` items shuffled by ``rng`` and dealt into ``min(k, n)`` groups of sizes
    differing by at most one, each sorted. With ``weights`` (one per group, k of them, > 0), group g
    gets :math:`n w_g / \sum w` items rounded down or up (largest remainders, ties to the first
    groups), so that with integer weights and :math:`n \le \sum w` no group gets more than its weight
    (a group of servers and its GPUs: every job of a §4 view needs one GPU)."""
    perm = rng.permutation(n)
    if weights is None:
        return [np.sort(g) for g in np.array_split(perm, max(1, min(int(k), n)))]
    w = np.asarray(weights, dtype=float)
    exact = n * w / w.sum()
    size = np.floor(exact + 1e-9).astype(np.int64)
    extra = np.argsort(-(exact - size), kind="stable")[:n - int(size.sum())]
    size[extra] += 1
    return [np.sort(g) for g in np.split(perm, np.cumsum(size)[:-1])]


def placeable(seconds: list[float], runs: list[bool], left: float) -> int:
    """Which of a budgeted decision's answers to give, by index (the kept answer of ``smd``'s
    :func:`~dlsched.solvers.smd.decide_anytime` and of ``fluid``'s policy): the first whose expected placement
    (``seconds``) fits what is ``left`` of the budget, else the one placed soonest; never one that runs no
    job (``runs`` False) where another runs some (at 1 ms smd's conformance trace stalled once every kept
    job had completed)."""
    seconds = [t if r or not any(runs) else np.inf for t, r in zip(seconds, runs)]
    fits = [i for i, t in enumerate(seconds) if t <= left]
    return fits[0] if fits else int(np.argmin(seconds))


def placeable_prefix(seconds, most: int, left: float) -> int:
    """The largest k <= ``most`` whose answer, the first k jobs of an order run and the others waiting, is
    expected to be placed within ``left`` seconds, ``seconds(k)`` (not decreasing in k) its expected
    placement: the cold answer of a budgeted decision with nothing kept to fall back on (a policy's first call
    over thousands of jobs, whose placement alone would take many budgets). By bisection: log2(most) calls."""
    lo, hi = 0, int(most)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if seconds(mid) <= left:
            lo = mid
        else:
            hi = mid - 1
    return lo

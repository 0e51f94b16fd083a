r"""Gavel's allocation problems (Narayanan et al., OSDI'20): LPs over the fraction of time each job spends on each GPU type.

Symbols (Gavel's, over the m jobs considered now and the K GPU types): :math:`X_{jk} \in [0, 1]`
the fraction of time job j runs on type k; :math:`T_{jk}` its throughput there (steps/s at its
size, 0 where it cannot run: then :math:`X_{jk} = 0`); :math:`z_{jk}` the GPUs it holds there;
:math:`c_k` the GPUs of type k; :math:`\tau_j(X) = \sum_k T_{jk} X_{jk}` its effective throughput.
Every allocation satisfies Gavel's base constraints

.. math:: \sum_j z_{jk} X_{jk} \le c_k, \qquad \sum_k X_{jk} \le 1, \qquad X \ge 0.

==========================  ==================================================================================
problem                     objective (Gavel's ``scheduler/policies/<file>.py``)
==========================  ==================================================================================
:func:`max_min_fairness`    :math:`\max_X \min_j \sum_k W_{jk} X_{jk}` (``max_min_fairness.py``); with
                            throughputs (``_perf``) :math:`W_{jk} = z_{jk} T_{jk} / \bar\tau_j`,
                            :math:`\bar\tau_j = \sum_k T_{jk} c_k / \sum_k c_k` the throughput of an equal
                            share of every type; without (LAS) :math:`W_{jk} = z_{jk}`. Then, among the
                            optima, :math:`\max \sum_{jk} W_{jk} X_{jk}` (a second LP: Gavel's interior-point
                            solver returns an interior optimum, a simplex a vertex that may leave GPUs idle)
:func:`max_sum_throughput`  :math:`\max_X \sum_{jk} T_{jk} X_{jk}` (``max_sum_throughput.py``)
:func:`min_total_duration`  :math:`\min_{X, M} M` s.t. :math:`\tau_j(X) \ge R_j / M` (``min_total_duration.py``:
                            bisection on M); here one LP by Charnes–Cooper, :math:`s = 1/M`:
                            :math:`\max s` s.t. :math:`R_j s \le \tau_j(X)`
:func:`finish_time_fairness`  :math:`\min_X \max_j \rho_j(X)`, :math:`\rho_j = (t_j + R_j/\tau_j(X)) / (I_j +
                            R_j/\tau^{iso}_j)` (``finish_time_fairness.py``): :math:`t_j` the time since
                            the job arrived, :math:`I_j` its isolated time so far, :math:`\tau^{iso}_j` its
                            throughput on an equal share :math:`c_k / (m z_{jk})` of every type. For a
                            fixed ρ the condition is linear, :math:`\tau_j(X) \ge R_j/(\rho E_j - t_j)`, so
                            ρ* is found by bisection on LPs, each giving a feasible X (an upper bound)
:func:`fifo_perf`           not an LP (``fifo.py``, mode ``perf``): in arrival order, each job gets
                            :math:`X_{jk} = 1` on the type with free room where its throughput is highest;
                            the first job that fits no type stops the queue
==========================  ==================================================================================

Jobs with equal rows (same throughputs and sizes) form one class in the max-min and max-sum LPs
(:func:`classes`). The matrix path builds each LP from whole arrays (scipy.sparse) and solves it with HiGHS
(``dlsched.solvers.highs.solve_matrix``, highspy); :mod:`dlsched.policies.gavel_cvxpy` states the same problems in
CVXPY (Gavel's own front end), and the tests check that the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dlsched.policies.gavel_prices import LPCut, max_min_by_prices, max_min_matrix, optimal_lp
from dlsched.result import Status
from dlsched.solvers.highs import translate
from dlsched.solvers.options import Budget


@dataclass
class Allocation:
    """``X[j, k]`` the time fractions, ``value`` the problem's optimal value (see each function), ``lps``
    how many LPs were solved to get it, and ``bound`` a bound on the optimal value proven by them, on the
    other side of ``value`` (above it for a maximisation, below for a minimisation; equal to it where the LP
    was solved to optimality)."""

    X: np.ndarray
    value: float
    lps: int = 1
    bound: float | None = None

    def __post_init__(self):
        if self.bound is None and self.lps:
            self.bound = self.value


def base_rows(z: np.ndarray, cap: np.ndarray, count: np.ndarray | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Gavel's base constraints over X flattened row-major (j*K + k): K capacity rows
    :math:`\\sum_j n_j z_{jk} X_{jk} \\le c_k`, then m rows :math:`\\sum_k X_{jk} \\le 1`; :math:`n_j` =
    ``count[j]`` jobs share row j (:func:`classes`), 1 without ``count``."""
    m, K = z.shape
    cols = np.arange(m * K)
    zf = (z * (1.0 if count is None else np.asarray(count, float)[:, None])).ravel().astype(float)
    nz = zf != 0
    rows = np.concatenate([np.tile(np.arange(K), m)[nz], K + np.repeat(np.arange(m), K)])
    A = sp.csr_matrix((np.concatenate([zf[nz], np.ones(m * K)]), (rows, np.concatenate([cols[nz], cols]))),
                      shape=(K + m, m * K))
    return A, np.concatenate([np.asarray(cap, float), np.ones(m)])


def classes(*rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, inverse, count): the jobs whose rows of every array in ``rows`` are equal form a class.

    The max-min and max-sum problems are symmetric in such jobs and convex, so averaging an optimal
    X over a class keeps it feasible and optimal: an optimum with one row per class exists, and the
    LP over classes (capacity rows weighted by the class sizes) has the same value with far fewer
    variables (Gavel's msr traces draw jobs from about 100 (type, scale factor) pairs)."""
    key = np.concatenate([np.asarray(r, float).reshape(len(r), -1) for r in rows], axis=1)
    _, first, inverse, count = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
    return first, np.asarray(inverse).reshape(-1), count


def _per_job(coef: np.ndarray) -> sp.csr_matrix:
    """The m × mK matrix whose row j is :math:`\\sum_k \\text{coef}_{jk} X_{jk}` (zeros dropped)."""
    m, K = coef.shape
    flat = coef.ravel()
    nz = np.flatnonzero(flat)
    return sp.csr_matrix((flat[nz], (nz // K, nz)), shape=(m, m * K))


def _with_scalar(A_base, b_base, ub_x, rows_extra, extra_col, b_extra, scalar_ub=np.inf):
    """Append one scalar variable (last column) and the rows ``rows_extra·X + extra_col·v ≤ b_extra``."""
    A = sp.vstack([sp.hstack([A_base, sp.csr_matrix((A_base.shape[0], 1))]),
                   sp.hstack([rows_extra, sp.csr_matrix(np.asarray(extra_col, float)[:, None])])], format="csr")
    return A, np.concatenate([b_base, b_extra]), np.append(ub_x, scalar_ub)


#: max-min fairness goes through its prices from this many classes on; below, the two LPs take a few
#: milliseconds (2.5 at 64 distinct jobs) and keep the optimal vertex the decisions on Gavel's traces
#: were made with (they have at most 83 classes: Gavel's (job type, scale factor) pairs)
PRICED_CLASSES = 128

#: the priced answer stands for both LPs where the second could add at most this share of sum W X: the
#: second LP's own slack (every job 1e-9 below the minimum) lets it add about 1e-7 with 2,048 distinct
#: jobs (measured: 1.0e-7 at --perturb 0.05), and B - t is float noise divided by u_c of order 1/C
SECOND_LP_GAIN = 1e-7


def max_min_fairness(W: np.ndarray, z: np.ndarray, cap: np.ndarray, *, pareto: bool = True,
                     budget: Budget | None = None) -> Allocation:
    """:math:`\\max_X \\min_j \\sum_k W_{jk} X_{jk}` under the base constraints (module docstring);
    ``value`` is that maximum. Jobs whose row of W is 0 get nothing and do not count in the minimum.
    ``pareto``: then maximise :math:`\\sum W X` keeping every job at the maximum (the second LP), solved
    from the first LP's optimal basis in the same HiGHS model: the costs become :math:`-\\sum W X` and
    the scalar's lower bound the optimal minimum, so the rows :math:`t \\le \\sum_k W_{jk} X_{jk}` keep
    every job there (the first basis stays feasible, and the simplex starts from it).

    From :data:`PRICED_CLASSES` classes on, first through its prices
    (:func:`dlsched.policies.gavel_prices.max_min_by_prices`: proven optimal by a Lagrangian bound B, in a
    few small LPs where jobs are distinct); that answer stands where the bound shows that the second
    LP could add at most :data:`SECOND_LP_GAIN` of :math:`\\sum W X` (:func:`_second_lp_gain`), else (or
    without a proof) the two LPs above are solved.

    ``budget``: a decision's clock, every LP's time limit (:func:`~dlsched.policies.gavel_prices.optimal_lp`
    raises :class:`~dlsched.policies.gavel_prices.LPCut` when it ends before the first LP's optimum); the second
    LP is skipped when it is spent, or stops at it with the first LP's optimum kept (the minimum, the value, is
    the same). ``bound``: B where the prices proved the answer, else the first LP's optimum."""
    m, K = W.shape
    live = W > 0
    X = np.zeros((m, K))
    rows = np.flatnonzero(live.any(axis=1))
    if rows.size == 0:
        return Allocation(X, 0.0, 0)
    scale = W[rows].max()
    first, inverse, count = classes(W[rows], z[rows])
    Wc, Zc = W[rows][first] / scale, z[rows][first] * count[:, None]  # Wc: t of order 1 for HiGHS's tolerances
    C = first.size
    n = C * K
    priced = max_min_by_prices(Wc, Zc, cap, budget=budget) if C >= PRICED_CLASSES else None
    if priced is not None and (not pareto or _second_lp_gain(priced, count) <= SECOND_LP_GAIN * priced.t * count.sum()):
        X[rows] = priced.X[inverse]
        return Allocation(X, priced.t * scale, priced.lps, priced.B * scale)
    M, row_upper = max_min_matrix(Wc, Zc, cap)
    out = optimal_lp(np.r_[np.zeros(n), -1.0], M, row_upper, np.append((Wc > 0).ravel().astype(float), np.inf),
                     budget=budget)
    t, x, lps = float(out.x[-1]), out.x[:n], 1
    if pareto and t > 0 and _second_lp_time(out.highs, budget):
        # keep every job at t, use what is left: same model, new costs, t at least its optimum
        h = out.highs
        h.changeColsCost(n + 1, np.arange(n + 1, dtype=np.int32), np.append(-(Wc * count[:, None]).ravel(), 0.0))
        h.changeColBounds(n, t * (1 - 1e-9), np.inf)
        h.run()
        lps = 2
        if translate(h.getModelStatus(), h.getInfo().primal_solution_status == 2)[1] == Status.OPTIMAL:
            x = np.asarray(h.getSolution().col_value, dtype=float)[:n]
    X[rows] = np.clip(x.reshape(C, K), 0.0, 1.0)[inverse]
    return Allocation(X, t * scale, lps)


def _second_lp_time(h, budget: Budget | None) -> bool:
    """Whether the second LP of a max-min problem runs, on HiGHS model ``h`` of the first: always without a
    budget; under one while it lasts (HiGHS's time limit set to what remains) and where the first LP ran in this
    process (a large model under a time limit runs in a forked child, which keeps no model)."""
    if budget is None or not budget.limited:
        return True
    if h is None or budget.expired():
        return False
    h.setOptionValue("time_limit", budget.seconds_for_solver())
    return True


def _second_lp_gain(priced, count: np.ndarray) -> float:
    """How much the second LP could add to :math:`\\sum_c n_c W_c \\cdot X_c` over ``priced.X`` (every class
    at least t): for every X with every class at least t, the Lagrangian of ``gavel_prices`` gives
    :math:`\\sum_c u_c (W_c \\cdot X_c - t) \\le B - t`, each term non-negative, so class c gains at most
    :math:`(B - t) / u_c` (inf where :math:`u_c = 0`: that class may take what is left)."""
    with np.errstate(divide="ignore"):
        return float((count * (priced.B - priced.t) / priced.u).sum()) if (priced.u > 0).all() else np.inf


def even_over_types(X: np.ndarray, z: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """LAS's optimum made heterogeneity-agnostic (``z[j, k]``: the GPUs job j holds on type k, 0
    where it cannot run there, as LAS's weights): each job that runs on every type at the same size
    (``z[j]`` equal and > 0 across the row) spreads its total time :math:`x_j = \\sum_k X_{jk}` over the
    types in proportion to the GPUs the other jobs leave there, :math:`X_{jk} = x_j r_k / \\sum_l r_l`,
    :math:`r_k = c_k - \\sum_{i \\text{ not spread}} z_{ik} X_{ik}`; the other rows stay.

    LAS's objective :math:`\\min_j z_j \\sum_k X_{jk}` does not see the types, so every such split is
    optimal: the rows' totals stay, and the spread jobs' load :math:`F = \\sum_j z_j x_j \\le \\sum_k r_k`
    (the capacity rows summed) puts :math:`F r_k / \\sum_l r_l \\le r_k` on type k. Gavel's interior-point
    solver (ECOS) returns a central optimum, which on a cluster whose types have equal GPU counts is
    the even split (the problem is symmetric in the types); a simplex vertex puts a class's time on
    one type, and on msr_seed0_2869ce (36:36:36) put 75 % of it on V100s, which made the
    heterogeneity-agnostic policy favour the fastest GPUs (docs/simulator.md, "Gavel's policies")."""
    X = np.array(X, dtype=float)
    spread = (z > 0).all(axis=1) & (z == z[:, :1]).all(axis=1)
    if not spread.any():
        return X
    room = np.maximum(np.asarray(cap, float) - (z * X)[~spread].sum(axis=0), 0.0)
    if room.sum() > 0:
        # at most 1: a row's total may exceed 1 by the LP's feasibility tolerance, and one type's part
        # of it could then too
        X[spread] = np.minimum(X[spread].sum(axis=1, keepdims=True) * room / room.sum(), 1.0)
    return X


def max_sum_throughput(T: np.ndarray, z: np.ndarray, cap: np.ndarray, budget: Budget | None = None) -> Allocation:
    """:math:`\\max_X \\sum_{jk} T_{jk} X_{jk}` under the base constraints; ``value`` is that sum. ``budget``: the LP's
    time limit (:func:`~dlsched.policies.gavel_prices.optimal_lp`)."""
    m, K = T.shape
    if m == 0 or not (T > 0).any():
        return Allocation(np.zeros((m, K)), 0.0, 0)
    scale = T.max()
    first, inverse, count = classes(T, z)
    A, b = base_rows(z[first], cap, count)
    c = -(T[first] / scale * count[:, None]).ravel()
    x = optimal_lp(c, A, b, (T[first] > 0).ravel().astype(float), budget=budget).x
    return Allocation(np.clip(x.reshape(first.size, K), 0.0, 1.0)[inverse], -float(c @ x) * scale)


def min_total_duration(T: np.ndarray, z: np.ndarray, cap: np.ndarray, R: np.ndarray,
                       budget: Budget | None = None) -> Allocation:
    """The smallest M such that every job can finish its remaining ``R[j]`` steps within M seconds at the
    steady rate :math:`\\tau_j(X)`: one LP in :math:`(X, s = R_{\\max}/M)` (Charnes–Cooper, module
    docstring). ``value`` is M in seconds (inf if a job with work left runs nowhere). ``budget``: the LP's
    time limit (:func:`~dlsched.policies.gavel_prices.optimal_lp`)."""
    m, K = T.shape
    X = np.zeros((m, K))
    rows = np.flatnonzero(np.asarray(R) > 0)
    if rows.size == 0:
        return Allocation(X, 0.0, 0)
    if not (T[rows] > 0).any(axis=1).all():
        return Allocation(X, float("inf"), 0)
    Rr = np.asarray(R, float)[rows]
    Rmax = Rr.max()
    A0, b0 = base_rows(z[rows], cap)
    n = rows.size * K
    A, b, ub = _with_scalar(A0, b0, (T[rows] > 0).ravel().astype(float), -_per_job(T[rows]), Rr / Rmax,
                            np.zeros(rows.size))
    sol = optimal_lp(np.r_[np.zeros(n), -1.0], A, b, ub, budget=budget).x
    X[rows] = np.clip(sol[:n].reshape(rows.size, K), 0.0, 1.0)
    s = float(sol[-1])
    return Allocation(X, Rmax / s if s > 0 else float("inf"))


def isolated_share(z: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Gavel's isolated allocation (``isolated.py``): :math:`c_k / (m z_{jk})` of every type, each row
    scaled down to sum at most 1 (0 on a type where the job does not fit)."""
    m = z.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(z > 0, np.asarray(cap, float)[None, :] / (m * np.where(z > 0, z, 1.0)), 0.0)
    return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)


def ftf_ratios(X: np.ndarray, T: np.ndarray, R: np.ndarray, elapsed: np.ndarray, E: np.ndarray) -> np.ndarray:
    """:math:`\\rho_j(X) = (t_j + R_j/\\tau_j(X)) / E_j` (inf where :math:`\\tau_j = 0` and work is left)."""
    tau = (T * X).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (elapsed + np.where(R > 0, R / tau, 0.0)) / E


def finish_time_fairness(T: np.ndarray, z: np.ndarray, cap: np.ndarray, R: np.ndarray, elapsed: np.ndarray,
                         E: np.ndarray, *, rtol: float = 1e-9, max_lps: int = 80, budget: Budget | None = None) -> Allocation:
    """:math:`\\min_X \\max_j \\rho_j(X)` (module docstring), ``E[j]`` :math:`= I_j + R_j/\\tau^{iso}_j` the
    job's expected isolated finish time. Bisection on ρ between :math:`\\max_j t_j/E_j` (below it no
    allocation works) and the best ρ of the allocations found so far (the isolated one first); at each
    ρ the LP :math:`\\max \\lambda` s.t. :math:`\\tau_j(X) \\ge \\lambda R_j/(\\rho E_j - t_j)` says whether
    ρ is reachable (λ ≥ 1), and its X is an allocation whose ρ tightens the upper end. Stops when the
    ends are within ``rtol``; ``value`` is ρ of the returned X (an upper bound within ``rtol`` of ρ*), ``bound``
    the lower end (no allocation reaches a ρ below it: none has :math:`\rho_j < t_j/E_j`, and each LP that
    raised it was solved to optimality with λ < 1). ``budget``: the bisection stops when an LP's time limit,
    what remains of it, ends first, with the best allocation so far (the isolated one at least, always
    feasible) and the lower end it reached, still a certified bound."""
    m, K = T.shape
    X = np.zeros((m, K))
    R = np.asarray(R, float)
    rows = np.flatnonzero((R > 0) & (T > 0).any(axis=1))
    if rows.size == 0:
        return Allocation(X, 0.0, 0)
    Tr, Rr, tr, Er = T[rows], R[rows], np.asarray(elapsed, float)[rows], np.asarray(E, float)[rows]
    A0, b0 = base_rows(z[rows], cap)
    ub = (Tr > 0).ravel().astype(float)
    n = rows.size * K
    best = isolated_share(z[rows], cap) * (Tr > 0)
    val = float(ftf_ratios(best, Tr, Rr, tr, Er).max())
    lo, hi = float((tr / Er).max()), val
    lps = 0
    while hi - lo > rtol * hi and lps < max_lps:
        rho = 0.5 * (lo + hi)
        d = Rr / (rho * Er - tr)
        dmax = d.max()
        A, b, ubv = _with_scalar(A0, b0, ub, -_per_job(Tr), d / dmax, np.zeros(rows.size))
        try:
            sol = optimal_lp(np.r_[np.zeros(n), -1.0], A, b, ubv, budget=budget).x
        except LPCut:
            break
        lps += 1
        x = np.clip(sol[:n].reshape(rows.size, K), 0.0, 1.0)
        got = float(ftf_ratios(x, Tr, Rr, tr, Er).max())
        if got < val:
            best, val = x, got
        if sol[-1] >= dmax * (1 - 1e-9):       # lambda >= 1: rho is reachable
            hi = rho
        else:
            lo = rho
        hi = min(hi, val)
    X[rows] = best
    return Allocation(X, val, lps, lo)


def srpt_perf(T: np.ndarray, z: np.ndarray, cap: np.ndarray, R: np.ndarray) -> Allocation:
    r"""Heterogeneity-aware shortest remaining processing time: jobs in increasing
    :math:`R_j / \max_k T_{jk}` (remaining work at the best type's throughput, ties by row), each on
    the type where its throughput is highest among those with ``z[j, k]`` GPUs free
    (:math:`X_{jk} = 1`); a job that fits no type is skipped, so smaller jobs behind it may run.
    ``value`` is the number of jobs allocated."""
    best = T.max(axis=1) if T.shape[1] else np.zeros(T.shape[0])
    with np.errstate(divide="ignore"):
        eta = np.where(best > 0, np.asarray(R, float) / np.where(best > 0, best, 1.0), np.inf)
    return _fastest_free_type(T, z, cap, np.argsort(eta, kind="stable"), stop=False)


def fifo_perf(T: np.ndarray, z: np.ndarray, cap: np.ndarray) -> Allocation:
    """Gavel's type-aware FIFO over jobs in arrival order (rows of T): each takes the type where its
    throughput is highest among those with ``z[j, k]`` GPUs free (:math:`X_{jk} = 1`); the queue stops
    at the first job that fits no type. ``value`` is the number of jobs allocated."""
    return _fastest_free_type(T, z, cap, np.arange(T.shape[0]), stop=True)


def _fastest_free_type(T: np.ndarray, z: np.ndarray, cap: np.ndarray, order: np.ndarray, *, stop: bool) -> Allocation:
    """Jobs in ``order``, each with :math:`X_{jk} = 1` on the type of highest throughput among those
    with ``z[j, k]`` GPUs free (none where that throughput is 0); a job that fits no type stops the
    queue (``stop``) or is skipped."""
    X = np.zeros(T.shape)
    free = np.asarray(cap, float).copy()
    for j in order.tolist():
        fits = (z[j] > 0) & (z[j] <= free + 1e-9)
        if not fits.any():
            if stop:
                break
            continue
        k = int(np.argmax(np.where(fits, T[j], -1.0)))
        if T[j, k] > 0:
            X[j, k] = 1.0
            free[k] -= z[j, k]
    return Allocation(X, float(X.sum()), 0)


@dataclass
class PackedAllocation:
    """``X[j, k]``: job j's time fractions alone on type k; ``Y[p, k]``: pair p's (``pairs[p]`` = (a, b))
    time fractions together on type k; ``value`` the optimal minimum; ``lps`` the LPs solved."""

    X: np.ndarray
    Y: np.ndarray
    value: float
    lps: int = 1


def max_min_fairness_packed(W: np.ndarray, z: np.ndarray, cap: np.ndarray, pairs: np.ndarray, Va: np.ndarray,
                            Vb: np.ndarray, count: np.ndarray | None = None, *, pareto: bool = True,
                            budget: Budget | None = None) -> PackedAllocation:
    r"""Gavel's max-min fairness with space sharing (``MaxMinFairnessPolicyWithPacking``; Narayanan et
    al., OSDI'20, §4.1 "Space sharing"): time fractions over combinations, each job alone (X, m × K)
    or a pair p = (a, b) of jobs together on the same GPUs (Y, P × K),

    .. math::

        \max \min_j \Big(\sum_k W_{jk} X_{jk} + \sum_{p \ni j} \sum_k V_{jpk} Y_{pk}\Big)
        \quad \text{s.t.} \quad
        \sum_j z_{jk} X_{jk} + \sum_p z_{a_p k} Y_{pk} \le c_k, \qquad
        \sum_k X_{jk} + \sum_{p \ni j} \sum_k Y_{pk} \le 1, \qquad X, Y \ge 0,

    :math:`W_{jk}` job j's normalised throughput alone (:func:`max_min_fairness`), :math:`V_{jpk}`
    its normalised throughput in pair p (``Va[p]`` for a, ``Vb[p]`` for b; the two jobs of a pair hold
    the same :math:`z_{a_p k} = z_{b_p k}` GPUs, counted once). A combination runs only where all its
    coefficients are positive (X ≤ [W > 0], Y ≤ [Va > 0][Vb > 0]). Jobs with no positive coefficient do
    not count in the minimum. ``pareto``: then maximise the sum of the jobs' normalised throughputs
    keeping every job at the minimum, from the first LP's basis, as :func:`max_min_fairness` does.

    ``count``: row j stands for :math:`n_j` identical jobs (a class, :func:`classes`; 1 each by
    default), and pair p = (a, b) for each of the :math:`n_a n_b` pairs of a job of a with one of b,
    or with a = b for each of the :math:`n_a (n_a - 1)/2` pairs of two jobs of a (both at ``Va``);
    X and Y are then each such job's and each such pair's fractions: the capacity rows weigh them by
    those numbers, and a job of a is in :math:`n_b` pairs of p (:math:`n_a - 1` where a = b). The
    problem is symmetric in the jobs of a class, so an optimum with equal fractions for them exists
    and this LP over classes has the value of the LP over jobs (Gavel's
    ``get_allocation_using_job_type_throughputs`` reduces by job type alike).

    ``budget``: as for :func:`max_min_fairness` (the first LP's optimum is ``value``, its own bound).
    """
    m, K = W.shape
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    P = pairs.shape[0]
    n_of = np.ones(m) if count is None else np.asarray(count, float)
    a, b = pairs[:, 0], pairs[:, 1]
    own = a == b
    mult = np.where(own, n_of[a] * (n_of[a] - 1) / 2, n_of[a] * n_of[b])   # the job pairs p stands for
    in_a = np.where(own, n_of[a] - 1, n_of[b])        # pairs of p each job of a is in
    in_b = np.where(own, 0.0, n_of[a])                # ... each job of b (none apart where a = b)
    Va, Vb = np.asarray(Va, float).reshape(P, K), np.asarray(Vb, float).reshape(P, K)
    okY = (Va > 0) & (Vb > 0) & (mult > 0)[:, None]
    live = (W > 0).any(axis=1)
    live[pairs[okY.any(axis=1)].ravel()] = True
    if not live.any():
        return PackedAllocation(np.zeros((m, K)), np.zeros((P, K)), 0.0, 0)
    scale = max(W.max(initial=0.0), np.where(okY, np.maximum(Va, Vb), 0.0).max(initial=0.0))
    Ws, Vas, Vbs = W / scale, np.where(okY, Va, 0.0) / scale, np.where(okY, Vb, 0.0) / scale
    nX, nY = m * K, P * K
    n = nX + nY + 1
    kk = np.tile(np.arange(K), m)
    jj = np.repeat(np.arange(m), K)
    ar, br = np.repeat(a, K), np.repeat(b, K)
    kp = np.tile(np.arange(K), P)
    colX, colY = np.arange(nX), nX + np.arange(nY)
    ia, ib = np.repeat(in_a, K), np.repeat(in_b, K)
    # rows: K capacity rows, m rows "time of a job of j <= 1", m rows "t - throughput of a job of j <= 0"
    rows = np.concatenate([kk, K + jj, K + m + jj,
                           kp, K + ar, K + br, K + m + ar, K + m + br,
                           K + m + np.flatnonzero(live)])
    cols = np.concatenate([colX, colX, colX, colY, colY, colY, colY, colY, np.full(int(live.sum()), n - 1)])
    vals = np.concatenate([(z * n_of[:, None]).ravel().astype(float), np.ones(nX), -Ws.ravel(),
                           (z[a] * mult[:, None]).ravel().astype(float), ia, ib,
                           -Vas.ravel() * ia, -Vbs.ravel() * ib, np.ones(int(live.sum()))])
    keep = vals != 0
    A = sp.csc_matrix((vals[keep], (rows[keep], cols[keep])), shape=(K + 2 * m, n))
    b_up = np.concatenate([np.asarray(cap, float), np.ones(m), np.zeros(m)])
    ub = np.concatenate([(W > 0).ravel().astype(float), okY.ravel().astype(float), [np.inf]])
    out = optimal_lp(np.r_[np.zeros(n - 1), -1.0], A, b_up, ub, budget=budget)
    t, x, lps = float(out.x[-1]), out.x[:n - 1], 1
    if pareto and t > 0 and _second_lp_time(out.highs, budget):
        # every job kept at t, the rest used: the same model with new costs (the sum over all jobs of
        # their throughputs), t at least its optimum
        h = out.highs
        gain = np.concatenate([(Ws * n_of[:, None]).ravel(),
                               (Vas * (n_of[a] * in_a)[:, None] + Vbs * (n_of[b] * in_b)[:, None]).ravel()])
        h.changeColsCost(n, np.arange(n, dtype=np.int32), np.append(-gain, 0.0))
        h.changeColBounds(n - 1, t * (1 - 1e-9), np.inf)
        h.run()
        lps = 2
        if translate(h.getModelStatus(), h.getInfo().primal_solution_status == 2)[1] == Status.OPTIMAL:
            x = np.asarray(h.getSolution().col_value, dtype=float)[:n - 1]
    x = np.clip(x, 0.0, 1.0)
    return PackedAllocation(x[:nX].reshape(m, K), x[nX:].reshape(P, K), t * scale, lps)

r"""Gavel's max-min LP (:func:`dlsched.policies.gavel_lp.max_min_fairness`) solved through its prices.

Over classes c of equal jobs (:func:`dlsched.policies.gavel_lp.classes`: :math:`n_c` jobs,
:math:`Z_{ck} = n_c z_{ck}` GPUs per unit of :math:`X_{ck}`), with each row's dual in brackets:

.. math:: \max t \quad\text{s.t.}\quad t \le \sum_k W_{ck} X_{ck}\ [u_c], \quad
          \sum_c Z_{ck} X_{ck} \le c_k\ [p_k], \quad \sum_k X_{ck} \le 1\ [v_c], \quad
          0 \le X_{ck} \le [W_{ck} > 0].

**Bound.** For any :math:`p, u, v \ge 0` with :math:`s = \sum_c u_c > 0` the Lagrangian gives

.. math:: t^* \le B(p, u, v) = \Big(c \cdot p + \sum_c v_c
          + \sum_{ck: W_{ck} > 0} \max(0,\ W_{ck} u_c - Z_{ck} p_k - v_c)\Big) / s,

so a feasible X whose minimum is within a relative ``gap`` of some B is optimal to that gap.

**Patterns.** At prices p, the cheapest way for a job of class c to reach a level t
(:math:`\min \sum_k z_{ck} p_k X_{ck}` s.t. :math:`W_c \cdot X_c \ge t`, :math:`\sum_k X_{ck} \le 1`: a
two-row LP, so at most two types) is either one type k with :math:`W_{ck} \ge t`,
:math:`X_{ck} = t / W_{ck}`, or, using all its time, two types with :math:`W_{ck} < t < W_{cl}`,
:math:`X_{cl} = \theta = (t - W_{ck}) / (W_{cl} - W_{ck})`, :math:`X_{ck} = 1 - \theta`. Either way X is
affine in t, so the classes held to their pattern put :math:`\alpha_k t + \beta_k` GPUs on type k,
and their duals follow from the pattern's columns having zero reduced cost (one type:
:math:`v_c = 0`, :math:`u_c = Z_{ck} p_k / W_{ck}`; two: :math:`u_c = (Z_{cl} p_l - Z_{ck} p_k) /
(W_{cl} - W_{ck})`, :math:`v_c = W_{ck} u_c - Z_{ck} p_k`).

**Method** (:func:`max_min_by_prices`):

1. Prices p and a level t from a coarse LP: the classes of W rounded to a relative step (0.1; 0.3 or
   1 where that merges too few), :func:`coarse_prices`. Where no step merges enough, the whole LP
   with its duals (:func:`whole`).
2. Each class's pattern at (p, t) (:func:`patterns`). The classes in doubt (another pattern within a
   relative ``doubt`` in cost, t near the pattern's limits, or no pattern reaching t) keep all their
   columns in a small LP with t; the others enter as :math:`\alpha t + \beta`, their limits as bounds
   on t. A restriction of the LP, so its X is feasible; its duals and the patterns' give B.
3. Proven when B is within ``gap`` of X's minimum. When B is close (within ``doubt``), the small LP's
   prices are good: back to 2 at them, with the classes of positive reduced cost in doubt (a
   column-generation step). When it is far, or the small LP has no solution, back to 2 with four
   times the doubt.

Without a proof in a few rounds, or when most classes are in doubt (e.g. every type equally
priced), it returns None and the caller solves the whole LP. On jobs drawn from Gavel's entries,
every one distinct, it proves the optimum in 2 or 3 LPs, the coarse one included
(docs/results/gavel.md, "Decision time").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dlsched.errors import SolverError
from dlsched.models.mcmdk import MatrixForm
from dlsched.result import Status
from dlsched.solvers.highs import MatrixOutcome, solve_matrix
from dlsched.solvers.options import Budget, SolveOptions


#: HiGHS's options for this module's LPs: tight feasibility tolerances (the reduced costs are of order
#: 1/C, where HiGHS's default 1e-7 would show in B), no presolve and the primal simplex (measured on the
#: whole LP of 64 / 256 distinct jobs: 0.9 / 6.6 ms, against 1.4 / 11.7 ms with the defaults)
HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10, "presolve": "off",
                 "simplex_strategy": 4}


class LPCut(Exception):
    """A decision's budget (``budget`` of :func:`optimal_lp`) ended before an LP of it was solved to optimality:
    the caller answers without it (:class:`dlsched.policies.gavel.GavelLPPolicy`)."""


def optimal_lp(c, A, b, ub, lb=None, *, want_duals: bool = False, raw: dict | None = None,
               budget: Budget | None = None) -> MatrixOutcome:
    """min c·x, A x ≤ b, lb ≤ x ≤ ub (lb 0 by default) by HiGHS (the house's matrix path), where an
    optimum must exist: Gavel's problems are never infeasible (x = 0 is feasible) nor unbounded, so
    anything else is a backend failure. The outcome keeps the HiGHS model (``highs``) for a re-solve
    from its basis, the rows' duals with ``want_duals``; ``raw``: HiGHS options. ``budget``: a decision's
    clock; HiGHS gets what remains of it, and :class:`LPCut` is raised when it is spent before the LP starts
    or HiGHS stops at its time limit."""
    n = len(c)
    mf = MatrixForm(np.asarray(c, float), A, np.full(A.shape[0], -np.inf), np.asarray(b, float),
                    np.zeros(n) if lb is None else np.asarray(lb, float), np.asarray(ub, float),
                    np.zeros(n, dtype=np.int32), "min", 0)
    opts = SolveOptions(raw=raw or {})
    if budget is not None and budget.limited:
        if budget.expired():
            raise LPCut
        opts = opts.within(budget)
    out = solve_matrix(mf, opts, want_duals=want_duals)
    if out.status != Status.OPTIMAL:
        if out.termination == "time_limit":
            raise LPCut
        raise SolverError("HiGHS did not solve a Gavel allocation LP to optimality")
    return out


def max_min_matrix(W: np.ndarray, Z: np.ndarray, cap: np.ndarray) -> tuple[sp.csc_matrix, np.ndarray]:
    """The max-min LP's rows over (X flattened row-major, t), built column by column from whole arrays:
    K capacity rows :math:`\\sum_c Z_{ck} X_{ck} \\le c_k`, C rows :math:`\\sum_k X_{ck} \\le 1`, then C rows
    :math:`t - \\sum_k W_{ck} X_{ck} \\le 0`; and the rows' upper sides."""
    C, K = W.shape
    c_of = np.repeat(np.arange(C), K)
    # each X column holds up to 3 entries in row order: capacity row k, row K + c, row K + C + c
    idx = np.stack([np.tile(np.arange(K), C), K + c_of, K + C + c_of], axis=1)
    val = np.stack([Z.ravel().astype(float), np.ones(C * K), -W.ravel()], axis=1)
    keep = val != 0
    indptr = np.zeros(C * K + 2, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:C * K + 1])
    indptr[-1] = indptr[-2] + C
    M = sp.csc_matrix((np.concatenate([val[keep], np.ones(C)]), np.concatenate([idx[keep], K + C + np.arange(C)]),
                       indptr), shape=(K + 2 * C, C * K + 1))
    return M, np.concatenate([np.asarray(cap, float), np.ones(C), np.zeros(C)])


@dataclass
class Priced:
    """The proven optimum: ``t`` (the least :math:`W_c \\cdot X_c`), ``X`` (C × K), the classes' duals
    ``u`` (scaled to sum to 1), the bound ``B`` (:math:`t \\le t^* \\le B`) and the LPs solved (the
    coarse one and the small ones)."""

    t: float
    X: np.ndarray
    u: np.ndarray
    B: float
    lps: int


def coarse_classes(W: np.ndarray, Z: np.ndarray, step: float) -> np.ndarray:
    """Each class's coarse class: equal rows of W rounded to a relative ``step``
    (:math:`\\lfloor\\log W / \\log(1 + \\text{step})\\rceil`) and equal Z."""
    key = np.where(W > 0, np.round(np.log(np.where(W > 0, W, 1.0)) / np.log1p(step)), -np.inf)
    _, inverse = np.unique(np.concatenate([key, Z / Z.max()], axis=1), axis=0, return_inverse=True)
    return np.asarray(inverse).reshape(-1)


def coarse_prices(W: np.ndarray, Z: np.ndarray, cap: np.ndarray, inverse: np.ndarray,
                  budget: Budget | None = None) -> tuple[np.ndarray, float]:
    """(p, t) of the LP over the coarse classes ``inverse``, each with its members' mean W and summed Z."""
    G, K = int(inverse.max()) + 1, W.shape[1]
    size = np.bincount(inverse, minlength=G).astype(float)
    Wg = np.stack([np.bincount(inverse, W[:, k], G) for k in range(K)], axis=1) / size[:, None]
    Zg = np.stack([np.bincount(inverse, Z[:, k], G) for k in range(K)], axis=1)
    M, b = max_min_matrix(Wg, Zg, cap)
    out = optimal_lp(np.r_[np.zeros(Wg.size), -1.0], M, b, np.append((Wg > 0).ravel().astype(float), np.inf),
                     want_duals=True, raw=HIGHS_OPTIONS, budget=budget)
    return np.maximum(-out.row_dual[:K], 0.0), float(out.x[-1])


def whole(W: np.ndarray, Z: np.ndarray, cap: np.ndarray, gap: float, budget: Budget | None = None) -> Priced | None:
    """The whole LP (every column) with its duals, and B from them: where rounding merges few classes
    the coarse LP would be about as large."""
    C, K = W.shape
    M, b = max_min_matrix(W, Z, cap)
    out = optimal_lp(np.r_[np.zeros(W.size), -1.0], M, b, np.append((W > 0).ravel().astype(float), np.inf),
                     want_duals=True, raw=HIGHS_OPTIONS, budget=budget)
    d = np.maximum(-out.row_dual, 0.0)
    X = np.clip(out.x[:-1].reshape(C, K), 0.0, np.where(W > 0, 1.0, 0.0))
    reach, B, _ = _judge(X, W, Z, cap, d[:K], d[K + C:], d[K:K + C])
    return Priced(reach, X, d[K + C:] / d[K + C:].sum(), B, 1) if B <= reach * (1 + gap) and _fits(X, Z, cap) else None


def _judge(X, W, Z, cap, p, u, v) -> tuple[float, float, np.ndarray]:
    """(X's minimum :math:`\\min_c W_c \\cdot X_c`, B(p, u, v), each class's largest positive reduced cost)."""
    return (float((W * X).sum(axis=1).min()), *bound(W, Z, cap, p, u, v))


def patterns(W: np.ndarray, z: np.ndarray, p: np.ndarray, t: float, doubt: float):
    """Each class's cheapest pattern at prices p and level t (module docstring): (lo, hi, doubtful),
    ``lo == hi`` for one type; ``doubtful`` where another pattern costs within a relative ``doubt``,
    where t is within ``doubt`` of the pattern's limits (:math:`t \\le W_{c,hi}`, :math:`W_{c,lo} \\le t`
    for two types), or where no pattern reaches t."""
    C, K = W.shape
    lo_k, hi_k = np.meshgrid(np.arange(K), np.arange(K), indexing="ij")
    lo_k, hi_k = lo_k.ravel(), hi_k.ravel()                       # candidates: (k, k) one type, (k, l) two
    Wl, Wh = W[:, lo_k], W[:, hi_k]
    cl, ch = z[:, lo_k] * p[lo_k], z[:, hi_k] * p[hi_k]
    one = lo_k == hi_k
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = (t - Wl) / (Wh - Wl)
        cost = np.where(one, t * ch / Wh, cl * (1 - theta) + ch * theta)
    ok = np.where(one, Wh >= t, (Wl > 0) & (Wl < t) & (t < Wh))
    cost = np.concatenate([np.where(ok, cost, np.inf), np.full((C, 1), np.inf)], axis=1)  # a second even for K = 1
    order = np.argsort(cost, axis=1)[:, :2]
    best, second = np.take_along_axis(cost, order, axis=1).T
    pick = order[:, 0]
    lo, hi = lo_k[pick], hi_k[pick]
    rows = np.arange(C)
    edge = (W[rows, hi] < t * (1 + doubt)) | ((lo != hi) & (W[rows, lo] > t * (1 - doubt)))
    tie = second <= best * (1 + doubt) + 1e-12 * np.max(np.where(np.isfinite(cost), cost, 0.0))
    return lo, hi, ~np.isfinite(best) | tie | edge


def _held(W, lo, hi, rows):
    """For the classes ``rows`` held to their pattern: X = a t + b (C_rows × K, as (a, b))."""
    K = W.shape[1]
    r = np.arange(rows.size)
    a, b = np.zeros((rows.size, K)), np.zeros((rows.size, K))
    Wl, Wh = W[rows, lo[rows]], W[rows, hi[rows]]
    one = lo[rows] == hi[rows]
    d = np.where(one, 1.0, Wh - Wl)
    # one type: t / W_hi; two: X_hi = (t - W_lo)/d, X_lo = (W_hi - t)/d
    a[r, hi[rows]] = np.where(one, 1.0 / Wh, 1.0 / d)
    b[r, hi[rows]] = np.where(one, 0.0, -Wl / d)
    a[r[~one], lo[rows][~one]] = -1.0 / d[~one]
    b[r[~one], lo[rows][~one]] = Wh[~one] / d[~one]
    return a, b


def _held_duals(W, Z, lo, hi, p):
    """(u, v) of every class from its pattern at prices p (module docstring), clipped at 0."""
    rows = np.arange(W.shape[0])
    Wl, Wh = W[rows, lo], W[rows, hi]
    one = lo == hi
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(one, Z[rows, hi] * p[hi] / Wh, (Z[rows, hi] * p[hi] - Z[rows, lo] * p[lo]) / (Wh - Wl))
    v = np.where(one, 0.0, Wl * u - Z[rows, lo] * p[lo])
    return np.maximum(u, 0.0), np.maximum(v, 0.0)


def bound(W, Z, cap, p, u, v) -> tuple[float, np.ndarray]:
    """B(p, u, v) (module docstring) and each class's largest positive reduced cost."""
    rc = np.where(W > 0, W * u[:, None] - Z * p[None, :] - v[:, None], 0.0)
    pos = np.maximum(rc, 0.0)
    s = u.sum()
    return (float(cap @ p) + float(v.sum()) + float(pos.sum())) / s if s > 0 else np.inf, pos.max(axis=1)


def max_min_by_prices(W: np.ndarray, Z: np.ndarray, cap: np.ndarray, *, step: float = 0.1, doubt: float = 0.005,
                      gap: float = 1e-9, rounds: int = 4, most: float = 0.5, shrink: float = 0.25,
                      budget: Budget | None = None) -> Priced | None:
    """The max-min LP over classes (``W``, ``Z``: C × K, W scaled to order 1) by prices (module
    docstring), proven optimal within a relative ``gap``; None where that does not happen within
    ``rounds`` small LPs or where more than ``most`` of the classes are in doubt. ``budget``: every LP's
    (:func:`optimal_lp`: :class:`LPCut` when it ends first)."""
    C, K = W.shape
    for coarser in (1, 3, 10):
        inverse = coarse_classes(W, Z, step * coarser)
        if inverse.max() + 1 <= C * shrink:
            break
    else:
        return whole(W, Z, cap, gap, budget)
    doubt *= coarser                       # coarser prices, more doubt
    first_doubt = doubt
    p, t = coarse_prices(W, Z, cap, inverse, budget)
    lps = 1
    doubtful = np.zeros(C, dtype=bool)
    for _ in range(rounds):
        lo, hi, unsure = patterns(W, Z, p, t, doubt)   # Z_c = n_c z_c ranks a class's own patterns as z_c does
        doubtful |= unsure
        if doubtful.sum() > most * C:
            return None
        fixed, amb = np.flatnonzero(~doubtful), np.flatnonzero(doubtful)
        a, b = _held(W, lo, hi, fixed)
        alpha, beta = (Z[fixed] * a).sum(axis=0), (Z[fixed] * b).sum(axis=0)
        two = lo[fixed] != hi[fixed]
        t_hi = W[fixed, hi[fixed]].min(initial=np.inf)
        t_lo = W[fixed[two], lo[fixed][two]].max(initial=0.0)
        M, rhs = max_min_matrix(W[amb], Z[amb], cap)
        n = amb.size * K
        M = (M + sp.csc_matrix((alpha, (np.arange(K), np.full(K, n))), shape=M.shape)).tocsc()
        rhs[:K] -= beta
        out = None                               # stays None where no level suits every held pattern
        if t_lo <= t_hi:
            lps += 1
            try:
                out = optimal_lp(np.r_[np.zeros(n), -1.0], M, rhs, np.append((W[amb] > 0).ravel().astype(float), t_hi),
                                 np.append(np.zeros(n), t_lo), want_duals=True, raw=HIGHS_OPTIONS, budget=budget)
            except SolverError:
                pass
        if out is None:
            doubt *= 4
            continue
        q = np.maximum(-out.row_dual[:K], 0.0)
        u, v = _held_duals(W, Z, lo, hi, q)
        A = amb.size
        v[amb] = np.maximum(-out.row_dual[K:K + A], 0.0)
        u[amb] = np.maximum(-out.row_dual[K + A:], 0.0)
        X = np.zeros((C, K))
        X[fixed] = a * float(out.x[-1]) + b
        X[amb] = out.x[:n].reshape(A, K)
        X = np.clip(X, 0.0, np.where(W > 0, 1.0, 0.0))
        reach, B, rc = _judge(X, W, Z, cap, q, u, v)
        if B <= reach * (1 + gap) and _fits(X, Z, cap):
            return Priced(reach, X, u / u.sum(), B, lps)
        if B <= reach * (1 + doubt):
            # close, so the small LP's prices are good: the patterns at them, with the first doubt, and the
            # classes with a positive reduced cost in doubt (a column-generation step)
            p, t, doubt = q, reach, first_doubt
            doubtful = rc > gap * reach
        else:
            # the held patterns were too far off for the small LP's prices to mean much: doubt more
            doubt *= 4
    return None


def _fits(X, Z, cap, tol: float = 1e-9) -> bool:
    """X within the capacity and time rows to a relative ``tol``."""
    within_cap = (Z * X).sum(axis=0) <= np.asarray(cap, float) * (1 + tol) + tol
    return bool(within_cap.all() and (X.sum(axis=1) <= 1 + tol).all())

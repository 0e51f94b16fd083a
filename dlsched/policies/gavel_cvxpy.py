r"""Gavel's allocation problems stated in CVXPY, Gavel's own front end (:mod:`dlsched.policies.gavel_lp` has
the formulas and the matrix path the policies use; the tests check that both give the same optimal values).

Max-min fairness and max-sum-throughput as Gavel states them; min-total-duration as the one LP of
its Charnes–Cooper form (Gavel bisects); finish-time fairness as Gavel's convex program
(``inv_pos``), for a conic solver. Each function returns the optimal value in the units of its
matrix-path twin. CVXPY is an optional front end, imported here only.
"""

from __future__ import annotations

import numpy as np

from dlsched.errors import SolverError


def _base(x, z, cap, T):
    import cvxpy as cp

    return [x >= 0, x <= (T > 0).astype(float), cp.sum(cp.multiply(z, x), axis=0) <= cap, cp.sum(x, axis=1) <= 1]


def _value(prob, solver: str) -> float:
    prob.solve(solver=solver)
    if prob.status != "optimal":
        raise SolverError(f"CVXPY ({solver}) did not solve a Gavel allocation problem: {prob.status}")
    return float(prob.value)


def max_min_fairness(W, z, cap, solver: str = "HIGHS") -> float:
    """:math:`\\max_X \\min_j \\sum_k W_{jk} X_{jk}` over the jobs with a positive row of W."""
    import cvxpy as cp

    rows = np.flatnonzero((W > 0).any(axis=1))
    if rows.size == 0:
        return 0.0
    W, z = W[rows], z[rows]
    x = cp.Variable(W.shape)
    return _value(cp.Problem(cp.Maximize(cp.min(cp.sum(cp.multiply(W, x), axis=1))), _base(x, z, cap, W)), solver)


def max_sum_throughput(T, z, cap, solver: str = "HIGHS") -> float:
    """:math:`\\max_X \\sum_{jk} T_{jk} X_{jk}`."""
    import cvxpy as cp

    x = cp.Variable(T.shape)
    return _value(cp.Problem(cp.Maximize(cp.sum(cp.multiply(T, x))), _base(x, z, cap, T)), solver)


def min_total_duration(T, z, cap, R, solver: str = "HIGHS") -> float:
    """:math:`\\min M` s.t. :math:`\\tau_j(X) \\ge R_j / M`, stated with :math:`s = 1/M` as a variable
    (Charnes–Cooper): :math:`\\max s` s.t. :math:`R_j s \\le \\tau_j(X)`; returns M."""
    import cvxpy as cp

    rows = np.flatnonzero(np.asarray(R) > 0)
    if rows.size == 0:
        return 0.0
    T, z, R = T[rows], z[rows], np.asarray(R, float)[rows]
    x, s = cp.Variable(T.shape), cp.Variable()
    tau = cp.sum(cp.multiply(T, x), axis=1)
    return 1.0 / _value(cp.Problem(cp.Maximize(s), _base(x, z, cap, T) + [cp.multiply(R, s) <= tau]), solver)


def finish_time_fairness(T, z, cap, R, elapsed, E, solver: str = "CLARABEL") -> float:
    """:math:`\\min_X \\max_j (t_j + R_j/\\tau_j(X)) / E_j`, Gavel's ``finish_time_fairness.py`` objective."""
    import cvxpy as cp

    R = np.asarray(R, float)
    rows = np.flatnonzero((R > 0) & (T > 0).any(axis=1))
    if rows.size == 0:
        return 0.0
    T, z, R, t, E = T[rows], z[rows], R[rows], np.asarray(elapsed, float)[rows], np.asarray(E, float)[rows]
    x = cp.Variable(T.shape)
    tau = cp.sum(cp.multiply(T, x), axis=1)
    rho = cp.multiply(1.0 / E, t + cp.multiply(R, cp.inv_pos(tau)))
    return _value(cp.Problem(cp.Minimize(cp.max(rho)), _base(x, z, cap, T)), solver)


def max_min_fairness_packed(W, z, cap, pairs, Va, Vb, solver: str = "HIGHS") -> float:
    """Gavel's ``MaxMinFairnessPolicyWithPacking`` over jobs alone (X) and pairs (Y): :math:`\\max \\min_j`
    of job j's normalised throughput over the combinations holding it, a pair's GPUs counted once,
    each job's fractions over its combinations at most 1 (over the jobs with a positive coefficient)."""
    import cvxpy as cp

    m, K = W.shape
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    P = pairs.shape[0]
    okY = ((np.asarray(Va) > 0) & (np.asarray(Vb) > 0)).reshape(P, K).astype(float)
    x, y = cp.Variable((m, K)), cp.Variable((max(P, 1), K))
    # M[j, p] = 1 where job j is in pair p: its pair terms are M @ (V * Y)
    Ma, Mb = np.zeros((m, max(P, 1))), np.zeros((m, max(P, 1)))
    Ma[pairs[:, 0], np.arange(P)] = 1.0
    Mb[pairs[:, 1], np.arange(P)] = 1.0
    pad = np.zeros((max(P, 1) - P, K))
    Va, Vb, okY = (np.vstack([np.asarray(a, float).reshape(P, K), pad]) for a in (Va, Vb, okY))
    za = np.vstack([z[pairs[:, 0]], pad])
    tput = cp.sum(cp.multiply(W, x), axis=1) + Ma @ cp.sum(cp.multiply(Va, y), axis=1) + Mb @ cp.sum(cp.multiply(Vb, y), axis=1)
    live = np.flatnonzero((W > 0).any(axis=1) | ((Ma + Mb) @ okY > 0).any(axis=1))
    if live.size == 0:
        return 0.0
    cons = [x >= 0, y >= 0, x <= (W > 0).astype(float), y <= okY,
            cp.sum(cp.multiply(z, x), axis=0) + cp.sum(cp.multiply(za, y), axis=0) <= cap,
            cp.sum(x, axis=1) + (Ma + Mb) @ cp.sum(y, axis=1) <= 1]
    return _value(cp.Problem(cp.Maximize(cp.min(tput[live])), cons), solver)

r"""Time-indexed exact model of SMD schedules (MODELS.md §2.4): ground truth for small instances.

.. math::

    \min \sum_j \omega_j \sum_{t} t\, z_{j,t}
    \quad\text{s.t.}\quad
    \sum_{o} x_{j,o,t} \le \sum_{t' \ge t} z_{j,t'},\qquad
    \sum_t z_{j,t} = 1,

    \sum_{t' \le t} \sum_o \Delta g_{j,o}\, x_{j,o,t'} \;\ge\; R_j \sum_{t' \le t} z_{j,t'} \quad \forall t,
    \qquad
    \sum_{j,o} (w_o d_j^r + p_o e_j^r)\, x_{j,o,t} \le C^r \quad \forall r, t,

    x_{j,o,t} = 0 \text{ for } t \le \lceil a_j \rceil, \qquad x, z \in \{0, 1\}

==========================  =====================================================
symbol                      meaning
==========================  =====================================================
:math:`x_{j,o,t}`           job j runs configuration o (Pareto (w, p)) in slot t
:math:`z_{j,t}`             job j completes in slot t (one-hot)
:math:`g_{j,o}`             1 / τ_j(w_o, p_o), iterations per second (MODELS.md §2.1)
:math:`\Delta`              slot length (s); slots t = 1..T
==========================  =====================================================

The cumulative progress rows (work done by t ≥ R_j if complete by t) imply MODELS.md's single
progress row at t = T and tighten the LP. ``resizing=False`` adds, per job, one configuration
:math:`y_{j,o}` (:math:`x_{j,o,t} \le y_{j,o}`, :math:`\sum_o y_{j,o} = 1`) and a start indicator
:math:`\sigma_{j,t}` with :math:`\sum_o x_{j,o,t} = \sum_{t' \le t} \sigma_{j,t'} - \sum_{t' < t} z_{j,t'}`:
the job runs without interruption, at one allocation, from its start to its completion.
The objective counts completion slots (JCT = C_j − a_j differs by a constant).

The same sparse matrix feeds three front ends: :func:`build_matrix` (highspy, the fast path),
:func:`build_pyomo` and :func:`build_cvxpy`. Jobs that cannot be scheduled (no configuration
fits) are left out (``meta["unschedulable"]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dlsched.instance.smd import SMDInstance
from dlsched.models.mcmdk import MatrixForm


@dataclass
class TIModel:
    mf: MatrixForm
    T: int
    jobs: np.ndarray            # scheduled jobs
    x_index: np.ndarray         # rows: (col, job, w, p, t) of every x variable
    z_start: int                # first z column; z_{jj,t} = z_start + jj*T + (t-1)
    unschedulable: list[int]


class _Rows:
    """Collects sparse rows (lower <= a x <= upper) from whole arrays."""

    def __init__(self) -> None:
        self.r, self.c, self.v, self.lo, self.hi = [], [], [], [], []
        self.n = 0

    def add(self, row_ids, cols, vals, lo, hi) -> None:
        """``row_ids`` are 0-based within this block of ``len(lo)`` rows."""
        self.r.append(np.asarray(row_ids, dtype=np.int64) + self.n)
        self.c.append(np.asarray(cols, dtype=np.int64))
        self.v.append(np.asarray(vals, dtype=float))
        self.lo.append(np.asarray(lo, dtype=float))
        self.hi.append(np.asarray(hi, dtype=float))
        self.n += len(lo)

    def matrix(self, n_cols: int):
        M = sp.csr_matrix((np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))),
                          shape=(self.n, n_cols))
        M.sum_duplicates()
        M.eliminate_zeros()
        return M, np.concatenate(self.lo), np.concatenate(self.hi)


def nonzeros(inst: SMDInstance, T: int, *, resizing: bool = True) -> int:
    """An upper bound on the nonzeros :func:`build_matrix` makes, without building (rows (a)-(f):
    the (a) and (c) triangles grow as jobs x T^2, the x columns' rows as configurations x T^2)."""
    jobs = inst.scheduled
    n = len(jobs)
    cfg = np.array([inst.configurations(j).size for j in jobs], dtype=np.int64)
    m = np.array([max(T - int(math.ceil(float(inst.arrival[j]) - 1e-9)), 0) for j in jobs], dtype=np.int64)
    n_x = int((cfg * m).sum())
    tri = n * T * (T + 1) // 2
    total = (n_x + tri) + n * T + (int((cfg * m * (m + 1) // 2).sum()) + tri) + n_x * len(inst.resources)
    if not resizing:
        total += 2 * n_x + int(cfg.sum()) + n * T + n_x + 2 * tri
    return int(total)


def build_matrix(inst: SMDInstance, T: int, *, resizing: bool = True, relax: bool = False) -> TIModel:
    """The §2.4 model on slots 1..T as a :class:`MatrixForm` (whole-array build)."""
    jobs = np.array(inst.scheduled, dtype=np.int64)
    n = jobs.size
    delta = float(inst.slot_seconds)
    # x columns: for every job, its configurations x its usable slots
    xs = []
    col = 0
    for jj, j in enumerate(jobs.tolist()):
        c = inst.configurations(j)
        first = int(math.ceil(float(inst.arrival[j]) - 1e-9)) + 1
        ts = np.arange(first, T + 1)
        if ts.size == 0:
            continue
        oo, tt = np.meshgrid(np.arange(c.size), ts, indexing="ij")
        k = oo.size
        xs.append(np.column_stack([col + np.arange(k), np.full(k, jj), c.w[oo.ravel()], c.p[oo.ravel()], tt.ravel(),
                                   oo.ravel()]))
        col += k
    X = np.concatenate(xs) if xs else np.zeros((0, 6), dtype=np.int64)
    n_x = col
    z0 = n_x
    n_z = n * T
    cols = n_x + n_z
    y0 = s0 = cols
    if not resizing:
        n_cfg = np.array([inst.configurations(j).size for j in jobs.tolist()], dtype=np.int64)
        cfg_ptr = np.concatenate([[0], np.cumsum(n_cfg)])
        y0 = cols
        cols += int(cfg_ptr[-1])
        s0 = cols
        cols += n * T
    xc, xj, xw, xp, xt, xo = (X[:, i] for i in range(6))
    rows = _Rows()
    # (a) Σ_o x_{j,o,t} − Σ_{t'≥t} z_{j,t'} ≤ 0, one row per (j, t)
    zj, zt = np.meshgrid(np.arange(n), np.arange(1, T + 1), indexing="ij")
    zj, zt = zj.ravel(), zt.ravel()
    row_jt = lambda j_, t_: j_ * T + (t_ - 1)  # noqa: E731
    tri_j, tri_t, tri_t2 = [], [], []
    for t in range(1, T + 1):
        # z_{j,t'} for t' >= t enters row (j, t)
        t2 = np.arange(t, T + 1)
        tri_j.append(np.repeat(np.arange(n), t2.size))
        tri_t.append(np.full(n * t2.size, t))
        tri_t2.append(np.tile(t2, n))
    tri_j, tri_t, tri_t2 = (np.concatenate(a) for a in (tri_j, tri_t, tri_t2))
    rows.add(np.concatenate([row_jt(xj, xt), row_jt(tri_j, tri_t)]),
             np.concatenate([xc, z0 + tri_j * T + (tri_t2 - 1)]),
             np.concatenate([np.ones(n_x), -np.ones(tri_j.size)]), np.full(n * T, -np.inf), np.zeros(n * T))
    # (b) Σ_t z_{j,t} = 1
    rows.add(zj, z0 + zj * T + (zt - 1), np.ones(zj.size), np.ones(n), np.ones(n))
    # (c) cumulative progress: Σ_{t'≤t} Δ g x − R_j Σ_{t'≤t} z ≥ 0 for t = 1..T
    g = np.zeros(n_x)
    for jj, j in enumerate(jobs.tolist()):
        sel = xj == jj
        g[sel] = 1.0 / inst.configurations(j).tau[xo[sel]]
    R = inst.iterations[jobs]
    cj, ct, cc, cv = [], [], [], []
    for t in range(1, T + 1):
        sel = xt <= t
        cj.append(xj[sel]); ct.append(np.full(int(sel.sum()), t)); cc.append(xc[sel]); cv.append(delta * g[sel])
        tz = np.arange(1, t + 1)
        jz = np.repeat(np.arange(n), tz.size)
        cj.append(jz); ct.append(np.full(jz.size, t)); cc.append(z0 + jz * T + (np.tile(tz, n) - 1)); cv.append(-R[jz])
    cj, ct, cc, cv = (np.concatenate(a) for a in (cj, ct, cc, cv))
    rows.add(row_jt(cj, ct), cc, cv, np.zeros(n * T), np.full(n * T, np.inf))
    # (d) capacity per (r, t)
    Rn = len(inst.resources)
    use = xw[:, None] * inst.d[jobs[xj]] + xp[:, None] * inst.e[jobs[xj]]          # (n_x, R)
    xi, ri = np.nonzero(use > 0)
    rows.add((xt[xi] - 1) * Rn + ri, xc[xi], use[xi, ri],
             np.full(T * Rn, -np.inf), np.tile(inst.capacity, T))
    if not resizing:
        # (e) x_{j,o,t} ≤ y_{j,o};  Σ_o y_{j,o} = 1
        ycol = y0 + cfg_ptr[xj] + xo
        rows.add(np.arange(n_x).repeat(2), np.column_stack([xc, ycol]).ravel(),
                 np.tile([1.0, -1.0], n_x), np.full(n_x, -np.inf), np.zeros(n_x))
        yj = np.repeat(np.arange(n), n_cfg)
        rows.add(yj, y0 + np.arange(int(cfg_ptr[-1])), np.ones(yj.size), np.ones(n), np.ones(n))
        # (f) Σ_t σ_{j,t} = 1 and Σ_o x_{j,o,t} − Σ_{t'≤t} σ + Σ_{t'<t} z = 0
        rows.add(zj, s0 + zj * T + (zt - 1), np.ones(zj.size), np.ones(n), np.ones(n))
        fj, ft, fc, fv = [xj], [xt], [xc], [np.ones(n_x)]
        for t in range(1, T + 1):
            tz = np.arange(1, t + 1)
            jz = np.repeat(np.arange(n), tz.size)
            fj.append(jz); ft.append(np.full(jz.size, t)); fc.append(s0 + jz * T + (np.tile(tz, n) - 1)); fv.append(-np.ones(jz.size))
            if t > 1:
                tz2 = np.arange(1, t)
                jz2 = np.repeat(np.arange(n), tz2.size)
                fj.append(jz2); ft.append(np.full(jz2.size, t)); fc.append(z0 + jz2 * T + (np.tile(tz2, n) - 1)); fv.append(np.ones(jz2.size))
        fj, ft, fc, fv = (np.concatenate(a) for a in (fj, ft, fc, fv))
        rows.add(row_jt(fj, ft), fc, fv, np.zeros(n * T), np.zeros(n * T))
    M, lo, hi = rows.matrix(cols)
    c = np.zeros(cols)
    c[z0 + zj * T + (zt - 1)] = inst.weight[jobs][zj] * zt
    integrality = np.zeros(cols, dtype=np.int32) if relax else np.ones(cols, dtype=np.int32)
    mf = MatrixForm(c, M, lo, hi, np.zeros(cols), np.ones(cols), integrality, "min", 0)
    return TIModel(mf, T, jobs, X[:, :5], z0, sorted(set(inst.unschedulable)))


def schedule_from_x(inst: SMDInstance, model: TIModel, x: np.ndarray) -> np.ndarray:
    """(T, n, 2) schedule of (w, p) per slot from a solution vector."""
    sch = np.zeros((model.T, inst.n_jobs, 2), dtype=np.int64)
    on = x[model.x_index[:, 0]] > 0.5
    X = model.x_index[on]
    j = model.jobs[X[:, 1]]
    sch[X[:, 4] - 1, j, 0] = X[:, 2]
    sch[X[:, 4] - 1, j, 1] = X[:, 3]
    return sch


def build_pyomo(model: TIModel):
    """Pyomo model of the same rows (one ``LinearExpression`` per row from the CSR slices)."""
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    mf = model.mf
    m = pyo.ConcreteModel(name="smd_time_indexed")
    m.I = pyo.RangeSet(0, mf.n_cols - 1)
    m.K = pyo.RangeSet(0, mf.n_rows - 1)
    binary = bool(mf.integrality.any())
    m.x = pyo.Var(m.I, domain=pyo.Binary if binary else pyo.UnitInterval)
    vs = [m.x[i] for i in range(mf.n_cols)]
    nz = np.flatnonzero(mf.c)
    m.objective = pyo.Objective(expr=LinearExpression(constant=0, linear_coefs=mf.c[nz].tolist(),
                                                      linear_vars=[vs[i] for i in nz]), sense=pyo.minimize)
    M = mf.M
    ptr, idx, dat = M.indptr, M.indices.tolist(), M.data.tolist()

    def row(m, k):
        lo, hi = ptr[k], ptr[k + 1]
        expr = LinearExpression(constant=0, linear_coefs=dat[lo:hi], linear_vars=[vs[i] for i in idx[lo:hi]])
        L, U = mf.row_lower[k], mf.row_upper[k]
        return (None if not np.isfinite(L) else float(L), expr, None if not np.isfinite(U) else float(U))

    m.rows = pyo.Constraint(m.K, rule=row)
    return m


def build_cvxpy(model: TIModel):
    """CVXPY problem of the same rows; returns (problem, variable)."""
    import cvxpy as cp

    mf = model.mf
    v = cp.Variable(mf.n_cols, boolean=bool(mf.integrality.any()), name="v")
    cons = []
    eq = mf.row_lower == mf.row_upper
    up = np.isfinite(mf.row_upper) & ~eq
    lo = np.isfinite(mf.row_lower) & ~eq
    if eq.any():
        cons.append(mf.M[eq] @ v == mf.row_lower[eq])
    if up.any():
        cons.append(mf.M[up] @ v <= mf.row_upper[up])
    if lo.any():
        cons.append(mf.M[lo] @ v >= mf.row_lower[lo])
    if not mf.integrality.any():
        cons += [v >= 0, v <= 1]
    return cp.Problem(cp.Minimize(mf.c @ v), cons), v

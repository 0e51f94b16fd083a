r"""The core MCMDK (MODELS.md §1) in three front ends that must agree.

.. math::

    \max/\min \; v^\top x \quad\text{s.t.}\quad A x \le b,\quad
    \ell_j \le \sum_{o \in O_j} x_{j,o} \le 1,\quad x \in \{0,1\}^{n}

with :math:`\ell_j = 1` when every job must be given a configuration (``exactly_one``)
and :math:`\ell_j = 0` otherwise. The job rows are the CSR matrix :math:`E` with
``indptr = job_ptr``: row j has a one in every column of :math:`O_j`.

* :func:`build_matrix` – whole-array form (``c, A, row bounds, integrality``) for highspy;
* :func:`build_pyomo` – a Pyomo ``ConcreteModel`` with the same symbols;
* :func:`build_cvxpy` – a CVXPY ``Problem`` with a boolean vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dlsched.instance.core import MCMDK


@dataclass(frozen=True)
class MatrixForm:
    r"""``row_lower <= M x <= row_upper``, ``col_lower <= x <= col_upper``, objective ``c``.

    Rows ``0 .. n_capacity-1`` are the capacity rows k, the rest the job rows j (in order).
    Columns are the instance's columns (job j's configurations at ``job_ptr[j]:job_ptr[j+1]``).
    """

    c: np.ndarray
    M: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray
    sense: str
    n_capacity: int

    @property
    def n_cols(self) -> int:
        return self.c.size

    @property
    def n_rows(self) -> int:
        return self.row_lower.size


def job_rows(inst: MCMDK) -> sp.csr_matrix:
    """E: one row per job with a one in each of its columns (built from ``job_ptr`` directly)."""
    n = inst.n_cols
    return sp.csr_matrix((np.ones(n), np.arange(n), inst.job_ptr), shape=(inst.n_jobs, n))


def build_matrix(inst: MCMDK, *, relax: bool = False) -> MatrixForm:
    """Matrix form of MODELS.md §1, vectorised; ``relax`` gives the LP relaxation (x in [0, 1])."""
    M = sp.vstack([inst.A, job_rows(inst)], format="csr")
    M.eliminate_zeros()
    lower_job = 1.0 if inst.choose == "exactly_one" else 0.0
    row_lower = np.concatenate([np.full(inst.n_rows, -np.inf), np.full(inst.n_jobs, lower_job)])
    row_upper = np.concatenate([inst.b, np.ones(inst.n_jobs)])
    n = inst.n_cols
    integrality = np.zeros(n, dtype=np.int32) if relax else np.ones(n, dtype=np.int32)
    return MatrixForm(inst.value.copy(), M, row_lower, row_upper, np.zeros(n), np.ones(n),
                      integrality, inst.sense, inst.n_rows)


def build_pyomo(inst: MCMDK, *, relax: bool = False):
    """Pyomo model with sets J (jobs), O (columns), K (capacity rows), variables ``x[o]``.

    Each capacity row is built from its CSR slice as one ``LinearExpression``, so the
    build never visits the nonzeros one Python statement at a time.
    """
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pyo.ConcreteModel(name=inst.name or "mcmdk")
    m.J = pyo.RangeSet(0, inst.n_jobs - 1)
    m.O = pyo.RangeSet(0, inst.n_cols - 1)
    m.K = pyo.RangeSet(0, inst.n_rows - 1)
    m.x = pyo.Var(m.O, domain=pyo.UnitInterval if relax else pyo.Binary)
    xs = [m.x[o] for o in range(inst.n_cols)]
    v = inst.value.tolist()
    sense = pyo.maximize if inst.sense == "max" else pyo.minimize
    m.objective = pyo.Objective(expr=LinearExpression(constant=0, linear_coefs=v, linear_vars=xs), sense=sense)
    A, ptr = inst.A, inst.A.indptr
    idx, dat = A.indices.tolist(), A.data.tolist()
    b = inst.b.tolist()

    def capacity(m, k):
        lo, hi = ptr[k], ptr[k + 1]
        expr = LinearExpression(constant=0, linear_coefs=dat[lo:hi], linear_vars=[xs[i] for i in idx[lo:hi]])
        return expr <= b[k]

    m.capacity = pyo.Constraint(m.K, rule=capacity)
    jp = inst.job_ptr.tolist()
    exactly = inst.choose == "exactly_one"

    def one_per_job(m, j):
        expr = LinearExpression(constant=0, linear_coefs=[1.0] * (jp[j + 1] - jp[j]), linear_vars=xs[jp[j]:jp[j + 1]])
        return expr == 1 if exactly else expr <= 1

    m.one_per_job = pyo.Constraint(m.J, rule=one_per_job)
    return m


def build_cvxpy(inst: MCMDK, *, relax: bool = False):
    """CVXPY problem ``max/min v @ x  s.t.  A @ x <= b,  E @ x (<= or ==) 1``; returns (problem, x)."""
    import cvxpy as cp

    x = cp.Variable(inst.n_cols, boolean=not relax, name="x")
    E = job_rows(inst)
    cons = [inst.A @ x <= inst.b]
    cons.append(E @ x == 1 if inst.choose == "exactly_one" else E @ x <= 1)
    if relax:
        cons += [x >= 0, x <= 1]
    objective = cp.Maximize(inst.value @ x) if inst.sense == "max" else cp.Minimize(inst.value @ x)
    return cp.Problem(objective, cons), x

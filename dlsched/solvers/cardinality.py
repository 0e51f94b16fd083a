r"""The cardinality hyperplanes :math:`\sum x = k` of an MCMDK and the range of k whose LP can beat an incumbent (MODELS.md §1).

Vimont, Boussier & Vasquez (J. Comb. Optim. 15, 2008): with
:math:`z_{LP}(k) = \max\{g^\top x : Ax \le b,\ Ex \le 1,\ \sum x = k,\ 0 \le x \le 1\}`, concave in
k, every solution with k jobs chosen is worth at most :math:`z_{LP}(k)`. Used by ``hyperplane``
(the range row of its whole MILP) and by ``tabu`` with ``centres="hyperplanes"`` (the duals of
each :math:`z_{LP}(k)` centre its restarts).
"""

from __future__ import annotations

import math
from dataclasses import replace

import highspy
import numpy as np
import scipy.sparse as sp

from dlsched.instance.core import MCMDK
from dlsched.models.mcmdk import MatrixForm, build_matrix
from dlsched.solvers import highs
from dlsched.solvers.options import SolveOptions


def with_rows(mf: MatrixForm, rows: list[np.ndarray], lower: list[float], upper: list[float], *,
              relax: bool = False) -> MatrixForm:
    """``mf`` with dense rows appended (``lower <= row x <= upper``); ``relax``: its LP relaxation."""
    M = sp.vstack([mf.M, sp.csr_matrix(np.vstack(rows))], format="csr") if rows else mf.M
    return replace(mf, M=M, row_lower=np.concatenate([mf.row_lower, lower]),
                   row_upper=np.concatenate([mf.row_upper, upper]),
                   integrality=np.zeros(mf.n_cols, dtype=np.int32) if relax else mf.integrality)


def cardinality_range(inst: MCMDK, z: float, delta: float, opts: SolveOptions,
                      mf: MatrixForm | None = None, duals: dict | None = None) -> tuple[int, int, float] | None:
    r"""``(k_lo, k_hi, max z_LP(k) over the range)`` in gain units: the cardinalities where
    :math:`z_{LP}(k) \ge z + \delta` (module docstring, step 2); ``None`` when none is (no
    better solution exists) — or when the time ran out first, then ``(0, n_jobs, inf)``.
    ``mf``: the instance's matrix when the caller has built it already. ``duals``: filled with
    HiGHS's row duals of :math:`z_{LP}(k)` (capacity rows, then the cardinality row) per k in the range."""
    mf = build_matrix(inst) if mf is None else mf
    n = inst.n_jobs
    h = highs.load(with_rows(mf, [np.ones(mf.n_cols)], [0.0], [float(n)], relax=True), opts)
    if "solver" not in opts.raw:      # the user's raw options come last (docs/contract.md, "raw")
        h.setOptionValue("solver", "simplex")
    row = mf.n_rows
    sign = 1.0 if inst.sense == "max" else -1.0
    # a solution worth z + delta on hyperplane k needs z_LP(k) >= z + delta; HiGHS's LP tolerances are far below this slack
    need = z + delta - 1e-6 * max(1.0, abs(z))

    def value(k: int) -> float:
        h.changeRowBounds(row, float(k), float(k))
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return -math.inf          # infeasible hyperplane (or a failure, treated below as "keep")
        v = sign * float(h.getInfo().objective_function_value)
        if duals is not None and v >= need:
            duals[k] = np.array(h.getSolution().row_dual)
        return v

    h.changeRowBounds(row, 0.0, float(n))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return 0, n, math.inf
    centre = float(np.sum(h.getSolution().col_value))
    values: dict[int, float] = {}
    for k0, step in ((int(math.floor(centre)), -1), (int(math.floor(centre)) + 1, 1)):
        k = k0
        while 0 <= k <= n:
            if opts.clock.expired():
                return 0, n, math.inf
            values[k] = value(k)
            if values[k] < need:
                break
            k += step
    inside = [k for k, v in values.items() if v >= need]
    if not inside:
        return None
    return min(inside), max(inside), max(values[k] for k in inside)

r"""LP relaxation, Lagrangian bound and regrets of the core MCMDK (MODELS.md §1).

Everything is written for the *gain* :math:`g_{j,o} = v_{j,o}` (``max``) or
:math:`g_{j,o} = -v_{j,o}` (``min``), so that every layer maximises.

For capacity prices :math:`u \ge 0` (one per capacity row k) the Lagrangian relaxation of the
capacity rows decomposes by job:

.. math::

    L(u) = u^\top b + \sum_j P_j(u), \qquad
    P_j(u) = \max_{o \in O_j^+} \bigl(g_{j,o} - u^\top a_{j,o}\bigr),

where :math:`O_j^+ = O_j \cup \{\varnothing\}` (the empty choice, profit 0) under
``at_most_one`` and :math:`O_j^+ = O_j` under ``exactly_one``. For *any* :math:`u \ge 0`
and any feasible integral :math:`x` choosing option :math:`o_j` for job j,

.. math::

    g^\top x \;\le\; L(u) - \sum_j r_{j,o_j}, \qquad
    r_{j,o} = P_j(u) - \bigl(g_{j,o} - u^\top a_{j,o}\bigr) \ge 0 ,

so :math:`L(u)` is a valid bound (equal to the LP optimum when :math:`u` are the LP's optimal
capacity duals) and the *regret* :math:`r_{j,o}` (the multiple-choice reduced cost) certifies
how much any solution that uses option o of job j loses. The bound is recomputed here from
:math:`u` with our own arithmetic, so it is valid whatever the LP solver's tolerances were.

=========================  =================================================
symbol                     name in code
=========================  =================================================
:math:`g_{j,o}`            ``gain`` (per column)
:math:`u`                  ``LPInfo.u`` (capacity prices, clipped at 0)
:math:`P_j(u)`             ``LPInfo.best`` (per job)
:math:`r_{j,o}`            ``LPInfo.regret`` (per column)
:math:`r_{j,\varnothing}`  ``LPInfo.regret_none`` (per job; ``inf`` if not allowed)
:math:`L(u)`               ``LPInfo.bound_gain``; ``LPInfo.bound`` in the instance's sense
=========================  =================================================
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dlsched.instance.core import MCMDK
from dlsched.models.mcmdk import build_matrix
from dlsched.result import Status
from dlsched.solvers import highs
from dlsched.solvers.options import SolveOptions

#: a column value this close to 0 or 1 counts as integral
INT_TOL = 1e-7
#: LPs wider than this many columns are solved by interior point + crossover, narrower ones by
#: dual simplex (measured: 100k columns x 10 rows, 2.1 s against 6.6-14 s; both give a vertex)
IPM_COLUMNS = 20_000


def gain(inst: MCMDK) -> np.ndarray:
    """:math:`g = v` for ``max``, :math:`-v` for ``min``."""
    return inst.value if inst.sense == "max" else -inst.value


def integral_gains(inst: MCMDK) -> bool:
    """Every gain is an integer: a better solution is then worth at least one more, and a bound
    may be rounded down (``floor(L + 1e-6)``)."""
    return bool(np.all(inst.value == np.round(inst.value)))


def to_sense(inst: MCMDK, g: float) -> float:
    """A gain value back in the instance's own sense."""
    return float(g) if inst.sense == "max" else -float(g)


@dataclass
class LPInfo:
    """The LP relaxation's solution and the certificates derived from its duals."""

    x: np.ndarray              # basic optimal LP solution (columns)
    objective: float           # LP optimum, instance sense
    u: np.ndarray              # capacity prices >= 0
    best: np.ndarray           # P_j(u)
    regret: np.ndarray         # r_{j,o} per column
    regret_none: np.ndarray    # r_{j,empty} per job (inf when the empty choice is not allowed)
    bound_gain: float          # L(u)
    bound: float               # L(u) in the instance's sense
    seconds: float
    status: Status
    termination: str

    def fractional_jobs(self, inst: MCMDK) -> np.ndarray:
        """Jobs with a column strictly between 0 and 1 (at most ``n_rows`` in a basic solution)."""
        frac = (self.x > INT_TOL) & (self.x < 1 - INT_TOL)
        return np.unique(inst.col_job[frac])


def lagrangian(inst: MCMDK, u: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """:math:`L(u)`, :math:`P_j(u)`, column regrets and empty-choice regrets for prices ``u >= 0``.

    Vectorised: one sparse product for :math:`A^\\top u`, one ``maximum.reduceat`` over jobs.
    Raises nothing for jobs with no column: under ``exactly_one`` such a job makes the
    instance infeasible and :math:`P_j = -\\infty` (so is the bound).
    """
    u = np.maximum(np.asarray(u, dtype=float), 0.0)
    profit = gain(inst) - inst.A.T @ u
    n_jobs = inst.n_jobs
    counts = inst.n_configs
    best = np.full(n_jobs, -np.inf)
    has = np.flatnonzero(counts > 0)
    if has.size:
        best[has] = np.maximum.reduceat(profit, inst.job_ptr[has])
    allow_none = inst.choose == "at_most_one"
    if allow_none:
        best = np.maximum(best, 0.0)
    regret = best[inst.col_job] - profit
    np.maximum(regret, 0.0, out=regret)
    regret_none = best.copy() if allow_none else np.full(n_jobs, np.inf)
    L = float(u @ inst.b + best.sum())
    return L, best, regret, regret_none


def solve_lp(inst: MCMDK, opts: SolveOptions | None = None) -> LPInfo:
    """Solve the LP relaxation with HiGHS (simplex: a basic solution) and derive :class:`LPInfo`."""
    opts = opts or SolveOptions()
    # a basic solution is needed (rounding counts fractional jobs): simplex, or ipm + crossover
    solver = "simplex" if inst.n_cols <= IPM_COLUMNS else "ipm"
    # the user's raw options come last (docs/contract.md, "raw"), as for every HiGHS run
    lp_opts = replace(opts, mip_rel_gap=0.0, warm_start=None, on_incumbent=None,
                      raw={"solver": solver, "run_crossover": "on", **opts.raw})
    mf = build_matrix(inst, relax=True)
    out = highs.solve_matrix(mf, lp_opts, want_duals=True)
    t = out.seconds
    if out.status != Status.OPTIMAL or out.x is None:
        return LPInfo(np.zeros(inst.n_cols), np.nan, np.zeros(inst.n_rows), np.zeros(inst.n_jobs),
                      np.zeros(inst.n_cols), np.zeros(inst.n_jobs), np.inf, to_sense(inst, np.inf), t,
                      out.status, out.termination)
    # HiGHS reports the duals of a maximisation with the opposite sign to a minimisation;
    # the price of a <= capacity row is |dual|. Any u >= 0 gives a valid bound, so a sign slip
    # could only weaken it: keep the sign that gives the smaller (stronger) L(u).
    y = out.row_dual[: inst.n_rows]
    cands = [np.maximum(y, 0.0), np.maximum(-y, 0.0)]
    evals = [lagrangian(inst, u) for u in cands]
    k = int(np.argmin([e[0] for e in evals]))
    L, best, regret, regret_none = evals[k]
    return LPInfo(np.clip(out.x, 0.0, 1.0), float(out.objective), cands[k], best, regret, regret_none, L,
                  to_sense(inst, L), t, Status.OPTIMAL, "optimal")


def better(inst: MCMDK, a: float | None, b: float | None) -> bool:
    """Is objective ``a`` strictly better than ``b`` in the instance's sense (None is worst)?"""
    if a is None:
        return False
    if b is None:
        return True
    return a > b + 1e-9 if inst.sense == "max" else a < b - 1e-9


def tighter(inst: MCMDK, a: float | None, b: float | None) -> float | None:
    """The stronger of two valid bounds (the smaller for ``max``, the larger for ``min``)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b) if inst.sense == "max" else max(a, b)

"""The MILP of a core model (MODELS.md §1) solved exactly through any of the three front ends.

This is the solve every method builds on (``exact``, the layers' sub-MIPs, the family models);
the registered ``exact`` method, which may start from a layer's incumbent, is :mod:`dlsched.solvers.exact`.

``backend``: ``highs`` (vectorised matrix -> highspy, the fast path), ``pyomo``
(:func:`~dlsched.models.mcmdk.build_pyomo`, Pyomo's HiGHS interface) or ``cvxpy``
(:func:`~dlsched.models.mcmdk.build_cvxpy`, ``cp.HIGHS``). All three return the same
:class:`~dlsched.result.Result`; tests prove they agree.
"""

from __future__ import annotations


import numpy as np

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK
from dlsched.models import mcmdk as model
from dlsched.result import Result, Status, make_result
from dlsched.solvers import highs
from dlsched.solvers.backends import FrontEnds, solve_front_end
from dlsched.solvers.options import SolveOptions
from dlsched.solvers import registry

def column_front_ends(n_cols: int, value: np.ndarray, sense: str, matrix, pyomo, cvxpy, decode, warm_x=None) -> FrontEnds:
    """Front ends of a model whose variables are one column vector x (the core MCMDK, the SMD
    time-indexed MILP): Pyomo's ``model.x[0..n-1]`` and CVXPY's vector ``x`` read the same way,
    ``decode(x)`` gives the family's solution and the objective is recomputed as ``value @ x``
    (the solver's value carries its tolerances)."""
    last: list[np.ndarray] = []

    def keep(x):
        last[:] = [np.asarray(x, dtype=float).ravel()]
        return decode(last[0])

    def with_pyomo():
        m = pyomo()
        return m, lambda: keep([m.x[o].value if m.x[o].value is not None else 0.0 for o in range(n_cols)])

    def with_cvxpy():
        prob, x = cvxpy()
        return prob, lambda: keep(x.value)

    return FrontEnds(sense, lambda: (matrix(), keep), with_pyomo, with_cvxpy,
                     warm=None if warm_x is None else (lambda mf: warm_x),
                     objective=lambda solution: float(value @ last[0]))


def solve_core(inst: MCMDK, opts: SolveOptions | None = None, backend: str = "highs", *,
               relax: bool = False) -> Result:
    """Solve the MCMDK (or its LP relaxation) exactly; the solution is a choice per job
    (column values for the relaxation). ``opts.warm_start`` is passed to HiGHS (highs backend)."""
    opts = (opts or SolveOptions()).started()
    warm = None
    if opts.warm_start is not None and not relax:
        if backend != "highs":
            raise registry.no_warm_start(backend)
        warm = np.zeros(inst.n_cols)
        warm[inst.columns_of(valid_choice(inst, opts.warm_start, "warm_start"))] = 1.0
    decode = (lambda x: x) if relax else inst.choice_from_columns
    fe = column_front_ends(inst.n_cols, inst.value, inst.sense, lambda: model.build_matrix(inst, relax=relax),
                           lambda: model.build_pyomo(inst, relax=relax), lambda: model.build_cvxpy(inst, relax=relax),
                           decode, warm)
    if not relax:   # the value of the chosen configurations, as the checker recomputes it
        fe.objective = lambda choice: float(inst.value[inst.columns_of(choice)].sum())
    out, solution, build = solve_front_end(fe, backend, opts)
    message = ""
    stats = dict(out.stats)
    if out.status == Status.INFEASIBLE:
        rows = conflicting_rows(inst)
        stats["conflicting_rows"] = rows
        message = "infeasible" + (f": minimum use exceeds capacity on {', '.join(rows)}" if rows else "")
    return make_result("lp" if relax else "exact", opts, sense=inst.sense, termination=out.termination,
                       solution=solution, objective=out.objective if solution is not None else None,
                       bound=out.bound, backend=backend, build_seconds=build, solve_seconds=out.seconds,
                       stats=stats, solver_version=highs.version(), message=message)


def valid_choice(inst: MCMDK, choice, name: str) -> np.ndarray:
    """``choice`` as a core solution of ``inst`` (one configuration index per job, -1 none), or InputError."""
    try:
        arr = np.asarray(choice)
        ok = arr.shape == (inst.n_jobs,) and np.issubdtype(arr.dtype, np.integer) or (
            arr.shape == (inst.n_jobs,) and np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)))
    except (TypeError, ValueError):
        ok = False
    if ok:
        arr = arr.astype(np.int64)
        ok = bool(np.all((arr >= -1) & (arr < inst.n_configs)))
    if not ok:
        raise InputError("<argument>", name, f"{inst.n_jobs} integers, each -1 or a configuration index of its job",
                         choice if np.size(choice) < 20 else f"an array of shape {np.shape(choice)}")
    return arr


#: the (rows x jobs) table behind :func:`conflicting_rows` is only built up to this many cells
CONFLICT_TABLE_CELLS = 50_000_000


def conflicting_rows(inst: MCMDK) -> list[str]:
    r"""Names of capacity rows k that cannot hold even the least each job must use.

    A row conflicts when :math:`\sum_j \min_{o \in O_j} a^k_{j,o} > b^k` (with the empty choice,
    use 0, allowed under ``at_most_one``); jobs with no configuration under ``exactly_one``
    are named too.
    """
    names = [f"job '{inst.job_name(j)}' (no configuration)" for j in np.flatnonzero(inst.n_configs == 0)
             if inst.choose == "exactly_one"]
    if inst.n_rows == 0 or inst.n_jobs == 0 or inst.n_rows * inst.n_jobs > CONFLICT_TABLE_CELLS:
        return names
    # Per (row, job): the least explicit use, and whether some configuration has no entry (use 0).
    # Sparse throughout: a (rows x jobs) table, never the dense (rows x columns) matrix.
    A = inst.A.tocoo()
    jobs = inst.col_job[A.col]
    least = np.full((inst.n_rows, inst.n_jobs), np.inf)
    np.minimum.at(least, (A.row, jobs), A.data)
    entries = np.zeros((inst.n_rows, inst.n_jobs), dtype=np.int64)
    np.add.at(entries, (A.row, jobs), 1)
    zero_possible = entries < inst.n_configs[None, :]
    if inst.choose == "at_most_one":
        zero_possible[:] = True
    least = np.where(zero_possible, np.minimum(least, 0.0), least)
    least[:, inst.n_configs == 0] = 0.0     # named above (exactly_one) or simply left out
    over = np.flatnonzero(least.sum(axis=1) > inst.b + 1e-9)
    return names + [inst.row_name(k) for k in over]

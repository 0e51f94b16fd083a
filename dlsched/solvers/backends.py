"""The Pyomo and CVXPY front ends solved with HiGHS, each returning a :class:`MatrixOutcome`.

Both translate their own status vocabulary through one table with an ``unknown`` fallback
(STYLE.md practice 6). The highspy matrix path is :mod:`dlsched.solvers.highs`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dlsched.errors import SolverError
from dlsched.instance.core import MCMDK
from dlsched.result import Status
from dlsched.solvers.highs import MatrixOutcome
from dlsched.solvers.options import SolveOptions

# ---------------------------------------------------------------- Pyomo (contrib.solver Highs)

PYOMO_TERMINATION = {
    "convergenceCriteriaSatisfied": "optimal",
    "maxTimeLimit": "time_limit",
    "iterationLimit": "iteration_limit",
    "objectiveLimit": "objective_bound",
    "minStepLength": "error",
    "unbounded": "unbounded",
    "provenInfeasible": "infeasible",
    "locallyInfeasible": "infeasible",
    "infeasibleOrUnbounded": "infeasible_or_unbounded",
    "error": "error",
    "interrupted": "interrupted",
    "licensingProblems": "error",
    "emptyModel": "optimal",
    "unknown": "unknown",
}


def _status_from(termination: str, has_solution: bool) -> Status:
    if termination in ("infeasible", "infeasible_or_unbounded"):
        return Status.INFEASIBLE
    if termination == "unbounded":
        return Status.UNBOUNDED
    if termination == "optimal":
        return Status.OPTIMAL if has_solution else Status.ERROR
    if termination in ("error",):
        return Status.ERROR
    return Status.FEASIBLE if has_solution else Status.NO_SOLUTION


def run_pyomo(model, opts: SolveOptions) -> MatrixOutcome:
    """Solve any Pyomo model with Pyomo's ``Highs`` class; variable values are loaded into the
    model when a solution exists (``out.x`` stays empty: the caller reads its own variables).
    ``out.seconds`` is HiGHS's own time; Pyomo's translation into highspy (and loading the
    solution) goes to ``stats["compile_seconds"]``, which callers add to the build seconds, as
    for CVXPY.

    The legacy ``SolverFactory('highs')`` wrapper rejects time limits, so the
    ``pyomo.contrib.solver`` interface is used directly.
    """
    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.solvers.highs import Highs

    solver = Highs()
    if not solver.available():
        raise SolverError("Pyomo cannot find highspy: pip install highspy")
    options = {"mip_rel_gap": float(opts.mip_rel_gap), "random_seed": int(opts.seed)}
    options.update(opts.raw)  # passed last, unchanged: Pyomo forwards them to HiGHS
    kwargs = dict(tee=bool(opts.log), load_solutions=False, raise_exception_on_nonoptimal_result=False,
                  rel_gap=float(opts.mip_rel_gap), solver_options=options)
    if opts.time_limit is not None:
        kwargs["time_limit"] = float(opts.time_limit)
    if opts.threads is not None:
        kwargs["threads"] = int(opts.threads)
    t0 = time.perf_counter()
    res = solver.solve(model, **kwargs)
    wall = time.perf_counter() - t0
    # Pyomo translates the model into highspy inside solve(): that part is model building
    highs_seconds = getattr(res.timing_info, "highs_time", None)
    seconds = min(float(highs_seconds), wall) if isinstance(highs_seconds, (int, float)) else wall
    termination = PYOMO_TERMINATION.get(res.termination_condition.name, "unknown")
    has_solution = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    out = MatrixOutcome(_status_from(termination, has_solution), termination, None, None, None, seconds,
                        stats={"compile_seconds": wall - seconds})
    if has_solution:
        res.solution_loader.load_vars()
        out.objective = float(res.incumbent_objective)
    bound = res.objective_bound
    if bound is not None and math.isfinite(bound):
        out.bound = float(bound)
    elif out.status == Status.OPTIMAL:
        out.bound = out.objective
    return out.settle()


def solve_pyomo(model, inst: MCMDK, opts: SolveOptions) -> MatrixOutcome:
    """Solve a model from :func:`~dlsched.models.mcmdk.build_pyomo`; ``out.x`` holds the columns."""
    out = run_pyomo(model, opts)
    if out.status.has_solution():
        x = model.x
        out.x = np.array([x[o].value if x[o].value is not None else 0.0 for o in range(inst.n_cols)], dtype=float)
    return out


# ---------------------------------------------------------------- CVXPY (solver cp.HIGHS)

CVXPY_TERMINATION = {
    "optimal": "optimal",
    "optimal_inaccurate": "optimal",
    "infeasible": "infeasible",
    "infeasible_inaccurate": "infeasible",
    "unbounded": "unbounded",
    "unbounded_inaccurate": "unbounded",
    "infeasible_or_unbounded": "infeasible_or_unbounded",
    "user_limit": "time_limit",
    "solver_error": "error",
}


def run_cvxpy(problem, opts: SolveOptions, sense: str) -> MatrixOutcome:
    """Solve any CVXPY problem with ``solver=cp.HIGHS``; the caller reads its own variables.

    CVXPY hands HiGHS a minimisation; for a maximisation the HiGHS dual bound is negated back.
    Canonicalisation happens inside ``solve()``: its seconds go to ``stats["compile_seconds"]``
    (model building), not to the solve time.
    """
    import cvxpy as cp

    options = {"mip_rel_gap": float(opts.mip_rel_gap), "random_seed": int(opts.seed), "output_flag": bool(opts.log)}
    if opts.time_limit is not None:
        options["time_limit"] = float(opts.time_limit)
    if opts.threads is not None:
        options["threads"] = int(opts.threads)
    options.update(opts.raw)
    t0 = time.perf_counter()
    try:
        problem.solve(solver=cp.HIGHS, verbose=bool(opts.log), **options)
    except cp.error.SolverError as exc:
        raise SolverError(f"CVXPY/HiGHS failed: {exc}") from exc
    compile_seconds = float(getattr(problem, "compilation_time", None) or 0.0)
    seconds = time.perf_counter() - t0 - compile_seconds
    termination = CVXPY_TERMINATION.get(problem.status, "unknown")
    info = problem.solver_stats.extra_stats if problem.solver_stats else None
    value = problem.value
    has_solution = value is not None and math.isfinite(value) and (
        info is None or info.primal_solution_status == 2 or termination == "optimal")
    out = MatrixOutcome(_status_from(termination, has_solution), termination, None, None, None, seconds,
                        stats={"compile_seconds": compile_seconds})
    if has_solution:
        out.objective = float(value)
    if info is not None and problem.is_mixed_integer():
        b = float(info.mip_dual_bound)
        if math.isfinite(b):
            out.bound = -b if sense == "max" else b
    if out.bound is None and out.status == Status.OPTIMAL:
        out.bound = out.objective
    return out.settle()


def solve_cvxpy(problem, x, inst: MCMDK, opts: SolveOptions) -> MatrixOutcome:
    """Solve a problem from :func:`~dlsched.models.mcmdk.build_cvxpy`; ``out.x`` holds the columns
    and the objective is recomputed from them (CVXPY's value carries the solver's tolerance)."""
    out = run_cvxpy(problem, opts, inst.sense)
    if out.status.has_solution():
        out.x = np.asarray(x.value, dtype=float).ravel()
        out.objective = float(inst.value @ out.x)
    return out.settle()

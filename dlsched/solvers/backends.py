"""The Pyomo and CVXPY front ends solved with HiGHS, each returning a :class:`MatrixOutcome`.

Both translate their own status vocabulary through one table with an ``unknown`` fallback
(STYLE.md practice 6). The highspy matrix path is :mod:`dlsched.solvers.highs`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dlsched.errors import InputError, SolverError
from dlsched.result import Status
from dlsched.solvers.highs import MatrixOutcome, in_child, solve_matrix, typed_options
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
    typed = typed_options(opts)     # the time limit is what remains of the call's budget, read now
    options = {"mip_rel_gap": typed["mip_rel_gap"], "random_seed": typed["random_seed"]}
    options.update(opts.raw)  # validated when the call started, passed last: Pyomo forwards them to HiGHS
    kwargs = dict(tee=bool(opts.log), load_solutions=False, raise_exception_on_nonoptimal_result=False,
                  rel_gap=float(opts.mip_rel_gap), solver_options=options)
    if "time_limit" in typed:
        kwargs["time_limit"] = typed["time_limit"]
    if "threads" in typed:
        kwargs["threads"] = typed["threads"]
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

    options = {**typed_options(opts), "output_flag": bool(opts.log)}
    options.update(opts.raw)    # validated when the call started, passed last
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


# ---------------------------------------------------------------- one dispatcher over the three front ends

BACKENDS = ("highs", "pyomo", "cvxpy")


@dataclass
class FrontEnds:
    """One MILP written for the three front ends (docs/contract.md, "Backends").

    Each builder is called only for the chosen backend and returns the model and a reader:

    * ``matrix() -> (MatrixForm, decode)``, ``decode(x)`` turning HiGHS's column values into the
      family's solution; ``warm() -> x | None`` (optional) a MIP start, highspy only;
    * ``pyomo() -> (model, read)`` and ``cvxpy() -> (problem, read)``, ``read()`` reading the
      solved model's variables into the family's solution.

    ``objective(solution)`` (optional) recomputes the objective from the decoded solution, so
    the three front ends report the value the checker recomputes, not the solver's rounded one.
    """

    sense: str
    matrix: Callable[[], tuple[Any, Callable[[np.ndarray], Any]]]
    pyomo: Callable[[], tuple[Any, Callable[[], Any]]]
    cvxpy: Callable[[], tuple[Any, Callable[[], Any]]]
    warm: Callable[[Any], np.ndarray | None] | None = None
    objective: Callable[[Any], float] | None = None


def solve_front_end(fe: FrontEnds, backend: str, opts: SolveOptions) -> tuple[MatrixOutcome, Any, float]:
    """Build and solve ``fe`` through ``backend``: (outcome, family solution or None, build seconds).

    Build seconds include Pyomo's and CVXPY's translation inside their ``solve()``; the time
    limit given to HiGHS is what remains of the call's budget after the build. With a time limit,
    the Pyomo and CVXPY paths (whose Python build cannot be interrupted: 19 s for 100k columns in
    Pyomo) run whole in a forked child stopped at the deadline (:func:`~dlsched.solvers.highs.in_child`);
    the highspy path guards only HiGHS itself (:func:`~dlsched.solvers.highs.solve_matrix`).
    """
    if backend not in BACKENDS:
        raise InputError("<argument>", "backend", f"one of {', '.join(BACKENDS)}", backend)
    if backend != "highs" and opts.clock.limited:
        t0 = time.perf_counter()
        done, value = in_child(lambda report: _solve_front_end(fe, backend, opts), opts.clock)
        if done:
            value[0].stats["guarded"] = True
            return value
        return (MatrixOutcome(Status.NO_SOLUTION, "time_limit", None, None, None, time.perf_counter() - t0,
                              stats={"guarded": True, "stopped_at_deadline": True}), None, 0.0)
    return _solve_front_end(fe, backend, opts)


#: Pyomo and CVXPY translate the model inside ``solve()`` before HiGHS starts, and load the solution
#: after it stops: about as long again as their build, and half of it (measured on 10k columns,
#: Pyomo). HiGHS's time limit leaves this multiple of the build time for both.
AROUND_SOLVE_SHARE = 1.5


def _leave_time_to_read(opts: SolveOptions, build: float) -> SolveOptions:
    """Options whose budget ends :data:`AROUND_SOLVE_SHARE` x ``build`` seconds before the call's."""
    if not opts.clock.limited:
        return opts
    return opts.within(opts.clock.share(1.0, at_most=max(opts.clock.remaining() - AROUND_SOLVE_SHARE * build, 1e-3)))


def _solve_front_end(fe: FrontEnds, backend: str, opts: SolveOptions) -> tuple[MatrixOutcome, Any, float]:
    t0 = time.perf_counter()
    if backend == "highs":
        mf, decode = fe.matrix()
        warm = fe.warm(mf) if fe.warm is not None else None
        build = time.perf_counter() - t0
        out = solve_matrix(mf, opts, warm_x=warm)
        read = (lambda: decode(out.x)) if out.x is not None else None
    elif backend == "pyomo":
        model, read = fe.pyomo()
        build = time.perf_counter() - t0
        out = run_pyomo(model, _leave_time_to_read(opts, build))
    else:
        problem, read = fe.cvxpy()
        build = time.perf_counter() - t0
        out = run_cvxpy(problem, _leave_time_to_read(opts, build), fe.sense)
    build += out.stats.pop("compile_seconds", 0.0)
    solution = read() if (read is not None and out.status.has_solution()) else None
    if solution is not None and fe.objective is not None:
        out.objective = float(fe.objective(solution))
        out.settle()
    return out, solution, build

"""The Pyomo and CVXPY front ends, each returning a :class:`MatrixOutcome`.

Both solve with HiGHS by default and with another MILP solver when asked (``solver=NAME``):
the Pyomo front end with any solver of Pyomo's ``pyomo.contrib.solver`` factory that is
available (``scip_direct`` through pyscipopt, ``gurobi_direct`` through gurobipy, ...), the CVXPY
front end with any installed solver of :data:`CVXPY_SOLVERS` (HIGHS, SCIP, GUROBI: the ones whose
time limit, gap, threads, seed, bound and stopping reason it knows how to read). Every solver
gives the same Result contract: status, bound, gap, build and solve seconds.

Both translate their own status vocabulary through one table with an ``unknown`` fallback
(STYLE.md practice 6). The highspy matrix path is :mod:`dlsched.solvers.highs`.
"""

from __future__ import annotations

import gc
import importlib
import math
import shutil
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dlsched.errors import InputError, SolverError
from dlsched.result import Status
from dlsched.solvers.highs import MatrixOutcome, can_fork, in_child, solve_matrix, typed_options
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


#: a Pyomo solver's own name for the random seed (solvers not listed run with their default seed)
PYOMO_SEED = {"highs": "random_seed", "gurobi_direct": "Seed", "gurobi_persistent": "Seed",
              "scip_direct": "randomization/randomseedshift", "scip_persistent": "randomization/randomseedshift"}


#: the MILP solvers of Pyomo's ``pyomo.contrib.solver`` factory this front end drives, with the Python
#: package each needs (the factory's others solve NLPs, ipopt, or need a GAMS installation, gams)
PYOMO_MILP = {"highs": "highspy", "scip_direct": "pyscipopt", "scip_persistent": "pyscipopt",
              "gurobi_direct": "gurobipy", "gurobi_persistent": "gurobipy"}
#: the names users know them by (Pyomo's older interface, the solvers' own)
PYOMO_ALIASES = {"appsi_highs": "highs", "scip": "scip_direct", "gurobi": "gurobi_direct"}
#: MILP solvers Pyomo's older interface runs as executables (``SolverFactory(name)`` writes the model
#: to a file and reads the solver's solution file), with each one's own names for the time limit
#: (seconds), the relative gap, the random seed and threads (None: the solver has no such option)
PYOMO_SHELL = {"glpk": {"time_limit": "tmlim", "mip_rel_gap": "mipgap", "random_seed": None, "threads": None},
               "cbc": {"time_limit": "sec", "mip_rel_gap": "ratioGap", "random_seed": "randomSeed",
                       "threads": "threads"}}
#: options always passed (CBC counts its time limit in CPU seconds unless told to count wall seconds)
PYOMO_SHELL_FIXED = {"glpk": {}, "cbc": {"timeMode": "elapsed"}}
#: the executable each of them needs on PATH
PYOMO_SHELL_EXECUTABLE = {"glpk": "glpsol", "cbc": "cbc"}


def pyomo_solver_name(name: str) -> str:
    """The ``pyomo.contrib.solver`` name of MILP solver ``name`` (its own, or a usual one such as
    ``appsi_highs``), checked without creating a solver (Pyomo's Gurobi interfaces hold a licence
    until the garbage collector frees them): an :class:`InputError` names the ones installed here,
    and says so when ``name`` belongs to Pyomo's older interface only (glpk, cbc, cplex, ...)."""
    import importlib.util

    import pyomo.environ as pyo

    here = [n for n, pkg in PYOMO_MILP.items() if importlib.util.find_spec(pkg) is not None]
    here += [n for n, exe in PYOMO_SHELL_EXECUTABLE.items() if shutil.which(exe)]
    name = PYOMO_ALIASES.get(name, name)
    if name in here:
        return name
    if name in PYOMO_SHELL:
        raise InputError("<argument>", "solver", f"an installed MILP solver, one of {', '.join(here)} "
                         f"('{name}' needs the executable {PYOMO_SHELL_EXECUTABLE[name]} on PATH)", name)
    if name in PYOMO_MILP:
        raise InputError("<argument>", "solver", f"an installed MILP solver, one of {', '.join(here)} "
                         f"(pip install 'dlsched[solvers]' for {name})", name)
    from pyomo.contrib.solver.common.factory import SolverFactory

    why = (f" ('{name}' is not a MILP solver)" if name in set(SolverFactory) else
           f" ('{name}' is a solver of Pyomo's older interface, which this front end does not drive)"
           if name in set(pyo.SolverFactory) else "")
    raise InputError("<argument>", "solver", f"a MILP solver of Pyomo's solver interface installed here, one of "
                     f"{', '.join(here)}{why}", name)


def _pyomo_solver(name: str):
    """The available solver ``name`` (its :func:`pyomo_solver_name`) of Pyomo's
    ``pyomo.contrib.solver`` factory (common options: time limit, relative gap, threads)."""
    from pyomo.contrib.solver.common.factory import SolverFactory

    solver = SolverFactory(name)
    if not solver.available():
        raise SolverError(f"Pyomo solver '{name}' is not available here ({solver.available()}); "
                          "pip install 'dlsched[solvers]' for scip_direct and gurobi_direct")
    return solver


#: the share of the remaining time (at least OTHER_RESERVE_MIN seconds) a solver other than HiGHS
#: leaves for stopping and handing its solution back through Python: with the time left less only
#: the budget's resolution, SCIP was stopped at the deadline with its solution on 2 of 6 mknapcb1
#: cells at 10 s (the results log, docs/results/index.md, solvers suite)
OTHER_RESERVE_SHARE = 0.05
OTHER_RESERVE_MIN = 0.2


def other_solver_options(opts: SolveOptions) -> dict:
    """:func:`~dlsched.solvers.highs.typed_options` with the reserve above taken off the time limit."""
    typed = typed_options(opts)
    if "time_limit" in typed:
        limit = typed["time_limit"]
        typed["time_limit"] = max(limit - max(OTHER_RESERVE_SHARE * limit, OTHER_RESERVE_MIN), 1e-3)
    return typed


def _trivial_constraints(model) -> list | None:
    """Active constraints whose body has no variable (e.g. an unused capacity row), which some
    Pyomo interfaces (scip_direct) cannot pass on; ``None`` if one of them does not hold."""
    import pyomo.environ as pyo

    out = []
    for con in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        if con.body.is_fixed():
            val, tol = pyo.value(con.body), 1e-9
            if (con.lb is not None and val < pyo.value(con.lb) - tol) or (con.ub is not None and val > pyo.value(con.ub) + tol):
                return None
            out.append(con)
    return out


def solver_version(solver) -> str:
    v = solver.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def run_pyomo(model, opts: SolveOptions, solver: str = "highs") -> MatrixOutcome:
    """Solve any Pyomo model with Pyomo's ``Highs`` class; variable values are loaded into the
    model when a solution exists (``out.x`` stays empty: the caller reads its own variables).
    ``out.seconds`` is HiGHS's own time; Pyomo's translation into highspy (and loading the
    solution) goes to ``stats["compile_seconds"]``, which callers add to the build seconds, as
    for CVXPY.

    The legacy ``SolverFactory('highs')`` wrapper rejects time limits, so the
    ``pyomo.contrib.solver`` interface is used directly; ``solver`` names any solver of it.
    """
    from pyomo.contrib.solver.common.results import SolutionStatus

    name = solver   # the user's spelling, reported in stats["solver"]
    # options, the seed and the timing key follow the solver it resolves to (appsi_highs is HiGHS)
    resolved = pyomo_solver_name(name)
    if resolved in PYOMO_SHELL:
        return _run_pyomo_shell(model, opts, resolved)
    solver = _pyomo_solver(resolved)
    # the time limit is what remains of the call's budget, read now
    typed = typed_options(opts) if resolved == "highs" else other_solver_options(opts)
    options = {"mip_rel_gap": typed["mip_rel_gap"]} if resolved == "highs" else {}
    if resolved in PYOMO_SEED:
        options[PYOMO_SEED[resolved]] = typed["random_seed"]
    options.update(opts.raw)  # validated when the call started, passed last: Pyomo forwards them to the solver
    kwargs = dict(tee=bool(opts.log), load_solutions=False, raise_exception_on_nonoptimal_result=False,
                  rel_gap=float(opts.mip_rel_gap), solver_options=options)
    if "time_limit" in typed:
        kwargs["time_limit"] = typed["time_limit"]
    if "threads" in typed:
        kwargs["threads"] = typed["threads"]
    t0 = time.perf_counter()
    trivial = [] if resolved == "highs" else _trivial_constraints(model)
    if trivial is None:             # a constraint without variables that does not hold
        return MatrixOutcome(Status.INFEASIBLE, "infeasible", None, None, None, time.perf_counter() - t0,
                             stats={"compile_seconds": 0.0, "solver": name}).settle()
    try:
        for con in trivial:
            con.deactivate()
        res = solver.solve(model, **kwargs)
    finally:
        for con in trivial:
            con.activate()
    wall = time.perf_counter() - t0
    # Pyomo translates the model for the solver inside solve(): that part is model building;
    # the solver's own seconds are timing_info.<solver>_time (highs_time, scip_time, gurobi_time)
    own = getattr(res.timing_info, f"{resolved.split('_')[0]}_time", None)
    seconds = min(float(own), wall) if isinstance(own, (int, float)) else wall
    termination = PYOMO_TERMINATION.get(res.termination_condition.name, "unknown")
    has_solution = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    out = MatrixOutcome(_status_from(termination, has_solution), termination, None, None, None, seconds,
                        stats={"compile_seconds": wall - seconds, "solver": name,
                               "solver_version": f"{resolved} {solver_version(solver)}"})
    if has_solution:
        res.solution_loader.load_vars()
        out.objective = float(res.incumbent_objective)
    bound = res.objective_bound
    if bound is not None and math.isfinite(bound):
        out.bound = float(bound)
    elif out.status == Status.OPTIMAL:
        out.bound = out.objective
    if resolved != "highs":
        # Pyomo's Gurobi interfaces release their licence in __del__ under Pyomo's output-capture
        # lock: left to the garbage collector, that can run inside another solver's capture and
        # deadlock ("Deadlock starting capture_output"); release them here, outside any capture
        res = solver = None
        gc.collect()
    return out.settle()


#: Pyomo's older interface's termination conditions, in this package's words
PYOMO_SHELL_TERMINATION = {"optimal": "optimal", "maxTimeLimit": "time_limit", "infeasible": "infeasible",
                           "unbounded": "unbounded", "infeasibleOrUnbounded": "infeasible_or_unbounded",
                           "maxIterations": "iteration_limit", "maxEvaluations": "iteration_limit",
                           "userInterrupt": "interrupted", "error": "error", "solverFailure": "error"}


def _run_pyomo_shell(model, opts: SolveOptions, name: str) -> MatrixOutcome:
    """Solve a Pyomo model with an executable MILP solver of Pyomo's older interface
    (:data:`PYOMO_SHELL`): the typed options under the solver's own names, the solution loaded
    into the model, the bound read from the results' objective bounds."""
    import pyomo.environ as pyo

    solver = pyo.SolverFactory(name)
    if not solver.available(exception_flag=False):
        raise SolverError(f"Pyomo solver '{name}' is not available here: is {PYOMO_SHELL_EXECUTABLE[name]} on PATH?")
    typed = other_solver_options(opts)
    if "time_limit" in typed:        # glpk and cbc take whole seconds; round down, never past the budget
        typed["time_limit"] = max(1, math.floor(typed["time_limit"]))
    options = dict(PYOMO_SHELL_FIXED[name])
    options.update({PYOMO_SHELL[name][key]: val for key, val in typed.items() if PYOMO_SHELL[name].get(key)})
    options.update(opts.raw)
    t0 = time.perf_counter()
    res = solver.solve(model, load_solutions=False, tee=bool(opts.log), options=options)
    wall = time.perf_counter() - t0
    own = getattr(res.solver, "wallclock_time", None)      # CBC's, to 0.01 s; glpk reports none
    seconds = min(float(own), wall) if isinstance(own, (int, float)) and own > 0 else wall
    termination = str(res.solver.termination_condition)
    if termination == "feasible" and "time_limit" in typed:   # glpk's word for stopped by tmlim
        termination = "maxTimeLimit"
    termination = PYOMO_SHELL_TERMINATION.get(termination, "unknown")
    has_solution = len(res.solution) > 0 and termination not in ("infeasible", "unbounded")
    out = MatrixOutcome(_status_from(termination, has_solution), termination, None, None, None, seconds,
                        stats={"compile_seconds": wall - seconds, "solver": name,
                               "solver_version": f"{name} {solver_version(solver)}"})
    if has_solution:
        # a run stopped by its time limit is "aborted" with a solution: read it without Pyomo's warning
        res.solver.status = pyo.SolverStatus.ok
        model.solutions.load_from(res)
        objective = next(model.component_data_objects(pyo.Objective, active=True))
        out.objective = float(pyo.value(objective))
        maximise = objective.sense == pyo.maximize
        bound = res.problem.upper_bound if maximise else res.problem.lower_bound
        bound = float(bound) if bound is not None and math.isfinite(float(bound)) else None
        if bound is not None and maximise and bound < out.objective and -bound >= out.objective:
            # Pyomo's CBC reader keeps the sign of CBC's minimisation for a maximisation's bound
            # (Pyomo 6.9, CBC 2.10.8: incumbent 22,905 beside "upper bound" -23,460)
            bound = -bound
        if bound is not None and (bound >= out.objective if maximise else bound <= out.objective):
            out.bound = bound
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


SCIP_TERMINATION = {"optimal": "optimal", "gaplimit": "optimal", "timelimit": "time_limit", "infeasible": "infeasible",
                    "unbounded": "unbounded", "inforunbd": "infeasible_or_unbounded", "userinterrupt": "interrupted",
                    "nodelimit": "iteration_limit", "totalnodelimit": "iteration_limit", "stallnodelimit": "iteration_limit",
                    "memlimit": "error", "sollimit": "iteration_limit", "bestsollimit": "iteration_limit"}
GUROBI_TERMINATION = {2: "optimal", 3: "infeasible", 4: "infeasible_or_unbounded", 5: "unbounded", 7: "iteration_limit",
                      8: "iteration_limit", 9: "time_limit", 10: "iteration_limit", 11: "interrupted", 13: "unknown"}


def _highs_options(opts: SolveOptions) -> dict:
    return {**typed_options(opts), "output_flag": bool(opts.log)}


def _scip_options(opts: SolveOptions) -> dict:
    typed = other_solver_options(opts)     # what remains of the call's budget, less a reserve
    params = {"limits/gap": typed["mip_rel_gap"], "randomization/randomseedshift": typed["random_seed"]}
    if "time_limit" in typed:
        params["limits/time"] = typed["time_limit"]
    if "threads" in typed:
        params["parallel/maxnthreads"] = typed["threads"]
    return {"scip_params": params}


def _gurobi_options(opts: SolveOptions) -> dict:
    import gurobipy

    # an environment started quiet: Gurobi's licence banner would otherwise reach stdout (--json)
    env = gurobipy.Env(empty=True)
    env.setParam("OutputFlag", int(bool(opts.log)))
    env.start()
    typed = other_solver_options(opts)     # what remains of the call's budget, less a reserve
    out = {"env": env, "MIPGap": typed["mip_rel_gap"], "Seed": typed["random_seed"], "OutputFlag": int(bool(opts.log))}
    if "time_limit" in typed:
        out["TimeLimit"] = typed["time_limit"]
    if "threads" in typed:
        out["Threads"] = typed["threads"]
    return out


def _highs_report(problem) -> tuple[str | None, float | None, bool]:
    """(stopping reason if CVXPY's status hides it, bound of the minimisation CVXPY solved, a solution?)"""
    info = problem.solver_stats.extra_stats if problem.solver_stats else None
    bound = float(info.mip_dual_bound) if info is not None and problem.is_mixed_integer() else None
    return None, bound, info is None or info.primal_solution_status == 2


def _scip_report(problem) -> tuple[str | None, float | None, bool]:
    # CVXPY reports SCIP's time limit as "optimal_inaccurate": read SCIP's own status
    info = problem.solver_stats.extra_stats if problem.solver_stats else None
    model = info.get("model") if isinstance(info, dict) else None
    status = info.get("scip_status") if isinstance(info, dict) else None
    return (SCIP_TERMINATION.get(status, "unknown") if status else None,
            None if model is None else float(model.getDualbound()), model is not None and model.getNSols() > 0)


def _gurobi_report(problem) -> tuple[str | None, float | None, bool]:
    model = problem.solver_stats.extra_stats if problem.solver_stats else None
    if model is None:
        return None, None, False
    try:
        bound = float(model.ObjBound)
    except AttributeError:          # no bound (e.g. stopped before the root relaxation)
        bound = None
    return GUROBI_TERMINATION.get(model.Status, "unknown"), bound, model.SolCount > 0


#: CVXPY solver -> (its options from SolveOptions, how to read its report, its Python package)
CVXPY_SOLVERS = {
    "HIGHS": (_highs_options, _highs_report, "highspy"),
    "SCIP": (_scip_options, _scip_report, "pyscipopt"),
    "GUROBI": (_gurobi_options, _gurobi_report, "gurobipy"),
}


def cvxpy_solver(solver: str) -> str:
    """``solver`` as CVXPY names it, if it is one of :data:`CVXPY_SOLVERS` and installed."""
    import cvxpy as cp

    name = str(solver).upper()
    installed = [n for n in CVXPY_SOLVERS if n in cp.installed_solvers()]
    if name not in installed:
        raise InputError("<argument>", "solver", f"an installed CVXPY MILP solver, one of {', '.join(installed)}"
                         " (pip install 'dlsched[solvers]' adds SCIP and GUROBI)", solver)
    return name


def run_cvxpy(problem, opts: SolveOptions, sense: str, solver: str = "HIGHS") -> MatrixOutcome:
    """Solve any CVXPY problem with ``solver`` (one of :data:`CVXPY_SOLVERS` that is installed);
    the caller reads its own variables.

    CVXPY hands the solver a minimisation; for a maximisation the dual bound is negated back.
    Canonicalisation happens inside ``solve()``: its seconds go to ``stats["compile_seconds"]``
    (model building), not to the solve time.
    """
    import importlib.metadata

    import cvxpy as cp

    name = cvxpy_solver(solver)
    make_options, report, package = CVXPY_SOLVERS[name]
    options = make_options(opts)
    options.update(opts.raw)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            # CVXPY's "may be inaccurate" is its reading of a stopped solve; the solver's own status is read below
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver=name, verbose=bool(opts.log), **options)
    except cp.error.SolverError as exc:
        raise SolverError(f"CVXPY/{name} failed: {exc}") from exc
    compile_seconds = float(getattr(problem, "compilation_time", None) or 0.0)
    seconds = time.perf_counter() - t0 - compile_seconds
    termination, bound, solver_has_solution = report(problem)
    termination = termination or CVXPY_TERMINATION.get(problem.status, "unknown")
    value = problem.value
    has_solution = value is not None and math.isfinite(value) and (solver_has_solution or termination == "optimal")
    out = MatrixOutcome(_status_from(termination, has_solution), termination, None, None, None, seconds,
                        stats={"compile_seconds": compile_seconds, "solver": name,
                               "solver_version": f"{name.lower()} ({package} {importlib.metadata.version(package)})"})
    if has_solution:
        out.objective = float(value)
    if bound is not None and math.isfinite(bound):
        out.bound = -bound if sense == "max" else bound
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


def solve_front_end(fe: FrontEnds, backend: str, opts: SolveOptions,
                    solver: str | None = None) -> tuple[MatrixOutcome, Any, float]:
    """Build and solve ``fe`` through ``backend``: (outcome, family solution or None, build seconds).
    ``solver`` puts another MILP solver behind the Pyomo or CVXPY front end (HiGHS by default).

    Build seconds include Pyomo's and CVXPY's translation inside their ``solve()``; the time
    limit given to HiGHS is what remains of the call's budget after the build. The Pyomo and CVXPY
    paths (whose Python build cannot be interrupted: 19 s for 100k columns in Pyomo) run whole in a
    forked child stopped at the deadline (:func:`~dlsched.solvers.highs.in_child`), with or
    without a limit: Pyomo's process-wide output-capture lock was seen held for good in a long
    test session, and a child keeps that state out of the caller's process. The highspy path
    guards only HiGHS itself (:func:`~dlsched.solvers.highs.solve_matrix`).
    """
    if backend not in BACKENDS:
        raise InputError("<argument>", "backend", f"one of {', '.join(BACKENDS)}", backend)
    if solver is not None and backend == "highs" and solver.lower() != "highs":
        raise InputError("<argument>", "solver", "--backend pyomo or cvxpy with another solver (the matrix path is HiGHS)", solver)
    if solver is not None and backend != "highs":    # a bad name is an InputError here, not in the guarded child
        pyomo_solver_name(solver) if backend == "pyomo" else cvxpy_solver(solver)
    if backend != "highs" and can_fork():
        # a child imports what its parent had not (about 1 s for Pyomo, again at every solve); with no limit to
        # overrun, the parent imports it once, for every child after, and the first call's build counts it as before
        imports = 0.0 if opts.clock.limited else _import_seconds(backend)
        t0 = time.perf_counter()
        done, value = in_child(lambda report: _solve_front_end(fe, backend, opts, solver), opts.clock)
        if done:
            value[0].stats["guarded"] = True
            return value[0], value[1], value[2] + imports
        return (MatrixOutcome(Status.NO_SOLUTION, "time_limit", None, None, None, time.perf_counter() - t0,
                              stats={"guarded": True, "stopped_at_deadline": True}), None, 0.0)
    return _solve_front_end(fe, backend, opts, solver)


#: Pyomo and CVXPY translate the model inside ``solve()`` before HiGHS starts, and load the solution
#: after it stops: about as long again as their build, and half of it (measured on 10k columns,
#: Pyomo). HiGHS's time limit leaves this multiple of the build time for both.
AROUND_SOLVE_SHARE = 1.5


#: the module a front end loads on its first use in a process
FRONT_END_MODULE = {"pyomo": "pyomo.environ", "cvxpy": "cvxpy"}


def _import_seconds(backend: str) -> float:
    """Seconds spent loading the front end's package (0 once loaded). They count in the build and
    the budget, not in the reserve for translating and reading: a first use in a fresh Dask worker
    under load took 26 s to import Pyomo for a model of ten columns, and a reserve of 1.5 x that
    left HiGHS no time at all."""
    t0 = time.perf_counter()
    importlib.import_module(FRONT_END_MODULE[backend])
    return time.perf_counter() - t0


def _leave_time_to_read(opts: SolveOptions, build: float) -> SolveOptions:
    """Options whose budget ends :data:`AROUND_SOLVE_SHARE` x ``build`` seconds before the call's."""
    if not opts.clock.limited:
        return opts
    return opts.within(opts.clock.share(1.0, at_most=max(opts.clock.remaining() - AROUND_SOLVE_SHARE * build, 1e-3)))


def _solve_front_end(fe: FrontEnds, backend: str, opts: SolveOptions,
                     solver: str | None = None) -> tuple[MatrixOutcome, Any, float]:
    t0 = time.perf_counter()
    if backend == "highs":
        mf, decode = fe.matrix()
        warm = fe.warm(mf) if fe.warm is not None else None
        build = time.perf_counter() - t0
        out = solve_matrix(mf, opts, warm_x=warm)
        read = (lambda: decode(out.x)) if out.x is not None else None
    elif backend == "pyomo":
        imports = _import_seconds(backend)
        model, read = fe.pyomo()
        build = time.perf_counter() - t0
        out = run_pyomo(model, _leave_time_to_read(opts, build - imports), solver or "highs")
    else:
        imports = _import_seconds(backend)
        problem, read = fe.cvxpy()
        build = time.perf_counter() - t0
        out = run_cvxpy(problem, _leave_time_to_read(opts, build - imports), fe.sense, solver or "HIGHS")
    build += out.stats.pop("compile_seconds", 0.0)
    solution = read() if (read is not None and out.status.has_solution()) else None
    if solution is not None and fe.objective is not None:
        out.objective = float(fe.objective(solution))
        out.settle()
    return out, solution, build

"""The exact MILP of the core model (MODELS.md §1) through any of the three front ends.

``backend``: ``highs`` (vectorised matrix -> highspy, the fast path), ``pyomo``
(:func:`~dlsched.models.mcmdk.build_pyomo`, Pyomo's HiGHS interface) or ``cvxpy``
(:func:`~dlsched.models.mcmdk.build_cvxpy`, ``cp.HIGHS``). All three return the same
:class:`~dlsched.result.Result`; tests prove they agree. ``solver`` puts another MILP solver
behind the Pyomo or CVXPY front end (:mod:`dlsched.solvers.backends`), same Result contract.
"""

from __future__ import annotations

import time

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK
from dlsched.models import mcmdk as model
from dlsched.result import Result, Status
from dlsched.solvers import highs
from dlsched.solvers.backends import solve_cvxpy, solve_pyomo
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import register

BACKENDS = ("highs", "pyomo", "cvxpy")


def solve_core(inst: MCMDK, opts: SolveOptions | None = None, backend: str = "highs", *,
               relax: bool = False, solver: str | None = None) -> Result:
    """Solve the MCMDK (or its LP relaxation) exactly; the solution is a choice per job."""
    opts = opts or SolveOptions()
    if backend not in BACKENDS:
        raise InputError("<argument>", "backend", f"one of {', '.join(BACKENDS)}", backend)
    if solver is not None and backend == "highs" and solver.lower() != "highs":
        raise InputError("<argument>", "solver", "--backend pyomo or cvxpy with another solver (the matrix path is HiGHS)", solver)
    t0 = time.perf_counter()
    if backend == "highs":
        mf = model.build_matrix(inst, relax=relax)
        build = time.perf_counter() - t0
        warm = None
        if opts.warm_start is not None and not relax:
            warm = np.zeros(inst.n_cols)
            warm[inst.columns_of(opts.warm_start)] = 1.0
        out = highs.solve_matrix(mf, opts, warm_x=warm)
    elif backend == "pyomo":
        m = model.build_pyomo(inst, relax=relax)
        build = time.perf_counter() - t0
        out = solve_pyomo(m, inst, opts, solver or "highs")
    else:
        prob, x = model.build_cvxpy(inst, relax=relax)
        build = time.perf_counter() - t0
        out = solve_cvxpy(prob, x, inst, opts, solver or "HIGHS")
    build += out.stats.pop("compile_seconds", 0.0)
    version = out.stats.pop("solver_version", None) or highs.version()
    res = Result(method="lp" if relax else "exact", status=out.status, objective=out.objective, bound=out.bound,
                 sense=inst.sense, termination=out.termination, backend=backend, build_seconds=build,
                 solve_seconds=out.seconds, stats=dict(out.stats), solver_version=version,
                 options=opts.as_dict())
    if out.x is not None:
        res.solution = out.x if relax else inst.choice_from_columns(out.x)
    if out.status == Status.INFEASIBLE:
        rows = conflicting_rows(inst)
        res.stats["conflicting_rows"] = rows
        res.message = ("infeasible" + (f": minimum use exceeds capacity on {', '.join(rows)}" if rows else ""))
    return res


def conflicting_rows(inst: MCMDK) -> list[str]:
    r"""Names of capacity rows k that cannot hold even the least each job must use.

    A row conflicts when :math:`\sum_j \min_{o \in O_j} a^k_{j,o} > b^k` (with the empty choice,
    use 0, allowed under ``at_most_one``); jobs with no configuration under ``exactly_one``
    are named too.
    """
    names = [f"job '{inst.job_name(j)}' (no configuration)" for j in np.flatnonzero(inst.n_configs == 0)
             if inst.choose == "exactly_one"]
    if inst.n_rows == 0 or inst.n_jobs == 0 or inst.n_rows * inst.n_jobs > 50_000_000:
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


@register("exact", description="exact MILP with HiGHS (backend: highs matrix, pyomo or cvxpy; solver: another MILP solver behind pyomo/cvxpy)",
          params=("backend", "solver"))
def exact(instance, opts: SolveOptions, backend: str = "highs", solver: str | None = None) -> Result:
    """Exact MILP of the instance's core MCMDK; building the configurations counts as build time."""
    t0 = time.perf_counter()
    core = instance.to_core()
    convert = time.perf_counter() - t0
    res = solve_core(core, opts, backend, solver=solver)
    res.build_seconds += convert
    return res


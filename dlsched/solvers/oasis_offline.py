"""The offline optimum of the oasis family (MODELS.md §3.1), registered as ``offline`` and ``exact``.

``backend``: ``highs`` (vectorised matrix -> highspy; the fast path, with optional valid rows:
``symmetry``, ``server_link``, ``cumulative_work``), ``pyomo`` or ``cvxpy`` (declarative builders
of the same MILP; tests prove the three agree on small instances). ``warm`` (default on) passes the OASiS schedule to
HiGHS as a starting incumbent.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dlsched.errors import InputError, SolverError
from dlsched.models import oasis as model
from dlsched.models.oasis import OasisInstance, schedule_from_dense
from dlsched.result import Result, Status
from dlsched.solvers import highs
from dlsched.solvers.backends import CVXPY_TERMINATION, PYOMO_TERMINATION, _status_from
from dlsched.solvers.highs import MatrixOutcome
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import register

BACKENDS = ("highs", "pyomo", "cvxpy")


def _solve_pyomo(inst: OasisInstance, opts: SolveOptions):
    import pyomo.environ as pyo
    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.solvers.highs import Highs

    b0 = time.perf_counter()
    m = model.build_pyomo(inst)
    build = time.perf_counter() - b0
    solver = Highs()
    if not solver.available():
        raise SolverError("Pyomo cannot find highspy: pip install highspy")
    kwargs = dict(tee=bool(opts.log), load_solutions=False, raise_exception_on_nonoptimal_result=False,
                  rel_gap=float(opts.mip_rel_gap), solver_options={"random_seed": int(opts.seed), **opts.raw})
    if opts.time_limit is not None:
        kwargs["time_limit"] = float(opts.time_limit)
    if opts.threads is not None:
        kwargs["threads"] = int(opts.threads)
    t0 = time.perf_counter()
    res = solver.solve(m, **kwargs)
    secs = time.perf_counter() - t0
    term = PYOMO_TERMINATION.get(res.termination_condition.name, "unknown")
    has = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    out = MatrixOutcome(_status_from(term, has), term, None, None, None, secs)
    sched = None
    if has:
        res.solution_loader.load_vars()
        y = np.zeros((inst.n_jobs, inst.horizon, inst.n_worker_servers))
        z = np.zeros((inst.n_jobs, inst.horizon, inst.n_ps_servers))
        for (i, t, h), v in m.Y.items():
            y[i, t - 1, h] = pyo.value(v) or 0.0
        for (i, t, k), v in m.Z.items():
            z[i, t - 1, k] = pyo.value(v) or 0.0
        sched = schedule_from_dense(inst, y, z)
        out.objective = float(res.incumbent_objective)
    b = res.objective_bound
    out.bound = float(b) if b is not None and math.isfinite(b) else (out.objective if out.status == Status.OPTIMAL else None)
    return out, sched, build


def _solve_cvxpy(inst: OasisInstance, opts: SolveOptions):
    import cvxpy as cp

    b0 = time.perf_counter()
    prob, C, Y, Z = model.build_cvxpy(inst)
    build = time.perf_counter() - b0
    options = {"mip_rel_gap": float(opts.mip_rel_gap), "random_seed": int(opts.seed), "output_flag": bool(opts.log)}
    if opts.time_limit is not None:
        options["time_limit"] = float(opts.time_limit)
    if opts.threads is not None:
        options["threads"] = int(opts.threads)
    options.update(opts.raw)
    t0 = time.perf_counter()
    try:
        prob.solve(solver=cp.HIGHS, **options)
    except cp.error.SolverError as exc:
        raise SolverError(f"CVXPY/HiGHS failed: {exc}") from exc
    secs = time.perf_counter() - t0
    term = CVXPY_TERMINATION.get(prob.status, "unknown")
    has = C.value is not None
    out = MatrixOutcome(_status_from(term, has), term, None, None, None, secs)
    sched = None
    if has:
        y = np.stack([v.value for v in Y], axis=1)
        z = np.stack([v.value for v in Z], axis=1)
        sched = schedule_from_dense(inst, y, z)
        out.objective = float(prob.value)
    info = prob.solver_stats.extra_stats if prob.solver_stats else None
    if info is not None and math.isfinite(float(info.mip_dual_bound)):
        out.bound = -float(info.mip_dual_bound)      # CVXPY hands HiGHS a minimisation
    elif out.status == Status.OPTIMAL:
        out.bound = out.objective
    return out, sched, build


def solve_offline(inst: OasisInstance, opts: SolveOptions | None = None, backend: str = "highs",
                  warm: bool = True, symmetry: bool = False, server_link: bool = False,
                  cumulative_work: bool = False) -> Result:
    """Offline optimum: the time-indexed MILP with one-hot completion indicators."""
    opts = opts or SolveOptions()
    if backend not in BACKENDS:
        raise InputError("<argument>", "backend", f"one of {', '.join(BACKENDS)}", backend)
    t0 = time.perf_counter()
    stats = {}
    if backend == "highs":
        mf, idx = model.build_matrix(inst, symmetry=symmetry, server_link=server_link, cumulative_work=cumulative_work)
        build = time.perf_counter() - t0
        warm_x = None
        if warm:
            from dlsched.solvers.oasis import run_oasis

            w0 = time.perf_counter()
            start, _ = run_oasis(inst)
            warm_x = model.columns_from_schedule(inst, idx, start)
            stats["warm_seconds"] = time.perf_counter() - w0
        out = highs.solve_matrix(mf, opts, warm_x=warm_x)
        sched = model.schedule_from_columns(inst, idx, out.x) if out.x is not None else None
        stats.update(out.stats, rows=int(mf.n_rows), cols=int(mf.n_cols), nonzeros=int(mf.M.nnz))
    elif backend == "pyomo":
        out, sched, build = _solve_pyomo(inst, opts)
    else:
        out, sched, build = _solve_cvxpy(inst, opts)
    if sched is not None:
        # completion taken from the schedule itself: its utility is what the checker recomputes
        sched.reasons = {i: "not admitted by the optimum" for i in np.flatnonzero(~sched.admitted)}
        for i in np.flatnonzero(~sched.admitted):
            why = inst.infeasible_reason(int(i))
            if why:
                sched.reasons[int(i)] = why
        out.objective = model.schedule_utility(inst, sched)
    res = Result("offline", out.status, out.objective, out.bound, "max", out.termination, backend, build,
                 out.seconds, sched, stats, highs.version(), opts.as_dict())
    if res.objective is not None and res.bound is not None and res.bound < res.objective:
        res.bound = max(res.bound, res.objective)  # utility of the schedule may round above the MILP value
    return res


@register("offline", families=("oasis",), params=("backend", "warm", "symmetry", "server_link", "cumulative_work"),
          description="offline optimum of the OASiS model: time-indexed MILP with HiGHS (MODELS.md §3.1)")
def offline(inst: OasisInstance, opts: SolveOptions, backend: str = "highs", warm: bool = True, symmetry: bool = False,
            server_link: bool = False, cumulative_work: bool = False) -> Result:
    """Offline optimum; the optional valid rows (highs backend) are off by default (docs/oasis.md)."""
    return solve_offline(inst, opts, backend, warm=_bool(warm), symmetry=_bool(symmetry),
                         server_link=_bool(server_link), cumulative_work=_bool(cumulative_work))


@register("exact", families=("oasis",), params=("backend",),
          description="offline optimum of the OASiS model (alias of offline)")
def exact_oasis(inst: OasisInstance, opts: SolveOptions, backend: str = "highs") -> Result:
    return solve_offline(inst, opts, backend)


def _bool(v) -> bool:
    if isinstance(v, str):
        return v.lower() not in ("0", "false", "no", "off")
    return bool(v)

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

from dlsched.errors import InputError
from dlsched.instance.oasis import OasisInstance, schedule_from_dense, schedule_utility
from dlsched.models import oasis as model
from dlsched.result import Result, Status
from dlsched.solvers import highs
from dlsched.solvers.backends import run_cvxpy, run_pyomo
from dlsched.solvers.oasis import run_oasis
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import flag, register

BACKENDS = ("highs", "pyomo", "cvxpy")


def _solve_pyomo(inst: OasisInstance, opts: SolveOptions):
    """Pyomo front end: (build seconds, outcome, schedule)."""
    import pyomo.environ as pyo

    t0 = time.perf_counter()
    m = model.build_pyomo(inst)
    build = time.perf_counter() - t0
    out = run_pyomo(m, opts)
    build += out.stats.pop("compile_seconds", 0.0)
    sched = None
    if out.status.has_solution():
        y = np.zeros((inst.n_jobs, inst.horizon, inst.n_worker_servers))
        z = np.zeros((inst.n_jobs, inst.horizon, inst.n_ps_servers))
        for (i, t, h), v in m.Y.items():
            y[i, t - 1, h] = pyo.value(v) or 0.0
        for (i, t, k), v in m.Z.items():
            z[i, t - 1, k] = pyo.value(v) or 0.0
        sched = schedule_from_dense(inst, y, z)
    return build, out, sched


def _solve_cvxpy(inst: OasisInstance, opts: SolveOptions):
    """CVXPY front end: (build seconds incl. canonicalisation, outcome, schedule)."""
    t0 = time.perf_counter()
    prob, C, Y, Z = model.build_cvxpy(inst)
    build = time.perf_counter() - t0
    out = run_cvxpy(prob, opts, "max")
    build += out.stats.pop("compile_seconds", 0.0)
    sched = None
    if out.status.has_solution():
        y = np.stack([v.value for v in Y], axis=1)
        z = np.stack([v.value for v in Z], axis=1)
        sched = schedule_from_dense(inst, y, z)
    return build, out, sched


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

            w0 = time.perf_counter()
            start, _ = run_oasis(inst)
            warm_x = model.columns_from_schedule(inst, idx, start)
            stats["warm_seconds"] = time.perf_counter() - w0
        out = highs.solve_matrix(mf, opts, warm_x=warm_x)
        sched = model.schedule_from_columns(inst, idx, out.x) if out.x is not None else None
        stats.update(out.stats, rows=int(mf.n_rows), cols=int(mf.n_cols), nonzeros=int(mf.M.nnz))
    elif backend == "pyomo":
        build, out, sched = _solve_pyomo(inst, opts)
    else:
        build, out, sched = _solve_cvxpy(inst, opts)
    if sched is not None:
        # completion taken from the schedule itself: its utility is what the checker recomputes
        sched.reasons = {i: "not admitted by the optimum" for i in np.flatnonzero(~sched.admitted)}
        for i in np.flatnonzero(~sched.admitted):
            why = inst.infeasible_reason(int(i))
            if why:
                sched.reasons[int(i)] = why
        out.objective = schedule_utility(inst, sched)
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
    return solve_offline(inst, opts, backend, warm=flag(warm, "warm"), symmetry=flag(symmetry, "symmetry"),
                         server_link=flag(server_link, "server_link"), cumulative_work=flag(cumulative_work, "cumulative_work"))


@register("exact", families=("oasis",), params=("backend",),
          description="offline optimum of the OASiS model (alias of offline)")
def exact_oasis(inst: OasisInstance, opts: SolveOptions, backend: str = "highs") -> Result:
    return solve_offline(inst, opts, backend)


def pooled_bound(inst: OasisInstance, opts: SolveOptions | None = None, eps: float = 1e-6, relax: bool = False) -> Result:
    """Upper bound on the offline optimum from the pooled-server relaxation (``build_pooled_matrix``).

    For instances too large for the exact MILP (the paper setting: 400 jobs, 300 slots, 100
    servers). The bound is HiGHS's dual bound of the relaxation (valid at a time limit too) plus
    the truncation slack; no schedule is returned. ``relax=True`` also relaxes the run
    indicators (an LP: weaker, faster).
    """
    opts = opts or SolveOptions()
    t0 = time.perf_counter()
    mf, idx = model.build_pooled_matrix(inst, eps=eps, relax=relax)
    build = time.perf_counter() - t0
    out = highs.solve_matrix(mf, opts)
    bound = None if out.bound is None else out.bound + idx.slack
    stats = dict(out.stats, rows=int(mf.n_rows), cols=int(mf.n_cols), nonzeros=int(mf.M.nnz), jobs_kept=int(len(idx.jobs)),
                 slack=idx.slack, relaxation_value=out.objective)
    return Result("pooled-bound", Status.NO_SOLUTION, None, bound, "max", out.termination, "highs", build, out.seconds,
                  None, stats, highs.version(), opts.as_dict())


@register("pooled-bound", families=("oasis",), params=("eps", "relax"),
          description="upper bound on the OASiS offline optimum: pooled-server relaxation (no schedule)")
def pooled(inst: OasisInstance, opts: SolveOptions, eps: float = 1e-6, relax: bool = False) -> Result:
    try:
        value = float(eps)
    except (TypeError, ValueError):
        value = float("nan")
    if not (value >= 0 and math.isfinite(value)):
        raise InputError("<argument>", "eps", "a finite number >= 0 (share of the top utility below which jobs are cut)", eps)
    return pooled_bound(inst, opts, eps=value, relax=flag(relax, "relax"))

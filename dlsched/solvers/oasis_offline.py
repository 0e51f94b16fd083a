"""The offline optimum of the oasis family (MODELS.md §3.1), registered as ``offline`` and ``exact``.

``backend``: ``highs`` (vectorised matrix -> highspy; the fast path, with optional valid rows:
``symmetry``, ``server_link``, ``cumulative_work``), ``pyomo`` or ``cvxpy`` (declarative builders
of the same MILP; tests prove the three agree on small instances). ``warm`` (default on with the
highs backend) passes the OASiS schedule to HiGHS as a starting incumbent.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.oasis import OasisInstance, OasisSchedule, schedule_from_dense, schedule_utility
from dlsched.models import oasis as model
from dlsched.result import Result, Status, make_result
from dlsched.solvers import highs
from dlsched.solvers.backends import BACKENDS, FrontEnds, solve_front_end
from dlsched.solvers.highs import MatrixOutcome, can_fork, in_child
from dlsched.solvers.oasis import run_oasis
from dlsched.solvers.options import SolveOptions
from dlsched.arguments import flag
from dlsched.solvers.registry import register


def front_ends(inst: OasisInstance, start: OasisSchedule | None, symmetry: bool, server_link: bool,
               cumulative_work: bool, stats: dict) -> FrontEnds:
    """The offline MILP through the three front ends; every reader returns an :class:`OasisSchedule`
    and the objective is the schedule's utility (what the checker recomputes). ``start`` (the
    OASiS schedule) is HiGHS's starting incumbent."""
    idx_of: list = []

    def matrix():
        mf, idx = model.build_matrix(inst, symmetry=symmetry, server_link=server_link, cumulative_work=cumulative_work)
        idx_of[:] = [idx]
        stats.update(rows=int(mf.n_rows), cols=int(mf.n_cols), nonzeros=int(mf.M.nnz))
        return mf, lambda x: _explain(inst, model.schedule_from_columns(inst, idx, x))

    def warm_start(mf):
        return model.columns_from_schedule(inst, idx_of[0], start)

    def pyomo():
        m = model.build_pyomo(inst)

        def read():
            y = np.zeros((inst.n_jobs, inst.horizon, inst.n_worker_servers))
            z = np.zeros((inst.n_jobs, inst.horizon, inst.n_ps_servers))
            for (i, t, h), v in m.Y.items():
                y[i, t - 1, h] = v.value or 0.0
            for (i, t, k), v in m.Z.items():
                z[i, t - 1, k] = v.value or 0.0
            return _explain(inst, schedule_from_dense(inst, y, z))

        return m, read

    def cvxpy():
        prob, C, Y, Z = model.build_cvxpy(inst)
        return prob, lambda: _explain(inst, schedule_from_dense(inst, np.stack([v.value for v in Y], axis=1),
                                                                np.stack([v.value for v in Z], axis=1)))

    return FrontEnds("max", matrix, pyomo, cvxpy, warm=warm_start if start is not None else None,
                     objective=lambda sched: schedule_utility(inst, sched))


def _explain(inst: OasisInstance, sched):
    """Say why each job the optimum did not admit is out (its own infeasibility when it has one)."""
    blocked = inst.infeasible_reasons()
    sched.reasons = {i: blocked[i] or "not admitted by the optimum" for i in np.flatnonzero(~sched.admitted).tolist()}
    return sched


def solve_offline(inst: OasisInstance, opts: SolveOptions | None = None, backend: str = "highs",
                  warm: bool | None = None, symmetry: bool = False, server_link: bool = False,
                  cumulative_work: bool = False) -> Result:
    """Offline optimum: the time-indexed MILP with one-hot completion indicators.

    ``warm`` (default: on with the highs backend) runs OASiS inside the call's budget and passes
    its schedule to HiGHS; the valid rows are highspy-only. Asking for either with another
    backend is an :class:`InputError`. If the schedule's utility exceeds HiGHS's bound (it should
    not), the result reports the inconsistency; the bound is not raised to hide it."""
    opts = (opts or SolveOptions()).started()
    if backend != "highs":
        for name, on in (("warm", warm), ("symmetry", symmetry), ("server_link", server_link),
                         ("cumulative_work", cumulative_work)):
            if on:
                raise InputError("<argument>", name, f"off with the {backend} backend (highs only)", on)
    stats: dict = {}
    start = None
    if backend == "highs" if warm is None else warm:
        w0 = time.perf_counter()
        start, info = run_oasis(inst, budget=opts.clock)
        stats["warm_seconds"] = time.perf_counter() - w0
        if info["stopped_at"] is not None:
            stats["warm_stopped_at"] = info["stopped_at"]
    fe = front_ends(inst, start, symmetry, server_link, cumulative_work, stats)
    if backend == "highs" and opts.clock.limited and can_fork():
        # the matrix build cannot be interrupted (9 s for the 3.1M columns of 500 jobs x 300 slots x
        # 50 servers): build and solve in a child stopped at the deadline, as Pyomo and CVXPY are
        def build_and_solve(report):
            out, sched, build = solve_front_end(fe, backend, opts)
            out.highs = None
            return out, sched, build, stats

        t0 = time.perf_counter()
        done, value = in_child(build_and_solve, opts.clock)
        if done:
            out, sched, build, stats = value
        else:
            out, sched, build = MatrixOutcome(Status.NO_SOLUTION, "time_limit", None, None, None, time.perf_counter() - t0,
                                              stats={"stopped_at_deadline": True}), None, 0.0
        out.stats["guarded"] = True
    else:
        out, sched, build = solve_front_end(fe, backend, opts)
    objective = out.objective if sched is not None else None
    if sched is None and start is not None and out.termination == "time_limit":
        # stopped before HiGHS found a schedule: the start is the best found
        sched, objective, stats["returned"] = start, schedule_utility(inst, start), "warm start"
    return make_result("offline", opts, sense="max", termination=out.termination, solution=sched,
                       objective=objective, bound=out.bound, backend=backend,
                       build_seconds=build + stats.get("warm_seconds", 0.0), solve_seconds=out.seconds,
                       stats={**stats, **out.stats}, solver_version=highs.version())


@register("offline", families=("oasis",), params=("backend", "warm", "symmetry", "server_link", "cumulative_work"),
          supports=("gap", "raw"), backends=BACKENDS,
          description="offline optimum of the OASiS model: time-indexed MILP with HiGHS (MODELS.md §3.1)")
def offline(inst: OasisInstance, opts: SolveOptions, backend: str = "highs", warm: bool | None = None,
            symmetry: bool = False, server_link: bool = False, cumulative_work: bool = False) -> Result:
    """Offline optimum; the optional valid rows (highs backend) are off by default (docs/oasis.md)."""
    return solve_offline(inst, opts, backend, warm=None if warm is None else flag(warm, "warm"),
                         symmetry=flag(symmetry, "symmetry"), server_link=flag(server_link, "server_link"),
                         cumulative_work=flag(cumulative_work, "cumulative_work"))


@register("exact", families=("oasis",), params=("backend",), supports=("gap", "raw"), backends=BACKENDS,
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
    opts = (opts or SolveOptions()).started()
    t0 = time.perf_counter()
    mf, idx = model.build_pooled_matrix(inst, eps=eps, relax=relax)
    build = time.perf_counter() - t0
    out = highs.solve_matrix(mf, opts)
    bound = None if out.bound is None else out.bound + idx.slack
    stats = dict(out.stats, rows=int(mf.n_rows), cols=int(mf.n_cols), nonzeros=int(mf.M.nnz), jobs_kept=int(len(idx.jobs)),
                 slack=idx.slack, relaxation_value=out.objective, relaxation_termination=out.termination)
    # a bound-only method: "optimal" describes the relaxation, not a solution of the instance
    termination = "bound_only" if out.termination in ("optimal", "gap_limit") else out.termination
    return make_result("pooled-bound", opts, sense="max", termination=termination, bound=bound, backend="highs",
                       build_seconds=build, solve_seconds=out.seconds, stats=stats, solver_version=highs.version())


@register("pooled-bound", families=("oasis",), params=("eps", "relax"), supports=("gap", "raw"),
          description="upper bound on the OASiS offline optimum: pooled-server relaxation (no schedule)")
def pooled(inst: OasisInstance, opts: SolveOptions, eps: float = 1e-6, relax: bool = False) -> Result:
    try:
        value = float(eps)
    except (TypeError, ValueError):
        value = float("nan")
    if not (value >= 0 and math.isfinite(value)):
        raise InputError("<argument>", "eps", "a finite number >= 0 (share of the top utility below which jobs are cut)", eps)
    return pooled_bound(inst, opts, eps=value, relax=flag(relax, "relax"))

"""The exact MILP of the core model (MODELS.md §1) through any of the three front ends.

``backend``: ``highs`` (vectorised matrix -> highspy, the fast path), ``pyomo``
(:func:`~dlsched.models.mcmdk.build_pyomo`, Pyomo's HiGHS interface) or ``cvxpy``
(:func:`~dlsched.models.mcmdk.build_cvxpy`, ``cp.HIGHS``). All three return the same
:class:`~dlsched.result.Result`; tests prove they agree.
"""

from __future__ import annotations

import time
from dataclasses import replace

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
               relax: bool = False) -> Result:
    """Solve the MCMDK (or its LP relaxation) exactly; the solution is a choice per job."""
    opts = opts or SolveOptions()
    if backend not in BACKENDS:
        raise InputError("<argument>", "backend", f"one of {', '.join(BACKENDS)}", backend)
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
        out = solve_pyomo(m, inst, opts)
    else:
        prob, x = model.build_cvxpy(inst, relax=relax)
        build = time.perf_counter() - t0
        out = solve_cvxpy(prob, x, inst, opts)
    build += out.stats.pop("compile_seconds", 0.0)
    res = Result(method="lp" if relax else "exact", status=out.status, objective=out.objective, bound=out.bound,
                 sense=inst.sense, termination=out.termination, backend=backend, build_seconds=build,
                 solve_seconds=out.seconds, stats=dict(out.stats), solver_version=highs.version(),
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


#: ``primal_start="auto"`` starts from a layer's incumbent on models with at least this many columns
#: (below it HiGHS finds good solutions early by itself: on a generated 20 x 400 GAP, seed 2, plain HiGHS
#: was better at 10 s, on a 40 x 800 one the start was; reported runs use seeds >= 1000)
PRIMAL_START_COLUMNS = 20_000
#: the share of the time limit the primal start may use; HiGHS gets the rest
PRIMAL_START_SHARE = 0.5
PRIMAL_START = ("auto", "on", "off")


def wants_primal_start(inst: MCMDK, opts: SolveOptions, backend: str, primal_start: str) -> bool:
    """The documented rule of ``primal_start`` (docs/layers.md, "exact on large models")."""
    if primal_start not in PRIMAL_START:
        raise InputError("<argument>", "primal_start", f"one of {', '.join(PRIMAL_START)}", primal_start)
    if primal_start == "on" and opts.time_limit is None:
        raise InputError("<argument>", "primal_start", "a time limit to share (--time-limit) with primal_start=on", "none")
    if primal_start == "on":
        return True
    return primal_start == "auto" and opts.time_limit is not None and backend == "highs" \
        and inst.n_cols >= PRIMAL_START_COLUMNS


@register("exact", description="exact MILP with HiGHS (backend: highs matrix, pyomo or cvxpy); on large models "
          "it starts from the core layer's incumbent", params=("backend", "primal_start", "primal_share"))
def exact(instance, opts: SolveOptions, backend: str = "highs", primal_start: str = "auto",
          primal_share: float = PRIMAL_START_SHARE) -> Result:
    """Exact MILP of the instance's core MCMDK; building the configurations counts as build time.

    With a primal start (:func:`wants_primal_start`) the ``core`` layer runs first for
    ``primal_share`` of the time limit and HiGHS then solves the whole model from its incumbent
    (``setSolution``) for the rest: the answer is never worse than the layer's, and the bound is
    HiGHS's bound of the whole model (tightened by the layer's certified bound where that is lower).
    """
    t0 = time.perf_counter()
    core = instance.to_core()
    convert = time.perf_counter() - t0
    if not wants_primal_start(core, opts, backend, primal_start):
        res = solve_core(core, opts, backend)
        res.build_seconds += convert
        return res
    if not 0 < primal_share < 1:
        raise InputError("<argument>", "primal_share", "a share of the time limit in (0, 1)", primal_share)
    from dlsched.solvers.core import core as core_layer   # core imports solve_core from here

    first = core_layer(core, replace(opts, time_limit=primal_share * (opts.time_limit - convert)))
    offset = time.perf_counter() - t0
    stream = opts.on_incumbent
    warm = first.solution if first.status.has_solution() else None
    second = solve_core(core, replace(
        opts, warm_start=warm, time_limit=max(opts.time_limit - offset, 1e-3),
        on_incumbent=None if stream is None else (lambda inc: stream(replace(inc, seconds=inc.seconds + offset)))),
        backend)
    res = second
    sign = 1.0 if core.sense == "max" else -1.0
    if first.objective is not None and (second.objective is None or sign * first.objective > sign * second.objective):
        res.solution, res.objective = first.solution, first.objective
        res.status = Status.FEASIBLE if res.status != Status.OPTIMAL else res.status
    bounds = [b for b in (first.bound, second.bound) if b is not None]
    if bounds:
        res.bound = min(bounds) if core.sense == "max" else max(bounds)
    res.method = "exact"
    res.build_seconds = convert + first.build_seconds + second.build_seconds
    res.solve_seconds = time.perf_counter() - t0 - res.build_seconds
    res.stats["primal_start"] = {"method": "core", "seconds": round(offset - convert, 4), "objective": first.objective,
                                 "bound": first.bound, "status": first.status.value}
    return res

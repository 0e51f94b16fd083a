"""The ``exact`` method: the whole core MILP (MODELS.md §1) solved by HiGHS, Pyomo or CVXPY
(:mod:`dlsched.solvers.milp`), started on large models from the ``core`` layer's incumbent.
"""

from __future__ import annotations

import time
from dataclasses import replace

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK
from dlsched.result import Result, make_result
from dlsched.solvers import highs
from dlsched.solvers.backends import BACKENDS
from dlsched.solvers.core import core as core_layer
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.rounding import greedy_start
from dlsched.solvers.registry import register


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
    if primal_start == "on" and opts.warm_start is not None:
        raise InputError("<argument>", "primal_start", "off or auto with a warm start (the warm start is the start)", "on")
    if primal_start == "on":
        return True
    return primal_start == "auto" and opts.time_limit is not None and backend == "highs" \
        and inst.n_cols >= PRIMAL_START_COLUMNS and opts.warm_start is None


@register("exact", description="exact MILP with HiGHS (backend: highs matrix, pyomo or cvxpy; solver: another MILP "
          "solver behind pyomo/cvxpy); on large models it starts from the core layer's incumbent",
          params=("backend", "solver", "primal_start", "primal_share"),
          supports=("gap", "raw", "warm_start"), backends=BACKENDS)
def exact(instance, opts: SolveOptions, backend: str = "highs", solver: str | None = None,
          primal_start: str = "auto", primal_share: float = PRIMAL_START_SHARE) -> Result:
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
        # with a limit, the greedy start is made before HiGHS runs (milliseconds), not after the deadline
        start = greedy_start(core) if opts.clock.limited else None
        res = solve_core(core, opts, backend, solver=solver)
        res.build_seconds += convert
        if start is None or res.solution is not None or res.termination != "time_limit":
            return res
        # the limit ended HiGHS before any solution: the greedy start is the best found
        return make_result("exact", opts, sense=core.sense, termination="time_limit", solution=start,
                           objective=float(core.value[core.columns_of(start)].sum()), bound=res.bound,
                           backend=backend, build_seconds=res.build_seconds, solve_seconds=res.solve_seconds,
                           stats={**res.stats, "returned": "greedy start"}, solver_version=res.solver_version,
                           message=res.message)
    if not 0 < primal_share < 1:
        raise InputError("<argument>", "primal_share", "a share of the time limit in (0, 1)", primal_share)
    first = core_layer(core, opts.within(opts.clock.share(primal_share)))
    offset = opts.clock.elapsed()
    stream = opts.on_incumbent
    warm = first.solution if first.status.has_solution() else None
    # the rest of the call's budget: solve_core reads it from opts.budget
    second = solve_core(core, replace(
        opts, warm_start=warm,
        on_incumbent=None if stream is None else (lambda inc: stream(replace(inc, seconds=inc.seconds + offset)))),
        backend, solver=solver)
    sign = 1.0 if core.sense == "max" else -1.0
    take_first = first.objective is not None and (second.objective is None or sign * first.objective > sign * second.objective)
    solution, objective = (first.solution, first.objective) if take_first else (second.solution, second.objective)
    termination = second.termination
    if solution is not None and termination not in ("optimal", "gap_limit", "time_limit"):
        termination = "time_limit"
    elif solution is None and termination == "optimal":
        termination = "error"
    bounds = [b for b in (first.bound, second.bound) if b is not None]
    bound = (min(bounds) if core.sense == "max" else max(bounds)) if bounds else None
    stats = dict(second.stats, primal_start={"method": "core", "seconds": round(offset - convert, 4),
                                             "objective": first.objective, "bound": first.bound,
                                             "status": first.status.value})
    return make_result("exact", opts, sense=core.sense, termination=termination, solution=solution, objective=objective,
                       bound=bound, backend=backend, build_seconds=convert + first.build_seconds + second.build_seconds,
                       stats=stats, solver_version=highs.version(), message=second.message)

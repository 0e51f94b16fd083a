r"""The core layer's incumbent, then HiGHS on the whole MCMDK cut to the cardinalities that can beat it (MODELS.md §1).

Method ``hyperplane`` (Vimont, Boussier & Vasquez, J. Comb. Optim. 15, 2008: the hyperplanes
:math:`\sum x = k` of the multidimensional knapsack). Let :math:`\kappa(x) = \sum_{j,o} x_{j,o}`
be the number of jobs that get a configuration and

.. math:: z_{LP}(k) = \max\{g^\top x : Ax \le b,\ Ex \le 1,\ \textstyle\sum x = k,\ 0 \le x \le 1\},

the LP value on the hyperplane :math:`\kappa = k`, a concave function of k (the optimal value of
an LP is concave in a right-hand side). Every solution with :math:`\kappa(x) = k` is worth at
most :math:`z_{LP}(k)`. So:

1. run the ``start`` layer for ``core_share`` of the time limit (default 0.3 for the core layer,
   0.6 for the tabu search): incumbent :math:`z` and its
   certified bound. ``start="core"`` (the default) is the core layer (:mod:`dlsched.solvers.core`);
   ``start="tabu"`` is the tabu search (:mod:`dlsched.solvers.tabu`, bound: the LP's), which on
   250-item and larger Chu–Beasley problems hands HiGHS a better incumbent than the core layer's
   (the results log, docs/results/index.md, issue 14); ``misfits`` (default off, only with this
   start) is the search's option of that name;
2. from the LP's own cardinality outwards, solve :math:`z_{LP}(k)` (one HiGHS object, dual
   simplex warm-started from k to k±1) until it falls below :math:`z + \delta`, with
   :math:`\delta = 1` when every gain is an integer (a better solution is worth at least
   :math:`z + 1`) and 0 otherwise; by concavity every k beyond is excluded as well. This gives
   the range :math:`k_{lo} \le \kappa \le k_{hi}` that any *better* solution lies in;
3. solve the whole MILP with the row :math:`k_{lo} \le \sum x \le k_{hi}` added, for the rest of
   the time, from the incumbent (``setSolution``) when it lies in the range, else with the
   cutoff row :math:`g^\top x \ge z + \delta`.

Measured on generated Chu–Beasley problems (seeds below 100, docs/layers.md): the row tightens
HiGHS's search on 30-constraint problems, where the core layer's cores stay narrow.

**Bound.** A better solution lies in the range, so :math:`z^* \le \max(z, \beta)`, where
:math:`\beta` is the dual bound of the MILP of step 3 (or :math:`\max_k z_{LP}(k)` over the
range, whichever is smaller; :math:`-\infty` when step 3 proves it infeasible, and then
:math:`z` is optimal); the reported bound is the smaller of that and the core layer's.

If the start layer's share ends without an incumbent (measured once, on a 4,000-job,
100,000-column model whose LP took most of it), steps 2–3 are skipped and the core layer gets
the rest of the time (the whole MILP from scratch found only the empty solution there).

Under ``exactly_one`` every solution has :math:`\kappa = n_{jobs}`, and models with more than
:data:`CARDINALITY_COLUMNS` columns would spend too long in the LPs of step 2: then step 2 is
skipped and step 3 is the whole MILP from the incumbent (``exact`` with a primal start).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from functools import partial

import numpy as np

from dlsched.errors import InputError
from dlsched.models.mcmdk import build_matrix
from dlsched.result import Result, Status, make_result
from dlsched.solvers import highs
from dlsched.solvers.cardinality import cardinality_range, with_rows
from dlsched.solvers.core import core as core_layer
from dlsched.solvers.lp import gain, integral_gains
from dlsched.solvers.options import SolveOptions
from dlsched.arguments import flag
from dlsched.solvers.registry import register
from dlsched.solvers.tabu import tabu as tabu_layer

#: share of the time limit for the core layer's incumbent (chosen on generated Chu–Beasley problems, docs/layers.md)
CORE_SHARE = 0.3
#: the same share when ``start="tabu"``: the search needs most of the time on 250-item problems
#: (generated Chu–Beasley seeds 200-201, the results log, docs/results/index.md issue 14)
TABU_SHARE = 0.6
#: the layers that may give the first incumbent (option ``start``; the first is the default)
STARTS = ("core", "tabu")
#: the cardinality range is computed for models of at most this many columns (each LP of step 2
#: costs about a full LP; at 20,000 columns a few tenths of a second)
CARDINALITY_COLUMNS = 20_000


@register("hyperplane", description="core layer's incumbent, then HiGHS on the whole model restricted to the "
          "cardinalities sum x = k whose LP can beat it (Vimont et al.'s hyperplanes)",
          params=("core_share", "start", "misfits"), supports=("gap", "raw"))
def hyperplane(instance, opts: SolveOptions, core_share: float | None = None, start: str = STARTS[0],
               misfits: bool = False) -> Result:
    """Start layer, cardinality range, HiGHS on the cut whole model (module docstring); ``core_share``
    defaults to :data:`CORE_SHARE` (``start="core"``) or :data:`TABU_SHARE` (``start="tabu"``)."""
    if core_share is None:
        core_share = TABU_SHARE if start == "tabu" else CORE_SHARE
    if not isinstance(core_share, (int, float)) or not 0 < core_share < 1:
        raise InputError("<argument>", "core_share", "a share of the time limit in (0, 1)", core_share)
    if start not in STARTS:
        raise InputError("<argument>", "start", "one of " + ", ".join(STARTS), start)
    misfits = flag(misfits, "misfits")
    if misfits and start != "tabu":
        raise InputError("<argument>", "misfits", "false unless start is 'tabu' (an option of the tabu search)", misfits)
    first_layer = partial(tabu_layer, misfits=misfits) if start == "tabu" else core_layer
    opts = opts.started()
    t0 = time.perf_counter()
    inst = instance.to_core()
    convert = time.perf_counter() - t0
    # without a time limit the core layer runs to the end (it is exact then)
    first = first_layer(inst, opts.within(opts.clock.share(core_share)) if opts.clock.limited else opts)
    sign = 1.0 if inst.sense == "max" else -1.0
    stats = {start: {"seconds": round(opts.clock.elapsed() - convert, 4), "objective": first.objective,
                      "bound": first.bound, "status": first.status.value}}
    common = dict(sense=inst.sense, backend="highs", solver_version=highs.version(),
                  build_seconds=convert + first.build_seconds)
    has = first.status.has_solution()
    decided = first.status in (Status.OPTIMAL, Status.INFEASIBLE, Status.UNBOUNDED, Status.ERROR)
    if decided or opts.clock.expired() or (has and first.bound is not None and opts.mip_rel_gap > 0
                                           and abs(first.bound - first.objective) <= opts.mip_rel_gap * abs(first.objective)):
        return make_result("hyperplane", opts, termination=first.termination, solution=first.solution,
                           objective=first.objective, bound=first.bound, stats=dict(first.stats, **stats),
                           message=first.message, **common)
    if not has:
        # no incumbent from the core layer in its share (on a 4,000-job, 100,000-column model its LP
        # took most of it): the core layer again with the rest of the time; from scratch, the whole
        # MILP found only the empty solution there (the results log, docs/results/index.md, issue 14)
        again = core_layer(inst, opts)
        bounds = [b for b in (first.bound, again.bound) if b is not None]
        bound = (min(bounds) if inst.sense == "max" else max(bounds)) if bounds else None
        stats["core_again"] = {"objective": again.objective, "bound": again.bound, "status": again.status.value}
        termination = again.termination if again.termination != "optimal" or again.solution is not None else "time_limit"
        return make_result("hyperplane", opts, termination=termination, solution=again.solution,
                           objective=again.objective, bound=bound, stats=dict(again.stats, **stats),
                           message=again.message, **dict(common, build_seconds=common["build_seconds"] + again.build_seconds))
    z = sign * first.objective
    delta = 1.0 if integral_gains(inst) else 0.0
    mf = build_matrix(inst)
    rows, lower, upper = [], [], []
    range_bound = math.inf
    if inst.choose == "at_most_one" and inst.n_cols <= CARDINALITY_COLUMNS:
        found = cardinality_range(inst, z, delta, opts, mf)
        if found is None:      # no hyperplane can beat z: the incumbent is optimal
            stats["cardinality"] = "none can improve"
            return make_result("hyperplane", opts, termination="optimal", solution=first.solution,
                               objective=first.objective, bound=first.objective, stats=stats, **common)
        k_lo, k_hi, range_bound = found
        stats["cardinality"] = [k_lo, k_hi]
        rows.append(np.ones(inst.n_cols))
        lower.append(float(k_lo))
        upper.append(float(k_hi))
    warm = np.zeros(inst.n_cols)
    warm[inst.columns_of(first.solution)] = 1.0
    if rows and not lower[0] <= warm.sum() <= upper[0]:
        warm = None        # the incumbent is off the range: cut at its value instead
        rows.append(gain(inst))
        lower.append(z + delta - 1e-6 * max(1.0, abs(z)) if delta else z)
        upper.append(math.inf)
    offset = opts.clock.elapsed()
    stream = opts.on_incumbent
    out = highs.solve_matrix(with_rows(mf, rows, lower, upper), replace(
        opts, warm_start=None,
        on_incumbent=None if stream is None else (lambda inc: stream(replace(inc, seconds=inc.seconds + offset)))),
        warm_x=warm)
    best_choice, best = first.solution, z
    if out.x is not None and out.status.has_solution():
        choice = inst.choice_from_columns(out.x)
        g = float(gain(inst)[inst.columns_of(choice)].sum())
        if g > best + 1e-9:
            best_choice, best = choice, g
    if out.status == Status.INFEASIBLE:
        beta = -math.inf
    elif out.status == Status.OPTIMAL and out.termination == "optimal":
        beta = sign * out.objective
    else:
        beta = sign * out.bound if out.bound is not None else math.inf
    bound = min(max(z, min(beta, range_bound)), sign * first.bound if first.bound is not None else math.inf)
    if delta and math.isfinite(bound):
        bound = math.floor(bound + 1e-6)
    stats.update(whole={"termination": out.termination, "seconds": round(out.seconds, 4), **out.stats})
    proven = bound - best <= 1e-9 * max(1.0, abs(best))
    gap_ok = opts.mip_rel_gap > 0 and best != 0 and bound - best <= opts.mip_rel_gap * abs(best)
    termination = "optimal" if proven else ("gap_limit" if gap_ok else "time_limit")
    return make_result("hyperplane", opts, termination=termination, solution=best_choice, objective=sign * best,
                       bound=sign * bound if math.isfinite(bound) else None, stats=stats, **common)

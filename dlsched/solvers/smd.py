r"""The SMD decomposition (MODELS.md §2.3): parametric sum-of-ratios iteration over MCMDK subproblems.

Inner problem (one decision epoch, MODELS.md §2.2): every term :math:`\omega_j R_j / g_j(w, p)` is
a ratio :math:`N_j / D_j(x)` with :math:`N_j = \omega_j R_j` and :math:`D_j(x) = g_{j,o}` for the
chosen configuration o. The parametric (Newton-type) method keeps :math:`(\beta_j, u_j)` and solves

.. math::

    \min_x \; \sum_j \Big(\beta_j^{k} + u_j^{k}\big(N_j - \beta_j^{k} D_j(x)\big)\Big)
           \;[\text{job } j \text{ runs}] \;+\; \sum_j \omega_j D_j^{\mathrm{defer}} [\text{job } j \text{ waits}]

then sets :math:`\beta_j = N_j / D_j(x^k)`, :math:`u_j = 1 / D_j(x^k)` at its solution. With
:math:`\beta = N/g_0`, :math:`u = 1/g_0`, the bracket is :math:`N(2/g_0 - g/g_0^2)`, the tangent of
the convex function :math:`N/g` at :math:`g_0`: it never exceeds the true cost. Hence

* every subproblem optimum is a **valid lower bound** on the §2.2 optimum, and its solution,
  evaluated with the true costs, an upper bound;
* ``memory=True`` (default) keeps every pair :math:`(\beta_j^k, u_j^k)` seen and uses
  :math:`\max_k` of the tangents. Because x picks one configuration per job, the max of
  tangents is again a per-column cost, so every subproblem stays an MCMDK. Each iteration
  either touches a new (job, configuration) or certifies optimality (then the subproblem value
  equals the true cost of its solution), so the iteration ends **at the exact optimum** in a
  finite number of steps (at most the number of columns);
* the first points are each job's fastest and slowest configurations (``init="ends"``;
  ``"fastest"`` starts from the fastest only and needs more iterations);
* ``memory=False`` is the plain Newton-type iteration: it stops when the subproblem value
  is :math:`\ge -\varepsilon` in the paper's normalised form (then optimal) or when it
  repeats a solution (then only the bound certifies how far it is).

Subproblems (``sub``): ``"highs"`` solves each exactly, to the canonical optimum of the tie rule
(:mod:`dlsched.solvers.ties`: of near-equal choices, the first in arrival order, each job
preferring its later column): by the one-row dynamic programme (:mod:`dlsched.solvers.knapsack_dp`)
when at most one capacity row can bind, otherwise by HiGHS (one model, costs changed in place, the
best solution as MIP start) with its answer made canonical within classes of identical jobs;
``"lp-round"`` uses the LP-rounding layer of MODELS.md §1 (:mod:`dlsched.solvers.rounding`). **Guarantee with LP rounding.** Fold the zero-use defer
column into the costs (``at_most_one``, :math:`A \ge 0`); a basic LP optimum has at most m
fractional jobs (m = capacity rows) and the rounding returns a value ≤ LP optimum + Δ with
:math:`\Delta \le m \max_{j,o} \text{gain}`. The LP optimum of a surrogate is ≤ its MILP optimum ≤
the §2.2 optimum, so it is still a valid lower bound. When the iteration stops because no new
tangent was touched, every chosen column's surrogate cost is its true cost, hence

.. math:: \text{SMD value} \;\le\; \text{LP bound} + \Delta \;\le\; \text{OPT}_{2.2} + \Delta .

``ParametricOutcome.delta`` reports Δ of the last subproblem; the bench checks
bound ≤ exact ≤ SMD ≤ exact + Δ on every instance.

Outer problem (job selection): when the active jobs cannot all run, ``select="score"`` keeps
as candidates the jobs with the best ratio of weight to (remaining time on (1,1) x dominant
share of (1,1)) until their minimal configurations fill ``slack`` times the capacity; the others
wait this epoch. ``select="all"`` passes every job to the inner problem (then the decision is
the exact §2.2 optimum).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK
from dlsched.instance.smd import SMDInstance
from dlsched.models import mcmdk as core_model
from dlsched.result import Result
from dlsched.solvers import highs, knapsack_dp, ties
from dlsched.solvers.anytime import column_shares, greedy_choice, lagrangian_bound, placeable, placeable_prefix, pop_groups
from dlsched.solvers.backends import BACKENDS
from dlsched.solvers.first_fit import take_in_order
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import Budget, SolveOptions
from dlsched.solvers.registry import register
from dlsched.solvers.rounding import lp_round_core

SELECT = ("score", "all")
#: slot-aware costs: among configurations that finish in the same slot prefer the slowest one
#: (the one the Pareto set pairs with the fewest resources), by 0.1% of its continuous run time
TIE_BREAK = -1e-3


@dataclass
class ParametricOutcome:
    choice: np.ndarray           # configuration index per core job
    objective: float             # true §2.2 cost of ``choice``
    bound: float                 # best lower bound (max over subproblem optima)
    iterations: int
    optimal: bool
    seconds: float
    history: list[tuple[float, float]] = field(default_factory=list)   # (lower bound, upper bound) per iteration
    delta: float | None = None   # additive rounding guarantee of the last subproblem (0: exact)


def ratio_data(core: MCMDK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: N_j (ω_j R_j; 0 on defer columns), g_{j,o} (1/τ; 0 on defer), is_ratio mask."""
    cfg = core.meta["configs"]
    is_ratio = cfg[:, 1] > 0
    # value = N τ = N / g on ratio columns; N is ω R of the job (same on all its columns)
    N = np.zeros(core.n_cols)
    g = np.zeros(core.n_cols)
    inst_N = core.meta["N"]
    N[is_ratio] = inst_N[core.col_job[is_ratio]]
    g[is_ratio] = N[is_ratio] / core.value[is_ratio]
    return N, g, is_ratio


SUBPROBLEMS = ("highs", "lp-round")
#: seconds (wall) per column of a subproblem before a decision has measured one (the budgeted path only,
#: :func:`parametric`'s ``costs``), as measured on the shared 2-core machine on 2026-11-27 at load average
#: 4.6: HiGHS on DL2's two binding rows 2.5e-5 (1.45 s at 10,000 active jobs, 57,562 columns, of which it
#: reads its time limit after the presolve), the one-row programme 1.3e-6 to 2.7e-6 (2,000 jobs, 20,514 columns)
SUBPROBLEM_PRIOR = {"_ExactSub": 3e-5, "_DPSub": 3e-6, "_RoundSub": 3e-5}


def parametric(core: MCMDK, opts: SolveOptions | None = None, *, memory: bool = True, eps: float = 1e-9,
               max_iter: int = 200, init: str = "ends", sub: str = "highs",
               search_seconds: float = 0.2, warm: np.ndarray | None = None, mip_start: bool = True,
               costs: dict | None = None) -> ParametricOutcome:
    """Solve the §2.2 MCMDK by the parametric sum-of-ratios iteration (module docstring).

    ``warm``: a feasible choice (configuration per job) to start from: the incumbent until a
    subproblem's solution beats it, so that a budget spent before the first subproblem ends still
    answers with it. ``mip_start``: give each exact subproblem the incumbent as its MIP start.
    (With presolve on, HiGHS 1.16 was seen to return a MIP start unchanged as "optimal" with
    the objective of its presolved model, far below the start's cost, on an SMD core; the
    budgeted decisions, :func:`decide_anytime`, therefore give none.)

    ``sub="highs"``: subproblems solved exactly; ``sub="lp-round"``: by the LP-rounding layer
    (:mod:`dlsched.solvers.rounding`, local search capped at ``search_seconds``).

    ``costs`` (with ``warm``, under a budget): seconds per column of a subproblem of each kind, read
    and kept up to date here (a policy keeps one between its decisions, :data:`SUBPROBLEM_PRIOR`
    until it has measured one). A subproblem is not started when the budget's remaining time, less
    its margin (what the steps after the iteration need), is below its predicted cost (its columns
    times the seconds per column of the last one of its kind): a solver call cannot be stopped once
    started (HiGHS reads its time limit after its presolve), and the answer is then the best found
    so far, or the start. Without a start, every subproblem runs (the decision without a budget).
    """

    if sub not in SUBPROBLEMS:
        raise InputError("<argument>", "sub", f"one of {SUBPROBLEMS}", sub)
    opts = (opts or SolveOptions()).started()
    t0 = time.perf_counter()
    if memory and sub == "highs":
        # the exact iteration ends at the optimum; when capacity cannot bind, that is every job's cheapest column
        cheapest = separable_choice(core)
        if cheapest is not None:
            val = float(core.value[core.columns_of(cheapest)].sum())
            return ParametricOutcome(cheapest, val, val, 0, True, time.perf_counter() - t0, [(val, val)], 0.0)
    if sub == "highs":
        row = knapsack_dp.one_row(core)
        # with a start to fall back on, the programme's recursion may stop at the budget
        solver = _ExactSub(core, opts) if row is None else _DPSub(core, opts, *row, stoppable=warm is not None)
    else:
        solver = _RoundSub(core, opts, search_seconds)
    kind = type(solver).__name__

    def affordable() -> bool:
        # whether what remains of the budget, less its margin, buys the predicted subproblem
        if warm is None or not opts.clock.limited:
            return True
        need = 0.0 if costs is None else costs.get(kind, SUBPROBLEM_PRIOR.get(kind, 0.0)) * core.n_cols
        return opts.clock.remaining() - opts.clock.margin > need

    if not affordable():        # not even one subproblem: the start, before the iteration's set-up
        val = float(core.value[core.columns_of(warm)].sum())
        return ParametricOutcome(np.asarray(warm, dtype=np.int64), val, -np.inf, 0, False, time.perf_counter() - t0, [])
    N, g, is_ratio = ratio_data(core)
    jobs_of = core.col_job
    n_jobs = core.n_jobs
    # first linearisation points per job: its fastest configuration (tangent exact there), and
    # with init="ends" also its slowest one
    g_hi = np.zeros(n_jobs)
    np.maximum.at(g_hi, jobs_of[is_ratio], g[is_ratio])
    g_lo = np.full(n_jobs, np.inf)
    np.minimum.at(g_lo, jobs_of[is_ratio], g[is_ratio])
    # each job's tangent points, one row per job padded with nan (in whole-array steps: a list of
    # arrays, one per job, took a third of a binding decision's CPU on inflated OpenB's 8,500 pods)
    touched = np.full((n_jobs, 2), np.nan)
    has = g_hi > 0
    touched[has, 0] = g_hi[has]
    if init == "ends":     # and the slowest one, where distinct
        lo = has & (g_lo < g_hi)
        touched[lo, 1] = g_lo[lo]
    surrogate = core.value.copy()

    def retangent(jobs) -> None:
        # the max of job j's tangents N(2/g_k − g/g_k²), evaluated at each of its columns (the
        # padding's nan left out)
        sel = np.zeros(n_jobs, dtype=bool)
        sel[np.asarray(jobs, dtype=np.int64)] = True
        cj = np.flatnonzero(is_ratio & sel[jobs_of] & has[jobs_of])
        if not cj.size:
            return
        P = touched[jobs_of[cj]]
        t = N[cj][:, None] * (2.0 / P - g[cj][:, None] / P ** 2)
        surrogate[cj] = np.max(np.where(np.isnan(P), -np.inf, t), axis=1)

    retangent(np.unique(jobs_of[is_ratio]).tolist())
    start = (lambda choice: choice) if mip_start else (lambda choice: None)
    best_choice, best_val, bound = None, np.inf, -np.inf
    if warm is not None:
        best_choice = np.asarray(warm, dtype=np.int64)
        best_val = float(core.value[core.columns_of(best_choice)].sum())
    history = []
    seen: set[bytes] = set()
    it = 0
    optimal = False
    delta_last = None
    while it < max_iter:
        if not affordable():
            break  # the call's budget cannot buy a subproblem: the start and the bound so far
        it += 1
        t_sub = time.perf_counter()
        lb, choice, delta = solver.solve(surrogate, start(best_choice))
        if costs is not None:
            costs[kind] = (time.perf_counter() - t_sub) / max(core.n_cols, 1)
        if choice is None:
            break
        delta_last = delta
        cols = core.columns_of(choice)
        repeated = choice.tobytes() in seen
        seen.add(choice.tobytes())
        true_val = float(core.value[cols].sum())
        bound = max(bound, lb)
        if true_val < best_val - 1e-12 * max(1.0, abs(true_val)):
            best_val, best_choice = true_val, choice
        history.append((bound, best_val))
        if best_val - bound <= eps * max(1.0, abs(best_val)):
            optimal = True
            break
        # Newton-type update: (β_j, u_j) = (N_j / g_j(x), 1 / g_j(x)) at the new solution
        chosen = cols[is_ratio[cols]]
        j = jobs_of[chosen]
        if memory:      # a point not seen yet is added to the job's row
            fresh = ~np.any(np.isclose(touched[j], g[chosen][:, None], rtol=1e-12, atol=0), axis=1)
            j, c = j[fresh], chosen[fresh]
            count = np.sum(~np.isnan(touched[j]), axis=1)
            if j.size and count.max() == touched.shape[1]:
                touched = np.hstack([touched, np.full((n_jobs, 1), np.nan)])
            touched[j, count] = g[c]
        else:           # the point replaces the job's
            fresh = ~np.isclose(touched[j, 0], g[chosen], rtol=1e-12, atol=0)
            j, c = j[fresh], chosen[fresh]
            touched[j] = np.nan
            touched[j, 0] = g[c]
        new_pts = bool(j.size)
        if not new_pts or (repeated and not memory):
            break  # a fixed point: no new tangent (with exact subproblems and memory: optimal)
        if opts.clock.expired():
            break  # the call's budget is spent: the best solution so far and its bound
        retangent(np.unique(jobs_of[chosen]).tolist())
    if best_choice is None:
        best_choice = np.zeros(n_jobs, dtype=np.int64)
        best_val = float(core.value[core.job_ptr[:-1]].sum())
    out = ParametricOutcome(best_choice, best_val, bound, it, optimal, time.perf_counter() - t0, history)
    out.delta = delta_last
    return out


def separable_choice(core: MCMDK) -> np.ndarray | None:
    r"""Every job's cheapest column, when that is the MCMDK's unique optimum without a solver: every
    job's most demanding columns fit together (:math:`\sum_j \max_o a_{r,jo} \le b_r` for every r,
    so no capacity row can bind and the problem splits by job) and each job's cheapest column is
    cheaper than its others by more than the tie rule's tolerance
    (:func:`dlsched.solvers.ties.tolerance`; else None, and the one-row dynamic programme takes the
    canonical one of the near-equal choices). None as well when capacity may bind. On a trace of
    rigid jobs (one size each) most decisions are of this kind."""
    ptr = core.job_ptr
    if core.n_jobs == 0 or core.choose != "exactly_one" or core.sense != "min" or np.any(np.diff(ptr) < 1):
        return None
    starts = ptr[:-1]
    A = core.A
    if A.nnz:
        most = np.maximum.reduceat(A.toarray(), starts, axis=1)          # (rows, jobs): each job's largest use
        if not np.all(most.sum(axis=1) <= core.b):
            return None
    v = core.value
    best = np.minimum.reduceat(v, starts)
    job = core.col_job
    first = np.full(core.n_jobs, -1, dtype=np.int64)
    at_best = np.flatnonzero(v == best[job])
    first[job[at_best[::-1]]] = at_best[::-1]                        # the first cheapest column of each job
    rest = v.copy()
    rest[first] = np.inf
    second = np.minimum.reduceat(rest, starts)
    if np.any(second - best <= ties.tolerance(v, ptr)):
        return None
    return first - starts


class _ExactSub:
    """The subproblem MCMDK loaded once into HiGHS; costs changed in place, best solution as MIP start.
    Its answer is made canonical within the exchange classes (:func:`dlsched.solvers.ties.canonical`):
    of identical jobs, the earlier ones take the later columns (run first), whichever of the tied
    optima HiGHS returned."""

    def __init__(self, core: MCMDK, opts: SolveOptions):
        self.core, self.opts = core, opts
        self.h = None               # loaded by the first subproblem: a budget may leave none to solve
        self.idx = np.arange(core.n_cols, dtype=np.int32)

    def solve(self, cost: np.ndarray, warm_choice):
        if self.h is None:
            self.h = highs.load(core_model.build_matrix(self.core), self.opts)
        core, h = self.core, self.h
        h.changeColsCost(core.n_cols, self.idx, cost.astype(np.float64))
        if warm_choice is not None:
            warm = np.zeros(core.n_cols)
            warm[core.columns_of(warm_choice)] = 1.0
            h.setSolution(core.n_cols, self.idx, warm)
        limit = self.opts.clock.seconds_for_solver()
        if limit is not None:      # what remains of the call's budget, read before every subproblem
            h.setOptionValue("time_limit", limit)
        h.run()
        info = h.getInfo()
        if info.primal_solution_status != 2:
            return -np.inf, None, None
        x = np.asarray(h.getSolution().col_value, dtype=float)
        obj = float(info.objective_function_value)
        bnd = float(info.mip_dual_bound)
        choice = ties.canonical(core, cost, core.choice_from_columns(x))
        return (min(bnd, obj) if np.isfinite(bnd) else obj), choice, 0.0


class _DPSub:
    """The subproblem of a core with at most one capacity row that can bind, in whole numbers, by
    dynamic programming (:func:`dlsched.solvers.knapsack_dp.solve`), which returns the canonical
    optimum of the tie rule (:mod:`dlsched.solvers.ties`); by HiGHS (:class:`_ExactSub`, loaded on
    first need) only when its table would be too large, or its answer would break the row itself by
    more than HiGHS's feasibility tolerance."""

    def __init__(self, core: MCMDK, opts: SolveOptions, row: int, use: np.ndarray, cap: int, stoppable: bool = False):
        self.core, self.opts, self.use, self.cap = core, opts, use, cap
        self.clock = opts.clock if stoppable and opts.clock.limited else None
        if row < 0:                # no row can bind
            self.row, self.limit = np.zeros(core.n_cols), np.inf
        else:
            self.row, self.limit = core.A[row].toarray().ravel(), float(core.b[row]) + knapsack_dp.ROW_TOLERANCE
        self.exact = None

    def solve(self, cost: np.ndarray, warm_choice):
        try:
            # under a budget the recursion stops with it: no answer from this subproblem
            out = knapsack_dp.solve(self.core, cost, self.use, self.cap, self.clock)
        except knapsack_dp.BudgetSpent:
            return -np.inf, None, None
        if out is not None and self.row[self.core.columns_of(out[1])].sum() <= self.limit:
            return out[0], out[1], 0.0
        if self.exact is None:
            self.exact = _ExactSub(self.core, self.opts)
        return self.exact.solve(cost, warm_choice)


class _RoundSub:
    r"""The subproblem by LP rounding (:func:`dlsched.solvers.rounding.lp_round_core`).

    The defer column (zero use) is folded into the others: with ``at_most_one`` choice and
    costs :math:`c_{j,o} - c_{j,\varnothing}` plus the constant :math:`\sum_j c_{j,\varnothing}`
    the problem is the same, :math:`A \ge 0`, and the rounding's additive guarantee applies:
    value ≤ LP optimum + Δ (``delta``, in cost units). The LP optimum is the lower bound.
    """

    def __init__(self, core: MCMDK, opts: SolveOptions, search_seconds: float):
        run = core.meta["configs"][:, 1] > 0
        sub, _ = core.restrict(run)
        sub.choose = "at_most_one"
        self.core, self.sub, self.run = core, sub, run
        self.defer_cost = core.value[core.job_ptr[:-1]]
        self.opts = replace(opts, mip_rel_gap=0.0, on_incumbent=None, warm_start=None)
        self.search = search_seconds

    def solve(self, cost: np.ndarray, warm_choice):
        core, sub = self.core, self.sub
        sub.value = cost[self.run] - self.defer_cost[core.col_job[self.run]]
        p, lp, stats = lp_round_core(sub, self.opts, search_seconds=self.search)
        if p is None:
            return -np.inf, None, None
        const = float(self.defer_cost.sum())
        c_sub = p.choice()
        choice = np.where(c_sub >= 0, c_sub + 1, 0)     # column 0 of every job is "defer"
        return float(lp.bound) + const, choice.astype(np.int64), float(stats.get("guarantee", np.nan))


def select_jobs(inst: SMDInstance, active: np.ndarray, slack: float = 1.0, skip: bool = True) -> np.ndarray:
    """Outer selection: candidates by Smith's rule on the smallest configuration (w̲_j, 1),
    ω_j / (R_j τ_j(w̲_j, 1) · its dominant share), until those configurations fill ``slack`` x the
    capacity (MODELS.md §2.3: (1, 1) in the SMD model, where w̲_j = 1; a gang-scheduled job of the
    simulator's view is sized at the workers it cannot run without). ``skip``: first fit (a job that
    does not fit is passed over); otherwise the longest prefix that fits."""
    active = np.asarray(active, dtype=np.int64)
    cap = inst.capacity
    use_least = inst.min_workers[active][:, None] * inst.d[active] + inst.e[active]
    safe = np.where(cap > 0, cap, 1.0)
    share = np.max(np.where(cap > 0, use_least / safe, np.where(use_least > 0, np.inf, 0.0)), axis=1)
    score = inst.weight[active] / (inst.iterations[active] * inst.tau_least_of(active) * np.maximum(share, 1e-12))
    order = np.argsort(-score, kind="stable")
    if not skip:
        filled = np.cumsum(use_least[order], axis=0)
        within = np.all(filled <= slack * cap[None, :] + 1e-9, axis=1)
        k = max(1, int(np.argmin(within)) if not within.all() else within.size)
        return np.sort(active[order[:k]])
    # first fit in score order: a job that does not fit is skipped, later (smaller) ones may fit.
    # In numpy passes (take_in_order, the loop's own subtractions): the loop over thousands of
    # active pods took half of the CPU of smd on inflated OpenB (docs/results/itp.md)
    keep = order[take_in_order(use_least[order], slack * cap + 1e-9)]
    if not keep.size:
        keep = order[:1]
    return np.sort(active[keep])


def decide(inst: SMDInstance, active: np.ndarray, opts: SolveOptions | None = None, *, select: str = "score",
           slack: float = 1.0, memory: bool = True, slot_aware: bool = False, wait_slots: float | None = None,
           tie_break: float = 0.0, init: str = "ends", sub: str = "highs"
           ) -> tuple[np.ndarray, ParametricOutcome, MCMDK]:
    """One SMD decision: outer selection + inner parametric iteration -> (n, 2) allocation.

    ``slot_aware`` and ``wait_slots`` adapt the §2.2 costs to the slotted simulation (docs/smd.md):
    run times are rounded up to whole slots, and a waiting job costs ω_j (wait_slots + its
    run time on its smallest configuration (w̲_j, 1)) instead of the instance's deferral estimate.
    """
    active = np.asarray(active, dtype=np.int64)
    cand = select_jobs(inst, active, slack) if select == "score" else active
    core = epoch_core(inst, cand, slot_aware=slot_aware, wait_slots=wait_slots, tie_break=tie_break)
    out = parametric(core, opts, memory=memory, init=init, sub=sub)
    alloc = inst.allocation_from_core(core, out.choice)[:, :2]
    return alloc, out, core


@dataclass
class AnytimeDecision:
    """One SMD decision made within a budget: the (n, 2) allocation, its §2.2 cost over the
    candidates, and a certified lower bound on that problem's optimum."""

    alloc: np.ndarray
    objective: float
    bound: float
    groups: int


def decide_anytime(inst: SMDInstance, active: np.ndarray, opts: SolveOptions, *, previous: np.ndarray | None = None,
                   pop_k: int = 1, rng: np.random.Generator | None = None, select: str = "score", slack: float = 1.0,
                   memory: bool = True, slot_aware: bool = False, wait_slots: float | None = None,
                   tie_break: float = 0.0, init: str = "ends", sub: str = "highs", costs: dict | None = None,
                   place_seconds=None, keep: np.ndarray | None = None, spent: dict | None = None) -> AnytimeDecision:
    r"""One SMD decision within ``opts``' running budget (docs/smd.md, "Decisions within a budget").

    The candidates of :func:`select_jobs` are split by POP into ``pop_k`` random groups
    (:func:`dlsched.solvers.anytime.pop_groups`), each with :math:`1/k` of every resource and an
    equal share of what remains of the budget; each group's parametric iteration starts from a
    feasible choice (:func:`~dlsched.solvers.anytime.greedy_choice`: the configurations of
    ``previous``, an (n, 2) allocation, that are still offered, then the greedy fill at the
    group's Lagrangian prices), so an answer exists however early the budget ends. The bound is the larger of the parametric
    iteration's (one group only) and the Lagrangian bound :func:`~dlsched.solvers.anytime.lagrangian_bound`
    of the whole candidates' problem at full capacity, so the gap of a POP decision is certified
    against the unpartitioned problem. The budget binds the solver's work, not only the solver: the
    Lagrangian steps stop when it is spent (after their first), and no subproblem is started that
    its remaining time cannot buy (``costs``, :func:`parametric`; the answer is then the feasible
    start); the certificate's steps start from the groups' prices. ``place_seconds(alloc)``: the
    seconds the caller expects to spend placing an (n, 2) allocation; what it says of the starts'
    allocation is kept back from the iterations and the certificate's steps, so that the whole
    call, placement included, stays within the budget.

    ``keep`` (an (n, 2) allocation, the last answer; with ``place_seconds``): the cheapest sound answers,
    for when the budget cannot place the iteration's: the configurations of ``keep`` still offered, run
    where they are, and in one group the greedy fill of the rest
    (:func:`~dlsched.solvers.anytime.greedy_choice`; with POP the others wait, as the kept jobs need
    not fit in a group's 1/k); then those configurations alone (nothing new to place). The answer is
    the first of the iteration's, the kept start and the kept configurations alone whose expected
    placement fits what remains of the budget (so the iteration's wherever the budget does not bind),
    else the one placed soonest; never one that runs no job where another runs some. The cheaper of
    the two starts' placements is what the iterations keep back. Its certificate is the same bound.

    ``spent`` (a dict): its ``"steps"`` gets the seconds spent in the Lagrangian steps and the parametric iterations,
    which stop at the budget (the caller's floor is the rest, :class:`~dlsched.policies.budget.Floor`).
    """
    spent = {} if spent is None else spent
    spent["steps"] = 0.0
    active = np.asarray(active, dtype=np.int64)
    cand = select_jobs(inst, active, slack) if select == "score" else active
    k = max(1, min(int(pop_k), cand.size))
    groups = pop_groups(cand.size, k, rng if rng is not None else np.random.default_rng(0)) if k > 1 else [np.arange(cand.size)]
    cores, shares, warms, group_prices, kepts, alone = [], [], [], [], [], []
    for g in groups:
        core = epoch_core(inst, cand[g], slot_aware=slot_aware, wait_slots=wait_slots, tie_break=tie_break)
        core.b = core.b / k
        share = column_shares(core)
        if k > 1 and not _every_job_fits(core, share):
            # a job larger than 1/k of the cluster could never run in its group: decide unsplit
            return decide_anytime(inst, active, opts, previous=previous, pop_k=1, rng=rng, select=select, slack=slack,
                                  memory=memory, slot_aware=slot_aware, wait_slots=wait_slots, tie_break=tie_break,
                                  init=init, sub=sub, costs=costs, place_seconds=place_seconds, keep=keep)
        defer_all = float(core.value[core.job_ptr[:-1]].sum())          # a feasible objective
        # the start's prices take at most a quarter of what remains: the rest is the iteration's
        t0 = time.perf_counter()
        _, prices = lagrangian_bound(core.value, share, core.job_ptr, defer_all, clock=opts.clock.share(0.25 / len(groups)))
        spent["steps"] += time.perf_counter() - t0
        cores.append(core)
        shares.append(share)
        group_prices.append(prices)
        warms.append(greedy_choice(core, share, _kept_columns(core, previous), prices))
    clock = opts.clock
    if place_seconds is not None and clock.limited:
        if keep is not None:
            for core, share, prices in zip(cores, shares, group_prices):
                fixed = _kept_columns(core, keep)
                alone.append(np.where(fixed >= 0, fixed - core.job_ptr[:-1], 0))     # the kept configurations alone
                kepts.append(greedy_choice(core, share, fixed, prices) if k == 1 else alone[-1])
        reserve = min(float(place_seconds(_allocation(inst, cores, choices))) for choices in (warms, kepts) if choices)
        # the solver's part ends where the placement of an answer like the cheaper start's must begin
        clock = Budget(max(clock.remaining() - reserve, 0.0), margin=clock.margin)
    choices, objective, inner = [], 0.0, -np.inf
    for gi, (core, warm) in enumerate(zip(cores, warms)):
        t0 = time.perf_counter()
        out = parametric(core, opts.within(clock.share(1.0 / (k - gi))), memory=memory, init=init, sub=sub,
                         warm=warm, mip_start=False, costs=costs)
        spent["steps"] += time.perf_counter() - t0
        choices.append(out.choice)
        objective += out.objective
        inner = out.bound if k == 1 else inner
    alloc = _allocation(inst, cores, choices)
    if place_seconds is not None and clock.limited and float(place_seconds(alloc)) > opts.clock.remaining():
        # the first of the kept start, the kept configurations alone and the answer cut to what can be placed
        # whose placement fits what remains; if none does, the one placed soonest
        left = opts.clock.remaining()
        options = [(alloc, objective)] + [(_allocation(inst, cores, c), float(sum(
            core.value[core.columns_of(x)].sum() for core, x in zip(cores, c)))) for c in (kepts, alone) if c]
        # (the first does not fit: the condition above); never an empty answer where one that runs a job exists
        runs = [bool((a[:, 0] > 0).any()) for a, _ in options]
        seconds = [float(place_seconds(a)) for a, _ in options]
        # the cut runs a job where the iteration's answer does: the kept answers' choice does not need it, so it
        # is built only when none of them fits (0.7 of the 10 ms of a warm decision over 2,000 DL2 jobs)
        if not any(t <= left and (r or not any(runs)) for t, r in zip(seconds, runs)):
            options.append(_cut(cores, shares, choices, alloc, objective, place_seconds, left))
            runs.append(bool((options[-1][0][:, 0] > 0).any()))
            seconds.append(float(place_seconds(options[-1][0])))
        alloc, objective = options[placeable(seconds, runs, left)]
    values = [core.value for core in cores]
    ptrs = [core.job_ptr[1:] + sum(v.size for v in values[:gi]) for gi, core in enumerate(cores)]
    job_ptr = np.concatenate([[0], *ptrs]).astype(np.int64)
    # the steps go on from the groups' prices, while the budget lasts: a group's price is per share of
    # its 1/k of the capacity, k times that per share of the whole (one group: the same problem)
    # (within the solver's part less its margin: what follows, the answer's placement, needs that)
    steps = Budget(max(clock.remaining() - clock.margin, 0.0), margin=0.0) if clock.limited else clock
    t0 = time.perf_counter()
    lag = lagrangian_bound(np.concatenate(values), np.vstack([share / k for share in shares]), job_ptr, objective,
                           start=k * np.mean(group_prices, axis=0), clock=steps)[0] if values else 0.0
    spent["steps"] += time.perf_counter() - t0
    return AnytimeDecision(alloc, objective, max(inner, lag), k)


def _cut(cores: list, shares: list, choices: list, alloc: np.ndarray, objective: float, place_seconds, left: float) -> tuple[np.ndarray, float]:
    """The answer ``alloc`` (of ``choices``, one per group's core with its :func:`column_shares`, of value ``objective``) cut to the most of its
    running jobs whose placement is expected within ``left`` seconds
    (:func:`~dlsched.solvers.anytime.placeable_prefix`), the others deferred: the jobs of most saving per
    share first (the defer cost less the chosen configuration's, over its dominant share: the order of
    :func:`~dlsched.solvers.anytime.greedy_choice`). Deferring frees resources, so it is feasible, of value
    ``objective`` plus the savings given up: the answer of a first decision with nothing kept. At least one
    job runs where any did."""
    jobs, saving, score = [], [], []
    for core, shares_of, choice in zip(cores, shares, choices):
        cols = core.columns_of(choice)
        run = choice > 0
        share = shares_of[cols[run]]
        gain = core.value[core.job_ptr[:-1]][run] - core.value[cols[run]]
        jobs.append(core.meta["configs"][cols[run], 0])
        saving.append(gain)
        score.append(gain / np.maximum(share.max(axis=1, initial=0.0), 1e-12))
    jobs, saving = np.concatenate(jobs), np.concatenate(saving)
    order = np.argsort(-np.concatenate(score), kind="stable")

    def first(k: int) -> np.ndarray:
        out = alloc.copy()
        out[jobs[order[k:]]] = 0
        return out
    # at least one job: an answer that runs none where one could run would stall a run with no event to come
    k = max(placeable_prefix(lambda k: float(place_seconds(first(k))), order.size, left), min(order.size, 1))
    return first(k), float(objective + saving[order[k:]].sum())


def _kept_columns(core: MCMDK, previous: np.ndarray | None) -> np.ndarray | None:
    """The column of each job of ``core`` at its configuration in ``previous`` (an (n, 2) allocation)
    where that one is still offered, else -1 (:func:`~dlsched.solvers.anytime.greedy_choice`'s ``fixed``)."""
    if previous is None:
        return None
    cfg = core.meta["configs"]
    kept = (cfg[:, 1] > 0) & (previous[cfg[:, 0], 0] == cfg[:, 1]) & (previous[cfg[:, 0], 1] == cfg[:, 2])
    fixed = np.full(core.n_jobs, -1, dtype=np.int64)
    fixed[core.col_job[kept]] = np.flatnonzero(kept)
    return fixed


def _allocation(inst: SMDInstance, cores: list, choices: list) -> np.ndarray:
    """The (n, 2) allocation of one choice per group's core (:meth:`SMDInstance.allocation_from_core`'s
    (w, p) of each group's jobs, without its (n, 3) array per group: POP's 16 groups of 10,000 jobs)."""
    alloc = np.zeros((inst.n_jobs, 2), dtype=np.int64)
    for core, choice in zip(cores, choices):
        cfg = core.meta["configs"][core.columns_of(choice)]
        alloc[cfg[:, 0]] = cfg[:, 1:3]
    return alloc


def _every_job_fits(core: MCMDK, share: np.ndarray) -> bool:
    """Whether every job of ``core`` has a running configuration (a column with some use) within its
    capacity: ``share`` is :func:`~dlsched.solvers.anytime.column_shares` of ``core``."""
    runs = share.max(axis=1, initial=0.0) > 0
    fits = runs & (share.max(axis=1, initial=0.0) <= 1.0 + 1e-9)
    return bool(np.all(np.bincount(core.col_job[fits], minlength=core.n_jobs) > 0))


def epoch_core(inst: SMDInstance, jobs: np.ndarray, *, slot_aware: bool = False, wait_slots: float | None = None,
               tie_break: float = 0.0) -> MCMDK:
    """``inst.to_core(jobs)`` (without display labels) with N_j = ω_j R_j recorded for the ratio view (and the policy's cost
    adaptations: every column's value stays N_j / g for some g > 0, so the ratio view holds)."""
    core = inst.to_core(jobs, labels=False)
    N = inst.weight[jobs] * inst.iterations[jobs]
    core.meta["N"] = N
    if not slot_aware and wait_slots is None:
        return core
    delta = float(inst.slot_seconds)
    cfg = core.meta["configs"]
    run = cfg[:, 1] > 0
    jj = core.col_job
    value = core.value.copy()
    if slot_aware:
        # ω R τ -> ω Δ ⌈R τ / Δ⌉: equal to N / g_eff with g_eff the throughput that just fills the slots
        t = value[run] / inst.weight[jobs][jj[run]]
        value[run] = inst.weight[jobs][jj[run]] * delta * np.ceil(t / delta - 1e-9)
        if tie_break:
            # configurations that finish in the same slot tie; |tie_break| x the continuous run
            # time decides (negative: the slower, cheaper one). It stays below one slot's cost
            # for runs under 1000 slots, so it never reorders different completion slots.
            value[run] += tie_break * inst.weight[jobs][jj[run]] * t
    if wait_slots is not None or slot_aware:
        wait_slots = 1.0 if wait_slots is None else wait_slots
        defer = np.flatnonzero(~run)
        j_of = jobs[jj[defer]]
        t_least = inst.tau_least_of(j_of) * inst.iterations[j_of]
        if slot_aware:
            t_least = delta * np.ceil(t_least / delta - 1e-9)
        value[defer] = inst.weight[j_of] * (wait_slots * delta + t_least)
    core.value = value
    return core


@register("exact", families=("smd",), params=("backend", "solver"), supports=("gap", "raw"), backends=BACKENDS,
          description="exact §2.2 one-epoch allocation: MCMDK over Pareto (w, p) configurations")
def exact_epoch(instance: SMDInstance, opts: SolveOptions, backend: str = "highs", solver: str | None = None) -> Result:
    """The enumerated exact MILP of MODELS.md §2.2; the solution is an allocation."""
    t0 = time.perf_counter()
    core = instance.to_core()
    build = time.perf_counter() - t0
    res = solve_core(core, opts, backend, solver=solver)
    res.build_seconds += build
    if res.solution is not None:
        res.solution = instance.solution_from_core(res.solution, core)
    if instance.unschedulable:
        res.message = "cannot be scheduled (does not fit alone): " + ", ".join(instance.job_names[j] for j in instance.unschedulable)
    return res

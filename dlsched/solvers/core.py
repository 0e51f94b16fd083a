r"""Core-problem sparsification of the MCMDK (MODELS.md §1, "column sparsification").

Method ``core``. The LP relaxation gives capacity prices :math:`u` and, per option
(configuration o of job j, or the empty choice), the regret :math:`r_{j,o} \ge 0` of
:mod:`dlsched.solvers.lp`. Options with a large regret are "clearly out": a solution that uses
one loses at least that much against the bound. So:

1. solve the LP; build an incumbent with ``lp-round`` (short local search);
2. for a growing threshold :math:`\theta_1 < \theta_2 < \dots` keep the options with
   :math:`r_{j,o} \le \theta_t` (plus the incumbent's) — the *core*; every other option is
   fixed out (column upper bound 0; an excluded empty choice becomes the job row's lower
   bound 1, i.e. the job is fixed in). Options with regret 0 (the LP's choices, fractional
   jobs) are always in the core;
3. solve the core exactly with HiGHS, warm-started with the incumbent (``setSolution``);
   keep the better solution; grow the core while time remains. The last stage is the whole
   problem, so given time the method is exact.

**Certified bound.** For any feasible solution, :math:`g^\top x \le L(u) - \sum_j r_{j,o_j}`.
A solution outside the core uses an excluded option, so it is worth at most
:math:`L(u) - \theta^{\rm out}_t`, :math:`\theta^{\rm out}_t` the smallest excluded regret; one
inside is worth at most the core MIP's bound :math:`\beta_t`. Hence after stage t

.. math:: z^* \le \max\bigl(\beta_t,\; L(u) - \theta^{\rm out}_t\bigr),

and the method reports the smallest such bound (and :math:`L(u)`) over its stages. When the
core is solved to optimality and :math:`L(u) - \theta^{\rm out}_t` is no better than its value,
the core solution is proven optimal for the whole problem and the method stops.

Stages: ``core_fractions`` gives the share of positive-regret options admitted at each stage
(default 5 %, 10 %, 20 %, 35 %, 50 %, 75 %, 100 %); a non-final stage may use at most
``stage_share`` of the remaining time, so one hard core cannot starve the larger ones.

Diversified cores (``diversify``, default on): once a core does not finish in its budget, the
rest of the time goes to cores of the largest size that did finish, centred at perturbed prices
:math:`u_k e^{\sigma \xi_k}` (:func:`perturbed`); each certifies its own bound in the same way.
On the 60 Chu–Beasley 5×100 / 10×100 problems this beat the growth alone on 13 and lost on none
(the results log, docs/results/index.md). ``lns`` adds a large-neighbourhood search
(:func:`lns_search`), off by default.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dlsched.instance.core import MCMDK
from dlsched.models.mcmdk import MatrixForm, build_matrix
from dlsched.result import Result, Status, make_result
from dlsched.solvers import highs
from dlsched.solvers.milp import solve_core
from dlsched.solvers.lp import LPInfo, gain, integral_gains, lagrangian, solve_lp, to_sense
from dlsched.solvers.options import Incumbent, SolveOptions
from dlsched.solvers.registry import register
from dlsched.solvers.rounding import greedy_start, lp_round_core, sub_instance

DEFAULT_FRACTIONS = (0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
#: cores wider than this many columns are only started when they are predicted to fit their budget
BIG_CORE = 20_000
#: share of the budget (at most 1 s) for lp-round's local search, the first incumbent
SEARCH_SHARE = 0.1
#: a stage is not started with less than this many seconds left
MIN_STAGE_SECONDS = 0.02
#: diversified cores grow (or shrink) by this factor after a core that was easy (or hard)
CORE_GROWTH = 1.15


@dataclass
class Tracker:
    """Best solution and best certified bound (both in gain units) across the stages of a layer.

    Streams every improvement to ``opts.on_incumbent`` with the time since ``t0`` (the start of the
    call's budget, ``opts.budget``).
    """

    inst: MCMDK
    opts: SolveOptions
    t0: float
    lp: LPInfo
    build_seconds: float = 0.0          # building the core model (inside the time since t0, reported apart)
    choice: np.ndarray | None = None
    gain: float = -math.inf
    bound: float = math.inf
    history: list | None = None

    def __post_init__(self):
        self.bound = self.lp.bound_gain
        if integral_gains(self.inst) and math.isfinite(self.bound):
            self.bound = math.floor(self.bound + 1e-6)
        self.history = []

    def offer(self, choice: np.ndarray, g: float) -> bool:
        if g > self.gain + 1e-9:
            self.choice, self.gain = np.asarray(choice, dtype=np.int64).copy(), float(g)
            self._emit()
            return True
        return False

    def tighten(self, b: float) -> None:
        if integral_gains(self.inst) and math.isfinite(b):
            b = math.floor(b + 1e-6)
        if b < self.bound:
            self.bound = b

    def _emit(self) -> None:
        t = time.perf_counter() - self.t0
        obj = to_sense(self.inst, self.gain)
        self.history.append((t, obj, to_sense(self.inst, self.bound)))
        if self.opts.on_incumbent is not None:
            self.opts.on_incumbent(Incumbent(t, obj, to_sense(self.inst, self.bound)))

    @property
    def proven(self) -> bool:
        return self.choice is not None and self.bound - self.gain <= 1e-9 * max(1.0, abs(self.gain))

    @property
    def within_gap(self) -> bool:
        """The requested relative gap (``opts.mip_rel_gap``, HiGHS's definition) is reached."""
        if self.choice is None:
            return False
        return self.proven or (self.opts.mip_rel_gap > 0 and self.gain != 0
                               and self.bound - self.gain <= self.opts.mip_rel_gap * abs(self.gain))

    @property
    def done(self) -> bool:
        return self.proven or self.within_gap

    def remaining(self) -> float:
        return self.opts.clock.remaining()


def chosen_gain(inst: MCMDK, choice: np.ndarray) -> float:
    cols = inst.columns_of(choice)
    return float(gain(inst)[cols].sum())


def solve_restricted(inst: MCMDK, mf: MatrixForm, lp: LPInfo, keep: np.ndarray, none_ok: np.ndarray,
                     tr: Tracker, time_limit: float, stats: dict) -> tuple[str, float]:
    """Solve the MCMDK with only the ``keep`` columns (and the empty choice where ``none_ok``).

    Updates ``tr`` with the solution and the certified bound of the *whole* problem
    (module docstring); returns the HiGHS termination and the seconds spent.
    """
    excluded = np.concatenate([lp.regret[~keep], lp.regret_none[~none_ok]])
    excluded = excluded[np.isfinite(excluded)]
    theta_out = float(excluded.min()) if excluded.size else math.inf
    col_upper = keep.astype(float)
    row_lower = mf.row_lower.copy()
    if inst.choose == "at_most_one":
        row_lower[inst.n_rows:] = np.where(none_ok, 0.0, 1.0)
    sub = replace(mf, col_upper=col_upper, row_lower=row_lower)
    warm = None
    if tr.choice is not None:
        warm = np.zeros(inst.n_cols)
        warm[inst.columns_of(tr.choice)] = 1.0
    sign = 1.0 if inst.sense == "max" else -1.0
    offset = time.perf_counter() - tr.t0

    def on_improve(inc: Incumbent) -> None:
        # a core incumbent is a solution of the whole problem; its choice arrives at the end
        if tr.opts.on_incumbent is not None and sign * inc.objective > tr.gain + 1e-9:
            tr.opts.on_incumbent(Incumbent(offset + inc.seconds, inc.objective, to_sense(inst, tr.bound)))

    # the core MIP may stop at the requested gap: its bound still certifies (module docstring)
    opts = tr.opts.within(tr.opts.clock.share(1.0, at_most=None if math.isinf(time_limit) else time_limit),
                          on_incumbent=on_improve, warm_start=None)
    out = highs.solve_matrix(sub, opts, warm_x=warm)
    stats.setdefault("stages", []).append({
        "kept_columns": int(keep.sum()), "free_jobs": int(_free_jobs(inst, keep, none_ok)),
        "theta_out": theta_out, "termination": out.termination, "seconds": round(out.seconds, 4),
        "objective": out.objective, "core_bound": out.bound})
    if out.x is not None and out.status.has_solution():
        choice = inst.choice_from_columns(out.x)
        tr.offer(choice, chosen_gain(inst, choice))
    if out.status in (Status.OPTIMAL, Status.INFEASIBLE) and out.termination != "gap_limit":
        core_bound = tr.gain if out.status == Status.OPTIMAL else -math.inf
    elif out.bound is not None:
        core_bound = sign * out.bound
    else:
        core_bound = math.inf
    tr.tighten(max(core_bound, lp.bound_gain - theta_out))
    return out.termination, out.seconds


def _free_jobs(inst: MCMDK, keep: np.ndarray, none_ok: np.ndarray) -> int:
    """Jobs with more than one option left in the core."""
    kept = np.bincount(inst.col_job[keep], minlength=inst.n_jobs) + none_ok.astype(int)
    return int((kept > 1).sum())


def start(instance, opts: SolveOptions, search_share: float = SEARCH_SHARE) -> tuple[MCMDK, Tracker, dict]:
    """Core model, LP, certified bound and an lp-round incumbent: the first steps every sparsification layer shares.

    The clock (``Tracker.t0``) is the call's budget, started before the core model is built, so the
    time limit covers it."""
    opts = opts.started()
    t0 = opts.clock.start
    b0 = time.perf_counter()
    inst = instance.to_core()
    build = time.perf_counter() - b0
    # with a limit, the greedy start is made before the LP (milliseconds), not after the deadline
    start = greedy_start(inst) if opts.clock.limited else None
    lp = solve_lp(inst, opts)
    tr = Tracker(inst, opts, t0, lp, build)
    stats: dict = {"lp_seconds": round(lp.seconds, 4), "lp_bound": lp.bound}
    if lp.status != Status.OPTIMAL:
        if start is not None and lp.termination == "time_limit":    # the limit ended the LP: the best found
            tr.offer(start, chosen_gain(inst, start))
            stats["returned"] = "greedy start"
        return inst, tr, stats
    search = min(1.0, search_share * opts.clock.remaining())
    p, _, rstats = lp_round_core(inst, opts, lp, t0=t0, search_seconds=search)
    stats["lp_round_objective"] = None if p is None else p.objective()
    if p is not None:
        tr.offer(p.choice(), p.gain_total())
    return inst, tr, stats


def finish(name: str, inst: MCMDK, opts: SolveOptions, tr: Tracker, stats: dict, termination: str,
           message: str = "") -> Result:
    """The :class:`Result` of a layer from its tracker (build and solve seconds apart): ``optimal``
    when the tracker proved it, ``gap_limit`` when the requested gap was reached, ``infeasible``
    when the certified bound is ``-inf`` and no solution exists, else ``termination``."""
    lp = tr.lp
    stats = dict(stats, history=len(tr.history))
    if lp.status in (Status.INFEASIBLE, Status.UNBOUNDED):
        message = "the LP relaxation is " + lp.status.value
    common = dict(sense=inst.sense, backend="highs", build_seconds=tr.build_seconds, stats=stats,
                  solver_version=highs.version(), message=message)
    if lp.status in (Status.INFEASIBLE, Status.UNBOUNDED):
        return make_result(name, opts, termination=lp.termination, **common)
    bound = to_sense(inst, tr.bound) if math.isfinite(tr.bound) else None
    if tr.choice is not None:
        term = "optimal" if tr.proven else ("gap_limit" if tr.within_gap else termination)
        return make_result(name, opts, termination=term, solution=tr.choice, objective=to_sense(inst, tr.gain),
                           bound=bound, **common)
    if tr.bound == -math.inf:
        return make_result(name, opts, termination="infeasible", **common)
    if termination == "optimal":       # no incumbent but the search space is exhausted: undecided
        termination = "unknown"
    return make_result(name, opts, termination=termination, bound=bound, **common)


def job_slack(inst: MCMDK, lp: LPInfo) -> np.ndarray:
    r"""Per job, the regret of its second-best option: how firmly the LP prices decide the job.

    Jobs with a small value are where the LP is unsure; they are the core and the LNS neighbourhoods.
    """
    allow_none = inst.choose == "at_most_one"
    opt_job = np.concatenate([inst.col_job, np.arange(inst.n_jobs) if allow_none else np.zeros(0, dtype=np.int64)])
    opt_reg = np.concatenate([lp.regret, lp.regret_none if allow_none else np.zeros(0)])
    order = np.lexsort((opt_reg, opt_job))
    sj, sr = opt_job[order], opt_reg[order]
    first = np.flatnonzero(np.r_[True, sj[1:] != sj[:-1]])
    second = first + 1
    ok = (second < sj.size)
    ok[ok] &= sj[second[ok]] == sj[first[ok]]
    out = np.full(inst.n_jobs, np.inf)
    out[sj[first[ok]]] = sr[second[ok]]
    return out


def lns_search(inst: MCMDK, lp: LPInfo, tr: Tracker, deadline: float, stats: dict, *,
               free: int | None = None, sub_seconds: float = 0.3, temperature: float = 1.0) -> None:
    r"""Large-neighbourhood search around the incumbent, neighbourhoods drawn from the core.

    Each round frees ``free`` jobs and fixes every other job to the incumbent's choice; the
    sub-MCMDK (:func:`sub_instance`) is solved with HiGHS, warm-started, for at most
    ``sub_seconds``. Half of the rounds draw the free jobs with weight
    :math:`\exp(-\delta_j / (T \bar\delta))` (:func:`job_slack`, ``temperature`` T, seeded Gumbel top-k:
    where the LP is unsure), the other half uniformly (diversity). The neighbourhood grows by one
    job when a sub-MIP is solved to optimality in under a third of its limit and shrinks by one
    when it is not solved. It only improves the solution: a sub-MIP's bound certifies nothing
    for the whole problem, so ``tr.bound`` is left alone.
    """
    if tr.choice is None:
        return

    rng = np.random.default_rng(tr.opts.seed)
    delta = job_slack(inst, lp)
    finite = delta[np.isfinite(delta)]
    scale = float(np.mean(finite)) if finite.size and np.mean(finite) > 0 else 1.0
    logw = -np.where(np.isfinite(delta), delta, 10 * scale + finite.max(initial=0.0)) / (temperature * scale)
    k = min(inst.n_jobs, free or max(10, inst.n_rows + 5))
    rounds = improved = 0
    while True:
        left = deadline - time.perf_counter()
        if left <= MIN_STAGE_SECONDS or tr.done:
            break
        gumbel = -np.log(-np.log(rng.random(inst.n_jobs)))
        key = (logw + gumbel) if rounds % 2 == 0 else gumbel
        freed = np.sort(np.argpartition(-key, k - 1)[:k])
        col = np.full(inst.n_jobs, -1, dtype=np.int64)
        on = tr.choice >= 0
        col[on] = inst.job_ptr[np.flatnonzero(on)] + tr.choice[on]
        sub = sub_instance(inst, freed, col)
        limit = min(sub_seconds, left)
        opts = tr.opts.within(tr.opts.clock.share(1.0, at_most=limit), seed=int(rng.integers(2**31 - 1)),
                              warm_start=tr.choice[freed], mip_rel_gap=0.0, on_incumbent=None)
        res = solve_core(sub, opts)
        rounds += 1
        if res.solution is not None and res.status.has_solution():
            choice = tr.choice.copy()
            choice[freed] = res.solution
            if tr.offer(choice, chosen_gain(inst, choice)):
                improved += 1
        if res.termination == "optimal" and res.solve_seconds < limit / 3:
            k = min(inst.n_jobs, k + 1)
        elif res.termination != "optimal":
            k = max(4, k - 1)
    stats["lns"] = {"rounds": rounds, "improved": improved, "final_free_jobs": k}


def core_mask(inst: MCMDK, info: LPInfo, fraction: float, tr: Tracker) -> tuple[np.ndarray, np.ndarray]:
    """Columns and empty choices in the core: regret within the ``fraction`` quantile of the positive
    regrets (``fraction >= 1``: everything), plus the incumbent's options."""
    allow_none = inst.choose == "at_most_one"
    if fraction >= 1.0:
        theta = math.inf
    else:
        regrets = np.concatenate([info.regret, info.regret_none if allow_none else np.zeros(0)])
        positive = np.sort(regrets[regrets > 1e-9])
        k = int(math.ceil(fraction * positive.size))
        theta = positive[k - 1] if k > 0 else 0.0
    keep = info.regret <= theta + 1e-12
    none_ok = (info.regret_none <= theta + 1e-12) if allow_none else np.zeros(inst.n_jobs, dtype=bool)
    if tr.choice is not None:   # the incumbent stays feasible in every core (warm start)
        keep[inst.columns_of(tr.choice)] = True
        none_ok |= (tr.choice < 0) & allow_none
    return keep, none_ok


def perturbed(inst: MCMDK, lp: LPInfo, rng: np.random.Generator, noise: float) -> LPInfo:
    r"""Regrets and bound at prices :math:`u_k e^{\sigma \xi_k}` (any :math:`u \ge 0` certifies, see
    :mod:`dlsched.solvers.lp`): a core centred elsewhere, with its own valid bound."""
    u = lp.u * np.exp(noise * rng.standard_normal(lp.u.size))
    L, best, regret, regret_none = lagrangian(inst, u)
    return replace(lp, u=u, best=best, regret=regret, regret_none=regret_none, bound_gain=L, bound=to_sense(inst, L))


@register("core", description="core-problem sparsification by LP regret, growing cores solved by HiGHS",
          params=("core_fractions", "stage_share", "diversify", "price_noise", "lns", "free", "sub_seconds",
                  "temperature", "search_share", "big_core"), supports=("gap", "raw"))
def core(instance, opts: SolveOptions, core_fractions: Sequence[float] = DEFAULT_FRACTIONS, stage_share: float = 0.3,
         diversify: bool = True, price_noise: float = 0.2, lns: bool = False, free: int | None = None,
         sub_seconds: float = 0.3, temperature: float = 1.0, search_share: float = SEARCH_SHARE,
         big_core: int = BIG_CORE) -> Result:
    """Core-problem method (module docstring: stages, certified bound, diversified cores, LNS)."""
    opts = opts.started()
    inst, tr, stats = start(instance, opts, float(search_share))
    if tr.lp.status != Status.OPTIMAL:
        return finish("core", inst, opts, tr, stats, tr.lp.termination)
    lp = tr.lp
    mf = build_matrix(inst)
    termination = "time_limit"
    previous = None
    fractions = sorted(float(f) for f in core_fractions)
    if not fractions or fractions[-1] < 1.0:
        fractions.append(1.0)
    timed = opts.clock.limited
    after = (diversify or lns) and timed     # a later phase takes over once a core is hard
    solved = fractions[0]
    rate, last_core = None, None
    for i, f in enumerate(fractions):
        last = i == len(fractions) - 1
        left = tr.remaining()
        if tr.done or left <= 0:
            break
        keep, none_ok = core_mask(inst, lp, f, tr)
        size = (int(keep.sum()), int(none_ok.sum()))
        if size == previous and not last:
            continue
        previous = size
        budget = left if last else stage_share * left
        if timed and size[0] > int(big_core) and rate is not None and rate * size[0] > budget:
            # HiGHS does not stop inside presolve / the root LP of a wide model: a core that
            # cannot get through them in its budget would overrun the time limit (measured:
            # a 35k-column core given 3.5 s ran 13 s). Stop growing instead.
            stats["stopped_growing"] = f"core of {size[0]} columns predicted to need {rate * size[0]:.1f} s > {budget:.1f} s"
            if last_core is not None and tr.remaining() > 0:   # the rest of the time: the last core again
                solve_restricted(inst, mf, lp, *last_core, tr, tr.remaining(), stats)
            break
        last_core = (keep, none_ok)
        term, secs = solve_restricted(inst, mf, lp, keep, none_ok, tr, budget, stats)
        if term != "optimal":
            rate = secs / max(size[0], 1)     # seconds per column of a core that used its whole budget
        if term == "optimal":
            solved = f
            if last:
                termination = "optimal"
        elif after and term != "infeasible":   # an infeasible core (no incumbent yet) is not a hard one
            break
    if diversify and timed and not tr.done:
        rng = np.random.default_rng(opts.seed)
        f, rounds = solved, 0
        while tr.remaining() > MIN_STAGE_SECONDS and not tr.done:
            info = perturbed(inst, lp, rng, price_noise)
            keep, none_ok = core_mask(inst, info, f, tr)
            budget = min(tr.remaining(), stage_share * opts.clock.limit)
            term, secs = solve_restricted(inst, mf, info, keep, none_ok, tr, budget, stats)
            rounds += 1
            done = term in ("optimal", "infeasible")
            f = min(1.0, f * CORE_GROWTH) if done and secs < budget / 3 else (f if done else f / CORE_GROWTH)
        stats["diversified_cores"] = rounds
    if lns and timed and not tr.done and tr.remaining() > 0:
        lns_search(inst, lp, tr, time.perf_counter() + tr.remaining(), stats, free=free, sub_seconds=sub_seconds,
                   temperature=temperature)
    if tr.proven:
        termination = "optimal"
    return finish("core", inst, opts, tr, stats, termination)

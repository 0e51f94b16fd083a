r"""LP rounding with greedy repair and local search for the core MCMDK (MODELS.md §1, "LP rounding").

Method ``lp-round``:

1. solve the LP relaxation to a *basic* optimal solution :math:`x^*` (dual simplex);
2. keep every job whose column values are integral (its chosen configuration, or none);
   drop the fractional jobs :math:`F` (at most one per capacity row, see below);
3. repair: add configurations of unassigned jobs greedily, in order of increasing LP regret
   :math:`r_{j,o}` (the multiple-choice reduced cost of :mod:`dlsched.solvers.lp`), whenever they fit
   and gain something;
4. improve by local search until a local optimum or the time limit: *1-opt* (move one job to
   another configuration or to none, best improvement first) and *swap* (drop one job, give
   another job a configuration), each only when the solution stays feasible.

**Guarantee (additive).** Let :math:`m` be the number of capacity rows and :math:`g = v`
(``max``) or :math:`-v` (``min``) the gain. A vertex of
:math:`\{Ax \le b,\ Ex \le 1,\ x \ge 0\}` has at most :math:`m` fractional jobs: with support
:math:`S`, the columns of :math:`S` are independent on the tight rows, so
:math:`|S| \le m + |J_1|` (:math:`J_1` the jobs whose row is tight), while every fractional
job in :math:`J_1` has two support columns and every job outside :math:`J_1` with support is
fractional, so :math:`|F| \le m`. When ``choose = at_most_one`` and :math:`A \ge 0`, dropping
:math:`F` keeps feasibility, and steps 3–4 never lose gain, hence

.. math::

    g(\text{lp-round}) \;\ge\; z_{LP} - \Delta,\qquad
    \Delta = \sum_{j \in F} \sum_{o} \max(g_{j,o}, 0)\, x^*_{j,o}
    \;\le\; m \cdot \max_{j,o} \max(g_{j,o}, 0),

and :math:`z_{LP} \ge z^*`, so the same :math:`\Delta` bounds the loss against the optimum.
``stats["guarantee"]`` reports :math:`\Delta` per instance (in gain units), ``stats["fractional_jobs"]``
reports :math:`|F|`. Under ``exactly_one`` the fractional jobs must be given a configuration
that fits; greedy placement often fails on tight instances, and then :func:`exact_repair` solves
the fractional jobs exactly with the integral ones fixed, freeing more jobs (cheapest to move
first) while that is infeasible, for at most 1 s. Feasibility is NP-hard there, so no guarantee
is claimed, and the method says so in ``message`` when it finds no solution.

The reported ``bound`` is the Lagrangian bound :math:`L(u)` at the LP prices (= the LP optimum).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from dlsched.instance.core import MCMDK
from dlsched.result import Result, Status, make_result, relative_gap
from dlsched.solvers import highs
from dlsched.solvers.milp import solve_core
from dlsched.solvers.lp import INT_TOL, LPInfo, gain, solve_lp, to_sense
from dlsched.solvers.options import Incumbent, SolveOptions
from dlsched.solvers.registry import register

FEAS_TOL = 1e-9
#: local search looks at no more than this many candidate columns (lowest LP regret first)
MAX_CANDIDATES = 20_000
#: the exact repair of ``exactly_one`` instances runs for at most this many seconds (or the time left)
REPAIR_SECONDS = 1.0


class Packing:
    """A core solution under construction: choice per job, gains and the capacity used.

    ``use`` holds the resource vector of each job's current configuration (m x n_jobs, dense),
    so that a move is checked with whole-array arithmetic.
    """

    def __init__(self, inst: MCMDK, choice: np.ndarray | None = None):
        self.inst = inst
        self.g = gain(inst)
        self.col = np.full(inst.n_jobs, -1, dtype=np.int64)   # current column per job, -1 = none
        self.load = np.zeros(inst.n_rows)
        self.use = np.zeros((inst.n_rows, inst.n_jobs))
        self.Acsc = inst.A.tocsc()
        if choice is not None:
            for j in np.flatnonzero(np.asarray(choice) >= 0):
                self.set(int(j), int(inst.job_ptr[j] + choice[j]))

    def column(self, c: int) -> np.ndarray:
        out = np.zeros(self.inst.n_rows)
        lo, hi = self.Acsc.indptr[c], self.Acsc.indptr[c + 1]
        out[self.Acsc.indices[lo:hi]] = self.Acsc.data[lo:hi]
        return out

    def fits(self, j: int, c: int) -> bool:
        new = self.load - self.use[:, j] + self.column(c)
        return bool(np.all(new <= self.inst.b + FEAS_TOL * np.maximum(1.0, np.abs(self.inst.b))))

    def set(self, j: int, c: int) -> None:
        """Give job j column c (``-1``: none)."""
        self.load -= self.use[:, j]
        self.use[:, j] = self.column(c) if c >= 0 else 0.0
        self.load += self.use[:, j]
        self.col[j] = c

    def gain_total(self) -> float:
        chosen = self.col[self.col >= 0]
        return float(self.g[chosen].sum())

    def objective(self) -> float:
        return to_sense(self.inst, self.gain_total())

    def choice(self) -> np.ndarray:
        out = np.full(self.inst.n_jobs, -1, dtype=np.int64)
        on = self.col >= 0
        out[on] = self.col[on] - self.inst.job_ptr[np.flatnonzero(on)]
        return out

    def feasible(self) -> bool:
        b = self.inst.b
        ok = np.all(self.load <= b + FEAS_TOL * np.maximum(1.0, np.abs(b)))
        if self.inst.choose == "exactly_one":
            ok = ok and bool(np.all(self.col >= 0))
        return bool(ok)


def greedy_start(inst: MCMDK) -> np.ndarray | None:
    r"""A feasible choice without the LP, for a call whose limit ends before the LP does (5,000 jobs
    x 10 configurations: the LP took 2.9 s): each job's configuration of most gain per share of
    the capacities, :math:`g_{j,o} / \sum_k a^k_{j,o} / b^k`, the jobs by that ratio, each taken
    when it still fits (tolerance as :class:`Packing`). Only where leaving a job out is allowed and
    uses and capacities are non-negative (``at_most_one``, :math:`A \ge 0`, :math:`b \ge 0`), so
    that every step stays feasible; None elsewhere. A loop over the jobs, not the columns: milliseconds."""
    if inst.choose != "at_most_one" or inst.n_cols == 0 or np.any(inst.A.data < 0) or np.any(inst.b < 0):
        return None
    g = gain(inst)
    b = inst.b
    share = np.asarray(inst.A.T @ (1.0 / np.maximum(b, 1e-12))).ravel()
    ratio = np.where(g > 0, g / np.maximum(share, 1e-12), -np.inf)
    # each job's first column of the highest ratio (columns are grouped by job; jobs without any skipped)
    has = np.flatnonzero(inst.n_configs > 0)
    counts = np.diff(np.append(inst.job_ptr[has], inst.n_cols))
    at = np.flatnonzero(ratio >= np.repeat(np.maximum.reduceat(ratio, inst.job_ptr[has]), counts))
    owner = np.repeat(has, counts)[at]
    first = np.unique(owner, return_index=True)[1]
    jobs, best = owner[first], at[first]
    keep = np.isfinite(ratio[best])
    jobs, best = jobs[keep], best[keep]
    order = np.argsort(-ratio[best], kind="stable")
    jobs, best = jobs[order], best[order]
    cap = (b + FEAS_TOL * np.maximum(1.0, np.abs(b))).tolist()
    use = [0.0] * inst.n_rows
    choice = np.full(inst.n_jobs, -1, dtype=np.int64)
    # Python floats: a NumPy call per job of a handful of rows costs more than the arithmetic
    for j, c, a in zip(jobs.tolist(), best.tolist(), inst.A[:, best].T.toarray().tolist()):
        nxt = [u + x for u, x in zip(use, a)]
        if all(u <= k for u, k in zip(nxt, cap)):
            use = nxt
            choice[j] = c - inst.job_ptr[j]
    return choice


def round_down(inst: MCMDK, lp: LPInfo) -> tuple[np.ndarray, np.ndarray, float]:
    """Choice from the integral jobs of ``lp.x`` (fractional jobs get -1), F, and Δ (gain units)."""
    frac_jobs = lp.fractional_jobs(inst)
    x = lp.x.copy()
    x[np.isin(inst.col_job, frac_jobs)] = 0.0
    choice = inst.choice_from_columns(x, tol=1 - INT_TOL)
    g = gain(inst)
    in_frac = np.isin(inst.col_job, frac_jobs)
    delta = float((np.maximum(g, 0.0) * lp.x)[in_frac].sum())
    return choice, frac_jobs, delta


def candidates(inst: MCMDK, lp: LPInfo | None, limit: int = MAX_CANDIDATES) -> np.ndarray:
    """Candidate columns for repair and local search, best LP regret first (ties: larger gain)."""
    g = gain(inst)
    key = lp.regret if lp is not None else -g
    order = np.lexsort((-g, key))
    return order[:limit]


def greedy_fill(p: Packing, cols: np.ndarray, jobs_open: np.ndarray | None = None,
                stop: Callable[[], bool] | None = None) -> int:
    """Give each open job the first column of ``cols`` (in order) that fits and gains; returns #added.

    Under ``exactly_one`` a job with no configuration takes the first fitting one even at a loss.
    ``stop()`` (asked every 256 columns) ends the pass early: the packing stays feasible
    (``at_most_one``; 10k columns took 0.1-0.3 s past a 1-s limit).
    """
    inst = p.inst
    open_ = p.col < 0 if jobs_open is None else jobs_open.copy()
    must = inst.choose == "exactly_one"
    added = 0
    cj = inst.col_job
    for k, c in enumerate(cols):
        if stop is not None and k % 256 == 0 and stop():
            break
        j = int(cj[c])
        if not open_[j] or (not must and p.g[c] <= 0):
            continue
        if p.fits(j, int(c)):
            p.set(j, int(c))
            open_[j] = False
            added += 1
    return added


def one_opt(p: Packing, cols: np.ndarray, Ac: np.ndarray, go: Callable[[], bool]) -> int:
    """Best-improvement moves of one job (to a column of ``cols`` or to none) until none improves."""
    inst = p.inst
    cj = inst.col_job[cols]
    gc = p.g[cols]
    tol = inst.b + FEAS_TOL * np.maximum(1.0, np.abs(inst.b))
    moves = 0
    allow_none = inst.choose == "at_most_one"
    while go():
        cur_gain = np.where(p.col >= 0, p.g[np.maximum(p.col, 0)], 0.0)
        delta = gc - cur_gain[cj]
        cand = np.flatnonzero(delta > 1e-9)
        best_c, best_d = -1, 0.0
        if cand.size:
            new = p.load[:, None] - p.use[:, cj[cand]] + Ac[:, cand]
            ok = np.all(new <= tol[:, None], axis=0)
            if ok.any():
                k = cand[ok][np.argmax(delta[cand[ok]])]
                best_c, best_d = int(k), float(delta[k])
        if allow_none:   # dropping a job with a negative gain
            neg = np.flatnonzero((p.col >= 0) & (cur_gain < -1e-9))
            if neg.size and -cur_gain[neg].min() > best_d:
                j = int(neg[np.argmin(cur_gain[neg])])
                p.set(j, -1)
                moves += 1
                continue
        if best_c < 0:
            break
        p.set(int(cj[best_c]), int(cols[best_c]))
        moves += 1
    return moves


def swap(p: Packing, cols: np.ndarray, Ac: np.ndarray, go: Callable[[], bool]) -> bool:
    """First improving swap: drop a chosen job j1, give a column of ``cols`` to another job j2."""
    inst = p.inst
    if inst.choose != "at_most_one":
        return False
    cj = inst.col_job[cols]
    gc = p.g[cols]
    tol = inst.b + FEAS_TOL * np.maximum(1.0, np.abs(inst.b))
    cur_gain = np.where(p.col >= 0, p.g[np.maximum(p.col, 0)], 0.0)
    chosen = np.flatnonzero(p.col >= 0)
    for j1 in chosen[np.argsort(cur_gain[chosen])]:    # cheapest first
        if not go():
            return False
        delta = gc - cur_gain[cj] - cur_gain[j1]
        cand = np.flatnonzero((delta > 1e-9) & (cj != j1))
        if not cand.size:
            continue
        load = p.load - p.use[:, j1]
        new = load[:, None] - p.use[:, cj[cand]] + Ac[:, cand]
        ok = np.all(new <= tol[:, None], axis=0)
        if ok.any():
            k = cand[ok][np.argmax(delta[cand[ok]])]
            p.set(int(j1), -1)
            p.set(int(cj[k]), int(cols[k]))
            return True
    return False


def local_search(p: Packing, cols: np.ndarray, deadline: float, report=None,
                 enough: Callable[[], bool] | None = None) -> dict:
    """1-opt to a local optimum, then swaps (each followed by 1-opt and a greedy fill) until none
    improves, the ``deadline`` passes or ``enough()`` says the requested gap is reached."""
    Ac = p.inst.A[:, cols].toarray()
    stats = {"one_opt_moves": 0, "swaps": 0}

    def go() -> bool:
        return time.perf_counter() < deadline and not (enough is not None and enough())

    stats["one_opt_moves"] += one_opt(p, cols, Ac, go)
    if report:
        report()
    while go() and swap(p, cols, Ac, go):
        stats["swaps"] += 1
        greedy_fill(p, cols)
        stats["one_opt_moves"] += one_opt(p, cols, Ac, go)
        if report:
            report()
    return stats


def sub_instance(inst: MCMDK, free: np.ndarray, col: np.ndarray) -> MCMDK:
    """The MCMDK over the jobs ``free`` (sorted) when every other job keeps column ``col[j]`` (-1: none).

    Capacities shrink by what the fixed jobs use; built from whole arrays.
    """
    is_free = np.zeros(inst.n_jobs, dtype=bool)
    is_free[free] = True
    cols = np.flatnonzero(is_free[inst.col_job])
    fixed = col[~is_free]
    fixed = fixed[fixed >= 0]
    used = np.asarray(inst.A[:, fixed].sum(axis=1)).ravel() if fixed.size else np.zeros(inst.n_rows)
    job_ptr = np.concatenate([[0], np.cumsum(inst.n_configs[free])])
    return MCMDK(inst.value[cols], inst.A[:, cols], np.maximum(inst.b - used, 0.0), job_ptr, inst.sense,
                 inst.choose, inst.name + "-sub")


def exact_repair(p: Packing, choice: np.ndarray, frac: np.ndarray, lp: LPInfo, opts: SolveOptions,
                 stats: dict) -> None:
    """``exactly_one`` fallback when greedy placement fails: solve the fractional jobs exactly with the
    LP's integral choices fixed (at most ``n_rows`` jobs: a small MILP). If that is infeasible, free
    ``2 n_rows`` more jobs at a time — those whose second-best configuration has the smallest LP
    regret, i.e. the cheapest to move — and try again; at most :data:`REPAIR_SECONDS` in all (or the time left)."""

    inst = p.inst
    col = np.full(inst.n_jobs, -1, dtype=np.int64)
    on = choice >= 0
    col[on] = inst.job_ptr[np.flatnonzero(on)] + choice[on]
    # per job, the smallest regret among the configurations the LP did not choose
    reg = lp.regret.copy()
    reg[col[on]] = np.inf
    has = inst.n_configs > 0
    second = np.full(inst.n_jobs, np.inf)
    second[has] = np.minimum.reduceat(reg, inst.job_ptr[:-1][has])
    order = [j for j in np.argsort(second, kind="stable") if j not in set(frac.tolist())]
    deadline = time.perf_counter() + min(REPAIR_SECONDS, opts.clock.remaining())
    extra, tries = 0, 0
    while time.perf_counter() < deadline:
        free = np.sort(np.concatenate([frac, np.asarray(order[:extra], dtype=np.int64)])).astype(np.int64)
        if not free.size:
            extra += 2 * inst.n_rows
            continue
        sub = sub_instance(inst, free, col)
        res = solve_core(sub, opts.within(opts.clock.share(1.0, at_most=max(deadline - time.perf_counter(), 1e-3)),
                                          mip_rel_gap=0.0, warm_start=None, on_incumbent=None))
        tries += 1
        if res.status.has_solution():
            for j in range(inst.n_jobs):
                p.set(j, int(col[j]))
            for j, o in zip(free, res.solution):
                p.set(int(j), int(inst.job_ptr[j] + o) if o >= 0 else -1)
            break
        if res.status != Status.INFEASIBLE or extra >= inst.n_jobs:
            break
        extra += 2 * inst.n_rows
    stats["exact_repair"] = {"tries": tries, "freed_jobs": int(min(extra, inst.n_jobs) + frac.size)}


def lp_round_core(inst: MCMDK, opts: SolveOptions, lp: LPInfo | None = None, *, t0: float | None = None,
                  search_seconds: float | None = None) -> tuple[Packing | None, LPInfo, dict]:
    """Steps 1–4 on a core instance; returns the packing (None if repair failed), the LP and stats.

    ``search_seconds`` caps the local search (default: the rest of the call's budget); the search
    also stops once the requested gap (``opts.mip_rel_gap``) to the LP bound is reached.
    """
    opts = opts.started()
    t0 = opts.clock.start if t0 is None else t0
    if lp is None:
        lp = solve_lp(inst, opts)
    stats: dict = {"lp_seconds": lp.seconds}
    if lp.status != Status.OPTIMAL:
        return None, lp, stats
    choice, frac, delta = round_down(inst, lp)
    stats.update(fractional_jobs=int(frac.size), guarantee=delta, capacity_rows=inst.n_rows)
    p = Packing(inst, choice)
    best = [None]

    def report():
        if opts.on_incumbent is None or not p.feasible():
            return
        val = p.objective()
        if best[0] is None or (val > best[0] if inst.sense == "max" else val < best[0]):
            best[0] = val
            opts.on_incumbent(Incumbent(time.perf_counter() - t0, val, lp.bound))

    cols = candidates(inst, lp)
    if inst.choose == "exactly_one":
        # the fractional jobs first, their columns by decreasing LP value, then by regret
        fcols = np.flatnonzero(np.isin(inst.col_job, frac))
        fcols = fcols[np.lexsort((lp.regret[fcols], -lp.x[fcols]))]
        greedy_fill(p, np.concatenate([fcols, cols]))
        if not p.feasible():
            # the columns that use the least of the capacities, relative to their size
            scaled = inst.A.T @ (1.0 / np.maximum(inst.b, 1e-9))
            greedy_fill(p, np.argsort(scaled, kind="stable"))
        if not p.feasible():
            exact_repair(p, choice, frac, lp, opts, stats)
    else:
        greedy_fill(p, cols, stop=opts.clock.expired if opts.clock.limited else None)
    stats["repair_gain"] = p.gain_total()
    if not p.feasible():
        return None, lp, stats
    report()
    limit = opts.clock.remaining()
    if search_seconds is not None:
        limit = min(limit, search_seconds)
    deadline = time.perf_counter() + limit
    stats.update(local_search(p, cols, deadline, report, enough=lambda: within_gap(lp, p, opts.mip_rel_gap)))
    return p, lp, stats


def within_gap(lp: LPInfo, p: Packing, gap: float) -> bool:
    """Is the packing within the relative ``gap`` of the LP bound (HiGHS's definition, gain units)?"""
    g = p.gain_total()
    return gap > 0 and g != 0 and lp.bound_gain - g <= gap * abs(g)


@register("lp-round", description="LP rounding + greedy repair + local search, additive guarantee",
          supports=("gap", "raw"))
def lp_round(instance, opts: SolveOptions) -> Result:
    """LP rounding of the core MCMDK (module docstring: the additive guarantee and its proof)."""
    opts = opts.started()
    t0 = time.perf_counter()
    inst = instance.to_core()
    build = time.perf_counter() - t0
    # with a limit, the greedy start is made before the LP (milliseconds), not after the deadline
    start = greedy_start(inst) if opts.clock.limited else None
    p, lp, stats = lp_round_core(inst, opts)
    bound = lp.bound if lp.status == Status.OPTIMAL else None
    common = dict(sense=inst.sense, backend="highs", build_seconds=build, stats=stats, solver_version=highs.version())
    if lp.status in (Status.INFEASIBLE, Status.UNBOUNDED):
        return make_result("lp-round", opts, termination=lp.termination, message="the LP relaxation is " + lp.status.value,
                           **common)
    if p is None and lp.termination == "time_limit" and start is not None:
        # the limit ended the LP: the greedy start is the best found
        stats["returned"] = "greedy start"
        return make_result("lp-round", opts, termination="time_limit", solution=start,
                           objective=to_sense(inst, float(gain(inst)[inst.columns_of(start)].sum())), **common)
    if p is None:
        msg = ("repair (greedy, then exact on the fractional and cheapest-to-move jobs) found no "
               "configuration that fits for every job (exactly_one); no guarantee exists in this case")
        term = lp.termination if lp.status != Status.OPTIMAL else "repair_failed"
        return make_result("lp-round", opts, termination=term, bound=bound, message=msg, **common)
    objective = p.objective()
    gap = relative_gap(objective, bound, inst.sense)
    if gap == 0:
        term = "optimal"
    elif within_gap(lp, p, opts.mip_rel_gap):
        term = "gap_limit"
    elif opts.clock.expired():
        term = "time_limit"
    else:
        term = "local_optimum"
    return make_result("lp-round", opts, termination=term, solution=p.choice(), objective=objective, bound=bound,
                       **common)

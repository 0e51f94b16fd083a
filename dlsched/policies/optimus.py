r"""Optimus (MODELS.md §5): online-fitted convergence and speed models, marginal-gain allocation,
and its placement principle, as a simulator policy.

This is Optimus (the policy ``optimus``). The marginal-gain core, :func:`marginal_gain_allocation`,
is the one every Optimus-like policy calls; the named variants that feed it the known τ instead of
fitted models (``optimus-greedy``, which the SMD method ``optimus`` runs, ``srpt-greedy``,
``hesrpt``, ``fluid``) are in :mod:`dlsched.policies.greedy` and :mod:`dlsched.policies.fluid`.

At each call (every arrival and completion, and every ``slot_seconds``, Optimus's scheduling
interval) the policy

1. **estimates each job's remaining steps** :math:`\hat R_j = k^\star_j - k_j` from its
   observed (step, loss) points by :func:`dlsched.perf.convergence.fit_loss_curve` (β ≥ 0,
   later points weighted more) and the job's convergence test (δ, W) — ``job.meta``'s
   ``convergence_delta`` / ``convergence_window`` when the trace states them, as a user states
   the stopping rule of a job, else the policy's ``criterion``. With fewer than
   ``min_loss_points`` points the prior is the median length of the finished jobs of its type
   (else of all finished jobs, else of the other active jobs' estimates, else ``default_steps``);
2. **estimates its speed** with the sync form :math:`f_j(p, w) = (\theta_0 M/w + \theta_1 +
   \theta_2 w/p + \theta_3 w + \theta_4 p)^{-1}`, θ ≥ 0. ``speed_model="measured"`` (the
   default: the estimator of the authors' scheduler, pengyanghua/optimus; the results log's
   audit, docs/results/index.md)
   keeps one measured speed per (p, w) for each job (:class:`dlsched.perf.optimus_fit.MeasuredSpeed`):
   the measured value itself at a measured size, elsewhere the form fitted by bounded least
   squares on the speeds (:func:`~dlsched.perf.optimus_fit.fit_sync_curve`) once
   ``min_speed_points`` sizes are measured. A job starts from the sizes the earlier jobs of its
   type measured (their mean at each size: profiling shared by jobs of the same type); while
   it knows fewer than ``profile_points`` sizes it is profiled on arrival at unmeasured sizes of
   ``profile`` (default p = w ∈ 1..10, drawn in a seeded random order, as the authors draw them)
   until it knows ``profile_points``; every size it then runs at overwrites its entry with the
   rate the engine reports (``ClusterState.observations``). ``speed_model="nnls"`` (the earlier
   estimator, kept as an ablation) fits the form by NNLS on 1/f
   (:func:`dlsched.perf.optimus_fit.fit_sync_points`) to every (p, w, iterations/s) sample the
   job has reported plus profiling runs of its own at all of ``profile`` (default
   :data:`DEFAULT_PROFILE`, off the diagonal too), never the measured values as they are. Either
   way a profiled job becomes schedulable ``profile_seconds`` after it arrives, so the profiling
   time is charged to its completion time (the profiling runs themselves are not simulated on
   the cluster; a job of a type already measured at ``profile_points`` sizes is not profiled under
   ``"measured"``). Below ``min_speed_points`` distinct sizes ``"nnls"`` fits the pooled samples of
   the job's type; failing that (both models), :math:`f \propto \sqrt{p w}` scaled to the mean
   measured rate (a prior with diminishing but positive returns in both PSs and workers, so that
   the job tries larger sizes on both axes and so yields the samples to learn from), with the
   measured values kept at measured sizes under ``"measured"``;
3. **allocates by marginal gain** (:func:`marginal_gain_allocation`, the toolkit's one Optimus
   greedy, which the one-shot ``optimus-greedy`` also calls): every job starts with 1 PS
   + ``min_workers`` workers (in arrival order, while they fit), then the task with the largest
   :math:`\big(T_j(p, w) - T_j(p', w')\big) / \text{share}(\text{task})`, :math:`T_j = \hat R_j /
   f_j`, is added (in the order of a heap of every job's candidate tasks, laid out in rounds) while a gain
   is positive and the task fits.
   ``normalise="cluster"`` (default, MODELS.md §5's wording): share = the task's demand of the
   cluster's dominant resource r* (the resource the ready jobs ask the largest share of at their
   start sizes), :math:`d^{r*}/C^{r*}`; ``"task"``: the task's own dominant share
   :math:`\max_r d^r / C^r`; ``"amount"``: the task's demand of its own dominant resource in
   that resource's units (what the authors' public scheduler, pengyanghua/optimus, divides by)
   (:func:`task_shares`). On tuning seeds 100–102 the three are within 1 % of each other in
   average JCT. ``gain="relative"`` is an ablation, not Optimus: each job's gain is divided by
   its remaining time at its fastest size, so that a task is worth the *fraction* of a job's
   remaining time it saves rather than the seconds (which favour long jobs; the results log,
   docs/results/index.md).
   ``models="oracle"`` is the other ablation, not Optimus either: steps 1 and 2 are replaced by
   the truth (the engine's remaining steps :math:`R_j` and the speed source's rate at every
   (p, w)), everything else unchanged (the job still waits ``profile_seconds``), so that the gap
   between ``optimus`` and it is what the online fitting costs (``"oracle-speed"`` and
   ``"oracle-steps"`` replace only step 2 or only step 1). :data:`ABLATIONS` names them;
   :func:`make_ablation` makes them. ``pairs=True`` (an ablation too) lets the greedy also add a
   worker and a PS together (:func:`marginal_gain_allocation`);
4. **places** each job by the placement principle (:func:`place_principle`): the fewest servers
   k such that every server holds p/k PSs and w/k workers; else first fit. A job whose size did
   not change keeps its servers (no restart). A job that cannot be placed gives back its task of
   least marginal value until it fits, or waits.

The policy keeps its estimation errors against the truth (read only for statistics:
``ClusterState.remaining`` and the speed source) at 25/50/75 % of each job's progress:
:meth:`Optimus.model_errors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Callable, Literal, Mapping, Sequence

import numpy as np

from dlsched.arguments import MIN_SLOT_SECONDS, Range, checked
from dlsched.errors import InputError
from dlsched.instance.workload import Job
from dlsched.perf.convergence import Criterion, LossFit, fit_loss_curve
from dlsched.perf.optimus_fit import MeasuredSpeed, OptimusModel, fit_sync_points
from dlsched.sim.placement import EPS, first_fit, usage
from dlsched.sim.policy import ClusterState, Decision, Event, Placement, PolicyContext
from dlsched.perf.profiles import MEASURED_BATCH
from dlsched.policies.budget import BudgetMs, DecisionRecord
from dlsched.solvers.anytime import lagrangian_bound
from dlsched.solvers.options import Budget

#: progress fractions at which the estimation errors are recorded
CHECKPOINTS = (0.25, 0.5, 0.75)
#: Optimus's profiling configurations (p, w): small sizes around the start and a few larger ones
DEFAULT_PROFILE = ((1, 1), (1, 2), (2, 1), (2, 2), (2, 4), (4, 2), (4, 4), (8, 8))
#: the authors' profiling sizes (pengyanghua/optimus ``test_speed``): p = w drawn from 1..10
AUTHORS_PROFILE = tuple((k, k) for k in range(1, 11))


# -- allocation (MODELS.md §5) -----------------------------------------------------------------

def task_shares(demand_w: np.ndarray, demand_p: np.ndarray, capacity: np.ndarray,
                bottleneck: int | None = None, divisor: str = "share") -> tuple[np.ndarray, np.ndarray]:
    r"""What a worker and a PS of each job cost in the gain's denominator (MODELS.md §5).

    ``divisor="share"``: without ``bottleneck``, the task's dominant share :math:`\max_r d^r / C^r`;
    with the index of the cluster's dominant resource r*, the task's share of it,
    :math:`d^{r*} / C^{r*}`; a task that holds none of r* (a PS when GPUs are the bottleneck) costs
    its dominant share instead, so that it is never free. ``"amount"``: the task's demand of its
    own dominant resource (the largest :math:`d^r / C^r`) in that resource's units, as the
    authors' scheduler divides. ``"none"``: 1 for every task, as DL2's simulator's Optimus divides.
    """
    if divisor == "none":
        return np.ones(len(demand_w)), np.ones(len(demand_p))
    cap = np.where(capacity > 0, capacity, 1.0)
    if divisor == "amount":
        rows = np.arange(len(demand_w))
        return (np.maximum(demand_w[rows, (demand_w / cap).argmax(axis=1)], 1e-12),
                np.maximum(demand_p[rows, (demand_p / cap).argmax(axis=1)], 1e-12))
    own_w = np.maximum((demand_w / cap).max(axis=1), 1e-12)
    own_p = np.maximum((demand_p / cap).max(axis=1), 1e-12)
    if bottleneck is None:
        return own_w, own_p
    bw, bp = demand_w[:, bottleneck] / cap[bottleneck], demand_p[:, bottleneck] / cap[bottleneck]
    return np.where(bw > 0, bw, own_w), np.where(bp > 0, bp, own_p)


#: the tasks a step of the greedy adds, as (PSs, workers): a worker, a PS, both (the order equal gains follow)
STEPS = np.array([[0, 1], [1, 0], [1, 1]], dtype=np.int64)


def marginal_gain_allocation(times: Sequence[np.ndarray], demand_w: np.ndarray, demand_p: np.ndarray,
                             capacity: np.ndarray, free: np.ndarray, start: Sequence[tuple[int, int]],
                             shares: tuple[np.ndarray, np.ndarray] | None = None,
                             order: Sequence[int] | None = None, pairs: bool = False,
                             budget: Budget | None = None) -> dict[int, tuple[int, int]]:
    """:func:`marginal_gain_sizes` as a dict: (p, w) per job admitted, in the order admitted."""
    admitted, pw = marginal_gain_sizes(times, demand_w, demand_p, capacity, free, start, shares, order, pairs, budget)
    return dict(zip(admitted.tolist(), map(tuple, pw.tolist())))


def marginal_gain_sizes(times: Sequence[np.ndarray], demand_w: np.ndarray, demand_p: np.ndarray,
                        capacity: np.ndarray, free: np.ndarray, start: Sequence[tuple[int, int]],
                        shares: tuple[np.ndarray, np.ndarray] | None = None,
                        order: Sequence[int] | None = None, pairs: bool = False,
                        budget: Budget | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Optimus's greedy (MODELS.md §5), the one both the online policy :class:`Optimus` and the
    one-shot :func:`dlsched.policies.greedy.greedy_allocation` call: (the jobs admitted, in the order
    admitted; their (p, w) as an array), those left out getting nothing.

    ``times[i][p, w]`` is job i's estimated remaining time with p PSs and w workers (``inf`` where
    it cannot run; the array's shape bounds p and w: ``max_ps + 1, max_workers + 1``; a list of
    grids or one stack of them padded with inf). ``start[i]`` = (p0, w0) is its first allocation
    (Optimus's rule against starvation), given to
    the jobs in ``order`` (default: the list's order; e.g. by arrival) while it fits the aggregate
    ``free`` (R,); a job it does not fit waits. Then, repeatedly, the task (a worker: w + 1, or a
    PS: p + 1) of largest gain :math:`(T_i(p, w) - T_i(p', w')) / \text{share}` is added while
    it is positive and fits (a task that no longer fits is skipped: the job's other task, or
    another job's, may still fit); the share is :func:`task_shares` of ``capacity`` (R,), the
    cluster's total, unless ``shares`` = (per worker, per PS) arrays are given. Equal gains go
    to the job earlier in the list, then to a worker before a PS. With ``pairs`` a worker and a PS
    added together, (p + 1, w + 1) at the sum of both shares, is a third candidate step (an
    ablation: one-task steps stop at a local optimum where neither task alone helps but both do,
    which the authors' scheduler notes in a comment and leaves open). With a ``budget`` the tasks
    stop being added when it has expired (checked between the rounds below): the allocation so
    far is the answer (the start sizes at least, feasible at every step). Demands are >= 0, so
    what is left only shrinks.

    The steps are those of a heap of every job's candidate tasks at its current size, popped
    largest gain first (key (-gain, job, task, p, w)), without a Python step per task: in a round,
    every job's path (:func:`gain_paths`: at each size its best candidate that fits what is left
    at the round's start) is laid out at once, and the heap would pop the steps of all paths in
    the order of each step's largest key so far along its own path (a step is pushed only when the
    one before it is popped), then position; the steps are taken in that order, with what is left
    as a running sum (the same subtractions in the same order as one step after another), up to
    the first that no longer fits. That candidate would be popped and skipped, as would every one
    that does not fit a round's start (what is left only shrinks), so the next round starts from
    the sizes reached and what is left then. A round ends at a step that fits its start but not
    what the steps before it left, so every round takes a step.
    """
    share_w, share_p = shares if shares is not None else task_shares(demand_w, demand_p, capacity)
    n = len(start)
    p0w0 = np.asarray(start, dtype=np.int64).reshape(-1, 2)
    needs = p0w0[:, :1] * demand_p + p0w0[:, 1:] * demand_w
    times = _stacked(times)
    runs = np.isfinite(times[np.arange(n), p0w0[:, 0], p0w0[:, 1]]) if n else np.zeros(0, dtype=bool)
    admitted, left = admit_in_order(needs, runs, np.arange(n) if order is None else np.asarray(order, dtype=np.int64),
                                    np.asarray(free, dtype=float))
    pw = p0w0[admitted]
    dw, dp = np.asarray(demand_w, dtype=float)[admitted], np.asarray(demand_p, dtype=float)[admitted]
    demand = np.stack([dw, dp, dw + dp], axis=1)                  # (jobs, task, R)
    sw, sp = share_w[admitted], share_p[admitted]
    cost = np.stack([sw, sp, sw + sp], axis=1)                    # (jobs, task)
    while admitted.size and (budget is None or not budget.expired()):
        slot, task, gain = gain_paths(times, admitted, pw, demand, cost, left, pairs)
        if not slot.size:
            break
        seq = heap_order(slot, admitted[slot], task, gain, pw.shape[0])
        d = demand[slot[seq], task[seq]]
        run = np.cumsum(np.concatenate([left[None, :], -d]), axis=0)
        misfit = np.flatnonzero(~np.all(d <= run[:-1] + EPS, axis=1))
        taken = seq[:misfit[0]] if misfit.size else seq
        for col in range(2):
            pw[:, col] += np.bincount(slot[taken], STEPS[task[taken], col], minlength=pw.shape[0]).astype(np.int64)
        left = run[taken.size]
        if not misfit.size:
            break
    return admitted, pw


def _stacked(times: Sequence[np.ndarray]) -> np.ndarray:
    """``times`` as one (n, P, W) stack, each grid padded with inf (a size it cannot take); a stack, or an
    object read as one (``ndim`` 3, ``shape``, ``times[i, p, w]``: :class:`dlsched.policies.greedy.ScaledTimes`),
    as it is."""
    if getattr(times, "ndim", None) == 3:
        return times
    if not len(times):
        return np.full((0, 1, 1), np.inf)
    stack = np.full((len(times), max(T.shape[0] for T in times), max(T.shape[1] for T in times)), np.inf)
    for i, T in enumerate(times):
        stack[i, :T.shape[0], :T.shape[1]] = T
    return stack


def gain_paths(times: np.ndarray, jobs: np.ndarray, pw: np.ndarray, demand: np.ndarray, cost: np.ndarray,
               left: np.ndarray, pairs: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every job's path of :func:`marginal_gain_allocation` from its size ``pw[s]`` (job ``jobs[s]``
    of ``times``), as if every step were taken: at each size the task of largest positive gain
    among those whose demand fits ``left`` (ties to the worker, then the PS), until none is left.
    Returns (slot s, task, gain) per step, the steps of one job in path order."""
    P, W = times.shape[1:]
    fits = np.all(demand <= left + EPS, axis=2)                   # (jobs, task): never again once it does not fit
    cur = pw.copy()
    alive = np.flatnonzero(fits.any(axis=1))
    slots, tasks, gains = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    while alive.size:
        p, w = cur[alive, 0], cur[alive, 1]
        i = jobs[alive]
        now = times[i, p, w]
        g = np.full((alive.size, 3), -np.inf)
        for k, (dp, dw) in enumerate(STEPS.tolist()):
            ok = fits[alive, k] & (p + dp < P) & (w + dw < W) & ((p > 0) | (k == 0)) & (pairs or k < 2)
            with np.errstate(invalid="ignore", divide="ignore"):      # inf - inf, a free task: no positive gain, or inf
                g[ok, k] = (now[ok] - times[i[ok], p[ok] + dp, w[ok] + dw]) / cost[alive[ok], k]
        g[~(g > 0)] = -np.inf                                      # nan too
        k = np.argmax(g, axis=1)                                   # the first of equal gains: worker, PS, pair
        best = g[np.arange(alive.size), k]
        go = best > 0
        alive, k = alive[go], k[go]
        slots.append(alive)
        tasks.append(k)
        gains.append(best[go])
        cur[alive] += STEPS[k]
    return np.concatenate(slots), np.concatenate(tasks), np.concatenate(gains)


def heap_order(slot: np.ndarray, job: np.ndarray, task: np.ndarray, gain: np.ndarray, n_slots: int) -> np.ndarray:
    """The order a heap keyed (-gain, job, task, p, w) pops the steps of :func:`gain_paths` (listed path
    by path in order: a step is pushed when the one before it on its path is popped): by the largest
    key so far along the step's path, then by its position on the path.

    The heap pops its least key; a step whose key is below one already popped on its own path is
    pushed only after that one, so it comes right after it, before anything of larger key. The
    step's (p, w) is needed only to order steps of one job, which the position does."""
    pos = np.zeros(slot.size, dtype=np.int64)
    # the i-th step of a slot: its steps are listed in path order, one per round of gain_paths
    order = np.argsort(slot, kind="stable")
    counts = np.bincount(slot, minlength=n_slots)
    pos[order] = np.arange(slot.size) - np.repeat(np.cumsum(counts) - counts, counts)
    by_key = np.lexsort((pos, task, job, -gain))
    rank = np.empty(slot.size, dtype=np.int64)
    rank[by_key] = np.arange(slot.size)
    table = np.full((n_slots, int(pos.max()) + 1), -1, dtype=np.int64)
    table[slot, pos] = rank
    np.maximum.accumulate(table, axis=1, out=table)
    return np.lexsort((pos, table[slot, pos]))


def admit_in_order(needs: np.ndarray, runs: np.ndarray, order: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimus's start sizes (:func:`marginal_gain_allocation`): in ``order``, each job that ``runs``
    gets ``needs[i]`` if it fits what is left (every resource within EPS), else waits -> (the jobs
    admitted in order, what is left).

    The same subtractions in the same order as one job after another: the running remainders are a
    cumulative sum (``np.cumsum`` adds in sequence; a + (-b) is a - b in IEEE arithmetic), taken
    while every job fits; the first that does not fit waits, and the next round starts after it.
    With demands >= 0 what is left only shrinks, so a job that does not fit the remainder at the
    start of a round would not fit at its turn either: it is dropped at once.
    """
    cand = order[runs[order]]
    left = free.astype(float).copy()
    shrinks = not (needs < 0).any()
    taken = []
    while cand.size:
        if shrinks:
            cand = cand[np.all(needs[cand] <= left + EPS, axis=1)]
            if not cand.size:
                break
        run = np.cumsum(np.concatenate([left[None, :], -needs[cand]]), axis=0)
        bad = np.flatnonzero(~np.all(needs[cand] <= run[:-1] + EPS, axis=1))
        k = int(bad[0]) if bad.size else cand.size
        taken.append(cand[:k])
        left = run[k]
        cand = cand[k + 1:]
    return (np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)), left


# -- placement (MODELS.md §5) ------------------------------------------------------------------

def allocation_bound(times: np.ndarray, sizes: Mapping[int, tuple[int, int]], start: np.ndarray,
                     demand_w: np.ndarray, demand_p: np.ndarray, capacity: np.ndarray) -> tuple[float, float]:
    r"""(objective, certified lower bound) of the allocation problem Optimus's greedy
    (:func:`marginal_gain_allocation`) answers, for the jobs it admitted (the keys of ``sizes``):

    .. math:: \min \sum_j T_j(p_j, w_j) \quad\text{s.t.}\quad \sum_j p_j e_j + w_j d_j \le C,
              \;\; p_j \ge p^0_j,\; w_j \ge w^0_j \;(p_j = 0 \text{ when } p^0_j = 0),

    an exactly-one MCMDK over each job's sizes (``times`` a stack of [p, w] grids, inf where a job
    cannot run; ``start`` (n, 2) the first sizes): the objective at ``sizes`` and the Lagrangian
    bound of its capacity rows (:func:`dlsched.solvers.anytime.lagrangian_bound`), valid whatever
    the prices. The greedy adds one task at a time, so its answer may stop above the optimum."""
    jobs = np.fromiter(sizes, np.int64, len(sizes))
    if not jobs.size:
        return 0.0, 0.0
    pw = np.array([sizes[j] for j in jobs.tolist()], dtype=np.int64).reshape(-1, 2)
    objective = float(times[jobs, pw[:, 0], pw[:, 1]].sum())
    P, W = times.shape[1:]
    p0, w0 = start[jobs, 0][:, None, None], start[jobs, 1][:, None, None]
    pg, wg = np.arange(P)[None, :, None], np.arange(W)[None, None, :]
    ok = np.isfinite(times[jobs]) & np.where(p0 > 0, pg >= p0, pg == 0) & (wg >= w0)
    cols = np.flatnonzero(ok)
    job, cell = np.divmod(cols, P * W)
    p, w = np.divmod(cell, W)
    value = times[jobs].reshape(-1)[cols]
    keep = capacity > 0
    share = (p[:, None] * demand_p[jobs[job]][:, keep] + w[:, None] * demand_w[jobs[job]][:, keep]) / capacity[keep]
    ptr = np.searchsorted(job, np.arange(jobs.size + 1))
    bound, _ = lagrangian_bound(value, share, ptr, objective)
    return objective, min(bound, objective)


def place_principle(free: np.ndarray, demand_w: np.ndarray, demand_p: np.ndarray, n_workers: int, n_ps: int,
                    capacity: np.ndarray | None = None) -> Placement | None:
    """The fewest servers k such that each holds n_ps/k PSs and n_workers/k workers (k divides both).

    Among the servers that can take the per-server share, the fullest ones (least free capacity
    relative to ``capacity``, the largest server's by default) are used, to keep large holes
    for large jobs. None if no k works (the caller falls back to first fit).
    """
    cap = np.where(capacity > 0, capacity, 1.0) if capacity is not None else np.maximum(free.max(axis=0), 1.0)
    g = math.gcd(int(n_workers), int(n_ps)) if n_ps else int(n_workers)
    room = (free / cap).sum(axis=1)
    for k in range(1, g + 1):
        if g % k:
            continue
        wk, pk = n_workers // k, n_ps // k
        share = wk * demand_w + pk * demand_p
        ok = np.flatnonzero(np.all(free >= share - EPS, axis=1))
        if ok.size >= k:
            chosen = ok[np.argsort(room[ok], kind="stable")[:k]]
            return Placement({int(s): wk for s in chosen} if wk else {}, {int(s): pk for s in chosen} if pk else {})
    return None


def place_job(free: np.ndarray, demand_w: np.ndarray, demand_p: np.ndarray, n_workers: int, n_ps: int,
              capacity: np.ndarray | None = None) -> Placement | None:
    """The placement principle, else first fit (:func:`dlsched.sim.placement.first_fit`); None if neither fits."""
    pl = place_principle(free, demand_w, demand_p, n_workers, n_ps, capacity)
    return pl if pl is not None else first_fit(free, demand_w, demand_p, n_workers, n_ps)


# -- the policy ----------------------------------------------------------------------------------

@dataclass
class _JobModel:
    """What the policy has learnt about one job."""

    ready: float                                   # schedulable from (arrival + profiling)
    samples: list = field(default_factory=list)    # (p, w, rate) from profiling and observations ("nnls")
    measured: dict = field(default_factory=dict)   # (p, w) -> latest measured rate ("measured")
    n_seen: int = 0                                # observation rows already copied into samples
    speed: OptimusModel | Callable | None = None
    speed_key: tuple = ()
    loss: LossFit | None = None
    loss_key: int = -1
    checkpoints: dict = field(default_factory=dict)  # fraction -> (remaining rel. error, speed rel. error)


class Optimus:
    """Optimus: online-fitted loss-curve and speed models, marginal-gain allocation, placement principle (MODELS.md §5).

    Options and the choices behind them: the module docstring. ``budget_ms`` (default none: every
    allocation run to the end, as without the option) bounds each decision's wall time from the
    start of the call (docs/simulator.md, "Decision budgets and certified gaps"): the marginal-gain
    greedy stops adding tasks when it ends, and each decision records the objective and the
    certified gap of the allocation problem (:func:`allocation_bound`).
    """

    name = "optimus"

    @checked
    def __init__(self, *, slot_seconds: Annotated[float, Range(ge=MIN_SLOT_SECONDS, finite=True)] | None = 600.0,
                 criterion: Criterion = Criterion(), gamma: Annotated[float, Range(gt=0, le=1)] = 0.1,
                 min_loss_points: Annotated[int, Range(ge=1)] = 3, min_speed_points: Annotated[int, Range(ge=1)] = 5,
                 profile: Sequence[tuple[Annotated[int, Range(ge=0)], Annotated[int, Range(ge=1)]]] | None = None,
                 profile_seconds: Annotated[float, Range(ge=0, finite=True)] = 10.0,
                 default_steps: Annotated[float, Range(gt=0, finite=True)] = 1e4,
                 normalise: Literal["task", "cluster", "amount", "none"] = "cluster",
                 gain: Literal["absolute", "relative"] = "absolute",
                 models: Literal["fitted", "oracle", "oracle-speed", "oracle-steps"] = "fitted", pairs: bool = False,
                 speed_model: Literal["measured", "nnls"] = "measured", profile_points: Annotated[int, Range(ge=1)] = 8,
                 budget_ms: BudgetMs | None = None):
        self.slot_seconds = slot_seconds
        self.criterion = criterion
        self.gamma = gamma
        self.min_loss_points = int(min_loss_points)
        self.min_speed_points = int(min_speed_points)
        self.speed_model = speed_model
        if profile is None:
            profile = AUTHORS_PROFILE if speed_model == "measured" else DEFAULT_PROFILE
        self.profile = tuple((int(p), int(w)) for p, w in profile)
        self.profile_points = int(profile_points)
        self.profile_seconds = float(profile_seconds)
        self.default_steps = float(default_steps)
        self.normalise = normalise
        self.gain = gain
        self.models = models
        self.pairs = bool(pairs)
        self.decision_record = DecisionRecord(budget_ms)
        self._ctx: PolicyContext | None = None

    # -- protocol --------------------------------------------------------------------------------
    def reset(self, ctx: PolicyContext) -> None:
        self._ctx = ctx
        self.decision_record.reset()
        self._models: dict[int, _JobModel] = {}
        self._by_type: dict[str, list] = {}           # job type -> pooled (p, w, rate) samples ("nnls")
        self._of_type: dict[str, list[int]] = {}      # job type -> jobs seen, in order ("measured")
        self._fits: dict[tuple, MeasuredSpeed] = {}   # (type, measured points) -> estimate ("measured")
        self._finished: dict[str, list[float]] = {}   # job type -> lengths (steps) of finished jobs
        self._estimate: dict[int, float] = {}         # latest estimated total steps of active jobs
        self._stats: dict[int, dict] = {}             # finished or running job -> checkpoint errors
        self._final_speed: dict[int, tuple[str, float]] = {}  # finished job -> (type, error of its last fit)
        self._capacity = ctx.cluster.total()
        self._jobs = None                             # the trace whose per-job arrays _index holds
        self._medians: dict[tuple, float] = {}        # (type or None, finished count) -> median length
        self._held: dict[int, tuple] = {}             # job -> (placement, (p, w), servers, rows held) of its last one

    #: the one-size shortcut (:meth:`_one_size_times`); off = every job by :meth:`_times` (tests compare the two)
    one_size_shortcut = True

    def _index(self, state: ClusterState) -> None:
        """Per-job arrays of the trace, made on its first call: start sizes, grid bounds, one-size jobs."""
        if self._jobs is state.jobs:
            return
        jobs = self._jobs = state.jobs
        n = len(jobs)
        ps = np.array([j.uses_ps for j in jobs], dtype=bool)
        self._p0 = ps.astype(np.int64)
        self._it = np.array([j.iterations for j in jobs], dtype=float)
        self._w0 = np.array([j.min_workers for j in jobs], dtype=np.int64)
        self._P = np.where(ps, [j.max_ps for j in jobs], 0).astype(np.int64)
        self._W = np.array([j.max_workers for j in jobs], dtype=np.int64)
        # one (p, w) only: no PS or one PS, a fixed worker count; no loss curve (the remaining steps are the prior's)
        self._one = np.where(ps, self._P == 1, True) & (self._w0 == self._W) & np.array([j.convergence is None for j in jobs], dtype=bool)
        types = sorted({j.job_type for j in jobs})
        self._types = types
        self._type_of = np.array([types.index(j.job_type) for j in jobs] if len(types) > 1 else [0] * n, dtype=np.int64)
        self._ready_at = np.full(n, np.inf)
        self._next_checkpoint = np.full(n, CHECKPOINTS[0])
        self._version = np.zeros(n, dtype=np.int64)   # bumped when a job's measured speeds change
        self._rate = np.full(n, np.nan)               # its model's rate at its one size, of version _rate_version
        self._rate_version = np.full(n, -1, dtype=np.int64)
        self._has_model = np.zeros(n, dtype=bool)

    def _completed(self, state: ClusterState, events: Sequence[Event]) -> None:
        """The lengths of the jobs that finished (the priors) and their speed fits' last errors."""
        for ev in events:
            if ev.kind == "completion" and ev.job is not None:
                job = state.jobs[ev.job]
                self._finished.setdefault(job.job_type, []).append(float(job.iterations))
                self._estimate.pop(ev.job, None)
                if ev.job in self._models:
                    self._final_speed[ev.job] = (job.job_type, self._speed_error(ev.job, job))

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> Decision:
        clock = self.decision_record.clock()             # the decision's budget runs from here
        self._completed(state, events)
        self._index(state)
        active = np.asarray(state.active, dtype=np.int64)
        models, observed = self._models, state.observations.get
        for j in active.tolist():
            # only a new job, or one with new speed samples, has anything to learn (as _learn itself tests)
            m = models.get(j)
            if m is None or ((o := observed(j)) is not None and len(o.speed) > m.n_seen):
                self._learn(j, state)
        at = self._ready_at[active]
        now = state.time + 1e-9
        idx = active[at <= now]
        later = at[at > now]
        idx = idx[np.lexsort((idx, state.arrival[idx]))]           # by arrival, then index
        times = self._all_times(idx, state)
        progress = (self._it[idx] - state.remaining[idx]) / self._it[idx]
        for j in idx[progress >= self._next_checkpoint[idx]].tolist():   # a checkpoint reached: record it
            self._record(j, state)
            done = len(self._models[j].checkpoints)
            self._next_checkpoint[j] = CHECKPOINTS[done] if done < len(CHECKPOINTS) else np.inf
        start = list(zip(self._p0[idx].tolist(), self._w0[idx].tolist()))
        dw, dp = state.demand_w[idx], state.demand_p[idx]
        bottleneck = None
        if self.normalise == "cluster" and idx.size:
            # the cluster's dominant resource: the largest share of the capacity the ready jobs ask at their start sizes
            p0w0 = np.asarray(start, dtype=float).reshape(-1, 2)
            asked = p0w0[:, :1] * dp + p0w0[:, 1:] * dw
            bottleneck = int(np.argmax(asked.sum(axis=0) / np.where(self._capacity > 0, self._capacity, np.inf)))
        # gain="relative" (an ablation, not Optimus): each job's times in units of its remaining time at its fastest size
        scaled = times if self.gain == "absolute" else np.array([T / _fastest(T) for T in times]).reshape(times.shape)
        divisor = self.normalise if self.normalise in ("amount", "none") else "share"
        shares = task_shares(dw, dp, self._capacity, bottleneck, divisor)
        budgeted = self.decision_record.seconds is not None
        sizes = marginal_gain_allocation(scaled, dw, dp, self._capacity, self._capacity, start, shares, pairs=self.pairs,
                                         budget=clock if budgeted else None)
        if budgeted:
            self.decision_record.record(*allocation_bound(scaled, sizes, np.asarray(start, dtype=np.int64).reshape(-1, 2),
                                                          dw, dp, self._capacity))
        placements = self._place(state, idx, sizes, times, start)
        return Decision(placements, next_call=float(later.min()) if later.size else None)

    def _all_times(self, idx: np.ndarray, state: ClusterState) -> np.ndarray:
        """T_j of every job of ``idx`` (:meth:`_times`), stacked and padded with inf (a size the job cannot take).

        One-size jobs (:meth:`_one_size_times`) are computed together once some job has finished
        (before that the prior of a job's remaining steps is the other jobs' estimates, made one
        job after another).
        """
        out = np.full((idx.size, int(self._P[idx].max(initial=0)) + 1, int(self._W[idx].max(initial=0)) + 1), np.inf)
        fast = self._one[idx] if (self.one_size_shortcut and self.models == "fitted" and self.speed_model == "measured"
                                  and any(self._finished.values())) else np.zeros(idx.size, dtype=bool)
        for i in np.flatnonzero(~fast).tolist():
            T = self._times(int(idx[i]), state)
            out[i, :T.shape[0], :T.shape[1]] = T
        if fast.any():
            rows = np.flatnonzero(fast)
            jobs = idx[rows]
            out[rows, self._p0[jobs], self._w0[jobs]] = self._one_size_times(jobs, state)
        return out

    def _one_size_times(self, jobs: np.ndarray, state: ClusterState) -> np.ndarray:
        """T_j at the one size of each job of ``jobs`` as :meth:`_times` computes it, all at once:
        R̂_j from the prior (:meth:`_remaining`: no loss curve; the median of the finished jobs of
        its type, else of all, kept per count of finished jobs) over f_j at its size, read again
        only when the job's measured speeds changed (:meth:`_speed_model`)."""
        done = self._it[jobs] - state.remaining[jobs]
        totals = np.array([self._prior_steps(t) for t in range(len(self._types))])
        total = totals[self._type_of[jobs]]
        self._estimate.update(zip(jobs.tolist(), np.maximum(total, done).tolist()))
        rem = np.maximum(np.maximum(total - done, 0.01 * np.maximum(done, 1.0)), 1.0)
        for j in jobs[self._rate_version[jobs] != self._version[jobs]].tolist():
            job = state.jobs[j]
            f = self._speed_model(j, job)
            self._has_model[j] = f is not None
            if f is not None:
                self._rate[j] = _rates(f, np.array([max(int(self._p0[j]), 1)]), np.array([int(self._w0[j])]))[0, 0]
            self._rate_version[j] = self._version[j]
        rate = self._rate[jobs]
        with np.errstate(divide="ignore", invalid="ignore"):
            timed = np.where(rate > 0, rem / np.where(rate > 0, rate, 1.0), np.inf)
        return np.where(self._has_model[jobs], timed, rem)

    def _prior_steps(self, t: int) -> float:
        """The prior total steps of a job of type ``t`` without a loss fit, once some job has finished
        (:meth:`_remaining`): the median length of the finished jobs of its type, else of all."""
        same = self._finished.get(self._types[t])
        key = (t, len(same)) if same else (None, sum(len(v) for v in self._finished.values()))
        if key not in self._medians:
            pool = same or [x for v in self._finished.values() for x in v]
            self._medians[key] = float(np.median(pool))
        return self._medians[key]

    # -- learning ----------------------------------------------------------------------------------
    def _learn(self, j: int, state: ClusterState) -> None:
        """Create the job's model on first sight (profiling), and copy its new speed samples."""
        if self.speed_model == "measured":
            return self._learn_measured(j, state)
        m = self._models.get(j)
        job = state.jobs[j]
        if m is None:
            m = self._models[j] = _JobModel(ready=float(state.arrival[j]))
            if self.profile:
                m.ready += self.profile_seconds
                for p, w in self.profile:
                    p, w = self._clip(job, p, w)
                    rate = self._measure(job, p, w)
                    if rate > 0:
                        m.samples.append((max(p, 1), w, rate))
            self._by_type.setdefault(job.job_type, []).extend(m.samples)
            self._ready_at[j] = m.ready
        obs = state.observations.get(j)
        if obs is not None and len(obs.speed) > m.n_seen:
            new = [(max(int(p), 1), int(w), float(r)) for p, w, r in obs.speed[m.n_seen:] if r > 0 and w > 0]
            m.samples.extend(new)
            self._by_type.setdefault(job.job_type, []).extend(new)
            m.n_seen = len(obs.speed)

    def _learn_measured(self, j: int, state: ClusterState) -> None:
        """``speed_model="measured"``: on first sight, the sizes its type's earlier jobs measured
        (mean per size), then profiling at unmeasured sizes of ``profile`` until it knows
        ``profile_points``; afterwards the latest reported rate of every size it runs at."""
        m = self._models.get(j)
        job = state.jobs[j]
        if m is None:
            m = self._models[j] = _JobModel(ready=float(state.arrival[j]))
            known: dict[tuple[int, int], list[float]] = {}
            for k in self._of_type.get(job.job_type, []):
                for key, r in self._models[k].measured.items():
                    known.setdefault(key, []).append(r)
            m.measured = {key: float(np.mean(v)) for key, v in known.items()}
            self._of_type.setdefault(job.job_type, []).append(j)
            sizes = list(dict.fromkeys(self._clip(job, p, w) for p, w in self.profile))
            sizes = [s for s in sizes if (max(s[0], 1), s[1]) not in m.measured]
            if sizes and len(m.measured) < self.profile_points:
                m.ready += self.profile_seconds
                rng = np.random.default_rng([int(self._ctx.seed), j])
                for i in rng.permutation(len(sizes)):
                    if len(m.measured) >= self.profile_points:
                        break
                    p, w = sizes[i]
                    rate = self._measure(job, p, w)
                    if rate > 0:
                        m.measured[(max(p, 1), w)] = rate
            self._ready_at[j] = m.ready
            self._version[j] += 1
        obs = state.observations.get(j)
        if obs is not None and len(obs.speed) > m.n_seen:
            for p, w, r in obs.speed[m.n_seen:]:
                if r > 0 and w > 0:
                    m.measured[(max(int(p), 1), int(w))] = float(r)
            m.n_seen = len(obs.speed)
            self._version[j] += 1

    @staticmethod
    def _clip(job: Job, p: int, w: int) -> tuple[int, int]:
        """A profiling size within the job's limits (no PS for an all-reduce job)."""
        return (min(p, job.max_ps) if job.uses_ps else 0), max(min(w, job.max_workers), job.min_workers)

    def _measure(self, job: Job, p: int, w: int) -> float:
        """A profiling run's rate: the simulator's speed source on a compact placement (server 0)."""
        pl = Placement({0: w}, {0: p} if p else {})
        return float(self._ctx.speed.rate(job, pl, self._ctx.cluster))

    def _true_speed(self, job: Job) -> Callable:
        """The speed source's rate of the job at (p, w), as a callable on arrays (``models="oracle"``):
        its vectorised ``speeds`` when it has one (TableSpeed), else one compact placement per point."""
        speeds = getattr(self._ctx.speed, "speeds", None)
        if callable(speeds):
            return lambda p, w: speeds(job.job_type, p, w)
        one = np.vectorize(lambda p, w: self._measure(job, int(p) if job.uses_ps else 0, int(w)), otypes=[float])
        return lambda p, w: one(p, w)

    def _speed_model(self, j: int, job: Job):
        """f_j(p, w) as a callable on arrays, refitted when its sample set grew (module docstring, 2)."""
        m = self._models[j]
        if self.models in ("oracle", "oracle-speed"):
            if m.speed is None:
                m.speed = self._true_speed(job)
            return m.speed
        if self.speed_model == "measured":
            return self._measured_model(m, job)
        own = m.samples
        pooled = self._by_type.get(job.job_type, [])
        key = (len(own), len(pooled) if len({(p, w) for p, w, _ in own}) < self.min_speed_points else -1)
        if m.speed is not None and key == m.speed_key:
            return m.speed
        m.speed_key = key
        for pts in (own, pooled):
            if len({(p, w) for p, w, _ in pts}) >= self.min_speed_points:
                a = np.asarray(pts, dtype=float)
                model = fit_sync_points(a[:, 0], a[:, 1], a[:, 2], _batch(job))
                m.speed = model.speed
                return m.speed
        if own:
            a = np.asarray(own, dtype=float)
            per = float(np.mean(a[:, 2] / np.sqrt(a[:, 0] * a[:, 1])))
            m.speed = lambda p, w: per * np.sqrt(np.maximum(p, 1) * w)
        else:
            m.speed = None
        return m.speed

    def _measured_model(self, m: _JobModel, job: Job):
        """The authors' estimate of the job (:class:`MeasuredSpeed`), shared by jobs of its type that
        measured the same sizes at the same rates; below ``min_speed_points`` sizes the √(p w) prior
        (module docstring, 2) away from the measured sizes."""
        key = (job.job_type, tuple(sorted(m.measured.items())))
        est = self._fits.get(key)
        if est is None:
            est = self._fits[key] = MeasuredSpeed(m.measured, _batch(job), self.min_speed_points)
        if est.fit is not None or not est.points:
            return est if est.points else None
        per = float(np.mean([r / math.sqrt(p * w) for (p, w), r in est.points.items()]))

        def prior(p, w):
            p, w = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(w, dtype=float))
            known = est(p, w)
            return np.where(np.isnan(known), per * np.sqrt(np.maximum(p, 1) * w), known)
        return prior

    def _remaining(self, j: int, state: ClusterState) -> float:
        """R̂_j = k* − k_j from the fitted loss curve, or the prior (module docstring, 1)."""
        job = state.jobs[j]
        done = _steps_done(state, j)
        if self.models in ("oracle", "oracle-steps"):
            rem = float(state.remaining[j])
            self._estimate[j] = done + rem
            return max(rem, 1e-9)
        m = self._models[j]
        obs = state.observations.get(j)
        pts = obs.loss if obs is not None else []
        # refit when the points grew by a tenth (at least one): the estimate moves slowly, fits cost
        if len(pts) >= self.min_loss_points and len(pts) >= m.loss_key + max(1, m.loss_key // 10):
            a = np.asarray(pts, dtype=float)
            good = a[:, 1] > 0
            if good.sum() >= 2:
                m.loss = fit_loss_curve(a[good, 0], a[good, 1], gamma=self.gamma)
            m.loss_key = len(pts)
        if m.loss is not None:
            total = m.loss.converged_step(_criterion(job, self.criterion))
        else:
            same = self._finished.get(job.job_type)
            every = [x for v in self._finished.values() for x in v]
            others = [v for k, v in self._estimate.items() if k != j]
            pool = same or every or others
            total = float(np.median(pool)) if pool else self.default_steps
        self._estimate[j] = max(total, done)
        return max(total - done, 0.01 * max(done, 1.0), 1.0)  # still running: it has not converged yet

    def _times(self, j: int, state: ClusterState) -> np.ndarray:
        """T_j[p, w] = R̂_j / f_j(p, w) over 0..max_ps × 0..max_workers (inf where it cannot run)."""
        job = state.jobs[j]
        P, W = (job.max_ps if job.uses_ps else 0), job.max_workers
        T = np.full((P + 1, W + 1), np.inf)
        f = self._speed_model(j, job)
        rem = self._remaining(j, state)
        p = np.arange(1 if job.uses_ps else 0, P + 1)
        w = np.arange(job.min_workers, W + 1)
        if f is None:  # nothing known yet: it can run at its start size, with no gain from growing
            T[p[0], w[0]] = rem
            return T
        rate = _rates(f, np.maximum(p, 1), w)
        with np.errstate(divide="ignore"):
            T[np.ix_(p, w)] = np.where(rate > 0, rem / np.where(rate > 0, rate, 1.0), np.inf)
        return T

    # -- placement -------------------------------------------------------------------------------
    def _place(self, state: ClusterState, idx: np.ndarray, sizes: Mapping[int, tuple[int, int]], times: np.ndarray,
               start: Sequence[tuple[int, int]]) -> dict[int, Placement]:
        """Kept jobs first, then the others, largest first; shrink a job that does not fit (module docstring, 4).

        ``sizes`` maps a row i of ``idx`` (job ``idx[i]``) to its (p, w); ``times[i]`` and ``start[i]``
        are that job's. What a kept job holds is remembered with its placement, and the kept jobs'
        holdings are taken off the capacity in one ``np.subtract.at`` (one subtraction per server
        and resource, in the same order as one job after another).
        """
        free = state.cluster.capacity.astype(float).copy()
        cap = state.cluster.capacity.max(axis=0)
        out: dict[int, Placement] = {}
        moved = []
        servers, rows = [], []
        held, allocated, jobs = self._held, state.allocation.get, idx.tolist()
        for i, pw in sizes.items():
            j = jobs[i]
            old = allocated(j)
            if old is None:
                moved.append(i)
                continue
            h = held.get(j)
            if h is None or h[0] is not old:
                h = held[j] = (old, (old.n_ps, old.n_workers), *usage(old, state.demand_w[j], state.demand_p[j]))
            if h[1] == pw:
                servers.append(h[2])
                rows.append(h[3])
                out[j] = old
            else:
                moved.append(i)
        if servers:
            np.subtract.at(free, np.concatenate(servers), np.concatenate(rows))
        for j in [j for j in held if j not in out]:
            del held[j]
        safe = np.where(self._capacity > 0, self._capacity, 1.0)
        share = {i: float(np.max((sizes[i][0] * state.demand_p[idx[i]] + sizes[i][1] * state.demand_w[idx[i]]) / safe))
                 for i in moved}
        for i in sorted(moved, key=lambda i: (-share[i], int(idx[i]))):
            j = int(idx[i])
            p, w = sizes[i]
            p0, w0 = start[i]
            T = times[i]
            while True:
                pl = place_job(free, state.demand_w[j], state.demand_p[j], w, p, cap)
                if pl is not None:
                    srv, use = usage(pl, state.demand_w[j], state.demand_p[j])
                    free[srv] -= use
                    out[j] = pl
                    break
                # give back the task whose loss of time per share is the smallest
                cand = []
                if w > w0:
                    cand.append(((T[p, w - 1] - T[p, w]), 1))
                if p > p0:
                    cand.append(((T[p - 1, w] - T[p, w]), 0))
                if not cand:
                    break  # not even the start size fits now: the job waits
                if min(cand)[1]:
                    w -= 1
                else:
                    p -= 1
        return out

    # -- estimation errors (statistics only: reads the truth) -------------------------------------
    def _record(self, j: int, state: ClusterState) -> None:
        job = state.jobs[j]
        progress = _steps_done(state, j) / job.iterations
        m = self._models[j]
        for c in CHECKPOINTS:
            if progress >= c and c not in m.checkpoints:
                true_rem = float(state.remaining[j])
                est_rem = max(self._estimate.get(j, 0.0) - _steps_done(state, j), 0.0)
                m.checkpoints[c] = (abs(est_rem - true_rem) / true_rem if true_rem > 0 else math.nan,
                                    self._speed_error(j, job))
        if m.checkpoints:
            self._stats[j] = {"job_type": job.job_type, **{c: v for c, v in m.checkpoints.items()}}

    def _speed_error(self, j: int, job: Job) -> float:
        """Median relative error of f_j against the measured table (TableSpeed) or the speed source's grid."""
        f = self._speed_model(j, job)
        if f is None:
            return math.nan
        tables = getattr(self._ctx.speed, "tables", None)
        tb = tables.get(job.job_type) if isinstance(tables, Mapping) else None
        if tb is not None and hasattr(tb, "g"):
            keep = (tb.p <= max(job.max_ps, 1)) & (tb.w <= job.max_workers)
            p, w, truth = tb.p[keep], tb.w[keep], tb.g[keep]
        else:
            grid = [(p, w) for p in range(1, max(job.max_ps, 1) + 1) for w in range(job.min_workers, job.max_workers + 1)]
            p, w = (np.array(x, dtype=float) for x in zip(*grid))
            truth = np.array([self._measure(job, int(a) if job.uses_ps else 0, int(b)) for a, b in grid])
        ok = truth > 0
        if not ok.any():
            return math.nan
        est = np.asarray(f(p[ok], w[ok]), dtype=float)
        return float(np.median(np.abs(est - truth[ok]) / truth[ok]))

    def error_records(self) -> list[dict]:
        """One row per job seen: its type, the relative errors of its remaining-steps estimate
        (``remaining@0.25`` ...) and of its speed fit (``speed@0.25`` ...) at each checkpoint it
        reached (a checkpoint is taken at the first call at or past it, so a job that ends between
        two calls misses it), and of the speed fit it had at completion (``speed@end``)."""
        rows = []
        for j in sorted(set(self._stats) | set(self._final_speed)):
            st = self._stats.get(j, {})
            row = {"job": j, "job_type": st.get("job_type") or self._final_speed[j][0]}
            for c in CHECKPOINTS:
                if c in st:
                    row[f"remaining@{c}"], row[f"speed@{c}"] = st[c]
            if j in self._final_speed:
                row["speed@end"] = self._final_speed[j][1]
            rows.append(row)
        return rows

    def model_errors(self) -> dict:
        """Medians over jobs of :meth:`error_records` (:func:`summarise_errors`)."""
        return summarise_errors(self.error_records())


#: the named ablations of Optimus (not Optimus; the results log, docs/results/index.md):
#: policy name -> constructor options
ABLATIONS: dict[str, dict] = {
    "optimus-oracle": {"models": "oracle"},      # the true remaining steps and speeds instead of the fits
    "optimus-relative": {"gain": "relative"},    # the gain as a fraction of the job's remaining time
    "optimus-pairs": {"pairs": True},            # a worker and a PS may be added together
    "optimus-oracle-pairs": {"models": "oracle", "pairs": True},
    "optimus-oracle-speed-pairs": {"models": "oracle-speed", "pairs": True},
    "optimus-nnls": {"speed_model": "nnls"},     # the earlier estimator: NNLS on 8 own profiling sizes + samples
}


def make_ablation(name: str, **options) -> Optimus:
    """A fresh Optimus with the options of :data:`ABLATIONS` [name] (and ``options``), named ``name``."""
    if name not in ABLATIONS:
        raise InputError("<argument>", "Optimus ablation", f"one of {', '.join(ABLATIONS)}", name)
    pol = Optimus(**{**ABLATIONS[name], **options})
    pol.name = name
    return pol


def summarise_errors(rows: Sequence[Mapping]) -> dict:
    """Median relative errors over the rows of :meth:`Optimus.error_records` (of one run or many):
    ``remaining[c]`` and ``speed[c]`` at each checkpoint c with the count ``n[c]``, and per job
    type the speed fit at completion, ``speed_by_type``."""
    out: dict = {"remaining": {}, "speed": {}, "n": {}, "speed_by_type": {}}
    for c in CHECKPOINTS:
        out["remaining"][c] = _median([r[f"remaining@{c}"] for r in rows if f"remaining@{c}" in r])
        out["speed"][c] = _median([r[f"speed@{c}"] for r in rows if f"speed@{c}" in r])
        out["n"][c] = sum(f"remaining@{c}" in r for r in rows)
    for t in sorted({r["job_type"] for r in rows if "speed@end" in r}):
        out["speed_by_type"][t] = _median([r["speed@end"] for r in rows if r["job_type"] == t and "speed@end" in r])
    return out


def _median(xs) -> float:
    xs = [x for x in xs if x == x]
    return float(np.median(xs)) if xs else math.nan


def _rates(f: Callable, p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """f(p, w) over the grid p × w (indexing [p, w]), as floats."""
    pp, ww = np.meshgrid(p, w, indexing="ij")
    return np.asarray(f(pp.ravel().astype(float), ww.ravel().astype(float)), dtype=float).reshape(pp.shape)


def _fastest(T: np.ndarray) -> float:
    """The smallest finite entry of T (1 if none): the remaining time at the fastest size."""
    fin = T[np.isfinite(T)]
    return float(fin.min()) if fin.size and fin.min() > 0 else 1.0


def _steps_done(state: ClusterState, j: int) -> float:
    """Steps the job has trained: the count every training job reports (iterations − remaining)."""
    return float(state.jobs[j].iterations - state.remaining[j])


def _criterion(job: Job, default: Criterion) -> Criterion:
    d, w = job.meta.get("convergence_delta"), job.meta.get("convergence_window")
    return Criterion(float(d), float(w)) if d and w else default


def _batch(job: Job) -> float:
    """The global batch M in f(p, w): the job's own (``meta["batch"]``), else its type's measured batch, else 1."""
    if "batch" in job.meta:
        return float(job.meta["batch"])

    return float(MEASURED_BATCH.get(job.job_type, 1.0))

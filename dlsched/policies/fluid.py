r"""The fluid LP of the active jobs: each job's share of the cluster until the next completion,
and the ``fluid`` policy (:class:`FluidPolicy`) that takes its first sizes from those shares.

A relaxation of the scheduling problem of the jobs in the system now, with no further arrivals,
solved at every call of the ``fluid`` policy. The
jobs finish in a given order (shortest remaining time first, heSRPT's order), which cuts time into
phases: phase k = 0..m-1 lasts :math:`t_k` and ends when the job of rank k completes, so job i is
in the system during phases :math:`0..\rho_i` (:math:`\rho_i` its rank). Within a phase a job may
time-share its configurations c = (p, w) (the fluid relaxation of integral sizes): :math:`y_{ikc}
\ge 0` is the time it runs c in phase k. With :math:`T_{ic}` its remaining time at c and
:math:`u_{cr}` the amount of resource r that c holds,

.. math::

    \min \sum_k (m - k)\, t_k  \quad\text{(the sum of the completion times)}
    \quad\text{s.t.}\quad
    \sum_c y_{ikc} \le t_k \;\; (k \le \rho_i), \qquad
    \sum_{i, c} u_{icr}\, y_{ikc} \le C_r\, t_k, \qquad
    \sum_{k \le \rho_i} \sum_c y_{ikc} / T_{ic} \ge 1.

Only each job's Pareto-efficient configurations enter (no other is as fast with no more of every
resource); the others would never be used. The order is fixed, so the LP's value is that of the
best fluid schedule in this order, not a bound on every schedule. Phase 0 gives job i the average
dominant share :math:`\theta_i = \max_r \sum_c u_{icr} y_{i0c} / (C_r t_0)` of the cluster until
the next completion: the shares :func:`fluid_shares` returns.
"""

from __future__ import annotations

from typing import Annotated, Sequence

import numpy as np

from dlsched.arguments import Range, checked
from dlsched.instance.smd import SMDInstance
from dlsched.policies.budget import BudgetMs, DecisionRecord
from dlsched.policies.greedy import MAX_ALPHA, GreedyView, SRPTGreedyPolicy, tau_grid
from dlsched.sim.placement import PlacerName


def pareto_configs(T: np.ndarray, d: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Flat indices into ``T[p, w]`` of the finite configurations that no other beats: as fast or
    faster with no more of any resource (use :math:`p e + w d`), and strictly better in one."""
    flat = np.flatnonzero(np.isfinite(T))
    p, w = np.divmod(flat, T.shape[1])
    use = p[:, None] * e + w[:, None] * d
    t = T.flat[flat]
    # weak[a, b]: b is at least as good as a in time and every resource; strict: better in one
    weak = (t[None, :] <= t[:, None]) & np.all(use[None, :, :] <= use[:, None, :], axis=2)
    strict = (t[None, :] < t[:, None]) | np.any(use[None, :, :] < use[:, None, :], axis=2)
    return flat[~np.any(weak & strict, axis=1)]


def fluid_shares(times: Sequence[np.ndarray], d: np.ndarray, e: np.ndarray, capacity: np.ndarray,
                 order: Sequence[int], configs: Sequence[np.ndarray] | None = None,
                 time_limit: float | None = None) -> tuple[np.ndarray, float] | None:
    """(θ, the LP's value in seconds) for jobs i = 0..m-1 completing in ``order`` (None if HiGHS
    finds no optimum, within ``time_limit`` seconds when given). ``times[i][p, w]`` is job i's
    remaining time at p PSs and w workers (inf where it cannot run); ``d``, ``e`` (m, R) a worker's and a PS's demands; ``configs[i]`` optionally the
    :func:`pareto_configs` of job i (they depend on the time only through its scale, so callers
    cache them). A job with no finite time, or not in ``order`` (its ``times`` and ``configs`` entries
    are not read), gets θ = 0 and no part in the LP."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    m = len(times)
    theta = np.zeros(m)
    if configs is None:
        configs = [pareto_configs(T, d[i], e[i]) for i, T in enumerate(times)]
    live = [i for i in order if len(configs[i])]
    if not live:
        return theta, 0.0
    n = len(live)
    C = np.array([len(configs[i]) for i in live])
    phases = np.arange(1, n + 1)                       # the job of rank k is present in phases 0..k
    flat = np.concatenate([configs[i] for i in live])
    T = np.concatenate([times[i].flat[configs[i]] for i in live])
    W = np.array([times[i].shape[1] for i in live])
    p, w = np.divmod(flat, np.repeat(W, C))
    job_of_cfg = np.repeat(np.arange(n), C)
    dem_w, dem_p = np.asarray(d, float)[live], np.asarray(e, float)[live]
    use = p[:, None] * dem_p[job_of_cfg] + w[:, None] * dem_w[job_of_cfg]
    # the time unit is the shortest remaining time, so that speeds are at most 1 and t_k of order 1
    unit = T.min()

    # the y variables, job by job, phase-major within a job: (job, phase, configuration)
    per_job = phases * C
    nv = int(per_job.sum())
    job = np.repeat(np.arange(n), per_job)
    local = np.arange(nv) - np.repeat(np.cumsum(per_job) - per_job, per_job)
    k = local // C[job]
    cfg = (np.cumsum(C) - C)[job] + local % C[job]
    col = n + np.arange(nv)

    pair = (np.cumsum(phases) - phases)[job] + k      # row of (job, phase): one configuration at a time
    n_pairs = int(phases.sum())
    pair_k = np.concatenate([np.arange(q) for q in phases])
    res = np.flatnonzero(np.asarray(capacity) > 0)
    frac = use[:, res] / np.asarray(capacity, float)[res]          # (configs, resources) share of the cluster
    res_rows = n_pairs + k[:, None] * res.size + np.arange(res.size)
    vals_r = frac[cfg]
    nz = vals_r > 0
    work_row = n_pairs + n * res.size + job
    rows = np.concatenate([pair, np.arange(n_pairs), res_rows[nz],
                           n_pairs + np.arange(n * res.size), work_row])
    cols = np.concatenate([col, pair_k, np.broadcast_to(col[:, None], nz.shape)[nz],
                           np.repeat(np.arange(n), res.size), col])
    vals = np.concatenate([np.ones(nv), -np.ones(n_pairs), vals_r[nz],
                           -np.ones(n * res.size), -unit / T[cfg]])
    n_rows = n_pairs + n * res.size + n
    A = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n + nv))
    b = np.concatenate([np.zeros(n_pairs + n * res.size), -np.ones(n)])
    cost = np.concatenate([n - np.arange(n, dtype=float), np.zeros(nv)])
    sol = linprog(cost, A_ub=A, b_ub=b, bounds=(0, None), method="highs",
                  options={} if time_limit is None else {"time_limit": float(time_limit)})
    if sol.status != 0:
        return None
    t0 = sol.x[0]
    first = k == 0
    avg = np.zeros((n, res.size))
    np.add.at(avg, job[first], sol.x[col[first], None] * frac[cfg[first]])
    # HiGHS returns the y within its feasibility tolerance (-1e-13 seen): a share is in [0, 1]
    theta[live] = np.clip(avg.max(axis=1) / t0, 0.0, 1.0)
    return theta, float(sol.fun) * unit


def pareto_of(inst: SMDInstance, j: int) -> np.ndarray:
    """:func:`pareto_configs` of job j's τ grid (:func:`dlsched.policies.greedy.tau_grid`), cached with
    its configurations (the Pareto sizes do not depend on the remaining iterations)."""
    return inst.cached(("pareto", inst._config_key(j)), lambda: pareto_configs(tau_grid(inst, j), inst.d[j], inst.e[j]))


class FluidPolicy(SRPTGreedyPolicy):
    """The fluid LP of the active jobs (shortest first, no further arrivals) gives each its share of the cluster until the next completion, then srpt-greedy's fill (not a seed paper's).

    :func:`~dlsched.policies.greedy.greedy_allocation` with the shares of the fluid LP (:func:`fluid_shares`): at
    every call the LP above over the active jobs' Pareto-efficient sizes, each job's average
    dominant share θ in its first phase, the fastest (p, w) within θ as first size, what is left
    filled by ``srpt-greedy``'s gains (``alpha``, ``pairs``). Unlike
    :class:`~dlsched.policies.greedy.HeSRPTPolicy` it uses every job's own measured speedup curve
    instead of one k^p; DL2's warm-up teacher (docs/dl2.md, "The fluid teacher").

    ``budget_ms`` bounds each decision (docs/simulator.md, "Decision budgets and certified gaps"):
    the LP gets what remains of it, and when it is not solved in time the jobs of the last LP
    solved keep their shares from it, the others start at srpt-greedy's first size (one PS and
    the fewest workers) before the same fill. The policy's model is the LP, which HiGHS solves to
    optimality: a decision taken from the LP records gap 0 (and the LP's value as its objective),
    one that missed it records none.

    ``lp_jobs`` (default none: every active job) limits the LP to that many jobs, the first in the
    order (the shortest remaining at their fastest size); the others start at their first size
    before the fill, as when no LP is solved. The LP's size grows with the square of its jobs
    (a phase per job): with DL2's mix HiGHS takes 0.3 s at 25 jobs, 5 s at 50 and 78 s at 100
    (docs/results/decision-scale.md), so a decision over thousands of active jobs takes ``lp_jobs``.
    The decision's objective and gap are then those of the LP of its ``lp_jobs`` jobs.
    """

    name = "fluid"

    @checked
    def __init__(self, inst: SMDInstance | None = None, placer: PlacerName = "first_fit",
                 alpha: Annotated[float, Range(ge=0, le=MAX_ALPHA)] = 2.0, pairs: bool = True,
                 budget_ms: BudgetMs | None = None, lp_jobs: Annotated[int, Range(ge=1)] | None = None):
        super().__init__(inst, placer, alpha=alpha, start="shortest", pairs=pairs)
        self.options["shares"] = "fluid"
        self.decision_record = DecisionRecord(budget_ms)
        self.lp_jobs = None if lp_jobs is None else int(lp_jobs)

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.decision_record.reset()
        self.last_theta: dict[int, float] = {}       # view job -> θ of the last LP solved (under a budget)

    def allocate(self, inst: SMDInstance, active: np.ndarray) -> np.ndarray:
        self.clock = self.decision_record.clock()      # the decision's budget runs from here
        return super().allocate(inst, active)

    def shares(self, inst: SMDInstance):
        """``options["shares"] = "fluid"``: θ of :func:`fluid_shares` for the jobs of the view completing in
        the order given, the first ``lp_jobs`` of them when set (Pareto sizes kept with ``inst``); under
        a budget, the last LP's θ when it is not solved in time (θ = 0 leaves a job at its first size)."""
        def theta(view: GreedyView, order):
            lp_order = order if self.lp_jobs is None else order[:self.lp_jobs]
            times, configs = [None] * view.jobs.size, [None] * view.jobs.size      # read for lp_order only
            for i in lp_order:
                times[i], configs[i] = view.times(i), pareto_of(inst, int(view.jobs[i]))
            lp = fluid_shares(times, view.d, view.e, view.capacity, lp_order, configs, self.clock.seconds_for_solver())
            if lp is not None:
                self.decision_record.record(lp[1], lp[1])     # an LP optimum is its own bound
                if self.decision_record.seconds is not None:
                    self.last_theta = dict(zip(view.jobs.tolist(), lp[0].tolist()))
                return lp[0]
            if self.decision_record.seconds is None:
                return None
            kept = np.array([self.last_theta.get(j, 0.0) for j in view.jobs.tolist()])
            return kept if kept.any() else None
        return theta

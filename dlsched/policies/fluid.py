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

When the LP holds only the first m of the n active jobs (``lp_jobs``, or under a budget), the
n - m jobs behind them enter as one aggregate job A (:class:`Rest`, :func:`rest_of`): their total
work at their first sizes (one PS, the fewest workers: the size the fill starts them at), as area
:math:`a_r = \sum_j T_j u_{jr}` of each resource (:math:`T_j`, :math:`u_{jr}` at the first size),
done at any rate up to :math:`s = \min_r \sum_j \bar u_{jr} / a_r` (:math:`\bar u_{jr}` the use of
job j's fastest size: all of them at once as large as they go, each still at the work of its
first size; A is optimistic about how much the jobs behind can hold), completing last,
in a phase :math:`t_m` of its own. With :math:`z_k \ge 0` its part of the work done in phase k, the LP is

.. math::

    \min \sum_{k<m} (n - k)\, t_k + (n - m)\, t_m
    \quad\text{s.t. the rows above for the m jobs, with}\quad
    \sum_{i, c} u_{icr}\, y_{ikc} + a_r z_k \le C_r\, t_k, \qquad
    z_k \le s\, t_k \;\; (k \le m), \qquad \sum_{k \le m} z_k \ge 1.

The weights of phases 0..m-1 are those of the LP of every job (the n - m jobs wait in them too),
and resources the m jobs take delay A, which counts n - m completions: a job of the m is given
more only where its speedup is worth more than the same resources spent on the jobs behind it.
Without A the m jobs would share the whole cluster as if no other job waited (on
``dl2:1000:1`` at load 1.5, ``lp_jobs=20`` took 0.73 of the cluster for them instead of
srpt-greedy's 0.34, for 6.5 % more of their progress rate, while the jobs behind them ran 34 %
slower: docs/results/fluid-budget.md). With every active job in the LP there is no A and the LP
is the one above. The value is then that of this LP (its m jobs and A), not of the m jobs alone.

Only each job's Pareto-efficient configurations enter (no other is as fast with no more of every
resource); the others would never be used. The order is fixed, so the LP's value is that of the
best fluid schedule in this order, not a bound on every schedule. Phase 0 gives job i the average
dominant share :math:`\theta_i = \max_r \sum_c u_{icr} y_{i0c} / (C_r t_0)` of the cluster until
the next completion: the shares :func:`fluid_shares` returns.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Sequence

import numpy as np
import scipy.sparse as sp

from dlsched.arguments import Range, checked
from dlsched.instance.smd import SMDInstance
from dlsched.models.mcmdk import MatrixForm
from dlsched.policies.budget import BudgetMs, DecisionRecord, Floor, PlaceRate
from dlsched.policies.greedy import (MAX_ALPHA, GreedyView, SRPTGreedyPolicy,
                                     greedy_view, tau_grid)
from dlsched.policies.optimus import admit_in_order
from dlsched.result import Status
from dlsched.sim.placement import PlacerName
from dlsched.solvers.anytime import placeable, placeable_prefix, pop_groups
from dlsched.solvers.highs import solve_matrix
from dlsched.solvers.options import Budget, SolveOptions


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


@dataclass(frozen=True)
class Rest:
    """The jobs left out of a cut LP as its aggregate job A (module docstring, :func:`rest_of`): how
    many, their area :math:`a_r` of each resource with capacity (seconds of the whole of it), and
    the most of A's work a second can do, :math:`s`."""

    jobs: float                   # a POP group's share of A holds a k-th of the jobs
    area: np.ndarray              # (resources with capacity,) a_r / C_r, in seconds
    rate: float                   # s, per second


def rest_of(times: np.ndarray, use: np.ndarray, most: np.ndarray, capacity: np.ndarray) -> Rest | None:
    r"""The :class:`Rest` of jobs whose remaining times at their first sizes are ``times`` (inf: a job
    that cannot run there, left out), whose first sizes use ``use`` (jobs, R) of each resource and
    their fastest sizes ``most``: :math:`a_r = \sum_j T_j u_{jr} / C_r` and :math:`s = \min_{r: a_r > 0}
    (\sum_j \bar u_{jr} / C_r) / a_r` (all the jobs at once at their fastest sizes, with the
    work of their first sizes: what their sizes could hold). None when no job can run or none uses
    anything."""
    res = np.flatnonzero(np.asarray(capacity) > 0)
    ok = np.isfinite(times)
    cap = np.asarray(capacity, float)[res]
    share = np.asarray(use, float)[ok][:, res] / cap
    area = times[ok] @ share
    has = area > 0
    if not has.any():
        return None
    hold = np.asarray(most, float)[ok][:, res] / cap
    return Rest(int(ok.sum()), area, float((hold.sum(axis=0)[has] / area[has]).min()))


@dataclass(frozen=True)
class FluidLP:
    """The LP above for the jobs in ``order`` (:func:`fluid_lp`): its matrix over the columns
    (t_0..t_{n-1}, then the y of each job, phase by phase, then with a :class:`Rest` A's phase t_n and
    its z_0..z_n), each column's key for a warm start from another decision's LP (:meth:`start_from`),
    and what θ is read from."""

    mf: MatrixForm
    # per column: (-1, phase, -1) for t_k, (job, phase, configuration) for y; A's phase -2: (-1, -2, -1)
    # for its t, (-2, phase, -1) for z
    keys: list
    m: int                        # jobs 0..m-1 of the call (θ = 0 for those outside the LP)
    live: np.ndarray              # the LP's jobs in order (index into the call's jobs)
    first: np.ndarray             # the y columns of phase 0
    first_job: np.ndarray         # their job's rank
    first_frac: np.ndarray        # (columns of phase 0, resources) the configuration's share of the cluster
    unit: float                   # seconds per unit of t (the shortest remaining time)

    def start_from(self, solution: dict) -> np.ndarray:
        """Column values from another LP's ``solution`` (key -> nonzero value, :meth:`solve`): a phase
        is named by the job whose completion ends it, so the columns of the jobs both LPs hold keep
        their values when a job arrives or completes; the others start at 0."""
        return np.array([solution.get(k, 0.0) for k in self.keys])

    def solve(self, time_limit: float | None = None, start: np.ndarray | None = None, basis=None) -> "FluidSolve":
        """The LP solved by HiGHS (:func:`dlsched.solvers.highs.solve_matrix`) within ``time_limit``
        seconds when given, from the column values ``start`` or from ``basis`` (a basis of this
        LP's rows and columns: where the last solve of the same LP stopped) when given."""
        opts = SolveOptions(threads=1, time_limit=time_limit,
                            budget=None if time_limit is None else Budget(time_limit, margin=0.0))
        out = solve_matrix(self.mf, opts, warm_x=start, warm_basis=basis)
        basis = out.highs.getBasis() if out.highs is not None else None
        if out.status != Status.OPTIMAL:
            return FluidSolve(None, None, {}, basis)
        theta = np.zeros(self.m)
        n, R = self.live.size, self.first_frac.shape[1]
        avg = np.zeros((n, R))
        np.add.at(avg, self.first_job, out.x[self.first, None] * self.first_frac)
        # HiGHS returns the y within its feasibility tolerance (-1e-13 seen): a share is in [0, 1]
        theta[self.live] = np.clip(avg.max(axis=1) / out.x[0], 0.0, 1.0)
        used = np.flatnonzero(out.x)
        solution = dict(zip([self.keys[c] for c in used.tolist()], out.x[used].tolist()))
        return FluidSolve(theta, float(out.objective) * self.unit, solution, basis)


@dataclass(frozen=True)
class FluidSolve:
    """One solve of a :class:`FluidLP`: θ and the LP's value in seconds when solved to optimality
    (else None), its nonzero columns by key (for :meth:`FluidLP.start_from`), and HiGHS's basis
    where it stopped (None when it ran in a child process, :func:`dlsched.solvers.highs.solve_guarded`)."""

    theta: np.ndarray | None
    value: float | None
    solution: dict
    basis: object


def fluid_lp(times: Sequence[np.ndarray], d: np.ndarray, e: np.ndarray, capacity: np.ndarray,
             order: Sequence[int], configs: Sequence[np.ndarray] | None = None,
             ids: Sequence[int] | None = None, rest: Rest | None = None) -> FluidLP | None:
    """The LP above (:class:`FluidLP`) for jobs i = 0..m-1 completing in ``order``, None when no job
    in it has a finite time; with ``rest`` the jobs left out of it (not in ``times``) as its
    aggregate job A, completing after them. ``times[i][p, w]`` is job i's remaining time at p PSs and w workers
    (inf where it cannot run); ``d``, ``e`` (m, R) a worker's and a PS's demands; ``configs[i]``
    optionally the :func:`pareto_configs` of job i (they depend on the time only through its scale,
    so callers cache them); ``ids[i]`` job i's name in the columns' keys (default i). A job with no
    finite time, or not in ``order`` (its ``times`` and ``configs`` entries are not read), has no
    part in the LP."""
    m = len(times)
    if configs is None:
        configs = [pareto_configs(T, d[i], e[i]) for i, T in enumerate(times)]
    live = [i for i in order if len(configs[i])]
    if not live:
        return None
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
    b = np.concatenate([np.zeros(n_pairs + n * res.size), -np.ones(n)])
    cost = np.concatenate([n - np.arange(n, dtype=float), np.zeros(nv)])
    name = np.asarray(live if ids is None else np.asarray(ids)[live]).tolist()
    keys = [(-1, q, -1) for q in name] + list(zip(np.repeat(name, per_job).tolist(), np.asarray(name)[k].tolist(), flat[cfg].tolist()))
    if rest is not None:
        # A (module docstring): columns t_m, then z_0..z_m (z_m in A's own phase); rows: A's share of
        # each phase's capacity rows, its own phase's capacity, z_k <= s t_k, and its work
        t_a, z = n + nv, n + nv + 1 + np.arange(n + 1)
        t_of = np.append(np.arange(n), t_a)
        area = rest.area / unit
        on = np.flatnonzero(area > 0)
        cap_rows = n_rows + np.arange(res.size)
        rate_rows = n_rows + res.size + np.arange(n + 1)
        work = n_rows + res.size + n + 1
        phase_rows = np.vstack([n_pairs + np.arange(n)[:, None] * res.size + np.arange(res.size), cap_rows])
        rows = np.concatenate([rows, phase_rows[:, on].ravel(), cap_rows, rate_rows, rate_rows, np.full(n + 1, work)])
        cols = np.concatenate([cols, np.repeat(z, on.size), np.full(res.size, t_a), z, t_of, z])
        vals = np.concatenate([vals, np.tile(area[on], n + 1), -np.ones(res.size), np.ones(n + 1),
                               np.full(n + 1, -rest.rate * unit), -np.ones(n + 1)])
        n_rows = work + 1
        b = np.concatenate([b, np.zeros(res.size + n + 1), [-1.0]])
        cost = np.concatenate([cost + np.where(np.arange(n + nv) < n, rest.jobs, 0.0), [rest.jobs], np.zeros(n + 1)])
        keys += [(-1, -2, -1)] + [(-2, q, -1) for q in name] + [(-2, -2, -1)]
    n_cols = cost.size
    A = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_cols))
    mf = MatrixForm(cost, A, np.full(n_rows, -np.inf), b, np.zeros(n_cols), np.full(n_cols, np.inf),
                    np.zeros(n_cols, dtype=np.int32), "min", 0)
    first = k == 0
    return FluidLP(mf, keys, m, np.asarray(live), col[first], job[first], frac[cfg[first]], float(unit))


def fluid_shares(times: Sequence[np.ndarray], d: np.ndarray, e: np.ndarray, capacity: np.ndarray,
                 order: Sequence[int], configs: Sequence[np.ndarray] | None = None,
                 time_limit: float | None = None, rest: Rest | None = None) -> tuple[np.ndarray, float] | None:
    """(θ, the LP's value in seconds) of :func:`fluid_lp` (with the aggregate ``rest`` of the jobs left
    out when given) solved from nothing (None if HiGHS finds no optimum, within ``time_limit`` seconds
    when given); θ = 0 for a job outside the LP."""
    lp = fluid_lp(times, d, e, capacity, order, configs, rest=rest)
    if lp is None:
        return np.zeros(len(times)), 0.0
    out = lp.solve(time_limit)
    return None if out.theta is None else (out.theta, out.value)


def fluid_bound(times: Sequence[np.ndarray], d: np.ndarray, e: np.ndarray, capacity: np.ndarray,
                order: Sequence[int], configs: Sequence[np.ndarray], rest: Rest | None = None) -> float:
    r"""A lower bound (seconds) on the sum of completion times of every fluid schedule of the jobs in
    ``order`` on ``capacity``, whatever order they complete in, so on :func:`fluid_lp`'s value in any
    order and on every POP answer's (arguments as :func:`fluid_lp`'s, ``configs`` its Pareto sizes).

    With :math:`T_i^{\min} = \min_c T_{ic}` and job i's least use of resource r as a share of the cluster
    over its run, :math:`a_{ir} = \min_c T_{ic} u_{icr} / C_r` (a mix of configurations needs
    :math:`\sum_c y_c / T_{ic} \ge 1`, so it uses at least that much), the k-th completion
    :math:`C_{(k)}` is at least the k-th smallest :math:`T_i^{\min}` (k jobs are done by then) and at
    least :math:`\max_r` of the sum of the k smallest :math:`a_{ir}` (the k jobs done by then used that
    much of r, and the cluster gives at most :math:`C_{(k)}` of it), so

    .. math:: \sum_i C_i \;\ge\; \sum_{k=1}^{n} \max\big(T^{\min}_{(k)},\; \max_r \textstyle\sum_{q \le k} a_{(q) r}\big).

    A dominated configuration is as slow and uses as much, so the Pareto sizes reach both minima.

    With ``rest`` (the aggregate A of the jobs left out, :class:`Rest`, whose completion the LP counts
    :math:`n_A` times) the bound adds :math:`n_A \max_r (\sum_i a_{ir} + a_{Ar})`: A completes last,
    after every job's least use of r and its own. Split by POP into k groups, each with A/k on 1/k of
    the cluster, the groups' A terms average at least as much (a mean of maxima is at least the
    maximum of the means), so the bound holds for POP's answers too."""
    live = [i for i in order if len(configs[i])]
    if not live:
        return 0.0 if rest is None else float(rest.jobs * rest.area.max())
    res = np.flatnonzero(np.asarray(capacity) > 0)
    fastest, area = np.empty(len(live)), np.empty((len(live), res.size))
    for a, i in enumerate(live):
        T = times[i].flat[configs[i]]
        p, w = np.divmod(configs[i], times[i].shape[1])
        use = (p[:, None] * np.asarray(e, float)[i, res] + w[:, None] * np.asarray(d, float)[i, res]) / np.asarray(capacity, float)[res]
        fastest[a], area[a] = T.min(), (T[:, None] * use).min(axis=0)
    by_area = np.cumsum(np.sort(area, axis=0), axis=0).max(axis=1, initial=0.0)
    last = 0.0 if rest is None else rest.jobs * float((area.sum(axis=0) + rest.area).max())
    return float(np.maximum(np.sort(fastest), by_area).sum()) + last


def pareto_of(inst: SMDInstance, j: int) -> np.ndarray:
    """:func:`pareto_configs` of job j's τ grid (:func:`dlsched.policies.greedy.tau_grid`), cached with
    its configurations (the Pareto sizes do not depend on the remaining iterations)."""
    return inst.cached(("pareto", inst._config_key(j)), lambda: pareto_configs(tau_grid(inst, j), inst.d[j], inst.e[j]))


#: under a budget, before a decision has measured its own: seconds of the fluid LP's build and solve per
#: square of its columns (the 20-job LP of a 2,000-job DL2 state, 2,180 columns, 17 ms from nothing,
#: 2026-11-27; HiGHS's time grows about with the fourth power of the LP's jobs, the square of its columns),
#: and seconds per active job of the part after the shares (first sizes within them, the fill: 8 ms at
#: 2,000 DL2 jobs, 2026-11-28)
LP_PRIOR, FILL_PRIOR = 4e-9, 4e-6

#: under a budget, before a decision has measured its own: seconds per LP job of the certificate of what runs
#: (:meth:`FluidPolicy.record_run`: :func:`fluid_value` of the sizes after the fill; 13-17 µs a job at 20 LP jobs of
#: a 2,000-job DL2 state, 2026-11-28), and the factor its rate is lowered by after a decision it did not fit, so that
#: one slow evaluation (a machine's hiccup: 220 µs a job seen once) does not leave every decision after it uncertified
VALUE_PRIOR, VALUE_DECAY = 2e-5, 0.8

#: the same for :func:`fluid_bound`, which a kept answer's certificate (no LP solved: no optimum) and POP's add to
#: fluid_value's (every Pareto size of each LP job: 12-14 µs a job at 6 and 20 LP jobs of a 2,000-job DL2 state, CPU,
#: fluid_value 7-10 µs there, 2026-11-28; lowered by :data:`VALUE_DECAY` too)
BOUND_PRIOR = 2e-5

#: the decisions (those that placed a job) whose placement seconds per job the next placement is predicted from
PLACE_WINDOW = 8

#: under a budget without ``lp_jobs`` (:meth:`FluidPolicy.adapt_lp_jobs`): the LP's first job count, its
#: growth factor after :data:`AUTO_PATIENCE` LPs in a row that took at most :data:`AUTO_FAST` of their
#: share, and the factor it shrinks by after one not solved
AUTO_START, AUTO_GROW, AUTO_FAST, AUTO_PATIENCE, AUTO_SHRINK = 8, 1.25, 0.25, 3, 0.5


def lp_columns(times: Sequence[np.ndarray], order: Sequence[int], configs: Sequence[np.ndarray]) -> int:
    """The y columns :func:`fluid_lp` builds for the jobs in ``order``: the job of rank k has one per Pareto
    size in each of its k + 1 phases (what the LP's build and solve times are predicted from)."""
    sizes = np.array([len(configs[i]) for i in order], dtype=np.int64)
    sizes = sizes[sizes > 0]
    return int((sizes * np.arange(1, sizes.size + 1)).sum())


def fluid_value(times: Sequence[np.ndarray], d: np.ndarray, e: np.ndarray, capacity: np.ndarray,
                order: Sequence[int], configs: Sequence[np.ndarray], sizes: np.ndarray,
                rest: Rest | None = None) -> float | None:
    r"""The value (seconds) in :func:`fluid_lp`'s objective of one feasible point of that LP (arguments as
    its, ``configs`` the Pareto sizes): each job i of the LP at the size ``sizes[i]`` = (p, w) from now
    until it completes, after :math:`T_i` (its fastest Pareto size where ``sizes[i]`` cannot run), and
    A (``rest``) after them all. So an upper bound on the LP's optimum, which gives a decision that did
    not solve the LP its certified gap against :func:`fluid_bound`. None when a size does not fit the
    cluster alone.

    With :math:`u_{ir}` job i's share of resource r at its size: when :math:`\sum_i u_{ir} \le 1` for every r
    the jobs run side by side and the phase of rank k ends at :math:`e_k = \max_{q \le k} T_q` (a job
    runs within its phases; each phase holds at most the jobs that fit together); else one after another,
    :math:`e_k = \sum_{q \le k} T_q`. With :math:`t_k = e_k - e_{k-1}` and A's phase
    :math:`t_A = \max(1/s, \max_r a_r)` (its work at its largest rate, within the cluster),

    .. math:: \sum_{k<m} (m - k + n_A)\, t_k + n_A t_A.
    """
    live = [i for i in order if len(configs[i])]
    if not live and rest is None:
        return 0.0
    res = np.flatnonzero(np.asarray(capacity) > 0)
    cap = np.asarray(capacity, float)[res]
    T, use = np.empty(len(live)), np.empty((len(live), res.size))
    for a, i in enumerate(live):
        p, w = int(sizes[i][0]), int(sizes[i][1])
        grid = times[i]
        if not (0 <= p < grid.shape[0] and 0 <= w < grid.shape[1] and np.isfinite(grid[p, w])):
            p, w = np.divmod(int(configs[i][np.argmin(grid.flat[configs[i]])]), grid.shape[1])
        T[a] = grid[p, w]
        use[a] = (p * np.asarray(e, float)[i, res] + w * np.asarray(d, float)[i, res]) / cap
    if (use > 1.0 + 1e-9).any():
        return None
    ends = np.maximum.accumulate(T) if (use.sum(axis=0) <= 1.0 + 1e-9).all() else np.cumsum(T)
    t = np.diff(ends, prepend=0.0)
    n_a = 0.0 if rest is None else float(rest.jobs)
    value = float(((len(live) - np.arange(len(live)) + n_a) * t).sum())
    if rest is not None:
        value += n_a * max(1.0 / rest.rate if rest.rate > 0 else np.inf, float(rest.area.max()))
    return value


class FluidPolicy(SRPTGreedyPolicy):
    """The fluid LP of the active jobs (shortest first, no further arrivals) gives each its share of the cluster until the next completion, then srpt-greedy's fill (not a seed paper's).

    :func:`~dlsched.policies.greedy.greedy_allocation` with the shares of the fluid LP (:func:`fluid_shares`): at
    every call the LP above over the active jobs' Pareto-efficient sizes, each job's average
    dominant share θ in its first phase, the fastest (p, w) within θ as first size, what is left
    filled by ``srpt-greedy``'s gains (``alpha``, ``pairs``). Unlike
    :class:`~dlsched.policies.greedy.HeSRPTPolicy` it uses every job's own measured speedup curve
    instead of one k^p; DL2's warm-up teacher (docs/dl2.md, "The fluid teacher").

    ``budget_ms`` bounds the whole call, from the moment the policy is asked (docs/simulator.md,
    "Decision budgets and certified gaps"): the view, the LP, the fill and the placement of the answer.
    The LP gets what remains less a tenth of the budget and the predicted time of the fill and the
    placement after it (:meth:`lp_time`, each measured at the decisions before), and is built only when
    its own predicted time fits that (:meth:`budgeted_shares`); the fill stops at the budget less its
    margin, and an answer whose expected placement does not fit what remains gives way to the last
    answer's sizes (:meth:`allocate`). When the LP is not built or not solved in time the decision is
    the kept answer: the jobs of the last LP solved keep their shares from it, the others
    start at srpt-greedy's first size (one PS and the fewest workers) before the same fill. With
    ``incremental`` (default on; under a budget only, so that unbudgeted decisions are those solved
    from nothing) the LP starts from the last LP's solution (:meth:`FluidLP.start_from`: the columns of
    the jobs both hold; consecutive decisions differ by one arrival or completion). The policy's model
    is the LP, which HiGHS solves to optimality, but what runs is not its phase 0: it is the first sizes
    within θ after the fill. A decision taken from the LP records the LP's value of the sizes that run
    (:func:`fluid_value`: each LP job at its size until it completes) against the LP's optimum
    (:meth:`record_run`; before 2026-11-28 the optimum against itself, gap 0 whatever ran); under a
    budget, where that evaluation is predicted not to fit what the placement leaves of the budget, the
    decision is counted as uncertified instead. A kept answer records the LP's value of the sizes that run
    after the fill too, against :func:`fluid_bound`, under the same clock (:meth:`record_run`).

    ``lp_jobs`` (default none: every active job) limits the LP to that many jobs, the first in the
    order (the shortest remaining at their fastest size); the others enter it as one aggregate job
    (:class:`Rest`, module docstring), so that the LP's jobs are given only what they use better than
    the jobs behind them would, and start at their first size before the fill, as when no LP is
    solved. The LP's size grows with the square of its jobs (a phase per job): with DL2's mix HiGHS takes 0.3 s at 25 jobs, 5 s at 50 and 78 s at 100
    (docs/results/decision-scale.md), so a decision over thousands of active jobs takes ``lp_jobs``.
    The decision's objective and gap are then those of that LP: its ``lp_jobs`` jobs and the
    aggregate of the others (the gap certifies the sizes that run against that LP's optimum, not the
    decision over every job). Under a budget without ``lp_jobs`` (and without POP) the count adapts from decision to decision
    (:meth:`adapt_lp_jobs`), so that the LP is built and solved within its share of the budget; without
    a budget it is every job.

    ``pop_k`` > 1 (default 1: off) solves that LP by POP (:meth:`pop_shares`): its jobs in k random
    groups, each on 1/k of the cluster; the gap of what runs is then against :func:`fluid_bound` of the whole LP.
    """

    name = "fluid"

    @checked
    def __init__(self, inst: SMDInstance | None = None, placer: PlacerName = "first_fit",
                 alpha: Annotated[float, Range(ge=0, le=MAX_ALPHA)] = 2.0, pairs: bool = True,
                 budget_ms: BudgetMs | None = None, lp_jobs: Annotated[int, Range(ge=1)] | None = None,
                 incremental: bool = True, pop_k: Annotated[int, Range(ge=1)] = 1):
        super().__init__(inst, placer, alpha=alpha, start="shortest", pairs=pairs)
        self.options["shares"] = "fluid"
        self.decision_record = DecisionRecord(budget_ms)
        self.lp_jobs = None if lp_jobs is None else int(lp_jobs)
        self.incremental = bool(incremental)
        self.pop_k = int(pop_k)
        # a decision's marks (:meth:`schedule`) and the certificate's rate (:meth:`record_run`), also for an
        # :meth:`allocate` called without :meth:`reset` (as srpt-greedy's may be)
        self.marks, self.value_rate, self.bound_rate = {}, VALUE_PRIOR, BOUND_PRIOR

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.decision_record.reset()
        self.pop_rng = np.random.default_rng(ctx.seed)    # POP's deals of the LP's jobs (:meth:`pop_shares`)
        # under a budget: the view's jobs (sorted) and θ of the last LP solved (the kept answer's, :meth:`kept_theta`)
        self.last_theta: tuple[np.ndarray, np.ndarray] = (np.zeros(0, dtype=np.int64), np.zeros(0))
        # under a budget: the last LP's column keys, the last solved LP's nonzero columns, HiGHS's last basis
        self.last: tuple | None = None
        # under a budget without lp_jobs: the next LP's job count, and the LPs of that count in a row
        # solved in at most AUTO_FAST of their share (adapt_lp_jobs)
        self.auto_jobs, self.auto_fast = AUTO_START, 0
        # under a budget, what the decisions have measured of their own costs, for the next to predict from
        # (:meth:`lp_time`): seconds of the LP per square of its columns, of the fill per active job, of the
        # placement per job placed at a new size, of the certificate's fluid_value and fluid_bound per LP job (the
        # priors until one is measured)
        self.lp_rate, self.fill_rate, self.value_rate, self.bound_rate = LP_PRIOR, FILL_PRIOR, VALUE_PRIOR, BOUND_PRIOR
        self.place = PlaceRate(len(ctx.cluster.names), PLACE_WINDOW)
        # the last answer's sizes (jobs of the view, (w, p)) and its jobs, the jobs it resized that were there
        # before it, and this decision's expected placements and its times (:meth:`schedule`)
        self.previous, self.previous_jobs, self.resized = None, None, 0
        self.expect_moved, self.marks, self.running_sizes = 0, {}, {}
        # under a budget: the floor of a decision (:class:`~dlsched.policies.budget.Floor`) and the seconds from an
        # answer that places no job anew to the end of the call
        self.floor, self.tail = Floor(), 0.0
        # under a budget, what the last decision answered (:mod:`dlsched.bench.decision` reports it): "lp" (its
        # LP's shares), "kept shares" (the LP not solved in time: the last LP's), "kept start" (the last answer's
        # sizes and the waiting jobs started) or "kept" (the last answer's sizes alone)
        self.last_answer = None

    def schedule(self, state, events):
        # the budget is the whole call's (docs/simulator.md): started when the policy is asked, so the view,
        # the LP, the fill and the placement of the answer all count against it
        self.clock = self.decision_record.clock()
        self.marks, self.last_answer = {}, None
        if self.previous is not None and self.floor.binds(self.clock, len(state.active)):
            # the view alone would not fit the budget: the kept start, from the state's arrays (counted as uncertified:
            # the certificate needs the LP's jobs, which need the view)
            out = self.kept_start_answer(state)
            self.previous_jobs = np.sort(self.index[np.asarray(state.active, dtype=np.int64)])
            self.resized = 0
            return out
        warm = self.previous is not None
        self.running_sizes = {} if warm or self.decision_record.seconds is None else self.held_sizes(state)
        out = super().schedule(state, events)
        if self.decision_record.seconds is not None and "answered" in self.marks and warm:
            # the floor of a warm decision (a first one sizes every job from nothing): the decision less its LP, and
            # what follows an answer that places no job anew rather than the placement of this one
            self.floor.measured(self.clock.elapsed() if self.marks["moved"] else self.marks["answered"] + self.tail,
                                self.marks.get("lp_seconds", 0.0), self.clock.limit, len(state.active))
            if not self.marks["moved"]:
                self.tail = self.clock.elapsed() - self.marks["answered"]
        if self.marks.get("moved"):
            self.place.measured(self.clock.elapsed() - self.marks["answered"], self.marks["moved"])
        return out

    def allocate(self, inst: SMDInstance, active: np.ndarray) -> np.ndarray:
        """srpt-greedy's allocation with the LP's shares (:meth:`shares`); under a budget the fill stops at
        the budget less its margin, the decision's costs are measured for the next (:meth:`lp_time`), and
        where the answer's expected placement does not fit what remains, the first of the kept answers
        (:meth:`kept_answers`) whose placement does, else the one placed soonest
        (:func:`~dlsched.solvers.anytime.placeable`; never an empty one where another runs a job). It records
        the LP's value of the sizes it answers against the LP's optimum where its LP was solved, else against
        :func:`fluid_bound`, where that fits what the placement leaves of the budget (:meth:`record_run`)."""
        if self.decision_record.seconds is None:
            view = greedy_view(inst, active)
            alloc = self.filled(view, inst)
            if "bound" in self.marks:
                self.record_run(view, alloc, self.marks.pop("bound"))
            return alloc
        rec, clock = self.decision_record, self.clock
        recorded = rec.mark()
        view = greedy_view(inst, active)
        if self.previous is None and self.running_sizes:
            # a first budgeted decision on a state with running jobs (a budget set on a policy that decided without
            # one, or a library call): their sizes are the last answer's
            self.previous = self.held_previous(inst.n_jobs)
            self.previous_jobs = np.flatnonzero(self.previous[:, 0] > 0)       # a running job has a worker
        was = (np.zeros(view.jobs.size, dtype=bool) if self.previous_jobs is None
               else np.isin(view.jobs, self.previous_jobs, assume_unique=True))
        # placed anew: the jobs that arrived since, and as many as the last answer resized
        self.expect_moved = int(np.count_nonzero(~was)) + self.resized
        fill = Budget(max(clock.limit - clock.margin, 0.0), start=clock.start, margin=clock.margin)
        alloc = self.filled(view, inst, budget=fill)
        answered = clock.elapsed()
        if "shared" in self.marks:
            self.fill_rate = (answered - self.marks["shared"]) / view.jobs.size
        last = self.previous if self.previous is not None else np.zeros_like(alloc)
        moved = (alloc[view.jobs, 0] > 0) & np.any(alloc[view.jobs] != last[view.jobs], axis=1)
        n_moved = int(np.count_nonzero(moved))
        if n_moved and self.place.rate * n_moved > clock.remaining():
            options = self.kept_answers(view, last, was, clock.remaining())
            runs = [True] + [bool((a[:, 0] > 0).any()) for a, _ in options]
            pick = placeable([self.place.rate * n_moved] + [self.place.rate * n for _, n in options], runs,
                             clock.remaining())
            if pick:
                alloc, n_moved = options[pick - 1]
                moved = (alloc[view.jobs, 0] > 0) & np.any(alloc[view.jobs] != last[view.jobs], axis=1)
                # the decision's record is the kept answer's, not that of the allocation it replaces
                rec.undo(recorded)
                if "lp" in self.marks:
                    # against the LP's optimum where it was solved (a fluid schedule in its order), else fluid_bound
                    self.marks.setdefault("bound", None)
                self.last_answer = "kept start" if n_moved else "kept"
        if "bound" in self.marks:
            # the LP's value of what runs, if that fits what the placement leaves
            self.record_run(view, alloc, self.marks.pop("bound"), clock.remaining() - self.place.rate * n_moved)
        if rec.mark() == recorded and (alloc[view.jobs, 0] > 0).any():
            # an answer that runs jobs with no LP behind it (every job of one size: srpt-greedy's alone) is not certified
            rec.record_uncertified()
        # the placement's time (PlaceRate) runs from here: the certificate above is the decision's own
        self.marks.update(answered=clock.elapsed(), moved=n_moved)
        self.previous, self.previous_jobs, self.resized = alloc, view.jobs, int(np.count_nonzero(moved & was))
        return alloc

    def kept_answers(self, view: GreedyView, last: np.ndarray, was: np.ndarray, time_left: float) -> list[tuple[np.ndarray, int]]:
        """The cheaper answers to place (:meth:`allocate`), each with the jobs it places anew: the last answer's
        sizes for the jobs still active with the jobs it leaves waiting started at srpt-greedy's first size
        (one PS, the fewest workers), shortest first while they fit what the kept sizes leave of the
        cluster (the kept start: it places only those, and lets the jobs that arrived since start); then
        the kept sizes alone (nothing to place); then the kept start cut to the most of its first started jobs
        whose placement is expected within ``time_left`` seconds, at least one, the others waiting
        (:func:`~dlsched.solvers.anytime.placeable_prefix`): the answer of a first decision, which has no sizes
        to keep and thousands of jobs to start (2,000 DL2 jobs placed in 0.25 s)."""
        jobs = view.jobs
        alone = np.zeros_like(last)
        alone[jobs[was]] = last[jobs[was]]
        held = alone[jobs]
        left = view.capacity - (held[:, :1] * view.d + held[:, 1:] * view.e).sum(axis=0)
        w0 = np.minimum(view.min_workers, view.tau_kinds.shape[2] - 1)
        first_time = view.at(np.arange(jobs.size), 1, w0)
        fastest = view.remaining * view.least
        waiting = np.flatnonzero(held[:, 0] == 0)
        order = waiting[np.lexsort((jobs[waiting], fastest[waiting]))]
        started, _ = admit_in_order(view.e + w0[:, None] * view.d, np.isfinite(first_time), order, left)
        def first(k: int) -> np.ndarray:
            out = alone.copy()
            out[jobs[started[:k]], 0], out[jobs[started[:k]], 1] = w0[started[:k]], 1
            return out
        cut = max(placeable_prefix(lambda k: self.place.rate * k, started.size, time_left), min(started.size, 1))
        return [(first(started.size), int(started.size)), (alone, 0), (first(cut), cut)]

    def lp_time(self, view: GreedyView) -> float:
        """Seconds the LP may take (its build and solve) under a budget: what remains of the budget less its
        margin (a tenth of it) and the predicted time of what follows the LP, the fill (seconds per active job,
        measured from the last decision's) and the placement (seconds per job placed at a new size, times the
        jobs expected: those that arrived since the last decision and as many as it resized)."""
        after = self.fill_rate * view.jobs.size + self.place.rate * self.expect_moved
        return self.clock.remaining() - self.clock.margin - after

    def shares(self, inst: SMDInstance):
        """``options["shares"] = "fluid"``: θ of :func:`fluid_shares` for the jobs of the view completing in
        the order given, the first ``lp_jobs`` of them when set, under a budget without it the first m
        (:meth:`adapt_lp_jobs`; Pareto sizes kept with ``inst``); under a budget, :meth:`budgeted_shares`
        (θ = 0 leaves a job at its first size)."""
        def theta(view: GreedyView, order):
            budgeted = self.decision_record.seconds is not None
            auto = self.lp_jobs is None and budgeted and self.pop_k == 1
            lp_order = order[:self.auto_jobs] if auto else order if self.lp_jobs is None else order[:self.lp_jobs]
            times, configs = [None] * view.jobs.size, [None] * view.jobs.size      # read for lp_order only
            for i in lp_order:
                times[i], configs[i] = view.times(i), pareto_of(inst, int(view.jobs[i]))
            rest = self.rest(view, order[len(lp_order):])
            if self.pop_k > 1 and len(lp_order) > 1:
                self.marks.update(lp_order=lp_order, lp=(times, configs, rest))
                out = self.pop_shares(view, lp_order, times, configs, rest)
            elif not budgeted:
                lp = fluid_shares(times, view.d, view.e, view.capacity, lp_order, configs, rest=rest)
                if lp is not None and lp[1] == 0.0:
                    self.decision_record.record(0.0, 0.0)         # no job of the LP can run: nothing to certify
                elif lp is not None:
                    # what runs is certified after the fill (allocate), against the LP's optimum
                    self.marks.update(lp_order=lp_order, lp=(times, configs, rest), bound=lp[1])
                return None if lp is None else lp[0]
            else:
                self.marks.update(lp_order=lp_order, lp=(times, configs, rest))
                out = self.budgeted_shares(view, lp_order, times, configs, rest, auto)
            self.marks["shared"] = self.clock.elapsed()
            return out
        return theta

    def budgeted_shares(self, view: GreedyView, lp_order: list, times: list, configs: list, rest: Rest | None,
                        auto: bool) -> np.ndarray | None:
        """θ under a budget: the LP of the jobs ``lp_order`` (and ``rest``) built and solved only when its
        predicted time (:data:`LP_PRIOR` until measured: seconds per square of its columns, :func:`lp_columns`,
        from the last LP's) fits :meth:`lp_time`, within that time and from the last LP (``incremental``: its
        basis when the LP is the same, else its columns by key); else, or when it is not solved in time, the
        kept answer (:meth:`kept_theta`), whose sizes after the fill are certified against :func:`fluid_bound`
        (:meth:`record_run`)."""
        share, started = self.lp_time(view), self.clock.elapsed()
        cols = lp_columns(times, lp_order, configs)
        solved, out = False, None
        if self.lp_rate * cols ** 2 <= share:
            lp = fluid_lp(times, view.d, view.e, view.capacity, lp_order, configs, ids=view.jobs, rest=rest)
            if lp is None:
                self.decision_record.record(0.0, 0.0)
                return np.zeros(view.jobs.size)
            start, basis = None, None
            if self.incremental and self.last is not None:
                keys, solution, last_basis = self.last
                if keys == lp.keys and last_basis is not None:
                    basis = last_basis                  # the same LP: go on from where it stopped
                elif solution:
                    start = lp.start_from(solution)
            out = lp.solve(max(share - (self.clock.elapsed() - started), 1e-3), start, basis)
            self.marks["lp_seconds"] = self.clock.elapsed() - started
            self.last = (lp.keys, out.solution or (self.last[1] if self.last else {}), out.basis)
            solved = out.theta is not None
            rate = (self.clock.elapsed() - started) / max(cols, 1) ** 2
            # a solve cut at its limit took at least that long: the rate only rises
            self.lp_rate = rate if solved else max(self.lp_rate, rate)
        if auto and (out is not None or share > 0):
            # an LP not built because nothing was left for it (the view took the budget) says nothing of m
            self.adapt_lp_jobs(len(lp_order), solved, self.clock.elapsed() - started, share)
        if solved:
            self.marks["bound"] = out.value       # what runs is certified after the fill (allocate)
            self.last_theta = (view.jobs, out.theta)
            self.last_answer = "lp"
            return out.theta
        self.last_answer = "kept shares"
        self.marks["bound"] = None        # what runs is certified after the fill (allocate), against fluid_bound
        kept = self.kept_theta(view.jobs)
        return kept if kept.any() else None

    def kept_theta(self, jobs: np.ndarray) -> np.ndarray:
        """The kept answer's θ of the view's ``jobs``: the last solved LP's for the jobs it had (found in its sorted
        jobs at once), 0 (the first size, srpt-greedy's) for the others."""
        held, theta = self.last_theta
        at = np.minimum(np.searchsorted(held, jobs), max(held.size - 1, 0))
        return np.where(held[at] == jobs, theta[at], 0.0) if held.size else np.zeros(jobs.size)

    def record_run(self, view: GreedyView, alloc: np.ndarray, bound: float | None, time_left: float = np.inf) -> None:
        """Record a decision with the certified gap of what runs: the LP's value (:func:`fluid_value`) of the sizes
        ``alloc`` gives the LP's jobs ((w, p) per job of the instance: the first sizes within θ after the fill; a
        job that waits is valued at one PS and the fewest workers, as it would start) against ``bound``, the LP's
        optimum (no fluid schedule in the LP's order does better, and fluid_value's is one), or where None (a kept
        answer: no LP solved; POP) against :func:`fluid_bound`. Under a budget, where that evaluation is predicted
        (seconds per LP job of each, measured at the last one) not to fit ``time_left`` (what remains of the budget
        less the answer's predicted placement), the decision is counted as uncertified instead of overrunning its
        budget (and the rates lowered by :data:`VALUE_DECAY`)."""
        lp_order = self.marks["lp_order"]
        times, configs, rest = self.marks["lp"]
        m = max(len(lp_order), 1)
        if (self.value_rate + (self.bound_rate if bound is None else 0.0)) * len(lp_order) > time_left:
            self.decision_record.record_uncertified()
            self.value_rate *= VALUE_DECAY
            if bound is None:
                self.bound_rate *= VALUE_DECAY
            return
        i = np.asarray(lp_order, dtype=np.int64)
        sizes = alloc[view.jobs][:, ::-1]
        first = np.zeros((view.jobs.size, 2), dtype=np.int64)
        first[i, 0], first[i, 1] = 1, view.min_workers[i]
        given = sizes[i, 1] > 0
        first[i[given]] = sizes[i[given]]
        started = time.perf_counter()
        value = fluid_value(times, view.d, view.e, view.capacity, lp_order, configs, first, rest)
        valued = time.perf_counter()
        self.value_rate = (valued - started) / m
        if value is not None and bound is None:
            bound = fluid_bound(times, view.d, view.e, view.capacity, lp_order, configs, rest)
            self.bound_rate = (time.perf_counter() - valued) / m
        self.decision_record.record(value, None if value is None else bound)

    @staticmethod
    def rest(view: GreedyView, behind: Sequence[int]) -> Rest | None:
        """:func:`rest_of` the jobs ``behind`` the LP's (indices into the view) at their first sizes, one PS
        and the fewest workers (srpt-greedy's, :func:`~dlsched.policies.greedy.greedy_allocation`): the
        LP's aggregate job A; None when none is left out."""
        if not len(behind):
            return None
        i = np.asarray(behind, dtype=np.int64)
        w0 = np.minimum(view.min_workers[i], view.tau_kinds.shape[2] - 1)
        use = view.e[i] + w0[:, None] * view.d[i]
        # every job's fastest size, read per kind of job
        p, w = np.divmod(view.least_at[i], view.tau_kinds.shape[2])
        most = p[:, None] * view.e[i] + w[:, None] * view.d[i]
        return rest_of(view.remaining[i] * view.at(i, 1, w0), use, most, view.capacity)

    def adapt_lp_jobs(self, jobs: int, solved: bool, seconds: float, share: float) -> None:
        """Under a budget without ``lp_jobs``: the next LP's job count m from the last LP of ``jobs`` jobs,
        ``solved`` or not, that took ``seconds`` to build and solve out of its ``share`` of the budget.

        After :data:`AUTO_PATIENCE` = 3 LPs of m jobs in a row, each solved in at most :data:`AUTO_FAST` of
        its share, m grows by :data:`AUTO_GROW` (at least by one); after an LP not solved, m shrinks to
        :data:`AUTO_SHRINK` of its jobs (at least 1); otherwise it stays. The LP's size grows with the
        square of its jobs (a phase per job) and HiGHS's time about with its fourth power (0.3 s at 25 of
        DL2's jobs, 5 s at 50, 78 s at 100), so a growth of 1.25 multiplies the time of an LP that took a
        quarter of its share by about 2.4 (it still fits), and halving divides it by about 16 after a miss
        (the next fits); the gap between the two thresholds keeps m from swinging. Three in a row, not
        one: an LP started from the last one's basis or columns is often far faster than the next of the
        same size, and growing after one such LP missed the next LP three times as often (60 of 561
        decisions instead of 19 in the first 80,000 s of ``dl2:1000:1`` at load 1.5 and 100 ms, at the
        same median m of 15). An LP of fewer than m jobs (fewer were active) leaves m as it is, so m
        does not grow past the jobs the decisions have."""
        fast = solved and jobs >= self.auto_jobs and seconds <= AUTO_FAST * share
        self.auto_fast = self.auto_fast + 1 if fast else 0
        if not solved:
            self.auto_jobs = max(1, int(jobs * AUTO_SHRINK))
        elif self.auto_fast >= AUTO_PATIENCE:
            self.auto_jobs, self.auto_fast = max(jobs + 1, int(jobs * AUTO_GROW)), 0

    def pop_shares(self, view: GreedyView, order: list, times: list, configs: list,
                   rest: Rest | None = None) -> np.ndarray | None:
        r"""θ by POP (``pop_k`` = k > 1; Narayanan et al., SOSP'21): the LP's jobs ``order`` dealt at random
        (:func:`~dlsched.solvers.anytime.pop_groups`, the policy's seeded ``pop_rng``) into min(k, jobs)
        groups, each group's LP (:func:`fluid_lp`, its jobs in the same order) on 1/k of every resource,
        solved from nothing with an equal share of what remains for the LPs (:meth:`lp_time`, over the groups
        left; a group's LP is built only when its predicted time fits that share, as without POP; the groups
        change at every decision, so no start is kept), a job's θ its group's
        share over k. The fill that follows is srpt-greedy's over the whole cluster, as without POP: it is a
        greedy that only places, and dealing it too would leave each group's leftovers idle.

        With ``rest`` (the jobs behind the LP's, :class:`Rest`) each group holds A/k: a k-th of its jobs
        and of its work, the same share of the group's 1/k of the cluster. The objective is the unsplit LP's value of
        the sizes that run after the fill (:meth:`record_run`; before 2026-11-28 the sum of the groups' LP values,
        which no size that runs need reach); the bound is :func:`fluid_bound` of the unsplit problem (with
        ``rest``), valid for every fluid schedule on the whole cluster, the unsplit LP's included (the LP's own
        optimum is not solved here), both evaluated under the decision's clock. Under a budget a group whose LP is
        not solved in time, or not built (not predicted to fit), leaves its jobs the last θ they had, and the
        decision is certified in the same way, as a kept answer without POP is."""
        groups = pop_groups(len(order), self.pop_k, self.pop_rng)
        k, budget = len(groups), self.decision_record.seconds
        # the jobs behind the LP's, dealt too: A/k in each group (on 1/k of the cluster, its area as a share is A's)
        share = None if rest is None else Rest(rest.jobs / k, rest.area, rest.rate)
        theta, solved = np.zeros(view.jobs.size), True
        for gi, g in enumerate(groups):
            jobs = [order[a] for a in g.tolist()]
            if budget is not None and self.lp_rate * lp_columns(times, jobs, configs) ** 2 > self.lp_time(view) / (k - gi):
                # this group's LP is not predicted to fit its share of what is left: not built, its jobs keep their last θ
                solved = False
                theta[jobs] = self.kept_theta(view.jobs[jobs])
                continue
            started = self.clock.elapsed()
            lp = fluid_lp(times, view.d, view.e, view.capacity / k, jobs, configs, ids=view.jobs, rest=share)
            if lp is None:
                continue
            limit = None if budget is None else max(self.lp_time(view) / (k - gi), 1e-3)
            out = lp.solve(limit)
            if budget is not None:
                rate = (self.clock.elapsed() - started) / max(lp_columns(times, jobs, configs), 1) ** 2
                self.lp_rate = rate if out.theta is not None else max(self.lp_rate, rate)
            if out.theta is None:
                solved = False
                held = lp.live
                theta[held] = self.kept_theta(view.jobs[held])
                continue
            theta += out.theta / k
        if solved or budget is not None:
            # what runs is certified after the fill (allocate), against fluid_bound of the unsplit problem
            self.marks["bound"] = None
        if budget is not None:
            self.last_theta = (view.jobs, theta)
        return theta

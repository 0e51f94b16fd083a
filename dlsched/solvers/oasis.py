r"""OASiS online primal-dual scheduling (MODELS.md §3.2): prices, the dual subroutine, admission.

Method ``oasis`` runs it on the simulator (:mod:`dlsched.policies.online`).

Prices of resource r on worker server h and PS server k at allocated amounts g, v:

.. math::

    P_h^r(g) = L_1 (U_1^r / L_1)^{g / c_h^r},\qquad Q_k^r(v) = L_2 (U_2^r / L_2)^{v / c_k^r}

On the arrival of job i the **dual subroutine** maximises
:math:`\mu_i = f_i(\hat t - a_i + 1) - \text{priced cost}` over every feasible schedule, exactly:

* one slot (:func:`slot_costs`): y workers cost the y cheapest worker units (server h offers
  :math:`\lfloor \min_r \text{free}_h^r / w_i^r \rfloor` units at :math:`\sum_r P_h^r w_i^r` each),
  plus the :math:`\lceil b_i y / B_i \rceil` cheapest PS units; the price of a unit does not depend
  on this job's own units, so taking the cheapest is optimal (tested against brute force);
* over slots (:func:`dual_subroutine`): :math:`C_t(r) = \min_{0 \le y \le N_i} c_t(y) + C_{t-1}(r - y)`
  in worker-slots r (the DP of MODELS.md §3.2 in worker-slots instead of chunk-epochs; the two are
  the same partition of the work), one pass over t serving every candidate completion slot
  :math:`\hat t`; the pass stops once :math:`f_i(\hat t - a_i + 1) - R_i \underline{p}` cannot beat
  the best surplus (:math:`\underline{p}` the cheapest unit price: an exact bound).

Admit iff :math:`\mu_i > 0`; then commit the schedule and raise g, v. Rejected jobs are not retried.
U and L are computed from all jobs (the true values, which an online scheduler would not know) and
multiplied by ``u_scale`` / ``l_scale`` to model estimates (MODELS.md §3.2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from dlsched.errors import SolverError
from dlsched.instance.oasis import OasisInstance, OasisSchedule
from dlsched.solvers.options import Budget

_TINY = 1e-300


@dataclass(frozen=True)
class PriceParams:
    r"""U_1^r, U_2^r (per resource), L_1, L_2 and :math:`\alpha` (MODELS.md §3.2)."""

    U1: np.ndarray
    U2: np.ndarray
    L1: float
    L2: float

    @property
    def alpha(self) -> float:
        with np.errstate(divide="ignore"):
            vals = [1.0, *np.log(self.U1 / self.L1), *np.log(self.U2 / self.L2)]
        return float(max(vals))


def price_params(inst: OasisInstance, u_scale: float = 1.0, l_scale: float = 1.0,
                 l_min_share: float = 0.0) -> PriceParams:
    r"""U and L from the formulas of MODELS.md §3.2, over all jobs of ``inst``, times the estimate factors.

    :math:`U_1^r = \max_i f_i(D^{min}_i) / w_i^r` over jobs with :math:`w_i^r > 0`;
    :math:`L_1 = \frac{1}{4\eta_1} \min_i f_i(T - a_i + 1) / \sum_r R_i w_i^r` with
    :math:`\eta_1 = \max_i T \sum_h \sum_r c_h^r / (R_i \sum_r w_i^r)` (the smallest allowed);
    likewise with s, c_k for U_2, L_2. Jobs that can never run are left out. L is floored at a
    tiny positive number so that prices stay defined when some utility reaches 0.

    ``l_min_share`` > 0 (an L estimate, docs/oasis.md "Estimating L"): the min in L runs only over
    the jobs whose latest-completion utility :math:`f_i(T - a_i + 1)` is at least ``l_min_share``
    times :math:`\max_i f_i(D^{min}_i)`; jobs whose utility has vanished by T (time-critical
    sigmoids: e^{-5·300}) no longer drive L to 0. ``0`` is the formula over every job that can run.
    If no job qualifies, the formula value is kept.
    """
    n, T = inst.n_jobs, inst.horizon
    ok = inst.runnable()
    if not ok.any():
        ok = np.ones(n, bool)
    R = inst.work().astype(float)
    Dmin = inst.min_duration()
    f_best = np.array([float(inst.utility_of(i, Dmin[i])) for i in range(n)])
    f_worst = np.array([float(inst.utility_of(i, T - inst.arrival[i] + 1)) for i in range(n)])
    out = []
    for dem, cap in ((inst.worker_demand, inst.worker_cap), (inst.ps_demand, inst.ps_cap)):
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(dem > 0, f_best[:, None] / dem, -np.inf)[ok]
        U = per.max(axis=0)
        tot = dem.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            eta = float(np.max(T * cap.sum() / (R[ok] * tot[ok])))
        if not (np.isfinite(eta) and eta > 0):
            eta = 1.0  # no capacity of this kind at all: no job can run, any eta > 0 keeps L defined
        fmax = float(max(f_best[ok].max(), 1e-12))
        sel = ok & (f_worst >= l_min_share * fmax) if l_min_share > 0 else ok
        if not sel.any():
            sel = ok
        L = float(np.min(f_worst[sel] / (R[sel] * tot[sel]))) / (4.0 * eta)
        L = max(L, 1e-12 * fmax / max(float(R[ok].max() * tot[ok].max()), 1.0))
        U = np.where(np.isfinite(U) & (U > L), U, L)
        out.append((U * u_scale, L * l_scale))
    (U1, L1), (U2, L2) = out
    return PriceParams(U1, U2, L1, L2)


class Prices:
    """The prices of OASiS (§3.2): allocated amounts g_h^r(t), v_k^r(t) (index t = slot, 1..T) and the prices they imply."""

    def __init__(self, inst: OasisInstance, params: PriceParams):
        self.inst = inst
        self.params = params
        self.blocked = inst.infeasible_reasons()     # once: a call per admitted job costs O(n) each
        T, R = inst.horizon, len(inst.resources)
        self.g = np.zeros((inst.n_worker_servers, T + 1, R))
        self.v = np.zeros((inst.n_ps_servers, T + 1, R))

    @staticmethod
    def _price(used, cap, U, L):
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(cap[:, None, :] > 0, used / cap[:, None, :], 0.0)
        ratio = np.maximum(U / L, 1.0)
        return L * np.exp(frac * np.log(ratio)[None, None, :])

    def worker_prices(self, t0: int) -> np.ndarray:
        """(H, T - t0 + 1, R) prices P_h^r(g_h^r(t)) for slots t0..T."""
        p = self.params
        return self._price(self.g[:, t0:], self.inst.worker_cap, p.U1, p.L1)

    def ps_prices(self, t0: int) -> np.ndarray:
        p = self.params
        return self._price(self.v[:, t0:], self.inst.ps_cap, p.U2, p.L2)

    def commit(self, i: int, y: np.ndarray, z: np.ndarray, t0: int) -> None:
        """Add job i's placement (y[t, h], z[t, k] for slots t0..) to the allocated amounts.

        Every commit is checked against the capacities of the slots it touches (and the job's own
        per-slot rules); a violation is a bug and raises :class:`SolverError` before state changes.
        """
        inst = self.inst
        sl = slice(t0, t0 + y.shape[0])
        g = self.g[:, sl] + y.T[:, :, None] * inst.worker_demand[i][None, None, :]
        v = self.v[:, sl] + z.T[:, :, None] * inst.ps_demand[i][None, None, :]
        Y, Z = y.sum(axis=1), z.sum(axis=1)
        bad = ((g > inst.worker_cap[:, None, :] + 1e-9).any() or (v > inst.ps_cap[:, None, :] + 1e-9).any()
               or (Y > inst.chunks[i]).any() or (Z > Y).any()
               or (inst.worker_gbps[i] * Y > inst.ps_gbps[i] * Z + 1e-9).any() or t0 < inst.arrival[i])
        if bad:
            raise SolverError(f"OASiS would commit an infeasible schedule for job {i}; please report this bug")
        self.g[:, sl] = g
        self.v[:, sl] = v


def _units(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """(S, Tw) units of ``demand`` that fit in ``free`` (S, Tw, R)."""
    need = demand > 0
    q = np.floor(free[:, :, need] / demand[need] + 1e-9).min(axis=2)
    return np.maximum(q, 0).astype(np.int64)


def _cheapest(unit_cost: np.ndarray, units: np.ndarray, nmax: int):
    """Cost of the q cheapest units, q = 0..nmax, per slot; also the server order.

    ``unit_cost`` (S, Tw) and ``units`` (S, Tw). Returns cost (Tw, nmax + 1) (inf beyond what
    fits) and the order (Tw, S) of servers by increasing unit cost.
    """
    order = np.argsort(unit_cost.T, axis=1, kind="stable")                 # (Tw, S)
    c_sorted = np.take_along_axis(unit_cost.T, order, axis=1)
    u_sorted = np.minimum(np.take_along_axis(units.T, order, axis=1), nmax)
    cum = np.cumsum(u_sorted, axis=1)                                       # (Tw, S)
    q = np.arange(1, nmax + 1)
    # server holding the q-th cheapest unit: number of servers whose cumulative units < q
    idx = (cum[:, :, None] < q[None, None, :]).sum(axis=1)                  # (Tw, nmax)
    S = unit_cost.shape[0]
    c_pad = np.concatenate([c_sorted, np.full((c_sorted.shape[0], 1), np.inf)], axis=1)
    per_unit = np.take_along_axis(c_pad, np.minimum(idx, S), axis=1)
    cost = np.concatenate([np.zeros((per_unit.shape[0], 1)), np.cumsum(per_unit, axis=1)], axis=1)
    return cost, order, u_sorted


@dataclass
class SlotCosts:
    """Per-slot cost c_t(y) of y workers (+ their PSs) for slots a..T and the greedy orders."""

    t0: int
    cost: np.ndarray          # (Tw, N + 1)
    w_order: np.ndarray       # (Tw, H)
    w_units: np.ndarray       # (Tw, H) units in that order
    p_order: np.ndarray
    p_units: np.ndarray
    z_of_y: np.ndarray        # (N + 1,)
    min_unit: float           # cheapest price of one worker-slot (with its PS share)
    marginal: np.ndarray      # (Tw, N) price of the y-th cheapest worker-slot in each slot, plus a PS share

    def work_lower_bound(self, R: int) -> float:
        r"""A lower bound on the cost of any schedule doing R worker-slots in these slots.

        A schedule with y_t workers in slot t pays at least the y_t cheapest worker units of slot t
        plus :math:`(b/B)\,y_t` times the cheapest PS unit of slot t; those per-unit amounts are
        ``marginal``, non-decreasing within a slot, so no schedule pays less than the R smallest.
        """
        flat = self.marginal.reshape(-1)
        if R <= 0:
            return 0.0
        if R > flat.size:
            return float("inf")
        part = np.partition(flat, R - 1)[:R]
        return float(part.sum())


def slot_costs(state: Prices, i: int, t0: int | None = None) -> SlotCosts:
    """c_t(y) for job i and slots t0..T (default: its arrival), by the greedy placement."""
    inst = state.inst
    t0 = int(inst.arrival[i]) if t0 is None else t0
    N = int(inst.chunks[i])
    w, s = inst.worker_demand[i], inst.ps_demand[i]
    Pw = state.worker_prices(t0)                                            # (H, Tw, R)
    Pp = state.ps_prices(t0)
    cw = (Pw * w).sum(axis=2)                                               # (H, Tw)
    cp = (Pp * s).sum(axis=2)
    uw = _units(inst.worker_cap[:, None, :] - state.g[:, t0:], w)
    up = _units(inst.ps_cap[:, None, :] - state.v[:, t0:], s)
    z_of_y = inst.ps_needed(i, np.arange(N + 1))
    zmax = int(z_of_y[-1])
    Wc, w_order, w_units = _cheapest(cw, uw, N)
    Pc, p_order, p_units = _cheapest(cp, up, max(zmax, 1))
    cost = Wc + Pc[:, z_of_y]
    cost[:, z_of_y > np.arange(N + 1)] = np.inf                             # more PSs than workers
    ratio = float(inst.worker_gbps[i] / inst.ps_gbps[i])
    min_unit = float(cw.min()) + float(cp.min()) * ratio
    with np.errstate(invalid="ignore"):
        marginal = np.diff(Wc, axis=1) + (cp.min(axis=0) * ratio)[:, None]
    marginal = np.where(np.isnan(marginal), np.inf, marginal)
    return SlotCosts(t0, cost, w_order, w_units, p_order, p_units, z_of_y, min_unit, marginal)


@dataclass
class DualResult:
    """Best schedule of one job at current prices: surplus, completion and per-slot worker counts."""

    surplus: float
    completion: int          # 0: no feasible schedule
    y_total: np.ndarray      # (Tw,) workers per slot from t0
    cost: float
    utility: float
    slots_examined: int
    #: an upper bound on max(0, the best surplus of any schedule): max(0, surplus) where the pass examined every
    #: completion slot or pruned the rest, else also the best the unexamined ones could reach (dual_subroutine)
    bound: float = np.inf


def dual_subroutine(inst: OasisInstance, i: int, sc: SlotCosts, prune: bool = True,
                    budget: Budget | None = None) -> DualResult:
    """Exact max over schedules of f_i(t̂ - a_i + 1) - cost (MODELS.md §3.2), by DP in worker-slots.

    With ``prune`` the pass over completion slots stops once f_i(t̂ - a_i + 1) minus a lower bound
    on the cost of the work (:meth:`SlotCosts.work_lower_bound`) cannot exceed max(best surplus, 0)
    (up to 1e-9 of the bound, for rounding): any positive surplus is unchanged, but a surplus <= 0 may then be
    reported as -inf (no schedule examined further). The pass also stops once ``budget`` is spent
    (one job's pass took up to 0.7 s on 500 jobs x 300 slots; :func:`admit` then rejects the job).

    ``bound``: the pass computes, for each completion slot t it examines, the least cost of R worker-slots done
    by t, so the best over them is exact; a completion at an unexamined slot t or later earns at most
    :math:`f_i(t - a_i + 1) - LB` (f_i non-increasing, LB the work's cost bound), which the pruning has
    shown to be at most max(best, 0) (to 1e-9 of LB) and which a pass the budget stopped adds to the bound.
    """
    R = int(inst.work()[i])
    N = sc.cost.shape[1] - 1
    Tw = sc.cost.shape[0]
    a = int(inst.arrival[i])
    C = np.full(R + 1, np.inf)
    C[0] = 0.0
    choices = np.zeros((Tw, R + 1), dtype=np.int32)
    best = (-np.inf, 0, -1)                      # surplus, completion index (1-based), utility
    lb = sc.work_lower_bound(R) if prune else 0.0
    pad = np.full(N, np.inf)
    examined = 0
    rows = np.arange(R + 1)
    rest = 0.0                                    # the most a completion at an unexamined slot could earn
    for k in range(Tw):
        t = sc.t0 + k
        f_t = float(inst.utility_of(i, t - a + 1))
        if prune and f_t - lb <= max(best[0], 0.0) + 1e-9 * lb:
            break                                 # no completion at t or later beats the best (or 0)
        if budget is not None and budget.expired():
            rest = f_t - (lb if prune else sc.work_lower_bound(R))
            break
        examined += 1
        # cand[r, y] = c_t(y) + C[r - y]  (C[negative] = inf through the padding)
        win = sliding_window_view(np.concatenate([pad, C]), N + 1)[:, ::-1]    # (R + 1, N + 1)
        cand = win + sc.cost[k][None, :]
        yk = np.argmin(cand, axis=1)
        C = cand[rows, yk]
        choices[k] = yk
        if np.isfinite(C[R]) and f_t - C[R] > best[0]:
            best = (f_t - C[R], k + 1, f_t)
    surplus, kk, util = best
    bound = max(surplus, rest, 0.0)
    if kk == 0:
        return DualResult(-np.inf, 0, np.zeros(Tw, np.int64), np.inf, 0.0, examined, bound)
    y = np.zeros(Tw, np.int64)
    r = R
    for k in range(kk - 1, -1, -1):
        y[k] = choices[k, r]
        r -= y[k]
    assert r == 0
    active = np.flatnonzero(y)
    completion = sc.t0 + int(active[-1])
    cost = float(sum(sc.cost[k, y[k]] for k in active))
    true_util = float(inst.utility_of(i, completion - a + 1))
    return DualResult(true_util - cost, completion, y, cost, true_util, examined, bound)


def place(sc: SlotCosts, y_total: np.ndarray, H: int, K: int):
    """Greedy placement of y workers and z(y) PSs per slot on the cheapest servers: y[t, h], z[t, k]."""
    Tw = len(y_total)
    y = np.zeros((Tw, H), np.int64)
    z = np.zeros((Tw, K), np.int64)
    for k in np.flatnonzero(y_total):
        for need, order, units, out in ((int(y_total[k]), sc.w_order[k], sc.w_units[k], y),
                                        (int(sc.z_of_y[y_total[k]]), sc.p_order[k], sc.p_units[k], z)):
            take = np.minimum(units, np.maximum(need - (np.cumsum(units) - units), 0))
            out[k, order] = take
            assert take.sum() == need
    return y, z


#: the reason given to the jobs a spent budget left unconsidered (:func:`run_oasis`)
STOPPED = "not considered: the time limit was reached"


def admit(state: Prices, i: int, budget: Budget | None = None, anytime: bool = False, bounds: list | None = None):
    """The dual subroutine for job i at the current prices (MODELS.md §3.2): commit its schedule iff the surplus is > 0.

    Returns (reason it was rejected or None, (t0, y[t, h], z[t, k]) from slot t0 or None, surplus).
    A job whose pass ``budget`` cut short is rejected (the schedule stays feasible), or with ``anytime`` judged by
    the best schedule the pass found (each is feasible at the current capacity: an unavailable unit costs inf).
    ``bounds``: :attr:`DualResult.bound` of the pass is appended to it (0 for a job that runs none).
    """
    inst = state.inst
    why = state.blocked[i]
    if why is not None:
        if bounds is not None:
            bounds.append(0.0)
        return why, None, np.nan
    if anytime and budget is not None and budget.expired():
        # nothing of the pass fits: no schedule costs less than 0, so f_i at duration 1 bounds its surplus
        if bounds is not None:
            bounds.append(max(float(inst.utility_of(i, 1)), 0.0))
        return STOPPED, None, np.nan
    sc = slot_costs(state, i)
    d = dual_subroutine(inst, i, sc, budget=budget)
    if bounds is not None:
        bounds.append(d.bound)
    if budget is not None and budget.expired() and not (anytime and d.completion > 0):
        return STOPPED, None, np.nan
    if d.completion == 0 and d.slots_examined < sc.cost.shape[0]:
        return "utility cannot cover the cheapest prices of its work", None, d.surplus
    if d.completion == 0:
        return "no feasible schedule in the remaining capacity", None, d.surplus
    if d.surplus <= 0:
        return f"best surplus {d.surplus:.4g} <= 0 at current prices", None, d.surplus
    y, z = place(sc, d.y_total, inst.n_worker_servers, inst.n_ps_servers)
    state.commit(i, y, z, sc.t0)
    return None, (sc.t0, y, z), d.surplus


def schedule_from_plans(inst: OasisInstance, plans: dict[int, tuple], reasons: dict[int, str]) -> OasisSchedule:
    """The schedule of the admitted jobs' plans ``{i: (t0, y[t, h], z[t, k])}`` (rows from slot t0):
    what :func:`~dlsched.instance.oasis.schedule_from_dense` gives for them, without the dense
    (jobs x slots x servers) arrays (7.5M entries each for 500 jobs x 300 slots x 50 servers: 1.1 s)."""
    parts: list[list[np.ndarray]] = [[], []]
    for i, (t0, y, z) in plans.items():
        for out, a in zip(parts, (y, z)):
            a = np.rint(a).astype(np.int64)
            at = np.argwhere(a > 0)
            out.append(np.column_stack([np.full(len(at), i), at[:, 0] + t0, at[:, 1], a[tuple(at.T)]]))
    workers, ps = (np.concatenate(p).astype(np.int64) if p else np.zeros((0, 4), np.int64) for p in parts)
    workers = workers[np.lexsort((workers[:, 2], workers[:, 1], workers[:, 0]))]
    ps = ps[np.lexsort((ps[:, 2], ps[:, 1], ps[:, 0]))]
    admitted = np.zeros(inst.n_jobs, bool)
    admitted[workers[:, 0]] = True
    completion = np.zeros(inst.n_jobs, np.int64)
    np.maximum.at(completion, workers[:, 0], workers[:, 1])
    return OasisSchedule(admitted, workers, ps, completion, dict(reasons))


def run_oasis(inst: OasisInstance, u_scale: float = 1.0, l_scale: float = 1.0, params: PriceParams | None = None,
              l_min_share: float = 0.0, budget: Budget | None = None):
    """Process the jobs in arrival order (ties by index) without the simulator (the offline warm start and
    the sensitivity study use it; method ``oasis`` runs :class:`dlsched.policies.oasis.OasisPolicy`,
    which admits by the same :func:`admit`); returns the schedule and statistics. Once ``budget`` is
    spent the jobs not yet considered are rejected (``stats["stopped_at"]``: how many jobs had been
    considered), so the schedule stays feasible."""
    params = params or price_params(inst, u_scale, l_scale, l_min_share)
    state = Prices(inst, params)
    n = inst.n_jobs
    plans: dict[int, tuple] = {}
    reasons: dict[int, str] = {}
    decision = np.zeros(n)
    surplus = np.full(n, np.nan)
    order = np.argsort(inst.arrival, kind="stable").tolist()
    stopped = None
    for k, i in enumerate(order):
        if budget is not None and budget.expired():
            stopped = k
            reasons.update({j: STOPPED for j in order[k:]})
            break
        t_start = time.perf_counter()
        why, plan, surplus[i] = admit(state, i, budget)
        if plan is not None:
            plans[i] = plan
        if why is not None:
            reasons[i] = why
        decision[i] = time.perf_counter() - t_start

    sched = schedule_from_plans(inst, plans, reasons)
    return sched, {"decision_seconds": decision, "surplus": surplus, "params": params, "state": state,
                   "stopped_at": stopped}

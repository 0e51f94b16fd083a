"""Lower bounds on the average JCT of any schedule of a trace (what no policy can beat).

Two relaxations, each valid for every policy the simulator can run (any allocation over time,
preemption and resizing free):

* **isolated**: job j alone on the whole cluster at its fastest configuration,
  d_j = K_j / max_{(p, w)} f_j(p, w) over the (PS, worker) counts within the job's limits whose
  aggregate demand w d_w + p d_p fits the cluster's total capacity C. JCT_j >= d_j.
* **capacity** (per resource r): every iteration of job j uses at least
  a_j^r / K_j = min_{(p, w)} (w d_w^r + p d_p^r) / f_j(p, w) resource-seconds of r, and the
  cluster supplies C^r per second. Any schedule therefore induces a preemptive schedule of
  processing times a_j^r / C^r with release dates a_j on one machine, on which shortest remaining
  processing time first minimises Σ_j (C_j − a_j) over every schedule, processor sharing
  included (Schrage 1968). So Σ_j JCT_j >= the SRPT flow time of that machine.

* **fluid LP** (:func:`fluid_lp_bound`): a time-indexed LP over the jobs' Pareto-optimal
  configurations with the cluster's aggregate capacity per interval, which combines both.

The bound reported is the largest of these averages (each is a valid bound on the average).
It needs a speed source that depends only on (job type, p, w) (``speed(job_type, p, w)``, e.g.
:class:`~dlsched.sim.speed.TableSpeed`); all-reduce jobs run with p = w as the speed sources do.
"""

from __future__ import annotations

import heapq

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Trace


def _configs(job, total: np.ndarray, dw: np.ndarray, dp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, w, demand per resource) of every configuration of ``job`` that fits the total capacity."""
    ws = np.arange(max(job.min_workers, 1), job.max_workers + 1)
    ps = np.arange(1, job.max_ps + 1) if job.uses_ps else np.zeros(1, dtype=int)
    P, W = (a.ravel() for a in np.meshgrid(ps, ws, indexing="ij"))
    use = W[:, None] * dw[None, :] + P[:, None] * dp[None, :]
    ok = (use <= total[None, :] + 1e-9).all(axis=1)
    return P[ok], W[ok], use[ok]


def srpt_flow_time(release: np.ndarray, work: np.ndarray) -> float:
    """Σ_j (C_j − r_j) of shortest remaining processing time first on one unit-speed machine."""
    order = np.argsort(release, kind="stable")
    heap: list[tuple[float, int]] = []
    t, total, k, n = 0.0, 0.0, 0, len(order)
    while k < n or heap:
        if not heap:
            t = max(t, float(release[order[k]]))
        while k < n and release[order[k]] <= t + 1e-12:
            heapq.heappush(heap, (float(work[order[k]]), int(order[k])))
            k += 1
        rem, j = heapq.heappop(heap)
        nxt = float(release[order[k]]) if k < n else np.inf
        if t + rem <= nxt:
            t += rem
            total += t - float(release[j])
        else:
            heapq.heappush(heap, (rem - (nxt - t), j))
            t = nxt
    return total


def _rates(speed, job, P: np.ndarray, W: np.ndarray, cache: dict) -> np.ndarray:
    """f_j(p, w) over the configurations (memoised per job type and limits: the engine's rates are)."""
    key = (job.job_type, job.uses_ps, job.min_workers, job.max_workers, job.max_ps, len(P))
    if key not in cache:
        pp = P if job.uses_ps else W
        if hasattr(speed, "speeds"):
            cache[key] = np.asarray(speed.speeds(job.job_type, pp, W), dtype=float)
        else:
            cache[key] = np.array([speed.speed(job.job_type, int(p), int(w)) for p, w in zip(pp, W)])
    return cache[key]


def _pareto(rate: np.ndarray, use: np.ndarray) -> np.ndarray:
    """Configurations no other one beats in speed while using no more of any resource."""
    better = (rate[None, :] >= rate[:, None]) & (use[None, :, :] <= use[:, None, :]).all(axis=2)
    strictly = (rate[None, :] > rate[:, None]) | (use[None, :, :] < use[:, None, :]).any(axis=2)
    return np.flatnonzero(~(better & strictly).any(axis=1))


def job_configs(trace: Trace, cluster: Cluster, speed) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per job, (speed in iterations/s, demand per resource) of its Pareto-optimal configurations."""
    if not (hasattr(speed, "speed") or hasattr(speed, "speeds")):
        raise InputError(type(speed).__name__, "speed", "a speed source of (job type, p, w) such as TableSpeed",
                         "a placement-dependent source")
    total = cluster.capacity.sum(axis=0).astype(float)
    names = list(cluster.resources)
    cache: dict = {}
    out = []
    for j, job in enumerate(trace.jobs):
        dw = np.array([job.worker_demand.get(r, 0.0) for r in names], dtype=float)
        dp = np.array([job.ps_demand.get(r, 0.0) for r in names], dtype=float)
        P, W, use = _configs(job, total, dw, dp)
        rate = _rates(speed, job, P, W, cache)
        good = np.flatnonzero(rate > 0)
        if not good.size:
            raise InputError(trace.source, f"jobs[{j}]", "a job with a configuration of positive speed that fits the cluster",
                             job.name)
        keep = good[_pareto(rate[good], use[good])]
        out.append((rate[keep], use[keep]))
    return out


def mean_jct_lower_bound(trace: Trace, cluster: Cluster, speed, *, lp: bool = True, interval: float = 2400.0,
                         time_limit: float = 60.0) -> dict:
    """The bounds of the module docstring on the average JCT of ``trace`` on ``cluster`` (seconds).

    Returns ``{"isolated", "capacity": {resource: ...}, "lp" (or None), "bound"}``, ``bound`` the
    largest; ``lp`` is :func:`fluid_lp_bound` (``interval``, ``time_limit``) unless ``lp`` is false.
    """
    configs = job_configs(trace, cluster, speed)
    total = cluster.capacity.sum(axis=0).astype(float)
    names = list(cluster.resources)
    n = len(trace.jobs)
    K = np.array([job.iterations for job in trace.jobs], dtype=float)
    iso = np.array([K[j] / rate.max() for j, (rate, _) in enumerate(configs)])
    area = np.array([K[j] * (use / rate[:, None]).min(axis=0) for j, (rate, use) in enumerate(configs)])
    arrival = np.array([job.arrival for job in trace.jobs], dtype=float)
    capacity = {names[r]: srpt_flow_time(arrival, area[:, r] / total[r]) / n for r in range(len(names)) if total[r] > 0}
    out = {"isolated": float(iso.mean()), "capacity": capacity, "lp": None}
    if lp:
        out["lp"] = fluid_lp_bound(arrival, K, configs, total, iso, interval=interval, time_limit=time_limit)
    out["bound"] = max(v for v in (out["isolated"], *capacity.values(), out["lp"]) if v is not None)
    return out


def fluid_lp_bound(arrival: np.ndarray, K: np.ndarray, configs, total: np.ndarray, iso: np.ndarray, *,
                   interval: float = 1200.0, time_limit: float = 60.0, horizon: float | None = None) -> float | None:
    r"""A time-indexed fluid LP relaxation's bound on the average JCT (None if HiGHS gives no optimum in time).

    Intervals [t_k, t_k + Δ) up to a horizon H, then one unbounded interval [H, ∞). z_jck ≥ 0 is the
    fraction of interval k in which job j runs its configuration c (speed f_jc, demand u_jc), only
    after its arrival; y_jk = Σ_c z_jck Δ f_jc / K_j is the fraction of j's work done in k, and
    u_j the fraction done after H:

        Σ_c z_jck ≤ |[t_k, t_k + Δ) ∩ [a_j, ∞)| / Δ     (one configuration at a time)
        Σ_j Σ_c z_jck u_jc^r ≤ C^r                     (capacity, every resource r)
        Σ_k y_jk + u_j = 1

    minimise Σ_j [Σ_k y_jk max(t_k, a_j) + u_j H + d_j / 2 − a_j] / n. It is a bound because the
    work of j, spread over time with density at most 1/d_j (d_j its isolated time), has a mean
    time M_j ≥ Σ_k y_jk max(t_k, a_j) and ends at C_j ≥ M_j + d_j/2, and every schedule gives a
    feasible (z, u). Switching configuration is free and tasks need not pack on servers.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n, R = len(K), len(total)
    if horizon is None:
        horizon = float(arrival.max() + 2 * iso.max())
    T = int(np.ceil(horizon / interval))
    starts = np.arange(T) * interval
    rows, cols, vals = [], [], []
    ub_rows, ub_cols, ub_vals = [], [], []
    cost, b_ub = [], []
    n_var = 0
    # capacity rows: k * R + r; per-(j, k) rows after them
    cap_rows = T * R
    b_ub += [float(total[r]) for _ in range(T) for r in range(R)]
    eq_rows, eq_cols, eq_vals = [], [], []
    for j in range(n):
        rate, use = configs[j]
        C = len(rate)
        k0 = int(np.floor(arrival[j] / interval))
        for k in range(k0, T):
            avail = (min(starts[k] + interval, starts[k] + interval) - max(starts[k], arrival[j])) / interval
            if avail <= 0:
                continue
            idx = np.arange(n_var, n_var + C)
            n_var += C
            y = interval * rate / K[j]
            cost += list(y * max(starts[k], arrival[j]))
            eq_rows += [j] * C
            eq_cols += idx.tolist()
            eq_vals += y.tolist()
            row = len(b_ub)
            b_ub.append(avail)
            ub_rows += [row] * C
            ub_cols += idx.tolist()
            ub_vals += [1.0] * C
            for r in range(R):
                nz = use[:, r] > 0
                ub_rows += [k * R + r] * int(nz.sum())
                ub_cols += idx[nz].tolist()
                ub_vals += use[nz, r].tolist()
    # the unbounded last interval
    tail = np.arange(n_var, n_var + n)
    n_var += n
    cost += [horizon] * n
    eq_rows += list(range(n))
    eq_cols += tail.tolist()
    eq_vals += [1.0] * n
    A_ub = coo_matrix((ub_vals, (ub_rows, ub_cols)), shape=(len(b_ub), n_var)).tocsr()
    A_eq = coo_matrix((eq_vals, (eq_rows, eq_cols)), shape=(n, n_var)).tocsr()
    res = linprog(np.array(cost), A_ub=A_ub, b_ub=np.array(b_ub), A_eq=A_eq, b_eq=np.ones(n), bounds=(0, None),
                  method="highs", options={"time_limit": time_limit})
    if res.status != 0:
        return None
    # the dual bound of an optimal LP is its value; HiGHS's optimum is within its tolerances
    return float((res.fun + np.sum(iso / 2 - arrival)) / n)

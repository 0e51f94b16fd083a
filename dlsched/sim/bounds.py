r"""Lower bounds on the average job completion time of a trace, valid for every policy.

For a speed source whose rate depends on a job's PS and worker counts only (DL2's measured
table, :class:`~dlsched.sim.speed.TableSpeed`; Optimus's fitted model), job j at (p, w) runs
:math:`T_j(p, w) = K_j / \text{rate}_j(p, w)` seconds and holds :math:`u^r_j(p, w) = (p e^r_j +
w d^r_j) / C^r` of the cluster's resource r (C^r the cluster total). Over the configurations that
fit the whole cluster:

* **alone**: :math:`C_j \ge a_j + \rho + \min_{p,w} T_j(p, w)`: the job alone on the whole
  cluster at its fastest size, plus the engine's restart cost ρ that every first start pays;
* **capacity** (per resource r): to finish, job j must hold at least
  :math:`A^r_j = \min_{p,w} T_j(p, w)\, u^r_j(p, w)` cluster-seconds of r, whatever sizes it runs
  at (a restart holds resources without progress, which only adds to it), and at any time the
  jobs together hold at most one cluster of r. So every schedule is a preemptive schedule of
  processing times :math:`A^r_j` with release dates :math:`a_j` on one machine, whose smallest
  :math:`\sum_j C_j` is given by SRPT (optimal for 1 | r_j, pmtn | ΣC_j, and sharing the machine
  never helps).

:func:`jct_lower_bound` returns both means and their maximum; :func:`lp_lower_bound` a
capacity-aware LP; :func:`trace_lower_bound` the largest of them all, the bound to report. A speed source that
depends on where the tasks are (locality) is evaluated on one nominal server of each GPU type
(:func:`job_configurations`); the bound is then valid only if the best of those placements is at
least as fast as any other (true of every speed source in :mod:`dlsched.sim.speed`).
"""

from __future__ import annotations

import heapq

import numpy as np

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Trace
from dlsched.sim.policy import Placement
from dlsched.sim.speed import Noisy


def type_servers(cluster: Cluster) -> np.ndarray:
    """One server of each GPU type (the first of each, server 0 among them): the nominal servers a
    size is evaluated on."""
    return np.unique(np.array(cluster.gpu_type, dtype=object), return_index=True)[1]


def job_configurations(job, cluster: Cluster, speed, nominal: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(T_j(p, w) seconds, u_j(p, w) shares of shape (n, R)) of every size (p, w) that fits the cluster
    total and runs at a positive rate. On a cluster of several GPU types the rate of a size is the
    best over its tasks all on one server of each type (:func:`type_servers`): a speed source whose
    rate grows with each worker's own type's speed (``ThroughputSpeed``: the sum of per-worker
    rates) runs no mix of types faster, so the bounds stay valid whatever types a policy uses.
    ``nominal``: ``type_servers(cluster).tolist()`` if the caller has it (one pass over the servers
    per trace, not per job)."""
    total = cluster.total()
    nominal = type_servers(cluster).tolist() if nominal is None else nominal
    cap = np.where(total > 0, total, np.inf)
    times, shares = [], []
    for p, w, held in fitting_sizes(job, cluster):
        rate = max(float(speed.rate(job, Placement({s: w}, {s: p} if p else {}), cluster)) for s in nominal)
        if rate > 0:
            times.append(job.iterations / rate)
            shares.append(held / cap)
    return np.asarray(times, dtype=float), np.asarray(shares, dtype=float).reshape(-1, len(total))


def fitting_sizes(job, cluster: Cluster):
    """(p, w, what the size holds, p e + w d) of every size of ``job`` within the cluster's total."""
    total = cluster.total()
    dw, dp = cluster.vector(job.worker_demand), cluster.vector(job.ps_demand)
    for p in range(1, job.max_ps + 1) if job.uses_ps else (0,):
        for w in range(job.min_workers, job.max_workers + 1):
            held = p * dp + w * dw
            if not np.any(held > total + 1e-9):
                yield p, w, held


def srpt_completions(release: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Completion times of preemptive SRPT on one unit-speed machine (optimal ΣC_j with release dates)."""
    order = np.argsort(release, kind="stable")
    done = np.empty(len(work))
    heap: list = []
    t, k = 0.0, 0
    while k < len(order) or heap:
        if not heap:
            t = max(t, float(release[order[k]]))
        while k < len(order) and release[order[k]] <= t:
            j = int(order[k])
            heapq.heappush(heap, (float(work[j]), j))
            k += 1
        left, j = heapq.heappop(heap)
        nxt = float(release[order[k]]) if k < len(order) else np.inf
        if t + left <= nxt:
            t += left
            done[j] = t
        else:
            heapq.heappush(heap, (left - (nxt - t), j))
            t = nxt
    return done


def jct_lower_bound(trace: Trace, cluster: Cluster, speed, restart_seconds: float = 0.0) -> dict:
    """Lower bounds on the average JCT of ``trace`` (module docstring): ``alone``, ``capacity``
    (per resource) and ``bound`` = their maximum, in seconds; ``None`` entries if a job fits nowhere."""
    arrival = np.array([j.arrival for j in trace.jobs], dtype=float)
    alone = np.empty(len(trace.jobs))
    area = np.empty((len(trace.jobs), len(cluster.resources)))
    nominal = type_servers(cluster).tolist()
    for i, job in enumerate(trace.jobs):
        T, u = job_configurations(job, cluster, speed, nominal)
        if T.size == 0:
            return {"alone": None, "capacity": None, "bound": None, "unschedulable": job.name}
        alone[i] = restart_seconds + T.min()
        area[i] = (T[:, None] * u).min(axis=0)
    capacity = {r: float(np.mean(srpt_completions(arrival, area[:, k]) - arrival))
                for k, r in enumerate(cluster.resources) if cluster.total()[k] > 0}
    mean_alone = float(alone.mean())
    return {"alone": mean_alone, "capacity": capacity, "bound": max(mean_alone, *capacity.values())}


def pareto(times: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Indices of the sizes no other size beats on time and on every resource share at once."""
    a = np.c_[times, shares]
    le = np.all(a[:, None, :] <= a[None, :, :] + 1e-12, axis=2)      # le[i, k]: i is no worse than k everywhere
    lt = np.any(a[:, None, :] < a[None, :, :] - 1e-12, axis=2)
    dominated = np.any(le & lt, axis=0)
    return np.flatnonzero(~dominated)


def gpu_types(cluster: Cluster) -> list[str]:
    """The GPU types of the cluster's servers with GPUs, sorted (none if it has no GPU resource)."""
    if "gpu" not in cluster.resources:
        return []
    g = cluster.index("gpu")
    return sorted({t for s, t in enumerate(cluster.gpu_type) if cluster.capacity[s, g] > 0})


def type_pools(cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The capacity pools of the type-aware LP: each non-GPU resource of the cluster, and the GPUs of
    each GPU type apart. Returns (names, totals, ``nominal``: one server of each type, in the pools'
    type order)."""
    g = cluster.index("gpu")
    total = cluster.total()
    types = gpu_types(cluster)
    gpus = np.array([cluster.capacity[[t == k for t in cluster.gpu_type], g].sum() for k in types])
    other = [r for r in range(len(cluster.resources)) if r != g and total[r] > 0]
    names = [cluster.resources[r] for r in other] + [f"gpu:{k}" for k in types]
    nominal = np.array([cluster.gpu_type.index(k) for k in types])
    return names, np.r_[total[other], gpus], nominal


def typed_configurations(job, cluster: Cluster, speed, nominal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T_{j,ck} seconds, shares of :func:`type_pools`' pools) of every size c = (p, w) that fits the
    cluster total on each GPU type k apart (its tasks all on ``nominal[k]``), where the rate is
    positive: the columns of the type-aware LP, sizes on one type each."""
    _, pool_total, _ = type_pools(cluster)
    g = cluster.index("gpu")
    total = cluster.total()
    other = [r for r in range(len(cluster.resources)) if r != g and total[r] > 0]
    K = nominal.size
    times, shares = [], []
    for p, w, held in fitting_sizes(job, cluster):
        for k, s in enumerate(nominal):
            rate = float(speed.rate(job, Placement({int(s): w}, {int(s): p} if p else {}), cluster))
            if rate > 0:
                use = np.r_[held[other], np.zeros(K)]
                use[len(other) + k] = held[g]
                times.append(job.iterations / rate)
                shares.append(use / pool_total)
    return np.asarray(times, dtype=float), np.asarray(shares, dtype=float).reshape(-1, pool_total.size)


def lp_lower_bound(trace: Trace, cluster: Cluster, speed, restart_seconds: float = 0.0, *,
                   slot_seconds: float = 1800.0, horizon: float | None = None, by_type: bool | None = None,
                   window: float | None = None) -> dict:
    r"""A capacity-aware LP lower bound on the average JCT (time-indexed, mean busy time).

    Time is cut into slots of ``slot_seconds`` up to ``horizon`` (default: the last arrival plus
    the longest single-job time, twice), then one unbounded tail slot. :math:`y_{jck}` is the
    fraction of job j done at size c in slot k (sizes: :func:`pareto` of
    :func:`job_configurations`, the others are never needed by the relaxation); it takes
    :math:`y_{jck} T_{jc}` seconds and :math:`y_{jck} T_{jc} u^r_{jc}` cluster-seconds of r:

    .. math:: \sum_{c,k} y_{jck} = 1, \quad \sum_c y_{jck} T_{jc} \le |k \cap [a_j, \infty)|, \quad
              \sum_{j,c} y_{jck} T_{jc} u^r_{jc} \le |k| \ (k \ne \text{tail}),

    :math:`C_j \ge \sum_{c,k} y_{jck} \max(s_k, a_j) + \min_c T_{jc} / 2` (a job's progress has
    density at most :math:`1/\min_c T_{jc}` over time, so its mean time is at least
    :math:`\min_c T_{jc}/2` before its completion; each slot is charged at its start) and
    :math:`C_j \ge a_j + \rho + \min_c T_{jc}`; minimise :math:`\frac1n \sum_j (C_j - a_j)`.
    Every schedule gives a feasible point, so the optimum is a lower bound. Solved by HiGHS
    (:func:`scipy.optimize.linprog`). Returns ``{"bound": seconds, "status": ..., "slots": ...}``.

    **By type** (``by_type``; by default on a cluster of several GPU types whose speed source
    declares ``per_worker_types``): a size c is a column per GPU type g, at its rate with every task
    on type g (:func:`typed_configurations`), and the GPUs of each type are a pool of their own
    (:func:`type_pools`): :math:`\sum_{j,c} y_{jcgk} T_{jcg}\, w_c / G_g \le |k|`. A placement of w
    workers, :math:`w_g` on type g, runs at most :math:`\sum_g (w_g / w)\, \text{rate}_g(c)` when
    the source's rate is a sum of per-worker rates (``ThroughputSpeed``, either reading of a mix):
    so t seconds of it are the point :math:`w_g t / w` seconds of c on each type g, which spends
    the same GPU-seconds of each type and the same t seconds of the job: every schedule, mixed
    types included, is still a feasible point.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    jobs = trace.jobs
    n = len(jobs)
    arrival = np.array([j.arrival for j in jobs], dtype=float)
    if by_type is None:
        by_type = bool(getattr(speed, "per_worker_types", False)) and len(gpu_types(cluster)) > 1
    if by_type:
        pools, _, typed_nominal = type_pools(cluster)
    else:
        pools = [r for r, t in zip(cluster.resources, cluster.total()) if t > 0]
        nominal = type_servers(cluster).tolist()
        has = cluster.total() > 0
    conf = []
    for job in jobs:
        if by_type:
            T, u = typed_configurations(job, cluster, speed, typed_nominal)
        else:
            T, u = job_configurations(job, cluster, speed, nominal)
            u = u[:, has]
        if T.size == 0:
            return {"bound": None, "status": f"job {job.name} fits nowhere", "slots": 0}
        keep = pareto(T, u)
        conf.append((T[keep], u[keep], float(T.min())))
    tmin = np.array([c[2] for c in conf])
    end = arrival + window * tmin if window is not None else None
    if horizon is None:
        horizon = float(end.max() if window is not None else arrival.max() + 2 * tmin.max())
    start = np.arange(int(np.ceil(horizon / slot_seconds)) + 1) * slot_seconds
    K = start.size - 1                               # slot k = [start[k], start[k+1]); slot K is the tail
    length = np.diff(start)
    cols_job, cols_T, cols_u, cols_k, cols_t = [], [], [], [], []
    for j, (T, u, _) in enumerate(conf):
        k0 = min(int(np.searchsorted(start, arrival[j], side="right")) - 1, K)
        k1 = K if window is None else min(int(np.searchsorted(start, end[j])), K)     # job j's tail starts at start[k1]
        ks = np.arange(k0, k1 + 1)
        cc, kk = np.meshgrid(np.arange(T.size), ks, indexing="ij")
        cols_job.append(np.full(cc.size, j))
        cols_T.append(T[cc.ravel()])
        cols_u.append(u[cc.ravel()])
        cols_k.append(np.where(kk.ravel() == k1, K, kk.ravel()))      # its tail: no capacity row
        cols_t.append(np.maximum(start[kk.ravel()], arrival[j]))
    job_of, Tc, uc, kc, tc = (np.concatenate(x) for x in (cols_job, cols_T, cols_u, cols_k, cols_t))
    m = job_of.size
    # variables: y (m), then C (n)
    finite = kc < K
    rows, cols, vals, ub = [], [], [], []
    # per job and finite slot: time used <= the slot's length after the arrival
    jk = job_of[finite] * K + kc[finite]
    uniq, inv = np.unique(jk, return_inverse=True)
    rows.append(inv)
    cols.append(np.flatnonzero(finite))
    vals.append(Tc[finite])
    jj, kk = uniq // K, uniq % K
    ub.append(start[kk + 1] - np.maximum(start[kk], arrival[jj]))
    off = uniq.size
    # per pool and finite slot: pool-seconds used <= the slot's length
    for r in range(len(pools)):
        held = finite & (uc[:, r] > 0)
        rows.append(off + kc[held])
        cols.append(np.flatnonzero(held))
        vals.append(Tc[held] * uc[held, r])
        ub.append(length)
        off += K
    # mean busy time: sum_c,k t y - C_j <= -tmin_j / 2
    rows.append(off + job_of)
    cols.append(np.arange(m))
    vals.append(tc)
    rows.append(off + np.arange(n))
    cols.append(m + np.arange(n))
    vals.append(-np.ones(n))
    ub.append(-tmin / 2)
    off += n
    A_ub = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(off, m + n))
    A_eq = sp.csr_matrix((np.ones(m), (job_of, np.arange(m))), shape=(n, m + n))
    c = np.r_[np.zeros(m), np.full(n, 1.0 / n)]
    bounds = np.c_[np.zeros(m + n), np.full(m + n, np.inf)]
    bounds[m:, 0] = arrival + restart_seconds + tmin
    res = linprog(c, A_ub=A_ub, b_ub=np.concatenate(ub), A_eq=A_eq, b_eq=np.ones(n), bounds=bounds, method="highs")
    if res.status != 0:
        return {"bound": None, "status": res.message, "slots": K, "by_type": by_type}
    return {"bound": float(res.fun - arrival.mean()), "status": "optimal", "slots": K, "variables": m + n,
            "by_type": by_type}


def trace_lower_bound(trace: Trace, cluster: Cluster, speed, restart_seconds: float = 0.0, *,
                      slot_seconds: float = 1800.0, window: float | None = None) -> dict:
    """The best of :func:`jct_lower_bound` and :func:`lp_lower_bound` (its ``slot_seconds`` and
    ``window``) on ``trace``: ``alone``, ``capacity`` (per resource), ``lp`` (with ``lp_status``)
    and ``bound`` = the largest of them (``None`` if none is defined, i.e. a job fits nowhere)."""
    simple = jct_lower_bound(trace, cluster, speed, restart_seconds)
    lp = lp_lower_bound(trace, cluster, speed, restart_seconds, slot_seconds=slot_seconds, window=window)
    vals = [v for v in (simple["bound"], lp["bound"]) if v is not None]
    return {"alone": simple["alone"], "capacity": simple["capacity"], "lp": lp["bound"], "lp_status": lp["status"],
            "lp_by_type": lp.get("by_type", False), "lp_slot_seconds": slot_seconds, "lp_window": window,
            "bound": max(vals) if vals else None}


def certified_bound(res, trace: Trace, cluster: Cluster, speed, *, lp: bool = False,
                    slot_seconds: float = 1800.0, window: float | None = None) -> dict:
    """The lower bound on the average JCT beside a simulated run ``res`` of ``trace``: ``lower_bound``
    (seconds: :func:`jct_lower_bound`, or :func:`trace_lower_bound` with ``lp``, its ``slot_seconds``
    and ``window``) over the jobs the
    run can complete (its unschedulable jobs left out), ``lower_bound_parts``, and ``ratio_to_bound``
    = the run's average JCT / the bound (None unless the run completed). Under speed noise no bound
    is certified (a draw may beat every nominal rate): ``lower_bound`` is None, with the reason."""

    if isinstance(speed, Noisy) and speed.sigma > 0:
        return {"lower_bound": None, "ratio_to_bound": None,
                "lower_bound_note": "no certified bound under speed noise (a draw may beat every nominal rate)"}
    skip = set(res.unschedulable)
    kept = Trace(tuple(j for j in trace.jobs if j.name not in skip), trace.source) if skip else trace
    if not kept.jobs:
        return {"lower_bound": None, "ratio_to_bound": None, "lower_bound_note": "no schedulable job"}
    if lp:
        parts = trace_lower_bound(kept, cluster, speed, res.restart_seconds, slot_seconds=slot_seconds, window=window)
    else:
        parts = jct_lower_bound(kept, cluster, speed, res.restart_seconds)
    bound = parts.pop("bound")
    avg = res.summary()["avg_jct"] if res.status == "completed" else None
    return {"lower_bound": bound, "lower_bound_parts": parts,
            "ratio_to_bound": avg / bound if avg is not None and bound else None}

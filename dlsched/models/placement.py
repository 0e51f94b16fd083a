r"""Heterogeneous job sizing and placement (MODELS.md §4.1, §4.2).

Job completion time of job i on the worker set :math:`W_i` (:math:`n_i = |W_i|`):

.. math::

    J_i = T_i \Big( \frac{P_i}{\sum_{k \in W_i} \rho_{i,k}} + \mathrm{comm}_i(n_i, r_i) \Big)
    \quad\text{(proportional workload)},\qquad
    J_i = T_i \Big( \frac{P_i / n_i}{\min_{k \in W_i} \rho_{i,k}} + \mathrm{comm}_i \Big)
    \quad\text{(equal split)}

.. math::

    \mathrm{comm}^{\mathrm{ring}}_i = \frac{2 (n_i - 1)}{n_i} \frac{D_i}{r_i},\qquad
    \mathrm{comm}^{\mathrm{ps}}_i = 2 (n_i - 1) \frac{D_i}{r_i},\qquad
    r_i = \begin{cases} r_{\mathrm{intra}} & W_i \text{ inside one server} \\
                        r_{\mathrm{inter}} & \text{otherwise} \end{cases}

(``ps``: one parameter server co-located with one of the workers, whose link carries the
other :math:`n_i - 1` pushes and pulls.) Objective: :math:`\min \frac1n \sum_i J_i`.

**Exact reference (§4.2).** :math:`J_i` depends on :math:`W_i` only through the type-count
vector :math:`c = (n_{i,1}..n_{i,G})` and whether :math:`W_i` spans servers. Configurations
of job i are therefore

* *any-server* ``(c, -1)``: :math:`1 \le \sum c \le M_i`, valued with :math:`r_{\mathrm{inter}}`
  (with :math:`r_{\mathrm{intra}}`, i.e. no communication, when :math:`\sum c = 1`); uses
  :math:`c_g` of type row g;
* *one-server* ``(c, s)`` for :math:`\sum c \ge 2` GPUs all on server s, valued with
  :math:`r_{\mathrm{intra}}`; uses :math:`c_g` of type row g and of server row (s, g).

MCMDK: choose exactly one configuration per job, type rows :math:`\le N_g`, server rows
:math:`\le` the server's GPUs of that type. Every placement maps to a configuration of the
same JCT (a one-server job to its ``(c, s)``, a spanning job to ``(c, -1)``), and every MCMDK
solution decodes into a placement (:func:`decode`: one-server jobs first, then the others take
any remaining GPU of their types) whose true JCTs are no larger than the configuration values
(an any-server job that happens to land on one server only gets faster). Hence the MCMDK
optimum is the optimum of the placement model: this is what "exact" means here.
"""

from __future__ import annotations

import itertools

import numpy as np

# the JCT model and the §4.2 configurations are part of the instance (its to_core() needs them)
from dlsched.instance.placement import (CoreModel, GpuAssignment, PlacementInstance, comm_seconds, core_model,  # noqa: F401
                                        count_vectors, jct_counts)

# ------------------------------------------------------------------------------ evaluation

def evaluate(inst: PlacementInstance, placement: GpuAssignment, workload: str | None = None) -> np.ndarray:
    """JCT of every job under ``placement`` (``inf`` for a job with no GPU)."""
    G = inst.n_types
    used = placement.gpu_job >= 0
    jobs = placement.gpu_job[used]
    counts = np.zeros((inst.n_jobs, G))
    np.add.at(counts, (jobs, inst.gpu_type[used]), 1.0)
    srv = inst.gpu_server[used]
    lo = np.full(inst.n_jobs, np.iinfo(np.int64).max)
    hi = np.full(inst.n_jobs, -1)
    np.minimum.at(lo, jobs, srv)
    np.maximum.at(hi, jobs, srv)
    spans = hi > lo
    out = np.full(inst.n_jobs, np.inf)
    have = counts.sum(axis=1) > 0
    idx = np.flatnonzero(have)
    out[idx] = jct_counts(inst, idx, counts[idx], spans[idx], workload)
    return out


def workloads(inst: PlacementInstance, gpu_job: np.ndarray, workload: str | None = None) -> np.ndarray:
    r"""Samples per iteration of every GPU: :math:`P_i \rho_{i,k} / \sum_{k'} \rho_{i,k'}` or :math:`P_i / n_i`."""
    workload = workload or inst.workload
    gpu_job = np.asarray(gpu_job)
    used = gpu_job >= 0
    jobs = gpu_job[used]
    out = np.zeros(gpu_job.size)
    if workload == "proportional":
        r = inst.rho[jobs, inst.gpu_type[used]]
        total = np.bincount(jobs, weights=r, minlength=inst.n_jobs)
        out[used] = inst.global_batch[jobs] * r / total[jobs]
    else:
        n = np.bincount(jobs, minlength=inst.n_jobs)
        out[used] = inst.global_batch[jobs] / n[jobs]
    return out


def alone_jct(inst: PlacementInstance, workload: str | None = None) -> np.ndarray:
    r""":math:`J_i^{\mathrm{alone}}`: the least JCT of job i with the whole cluster to itself.

    Over :math:`n \le M_i`: the n GPUs of largest :math:`\rho_{i,\cdot}` anywhere (valued as
    spanning servers), or n GPUs of one server's type on a server that holds them (intra).
    """
    key = workload or inst.workload
    cache = getattr(inst, "_alone_cache", {})
    if key in cache:
        return cache[key]
    n, G = inst.n_jobs, inst.n_types
    N = inst.type_counts
    biggest = np.zeros(G, dtype=np.int64)
    np.maximum.at(biggest, inst.server_type, inst.server_gpus)
    Mmax = int(inst.max_workers.max())
    ns = np.arange(1, Mmax + 1)                                   # (M,)
    # top-n counts: fill the job's fastest type first (best for both splits: it maximises the
    # sum and the minimum of rho); rank[i, g] = position of type g in job i's order
    order = np.argsort(-inst.rho, axis=1, kind="stable")          # (n, G)
    prev = np.concatenate([np.zeros((n, 1)), np.cumsum(N[order], axis=1)[:, :-1]], axis=1)
    before = np.empty_like(prev)
    np.put_along_axis(before, order, prev, axis=1)                # GPUs of faster types, per type
    counts = np.clip(ns[None, :, None] - before[:, None, :], 0, N[None, None, :])   # (n, M, G)
    rows = np.broadcast_to(np.arange(n)[:, None], (n, Mmax))
    allowed = ns[None, :] <= inst.max_workers[:, None]
    best = np.where(allowed, jct_counts(inst, rows, counts, np.broadcast_to(ns > 1, rows.shape), workload), np.inf).min(axis=1)
    for g in range(G):
        one = np.zeros((Mmax, G))
        one[:, g] = ns
        ok = allowed & (ns <= biggest[g])[None, :]
        if ok.any():
            val = jct_counts(inst, rows, np.broadcast_to(one, (n, Mmax, G)), np.zeros(rows.shape, bool), workload)
            best = np.minimum(best, np.where(ok, val, np.inf).min(axis=1))
    out = best
    inst._alone_cache = {**cache, key: out}
    return out


# ------------------------------------------------------------------------------ decoding and the brute-force reference

def decode(inst: PlacementInstance, model: CoreModel, choice: np.ndarray) -> GpuAssignment:
    """Turn a core solution into a placement: one-server jobs on their server, then the others."""
    cols = model.core.job_ptr[:-1] + np.asarray(choice)
    gpu_job = np.full(inst.n_gpus, -1, dtype=np.int64)
    free = [list(np.flatnonzero(inst.gpu_server == s)) for s in range(inst.n_servers)]
    server = model.col_server[cols]
    for i in np.flatnonzero(server >= 0):
        m = int(model.col_counts[cols[i]].sum())
        take, free[server[i]] = free[server[i]][:m], free[server[i]][m:]
        gpu_job[take] = i
    pool = [[k for s in range(inst.n_servers) if inst.server_type[s] == g for k in free[s]] for g in range(inst.n_types)]
    # any-server jobs, largest first, each from as few servers as the pools allow (pools are server-ordered)
    rest = np.flatnonzero(server < 0)
    for i in rest[np.argsort(-model.col_counts[cols[rest]].sum(axis=1), kind="stable")]:
        for g, m in enumerate(model.col_counts[cols[i]].tolist()):
            take, pool[g] = pool[g][:m], pool[g][m:]
            gpu_job[take] = i
    return GpuAssignment(gpu_job, workloads(inst, gpu_job))


def brute_force(inst: PlacementInstance, sizes: np.ndarray | None = None) -> tuple[float, GpuAssignment]:
    """Best average JCT over every map GPU -> job or idle (tiny cases: (n+1)^K maps).

    With ``sizes``, only maps giving job i exactly ``sizes[i]`` GPUs (the best assignment
    of a category, MODELS.md §4.3). Independent of the MCMDK: it enumerates GPUs, not counts.
    """
    n, K = inst.n_jobs, inst.n_gpus
    if (n + 1) ** K > 2_000_000:
        raise ValueError(f"brute force is for tiny cases: {(n + 1) ** K} maps")
    best, best_map = np.inf, None
    for assign in itertools.product(range(-1, n), repeat=K):
        a = np.array(assign)
        sz = np.bincount(a[a >= 0], minlength=n)
        if sz.min() < 1 or np.any(sz > inst.max_workers) or (sizes is not None and np.any(sz != sizes)):
            continue
        val = evaluate(inst, GpuAssignment(a, np.zeros(K))).mean()
        if val < best - 1e-12:
            best, best_map = val, a
    return float(best), GpuAssignment(best_map, workloads(inst, best_map))

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

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from dlsched.instance.core import MCMDK
from dlsched.instance.placement import Placement, PlacementInstance

MB_TO_GBIT = 8.0 / 1000.0


# ------------------------------------------------------------------------------ the JCT model

def comm_seconds(inst: PlacementInstance, i, n, spans) -> np.ndarray:
    r""":math:`\mathrm{comm}_i(n, r)` per iteration (vectorised over i, n, spans)."""
    n = np.asarray(n, dtype=float)
    r = np.where(np.asarray(spans, dtype=bool), inst.inter_gbps, inst.intra_gbps)
    volume = 2.0 * (n - 1.0) / np.maximum(n, 1.0) if inst.communication == "ring" else 2.0 * (n - 1.0)
    return volume * inst.model_size_mb[i] * MB_TO_GBIT / r


def jct_counts(inst: PlacementInstance, i, counts, spans, workload: str | None = None) -> np.ndarray:
    r""":math:`J_i` from type-count vectors ``counts`` (``(..., G)``) and a spans-servers flag."""
    workload = workload or inst.workload
    i = np.asarray(i)
    counts = np.asarray(counts, dtype=float)
    rho = inst.rho[i]
    n = counts.sum(axis=-1)
    if workload == "proportional":
        compute = inst.global_batch[i] / np.einsum("...g,...g->...", counts, rho)
    else:
        slowest = np.where(counts > 0, rho, np.inf).min(axis=-1)
        compute = inst.global_batch[i] / n / slowest
    return inst.iterations[i] * (compute + comm_seconds(inst, i, n, spans))


def evaluate(inst: PlacementInstance, placement: Placement, workload: str | None = None) -> np.ndarray:
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


def jain(x) -> float:
    r"""Jain's index :math:`(\sum x)^2 / (n \sum x^2)` (1 = all equal)."""
    x = np.asarray(x, dtype=float)
    return float(x.sum() ** 2 / (x.size * np.square(x).sum())) if x.size else 1.0


# ------------------------------------------------------------------------------ exact reference

@lru_cache(maxsize=64)
def count_vectors(G: int, M: int) -> np.ndarray:
    """All c in Z^G_{>=0} with 1 <= sum(c) <= M, as a (rows, G) int array."""
    if G == 1:
        return np.arange(1, M + 1)[:, None]
    out = []
    sub = np.vstack([np.zeros((1, G - 1), dtype=np.int64), count_vectors(G - 1, M)])
    for first in range(M + 1):
        rest = sub[sub.sum(axis=1) <= M - first]
        block = np.hstack([np.full((rest.shape[0], 1), first), rest])
        out.append(block[block.sum(axis=1) >= 1])
    return np.vstack(out).astype(np.int64)


@dataclass
class CoreModel:
    """The MCMDK and, per column, its job, type counts and server (``-1``: any server)."""

    core: MCMDK
    col_counts: np.ndarray   # (cols, G)
    col_server: np.ndarray   # (cols,)


def core_model(inst: PlacementInstance) -> CoreModel:
    """Build (once, cached on the instance) the MCMDK of MODELS.md §4.2; see the module docstring."""
    cached = getattr(inst, "_core_model", None)
    if cached is not None:
        return cached
    G, S, n = inst.n_types, inst.n_servers, inst.n_jobs
    N = inst.type_counts
    counts_l, server_l, jcts, ptr = [], [], [], [0]
    for i in range(n):
        M = int(inst.max_workers[i])
        c = count_vectors(G, M)
        c = c[np.all(c <= N, axis=1)]
        single = c.sum(axis=1) == 1
        blocks_c, blocks_s = [c], [np.full(c.shape[0], -1)]
        vals = [jct_counts(inst, i, c, ~single)]
        for s in range(S):
            cap = min(int(inst.server_gpus[s]), M)
            if cap >= 2:
                m = np.arange(2, cap + 1)
                cs = np.zeros((m.size, G), dtype=np.int64)
                cs[:, inst.server_type[s]] = m
                blocks_c.append(cs)
                blocks_s.append(np.full(m.size, s))
                vals.append(jct_counts(inst, i, cs, np.zeros(m.size, bool)))
        counts_l.append(np.vstack(blocks_c))
        server_l.append(np.concatenate(blocks_s))
        jcts.append(np.concatenate(vals))
        ptr.append(ptr[-1] + counts_l[-1].shape[0])
    col_counts = np.vstack(counts_l)
    col_server = np.concatenate(server_l)
    value = np.concatenate(jcts) / n
    ncol = value.size
    # type rows 0..G-1, then server rows G..G+S-1 (a server holds one GPU type)
    tr, tc = np.nonzero(col_counts.T)
    data = [col_counts.T[tr, tc]]
    rows, cols = [tr], [tc]
    on = np.flatnonzero(col_server >= 0)
    rows.append(G + col_server[on])
    cols.append(on)
    data.append(col_counts[on].sum(axis=1))
    A = sp.csr_matrix((np.concatenate(data).astype(float), (np.concatenate(rows), np.concatenate(cols))), shape=(G + S, ncol))
    b = np.concatenate([N, inst.server_gpus]).astype(float)
    labels = tuple(f"{'+'.join(f'{int(k)}x{inst.gpu_types[g]}' for g, k in enumerate(cc) if k)}@{inst.server_names[s] if s >= 0 else 'any'}"
                   for cc, s in zip(col_counts.tolist(), col_server.tolist())) if ncol <= 200_000 else None
    core = MCMDK(value, A, b, np.asarray(ptr), "min", "exactly_one", inst.name, inst.job_names,
                 tuple(f"type:{g}" for g in inst.gpu_types) + tuple(f"server:{s}" for s in inst.server_names),
                 labels, inst.reference, {"family": "placement"}, inst.source)
    model = CoreModel(core, col_counts, col_server)
    inst._core_model = model  # the instance is immutable in practice; building is the costly part
    return model


def decode(inst: PlacementInstance, model: CoreModel, choice: np.ndarray) -> Placement:
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
    return Placement(gpu_job, workloads(inst, gpu_job))


def brute_force(inst: PlacementInstance, sizes: np.ndarray | None = None) -> tuple[float, Placement]:
    """Best average JCT over every map GPU -> job or idle (tiny cases: (n+1)^K maps).

    With ``sizes``, only maps giving job i exactly ``sizes[i]`` GPUs (the best assignment
    of a category, MODELS.md §4.3). Independent of the MCMDK: it enumerates GPUs, not counts.
    """
    import itertools

    n, K = inst.n_jobs, inst.n_gpus
    if (n + 1) ** K > 2_000_000:
        raise ValueError(f"brute force is for tiny cases: {(n + 1) ** K} maps")
    best, best_map = np.inf, None
    for assign in itertools.product(range(-1, n), repeat=K):
        a = np.array(assign)
        sz = np.bincount(a[a >= 0], minlength=n)
        if sz.min() < 1 or np.any(sz > inst.max_workers) or (sizes is not None and np.any(sz != sizes)):
            continue
        val = evaluate(inst, Placement(a, np.zeros(K))).mean()
        if val < best - 1e-12:
            best, best_map = val, a
    return float(best), Placement(best_map, workloads(inst, best_map))

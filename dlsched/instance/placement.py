r"""The ``placement`` family's data: heterogeneous GPUs, jobs, and a placement (MODELS.md §4.1).

=====================  ==================================================================
symbol                 field
=====================  ==================================================================
:math:`k = 1..K`       GPUs; ``gpu_type[k]`` (index into ``gpu_types``), ``gpu_server[k]``
:math:`N_g`            ``type_counts[g]``: GPUs of type g
:math:`i = 1..n`       jobs; ``job_names``, ``job_types`` (e.g. a Gavel job type)
:math:`\rho_{i,g}`     ``rho[i, g]``: samples/s of job i on one GPU of type g
:math:`P_i`            ``global_batch[i]``: samples per iteration
:math:`T_i`            ``iterations[i]``
:math:`D_i`            ``model_size_mb[i]``: bytes exchanged per all-reduce, in MB
:math:`M_i`            ``max_workers[i]``: largest number of workers job i may get
:math:`r`              ``intra_gbps`` when all workers of a job share a server, else ``inter_gbps``
=====================  ==================================================================

A :class:`GpuAssignment` gives each GPU its job (``-1`` idle) and its workload (samples per
iteration). The instance's model options say how JCTs are computed: ``communication``
(``ring`` all-reduce or ``ps``) and ``workload`` (``proportional`` or ``equal`` split).
The JCT model and the §4.2 configurations (what :meth:`PlacementInstance.to_core` needs) are
here, at the bottom of the layers; evaluation, decoding and the brute-force reference are in
:mod:`dlsched.models.placement`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import scipy.sparse as sp

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK, Reference
from dlsched.instance.fields import array_argument, names_argument, number_argument

COMMUNICATION = ("ring", "ps")
#: the largest cluster a placement instance may describe (the checker and the methods keep per-GPU arrays)
MAX_GPUS = 100_000
WORKLOAD = ("proportional", "equal")


@dataclass(eq=False)
class PlacementInstance:
    """Jobs to place on a heterogeneous GPU cluster (MODELS.md §4.1); symbols in the module docstring."""

    gpu_types: tuple[str, ...]
    server_names: tuple[str, ...]
    server_type: np.ndarray           # (S,) type index of each server's GPUs
    server_gpus: np.ndarray           # (S,) GPUs per server
    job_names: tuple[str, ...]
    job_types: tuple[str, ...]
    rho: np.ndarray                   # (n, G) samples/s
    global_batch: np.ndarray          # (n,) P_i
    iterations: np.ndarray            # (n,) T_i
    model_size_mb: np.ndarray         # (n,) D_i
    max_workers: np.ndarray           # (n,) M_i
    intra_gbps: float = 10.0
    inter_gbps: float = 5.0
    communication: str = "ring"
    workload: str = "proportional"
    name: str = ""
    reference: Reference | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = "<memory>"

    family = "placement"

    def __post_init__(self) -> None:
        src = self.source
        for attr in ("gpu_types", "server_names", "job_names"):
            setattr(self, attr, names_argument(src, attr, getattr(self, attr)))
        self.job_types = names_argument(src, "job_types", self.job_types, len(self.job_names))
        for attr in ("server_type", "server_gpus", "max_workers"):
            setattr(self, attr, array_argument(src, attr, getattr(self, attr), np.int64))
        self.rho = array_argument(src, "rho", self.rho, float, (len(self.job_names), len(self.gpu_types)))
        for attr in ("global_batch", "iterations", "model_size_mb"):
            setattr(self, attr, array_argument(src, attr, getattr(self, attr)))
        self.intra_gbps = number_argument(src, "intra_gbps", self.intra_gbps)
        self.inter_gbps = number_argument(src, "inter_gbps", self.inter_gbps)
        n, S = len(self.job_names), len(self.server_names)
        if self.communication not in COMMUNICATION:
            raise InputError(src, "model.communication", f"one of {COMMUNICATION}", self.communication)
        if self.workload not in WORKLOAD:
            raise InputError(src, "model.workload", f"one of {WORKLOAD}", self.workload)
        for attr in ("global_batch", "iterations", "model_size_mb", "max_workers"):
            if getattr(self, attr).shape != (n,):
                raise InputError(src, attr, f"{n} values (one per job)", getattr(self, attr).shape)
        if self.server_type.shape != (S,) or self.server_gpus.shape != (S,):
            raise InputError(src, "servers", f"a type and a GPU count for each of {S} servers", self.server_type.shape)
        if S and (self.server_type.min() < 0 or self.server_type.max() >= len(self.gpu_types)):
            raise InputError(src, "servers", f"GPU type indices in 0..{len(self.gpu_types) - 1}", self.server_type.tolist()[:8])
        if not (self.intra_gbps > 0 and self.inter_gbps > 0):
            raise InputError(src, "cluster bandwidth", "positive intra/inter-server bandwidths", (self.intra_gbps, self.inter_gbps))
        if self.inter_gbps > self.intra_gbps:
            # MODELS.md §4.1: r is the slowest link, so spanning servers is never faster than staying
            # on one; the exact model's type-count configurations rely on it.
            raise InputError(src, "$.cluster.inter_server_gbps", f"at most the intra-server bandwidth ({self.intra_gbps:g} Gbps)",
                             self.inter_gbps)
        present = np.unique(self.server_type[self.server_gpus > 0])
        rho = self.rho[:, present]
        bad = np.argwhere(~(np.isfinite(rho) & (rho > 0)))      # row-major: the first job, then its first type
        if bad.size:
            i, g = int(bad[0, 0]), int(present[bad[0, 1]])
            raise InputError(src, f"job '{self.job_names[i]}' (type '{self.job_types[i]}') on GPU type '{self.gpu_types[g]}'",
                             "a positive throughput", float(self.rho[i, g]))
        K = self.n_gpus
        if K > MAX_GPUS:
            raise InputError(src, "$.cluster.servers", f"at most {MAX_GPUS} GPUs in all (per-GPU arrays are built)", f"{K} GPUs")
        for attr, ok in (("global_batch", self.global_batch > 0), ("iterations", self.iterations > 0),
                         ("model_size_mb", self.model_size_mb >= 0), ("max_workers", self.max_workers >= 1)):
            bad = np.flatnonzero(~ok)
            if bad.size:
                raise InputError(src, f"job '{self.job_names[bad[0]]}' {attr}", "a positive value" if attr != "model_size_mb" else "a value >= 0",
                                 getattr(self, attr)[bad[0]].item())
        over = np.flatnonzero(self.max_workers > K)
        if over.size:
            i = over[0]
            raise InputError(src, f"job '{self.job_names[i]}' max_workers", f"at most the {K} GPUs of the cluster", int(self.max_workers[i]))
        if n > K:
            raise InputError(src, "jobs", f"at most {K} jobs (every job needs one of the {K} GPUs)", f"{n} jobs")

    # -- sizes and the GPU list -------------------------------------------------------------
    @property
    def n_jobs(self) -> int:
        return len(self.job_names)

    @property
    def n_types(self) -> int:
        return len(self.gpu_types)

    @property
    def n_servers(self) -> int:
        return len(self.server_names)

    @property
    def n_gpus(self) -> int:
        return int(self.server_gpus.sum())

    @property
    def gpu_server(self) -> np.ndarray:
        """(K,) server index of every GPU (GPUs numbered server by server)."""
        return np.repeat(np.arange(self.n_servers), self.server_gpus)

    @property
    def gpu_type(self) -> np.ndarray:
        """(K,) type index of every GPU."""
        return self.server_type[self.gpu_server]

    @property
    def type_counts(self) -> np.ndarray:
        """N_g: GPUs of each type."""
        return np.bincount(self.server_type, weights=self.server_gpus, minlength=self.n_types).astype(np.int64)

    def gpu_names(self) -> list[str]:
        """``<server>/<slot>`` for every GPU."""
        return [f"{self.server_names[s]}/{k}" for s, c in enumerate(self.server_gpus.tolist()) for k in range(c)]

    def to_core(self) -> MCMDK:
        """The MCMDK over type-count configurations (MODELS.md §4.2); see :func:`core_model`."""
        return core_model(self).core


@dataclass
class GpuAssignment:
    """A solution: ``gpu_job[k]`` = job on GPU k (``-1`` idle), ``workload[k]`` = its samples per iteration."""

    gpu_job: np.ndarray
    workload: np.ndarray
    job_names: tuple[str, ...] | None = None   # for the per-job JSON form (set by solvers)
    gpu_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        self.gpu_job = np.asarray(self.gpu_job, dtype=np.int64)
        self.workload = np.asarray(self.workload, dtype=float)

    def gpus_of(self, i: int) -> np.ndarray:
        return np.flatnonzero(self.gpu_job == i)

    def sizes(self, n_jobs: int) -> np.ndarray:
        """n_i: workers of every job."""
        used = self.gpu_job[self.gpu_job >= 0]
        return np.bincount(used, minlength=n_jobs)


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
        # then, per server s that holds 2 or more of the job's workers, m = 2..cap workers on it
        # (one jct_counts call for every server: a call per server took 6 s for 500 jobs x 150 servers)
        cap = np.minimum(inst.server_gpus, M).astype(np.int64)
        on = np.flatnonzero(cap >= 2)
        srv = np.repeat(on, cap[on] - 1)
        m = np.arange(srv.size) - np.repeat(np.cumsum(cap[on] - 1) - (cap[on] - 1), cap[on] - 1) + 2
        cs = np.zeros((srv.size, G), dtype=np.int64)
        cs[np.arange(srv.size), np.asarray(inst.server_type)[srv]] = m
        counts_l.append(np.vstack([c, cs]))
        server_l.append(np.concatenate([np.full(c.shape[0], -1), srv]))
        jcts.append(np.concatenate([jct_counts(inst, i, c, ~single), jct_counts(inst, i, cs, np.zeros(srv.size, bool))]))
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

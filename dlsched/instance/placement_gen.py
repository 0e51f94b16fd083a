"""Seeded generators of ``placement`` instances from real data (MODELS.md §4.1, docs/hetplace.md).

Jobs are drawn from the Gavel traces (job type, total steps, scale factor); throughputs come
from Gavel's measurements; the model size is the §4.1 calibration's communication term times
the calibration bandwidth. Clusters are mixed K80/P100/V100 servers, or Alibaba OpenB nodes.

Per trace job of type with per-worker batch b, ``total_steps`` s and scale factor f:
global batch :math:`P_i = b f`, iterations :math:`T_i = \\lceil s / f \\rceil` (the same number
of samples, s b), model size :math:`D_i = c_i r_{cal}`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.fields import count_argument
from dlsched.instance.placement import PlacementInstance
from dlsched.instance.traces import Node, gavel_traces, read_gavel_trace
from dlsched.perf.throughputs import batch_size, calibrate, load_gavel

#: OpenB GPU models with a Gavel measurement of the same chip (others need an explicit map)
OPENB_TO_GAVEL = {"P100": "p100", "V100M16": "v100", "V100M32": "v100"}


@lru_cache(maxsize=1)
def _gavel():
    table = load_gavel()
    jobs = [j for p in gavel_traces() for j in read_gavel_trace(p)]
    return table, calibrate(table), tuple(jobs)


def gavel_servers(gpus_per_type: dict[str, int], gpus_per_server: int = 4) -> tuple[list[str], list[int], list[int], tuple[str, ...]]:
    """The server table of a placement instance, (names, type index, GPUs, type names): servers of
    ``gpus_per_server`` GPUs of one type each (the last one of a type may be smaller). The
    simulator's :class:`~dlsched.instance.cluster.Cluster` of a Gavel spec is
    :func:`dlsched.instance.cluster_spec.gavel_cluster`."""
    types = tuple(gpus_per_type)
    names, stype, sgpus = [], [], []
    for g, t in enumerate(types):
        left = int(gpus_per_type[t])
        if left < 0:
            raise InputError("<argument>", f"gpus_per_type.{t}", "a count >= 0", left)
        s = 0
        while left > 0:
            m = min(gpus_per_server, left)
            names.append(f"{t}-{s}")
            stype.append(g)
            sgpus.append(m)
            left -= m
            s += 1
    return names, stype, sgpus, types


def generate(n_jobs: int, gpus_per_type: dict[str, int] | None = None, *, seed: int = 0,
             gpus_per_server: int = 4, max_workers: int = 8, intra_gbps: float = 10.0,
             inter_gbps: float = 5.0, calibration_gbps: float = 10.0, communication: str = "ring",
             workload: str = "proportional", steps_scale: float = 1.0, name: str | None = None,
             cluster: tuple | None = None) -> PlacementInstance:
    """A placement instance with ``n_jobs`` jobs drawn (seeded) from the Gavel traces.

    ``gpus_per_type`` (default 4 K80, 4 P100, 4 V100) uses Gavel's GPU type names; ``cluster``
    (the 4-tuple of :func:`gavel_servers` / :func:`openb_servers`) replaces it, e.g. OpenB nodes.
    ``calibration_gbps`` is the bandwidth the Gavel multi-GPU measurements are attributed to.
    """
    for arg, val, lo in (("n_jobs", n_jobs, 1), ("gpus_per_server", gpus_per_server, 1), ("max_workers", max_workers, 1),
                         ("seed", seed, 0)):
        count_argument(arg, val, lo)
    table, cal, trace = _gavel()
    gpus_per_type = gpus_per_type or {"k80": 4, "p100": 4, "v100": 4}
    names, stype, sgpus, types = cluster if cluster is not None else gavel_servers(gpus_per_type, gpus_per_server)
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(trace), size=n_jobs, replace=len(trace) < n_jobs)
    jobs = [trace[p] for p in picks]
    K = sum(sgpus)
    rho = np.array([table.rho_row(j.job_type, types) for j in jobs]).reshape(n_jobs, len(types))
    b = np.array([batch_size(j.job_type) for j in jobs], dtype=float)
    sf = np.array([j.scale_factor for j in jobs], dtype=float)
    steps = np.array([j.total_steps for j in jobs], dtype=float)
    return PlacementInstance(
        gpu_types=types, server_names=names, server_type=stype, server_gpus=sgpus,
        job_names=tuple(f"j{i}" for i in range(n_jobs)), job_types=tuple(j.job_type for j in jobs),
        rho=rho, global_batch=b * sf, iterations=np.maximum(1.0, np.ceil(steps * steps_scale / sf)),
        model_size_mb=np.array([cal.model_size_mb(j.job_type, calibration_gbps) for j in jobs]),
        max_workers=np.full(n_jobs, min(max_workers, K)), intra_gbps=intra_gbps, inter_gbps=inter_gbps,
        communication=communication, workload=workload,
        name=name or f"gavel-n{n_jobs}-k{K}-s{seed}", meta={"seed": seed, "generator": "gavel"})


def openb_servers(nodes: list[Node], type_map: dict[str, str] | None = None) -> tuple[list[str], list[int], list[int], tuple[str, ...]]:
    """The server table of a placement instance (as :func:`gavel_servers`) from OpenB nodes; ``type_map``
    maps an OpenB GPU model to a throughput column. The simulator's Cluster of an OpenB node list
    is :func:`dlsched.instance.cluster_spec.openb_cluster`.

    A node whose model has no map raises an error naming the node and the model.
    """
    type_map = dict(OPENB_TO_GAVEL if type_map is None else type_map)
    types: list[str] = []
    names, stype, sgpus = [], [], []
    for nd in nodes:
        if nd.gpu_model not in type_map:
            raise InputError("<openb nodes>", f"node '{nd.name}'", f"a GPU model with a throughput column ({', '.join(sorted(type_map))})", nd.gpu_model)
        t = type_map[nd.gpu_model]
        if t not in types:
            types.append(t)
        names.append(nd.name)
        stype.append(types.index(t))
        sgpus.append(nd.gpus)
    return names, stype, sgpus, tuple(types)

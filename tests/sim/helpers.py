"""Tiny hand-checkable speed sources and traces for the engine tests."""

from __future__ import annotations

import numpy as np

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.testing import Audit, LinearSpeed      # noqa: F401  (the kit's, shared by the engine tests)


class TypedSpeed:
    """``factor[type]`` iterations/s per worker on a server of that GPU type, summed over the workers."""

    per_worker_types = True      # a sum of per-worker rates: the type-aware LP bound holds

    def __init__(self, factor: dict[str, float]):
        self.factor = factor

    def rate(self, job, placement, cluster) -> float:
        return float(sum(k * self.factor[cluster.gpu_type[s]] for s, k in placement.workers.items()))


def typed_cluster(per_type: dict[str, int], gpus: int = 2) -> Cluster:
    """``per_type[t]`` servers of ``gpus`` GPUs (and 8 cpus) of each GPU type t."""
    types = [t for t, n in per_type.items() for _ in range(n)]
    cap = np.array([[gpus, 8.0]] * len(types))
    return Cluster(("gpu", "cpu"), cap, tuple(types), np.zeros(len(types)), tuple(f"s{i}" for i in range(len(types))))


def job(name, arrival=0.0, iterations=10.0, gpus=1, min_workers=None, max_workers=None, max_ps=0, **kw):
    """A job whose worker holds ``gpus`` GPUs; ``max_ps`` > 0 makes it a PS job (a PS holds 1 cpu)."""
    lo = min_workers or 1
    return Job(name, arrival, "toy", iterations, {"gpu": gpus, "cpu": 1},
               {"cpu": 1} if max_ps else {}, min_workers=lo, max_workers=max_workers or lo, max_ps=max_ps, **kw)


def trace(*jobs) -> Trace:
    return Trace(tuple(jobs), "<test>")


def cluster(servers=1, gpus=4, cpus=8) -> Cluster:
    return Cluster.homogeneous(servers, {"gpu": gpus, "cpu": cpus})


def openb_like(seed: int, n: int, arrivals: int = 15) -> tuple[Trace, Cluster, TypedSpeed]:
    """``n`` OpenB-like pods (fractions of a GPU, CPU-only pods, a few rigid multi-GPU and PS jobs, CPU
    demands that can overfill a server) arriving in [0, ``arrivals``) on a cluster of three GPU types, seeded."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        gpu = float(rng.choice([0.0, 0.3, 0.5, 0.6, 1.0, 1.0, 1.0, 2.0]))
        w = int(rng.choice([1, 1, 1, 2])) if gpu >= 1 else 1
        ps = int(rng.random() < 0.1)
        jobs.append(Job(f"j{i}", float(rng.integers(0, arrivals)), "toy", float(rng.integers(1, 40)),
                        {"gpu": gpu, "cpu": float(rng.choice([0.5, 1.0, 3.0]))}, {"cpu": 1.0} if ps else {},
                        min_workers=1 if rng.random() < 0.3 else w, max_workers=w, max_ps=ps))
    cl = typed_cluster({"k80": 2, "p100": 2, "v100": 1}, gpus=4)
    speed = TypedSpeed({"k80": 1.0, "p100": 2.0, "v100": 2.0 + float(rng.random())})
    return Trace(tuple(sorted(jobs, key=lambda j: j.arrival)), "<test>"), cl, speed

"""Tiny hand-checkable speed sources and traces for the engine tests."""

from __future__ import annotations

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.testing import Audit, LinearSpeed      # noqa: F401  (the kit's, shared by the engine tests)


def job(name, arrival=0.0, iterations=10.0, gpus=1, min_workers=None, max_workers=None, max_ps=0, **kw):
    """A job whose worker holds ``gpus`` GPUs; ``max_ps`` > 0 makes it a PS job (a PS holds 1 cpu)."""
    lo = min_workers or 1
    return Job(name, arrival, "toy", iterations, {"gpu": gpus, "cpu": 1},
               {"cpu": 1} if max_ps else {}, min_workers=lo, max_workers=max_workers or lo, max_ps=max_ps, **kw)


def trace(*jobs) -> Trace:
    return Trace(tuple(jobs), "<test>")


def cluster(servers=1, gpus=4, cpus=8) -> Cluster:
    return Cluster.homogeneous(servers, {"gpu": gpus, "cpu": cpus})

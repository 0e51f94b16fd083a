"""Tiny hand-checkable speed sources and traces for the engine tests."""

from __future__ import annotations

import numpy as np

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace


class LinearSpeed:
    """``per_worker`` iterations/s per worker (a PS adds nothing): rates a test can compute by hand."""

    def __init__(self, per_worker: float = 1.0):
        self.per_worker = per_worker

    def rate(self, job, placement, cluster) -> float:
        return self.per_worker * placement.n_workers


class TypedSpeed:
    """``factor[type]`` iterations/s per worker on a server of that GPU type, summed over the workers."""

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


class Audit:
    """Wraps a policy; checks every answer against the state it was given, from the placements alone
    (no code shared with the engine's own check): no server over capacity, every job between its
    minimum and maximum size with a PS exactly when it uses PSs, only active jobs named, and the
    state shown to the policy left unchanged. ``problems`` lists what failed."""

    def __init__(self, inner):
        self.inner, self.name, self.slot_seconds = inner, inner.name, inner.slot_seconds
        self.offline = getattr(inner, "offline", False)
        self.problems: list[str] = []

    def reset(self, ctx):
        self.capacity = np.asarray(ctx.cluster.capacity, dtype=float)
        self.inner.reset(ctx)
        self.slot_seconds = self.inner.slot_seconds      # a policy may set its slot in reset (OASiS: Δ)

    def schedule(self, state, events):
        before = (state.free.copy(), dict(state.allocation), state.remaining.copy(), state.active.copy())
        out = self.inner.schedule(state, events)
        after = (state.free, dict(state.allocation), state.remaining, state.active)
        if not all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(before, after)):
            self.problems.append(f"t={state.time}: the policy changed the state it was shown")
        placements = getattr(out, "placements", out)
        active = set(state.active.tolist())
        used = np.zeros_like(self.capacity)
        for j, pl in placements.items():
            if j not in active:
                self.problems.append(f"t={state.time}: job {j} is not active")
                continue
            job = state.jobs[j]
            if not (job.min_workers <= pl.n_workers <= job.max_workers and (pl.n_ps >= 1) == job.uses_ps
                    and pl.n_ps <= max(job.max_ps, 0)):
                self.problems.append(f"t={state.time}: job {j} sized ({pl.n_workers}, {pl.n_ps})")
            for s, k in pl.workers.items():
                used[s] += k * state.demand_w[j]
            for s, k in pl.ps.items():
                used[s] += k * state.demand_p[j]
        if (used - self.capacity).max(initial=0.0) > 1e-9:
            self.problems.append(f"t={state.time}: a server is over-committed by {(used - self.capacity).max():g}")
        return out

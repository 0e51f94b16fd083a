"""Offered load of a trace on a cluster, and the arrival scale that gives a stated load.

Each job j, at its smallest size (``min_workers`` workers, one PS if it uses PSs) placed on the
empty cluster (fewest servers), holds g_j^r of resource r and runs alone for
d_j = K_j / rate_j seconds (the speed source's rate; for recorded traces, the recorded duration).
Over the arrival window [a_first, a_last] the offered load of resource r is

    L^r = Σ_j g_j^r d_j / (C^r (a_last − a_first))

the work the trace brings per unit of capacity and time (C^r the cluster's total). Rescaling the
arrival offsets by s (:func:`dlsched.instance.traces.scale_arrivals`) divides the window by 1/s
and leaves the work unchanged, so L^r(s) = L^r(1) / s, and the scale that gives a target load L*
is s = L^r(1) / L*. The rule is stated on the trace alone (its work and its arrival window), never
on how any policy fares. Jobs that fit on no server (unschedulable) bring no work.

A heavy-tailed trace (a few jobs that run for the whole trace hold most of the work) can reach a
high L while its jobs hardly overlap. The **peak demand** states the load by what would run at
once: were every job started at its arrival and run alone for d_j, the most of resource r held at
one moment, as a share of C^r,

    P^r(s) = max_t Σ_{j: a'_j <= t < a'_j + d_j} g_j^r / C^r,      a'_j = a_0 + s (a_j − a_0).

Two jobs that overlap at s overlap at every s' < s, and by the Helly property of intervals the
peak is the heaviest set of pairwise overlapping jobs, so P^r does not increase with s; the
scale for a target P* is found by bisection on log s. P^r(0+) is the share of C^r all jobs
together hold, the most any compression can give.

A pod list that is a snapshot of one filled cluster (Alibaba OpenB: all pods together ask for 98 %
of the GPUs) can therefore never contend, however compressed. **Inflation** (:func:`inflate`)
adds work the way the trace's own paper does (FGD, USENIX ATC '23, whose simulator adds pods drawn
from the pod list until the cluster is over-subscribed): the trace plus round((F − 1) n) copies,
each the demands and work of a job drawn uniformly with replacement and the arrival of another job
drawn independently (the bootstrap of both the job mix and the arrival process, seeded). All jobs
together then ask for about F times the original share, and a peak target above 1 becomes reachable.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import MAX_JOBS, Trace
from dlsched.sim.placement import EmptyCluster
from dlsched.sim.policy import SpeedSourceLike


def job_work(trace: Trace, cluster: Cluster, speed: SpeedSourceLike) -> tuple[np.ndarray, np.ndarray]:
    """(g (n, R) resources held, d (n,) seconds alone) of every job at its smallest size; d is NaN for
    a job that fits on no server or has rate 0."""
    n, R = len(trace), len(cluster.resources)
    g, d = np.zeros((n, R)), np.full(n, np.nan)
    empty = EmptyCluster(cluster.capacity)
    for j, job in enumerate(trace.jobs):
        dw, dp = cluster.vector(job.worker_demand), cluster.vector(job.ps_demand)
        p = 1 if job.uses_ps else 0
        pl = empty.consolidated(dw, dp, job.min_workers, p)
        if pl is None:
            continue
        rate = speed.rate(job, pl, cluster)
        if rate > 0:
            g[j] = job.min_workers * dw + p * dp
            d[j] = job.iterations / rate
    return g, d


def offered_load(trace: Trace, cluster: Cluster, speed: SpeedSourceLike, work=None) -> dict[str, float | None]:
    """L^r per resource (module docstring); None for a resource the cluster has none of, or a trace
    whose jobs all arrive at once (no window). ``work``: :func:`job_work` of the trace if known (it
    does not depend on the arrivals, so it holds for the trace at any arrival scale)."""
    g, d = job_work(trace, cluster, speed) if work is None else work
    ok = ~np.isnan(d)
    span = trace.jobs[-1].arrival - trace.jobs[0].arrival if trace.jobs else 0.0
    work = (g[ok] * d[ok, None]).sum(axis=0)
    total = cluster.total()
    return {r: (float(work[i] / (total[i] * span)) if total[i] > 0 and span > 0 else None)
            for i, r in enumerate(cluster.resources)}


#: below this offered GPU load a replay hardly queues: every policy starts nearly every job on arrival
#: and they all give the same figures (issue 24: Gavel's msr trace on its own cluster, 0.087)
LOW_LOAD = 0.3


def low_load_warning(load: dict[str, float | None], resource: str = "gpu") -> str | None:
    """One line for a run whose offered load of ``resource`` is below :data:`LOW_LOAD`, naming the
    options that make the trace contend; None otherwise (or when the load is undefined)."""
    value = load.get(resource)
    if value is None or value >= LOW_LOAD:
        return None
    return (f"offered {resource} load {value:.3g} < {LOW_LOAD:g}: jobs hardly queue and policies will barely differ; "
            f"make the trace contend with --target-load 0.9 or a smaller --cluster (e.g. SxG servers x GPUs)")


def arrival_scale_for_load(trace: Trace, cluster: Cluster, speed: SpeedSourceLike, target: float,
                           resource: str = "gpu", work=None) -> float:
    """s = L^r(1) / L*: the arrival scale at which the offered load of ``resource`` is ``target``."""
    if not (isinstance(target, (int, float)) and math.isfinite(target) and target > 0):
        raise InputError("<argument>", "target load", "a finite load > 0", target)
    if resource not in cluster.resources:
        raise InputError("<argument>", "target load resource", f"one of the cluster's resources {cluster.resources}", resource)
    load = offered_load(trace, cluster, speed, work)[resource]
    if not load:
        raise InputError(trace.source, "jobs", f"work on {resource} spread over an arrival window (to scale to a load)",
                         "no arrival window" if load is None else f"no {resource} work")
    return load / target


def peak_demand(g: np.ndarray, d: np.ndarray, arrival: np.ndarray, capacity: float) -> float:
    """P (module docstring) of one resource: g (n,) held, d (n,) seconds, arrival (n,) times; jobs
    with NaN d are left out. A job ending when another starts does not overlap it."""
    ok = ~np.isnan(d) & (g > 0)
    t = np.concatenate([arrival[ok], arrival[ok] + d[ok]])
    delta = np.concatenate([g[ok], -g[ok]])
    order = np.lexsort((delta, t))          # at equal times, ends (negative) before starts
    return float(np.cumsum(delta[order]).max() / capacity) if t.size else 0.0


def arrival_scale_for_peak(trace: Trace, cluster: Cluster, speed: SpeedSourceLike, target: float,
                           resource: str = "gpu", *, rel_tol: float = 1e-6, work=None) -> float:
    """The arrival scale s <= 1 at which the peak demand P^r(s) of ``resource`` reaches ``target``
    (module docstring): the largest such s to within a factor exp(``rel_tol``), by bisection on log s;
    1 if the trace already reaches it."""
    if not (isinstance(target, (int, float)) and math.isfinite(target) and target > 0):
        raise InputError("<argument>", "target peak", "a finite share > 0", target)
    if resource not in cluster.resources:
        raise InputError("<argument>", "target peak resource", f"one of the cluster's resources {cluster.resources}", resource)
    r = cluster.resources.index(resource)
    g, d = job_work(trace, cluster, speed) if work is None else work
    g, cap = g[:, r], float(cluster.total()[r])
    a = np.array([j.arrival for j in trace.jobs], dtype=float)
    a = a - a[0] if a.size else a

    def peak(s: float) -> float:
        return peak_demand(g, d, s * a, cap)

    if peak(1.0) >= target:
        return 1.0
    most = peak_demand(g, d, np.zeros_like(a), cap)
    if most < target:
        raise InputError(trace.source, "jobs", f"a {resource} demand that can reach {target:g} of the cluster at once",
                         f"all jobs together hold {most:.4g} of it")
    # below lo every job starts before any ends (s * window < the shortest d), so all overlap
    held = ~np.isnan(d) & (g > 0)
    lo, hi = math.log(0.5 * float(d[held].min()) / max(float(a[-1]), 1e-300)), 0.0
    while hi - lo > rel_tol:
        mid = 0.5 * (lo + hi)
        if peak(math.exp(mid)) >= target:
            lo = mid
        else:
            hi = mid
    return math.exp(lo)


def peak_of(trace: Trace, cluster: Cluster, speed: SpeedSourceLike, resource: str = "gpu", work=None) -> float:
    """P^r of the trace as it is (s = 1)."""
    r = cluster.resources.index(resource)
    g, d = job_work(trace, cluster, speed) if work is None else work
    return peak_demand(g[:, r], d, np.array([j.arrival for j in trace.jobs], dtype=float), float(cluster.total()[r]))


def inflate(trace: Trace, factor: float, seed: int = 0) -> Trace:
    """The trace inflated to round(``factor`` n) jobs (module docstring): its jobs plus copies, each
    with the demands and work of a uniformly drawn job and the arrival of another, independently
    drawn one, named ``<name>+<k>``; sorted by arrival (originals first at equal times). ``factor``
    1 returns the trace; every draw comes from ``numpy.random.default_rng(seed)``."""
    if not (isinstance(factor, (int, float)) and not isinstance(factor, bool) and math.isfinite(factor) and factor >= 1):
        raise InputError("<argument>", "inflation factor", "a finite factor >= 1", factor)
    n = len(trace.jobs)
    if factor * n > MAX_JOBS:
        raise InputError("<argument>", "inflation factor", f"a factor that keeps the trace at most {MAX_JOBS:,} jobs "
                         f"(at most {MAX_JOBS / max(n, 1):g} for {n} jobs)", factor)
    extra = int(round((factor - 1.0) * n))
    if extra == 0 or n == 0:
        return trace
    rng = np.random.default_rng(seed)
    which, when = rng.integers(0, n, extra), rng.integers(0, n, extra)
    copies = [replace(trace.jobs[w], name=f"{trace.jobs[w].name}+{k}", arrival=trace.jobs[a].arrival)
              for k, (w, a) in enumerate(zip(which.tolist(), when.tolist()))]
    jobs = list(trace.jobs) + copies
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i))
    return Trace(tuple(jobs[i] for i in order), f"{trace.source} (inflated x{factor:g}, seed {seed})")

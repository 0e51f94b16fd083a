"""Setting up a run as ``dlsched simulate`` and ``dlsched.simulate`` do: the cluster, the speed
source, the trace inflated and its arrivals scaled, the policy's ``-P`` parameters.

Traces and clusters come from the importers (``instance.traces.load_trace``,
``instance.cluster_spec.load_cluster``); the speed source from ``dlsched.sim.speed.make_speed``.
Without ``--speed``, the first of ``AUTO_SPEEDS`` that gives every job type of the trace a
positive rate at one worker (and one PS) is used. An OASiS instance (a dlsched/1 file of the ``oasis``
family, :func:`oasis_instance`) brings its own trace, cluster, speed source and horizon.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from dlsched.arguments import shown
from dlsched.errors import InputError
from dlsched.instance import cluster_spec, jsonio
from dlsched.instance.synthetic import dl2_cluster
from dlsched.instance.traces import _names_file, scale_arrivals
from dlsched.instance.workload import Trace
from dlsched.registry import OASIS_ENGINE, load_target
from dlsched.sim.load import arrival_scale_for_load, arrival_scale_for_peak, inflate, job_work, offered_load, peak_of
from dlsched.sim.placement import EmptyCluster
from dlsched.sim.speed import make_speed

#: tried in order when --speed is not given
AUTO_SPEEDS = ("duration", "table", "throughput")


def oasis_instance(path: str, trace_format: str | None):
    """The OASiS instance in file ``path`` (a dlsched/1 JSON file of family ``oasis``, MODELS.md §3.1), or None
    for anything else ``dlsched simulate`` takes (a trace file, a generator spec, or any file with ``--trace-format``).

    A dlsched/1 file of another family is an error: it is no trace."""
    if trace_format is not None or not _names_file(path):
        return None
    p = Path(path)
    if p.suffix.lower() != ".json" and not _head(p).lstrip().startswith(b"{"):
        return None
    inst = jsonio.load_json(p)
    if getattr(inst, "family", None) != "oasis":
        raise InputError(str(path), "family", "an OASiS instance (family oasis) or a trace file", getattr(inst, "family", None))
    return inst


def oasis_setting(inst, given) -> tuple:
    """The trace, cluster, speed source and horizon T of OASiS instance ``inst``, as
    :func:`dlsched.policies.oasis.engine_setting` sets them up (slots of Δ = 1 s in the engine), for
    ``dlsched simulate`` and :func:`dlsched.simulate` alike. ``given``: (option, value, what the instance
    brings) of each option that would reshape the instance; one that is not None is refused."""
    for name, value, what in given:
        if value is not None:
            raise InputError("<argument>", name, f"none with an OASiS instance (it brings {what})", shown(value))
    return load_target(OASIS_ENGINE, "trace")(inst)


def _head(path: Path) -> bytes:
    """The first bytes of a file (a trace may be large; one it cannot read is load_trace's to report)."""
    try:
        with open(path, "rb") as f:
            return f.read(4096)
    except OSError:
        return b""


def load_cluster(spec: str | None, trace):
    """The cluster named by ``spec``; without one, DL2's default cluster for a DL2 job-mix trace."""
    if spec is None:
        if trace.source.startswith("dl2_trace"):
            return dl2_cluster()
        raise InputError("<argument>", "--cluster", f"a cluster spec for the trace {trace.source}", "none")
    return cluster_spec.load_cluster(spec)


def pick_speed(name: str | None, trace, cluster, *, noise: float = 0.0, seed: int = 0, params: dict | None = None):
    """``make_speed(name, **params)``, or the first of AUTO_SPEEDS that gives every job type a rate > 0.

    A type is judged by its first job that fits the empty cluster (:func:`fitting_samples`): a job
    that fits on no server is unschedulable whatever the speed source, so it says nothing of one."""
    params = params or {}
    if name is not None:
        return make_speed(name, noise=noise, seed=seed, **params)
    samples = fitting_samples(trace, cluster)
    chosen = {id(job) for job in samples.values()}
    one_per_type = Trace(tuple(job for job in trace.jobs if id(job) in chosen), trace.source)    # in arrival order
    tried = []
    for cand in AUTO_SPEEDS:
        try:    # a job that fits nowhere or runs at rate 0 at its smallest size has no time alone (NaN)
            ok = not np.isnan(job_work(one_per_type, cluster, make_speed(cand))[1]).any()
        except (InputError, KeyError, ValueError):
            ok = False
        if ok:
            return make_speed(cand, noise=noise, seed=seed, **params)
        tried.append(cand)
    raise InputError("<argument>", "--speed", f"a speed source for the job types of {trace.source} (tried {', '.join(tried)})",
                     sorted(samples)[:5])


def fitting_samples(trace, cluster) -> dict:
    """Job type -> its first job that fits the empty cluster at its smallest size (the first job of
    the type when none fits: the types no job of which fits judge a speed source as before)."""
    empty = EmptyCluster(cluster.capacity)
    first, fits = {}, {}
    for job in trace.jobs:
        first.setdefault(job.job_type, job)
        if job.job_type in fits:
            continue
        try:
            placed = empty.consolidated(cluster.vector(job.worker_demand), cluster.vector(job.ps_demand),
                                        job.min_workers, 1 if job.uses_ps else 0)
        except (InputError, KeyError, ValueError):
            placed = None
        if placed is not None:
            fits[job.job_type] = job
    return {t: fits.get(t, job) for t, job in first.items()}


def rescale(trace, cluster, speed, *, arrival_scale: float | None = None, target_load: float | None = None,
            target_peak: float | None = None, resource: str = "gpu", inflation: float | None = None,
            inflation_seed: int = 0):
    """The trace, first inflated by ``inflation`` (:func:`dlsched.sim.load.inflate`, draws seeded by
    ``inflation_seed``), then with its arrivals scaled (dlsched/sim/load.py): by ``arrival_scale``,
    or by the scale at which the offered load (``target_load``) or the peak demand (``target_peak``)
    of ``resource`` reaches the target; and, for the result file, what was done: ``inflation`` and
    ``jobs`` when inflated, ``arrival_scale``, ``arrival_rule``, ``offered_load`` and
    ``peak_demand`` of ``resource`` after scaling."""
    given = [k for k, v in (("--arrival-scale", arrival_scale), ("--target-load", target_load), ("--target-peak", target_peak))
             if v is not None]
    if len(given) > 1:
        raise InputError("<argument>", " / ".join(given), "at most one of them", "several")
    grown = {}
    if inflation is not None:
        trace = inflate(trace, inflation, inflation_seed)
        grown = {"inflation": inflation, "inflation_seed": inflation_seed, "jobs": len(trace)}
    if not given:
        return trace, grown
    work = job_work(trace, cluster, speed)       # once: scaling the arrivals does not change it
    if target_load is not None:
        s = arrival_scale_for_load(trace, cluster, speed, target_load, resource, work)
        rule = f"offered {resource} load {target_load:g}"
    elif target_peak is not None:
        s = arrival_scale_for_peak(trace, cluster, speed, target_peak, resource, work=work)
        rule = f"peak {resource} demand {target_peak:g}"
    else:
        s, rule = arrival_scale, "given"
    trace = scale_arrivals(trace, s)
    return trace, {**grown, "arrival_scale": s, "arrival_rule": rule, "offered_load": offered_load(trace, cluster, speed, work),
                   "peak_demand": {resource: peak_of(trace, cluster, speed, resource, work)}}


def parse_params(items, flag: str = "-P") -> dict:
    """``KEY=VALUE`` strings as a dictionary of policy parameters, each value parsed as JSON (else a string)."""
    params = {}
    for item in items or []:
        key, sep, val = item.partition("=")
        if not sep:
            raise InputError("<argument>", flag, "key=value", item)
        try:
            params[key] = json.loads(val)
        except json.JSONDecodeError:
            params[key] = val
    return params

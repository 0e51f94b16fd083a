"""The ``smd`` family in dlsched/1 files (schema: ``schema/smd.schema.json``, docs/smd.md).

Solutions: ``{"allocation": [[w, p], ...]}`` (one decision epoch, MODELS.md §2.2; w = p = 0:
the job waits) or ``{"schedule": [[[w, p], ...] per slot]}`` (slots 1..T, MODELS.md §2.4).
"""

from __future__ import annotations

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.fields import int_array
from dlsched.instance.mcmdk_json import dump_reference, parse_reference
from dlsched.instance.smd import SMDInstance, SMDOptions
from dlsched.perf import profiles as builtin_profiles
from dlsched.perf.layered import LayerProfile

DEFAULT_MAX = 16


def _profile(name: str, doc: dict, source: str) -> LayerProfile:
    where = f"$.profiles.{name}"
    if "builtin" in doc:
        extra = sorted(set(doc) - {"builtin"})
        if extra:
            raise InputError(source, f"{where}.{extra[0]}", "no other field beside 'builtin'", extra[0])
        if doc["builtin"] not in builtin_profiles.CALIBRATED:
            raise InputError(source, f"{where}.builtin", f"one of {', '.join(builtin_profiles.MODELS)}", doc["builtin"])
        return builtin_profiles.builtin(doc["builtin"])
    for key in ("layers", "worker_bandwidth", "ps_bandwidth"):
        if key not in doc:
            raise InputError(source, f"{where}.{key}", f"the required field '{key}' (or 'builtin')", "no such field")
    layers = doc["layers"]
    if not layers:
        raise InputError(source, f"{where}.layers", "at least one layer", "an empty list")
    arr = {}
    for key in ("forward_s", "backward_s", "bytes"):
        vals = np.array([float(layer[key]) for layer in layers])
        bad = np.flatnonzero(vals < 0)
        if bad.size:
            raise InputError(source, f"{where}.layers[{bad[0]}].{key}", "a number >= 0", float(vals[bad[0]]))
        arr[key] = vals
    for key in ("worker_bandwidth", "ps_bandwidth", "ps_update_rate"):
        if key in doc and not doc[key] > 0:
            raise InputError(source, f"{where}.{key}", "a bandwidth > 0 (bytes/s)", doc[key])
    if doc.get("overhead_s", 0) < 0:
        raise InputError(source, f"{where}.overhead_s", "a number >= 0", doc["overhead_s"])
    try:
        return LayerProfile(name, arr["forward_s"], arr["backward_s"], arr["bytes"], float(doc["worker_bandwidth"]),
                            float(doc["ps_bandwidth"]), float(doc.get("ps_update_rate", np.inf)),
                            float(doc.get("overhead_s", 0.0)), tuple(layer.get("name", f"l{i}") for i, layer in enumerate(layers)))
    except InputError as exc:
        raise InputError(source, f"{where}.{exc.where}", exc.expected, exc.found) from None


def parse(doc: dict, source: str) -> SMDInstance:
    cl = doc["cluster"]
    resources = tuple(cl["resources"])
    caps, names = [], []
    for i, s in enumerate(cl["servers"]):
        unknown = sorted(set(s["capacity"]) - set(resources))
        if unknown:
            raise InputError(source, f"$.cluster.servers[{i}].capacity.{unknown[0]}", f"a resource of {list(resources)}", unknown[0])
        row = [float(s["capacity"].get(r, 0.0)) for r in resources]
        for c in range(int(s.get("count", 1))):
            caps.append(row)
            names.append(s["name"] if s.get("count", 1) == 1 else f"{s['name']}{c}")
    opts = doc.get("options", {})
    try:
        options = SMDOptions(**opts)
    except InputError as exc:
        raise InputError(source, "$." + exc.where, exc.expected, exc.found) from None
    profiles = {n: _profile(n, p, source) for n, p in doc.get("profiles", {}).items()}
    jobs = doc["jobs"]
    for j, job in enumerate(jobs):
        t = job["type"]
        if t not in profiles:
            if t not in builtin_profiles.CALIBRATED:
                raise InputError(source, f"$.jobs[{j}].type", "a name under $.profiles or a built-in profile "
                                 f"({', '.join(builtin_profiles.MODELS)})", t)
            profiles[t] = builtin_profiles.builtin(t)
        for key in ("worker_demand", "ps_demand"):
            unknown = sorted(set(job[key]) - set(resources))
            if unknown:
                raise InputError(source, f"$.jobs[{j}].{key}.{unknown[0]}", f"a resource of {list(resources)}", unknown[0])
    n = len(jobs)

    def col(key, default):
        return np.array([float(job[key]) if key in job else float(default(job)) for job in jobs]) if n else np.zeros(0)

    def batch_default(job):
        b = builtin_profiles.MEASURED_BATCH.get(job["type"])
        if b is None:
            raise InputError(source, f"$.jobs[{jobs.index(job)}].batch", "a global batch (the profile is not built in)", "no such field")
        return b

    return SMDInstance(
        name=doc.get("name", ""), resources=resources, server_cap=np.array(caps), server_names=tuple(names),
        profiles=profiles, job_names=tuple(job["name"] for job in jobs), job_type=tuple(job["type"] for job in jobs),
        batch=col("batch", batch_default), iterations=col("iterations", lambda _: 0), weight=col("weight", lambda _: 1.0),
        arrival=col("arrival", lambda _: 0.0),
        d=np.array([[float(job["worker_demand"].get(r, 0.0)) for r in resources] for job in jobs]).reshape(n, len(resources)),
        e=np.array([[float(job["ps_demand"].get(r, 0.0)) for r in resources] for job in jobs]).reshape(n, len(resources)),
        max_workers=np.array([job.get("max_workers", options.max_workers) for job in jobs], dtype=np.int64),
        max_ps=np.array([job.get("max_ps", options.max_ps) for job in jobs], dtype=np.int64),
        options=options, slot_seconds=float(cl.get("slot_seconds", 1200.0)), horizon=cl.get("horizon"),
        source=source, meta=doc.get("meta", {}), reference=parse_reference(doc))


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def dump(inst: SMDInstance) -> dict:
    # servers: group identical consecutive capacities under one entry with a count
    servers = []
    for s in range(inst.n_servers):
        cap = {r: _num(v) for r, v in zip(inst.resources, inst.server_cap[s])}
        if servers and servers[-1]["capacity"] == cap:
            servers[-1]["count"] = servers[-1].get("count", 1) + 1
        else:
            servers.append({"name": inst.server_names[s], "capacity": cap})
    cluster = {"resources": list(inst.resources), "servers": servers, "slot_seconds": _num(inst.slot_seconds)}
    if inst.horizon is not None:
        cluster["horizon"] = int(inst.horizon)
    o = inst.options
    profiles = {}
    for name in sorted(set(inst.job_type)):
        prof = inst.profiles[name]
        if name in builtin_profiles.CALIBRATED and prof is builtin_profiles.builtin(name):
            continue
        p = {"layers": [{"name": ln, "forward_s": float(a), "backward_s": float(b), "bytes": _num(m)}
                        for ln, a, b, m in zip(prof.layer_names or [f"l{i}" for i in range(prof.n_layers)],
                                               prof.phi, prof.psi, prof.m)],
             "worker_bandwidth": prof.beta_w, "ps_bandwidth": prof.beta_p}
        if np.isfinite(prof.mu_p):
            p["ps_update_rate"] = prof.mu_p
        if prof.delta:
            p["overhead_s"] = prof.delta
        profiles[name] = p
    jobs = []
    for j in range(inst.n_jobs):
        job = {"name": inst.job_names[j], "type": inst.job_type[j], "batch": _num(inst.batch[j]),
               "iterations": _num(inst.iterations[j]), "weight": _num(inst.weight[j]), "arrival": _num(inst.arrival[j]),
               "worker_demand": {r: _num(v) for r, v in zip(inst.resources, inst.d[j]) if v},
               "ps_demand": {r: _num(v) for r, v in zip(inst.resources, inst.e[j]) if v}}
        if inst.max_workers[j] != o.max_workers:
            job["max_workers"] = int(inst.max_workers[j])
        if inst.max_ps[j] != o.max_ps:
            job["max_ps"] = int(inst.max_ps[j])
        jobs.append(job)
    doc = {"name": inst.name, "cluster": cluster,
           "options": {"overlap": o.overlap, "capacity": o.capacity, "ps_le_workers": o.ps_le_workers,
                       "deferral_factor": o.deferral_factor, "max_workers": o.max_workers, "max_ps": o.max_ps}}
    if profiles:
        doc["profiles"] = profiles
    doc["jobs"] = jobs
    if inst.meta:
        doc["meta"] = inst.meta
    doc.update(dump_reference(inst.reference))
    return doc


def parse_solution(inst: SMDInstance, sol, source: str):
    """``{"allocation": [[w, p], ...]}`` (``[w, p, server]`` under per-server capacity) or ``{"schedule": [[[w, p], ...], ...]}`` -> numpy arrays."""
    if isinstance(sol, dict) and "allocation" in sol:
        expected = f"{inst.n_jobs} integer rows [w, p] (or [w, p, server])"
        arr = int_array(sol["allocation"], source, "$.solution.allocation", (inst.n_jobs, None), expected)
        if arr.ndim != 2 or arr.shape[1] not in (2, 3):
            raise InputError(source, "$.solution.allocation", expected, f"rows of {arr.shape[1] if arr.ndim == 2 else 0} entries")
        return {"allocation": arr}
    if isinstance(sol, dict) and "schedule" in sol:
        arr = int_array(sol["schedule"], source, "$.solution.schedule", (None, inst.n_jobs, 2),
                        f"a list of slots, each {inst.n_jobs} integer pairs [w, p]")
        return {"schedule": arr.reshape(-1, inst.n_jobs, 2)}
    raise InputError(source, "$.solution", "an object with 'allocation' or 'schedule'", sol)


def dump_solution(sol):
    if sol is None:
        return None
    if isinstance(sol, dict):
        return {k: np.asarray(v).tolist() for k, v in sol.items() if k in ("allocation", "schedule")}
    return [int(o) for o in sol]

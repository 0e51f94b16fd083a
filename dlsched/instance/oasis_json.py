"""The ``oasis`` family in dlsched/1 files (schema ``schema/oasis.schema.json``, MODELS.md §3.1).

A solution is a schedule (docs/oasis.md "Solution format")::

    {"jobs": [{"job": 0, "admitted": true, "completion": 7,
               "workers": [[slot, server, count], ...], "ps": [[slot, server, count], ...]},
              {"job": 1, "admitted": false, "reason": "..."}]}

Servers are named by their 0-based index in the expanded server list (``count`` expanded in order).
"""

from __future__ import annotations

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.fields import boolean, int_array, integer
from dlsched.instance.mcmdk_json import dump_reference, parse_reference
from dlsched.instance.oasis import OasisInstance, OasisSchedule, Utility

JOB_FIELDS = ("chunks", "minibatches", "epochs", "tau", "grad_mb", "worker_gbps", "ps_gbps")


def _servers(doc: list, resources: list[str], source: str, where: str):
    caps, names = [], []
    for s, srv in enumerate(doc):
        unknown = sorted(set(srv["capacity"]) - set(resources))
        if unknown:
            raise InputError(source, f"{where}[{s}].capacity.{unknown[0]}", f"a listed resource ({', '.join(resources)})", unknown[0])
        row = [float(srv["capacity"].get(r, 0.0)) for r in resources]
        count = int(srv.get("count", 1))
        for c in range(count):
            caps.append(row)
            names.append(srv["name"] if count == 1 else f"{srv['name']}#{c}")
    return np.array(caps, dtype=float), tuple(names)


def _demand(job: dict, key: str, resources: list[str], source: str, where: str) -> list[float]:
    unknown = sorted(set(job[key]) - set(resources))
    if unknown:
        raise InputError(source, f"{where}.{key}.{unknown[0]}", f"a listed resource ({', '.join(resources)})", unknown[0])
    return [float(job[key].get(r, 0.0)) for r in resources]


def parse(doc: dict, source: str) -> OasisInstance:
    resources = list(doc["resources"])
    wcap, wnames = _servers(doc["worker_servers"], resources, source, "$.worker_servers")
    pcap, pnames = _servers(doc["ps_servers"], resources, source, "$.ps_servers")
    jobs = doc["jobs"]
    T = int(doc["horizon"])
    for i, job in enumerate(jobs):
        if job["arrival"] > T:
            raise InputError(source, f"$.jobs[{i}].arrival", f"a slot in 1..{T} (the horizon)", job["arrival"])
    utils = []
    for i, job in enumerate(jobs):
        u = dict(job["utility"])
        utils.append(Utility(u.pop("kind"), {k: float(v) for k, v in u.items()}))
    n = len(jobs)
    return OasisInstance(
        resources=tuple(resources), horizon=T, worker_cap=wcap, ps_cap=pcap,
        arrival=np.array([j["arrival"] for j in jobs], dtype=np.int64),
        **{f: np.array([j[f] for j in jobs]) for f in JOB_FIELDS},
        worker_demand=np.array([_demand(j, "worker_demand", resources, source, f"$.jobs[{i}]") for i, j in enumerate(jobs)]).reshape(n, len(resources)),
        ps_demand=np.array([_demand(j, "ps_demand", resources, source, f"$.jobs[{i}]") for i, j in enumerate(jobs)]).reshape(n, len(resources)),
        utilities=tuple(utils), slot_seconds=float(doc.get("slot_seconds", 60.0)), name=doc.get("name", ""),
        job_names=tuple(j["name"] for j in jobs), worker_names=wnames, ps_names=pnames,
        job_classes=tuple(j.get("class", "") for j in jobs), meta=doc.get("meta", {}), source=source,
        reference=parse_reference(doc))


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def dump(inst: OasisInstance) -> dict:
    def servers(cap, names):
        return [{"name": names[s], "capacity": {r: _num(cap[s, k]) for k, r in enumerate(inst.resources)}}
                for s in range(cap.shape[0])]

    jobs = []
    for i in range(inst.n_jobs):
        job = {"name": inst.job_names[i]}
        if inst.job_classes and inst.job_classes[i]:
            job["class"] = inst.job_classes[i]
        job["arrival"] = int(inst.arrival[i])
        for f in JOB_FIELDS:
            job[f] = _num(getattr(inst, f)[i])
        job["worker_demand"] = {r: _num(inst.worker_demand[i, k]) for k, r in enumerate(inst.resources) if inst.worker_demand[i, k]}
        job["ps_demand"] = {r: _num(inst.ps_demand[i, k]) for k, r in enumerate(inst.resources) if inst.ps_demand[i, k]}
        job["utility"] = inst.utilities[i].to_dict()
        jobs.append(job)
    doc = {"name": inst.name, **dump_reference(inst.reference), "horizon": int(inst.horizon), "slot_seconds": _num(inst.slot_seconds),
           "resources": list(inst.resources), "worker_servers": servers(inst.worker_cap, inst.worker_names),
           "ps_servers": servers(inst.ps_cap, inst.ps_names), "jobs": jobs}
    if inst.meta:
        doc["meta"] = inst.meta
    return doc


def dump_solution(sched: OasisSchedule | None):
    if sched is None:
        return None
    out = []
    for i in range(len(sched.admitted)):
        if not sched.admitted[i]:
            entry = {"job": i, "admitted": False}
            if i in sched.reasons:
                entry["reason"] = sched.reasons[i]
            out.append(entry)
            continue
        w = sched.workers[sched.workers[:, 0] == i][:, 1:]
        p = sched.ps[sched.ps[:, 0] == i][:, 1:]
        out.append({"job": i, "admitted": True, "completion": int(sched.completion[i]),
                    "workers": w.tolist(), "ps": p.tolist()})
    return {"jobs": out}


def parse_solution(inst: OasisInstance, sol, source: str) -> OasisSchedule:
    where = "$.solution"
    if not isinstance(sol, dict) or not isinstance(sol.get("jobs"), list):
        raise InputError(source, where, "an object with a list 'jobs'", type(sol).__name__)
    n = inst.n_jobs
    sched = OasisSchedule.empty(n)
    wrows, prows = [], []
    seen: dict[int, int] = {}
    for e, entry in enumerate(sol["jobs"]):
        w = f"{where}.jobs[{e}]"
        if not isinstance(entry, dict):
            raise InputError(source, w, "an object {job, admitted, completion, workers, ps}", entry)
        i = integer(entry.get("job"), source, w + ".job", 0, n - 1)
        if i in seen:
            raise InputError(source, w + ".job", "each job once", f"job {i} again (first at {where}.jobs[{seen[i]}])")
        seen[i] = e
        if not boolean(entry.get("admitted", False), source, w + ".admitted"):
            if "reason" in entry:
                sched.reasons[i] = str(entry["reason"])
            continue
        sched.admitted[i] = True
        sched.completion[i] = integer(entry.get("completion", 0), source, w + ".completion")
        for key, rows in (("workers", wrows), ("ps", prows)):
            arr = int_array(entry.get(key, []), source, f"{w}.{key}", (None, 3), "a list of [slot, server, count] integers")
            rows.extend([i, *row] for row in arr.reshape(-1, 3).tolist())
    sched.workers = np.array(wrows, dtype=np.int64).reshape(-1, 4)
    sched.ps = np.array(prows, dtype=np.int64).reshape(-1, 4)
    return sched

"""The ``placement`` family in dlsched/1 files (schema: ``schema/placement.schema.json``).

Solution form (docs/hetplace.md)::

    {"jobs": [{"name": "j0", "gpus": ["v100-0/0", "v100-0/1"], "samples": [64.0, 64.0]}, ...]}

``gpus`` names GPUs as ``<server>/<slot>``; ``samples`` is each worker's share of the global
batch per iteration. Servers with ``count`` > 1 are expanded to ``<name>-0``, ``<name>-1``, ...
"""

from __future__ import annotations

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.fields import int_list, number_list
from dlsched.instance.mcmdk_json import dump_reference, parse_reference
from dlsched.instance.placement import GpuAssignment, PlacementInstance
from dlsched.perf.throughputs import calibrate, load_gavel


def parse(doc: dict, source: str) -> PlacementInstance:
    cl = doc["cluster"]
    types: list[str] = list(cl.get("gpu_types", []))
    names, stype, sgpus = [], [], []
    for s, srv in enumerate(cl["servers"]):
        t = srv["gpu_type"]
        if t not in types:
            if cl.get("gpu_types"):
                raise InputError(source, f"$.cluster.servers[{s}].gpu_type", f"one of cluster.gpu_types {types}", t)
            types.append(t)
        count = srv.get("count", 1)
        for c in range(count):
            names.append(srv["name"] if count == 1 else f"{srv['name']}-{c}")
            stype.append(types.index(t))
            sgpus.append(int(srv["capacity"]["gpu"]))
    if len(set(names)) != len(names):
        dup = next(x for x in names if names.count(x) > 1)
        raise InputError(source, "$.cluster.servers", "unique server names", f"'{dup}' twice")
    jobs = doc["jobs"]
    table = cal = None
    rho = np.zeros((len(jobs), len(types)))
    size = np.zeros(len(jobs))
    for i, job in enumerate(jobs):
        thr = job.get("throughput", {})
        for g, t in enumerate(types):
            if t in thr:
                rho[i, g] = thr[t]
                if not thr[t] > 0:
                    raise InputError(source, f"$.jobs[{i}].throughput.{t}", f"a positive throughput of job '{job['name']}' on GPU type '{t}'", thr[t])
                continue
            if table is None:

                table = load_gavel()
            if job["type"] not in table.job_types:
                raise InputError(source, f"$.jobs[{i}].throughput.{t}", f"a throughput for job '{job['name']}' on GPU type '{t}' (its type '{job['type']}' is not in the Gavel table)", "none")
            if t not in table.gpu_types:
                raise InputError(source, f"$.jobs[{i}].throughput.{t}", f"a throughput for job '{job['name']}' on GPU type '{t}' (Gavel measures {', '.join(table.gpu_types)})", "none")
            try:
                rho[i, g] = table.rho(job["type"], t)
            except InputError as exc:
                raise InputError(source, f"$.jobs[{i}].throughput.{t}", f"a throughput for job '{job['name']}' on GPU type '{t}'", exc.found) from None
        if "model_size_mb" in job:
            size[i] = job["model_size_mb"]
        else:
            if cal is None:

                table = table or load_gavel()
                cal = calibrate(table)
            if job["type"] not in cal.comm_seconds:
                raise InputError(source, f"$.jobs[{i}].model_size_mb", f"a model size for job '{job['name']}' (type '{job['type']}' is not in the Gavel table)", "none")
            size[i] = cal.model_size_mb(job["type"], float(doc.get("meta", {}).get("calibration_gbps", 10.0)))
    model = doc.get("model", {})
    return PlacementInstance(
        gpu_types=tuple(types), server_names=tuple(names), server_type=stype, server_gpus=sgpus,
        job_names=tuple(j["name"] for j in jobs), job_types=tuple(j["type"] for j in jobs), rho=rho,
        global_batch=[j["global_batch"] for j in jobs], iterations=[j["iterations"] for j in jobs],
        model_size_mb=size, max_workers=[j["max_workers"] for j in jobs],
        intra_gbps=float(cl["intra_server_gbps"]), inter_gbps=float(cl["inter_server_gbps"]),
        communication=model.get("communication", "ring"), workload=model.get("workload", "proportional"),
        name=doc.get("name", ""), reference=parse_reference(doc), meta=dict(doc.get("meta", {})), source=source)


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def dump(inst: PlacementInstance) -> dict:
    servers = [{"name": n, "capacity": {"gpu": int(c)}, "gpu_type": inst.gpu_types[t]}
               for n, t, c in zip(inst.server_names, inst.server_type.tolist(), inst.server_gpus.tolist())]
    jobs = [{"name": inst.job_names[i], "type": inst.job_types[i], "global_batch": _num(inst.global_batch[i]),
             "iterations": _num(inst.iterations[i]), "model_size_mb": float(inst.model_size_mb[i]),
             "max_workers": int(inst.max_workers[i]),
             "throughput": {t: float(inst.rho[i, g]) for g, t in enumerate(inst.gpu_types)}}
            for i in range(inst.n_jobs)]
    doc = {"name": inst.name, **dump_reference(inst.reference),
           "cluster": {"resources": ["gpu"], "gpu_types": list(inst.gpu_types), "servers": servers,
                       "intra_server_gbps": inst.intra_gbps, "inter_server_gbps": inst.inter_gbps},
           "model": {"communication": inst.communication, "workload": inst.workload}, "jobs": jobs}
    meta = {k: v for k, v in inst.meta.items() if not str(k).startswith("_")}
    if meta:
        doc["meta"] = meta
    return doc


def parse_solution(inst: PlacementInstance, sol, source: str) -> GpuAssignment:
    if isinstance(sol, dict) and "gpu_job" in sol:
        gj = int_list(sol.get("gpu_job"), source, "$.solution.gpu_job", inst.n_gpus)
        wl = number_list(sol.get("workload"), source, "$.solution.workload", inst.n_gpus)
        return GpuAssignment(np.array(gj, dtype=np.int64), np.array(wl, dtype=float), inst.job_names, tuple(inst.gpu_names()))
    if not isinstance(sol, dict) or not isinstance(sol.get("jobs"), list):
        raise InputError(source, "$.solution", "an object {\"jobs\": [{\"name\", \"gpus\", \"samples\"}, ...]}", type(sol).__name__)
    gpu_index = {g: k for k, g in enumerate(inst.gpu_names())}
    job_index = {n: i for i, n in enumerate(inst.job_names)}
    gpu_job = np.full(inst.n_gpus, -1, dtype=np.int64)
    load = np.zeros(inst.n_gpus)
    for e, entry in enumerate(sol["jobs"]):
        where = f"$.solution.jobs[{e}]"
        name = entry.get("name") if isinstance(entry, dict) else entry
        if not isinstance(name, str) or name not in job_index:
            raise InputError(source, f"{where}.name", "a job name of the instance", name)
        gpus = entry.get("gpus", [])
        if not isinstance(gpus, list):
            raise InputError(source, f"{where}.gpus", "a list of GPU names '<server>/<slot>'", gpus)
        samples = number_list(entry.get("samples", []), source, f"{where}.samples", len(gpus))
        for q, g in enumerate(gpus):
            if not isinstance(g, str) or g not in gpu_index:
                raise InputError(source, f"{where}.gpus[{q}]", "a GPU name '<server>/<slot>'", g)
            k = gpu_index[g]
            if gpu_job[k] != -1:
                raise InputError(source, f"{where}.gpus[{q}]", "a GPU used by one job only", f"'{g}' given twice")
            gpu_job[k] = job_index[name]
            load[k] = samples[q]
    return GpuAssignment(gpu_job, load, inst.job_names, tuple(inst.gpu_names()))


def dump_solution(p: GpuAssignment | None):
    """The per-job form when the placement carries names (solvers set them), else the arrays."""
    if p is None:
        return None
    if p.job_names is None or p.gpu_names is None:
        return {"gpu_job": p.gpu_job.tolist(), "workload": p.workload.tolist()}
    return {"jobs": [{"name": p.job_names[i], "gpus": [p.gpu_names[k] for k in p.gpus_of(i)],
                      "samples": [float(x) for x in p.workload[p.gpus_of(i)]]} for i in range(len(p.job_names))]}

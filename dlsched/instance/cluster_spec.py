"""Clusters from files: the JSON cluster spec, Gavel's cluster specs, OpenB node lists, Tiresias.

* **JSON cluster spec** (``schema/cluster.schema.json``, validated with jsonschema): ``servers``
  one by one and/or ``groups`` of identical servers, each with ``capacity`` per resource,
  ``gpu_type`` and ``rack``; bandwidths ``intra_server_gbps``, ``inter_server_gbps``,
  ``inter_rack_gbps`` (Gbit/s).
* **Gavel** ``cluster_specs.json``: ``{"<virtual cluster>": ["<v100>:<p100>:<k80>", ...]}``, GPU
  counts per type in Gavel's order; also a bare ``"36:36:36"``. Servers hold
  ``gpus_per_server`` GPUs of one type (4 by default; a remainder makes one smaller server).
* **OpenB** node lists (``sn, cpu_milli, memory_mib, gpu, model``): one server per row, in cores,
  GiB and GPUs; CPU-only nodes (``gpu`` 0) are kept with an empty GPU type.
* **Tiresias** (``num_switch, num_node_p_switch, num_gpu_p_node, num_cpu_p_node, mem_p_node``):
  one rack per switch.

:func:`load_cluster` picks the reader from the argument: a file's extension and content, or
``V:P:K`` (Gavel counts), or ``dl2:N`` (N of DL2's nodes, :func:`dlsched.instance.synthetic.dl2_cluster`),
or ``SxG`` (:func:`servers_by_gpus`: S identical servers of G GPUs, e.g. ``80x8``, for a trace
that names no cluster, such as Microsoft ITP's).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance.cluster import MAX_SERVERS, Cluster, server_count
from dlsched.instance.jsonio import read_json, validate
from dlsched.instance.synthetic import dl2_cluster
from dlsched.instance.traces import _csv_rows, _int, _read_lines, read_openb_nodes

GAVEL_GPU_ORDER = ("v100", "p100", "k80")
# (counts of at most 12 digits: a longer one is no count, and int() refuses 4,300 digits)
_GAVEL_SPEC = re.compile(r"^\d{1,12}:\d{1,12}:\d{1,12}$")
_DL2 = re.compile(r"^dl2:(\d{1,12})$")
_SERVERS_BY_GPUS = re.compile(r"^(\d{1,12})x(\d{1,12})$")
_BANDWIDTHS = ("intra_server_gbps", "inter_server_gbps", "inter_rack_gbps")


def parse_cluster_spec(doc: Any, source: str = "<memory>") -> Cluster:
    """A Cluster from a parsed JSON cluster spec (validated against ``cluster.schema.json``)."""

    validate(doc, "cluster.schema.json", source)
    entries: list[tuple[str, dict, str, int | None]] = []
    for i, s in enumerate(doc.get("servers", [])):
        entries.append((s.get("name", f"s{i}"), s["capacity"], s.get("gpu_type", ""), s.get("rack")))
    server_count(len(entries) + sum(grp["count"] for grp in doc.get("groups", [])), source, "$.groups[*].count", lo=0)
    for g, grp in enumerate(doc.get("groups", [])):
        prefix = grp.get("name") or grp.get("gpu_type") or f"group{g}"
        entries += [(f"{prefix}-{k}", grp["capacity"], grp.get("gpu_type", ""), grp.get("rack")) for k in range(grp["count"])]
    names = [e[0] for e in entries]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(source, "$.servers", "unique server names", f"'{dup}' twice")
    resources: list[str] = []
    for _, cap, _, _ in entries:
        resources += [r for r in cap if r not in resources]
    capacity = np.array([[float(cap.get(r, 0.0)) for r in resources] for _, cap, _, _ in entries])
    per_rack = doc.get("servers_per_rack") or len(entries)
    rack = [e[3] if e[3] is not None else i // per_rack for i, e in enumerate(entries)]
    bw = {k: float(doc[k]) for k in _BANDWIDTHS if k in doc}
    return Cluster(tuple(resources), capacity, tuple(e[2] for e in entries), np.array(rack), tuple(names), source=source, **bw)


def cluster_to_spec(cluster: Cluster) -> dict:
    """The JSON cluster spec of ``cluster``, server by server (``parse_cluster_spec`` reads it back
    to the same cluster)."""
    servers = []
    for s in range(cluster.n_servers):
        entry: dict = {"name": cluster.names[s],
                       "capacity": {r: _number(cluster.capacity[s, i]) for i, r in enumerate(cluster.resources)},
                       "rack": int(cluster.rack[s])}
        if cluster.gpu_type[s]:
            entry["gpu_type"] = cluster.gpu_type[s]
        servers.append(entry)
    doc: dict = {"servers": servers}
    for k in _BANDWIDTHS:
        v = getattr(cluster, k)
        if np.isfinite(v):
            doc[k] = _number(v)
    return doc


def _number(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


def load_cluster_spec(path: str | Path) -> Cluster:
    """Read and validate a JSON cluster spec file."""

    return parse_cluster_spec(read_json(path), str(path))


def gavel_cluster(spec: str, gpus_per_server: int = 4, source: str = "<argument>") -> Cluster:
    """Gavel's ``"<v100>:<p100>:<k80>"`` GPU counts as servers of ``gpus_per_server`` GPUs each."""
    if not _GAVEL_SPEC.match(spec.strip()):
        raise InputError(source, "cluster spec", "'<v100>:<p100>:<k80>' GPU counts, e.g. '36:36:36'", spec)
    if gpus_per_server < 1:
        raise InputError("<argument>", "gpus_per_server", "at least 1", gpus_per_server)
    counts = [int(c) for c in spec.strip().split(":")]
    server_count(sum(-(-c // gpus_per_server) for c in counts), source, "cluster spec", lo=0)
    groups = []
    for gtype, count in zip(GAVEL_GPU_ORDER, counts):
        full, rest = divmod(count, gpus_per_server)
        groups += [(full, gpus_per_server, gtype)] if full else []
        groups += [(1, rest, gtype)] if rest else []
    if not groups:
        raise InputError(source, "cluster spec", "a cluster with at least one GPU", spec)
    cluster = Cluster.from_groups([(n, {"gpu": float(g)}, t) for n, g, t in groups])
    return Cluster(cluster.resources, cluster.capacity, cluster.gpu_type, cluster.rack,
                   tuple(f"{t}-{k}" for k, t in enumerate(cluster.gpu_type)), source=source)


def servers_by_gpus(spec: str, source: str = "<argument>") -> Cluster:
    """``"SxG"``: S identical servers of G GPUs each (resource ``gpu`` only, one rack, no GPU type)."""
    m = _SERVERS_BY_GPUS.match(spec.strip())
    if not m:
        raise InputError(source, "cluster spec", "'SxG': servers x GPUs per server, e.g. '80x8'", spec)
    servers, gpus = int(m.group(1)), int(m.group(2))
    if not (1 <= servers <= MAX_SERVERS and gpus >= 1):
        raise InputError(source, "cluster spec", f"1 to {MAX_SERVERS} servers of at least 1 GPU", spec)
    return Cluster.homogeneous(servers, {"gpu": float(gpus)}, source=spec.strip())


def load_gavel_cluster_specs(path: str | Path | None = None) -> dict[str, list[Cluster]]:
    """Every cluster of Gavel's ``cluster_specs.json``, by virtual cluster, in the file's order."""

    if path is None:
        path = data_dir() / "gavel" / "cluster_specs.json"
    doc = read_json(path)
    return _gavel_specs(doc, str(path))


def _gavel_specs(doc: Any, source: str) -> dict[str, list[Cluster]]:
    if not isinstance(doc, dict) or not doc:
        raise InputError(source, "$", "an object of virtual clusters to lists of 'V:P:K' specs", type(doc).__name__)
    out = {}
    for vc, specs in doc.items():
        if not isinstance(specs, list) or not specs or not all(isinstance(s, str) for s in specs):
            raise InputError(source, f"$.{vc}", "a non-empty list of 'V:P:K' strings", specs)
        out[vc] = [gavel_cluster(s, source=f"{source} $.{vc}[{i}]") for i, s in enumerate(specs)]
    return out


def openb_cluster(path: str | Path | None = None) -> Cluster:
    """An OpenB node list (default ``openb_node_list_gpu_node.csv``), every row a server."""

    if path is None:
        path = data_dir() / "alibaba-openb" / "openb_node_list_gpu_node.csv"
    nodes = read_openb_nodes(path, gpu_only=False)
    if not nodes:
        raise InputError(str(path), "line 2", "an OpenB node list with at least one node", "no rows")
    cap = np.array([[n.gpus, n.cpu_milli / 1000.0, n.memory_mib / 1024.0] for n in nodes], dtype=float)
    return Cluster(("gpu", "cpu", "memory"), cap, tuple("" if n.gpu_model == "none" else n.gpu_model for n in nodes),
                   np.zeros(len(nodes), dtype=np.int64), tuple(n.name for n in nodes), source=str(path))


TIRESIAS_CLUSTER_COLUMNS = ("num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node")


def load_tiresias_cluster(path: str | Path) -> Cluster:
    """A Tiresias cluster CSV (e.g. ``n32g4.csv``): switches x nodes of GPUs, CPUs and memory (GB)."""

    path = Path(path)
    rows = _csv_rows(path, "a Tiresias cluster CSV", TIRESIAS_CLUSTER_COLUMNS)
    if len(rows) != 1:
        raise InputError(str(path), f"line {rows[1][0]}", "one row describing the cluster", f"{len(rows)} rows")
    ln, row = rows[0]
    v = {c: _int(row[c], path, f"line {ln}", c, 1 if c in ("num_switch", "num_node_p_switch") else 0)
         for c in TIRESIAS_CLUSTER_COLUMNS}
    n = v["num_switch"] * v["num_node_p_switch"]
    if n > MAX_SERVERS:
        raise InputError(str(path), f"line {ln}", f"at most {MAX_SERVERS} nodes (num_switch x num_node_p_switch)", n)
    try:
        cluster = Cluster.homogeneous(n, {"gpu": v["num_gpu_p_node"], "cpu": v["num_cpu_p_node"], "memory": v["mem_p_node"]},
                                      servers_per_rack=v["num_node_p_switch"])
    except InputError as exc:   # e.g. no GPU at all: name this file, not the in-memory cluster
        raise InputError(str(path), f"line {ln} ({exc.where})", exc.expected, exc.found) from None
    return Cluster(cluster.resources, cluster.capacity, cluster.gpu_type, cluster.rack, cluster.names, source=str(path))


def load_cluster(path: str | Path) -> Cluster:
    """Any supported cluster (module docstring); for Gavel's ``cluster_specs.json`` the first
    spec of the first virtual cluster."""
    text = str(path)
    p = Path(path)
    try:
        exists = p.exists()
    except OSError:          # a name too long for the file system is no file
        exists = False
    if not exists:
        if _GAVEL_SPEC.match(text):
            return gavel_cluster(text)
        m = _DL2.match(text)
        if m:
            return dl2_cluster(int(m.group(1)))
        if _SERVERS_BY_GPUS.match(text):
            return servers_by_gpus(text)
        raise InputError(text, "file", "a cluster file, 'V:P:K' Gavel GPU counts, 'SxG' servers x GPUs or 'dl2:N'",
                         "no such file")
    if p.suffix == ".json":
        doc = read_json(p)
        if isinstance(doc, dict) and ("servers" in doc or "groups" in doc):
            return parse_cluster_spec(doc, text)
        return next(iter(_gavel_specs(doc, text).values()))[0]

    first = (_read_lines(p, "a cluster file") or [""])[0]
    header = {c.strip() for c in first.split(",")}
    if {"sn", "gpu", "model"} <= header:
        return openb_cluster(p)
    if "num_switch" in header:
        return load_tiresias_cluster(p)
    raise InputError(text, "line 1", "a JSON cluster spec, Gavel cluster_specs.json, an OpenB node list or a Tiresias "
                     "cluster CSV", first[:80])

"""Trace importers: Gavel job traces and Alibaba OpenB node lists (shared/data/README.md).

* Gavel ``msr_seed0_*.trace``: 7 tab-separated columns ``job_type, command, num_steps_arg,
  needs_data_dir, total_steps, arrival_time_s, scale_factor``; ``physical_*.trace``: 10 columns
  ``job_type, command, working_dir, num_steps_arg, needs_data_dir, total_steps, scale_factor,
  priority_weight, SLO, arrival_time``.
* Alibaba OpenB ``openb_node_list_*.csv``: ``sn, cpu_milli, memory_mib, gpu, model``.

Both become plain records; :mod:`dlsched.instance.placement_gen` turns them into instances.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from dlsched.data import data_dir
from dlsched.errors import InputError

OPENB_GPU_MODELS = ("G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10")


@dataclass(frozen=True)
class TraceJob:
    """One job of a Gavel trace."""

    job_type: str
    total_steps: int
    arrival: float
    scale_factor: int


@dataclass(frozen=True)
class Node:
    """One server of a cluster description: its name, GPU count and GPU model."""

    name: str
    gpus: int
    gpu_model: str
    cpu_milli: int = 0
    memory_mib: int = 0


def read_gavel_trace(path: str | Path) -> list[TraceJob]:
    """Read a Gavel trace (the 7-column ``msr`` or the 10-column ``physical`` layout)."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise InputError(str(path), "file", "a Gavel trace file", "no such file") from None
    jobs = []
    for ln, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        try:
            if len(cols) == 7:
                jobs.append(TraceJob(cols[0], int(cols[4]), float(cols[5]), int(cols[6])))
            elif len(cols) == 10:
                jobs.append(TraceJob(cols[0], int(cols[5]), float(cols[9]), int(cols[6])))
            else:
                raise InputError(str(path), f"line {ln}", "7 (msr) or 10 (physical) tab-separated columns", f"{len(cols)} columns")
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(str(path), f"line {ln}", "integer steps and scale factor, numeric arrival", line[:80]) from None
    return jobs


def gavel_traces() -> list[Path]:
    """The Gavel trace files of the shared reference data."""

    return sorted((data_dir() / "gavel").glob("*.trace"))


def read_openb_nodes(path: str | Path | None = None, *, gpu_only: bool = True) -> list[Node]:
    """Read an Alibaba OpenB node list (default: ``openb_node_list_gpu_node.csv``)."""
    if path is None:

        path = data_dir() / "alibaba-openb" / "openb_node_list_gpu_node.csv"
    path = Path(path)
    try:
        fh = path.open(newline="")
    except FileNotFoundError:
        raise InputError(str(path), "file", "an OpenB node list", "no such file") from None
    nodes = []
    with fh:
        reader = csv.DictReader(fh)
        need = {"sn", "gpu", "model"}
        if not need <= set(reader.fieldnames or ()):
            raise InputError(str(path), "header", "columns sn, cpu_milli, memory_mib, gpu, model", reader.fieldnames)
        for ln, row in enumerate(reader, 2):
            try:
                gpus = int(row["gpu"])
            except ValueError:
                raise InputError(str(path), f"line {ln}, column gpu", "an integer", row["gpu"]) from None
            if gpu_only and gpus == 0:
                continue
            nodes.append(Node(row["sn"], gpus, row["model"] or "none", int(row.get("cpu_milli") or 0),
                              int(row.get("memory_mib") or 0)))
    return nodes

r"""Trace importers (shared/data/README.md): Gavel, Tiresias, Alibaba OpenB, Pollux/Sia, Microsoft ITP.

* Gavel ``msr_seed0_*.trace``: 7 tab-separated columns ``job_type, command, num_steps_arg,
  needs_data_dir, total_steps, arrival_time_s, scale_factor``; ``physical_*.trace``: 10 columns
  ``job_type, command, working_dir, num_steps_arg, needs_data_dir, total_steps, scale_factor,
  priority_weight, SLO, arrival_time``.
* Tiresias CSV: ``job_id, num_gpu, submit_time, iterations, model_name, duration, interval``.
* Alibaba OpenB pods ``openb_pod_list_*.csv``: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli,
  gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time``; node lists
  ``openb_node_list_*.csv``: ``sn, cpu_milli, memory_mib, gpu, model``.
* Pollux/Sia workload CSV: ``name, time, application, num_replicas, batch_size`` (+ optional
  ``duration``, ``iterations`` or ``samples``).
* Microsoft ITP (the ElasticFlow traces ``microsoft-itp/cluster*.csv``): ``job_id,
  submission_time, num_iteration, model_name, deadline, batch_size, num_gpu, duration``.

:func:`read_gavel_trace` and :func:`read_openb_nodes` return plain records
(:mod:`dlsched.instance.placement_gen` turns them into placement instances); the ``load_*``
functions return a :class:`~dlsched.instance.workload.Trace` for the simulator, and
:func:`load_trace` picks the reader from the file's content.

**Units in a Trace.** Resources are ``gpu`` (GPUs, fractional for GPU-sharing pods), ``cpu``
(cores) and ``memory`` (GiB). A job that fixes its size has ``min_workers == max_workers`` =
its GPUs, one GPU per worker (all-reduce, no PS).

**The duration convention.** Gavel traces give each job's work in steps (``total_steps``),
which :class:`dlsched.sim.speed.ThroughputSpeed` turns into time. Traces that record only how
long a job ran (Tiresias, OpenB; Pollux/Sia with a ``duration`` column) keep that duration
:math:`d_j`, at the job's requested size :math:`n_j`, in ``job.meta["duration"]``, and
:class:`dlsched.sim.speed.DurationSpeed` runs the job at :math:`K_j / d_j` iterations/s at size
:math:`n_j` (linear in its workers otherwise), so the recorded duration is reproduced. The
iterations :math:`K_j` are the file's own where it has them (Tiresias ``iterations``, ITP
``num_iteration``), else
:math:`K_j = d_j` (one iteration per second of the recorded run at the requested size).

OpenB pods: a pod with ``num_gpu`` = k ≥ 1 GPUs is k workers of ``gpu_milli``/1000 GPU each
(the pod's CPU and memory split evenly over them); a pod with 0 GPUs is a CPU pod, one worker
holding its CPU and memory. Its duration is ``deletion_time − creation_time`` (the pod's whole
life, as the brief of issue 11 asks: Pending and Failed pods are kept too, with their phase in
``meta``); a pod deleted in the second it was created runs 1 s, the timestamps' resolution.

Microsoft ITP jobs (:func:`load_itp_trace`) are rigid by default: ``num_gpu`` GPUs, one per
worker, for their recorded ``duration`` (the duration convention with :math:`K_j` =
``num_iteration``). The **elastic** variant (format ``itp-elastic``) lets a job run on any
:math:`w \in [1, n_j]` GPUs, :math:`n_j` = ``num_gpu``, with the same work :math:`K_j`; its speed
source is :class:`dlsched.sim.speed.DurationSpeed`, :math:`K_j / d_j \cdot w / n_j`: the recorded
rate at the recorded size, linear below it (no measured scaling curve comes with the trace, and
linear is the most a job can gain per GPU, so it favours resizing policies); never above
:math:`n_j`, where nothing was recorded. ``model_name``, ``batch_size`` and ``deadline`` are kept
in ``meta``.

Every reader checks what the simulator could not replay and raises
:class:`~dlsched.errors.InputError` naming the file and line: missing or unknown columns,
non-numeric or non-finite numbers, negative durations, GPU counts or steps, arrivals out of
order, no jobs at all.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance.files import read_text
from dlsched.instance.jsonio import MAGNITUDE_RULE, MAX_MAGNITUDE
from dlsched.instance.gavel_gen import gavel_trace, parse_options
from dlsched.instance.synthetic import DURATION, dl2_trace, poisson_trace
from dlsched.instance.workload import Job, Trace

OPENB_GPU_MODELS = ("G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10")


@dataclass(frozen=True)
class TraceJob:
    """One job of a Gavel trace."""

    job_type: str
    total_steps: int
    arrival: float
    scale_factor: int
    priority_weight: float = 1.0
    line: int = 0


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
    lines = _read_lines(path, "a Gavel trace file")
    jobs = []
    for ln, line in enumerate(lines, 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) == 7:
            steps, arrival, sf, weight = cols[4], cols[5], cols[6], "1"
        elif len(cols) == 10:
            steps, arrival, sf, weight = cols[5], cols[9], cols[6], cols[7]
        else:
            raise InputError(str(path), f"line {ln}", "7 (msr) or 10 (physical) tab-separated columns", f"{len(cols)} columns")
        where = f"line {ln}"
        jobs.append(TraceJob(cols[0], _int(steps, path, where, "total_steps", 1), _float(arrival, path, where, "arrival time"),
                             _int(sf, path, where, "scale_factor", 1), _float(weight, path, where, "priority_weight", 0.0, True),
                             ln))
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
        try:
            header = reader.fieldnames
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(str(path), "line 1", "an OpenB node list (CSV, UTF-8 text)", str(exc)) from None
        if not need <= set(header or ()):
            raise InputError(str(path), "line 1", "columns sn, cpu_milli, memory_mib, gpu, model", header)
        for ln, row in _checked_rows(reader, path, header):
            gpus = _int(row["gpu"], path, f"line {ln}", "column gpu")
            if gpu_only and gpus == 0:
                continue
            nodes.append(Node(row["sn"], gpus, row["model"] or "none", _int(row.get("cpu_milli") or 0, path, f"line {ln}", "cpu_milli"),
                              _int(row.get("memory_mib") or 0, path, f"line {ln}", "memory_mib")))
    return nodes


# ------------------------------------------------------------------------------------ helpers

def _read_lines(path: Path, what: str) -> list[str]:
    try:
        return read_text(path).splitlines()
    except InputError as exc:   # every file-system failure (a directory, a symlink loop, binary data, ...)
        raise InputError(exc.source, exc.where, f"{what} (UTF-8 text)", exc.found) from None


def _float(text: str, path: Path | str, where: str, what: str, minimum: float | None = 0.0, strict: bool = False) -> float:
    """A finite number >= ``minimum`` (> if ``strict``), or an InputError naming ``what``."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError(str(path), f"{where}, {what}", "a number", text) from None
    if not math.isfinite(v) or (minimum is not None and (v <= minimum if strict else v < minimum)):
        bound = "" if minimum is None else f" {'>' if strict else '>='} {minimum:g}"
        raise InputError(str(path), f"{where}, {what}", f"a finite number{bound}", text)
    if not abs(v) < MAX_MAGNITUDE:
        raise InputError(str(path), f"{where}, {what}", MAGNITUDE_RULE, text)
    return v


def _int(text: str, path: Path | str, where: str, what: str, minimum: int = 0) -> int:
    """An integer >= ``minimum`` (``"4"`` or ``"4.0"``), or an InputError naming ``what``."""
    v = _float(text, path, where, what, None)
    if v != int(v) or v < minimum:
        raise InputError(str(path), f"{where}, {what}", f"an integer >= {minimum}", text)
    return int(v)


def _checked_rows(reader: csv.DictReader, path: Path | str, header: Sequence[str]):
    """(line number, row) of ``reader``: a row with a field more or less than the header, or one
    the csv module cannot read (a field over its size limit), is an error naming its line."""
    try:
        for row in reader:
            ln = reader.line_num
            if None in row:
                raise InputError(str(path), f"line {ln}", f"{len(header)} comma-separated fields ({', '.join(header)})",
                                 f"{len(header) + len(row[None])} fields, extra {row[None][:3]}")
            missing = [c for c, v in row.items() if v is None]
            if missing:
                raise InputError(str(path), f"line {ln}", f"{len(header)} comma-separated fields ({', '.join(header)})",
                                 f"{len(header) - len(missing)} fields, none for {', '.join(missing)}")
            yield ln, row
    except csv.Error as exc:        # a field over csv.field_size_limit(), a NUL byte, ...
        raise InputError(str(path), f"line {reader.line_num + 1}", "a well-formed CSV row", str(exc)) from None
    except UnicodeDecodeError:
        raise InputError(str(path), f"line {reader.line_num + 1}", "UTF-8 text", "bytes that are not UTF-8") from None


def _csv_rows(path: Path, what: str, required: Sequence[str], optional: Sequence[str] = ()):
    """(line number, row) of a CSV file whose header has every ``required`` column and no
    column outside ``required`` + ``optional``; an empty file or one without rows is an error."""
    lines = _read_lines(path, what)
    reader = csv.DictReader(lines)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError(str(path), "line 1", f"{what}: a CSV header", str(exc)) from None
    missing = [c for c in required if c not in header]
    unknown = [c for c in header if c not in required and c not in optional]
    if missing or unknown or len(set(header)) != len(header):
        found = (f"missing {missing}" if missing else "") + (" and " if missing and unknown else "") + (
            f"unknown {unknown}" if unknown else "") or f"repeated columns in {header}"
        raise InputError(str(path), "line 1", f"{what} with columns {', '.join(required)}"
                         + (f" (optional {', '.join(optional)})" if optional else ""), found)
    rows = list(_checked_rows(reader, path, header))
    if not rows:
        raise InputError(str(path), "line 2", f"{what} with at least one job", "no rows")
    return rows


def _in_order(jobs: list[Job], lines: list[int], path: Path) -> Trace:
    """The jobs as a Trace; a repeated name, an impossible job or an arrival earlier than the
    previous row's is an error naming its line."""
    first: dict[str, int] = {}
    for job, ln in zip(jobs, lines):
        job.validate(str(path), f"line {ln}")
        if job.name in first:
            raise InputError(str(path), f"line {ln}", f"a unique job name (line {first[job.name]} has '{job.name}')", job.name)
        first[job.name] = ln
    for k in range(1, len(jobs)):
        if jobs[k].arrival < jobs[k - 1].arrival:
            raise InputError(str(path), f"line {lines[k]}", f"arrivals in order (>= {jobs[k - 1].arrival:g}, line {lines[k - 1]})",
                             jobs[k].arrival)
    return Trace(tuple(jobs), str(path))


# ------------------------------------------------------------------------------ trace loaders

def load_gavel_trace(path: str | Path) -> Trace:
    """A Gavel trace as a Trace: ``total_steps`` iterations (Gavel steps), ``scale_factor`` GPUs
    (one per worker, all-reduce), weight = ``priority_weight`` (10-column layout)."""
    path = Path(path)
    recs = read_gavel_trace(path)
    if not recs:
        raise InputError(str(path), "line 1", "a Gavel trace with at least one job", "no jobs")
    jobs = [Job(f"gavel-{i}", r.arrival, r.job_type, float(r.total_steps), {"gpu": 1.0}, min_workers=r.scale_factor,
                max_workers=r.scale_factor, weight=r.priority_weight, meta={"line": r.line})
            for i, r in enumerate(recs)]
    return _in_order(jobs, [r.line for r in recs], path)


TIRESIAS_COLUMNS = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")


def load_tiresias_trace(path: str | Path) -> Trace:
    """A Tiresias CSV: ``num_gpu`` GPUs from ``submit_time``, ``iterations`` done in ``duration``
    seconds at that size (the duration convention, module docstring)."""
    path = Path(path)
    jobs, lines = [], []
    for ln, row in _csv_rows(path, "a Tiresias job CSV", TIRESIAS_COLUMNS):
        w = f"line {ln}"
        gpus = _int(row["num_gpu"], path, w, "num_gpu", 1)
        duration = _float(row["duration"], path, w, "duration", 0.0, True)
        jobs.append(Job(f"tiresias-{row['job_id']}", _float(row["submit_time"], path, w, "submit_time"), row["model_name"],
                        _float(row["iterations"], path, w, "iterations", 0.0, True), {"gpu": 1.0}, min_workers=gpus,
                        max_workers=gpus, meta={DURATION: duration, "line": ln}))
        lines.append(ln)
    return _in_order(jobs, lines, path)


OPENB_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                     "creation_time", "deletion_time", "scheduled_time")


def load_openb_pods(path: str | Path | None = None) -> Trace:
    """Alibaba OpenB pods (default ``openb_pod_list_default.csv``) as jobs (module docstring)."""
    if path is None:
        path = data_dir() / "alibaba-openb" / "openb_pod_list_default.csv"
    path = Path(path)
    jobs, lines = [], []
    for ln, row in _csv_rows(path, "an OpenB pod list", OPENB_POD_COLUMNS):
        w = f"line {ln}"
        cpu = _float(row["cpu_milli"], path, w, "cpu_milli") / 1000.0
        mem = _float(row["memory_mib"], path, w, "memory_mib") / 1024.0
        k = _int(row["num_gpu"], path, w, "num_gpu", 0)
        milli = _float(row["gpu_milli"], path, w, "gpu_milli")
        if k and not 0 < milli <= 1000:
            raise InputError(str(path), f"{w}, gpu_milli", "a share of one GPU in (0, 1000] for a GPU pod", row["gpu_milli"])
        created = _float(row["creation_time"], path, w, "creation_time")
        life = _float(row["deletion_time"], path, w, "deletion_time") - created
        if life < 0:
            raise InputError(str(path), f"{w}, deletion_time", f"a time >= creation_time {created:g}", row["deletion_time"])
        duration = max(life, 1.0)
        n = max(k, 1)
        demand = {"cpu": cpu / n, "memory": mem / n}
        if k:
            demand["gpu"] = milli / 1000.0
        jobs.append(Job(row["name"], created, "gpu-pod" if k else "cpu-pod", duration, demand, min_workers=n, max_workers=n,
                        meta={DURATION: duration, "line": ln, "qos": row["qos"], "phase": row["pod_phase"],
                              "gpu_spec": row["gpu_spec"], "num_gpu": k}))
        lines.append(ln)
    return _in_order(jobs, lines, path)


POLLUX_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
POLLUX_WORK = ("duration", "iterations", "samples")


def load_pollux_trace(path: str | Path, work: Mapping[str, float] | None = None) -> Trace:
    """A Pollux/Sia workload CSV: ``num_replicas`` GPUs from ``time``, per-replica ``batch_size``.

    The file records no work; it comes from an optional column (``duration`` in seconds at
    ``num_replicas`` GPUs, the duration convention; ``iterations``; or ``samples``, giving
    samples / (num_replicas · batch_size) iterations), else from ``work[application]``
    (iterations), else it is an error naming the line.
    """
    path = Path(path)
    jobs, lines = [], []
    for ln, row in _csv_rows(path, "a Pollux/Sia workload CSV", POLLUX_COLUMNS, POLLUX_WORK):
        w = f"line {ln}"
        n = _int(row["num_replicas"], path, w, "num_replicas", 1)
        batch = _float(row["batch_size"], path, w, "batch_size", 0.0, True)
        meta: dict = {"line": ln, "batch_size": batch}
        if row.get("duration") not in (None, ""):
            meta[DURATION] = _float(row["duration"], path, w, "duration", 0.0, True)
            K = meta[DURATION]
        elif row.get("iterations") not in (None, ""):
            K = _float(row["iterations"], path, w, "iterations", 0.0, True)
        elif row.get("samples") not in (None, ""):
            K = _float(row["samples"], path, w, "samples", 0.0, True) / (n * batch)
        elif work and row["application"] in work:
            K = float(work[row["application"]])
        else:
            raise InputError(str(path), w, f"a duration, iterations or samples column, or work for application "
                             f"'{row['application']}'", "none")
        jobs.append(Job(row["name"], _float(row["time"], path, w, "time"), row["application"], K, {"gpu": 1.0},
                        min_workers=n, max_workers=n, meta=meta))
        lines.append(ln)
    return _in_order(jobs, lines, path)


ITP_COLUMNS = ("job_id", "submission_time", "num_iteration", "model_name", "deadline", "batch_size", "num_gpu", "duration")


def load_itp_trace(path: str | Path, *, elastic: bool = False) -> Trace:
    """A Microsoft ITP trace (ElasticFlow layout): ``num_gpu`` GPUs from ``submission_time`` for the
    recorded ``duration``, ``num_iteration`` iterations (the duration convention); ``elastic``: any
    1..``num_gpu`` GPUs at the same work (module docstring). ``deadline`` (s, absolute) must not
    precede the submission."""
    path = Path(path)
    jobs, lines = [], []
    for ln, row in _csv_rows(path, "a Microsoft ITP job CSV", ITP_COLUMNS):
        w = f"line {ln}"
        arrival = _float(row["submission_time"], path, w, "submission_time")
        gpus = _int(row["num_gpu"], path, w, "num_gpu", 1)
        duration = _float(row["duration"], path, w, "duration", 0.0, True)
        deadline = _float(row["deadline"], path, w, "deadline")
        if deadline < arrival:
            raise InputError(str(path), f"{w}, deadline", f"a time >= submission_time {arrival:g}", row["deadline"])
        if not row["model_name"].strip():
            raise InputError(str(path), f"{w}, model_name", "a model name", "an empty field")
        jobs.append(Job(f"itp-{row['job_id']}", arrival, row["model_name"],
                        _float(row["num_iteration"], path, w, "num_iteration", 0.0, True), {"gpu": 1.0},
                        min_workers=1 if elastic else gpus, max_workers=gpus,
                        meta={DURATION: duration, "line": ln, "deadline": deadline,
                              "batch_size": _int(row["batch_size"], path, w, "batch_size", 1)}))
        lines.append(ln)
    return _in_order(jobs, lines, path)


def load_itp_elastic(path: str | Path) -> Trace:
    """:func:`load_itp_trace` with ``elastic=True`` (format ``itp-elastic``)."""
    return load_itp_trace(path, elastic=True)


TRACE_FORMATS = {"gavel": load_gavel_trace, "tiresias": load_tiresias_trace, "openb": load_openb_pods,
                 "pollux": load_pollux_trace, "itp": load_itp_trace, "itp-elastic": load_itp_elastic}
# ASCII digits only: \d would take the digits of every script, which int() then reads (gavel:\u0663:1 ran as gavel:3:1)
_SYNTHETIC = re.compile(r"^(dl2|poisson):(\d{1,12})(?::(\d{1,12}))?$", re.ASCII)
_GAVEL = re.compile(r"^gavel:(\d{1,12})(?::(\d{1,12}))?(?::(.*))?$", re.ASCII)


def trace_format(path: str | Path) -> str:
    """The format of a trace file, from its extension or its first line."""
    path = Path(path)
    if path.suffix == ".trace":
        return "gavel"
    lines = _read_lines(path, "a trace file")
    first = lines[0] if lines else ""
    header = {c.strip() for c in first.split(",")}
    if "\t" in first and len(first.split("\t")) in (7, 10):
        return "gavel"
    if {"gpu_milli", "creation_time"} <= header:
        return "openb"
    if {"submit_time", "num_gpu", "model_name"} <= header:
        return "tiresias"
    if {"application", "num_replicas"} <= header:
        return "pollux"
    if {"submission_time", "num_iteration", "num_gpu"} <= header:
        return "itp"
    raise InputError(str(path), "line 1", "a Gavel .trace, Tiresias, OpenB pod, Pollux/Sia or Microsoft ITP CSV header "
                     f"(or give the format: {', '.join(TRACE_FORMATS)})", first[:80])


def _names_file(path: str | Path) -> bool:
    """Whether ``path`` names an existing file; a name the system cannot hold (longer than a file name may be,
    as a generated trace's spec with a field of 400 digits) names none."""
    try:
        return Path(path).exists()
    except OSError:
        return False


def load_trace(path: str | Path, format: str | None = None, *, time_scale: float = 1.0) -> Trace:
    """Any supported trace (``format`` one of :data:`TRACE_FORMATS`, else detected from the file);
    ``dl2:N[:SEED]`` and ``poisson:N[:SEED]`` name the seeded synthetic traces of
    :mod:`dlsched.instance.synthetic` (N jobs, seed 0 by default), ``gavel:N[:SEED[:KEY=VALUE,...]]``
    Gavel's recipe (:mod:`dlsched.instance.gavel_gen`; keys ``rate`` jobs/h, ``bursts``, ``burst_jobs``,
    ``burst_seconds``). ``time_scale`` s != 1 rescales
    the arrivals (:func:`scale_arrivals`)."""
    m = _SYNTHETIC.match(str(path))
    g = _GAVEL.match(str(path))
    if m and not _names_file(path):
        gen = dl2_trace if m.group(1) == "dl2" else poisson_trace
        trace = gen(int(m.group(2)), int(m.group(3) or 0))
    elif str(path).startswith("gavel:") and not _names_file(path):
        if g is None:
            raise InputError("<argument>", "trace", "gavel:N[:SEED[:KEY=VALUE,...]] (N jobs, seed and options "
                             "rate, bursts, burst_jobs, burst_seconds)", str(path))
        trace = gavel_trace(int(g.group(1)), int(g.group(2) or 0), **parse_options(g.group(3)))
    else:
        fmt = format or trace_format(path)
        if fmt not in TRACE_FORMATS:
            raise InputError("<argument>", "format", f"one of {', '.join(TRACE_FORMATS)}", fmt)
        trace = TRACE_FORMATS[fmt](path)
    return trace if time_scale == 1.0 else scale_arrivals(trace, time_scale)


def scale_arrivals(trace: Trace, s: float) -> Trace:
    """The trace with every arrival moved to a'_j = a_0 + s (a_j - a_0), a_0 the first arrival.

    Deterministic (no sampling): s < 1 compresses the arrival process by 1/s (the same jobs,
    in the same order, with the same work, arriving s times as far apart), s > 1 spreads it.
    Used to replay a trace at a stated offered load (dlsched/sim/load.py).
    """
    if not (isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) and s > 0):
        raise InputError("<argument>", "arrival scale", "a finite factor > 0", s)
    if not trace.jobs:
        return trace
    a0 = trace.jobs[0].arrival
    if not a0 + s * (trace.jobs[-1].arrival - a0) < MAX_MAGNITUDE:    # beyond, float seconds lose whole jobs' durations
        raise InputError("<argument>", "arrival scale", f"a factor that keeps arrivals below {MAX_MAGNITUDE:g} s "
                         f"(at most {(MAX_MAGNITUDE - a0) / max(trace.jobs[-1].arrival - a0, 1e-300):.3g} here)", s)
    jobs = tuple(replace(j, arrival=a0 + s * (j.arrival - a0)) for j in trace.jobs)
    return Trace(jobs, f"{trace.source} (arrivals x{s:.6g})")

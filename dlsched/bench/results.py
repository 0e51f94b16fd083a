"""The results file of a suite run (:mod:`dlsched.bench.runner` writes it, :mod:`dlsched.bench.report`
reads it): one header line, then one JSON object per finished cell."""

from __future__ import annotations

import json
from pathlib import Path

from dlsched.errors import InputError

FORMAT = "dlsched-bench/1"
FORMAT_VERSION = 1
TARGET = 1e-3                          # "time to 0.1 % gap to the reference"


#: the fields of a row (and of the header) that the report reads, by type: a value of another type is
#: an error naming the line and the field (None stands for "not measured" in every one)
TEXT = ("cell", "kind", "instance", "set", "method", "method_name", "policy", "policy_name", "status", "termination",
        "message", "digest", "family", "name", "sense", "backend", "exception", "suite", "suite_digest", "label")
NUMBERS = ("objective", "bound", "gap", "solver_gap", "reference", "seconds", "cell_seconds", "build_seconds",
           "solve_seconds", "time_to_target", "repetition", "jobs", "completed", "unschedulable", "avg_jct",
           "median_jct", "p95_jct", "p99_jct", "makespan", "avg_queueing_delay", "jain_fairness", "total_utility",
           "decision_calls", "decision_median_s", "decision_p95_s", "engine_seconds", "events", "engine_per_event_s",
           "sim_time", "wall_seconds", "peak_memory_mib", "gpu_utilisation")
FLAGS = ("checked", "bound_valid")
TABLES = ("params", "stats", "definition", "limits")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _field_error(value, key: str) -> str | None:
    """What field ``key`` should hold when ``value`` is not that, else None."""
    if value is None:
        return None
    if key in TEXT and not isinstance(value, str):
        return "a string"
    if key in NUMBERS and not _number(value):
        return "a number or null"
    if key in FLAGS and not isinstance(value, bool):
        return "true, false or null"
    if key in TABLES and not isinstance(value, dict):
        return "an object"
    if key == "jct" and not (isinstance(value, list) and all(_number(x) or x is None for x in value)):
        return "a list of numbers"
    return None


def _trace_error(value, kind) -> str | None:
    """What a row's ``trace`` should hold, by the row's kind, when ``value`` is not that: a simulate
    row's is the trace's name, a solve row's the anytime curve the report reads."""
    if value is None or kind not in ("solve", "simulate"):
        return None
    if kind == "simulate":
        return None if isinstance(value, str) else "a trace name"
    pairs = isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 and all(_number(x) for x in p) for p in value)
    return None if pairs else "a list of [seconds, objective] pairs"


def _check_fields(path: Path, where: str, doc: dict) -> None:
    for key, value in doc.items():
        expected = _trace_error(value, doc.get("kind", "solve")) if key == "trace" else _field_error(value, key)
        if expected:
            raise InputError(str(path), f"{where} .{key}", expected, value if not isinstance(value, (dict, list)) else
                             type(value).__name__)


def failed(row: dict) -> bool:
    """A cell that raised, or whose solution the checker rejected, or whose bound cuts off the reference."""
    return "exception" in row or row.get("checked") is False or row.get("bound_valid") is False


def read_results(path: str | Path) -> tuple[dict, list[dict]]:
    """Header and rows of a results file (an unfinished last line, from a killed run, is skipped).

    As strict as the instance reader: UTF-8 text, a header object with this format and an integer
    version, then one JSON object with a ``cell`` name per line; anything else is an
    :class:`InputError` naming the line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), "file", "a readable results file", exc.strerror) from None
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), "file", "UTF-8 text (a results file of `dlsched bench run`)",
                         f"bytes that are not UTF-8 at offset {exc.start}") from None
    if not lines or not lines[0].strip():
        raise InputError(str(path), "line 1", f"a {FORMAT} header", "an empty file")
    head = _json_line(path, 1, lines[0], f"a {FORMAT} header")
    fmt = head.get("format") if isinstance(head, dict) else None
    if not isinstance(fmt, str) or not fmt.startswith("dlsched-bench/"):
        raise InputError(str(path), "line 1 .format", f"a {FORMAT} results file", fmt)
    _check_fields(path, "line 1", head)
    version = head.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputError(str(path), "line 1 .version", "a format version: an integer >= 1", version)
    if version > FORMAT_VERSION:
        raise InputError(str(path), "line 1 .version", f"format version <= {FORMAT_VERSION} (upgrade dlsched to read it)",
                         version)
    rows = []
    last = len(lines) - 1
    for k, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            row = _json_line(path, k, line, "one JSON object per line")
        except InputError:
            if k - 1 == last:           # a line cut by a kill: the cell simply runs again
                continue
            raise
        if not isinstance(row, dict) or not isinstance(row.get("cell"), str):
            raise InputError(str(path), f"line {k}" + (" .cell" if isinstance(row, dict) else ""),
                             "a result row: a JSON object with a 'cell' name", line[:60])
        _check_fields(path, f"line {k}", row)
        rows.append(row)
    return head, rows


def _json_line(path: Path, k: int, line: str, expected: str):
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        raise InputError(str(path), f"line {k}", expected, line[:60]) from None
    except RecursionError:
        raise InputError(str(path), f"line {k}", expected, "JSON nested deeper than Python can read") from None


def latest(rows: list[dict]) -> list[dict]:
    """One row per cell, the last one written."""
    by_cell = {r["cell"]: r for r in rows}
    return list(by_cell.values())


#: what two runs of the same cell must agree on (times aside): solve rows, then simulate rows (a study row: its status)
SAME = ("status", "termination", "objective", "bound", "solver_gap", "gap", "checked", "digest", "avg_jct")


def compare(a: str | Path, b: str | Path) -> dict:
    """Two results files cell by cell: how many cells both have, how many agree on :data:`SAME`, and
    the values of those that differ (two executors, two machines, or two checkouts of dlsched)."""
    (ha, ra), (hb, rb) = read_results(a), read_results(b)
    A, B = ({r["cell"]: r for r in latest(rows)} for rows in (ra, rb))
    both = [c for c in A if c in B]
    differ = {c: {k: [A[c].get(k), B[c].get(k)] for k in SAME if A[c].get(k) != B[c].get(k)} for c in both}
    differ = {c: d for c, d in differ.items() if d}
    return {"files": [str(a), str(b)], "suites": [ha.get("suite"), hb.get("suite")], "git": [ha.get("git"), hb.get("git")],
            "cells": len(both), "only_in_one": len(set(A) ^ set(B)), "identical": len(both) - len(differ),
            "differ": differ}

"""The results file of a suite run (:mod:`dlsched.bench.runner` writes it, :mod:`dlsched.bench.report`
reads it): one header line, then one JSON object per finished cell."""

from __future__ import annotations

import json
from pathlib import Path

from dlsched.errors import InputError

FORMAT = "dlsched-bench/1"
FORMAT_VERSION = 1
TARGET = 1e-3                          # "time to 0.1 % gap to the reference"


def failed(row: dict) -> bool:
    """A cell that raised, or whose solution the checker rejected, or whose bound cuts off the reference."""
    return "exception" in row or row.get("checked") is False or row.get("bound_valid") is False


def read_results(path: str | Path) -> tuple[dict, list[dict]]:
    """Header and rows of a results file (an unfinished last line, from a killed run, is skipped)."""
    path = Path(path)
    try:
        lines = path.read_text().split("\n")
    except OSError as exc:
        raise InputError(str(path), "file", "a readable results file", exc.strerror) from None
    if not lines or not lines[0].strip():
        raise InputError(str(path), "line 1", f"a {FORMAT} header", "an empty file")
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        raise InputError(str(path), "line 1", f"a {FORMAT} header", lines[0][:60]) from None
    fmt = head.get("format") if isinstance(head, dict) else None
    if not isinstance(fmt, str) or not fmt.startswith("dlsched-bench/"):
        raise InputError(str(path), "line 1 .format", f"a {FORMAT} results file", fmt)
    if head.get("version", 0) > FORMAT_VERSION:
        raise InputError(str(path), "line 1 .version", f"format version <= {FORMAT_VERSION} (upgrade dlsched to read it)",
                         head.get("version"))
    rows = []
    last = len(lines) - 1
    for k, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if k - 1 == last:           # a line cut by a kill: the cell simply runs again
                continue
            raise InputError(str(path), f"line {k}", "one JSON object per line", line[:60]) from None
    return head, rows


def latest(rows: list[dict]) -> list[dict]:
    """One row per cell, the last one written."""
    by_cell = {r["cell"]: r for r in rows}
    return list(by_cell.values())

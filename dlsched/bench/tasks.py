"""Study suites: the per-case parts of a family's study (``dlsched bench smd|oasis|hetplace``) as cells.

A suite file with ``kind = "study"`` (``dlsched/bench/suites/smd.toml``)::

    name = "smd"
    kind = "study"
    family = "smd"                     # whose summary `dlsched bench run` prints (optional)
    time_limit = 120.0                 # passed to every task (seconds per exact solve)
    threads = 1
    seed = 0

    [[tasks]]
    name = "smd.gap"                   # a task of :data:`TASKS`
    grid = { k = { start = 0, count = 40 } }   # one cell per point of the grid (lists or {start, count})
    params = {}                        # fixed keyword arguments

Each cell calls the task's function with the grid point, the fixed parameters and, for those of
``seed``, ``threads`` and ``time_limit`` it accepts and the cell does not set, the suite's; its row is the function's JSON
object (the family's own per-case row, every schedule checked inside) under ``result``. The
family's summary reads the rows back (:func:`results_of`).
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import platform
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.bench.suitefile import once, read_suite_file, seed_list, tables, unknown
from dlsched.errors import InputError
from dlsched.registry import TASKS, load_target

#: suite settings a task receives when its signature has them
SHARED = ("seed", "threads", "time_limit")

TOP_KEYS = {"name", "description", "kind", "family", "time_limit", "threads", "seed", "tasks"}
TASK_KEYS = {"name", "grid", "params"}


def task_function(name: str):
    return load_target(TASKS[name], f"task {name}")


@dataclass(frozen=True)
class TaskCell:
    """One call of a task: its name and keyword arguments (sorted (key, json) pairs; picklable)."""

    task: str
    point: tuple                       # the grid point
    params: tuple                      # the fixed parameters

    @property
    def id(self) -> str:
        return f"{self.task}|" + ",".join(f"{k}={json.loads(v)}" for k, v in self.point)

    def kwargs(self) -> dict:
        return {k: json.loads(v) for k, v in (*self.params, *self.point)}


def parse(src: str, doc: dict) -> list[TaskCell]:
    """The cells of a study suite (validated: task names, grid and parameter keys)."""
    unknown(src, "", doc, TOP_KEYS)
    cells: list[TaskCell] = []
    for k, t in enumerate(tables(src, doc, "tasks")):
        where = f"tasks[{k}]"
        unknown(src, where, t, TASK_KEYS)
        name = t.get("name")
        if not isinstance(name, str) or name not in TASKS:
            raise InputError(src, f"{where}.name", f"a task, one of {', '.join(TASKS)}", name)
        accepted = set(inspect.signature(task_function(name)).parameters)
        grid, params = t.get("grid", {}), t.get("params", {})
        unknown(src, f"{where}.grid", grid, accepted)
        unknown(src, f"{where}.params", params, accepted - set(grid))
        axes = [(key, seed_list(src, f"{where}.grid.{key}", v, integers=False)) for key, v in grid.items()]
        fixed = tuple(sorted((p, json.dumps(v)) for p, v in params.items()))
        for values in itertools.product(*[v for _, v in axes]):
            point = tuple((key, json.dumps(v)) for (key, _), v in zip(axes, values))
            cells.append(TaskCell(name, point, fixed))
    once(src, "tasks", [c.id for c in cells], "every cell once")
    return cells


def run_task_cell(cell: TaskCell, limits: dict) -> dict:
    """One task call as a JSON-safe row (never raises: an exception row is retried on resume)."""
    row = {"cell": cell.id, "kind": "study", "task": cell.task, "instance": cell.id, "method": cell.task,
           "args": cell.kwargs(), "host": platform.node(), "pid": os.getpid()}
    t0 = time.perf_counter()
    try:
        fn = task_function(cell.task)
        accepted = inspect.signature(fn).parameters
        kwargs = cell.kwargs()
        kwargs.update({k: limits[k] for k in SHARED if k in accepted and k not in kwargs})
        row["result"] = json.loads(json.dumps(fn(**kwargs), default=_plain))
        row["status"] = "done"
    except Exception as exc:  # noqa: BLE001  (one failing cell must not end a sweep)
        row.update(status="error", exception=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8))
    row["seconds"] = row["cell_seconds"] = time.perf_counter() - t0
    return row


def _plain(x: Any):
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def results_of(rows: list[dict], task: str) -> list[dict]:
    """The results of ``task``'s cells in grid order (the order of the suite file)."""
    return [r["result"] for r in rows if r.get("task") == task and "result" in r]


def failures(rows: list[dict]) -> list[str]:
    return [f"{r['cell']}: {r['exception']}" for r in rows if "exception" in r]


def load_definition(name_or_path: str | Path) -> tuple[dict, Path]:
    """A suite file's parsed TOML and its path (family commands edit it before building the suite)."""
    return read_suite_file(name_or_path)


def with_settings(doc: dict, **settings) -> dict:
    """``doc`` with the top-level settings that are not None replaced (a command line's options)."""
    return {**doc, **{k: v for k, v in settings.items() if v is not None}}


def with_grid(doc: dict, task: str, **axes) -> dict:
    """``doc`` with grid axes of every ``task`` table replaced (``None`` values: left as they are)."""
    axes = {k: v for k, v in axes.items() if v is not None}
    return {**doc, "tasks": [{**t, "grid": {**t.get("grid", {}), **axes}} if t.get("name") == task else t
                             for t in doc.get("tasks", [])]}


def with_params(doc: dict, task: str, **params) -> dict:
    """``doc`` with fixed parameters of every ``task`` table replaced (``None`` values: left as they are)."""
    params = {k: v for k, v in params.items() if v is not None}
    return {**doc, "tasks": [{**t, "params": {**t.get("params", {}), **params}} if t.get("name") == task else t
                             for t in doc.get("tasks", [])]}


def grid_values(doc: dict, task: str, key: str) -> list:
    """The values of grid axis ``key`` of the first ``task`` table of ``doc`` (empty if none)."""
    t = next((t for t in doc.get("tasks", []) if t.get("name") == task and key in t.get("grid", {})), None)
    return [] if t is None else seed_list("<suite>", f"{task}.grid.{key}", t["grid"][key], integers=False)

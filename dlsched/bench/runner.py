"""Run a suite: every (instance, method, repetition) cell, checked, into a resumable JSON-lines file.

The results file starts with one header line (``{"format": FORMAT, "suite": ..., "environment":
...}``: package and HiGHS versions, machine, seeds, limits, git revision) followed by one line per
finished cell, appended and flushed as soon as the cell ends. Running the same suite into the same
file again runs only the cells that have no line yet (cells that raised are retried), so an
interrupted sweep loses at most the cells that were running. A file written by another suite, by
a changed suite definition or by a newer format is an :class:`~dlsched.errors.InputError` and is
left untouched.

Cells run in this process, in local worker processes (``jobs > 1``) or on a Dask cluster
(:mod:`dlsched.bench.executors`); a cell's row depends only on the cell, never on where it ran
(times aside).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
import traceback
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

from dlsched.bench import environment, git_revision, register_suite, report, simcells
from dlsched.bench.suite import InstanceRef, MethodSpec, Suite, load_suite
from dlsched.console import Reporter
from dlsched.errors import InputError

from dlsched.bench.results import FORMAT, FORMAT_VERSION, TARGET, failed, latest, read_results
from dlsched import api
from dlsched.bench.executors import LocalExecutor, make_executor
from dlsched.bench.peers import run_peer
from dlsched.bench.suitefile import bundled_suites
from dlsched.bench.tasks import run_task_cell
from dlsched.instance.orlib import best_known, reference_of
from dlsched.result import gap_to_reference
from dlsched.solvers.tabu import compile_kernel


def cell_id(ref: InstanceRef, method: MethodSpec, rep: int) -> str:
    return f"{ref.key}|{method.label}|{rep}"


def cells_of(suite: Suite) -> tuple:
    """The function every cell of ``suite`` runs and, per cell in suite order, its id and arguments:
    solve cells here, simulate cells in :mod:`dlsched.bench.simcells`, study cells in
    :mod:`dlsched.bench.tasks`."""
    limits = suite.limits()
    if suite.kind == "simulate":
        sim = suite.simulation
        return simcells.run_sim_cell, [(simcells.cell_id(t, p, r), (t, p, r, sim["settings"]))
                                       for t in sim["traces"] for p in sim["policies"] if p.runs_on(t)
                                       for r in range(suite.repetitions)]
    if suite.kind == "study":
        return run_task_cell, [(c.id, (c, limits)) for c in suite.tasks]
    return run_cell, [(cell_id(*c), (*c, limits)) for c in suite.cells()]


@lru_cache(maxsize=8)
def _best_known(path: str) -> dict[str, float]:
    return best_known(path)


def reference(inst, ref: InstanceRef) -> tuple[float | None, str]:
    """Proven optimum or best known value of the instance, and where it comes from."""
    if ref.best_known is not None and inst.family == "mcmdk":
        return reference_of(inst, _best_known(ref.best_known))
    r = getattr(inst, "reference", None)
    if r is None:
        return None, ""
    return r.objective, ("optimal" if r.optimal else "best known") + (f" ({r.source})" if r.source else "")


def run_cell(ref: InstanceRef, method: MethodSpec, rep: int, limits: dict) -> dict:
    """Load, solve with the cell's limits, check; one JSON-safe row. Never raises: an exception
    becomes a row with ``exception`` set (and is retried when the sweep resumes)."""
    row = {"cell": cell_id(ref, method, rep), "instance": ref.key, "set": ref.set_name, "method": method.label,
           "method_name": method.name, "params": method.params, "repetition": rep, "seed": limits["seed"] + rep,
           "host": platform.node(), "pid": os.getpid()}
    t0 = time.perf_counter()
    try:
        row.update(_solve_and_check(ref, method, limits["seed"] + rep, limits))
    except Exception as exc:  # noqa: BLE001  (one failing cell must not end a sweep)
        row.update(status="error", exception=f"{type(exc).__name__}: {exc}",
                   traceback=traceback.format_exc(limit=8))
    row["cell_seconds"] = time.perf_counter() - t0
    return row


def _solve_and_check(ref: InstanceRef, method: MethodSpec, seed: int, limits: dict) -> dict:
    inst = ref.load()
    value, source = reference(inst, ref)
    limit = limits["time_limit"] if method.time_limit is None else method.time_limit
    if method.peer:
        out, trace, report = _peer(inst, method.name, limit, seed)
    else:
        if method.name == "tabu":
            # numba's compile (once per machine, then a cache load) is not the method's time
            compile_kernel()
        # incumbent times on the cell's own clock (from the call to solve), so that every method's
        # stream, and its final answer, are timed alike (a solver's own clock starts after the build)
        trace = []
        t0 = time.perf_counter()
        res = api.solve(inst, method.name, time_limit=limit, gap=limits["gap"],
                        threads=limits["threads"], seed=seed,
                        on_incumbent=lambda inc: trace.append((time.perf_counter() - t0, inc.objective)),
                        **method.params)
        wall = time.perf_counter() - t0
        if res.objective_of:        # the method's objective is not the one the reference states
            value, source = None, ""
        out = res.summary()
        out["solver_gap"] = out.pop("gap")
        out["result_method"] = out.pop("method")   # the row's "method" is the suite's label
        out["seconds"] = wall
        if res.objective is not None and math.isfinite(res.objective):
            trace.append((wall, float(res.objective)))        # the final answer is an incumbent too
        report = api.check(inst, res) if res.status.has_solution() else None
    return _graded(out, inst, trace, report, value, source)


def _peer(inst, peer: str, limit: float | None, seed: int) -> tuple[dict, list, object]:
    """A peer's run on a core instance as the fields of a solve row (``skipped`` when not installed)."""
    if inst.family != "mcmdk":
        raise InputError(getattr(inst, "source", "<instance>"), "family",
                         f"a core (mcmdk) instance for the peer {peer}", inst.family)
    r = run_peer(peer, inst, math.inf if limit is None else limit, seed)
    trace = [(float(t), float(v)) for t, v in r.trace]
    if r.objective is not None and math.isfinite(r.objective):
        trace.append((r.seconds, float(r.objective)))
    out = {"status": r.status, "termination": r.status, "objective": r.objective, "bound": r.bound,
           "sense": inst.sense, "build_seconds": r.build_seconds, "solve_seconds": r.seconds - r.build_seconds,
           "seconds": r.seconds, "result_method": peer, "solver_version": r.version, "message": r.note,
           "solver_gap": None, "stats": {}}
    report = api.check(inst, r.choice) if r.choice is not None else None
    return out, trace, report


def _graded(out: dict, inst, trace: list, report, value: float | None, source: str) -> dict:
    """``out`` with the checker's verdict and the gap, bound and time to target against the reference."""

    sense = out["sense"]
    out.update(family=inst.family, name=getattr(inst, "name", ""), reference=value, reference_source=source,
               checked=None if report is None else report.feasible,
               violations=[] if report is None else list(report.violations[:3]),
               gap=None if value is None else gap_to_reference(out["objective"], value, sense),
               bound_valid=None, trace=trace, time_to_target=None)
    bound = out["bound"]
    if value is not None and isinstance(bound, (int, float)) and math.isfinite(bound):
        tol = 1e-6 * max(1.0, abs(value))
        out["bound_valid"] = bool(bound >= value - tol if sense == "max" else bound <= value + tol)
    if value is not None:
        hit = [t for t, v in trace if gap_to_reference(v, value, sense) <= TARGET]
        out["time_to_target"] = min(hit) if hit else None
    return out


def header(suite: Suite, command: str | None = None) -> dict:
    return {"format": FORMAT, "version": FORMAT_VERSION, "suite": suite.name, "suite_digest": suite.digest(),
            "command": command,
            "suite_file": suite.source, "definition": suite.definition, "limits": suite.limits(),
            "git": git_revision(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "environment": environment(**suite.limits())}


def _open_results(path: Path, suite: Suite, command: str | None = None) -> tuple[set[str], list[dict]]:
    """Validate an existing file against the suite (or write a new header); the finished cells."""
    if not path.exists() or path.stat().st_size == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(header(suite, command)) + "\n")
        return set(), []
    head, rows = read_results(path)
    if head.get("suite") != suite.name:
        raise InputError(str(path), "line 1 .suite", f"results of suite '{suite.name}' (use another --out)", head.get("suite"))
    if head.get("suite_digest") != suite.digest():
        raise InputError(str(path), "line 1 .suite_digest",
                         f"the same definition of suite '{suite.name}' ({suite.digest()}); it changed since, use another --out",
                         head.get("suite_digest"))
    text = path.read_bytes()
    if not text.endswith(b"\n"):        # drop the cut line so appended rows start on their own line
        path.write_bytes(text[: text.rfind(b"\n") + 1])
    done = {r["cell"] for r in rows if "exception" not in r}
    return done, rows


def run_suite(suite: Suite, out: str | Path | None, *, executor=None, progress: bool = True,
              max_cells: int | None = None, command: str | None = None) -> list[dict]:
    """Run the cells of ``suite`` not yet in ``out`` (``None``: keep nothing on disk).

    Returns the rows of every finished cell in the suite's cell order (the last row of a cell
    wins), whichever executor ran them. ``max_cells`` stops after that many new cells (a partial sweep).
    """

    executor = executor or LocalExecutor(1)
    path = None if out is None else Path(out)
    done, old = _open_results(path, suite, command) if path is not None else (set(), [])
    fn, calls = cells_of(suite)
    todo = [args for cid, args in calls if cid not in done]
    if max_cells is not None:
        todo = todo[:max_cells]
    new: list[dict] = []
    log = path.open("a") if path is not None else None
    failures = 0
    cells = executor.map_cells(fn, todo)
    try:
        with Reporter(f"{suite.name}" + (f" (resuming: {len(done)} cells done)" if done else ""), len(done) + len(todo),
                      enabled=progress, done=len(done), transient=False) as rep:
            for row in cells:
                new.append(row)
                if log is not None:        # a row on disk as soon as its cell ends: a stop loses no finished cell
                    log.write(json.dumps(row, default=_json_default) + "\n")
                    log.flush()
                failures += failed(row)
                rep.advance()
                rep.note(f"{failures} failed")
    except KeyboardInterrupt:      # Ctrl-C, or SIGTERM (dlsched.console.stop_signals)
        if path is not None:
            print(f"stopped: {len(new)} cells of this run written to {path} ({len(done) + len(new)} of "
                  f"{len(calls)}); the same command goes on from there", file=sys.stderr)
        raise
    finally:
        cells.close()              # the executor ends its workers now, not when the generator is collected
        if log is not None:
            log.close()
    order = {cid: k for k, (cid, _) in enumerate(calls)}
    return sorted(latest(old + new), key=lambda r: order.get(r["cell"], len(order)))


def _json_default(x):
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "__dataclass_fields__"):
        return asdict(x)
    return str(x)


@register_suite("run")
def main(argv: list[str]) -> int:
    """``dlsched bench run SUITE``: run a suite file (bundled name or path) into a results file."""
    import argparse
    import shlex

    ap = argparse.ArgumentParser(prog="dlsched bench run", description=main.__doc__.split(":")[1].strip())
    ap.add_argument("suite", help=f"a suite file (.toml) or a bundled suite: {', '.join(bundled_suites())}")
    ap.add_argument("--out", type=Path, default=None, help="results file (default results/SUITE.jsonl); resumed if it exists")
    ap.add_argument("--jobs", type=int, default=1, help="cells at once (local processes or Dask LocalCluster workers)")
    ap.add_argument("--executor", choices=("local", "dask"), default="local")
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://HOST:8786 ('local': a LocalCluster)")
    ap.add_argument("--max-cells", type=int, default=None, help="stop after this many new cells (rerun to continue)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON object (with the family's summary, if any)")
    args = ap.parse_args(argv)
    if args.max_cells is not None and args.max_cells < 1:
        raise InputError("<argument>", "--max-cells", "a number of cells >= 1", args.max_cells)
    if args.jobs < 1:
        raise InputError("<argument>", "--jobs", "a number of cells at once >= 1", args.jobs)
    suite = load_suite(args.suite)
    out = args.out or Path("results") / f"{suite.name}.jsonl"
    if out.exists() and out.stat().st_size:
        _open_results(out, suite)              # a wrong file fails before any cluster starts
    executor = make_executor(args.executor, args.jobs, args.scheduler)
    t0 = time.perf_counter()
    try:
        rows = run_suite(suite, out, executor=executor, progress=not args.no_progress, max_cells=args.max_cells,
                         command="dlsched bench run " + shlex.join(argv))
    finally:
        getattr(executor, "close", lambda: None)()
    wall = time.perf_counter() - t0
    title = (f"dlsched bench run {suite.name}: {len(rows)}/{len(cells_of(suite)[1])} cells "
             f"({executor.description}, {wall:.1f} s this run)")
    rows = [{**r, "suite": suite.name} for r in rows]
    family = report.family_summary(rows, suite)
    if args.json:
        print(json.dumps({"suite": suite.name, "results": str(out), "cells": len(rows),
                          "failures": sum(1 for r in rows if failed(r)), "summary": family}, default=_json_default))
    elif suite.kind == "solve":
        report.print_tables(report.summarise(report.with_references(rows)), title)
    elif suite.kind == "simulate":
        report.print_table(report.SIM_COLUMNS, {m: report._sim_cells(x) for m, x in report.sim_summary(rows).items()}, title)
    else:
        report.print_table(report.STUDY_COLUMNS, {m: report._study_cells(x) for m, x in report.study_summary(rows).items()},
                           title)
    if family is not None and not args.json:
        report.print_table(("figure", "value"), {k: [report._value(v)] for k, v in family.items()
                                                 if isinstance(v, (int, float, str, bool)) or v is None},
                           f"{suite.family} summary")
    if not args.json:
        print(f"results: {out}")
    return 1 if any(failed(r) for r in rows) else 0




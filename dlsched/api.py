"""The library API other schedulers call: ``load``, ``save``, ``solve``, ``check``, ``methods`` and
``simulate`` (docs/api.md)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from dlsched.arguments import check_arguments, checked_policy, shown
from dlsched.check import CheckReport, check as _check
from dlsched.errors import InputError
from dlsched.instance import jsonio, orlib
from dlsched.instance.cluster import Cluster
from dlsched.instance.core import SENSES, Reference
from dlsched.instance.families import FAMILIES
from dlsched.instance.traces import load_trace
from dlsched.instance.workload import Trace
from dlsched.result import Result
from dlsched.sim import engine
from dlsched.sim.run import load_cluster, oasis_instance, oasis_setting, pick_speed
from dlsched.solvers import registry
from dlsched.solvers.options import Budget, SolveOptions

FORMATS = ("auto", "json", "mkp", "gap")


def load(path: str | os.PathLike, format: str = "auto", *, problem: int | None = None, sense: str | None = None):
    """Load an instance: a dlsched/1 JSON file or an OR-Library MKP/GAP file.

    ``problem`` picks the K-th (0-based) problem of a multi-problem MKP file; ``sense`` the
    GAP objective sense (default ``min``; a JSON or MKP file states its own, so ``sense`` is an
    error there). A GAP file's reference value is taken from a ``bounds.txt`` beside it when
    its lower and upper bounds agree; a Chu-Beasley MKP problem's best known value from the
    ``mkcbres.txt`` beside it. Every bad argument or file is an :class:`InputError`.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputError("<argument>", "path", "a file path (str or os.PathLike)", type(path).__name__)
    if not isinstance(format, str) or format not in FORMATS:
        raise InputError("<argument>", "format", f"one of {', '.join(FORMATS)}", format)
    if problem is not None and (isinstance(problem, bool) or not isinstance(problem, int) or problem < 0):
        raise InputError("<argument>", "problem", "a problem index >= 0 (an int)", problem)
    if sense is not None and sense not in SENSES:
        raise InputError("<argument>", "sense", f"one of {', '.join(SENSES)}", sense)
    fmt = orlib.detect_format(path) if format == "auto" else format
    if sense is not None and fmt != "gap":
        raise InputError(str(path), "--sense", f"no sense for a{'n MKP' if fmt == 'mkp' else ' JSON'} file (it states its own; "
                         "--sense is for GAP files)", sense)
    if fmt == "json":
        if problem not in (None, 0):
            raise InputError(str(path), "--problem", "no problem index for a JSON file (it holds one instance)", problem)
        return jsonio.load_json(path)
    if fmt == "mkp":
        inst = orlib.read_mkp(path, problem)
        table = Path(path).with_name("mkcbres.txt")       # Chu & Beasley's best known values, beside their files
        if inst.reference is None and table.is_file():
            value, source = orlib.reference_of(inst, orlib.best_known(table))
            if value is not None:
                inst.reference = Reference(value, False, source)
        return inst
    if problem not in (None, 0):
        raise InputError(str(path), "--problem", "no problem index for a GAP file (it holds one instance)", problem)
    sense = sense or "min"
    bounds_file = Path(path).with_name("bounds.txt")
    ref = None
    if bounds_file.is_file():
        lb_ub = orlib.gap_bounds(bounds_file).get((Path(path).name, sense))
        if lb_ub and lb_ub[0] == lb_ub[1]:
            ref = lb_ub[0]
    return orlib.read_gap(path, sense, ref)


def save(instance, path: str | os.PathLike) -> None:
    """Write ``instance`` as a dlsched/1 JSON file (atomically)."""
    jsonio.save_json(instance, path)


def solve(instance, method: str = "exact", *, time_limit: float | None = None, gap: float = 0.0,
          threads: int | None = None, seed: int = 0, log: bool = False, warm_start=None,
          raw: dict[str, Any] | None = None, on_incumbent=None, budget: Budget | None = None, **params) -> Result:
    """Solve ``instance`` (an instance, or the path of an instance file, read by :func:`load`) with a
    registered method (``dlsched.methods()`` lists them).

    Method parameters (e.g. ``backend="pyomo"``) are passed as keywords. ``time_limit`` is the
    wall-clock budget of the whole call (docs/contract.md); a caller that started the clock
    earlier (the CLI, before loading the file) passes its running ``budget`` instead. Options the
    method does not honour raise :class:`InputError` before anything runs. Without a ``budget`` the
    clock starts here, so loading a path and importing the method's module count against the limit.
    """
    start = time.perf_counter()
    if isinstance(instance, (str, os.PathLike)):
        instance = load(instance)
    elif not hasattr(instance, "family") or getattr(instance, "family") not in FAMILIES:
        raise InputError("<argument>", "instance", "an instance (dlsched.load(path)) or the path of an instance file",
                         type(instance).__name__)
    if budget is not None:
        if time_limit is not None and time_limit != budget.limit:
            raise InputError("<argument>", "time_limit", f"the budget's own limit ({budget.limit}) or nothing", time_limit)
        time_limit = budget.limit
    opts = SolveOptions(time_limit=time_limit, mip_rel_gap=gap, threads=threads, seed=seed, log=log,
                        warm_start=warm_start, raw=dict(raw or {}), on_incumbent=on_incumbent, budget=budget)
    if budget is None:      # after SolveOptions has checked time_limit
        opts.budget = Budget(time_limit, start=start)
    return registry.call(instance, method, opts, **params)


def check(instance, solution, claimed_objective: float | None = None) -> CheckReport:
    """Independent check of a solution (or a :class:`Result`) against the instance."""
    if solution is None or (isinstance(solution, Result) and solution.solution is None):
        raise InputError("<argument>", "solution", "a solution (or a Result that holds one)",
                         "None" if solution is None else f"a Result without a solution (status {solution.status.value})")
    if isinstance(solution, Result):
        return _check(instance, solution.solution, solution.objective)
    return _check(instance, solution, claimed_objective)


def methods(family: str | None = None) -> list[str]:
    """Names of the methods usable on ``family`` (every name when ``family`` is None)."""
    if family is not None and (not isinstance(family, str) or family not in FAMILIES):
        raise InputError("<argument>", "family", f"one of {', '.join(sorted(FAMILIES))} (or None)", family)
    return registry.available(family)


def simulate(trace, cluster=None, policy="fifo", *, speed=None, seed: int = 0, params: dict | None = None, **options):
    """Replay ``trace`` on ``cluster`` under ``policy`` and return the run's
    :class:`~dlsched.sim.metrics.SimResult` (docs/simulator.md), as ``dlsched simulate`` does.

    ``trace``: a :class:`~dlsched.instance.workload.Trace`, a trace file (Gavel, Tiresias, OpenB,
    Pollux, Microsoft ITP), an OASiS instance file (its own cluster, speed source and horizon: ``cluster``, ``speed``
    and ``max_time`` are refused beside it; :func:`dlsched.policies.oasis.engine_setting`) or ``"dl2:N[:SEED]"`` /
    ``"poisson:N[:SEED]"`` / ``"gavel:N[:SEED[:KEY=VALUE,...]]"``; ``cluster``: a
    :class:`~dlsched.instance.cluster.Cluster` or a cluster spec (None: DL2's cluster for a DL2
    trace); ``policy``: a name (``dlsched policies``, an installed plug-in, or
    ``"package.module:Class"``) or a policy object; ``params``: the named policy's options (checked
    as ``-P`` options are: :func:`dlsched.arguments.check_arguments`); ``speed``: a speed source or its name (None:
    detected from the trace as the CLI does); ``options``: the engine's keyword arguments
    (``restart_seconds``, ``max_time``, ``deadline``, ``progress``).
    """
    named = not isinstance(trace, Trace)      # a file or a spec: whether it is an OASiS instance is known here
    inst = None
    if named:
        if not isinstance(trace, (str, os.PathLike)):
            raise InputError("<argument>", "trace", "a Trace, a trace file or a generator spec (dl2:N, poisson:N, gavel:N)",
                             type(trace).__name__)
        inst = oasis_instance(str(trace), None)
        if inst is not None:
            trace, cluster, speed, options["max_time"] = oasis_setting(inst, (
                ("cluster", cluster, "its servers"), ("speed", speed, "its speed source"),
                ("max_time", options.get("max_time"), "its horizon T")))
        else:
            trace = load_trace(str(trace))
    if not isinstance(cluster, Cluster):
        if cluster is not None and not isinstance(cluster, (str, os.PathLike)):
            raise InputError("<argument>", "cluster", "a Cluster or a cluster spec", type(cluster).__name__)
        cluster = load_cluster(None if cluster is None else str(cluster), trace)
    options = check_arguments(engine.simulate, options, "dlsched.simulate", skip=5)
    if isinstance(policy, str):
        if params is not None and (not isinstance(params, dict) or not all(isinstance(k, str) for k in params)):
            raise InputError("<argument>", "params", "the policy's options as a dict of name -> value", shown(params))
        policy = checked_policy(policy, params or {})
    elif params:
        raise InputError("<argument>", "params", "no options with a policy object (give them to its constructor)", params)
    elif not callable(getattr(policy, "schedule", None)) or not callable(getattr(policy, "reset", None)):
        raise InputError("<argument>", "policy", "a policy name or an object with reset(ctx) and schedule(state, events)",
                         type(policy).__name__)
    if getattr(policy, "trace_family", None) == "oasis" and named and inst is None:
        raise InputError("<argument>", "policy", f"an OASiS instance file as the trace for policy '{getattr(policy, 'name', type(policy).__name__)}'",
                         trace.source)
    if speed is None or isinstance(speed, str):
        speed = pick_speed(speed, trace, cluster, seed=seed)
    res = engine.simulate(trace, cluster, policy, speed, seed=seed, **options)
    if inst is not None:
        res.extra["time_unit"] = "slot"     # as the command records it: simulated times are slots
    return res

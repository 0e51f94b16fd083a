"""Conformance kits a plug-in runs on itself: :func:`check_policy` and :func:`check_method`.

The model is MathOptInterface's ``MOI.Test`` and gymnasium's ``check_env``: dlsched's own tests
call these for every registered policy and method (tests/sim/test_policy_conformance.py,
tests/test_conformance.py), and a third party calls them on its own (docs/plugins.md).

Each check has a name; ``exclude=`` names the checks a plug-in does not support. A failed check
raises ``AssertionError("<check>: <instance or trace>: <what differed>")``.

Policies (docs/simulator.md, the ``Policy`` protocol of :mod:`dlsched.sim.policy`), every answer
audited from the placements alone, with no code shared with the engine's own check:

* ``capacity``: no server is over-committed;
* ``sizes``: every job runs between its minimum and maximum size, with a PS exactly when it uses
  PSs, and only active jobs are named;
* ``state``: the policy does not change the state it is shown;
* ``finished``: every job completes (under ``admission=True`` a job may be turned away, which
  leaves the run ``stalled`` with only such jobs waiting);
* ``isolation``: no job finishes sooner than it would alone at full size (holds for a speed that
  never drops as a job grows: exclude it for a measured, non-monotone table);
* ``determinism``: the same seed gives the same schedule;
* ``reset``: ``reset`` makes a used policy new again (same schedule as a fresh one).

Methods (docs/contract.md), on the instances given or the bundled ones of the family:

* ``fields``: every field of the :class:`~dlsched.result.Result` filled, with its type;
* ``status``: status, termination, objective and bound agree (``Result.inconsistency``), gap >= 0;
* ``checker``: every solution passes the independent checker (:mod:`dlsched.check`) at its
  claimed objective;
* ``reference``: against the instance's known optimum z* (the bundled files' ``reference``):
  bound <= z* <= objective when minimising (reversed when maximising), and objective = z* when the
  status is ``optimal``, each within :data:`REL_TOL` relative (plus a requested gap);
* ``time_limit``: under a short limit the method still answers within the contract, records the
  limit, and returns within the limit plus ``slack`` seconds (what it builds before solving);
* ``options``: an option the method does not declare is refused with ``InputError`` before
  anything runs (gap, raw HiGHS options, warm start; docs/contract.md: honour or refuse).

Bundled instances: the files of the project's ``instances/`` folder ship inside the package as
``dlsched/instances/*.json`` (package data; in a clone ``dlsched/instances`` links to
``instances/``), so ``pip install dlsched`` is enough to run the method kit against their
optima: :func:`bundled_instances` loads them.
"""

from __future__ import annotations

import json
import math
import time
from importlib.resources import files
from typing import Any, Callable, Iterable

import numpy as np

from dlsched.api import check, load, solve
from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.registry import make_policy
from dlsched.result import TERMINATIONS, Result, Status
from dlsched.sim.engine import simulate
from dlsched.solvers import registry

POLICY_CHECKS = ("capacity", "sizes", "state", "finished", "isolation", "determinism", "reset")
METHOD_CHECKS = ("fields", "status", "checker", "reference", "time_limit", "options")

#: relative tolerance of the ``reference`` check (every bundled optimum is exact to print precision)
REL_TOL = 1e-6


def _fail(check_name: str, where: str, what: str) -> None:
    raise AssertionError(f"{check_name}: {where}: {what}")


def _known(exclude: Iterable[str], checks: tuple[str, ...]) -> frozenset[str]:
    out = frozenset(exclude)
    if out - set(checks):
        raise InputError("<argument>", "exclude", f"names among {', '.join(checks)}", sorted(out - set(checks)))
    return out


# ------------------------------------------------------------------------------------------ policies

class LinearSpeed:
    """``per_worker`` iterations/s per worker (a PS adds nothing): rates a test can compute by hand."""

    def __init__(self, per_worker: float = 1.0):
        self.per_worker = per_worker

    def rate(self, job, placement, cluster) -> float:
        return self.per_worker * placement.n_workers


class PairedLinearSpeed(LinearSpeed):
    """:class:`LinearSpeed`, and two jobs on the same GPUs (a packed lease) each at ``share`` of it."""

    def __init__(self, per_worker: float = 1.0, share: float = 0.6):
        super().__init__(per_worker)
        self.share = share

    def pair_rates(self, job, other, placement, cluster) -> tuple[float, float]:
        r = self.share * self.rate(job, placement, cluster)
        return r, r


class Audit:
    """Wraps a policy; checks every answer against the state it was given, from the placements alone
    (no code shared with the engine's own check). ``problems`` lists ``(check, message)`` for each
    capacity, sizes or state failure. A packed lease (two placements naming each other as partner,
    on the same workers) holds its GPUs once."""

    def __init__(self, inner):
        self.inner, self.name, self.slot_seconds = inner, inner.name, inner.slot_seconds
        self.offline = getattr(inner, "offline", False)
        self.problems: list[tuple[str, str]] = []

    def reset(self, ctx):
        self.capacity = np.asarray(ctx.cluster.capacity, dtype=float)
        self.gpu = ctx.cluster.resources.index("gpu") if "gpu" in ctx.cluster.resources else None
        self.inner.reset(ctx)
        self.slot_seconds = self.inner.slot_seconds      # a policy may set its slot in reset (OASiS: Δ)

    def schedule(self, state, events):
        before = (state.free.copy(), dict(state.allocation), state.remaining.copy(), state.active.copy())
        out = self.inner.schedule(state, events)
        after = (state.free, dict(state.allocation), state.remaining, state.active)
        if not all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(before, after)):
            self.problems.append(("state", f"t={state.time}: the policy changed the state it was shown"))
        placements = getattr(out, "placements", out)
        active = set(state.active.tolist())
        used = np.zeros_like(self.capacity)
        for j, pl in placements.items():
            if j not in active:
                self.problems.append(("sizes", f"t={state.time}: job {j} is not active"))
                continue
            job = state.jobs[j]
            if not (job.min_workers <= pl.n_workers <= job.max_workers and (pl.n_ps >= 1) == job.uses_ps
                    and pl.n_ps <= max(job.max_ps, 0)):
                self.problems.append(("sizes", f"t={state.time}: job {j} sized ({pl.n_workers}, {pl.n_ps})"))
            demand = state.demand_w[j]
            p = pl.partner
            if p is not None and not (p not in placements and state.done[p]):   # a finished partner: alone
                other = placements.get(p)
                if other is None or other.partner != j or dict(other.workers) != dict(pl.workers):
                    self.problems.append(("sizes", f"t={state.time}: job {j} is packed with job {p}, not on the same workers"))
                elif p < j and self.gpu is not None:
                    demand = demand.copy()
                    demand[self.gpu] = 0.0          # the pair's GPUs are counted with job p
            for s, k in pl.workers.items():
                used[s] += k * demand
            for s, k in pl.ps.items():
                used[s] += k * state.demand_p[j]
        if (used - self.capacity).max(initial=0.0) > 1e-9:
            self.problems.append(("capacity", f"t={state.time}: a server is over-committed by "
                                              f"{(used - self.capacity).max():g}"))
        return out


def random_trace(rng: np.random.Generator, n_jobs: int = 5) -> Trace:
    """Jobs with 1–2 GPUs per worker, elastic or fixed, with or without PSs, arriving in order."""
    rows = sorted((int(rng.integers(0, 21)), int(rng.integers(1, 31)), int(rng.integers(1, 3)), int(rng.integers(1, 3)),
                   int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(n_jobs))
    return generic_trace(rows)


def generic_trace(rows) -> Trace:
    """A trace from rows ``(arrival, iterations, gpus per worker, min workers, extra workers, max PSs)``."""
    out = []
    for i, (a, k, g, lo, extra, ps) in enumerate(sorted(rows, key=lambda r: r[0])):
        out.append(Job(f"j{i}", float(a), "toy", float(k), {"gpu": g, "cpu": 1}, {"cpu": 1} if ps else {},
                       min_workers=lo, max_workers=lo + extra, max_ps=ps))
    return Trace(tuple(out), "<random>")


def random_cases(seed: int = 0, n: int = 4) -> list[tuple[Trace, Cluster, LinearSpeed]]:
    """``n`` random generic traces (:func:`random_trace`) on 1–3 servers of 4 GPUs and 8 CPUs."""
    rng = np.random.default_rng(seed)
    return [(random_trace(rng, int(rng.integers(1, 6))), Cluster.homogeneous(int(rng.integers(1, 4)), {"gpu": 4, "cpu": 8}),
             LinearSpeed()) for _ in range(n)]


def _factory(policy) -> Callable[[], Any]:
    """A maker of fresh policy objects: a registered name, a class or factory, or one object (reused)."""
    if isinstance(policy, str):
        return lambda: make_policy(policy)
    if isinstance(policy, type) or (callable(policy) and not hasattr(policy, "schedule")):
        return policy
    return lambda: policy


def _same_schedule(a, b) -> bool:
    return np.array_equal(a.completion, b.completion, equal_nan=True) and \
        np.array_equal(a.first_start, b.first_start, equal_nan=True)


def check_policy(policy, *, cases: Iterable[tuple[Trace, Cluster, Any]] | None = None, exclude: Iterable[str] = (),
                 seed: int = 0, admission: bool = False, restart_seconds: float = 0.0, deadline: float = 120.0) -> None:
    """Run ``policy`` (a registered name, a class or factory, or a policy object) through the policy
    checks (module docstring) on each ``(trace, cluster, speed)`` of ``cases`` (default: four random
    generic traces, :func:`random_cases` of ``seed``), simulated with ``seed`` and
    ``restart_seconds``. ``admission``: the policy may turn jobs away. Raises AssertionError naming
    the check, the trace and what differed."""
    skip = _known(exclude, POLICY_CHECKS)
    make = _factory(policy)
    cases = list(random_cases(seed) if cases is None else cases)
    for k, (tr, cl, speed) in enumerate(cases):
        where = f"trace {k} ({tr.source}, {len(tr)} jobs)"
        first = _audited_run(make(), tr, cl, speed, skip, admission, where, seed=seed, restart_seconds=restart_seconds,
                             deadline=deadline)
        if "determinism" not in skip:
            again = _audited_run(make(), tr, cl, speed, skip, admission, where, seed=seed,
                                 restart_seconds=restart_seconds, deadline=deadline)
            if not _same_schedule(first, again):
                _fail("determinism", where, f"policy {first.policy}: the same seed gave another schedule")
        if "reset" not in skip:
            used = make()
            o_tr, o_cl, o_speed = cases[(k + 1) % len(cases)]      # leaves state behind in the policy
            _audited_run(used, o_tr, o_cl, o_speed, skip, admission, where, seed=seed + 1, deadline=deadline)
            reused = _audited_run(used, tr, cl, speed, skip, admission, where, seed=seed,
                                  restart_seconds=restart_seconds, deadline=deadline)
            if not _same_schedule(first, reused):
                _fail("reset", where, f"policy {first.policy}: reset did not make a used policy new "
                      f"(completions {reused.completion.tolist()} after another run, {first.completion.tolist()} fresh)")


def _report(audit: Audit, skip, where: str) -> None:
    for check_name, msg in audit.problems:
        if check_name not in skip:
            _fail(check_name, where, f"policy {audit.name}: {msg}")


def _audited_run(pol, tr, cl, speed, skip, admission: bool, where: str, **kw):
    audit = Audit(pol)
    try:
        res = simulate(tr, cl, audit, speed, **kw)
    except Exception:
        _report(audit, skip, where)          # the audit's finding first (the engine stops on an over-commitment too)
        raise
    _report(audit, skip, where)
    if "finished" not in skip:
        allowed = ("completed", "stalled") if admission else ("completed",)
        if res.status not in allowed:
            _fail("finished", where, f"policy {audit.name}: run {res.status} ({res.message}), expected {' or '.join(allowed)}")
        if not admission and res.completed.sum() + len(res.unschedulable) != len(tr):
            _fail("finished", where, f"policy {audit.name}: {int(res.completed.sum())} of {len(tr)} jobs completed")
    done = res.completed
    if "isolation" not in skip and not (res.jct[done] >= res.isolated_jct[done] * (1 - 1e-9)).all():
        j = int(np.flatnonzero(done & (res.jct < res.isolated_jct * (1 - 1e-9)))[0])
        _fail("isolation", where, f"policy {audit.name}: job {j} took {res.jct[j]:g} s, less than alone at full size "
              f"({res.isolated_jct[j]:g} s)")
    return res


# ------------------------------------------------------------------------------------------ methods

def bundled_instances(family: str | None = None, names: Iterable[str] | None = None) -> list:
    """The bundled instances (package data ``dlsched/instances/*.json``, each with a known optimum),
    of ``family`` if given (in name order), or the files ``names`` (e.g. ``"mknap1-0.json"``), in that order."""
    folder = files("dlsched") / "instances"
    if names is not None:
        names = list(names)
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise InputError("<argument>", "names", "bundled instance files (dlsched/instances)", missing)
        return [load(str(folder / n)) for n in names]
    return [load(str(p)) for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".json") and (family is None or json.loads(p.read_text()).get("family") == family)]


def _method_name(name_or_fn) -> str:
    if isinstance(name_or_fn, str):
        return name_or_fn
    registry.available()
    for m in registry.describe():
        if m.fn is name_or_fn:
            return m.name
    raise InputError("<argument>", "method", "a method name or a function decorated with @register",
                     getattr(name_or_fn, "__name__", repr(name_or_fn)))


#: options a method may refuse, and how a call asks for each (``options`` check)
REFUSABLE = {"gap": dict(gap=0.1), "raw": dict(raw={"presolve": "off"}), "warm_start": dict(warm_start=np.zeros(3, dtype=int))}


def check_method(name_or_fn, *, family: str, instances: Iterable | None = None, exclude: Iterable[str] = (),
                 backend: str | None = None, params: dict | None = None, time_limit: float = 0.05,
                 slack: float = 10.0, gap: float = 0.0) -> None:
    """Run method ``name_or_fn`` (a registered name, or the function a ``@register`` decorates) on
    ``instances`` of ``family`` (default: the bundled ones, :func:`bundled_instances`) through the
    method checks (module docstring), with ``backend`` and ``params``; ``time_limit`` is the short
    limit of the ``time_limit`` check (on the last instance), ``gap`` the relative gap asked for.
    Raises AssertionError naming the check, the instance and what differed."""
    skip = _known(exclude, METHOD_CHECKS)
    name = _method_name(name_or_fn)
    extra = {**(params or {}), **({"backend": backend} if backend else {})}
    insts = list(bundled_instances(family) if instances is None else instances)
    if not insts:
        raise InputError("<argument>", "instances", f"at least one instance of family '{family}'", "none")
    for inst in insts:
        where = f"{name} on {getattr(inst, 'source', '<memory>')}"
        res = solve(inst, name, threads=1, gap=gap, **extra)
        assert_result(inst, res, where, skip, gap=gap)
    if "time_limit" not in skip:
        inst = insts[-1]
        where = f"{name} on {getattr(inst, 'source', '<memory>')} with time_limit={time_limit:g}"
        t0 = time.perf_counter()
        res = solve(inst, name, threads=1, time_limit=time_limit, **extra)
        took = time.perf_counter() - t0
        assert_result(inst, res, where, skip)
        if res.options.get("time_limit") != time_limit:
            _fail("time_limit", where, f"options record time_limit={res.options.get('time_limit')!r}")
        if took > time_limit + slack:
            _fail("time_limit", where, f"returned after {took:.2f} s, over the limit plus {slack:g} s")
    if "options" not in skip:
        _check_refusals(insts[0], name, family, extra)


def assert_result(inst, res: Result, where: str, exclude: Iterable[str] = (), gap: float = 0.0) -> None:
    """The checks of one answer (``fields``, ``status``, ``checker``, ``reference``), less ``exclude``."""
    skip = frozenset(exclude)
    if "fields" not in skip:
        _check_fields(inst, res, where)
    if "status" not in skip:
        if res.termination not in TERMINATIONS:
            _fail("status", where, f"termination {res.termination!r} is none of {', '.join(TERMINATIONS)}")
        if res.inconsistency() is not None:
            _fail("status", where, res.inconsistency())
        if res.gap is not None and not res.gap >= 0:
            _fail("status", where, f"gap {res.gap} < 0 (the bound is on the wrong side of the objective)")
    if "checker" not in skip and res.status.has_solution():
        report = check(inst, res)
        if not report.feasible:
            _fail("checker", where, f"the checker rejected the {res.status.value} solution: {'; '.join(report.violations[:3])}")
    ref = getattr(inst, "reference", None)
    if "reference" not in skip and ref is not None and ref.optimal:
        _check_reference(res, float(ref.objective), where, gap)


def _check_fields(inst, res: Result, where: str) -> None:
    def need(ok: bool, what: str) -> None:
        if not ok:
            _fail("fields", where, what)

    need(isinstance(res, Result), f"a Result expected, found {type(res).__name__}")
    need(bool(res.method) and isinstance(res.status, Status), f"method {res.method!r}, status {res.status!r}")
    need(res.sense in ("max", "min") and res.sense == getattr(inst, "sense", res.sense),
         f"sense {res.sense!r} (the instance's: {getattr(inst, 'sense', None)!r})")
    for f in ("build_seconds", "solve_seconds"):
        v = getattr(res, f)
        need(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, f"{f} = {v!r}")
    need(isinstance(res.solver_version, str) and isinstance(res.message, str) and isinstance(res.stats, dict),
         "solver_version and message strings, stats a dict")
    missing = {"time_limit", "mip_rel_gap", "threads", "seed", "warm_start", "raw"} - set(res.options)
    need(not missing, f"options lack {sorted(missing)}")
    try:
        json.dumps(res.summary())
    except (TypeError, ValueError) as exc:
        _fail("fields", where, f"summary() is not JSON: {exc}")


def _check_reference(res: Result, opt: float, where: str, gap: float) -> None:
    """bound <= z* <= objective (min) or objective <= z* <= bound (max), within REL_TOL; = z* when optimal."""
    tol = REL_TOL * max(1.0, abs(opt))
    worse = (lambda v: v >= opt - tol) if res.sense == "min" else (lambda v: v <= opt + tol)
    better = (lambda v: v <= opt + tol) if res.sense == "min" else (lambda v: v >= opt - tol)
    if res.objective is not None and not worse(res.objective):
        _fail("reference", where, f"objective {res.objective!r} beats the known optimum {opt!r} ({res.sense})")
    if res.bound is not None and not better(res.bound):
        _fail("reference", where, f"bound {res.bound!r} cuts off the known optimum {opt!r} ({res.sense})")
    if res.status is Status.OPTIMAL and res.objective is not None:
        allowed = tol + gap * max(abs(opt), abs(res.objective))
        if abs(res.objective - opt) > allowed:
            _fail("reference", where, f"status optimal at {res.objective!r}, the known optimum is {opt!r} "
                  f"(tolerance {allowed:.3g})")


def _check_refusals(inst, name: str, family: str, extra: dict) -> None:
    method = registry.lookup(name, family)
    where = f"{name} on {getattr(inst, 'source', '<memory>')}"
    backend = extra.get("backend")
    for option, kwargs in REFUSABLE.items():
        if option in method.supports and not (option == "warm_start" and backend not in (None, "highs")):
            continue
        try:
            solve(inst, name, threads=1, **kwargs, **extra)
        except InputError as err:
            expected = f"raw[{next(iter(kwargs['raw']))!r}]" if option == "raw" else option
            if err.where not in (option, expected):
                _fail("options", where, f"refused {option} naming {err.where!r}")
            continue
        _fail("options", where, f"{option} is not declared in supports, yet the call ran (honour or refuse)")
    if "raw" in method.supports:
        for raw in ({"no_such_highs_option": 1}, {"time_limit": 5.0}):
            try:
                solve(inst, name, threads=1, raw=raw, **extra)
            except InputError:
                continue
            _fail("options", where, f"raw={raw} was accepted (an unknown key, or a typed option said twice)")


__all__ = ["check_policy", "check_method", "bundled_instances", "assert_result", "Audit", "LinearSpeed",
           "random_cases", "random_trace", "generic_trace", "POLICY_CHECKS", "METHOD_CHECKS", "REL_TOL"]

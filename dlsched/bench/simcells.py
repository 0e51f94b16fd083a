"""Simulation suites: every (trace, policy, repetition) cell replayed by the simulator (MODELS.md §5–§7).

A suite file with ``kind = "simulate"`` (``dlsched/bench/suites/sim.toml``)::

    name = "sim"
    kind = "simulate"
    time_limit = 600.0                 # wall seconds per run (a run that hits it: status time_limit)
    repetitions = 1                    # repetition r simulates with seed (trace seed + r)
    # seed = 0                         # if set: repetition r simulates with seed (seed + r) instead
    speed = "table"                    # a speed source (dlsched.sim.speed.make_speed)
    restart_seconds = 0.0              # charged at every placement change
    # target_load = 0.9                # arrivals scaled to this offered GPU load (dlsched simulate --target-load)
    # lower_bound = true               # rows carry the trace's average-JCT lower bound (sim/bounds.jct_lower_bound)

    [cluster]                          # generator "dl2" (params of dl2_cluster) or file = a cluster spec (or "80x8")
    generator = "dl2"
    params = { n_servers = 96 }

    [[traces]]                         # generator "dl2" | "poisson" (seeds, params), or files = [...] (paths
                                       # beside the suite file, or in the reference data: "microsoft-itp/cluster04.csv")
    name = "dl2-mix"
    generator = "dl2"
    seeds = { start = 1, count = 10 }
    params = { n_jobs = 200 }

    [[policies]]                       # a policy of the table (``dlsched policies``)
    name = "drf"
    label = "drf"                      # optional, as for methods
    params = {}                        # optional: the policy constructor's keyword arguments
    sets = ["dl2-mix"]                 # optional: only on these trace sets

A cell's row holds the run's summary (:meth:`dlsched.sim.metrics.SimResult.summary`: status,
JCT statistics, makespan, utilisation, fairness, decision latency), the sorted JCTs of its
completed jobs (``jct``, for the report's CDFs) and, for a policy that records them, DL2's
inference seconds and Optimus's per-job model errors (``model_errors``). A policy that refuses the trace (an InputError) gives a ``refused`` row;
any other exception an ``exception`` row, retried when the sweep resumes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.arguments import check_arguments, policy_options
from dlsched.bench.suitefile import generator_call, once, tables, typed, unknown
from dlsched.errors import InputError
from dlsched.registry import CLUSTER_GENERATORS, TRACE_GENERATORS, load_target, make_policy, policy_class, policy_names
from dlsched.data import data_dir
from dlsched.instance.cluster_spec import load_cluster
from dlsched.instance.traces import load_trace
from dlsched.sim.bounds import jct_lower_bound
from dlsched.sim.engine import simulate
from dlsched.sim.run import rescale
from dlsched.sim.speed import make_speed

#: a trace set's growing and compressing (dlsched.sim.run.rescale's arguments), applied where the cell runs
SCALING = {"inflate": "inflation", "inflate_seed": "inflation_seed", "target_load": "target_load",
           "target_peak": "target_peak", "arrival_scale": "arrival_scale"}

TOP_KEYS = {"name", "description", "kind", "family", "time_limit", "threads", "repetitions", "seed", "speed",
            "restart_seconds", "cluster", "traces", "policies", "target_load", "lower_bound"}
TRACE_KEYS = {"name", "generator", "seeds", "params", "files", *SCALING}
POLICY_KEYS = {"name", "label", "params", "sets"}
CLUSTER_KEYS = {"generator", "params", "file"}


@dataclass(frozen=True)
class TraceRef:
    """How a worker gets one trace: a generator call or a trace file (picklable, loaded where it runs)."""

    key: str
    set_name: str
    seed: int = 0
    generator: str | None = None
    params: tuple = ()                 # sorted (key, json) pairs
    path: str | None = None
    scaling: tuple = ()                # sorted (key of SCALING, value) pairs

    def load(self):
        if self.generator is not None:
            return load_target(TRACE_GENERATORS[self.generator], "traces.generator")(seed=self.seed, **{k: json.loads(v) for k, v in self.params})

        return load_trace(self.path)

    def load_scaled(self, settings: "SimSettings") -> tuple:
        """The trace as the cell simulates it (inflated, arrivals scaled) and what was done (empty: as is)."""
        trace = self.load()
        if not self.scaling:
            return trace, {}
        return rescale(trace, settings.load_cluster(), make_speed(settings.speed),
                       **{SCALING[k]: v for k, v in self.scaling})


@dataclass(frozen=True)
class PolicySpec:
    label: str
    name: str
    params: dict = field(default_factory=dict, hash=False)
    sets: tuple[str, ...] = ()

    def runs_on(self, ref: TraceRef) -> bool:
        return not self.sets or ref.set_name in self.sets


@dataclass(frozen=True)
class SimSettings:
    """What every cell of a simulation suite shares: cluster, speed source, restart charge, deadline."""

    cluster: tuple                     # ("generator", name, params pairs) or ("file", path)
    speed: str = "table"
    restart_seconds: float = 0.0
    deadline: float | None = None
    seed: int | None = None            # None: each run's seed is its trace's seed
    target_load: float | None = None   # arrivals scaled to this offered GPU load
    lower_bound: bool = False          # compute the trace's average-JCT lower bound per run

    def run_seed(self, ref: "TraceRef", rep: int) -> int:
        return (ref.seed if self.seed is None else self.seed) + rep

    def load_cluster(self):
        if self.cluster[0] == "generator":
            return load_target(CLUSTER_GENERATORS[self.cluster[1]], "cluster.generator")(**{k: json.loads(v) for k, v in self.cluster[2]})

        return load_cluster(self.cluster[1])


def parse(src: str, base: Path, doc: dict) -> dict:
    """The simulation parts of a suite file: ``traces``, ``policies``, ``settings`` (validated)."""
    unknown(src, "", doc, TOP_KEYS)
    traces = [t for k, s in enumerate(tables(src, doc, "traces")) for t in _trace_set(src, base, f"traces[{k}]", s)]
    once(src, "traces", [t.key for t in traces], "every trace once (give the sets distinct names)")
    names = {t.set_name for t in traces}
    policies = [_policy(src, f"policies[{k}]", p, names) for k, p in enumerate(tables(src, doc, "policies"))]
    once(src, "policies", [p.label for p in policies], "distinct labels (add label = \"...\")")
    speed = typed(src, "speed", doc.get("speed", "table"), str, "the name of a speed source")

    try:
        make_speed(speed)
    except InputError as exc:
        raise InputError(src, "speed", exc.expected, speed) from None
    restart = doc.get("restart_seconds", 0.0)
    if not isinstance(restart, (int, float)) or isinstance(restart, bool) or not 0 <= restart < math.inf:
        raise InputError(src, "restart_seconds", "a finite number of seconds >= 0", restart)
    deadline = doc.get("time_limit")
    load = doc.get("target_load")
    if load is not None and (not isinstance(load, (int, float)) or isinstance(load, bool) or not 0 < load < math.inf):
        raise InputError(src, "target_load", "a finite offered GPU load > 0", load)
    bound = doc.get("lower_bound", False)
    if not isinstance(bound, bool):
        raise InputError(src, "lower_bound", "true or false", bound)
    settings = SimSettings(cluster=_cluster(src, base, doc.get("cluster")), speed=speed,
                           restart_seconds=float(restart), deadline=None if deadline is None else float(deadline),
                           seed=doc.get("seed"), target_load=None if load is None else float(load), lower_bound=bound)
    return {"traces": traces, "policies": policies, "settings": settings}


def _cluster(src: str, base: Path, c: Any) -> tuple:
    if c is None:
        return ("generator", "dl2", ())
    unknown(src, "cluster", c, CLUSTER_KEYS)
    if "file" in c:
        p = _path(base, c["file"])     # a spec such as "36:36:36" or "dl2:96" stays as given

        load_cluster(p)                # a bad spec fails here, before any run
        return ("file", str(p))
    gen = c.get("generator")
    if not isinstance(gen, str) or gen not in CLUSTER_GENERATORS:
        raise InputError(src, "cluster.generator", f"one of {', '.join(CLUSTER_GENERATORS)} (or file = a cluster spec)", gen)
    params = c.get("params", {})
    if not isinstance(params, dict):
        raise InputError(src, "cluster.params", "a table of the generator's parameters", params)
    fn = load_target(CLUSTER_GENERATORS[gen], "cluster.generator")
    params = check_arguments(fn, params, f"cluster generator '{gen}'", source=src, where="cluster.params")
    try:         # built once here (small): a value the generator refuses fails before any run
        fn(**params)
    except InputError as exc:
        raise InputError(src, f"cluster.params.{exc.where}", exc.expected, exc.found) from None
    return ("generator", gen, tuple(sorted((k, json.dumps(v)) for k, v in c.get("params", {}).items())))


def _trace_set(src: str, base: Path, where: str, s: Any) -> list[TraceRef]:
    unknown(src, where, s, TRACE_KEYS)
    set_name = str(s.get("name", s.get("generator", "files")))
    scaling = _scaling(src, where, s)
    if "files" in s:
        files = s["files"]
        if not isinstance(files, list) or not files:
            raise InputError(src, f"{where}.files", "a list of trace files", files)
        out = []
        for f in files:
            p = _path(base, f)

            try:
                load_trace(p)
            except InputError as exc:
                raise InputError(src, f"{where}.files", f"a trace file ({exc.expected})", str(f)) from None
            out.append(TraceRef(key=f"{set_name}/{p.name}", set_name=set_name, path=str(p), scaling=scaling))
        return out
    gen, seeds, packed = generator_call(src, where, s, TRACE_GENERATORS, " (or files = [...])")
    try:         # the first seed's trace, made here: a value the generator refuses fails before any run
        load_target(TRACE_GENERATORS[gen], "generator")(seed=seeds[0], **{k: json.loads(v) for k, v in packed})
    except InputError as exc:
        raise InputError(src, f"{where}.params.{exc.where}", exc.expected, exc.found) from None
    return [TraceRef(key=f"{set_name}/{gen}-seed{x}", set_name=set_name, seed=x, generator=gen, params=packed,
                     scaling=scaling) for x in seeds]


def _path(base: Path, name: Any) -> Path:
    """A trace or cluster file: absolute, or relative to the suite file's folder, the working folder
    or the reference data (dlsched.data), the first that exists (else as given, for the error)."""

    p = Path(str(name))
    if p.is_absolute():
        return p
    return next((c for c in (base / p, p, data_dir() / p) if c.exists()), p)


def _scaling(src: str, where: str, s: dict) -> tuple:
    """A trace set's inflation and arrival scaling (at most one of target_load, target_peak, arrival_scale)."""
    given = {k: s[k] for k in SCALING if k in s}
    for k, v in given.items():
        ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0 if k == "inflate_seed" else \
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
        if not ok:
            raise InputError(src, f"{where}.{k}", "an integer seed >= 0" if k == "inflate_seed" else "a number > 0", v)
    rules = [k for k in ("target_load", "target_peak", "arrival_scale") if k in given]
    if len(rules) > 1:
        raise InputError(src, f"{where}.{rules[1]}", "at most one of target_load, target_peak, arrival_scale", rules)
    if "inflate_seed" in given and "inflate" not in given:
        raise InputError(src, f"{where}.inflate_seed", "inflate with it", "inflate_seed alone")
    return tuple(sorted(given.items()))


def _policy(src: str, where: str, p: Any, set_names: set[str]) -> PolicySpec:
    unknown(src, where, p, POLICY_KEYS)
    name = p.get("name")
    if name not in policy_names():
        raise InputError(src, f"{where}.name", f"a policy, one of {', '.join(policy_names())}", name)
    params = p.get("params", {})
    try:
        cls = policy_class(name)
    except (ImportError, AttributeError) as exc:     # a policy of a missing extra (DL2 needs torch)
        raise InputError(src, f"{where}.name", f"a policy whose dependencies are installed ({exc})", name) from None
    params = policy_options(cls, params, source=src, where=f"{where}.params")
    sets = p.get("sets", [])
    if not isinstance(sets, list) or any(not isinstance(x, str) or x not in set_names for x in sets):
        bad = next((x for x in sets if not isinstance(x, str) or x not in set_names), sets) if isinstance(sets, list) else sets
        raise InputError(src, f"{where}.sets", f"names of trace sets, among {', '.join(sorted(set_names))}", bad)
    return PolicySpec(label=str(p.get("label", name)), name=name, params=dict(p.get("params", {})), sets=tuple(sets))


def cell_id(ref: TraceRef, policy: PolicySpec, rep: int) -> str:
    return f"{ref.key}|{policy.label}|{rep}"


#: the per-run figures a row keeps from SimResult.summary()
FIGURES = ("jobs", "completed", "unschedulable", "avg_jct", "median_jct", "p95_jct", "p99_jct", "makespan",
           "avg_queueing_delay", "jain_fairness", "total_utility", "decision_calls", "decision_median_s",
           "decision_p95_s", "engine_seconds", "events", "engine_per_event_s", "sim_time", "wall_seconds", "peak_memory_mib")


def simulate_cell(ref: TraceRef, policy: PolicySpec, rep: int, settings: SimSettings, trace=None):
    """The SimResult of one cell and the policy object (for its own statistics)."""
    trace = trace if trace is not None else ref.load_scaled(settings)[0]
    pol = make_policy(policy.name, **policy.params)
    if policy.name == "dl2":
        from dlsched.rl.policy import one_inference_thread

        one_inference_thread()
    cluster, speed = settings.load_cluster(), make_speed(settings.speed)
    scaling = {}
    if settings.target_load is not None and not ref.scaling:   # a trace set's own scaling comes first
        trace, scaling = rescale(trace, cluster, speed, target_load=settings.target_load)
    res = simulate(trace, cluster, pol, speed, seed=settings.run_seed(ref, rep),
                   restart_seconds=settings.restart_seconds, deadline=settings.deadline)
    res.extra.update(scaling)
    if settings.lower_bound:
        res.extra["lower_bound_avg_jct"] = jct_lower_bound(trace, cluster, speed, settings.restart_seconds)["bound"]
    return res, pol


def run_sim_cell(ref: TraceRef, policy: PolicySpec, rep: int, settings: SimSettings) -> dict:
    """One simulated run as a JSON-safe row (never raises; see the module docstring)."""
    import numpy as np

    row = {"cell": cell_id(ref, policy, rep), "kind": "simulate", "instance": ref.key, "trace": ref.key,
           "set": ref.set_name, "method": policy.label, "policy": policy.label, "policy_name": policy.name,
           "params": policy.params, "repetition": rep, "seed": settings.run_seed(ref, rep), "trace_seed": ref.seed, "host": platform.node(), "pid": os.getpid()}
    t0 = time.perf_counter()
    try:
        trace, scaling = ref.load_scaled(settings)
        row["trace_source"] = trace.source
        if scaling:
            row["scaling"] = scaling
        res, pol = simulate_cell(ref, policy, rep, settings, trace)
        s = res.summary()
        row.update(status=s["status"], message=s["message"],
                   **{k: s[k] for k in FIGURES}, gpu_utilisation=s["utilisation"].get("gpu"),
                   **{k: res.extra[k] for k in ("arrival_scale", "offered_load", "lower_bound_avg_jct") if k in res.extra},
                   jct=sorted(float(x) for x in np.asarray(res.jct)[res.completed]),
                   # every job's first start and completion: equal digests, equal decisions (two checkouts)
                   digest=hashlib.sha256(np.ascontiguousarray(np.stack([res.first_start, res.completion])).tobytes())
                   .hexdigest()[:16])
        if hasattr(pol, "inference_stats"):   # DL2's latency per inference, summarised (count, p50, p95, mean, max ms)
            row["inference_ms"] = pol.inference_stats()
        if hasattr(pol, "error_records"):     # Optimus's estimation errors per job (MODELS.md §5), NaN as null
            row["model_errors"] = [{k: (None if isinstance(v, float) and v != v else v) for k, v in e.items()}
                                   for e in pol.error_records()]
    except InputError as exc:          # the policy does not apply to this trace: a result, not a failure
        row.update(status="refused", message=str(exc), **{k: None for k in FIGURES}, gpu_utilisation=None, jct=[])
    except Exception as exc:  # noqa: BLE001  (one failing cell must not end a sweep)
        row.update(status="error", exception=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8))
    row["cell_seconds"] = time.perf_counter() - t0
    return row

"""Benchmark suites as data: a TOML file names instance sets, methods, limits and repetitions.

A suite file (``dlsched/bench/suites/*.toml`` bundled, or any path)::

    name = "mkp"                       # results files are tied to this name
    description = "..."
    time_limit = 10.0                  # seconds per cell (every method)
    threads = 1                        # solver threads per cell
    gap = 0.0                          # relative MIP gap to stop at
    repetitions = 1                    # cells per (instance, method); repetition r uses seed + r
    seed = 0

    [[instances]]                      # one table per instance set; ``kind`` says where from
    kind = "data"                      # bundled | data | folder | generated
    files = ["orlib/mkp/mknapcb1.txt"] # data: paths under the reference data (dlsched.data)
    problems = "0-4"                   # optional: problems of multi-problem OR-Library files
    best_known = "orlib/mkp/mkcbres.txt"   # optional: best-known table (MKP)

    [[methods]]
    name = "core"                      # a registered method (``dlsched methods``)
    label = "core@div"                 # optional: how results name it (default: name)
    params = { diversify = true }      # optional: method parameters
    sets = ["orlib-mkp"]               # optional: only on these instance sets (default: all)
    time_limit = 60.0                  # optional: this method's limit instead of the suite's

    [[methods]]
    name = "cpsat"                     # a peer (:data:`dlsched.bench.peers.PEERS`: cpsat, scip, gurobi),
                                       # run on the same core model in the same sweep

Other instance kinds: ``bundled`` (``pattern``: glob in the bundled ``instances/``), ``folder``
(``path`` and ``pattern``; a relative path is read from the suite file's folder) and
``generated`` (``generator`` one of ``GENERATORS`` in dlsched/registry.py, ``seeds`` a list or
``{start, count}``, ``params`` its keyword arguments).

:func:`load_suite` validates everything it can before any solve: an unknown key, method,
instance kind or generator is one :class:`~dlsched.errors.InputError` naming the file and key.

The cells above (``kind = "solve"``, the default) solve instances. ``kind = "simulate"`` suites
replay traces under simulator policies (:mod:`dlsched.bench.simcells`); ``kind = "study"`` suites
run the per-case parts of a family's study (:mod:`dlsched.bench.tasks`). ``family`` names the
family whose summary ``dlsched bench run`` prints after the sweep (``dlsched bench FAMILY`` runs
the family's suite file and prints it too).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.arguments import check_arguments
from dlsched.bench.peers import PEERS
from dlsched.bench.suitefile import generator_call, once, read_suite_file, tables, typed, unknown
from dlsched.errors import InputError
from dlsched.registry import GENERATORS, SUITES, load_target
from dlsched.solvers import registry
from dlsched import api
from dlsched.bench import simcells, tasks
from dlsched.data import data_dir, project_root
from dlsched.instance import orlib


TOP_KEYS = {"name", "description", "kind", "family", "time_limit", "threads", "gap", "repetitions", "seed",
            "instances", "methods"}
KINDS = ("solve", "simulate", "study")


def summariser(family):
    """``summarise_suite(rows, suite)`` of the suite module named ``family`` (``family = "..."`` in a
    suite file: a name in ``SUITES`` of dlsched/registry.py whose module has one), else None."""
    module = SUITES.get(family) if isinstance(family, str) else None
    return getattr(importlib.import_module(module), "summarise_suite", None) if module else None


def summarised() -> list[str]:
    """The suite names a suite file's ``family`` may take."""
    return [name for name in SUITES if summariser(name) is not None]
SET_KEYS = {
    "bundled": {"kind", "name", "pattern"},
    "data": {"kind", "name", "files", "problems", "best_known", "sense"},
    "folder": {"kind", "name", "path", "pattern", "problems", "best_known"},
    "generated": {"kind", "name", "generator", "seeds", "params"},
}
METHOD_KEYS = {"name", "label", "params", "sets", "time_limit"}
PEER_KEYS = {"name", "label", "sets", "time_limit"}


@dataclass(frozen=True)
class InstanceRef:
    """How a worker gets one instance: a file (and problem index) or a generator call.

    Small and picklable, so a remote worker loads the instance itself.
    """

    key: str                           # unique within the suite, names the instance in results
    set_name: str
    path: str | None = None
    problem: int | None = None
    generator: str | None = None
    seed: int | None = None
    params: tuple = ()                 # generator keyword arguments, as sorted (key, json) pairs
    best_known: str | None = None      # a best-known table file (MKP: mkcbres.txt)
    sense: str | None = None           # a GAP file's objective sense (None: the file's own, or min)

    def load(self):
        """The instance (on whatever machine runs the cell)."""
        if self.generator is not None:
            kwargs = {k: json.loads(v) for k, v in self.params}
            return load_target(GENERATORS[self.generator], "generator")(seed=self.seed, **kwargs)

        return api.load(self.path, problem=self.problem, sense=self.sense)


@dataclass(frozen=True)
class MethodSpec:
    label: str
    name: str
    params: dict = field(default_factory=dict, hash=False)
    sets: tuple[str, ...] = ()         # instance sets it runs on (empty: all)
    time_limit: float | None = None    # None: the suite's
    peer: bool = False                 # a peer solver (dlsched.bench.peers), not a dlsched method

    def runs_on(self, ref: InstanceRef) -> bool:
        return not self.sets or ref.set_name in self.sets


@dataclass
class Suite:
    name: str
    source: str
    description: str
    time_limit: float | None
    threads: int
    gap: float
    repetitions: int
    seed: int
    instances: list[InstanceRef]
    methods: list[MethodSpec]
    definition: dict                   # the parsed file, for the digest and the results header
    kind: str = "solve"
    family: str | None = None
    simulation: dict = field(default_factory=dict)   # kind simulate: traces, policies, settings
    tasks: list = field(default_factory=list)        # kind study: the TaskCells

    def digest(self) -> str:
        """What makes two runs comparable: the parsed definition (not the file's formatting)."""
        return hashlib.sha256(json.dumps(self.definition, sort_keys=True).encode()).hexdigest()[:16]

    def limits(self) -> dict:
        return {"time_limit": self.time_limit, "threads": self.threads, "gap": self.gap,
                "repetitions": self.repetitions, "seed": self.seed}

    def cells(self) -> list[tuple[InstanceRef, MethodSpec, int]]:
        """The (instance, method, repetition) cells of a solve suite (empty for the other kinds)."""
        return [(i, m, r) for i in self.instances for m in self.methods if m.runs_on(i) for r in range(self.repetitions)]



def load_suite(name_or_path: str | Path) -> Suite:
    """Read and validate a suite file (see the module docstring)."""
    doc, path = read_suite_file(name_or_path)
    return suite_from_definition(doc, path)


def suite_from_definition(doc: dict, path: Path, source: str | None = None) -> Suite:
    """A validated suite from a parsed suite file (``path``: where relative paths start; ``source``
    names it in errors, default the path). Family commands pass their suite file's definition
    with the command line's settings applied."""
    src = source or str(path)
    kind = doc.get("kind", "solve") if isinstance(doc, dict) else None
    if kind not in KINDS:
        raise InputError(src, "kind", f"one of {', '.join(KINDS)}", kind)
    family = doc.get("family")
    if family is not None and summariser(family) is None:
        raise InputError(src, "family", f"one of {', '.join(summarised())}", family)
    if kind != "solve":
        return _other_kind(src, path, doc, kind, family)
    unknown(src, "", doc, TOP_KEYS)
    gap = doc.get("gap", 0.0)
    if not (isinstance(gap, (int, float)) and 0 <= gap < 1):
        raise InputError(src, "gap", "a relative gap in [0, 1)", gap)
    refs = [r for k, s in enumerate(tables(src, doc, "instances")) for r in instance_set(src, path.parent, f"instances[{k}]", s)]
    once(src, "instances", [r.key for r in refs], "every instance once (give the sets distinct names)")
    set_names = {r.set_name for r in refs}
    methods = [_method(src, f"methods[{k}]", m, set_names) for k, m in enumerate(tables(src, doc, "methods"))]
    once(src, "methods", [m.label for m in methods], "distinct labels (add label = \"...\")")
    return Suite(*_settings(src, path, doc, float(gap)), refs, methods, doc, kind, family)


def _settings(src: str, path: Path, doc: dict, gap: float) -> tuple:
    """Name, source, description, time limit, threads, gap, repetitions and seed of a suite file."""
    name = typed(src, "name", doc.get("name", path.stem), str, "a string")
    time_limit = doc.get("time_limit")
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise InputError(src, "time_limit", "a positive number of seconds", time_limit)
    threads = typed(src, "threads", doc.get("threads", 1), int, "a positive integer", lo=1)
    repetitions = typed(src, "repetitions", doc.get("repetitions", 1), int, "a positive integer", lo=1)
    seed = typed(src, "seed", doc.get("seed", 0), int, "an integer", lo=0)
    return (name, src, str(doc.get("description", "")), None if time_limit is None else float(time_limit), threads, gap,
            repetitions, seed)


def _other_kind(src: str, path: Path, doc: dict, kind: str, family: str | None) -> Suite:
    """A simulate or study suite: the shared settings here, the cells in their own modules."""
    suite = Suite(*_settings(src, path, doc, 0.0), [], [], doc, kind, family)
    if kind == "simulate":
        suite.simulation = simcells.parse(src, path.parent, doc)
    else:
        suite.tasks = tasks.parse(src, doc)
    return suite


def _problems(src: str, where: str, text: Any) -> set[int] | None:
    if text is None:
        return None
    out: set[int] = set()
    try:
        for part in str(text).split(","):
            lo, _, hi = part.strip().partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise InputError(src, where, "problem indices such as \"0-4,7\"", text) from None
    return out


def instance_set(src: str, base: Path, where: str, s: Any) -> list[InstanceRef]:
    if not isinstance(s, dict) or not isinstance(s.get("kind"), str) or s["kind"] not in SET_KEYS:
        raise InputError(src, f"{where}.kind", f"one of {', '.join(SET_KEYS)}", s.get("kind") if isinstance(s, dict) else s)
    kind = s["kind"]
    unknown(src, where, s, SET_KEYS[kind])
    set_name = str(s.get("name", kind))
    if kind == "generated":
        return _generated(src, where, set_name, s)

    if kind == "bundled":
        files = sorted((project_root() / "instances").glob(s.get("pattern", "*.json")))
    elif kind == "data":
        names = s.get("files")
        if not isinstance(names, list) or not names:
            raise InputError(src, f"{where}.files", "a list of files under the reference data", names)
        # a name with a wildcard is a glob under the reference data (its matches in name order)
        files = [g for f in names for g in (sorted(data_dir().glob(f)) if any(c in str(f) for c in "*?[")
                                             else [data_dir() / f])]
    else:
        folder = Path(typed(src, f"{where}.path", s.get("path"), str, "a folder of instance files"))
        folder = folder if folder.is_absolute() else base / folder
        if not folder.is_dir():
            raise InputError(src, f"{where}.path", "a folder of instance files", str(folder))
        files = sorted(folder.glob(s.get("pattern", "*.json")))
    for f in files:
        if not f.is_file():
            raise InputError(src, f"{where}.files", "an existing instance file", str(f))
    if not files:
        raise InputError(src, where, "at least one instance file", "none matched")
    best = s.get("best_known")
    if best is not None:
        best_path = Path(best) if Path(best).is_absolute() else data_dir() / best
        if not best_path.is_file():
            raise InputError(src, f"{where}.best_known", "a best-known table file", str(best_path))
        best = str(best_path)
    keep = _problems(src, f"{where}.problems", s.get("problems"))
    sense = s.get("sense")
    if sense not in (None, "min", "max"):
        raise InputError(src, f"{where}.sense", "min or max (the objective of GAP files)", sense)
    out = []
    for f in files:
        for k in _file_problems(f, keep):
            key = (f.name if k is None else f"{f.name}#{k}") + ("" if sense is None else f":{sense}")
            out.append(InstanceRef(key=key, set_name=set_name, path=str(f), problem=k, best_known=best, sense=sense))
    return out


def _file_problems(path: Path, keep: set[int] | None) -> list[int | None]:
    """Problem indices of a multi-problem OR-Library MKP file; ``[None]`` for any other file."""

    if orlib.detect_format(path) != "mkp":
        return [None]
    return [k for k in range(orlib.count_mkp_problems(path)) if keep is None or k in keep]


def _generated(src: str, where: str, set_name: str, s: dict) -> list[InstanceRef]:
    gen, seeds, packed = generator_call(src, where, s, GENERATORS)
    return [InstanceRef(key=f"{set_name}/{gen}-seed{x}", set_name=set_name, generator=gen, seed=x, params=packed)
            for x in seeds]


def _method(src: str, where: str, m: Any, set_names: set[str]) -> MethodSpec:
    name = m.get("name") if isinstance(m, dict) else None
    peer = isinstance(name, str) and name in PEERS
    unknown(src, where, m, PEER_KEYS if peer else METHOD_KEYS)
    if not peer and name not in registry.available():
        raise InputError(src, f"{where}.name", f"a method, one of {', '.join(registry.available())}, "
                                               f"or a peer, one of {', '.join(PEERS)}", name)
    params = m.get("params", {})
    if not peer:
        unknown(src, f"{where}.params", params,
                {p for meth in registry.describe() if meth.name == name for p in meth.params})
        for meth in registry.describe():      # the types and backends of every family's method of that name
            if meth.name == name:
                given = {k: v for k, v in params.items() if k in meth.params}
                check_arguments(meth.fn, given, f"method '{name}'", source=src, where=f"{where}.params")
                if meth.backends and "backend" in given and given["backend"] not in meth.backends:
                    raise InputError(src, f"{where}.params.backend", f"one of {', '.join(meth.backends)} for method "
                                     f"'{name}'", given["backend"])
    sets = m.get("sets", [])
    if not isinstance(sets, list) or any(not isinstance(x, str) or x not in set_names for x in sets):
        bad = next((x for x in sets if not isinstance(x, str) or x not in set_names), sets) if isinstance(sets, list) else sets
        raise InputError(src, f"{where}.sets", f"names of instance sets, among {', '.join(sorted(set_names))}", bad)
    limit = m.get("time_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0):
        raise InputError(src, f"{where}.time_limit", "a positive number of seconds", limit)
    return MethodSpec(label=str(m.get("label", name)), name=name, params=dict(params), sets=tuple(sets),
                      time_limit=None if limit is None else float(limit), peer=peer)

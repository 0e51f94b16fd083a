"""The one registry: every name a user can give (an instance family, a method, a policy, a
benchmark suite) and the module that defines it, as strings, so that nothing is imported until it
is named (STYLE.md practice 1: names map to objects, never parsed from strings).

Adding a family is its own modules plus one :class:`FamilyEntry` line in :data:`FAMILIES`; adding a
method or a policy is one module plus one line here; a method module's ``@register``
decorators (:mod:`dlsched.solvers.registry`) say what each name accepts. A third-party package
adds its own without editing dlsched, through the entry-point groups :data:`ENTRY_POINTS`
(``dlsched.policies``: ``name = "package.module:Class"``; ``dlsched.methods``: ``name =
"package.module"``, a module whose ``@register`` decorators define ``name``); ``--policy
package.module:Class`` names a policy class directly. ``tests/test_registry.py`` checks that
this table and the decorators agree, and that this is the only table to change.

This module imports nothing of dlsched's but :mod:`dlsched.errors`: it sits on the bottom floor.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import inspect
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from dlsched.errors import InputError


@dataclass(frozen=True)
class FamilyEntry:
    """An instance family (docs/architecture.md "Adding a family"), by names only.

    ``format``: the module of its dlsched/1 file format (``parse``, ``dump``, ``parse_solution``,
    ``dump_solution``; its schema is ``dlsched/instance/schema/<family>.schema.json``);
    ``checker``: its function in :mod:`dlsched.check`; ``core_solutions``: the generic layers
    (``exact``, ``lp-round``, ``core``, ``sample``, ...) apply, their core solution being the
    family's own form or translated by the instance's ``solution_from_core``; ``example_method``:
    the method that solves the family's bundled examples (the fuzzer's seeds); ``runner``: the
    ``"module:function"`` that runs a policy on the engine over an instance of the family
    (``run(instance, policy, deadline=..., **options)``, behind ``run_policy``), if it has one.
    """

    format: str
    checker: str
    core_solutions: bool = False
    example_method: str = "exact"
    runner: str | None = None


#: family name (the ``"family"`` of a dlsched/1 file, an instance's ``family``) -> its modules
FAMILIES: dict[str, FamilyEntry] = {
    "mcmdk": FamilyEntry("dlsched.instance.mcmdk_json", "check_mcmdk", core_solutions=True),
    "smd": FamilyEntry("dlsched.instance.smd_json", "check_smd", core_solutions=True, runner="dlsched.policies.smd:run"),
    "oasis": FamilyEntry("dlsched.instance.oasis_json", "check_oasis", example_method="oasis",
                         runner="dlsched.policies.oasis:run"),
    "placement": FamilyEntry("dlsched.instance.placement_json", "check_placement", example_method="greedy"),
}

#: method name -> the modules whose ``@register`` define it (one per family that has its own)
METHODS: dict[str, tuple[str, ...]] = {
    # core layers (MODELS.md §1)
    "exact": ("dlsched.solvers.exact", "dlsched.solvers.smd", "dlsched.solvers.hetplace", "dlsched.solvers.oasis_offline"),
    "lp-round": ("dlsched.solvers.rounding",),
    "core": ("dlsched.solvers.core",),
    "sample": ("dlsched.solvers.sampling",),
    "hyperplane": ("dlsched.solvers.hyperplane",),
    "tabu": ("dlsched.solvers.tabu",),
    # SMD (§2): online methods run their policy on the engine; the time-indexed optimum
    "smd": ("dlsched.policies.online",),
    "optimus": ("dlsched.policies.online",),
    "drf": ("dlsched.policies.online",),
    "time-indexed": ("dlsched.policies.time_indexed",),
    # OASiS (§3): online and its baselines on the engine, the offline MILP and its bound
    "oasis": ("dlsched.policies.online",),
    "fifo": ("dlsched.policies.online",),
    "risk_reward": ("dlsched.policies.online",),
    "dorm": ("dlsched.policies.online",),
    "offline": ("dlsched.solvers.oasis_offline",),
    "pooled-bound": ("dlsched.solvers.oasis_offline",),
    # heterogeneous placement (§4)
    "greedy": ("dlsched.solvers.hetplace",),
    "hetplace": ("dlsched.solvers.hetplace",),
}

#: an OASiS instance's engine setting (trace, cluster, speed source, horizon) for ``dlsched simulate`` and
#: :func:`dlsched.simulate`: named, not imported, so that listing the policies loads no policy module
OASIS_ENGINE = "dlsched.policies.oasis:engine_setting"

#: policy name -> "module:Class" (the simulator's policies, docs/simulator.md)
POLICIES: dict[str, str] = {
    "fifo": "dlsched.policies.fifo:FIFO",
    "srtf": "dlsched.policies.srtf:SRTF",
    "drf": "dlsched.policies.drf:DRF",
    "tetris": "dlsched.policies.tetris:Tetris",
    "tiresias": "dlsched.policies.tiresias:Tiresias",
    "optimus": "dlsched.policies.optimus:Optimus",
    "smd": "dlsched.policies.smd:SMDPolicy",
    "optimus-greedy": "dlsched.policies.greedy:OptimusGreedyPolicy",
    "srpt-greedy": "dlsched.policies.greedy:SRPTGreedyPolicy",
    "hesrpt": "dlsched.policies.greedy:HeSRPTPolicy",
    "fluid": "dlsched.policies.fluid:FluidPolicy",
    "hetplace": "dlsched.policies.hetplace:HetPlace",
    "oasis": "dlsched.policies.oasis:OASiS",
    "risk_reward": "dlsched.policies.oasis_baselines:RiskReward",
    "dorm": "dlsched.policies.oasis_baselines:Dorm",
    "time-indexed": "dlsched.policies.time_indexed:TimeIndexed",
    "gavel-max-min-fairness": "dlsched.policies.gavel:GavelMaxMinFairness",
    "gavel-max-min-fairness-perf": "dlsched.policies.gavel:GavelMaxMinFairnessPerf",
    "gavel-max-min-fairness-packed": "dlsched.policies.gavel_packed:GavelMaxMinFairnessPacked",
    "gavel-finish-time-fairness": "dlsched.policies.gavel:GavelFinishTimeFairness",
    "gavel-max-sum-throughput": "dlsched.policies.gavel:GavelMaxSumThroughput",
    "gavel-min-total-duration": "dlsched.policies.gavel:GavelMinTotalDuration",
    "gavel-fifo-perf": "dlsched.policies.gavel:GavelFIFOPerf",
    "het-srpt": "dlsched.policies.gavel:HetSRPT",
    "dl2": "dlsched.rl.policy:DL2Policy",
}

#: ``dlsched bench NAME``: suite name -> the module whose ``@register_suite`` defines it; a module
#: that also has ``summarise_suite(rows, suite)`` summarises suite files that say ``family = "NAME"``
SUITES: dict[str, str] = {
    "quick": "dlsched.bench.quick",
    "mkp": "dlsched.bench.mkp",
    "smd": "dlsched.bench.smd",
    "oasis": "dlsched.bench.oasis",
    "hetplace": "dlsched.bench.hetplace",
    "dl2": "dlsched.bench.dl2",
    "sim": "dlsched.bench.sim",
    "timelimits": "dlsched.bench.timelimits",
    "run": "dlsched.bench.runner",     # any suite file: dlsched bench run SUITE (dlsched/bench/suites/)
}

#: ``generated`` instance sets of suite files: generator name -> "module:function" (keyword ``seed`` set per instance)
GENERATORS: dict[str, str] = {
    "mcmdk": "dlsched.instance.generate:random_mcmdk",
    "smd": "dlsched.instance.smd_gen:generate",
    "placement": "dlsched.instance.placement_gen:generate",
    "oasis": "dlsched.instance.oasis_gen:generate",
    "oasis-small": "dlsched.instance.oasis_gen:small",   # the competitive-ratio instances
    "chu-beasley": "dlsched.instance.classic_gen:chu_beasley_mkp",   # classic 0-1 MKP
    "gap": "dlsched.instance.classic_gen:gap_instance",              # generalized assignment
}

#: traces of simulate suites: generator -> "module:function" (each takes ``n_jobs``, ``seed`` and keyword parameters)
TRACE_GENERATORS: dict[str, str] = {
    "dl2": "dlsched.instance.synthetic:dl2_trace",
    "poisson": "dlsched.instance.synthetic:poisson_trace",
}

#: clusters of simulate suites: generator -> "module:function"
CLUSTER_GENERATORS: dict[str, str] = {"dl2": "dlsched.instance.synthetic:dl2_cluster",
                                      "gpu": "dlsched.instance.synthetic:gpu_cluster"}

#: task name -> "module:function" (imported when a suite names it)
TASKS: dict[str, str] = {
    "smd.calibration": "dlsched.bench.smd:calibration_task",
    "smd.gap": "dlsched.bench.smd:gap_task",
    "smd.exact": "dlsched.bench.smd:exact_task",
    "smd.decision": "dlsched.bench.smd:decision_task",
    "smd.load": "dlsched.bench.smd:load_task",
    "oasis.ratio": "dlsched.bench.oasis:ratio_task",
    "oasis.paper": "dlsched.bench.oasis:paper_task",
    "oasis.sensitivity": "dlsched.bench.oasis:sensitivity_task",
    "oasis.capacity": "dlsched.bench.oasis:capacity_task",
    "hetplace.instance": "dlsched.bench.hetplace:instance_task",
    "hetplace.scale": "dlsched.bench.hetplace:scale_task",
    "dl2.agreement": "dlsched.bench.dl2:agreement_task",
    "dl2.small": "dlsched.bench.dl2:small_task",
    "dl2.teacher": "dlsched.bench.dl2_studies:teacher_task",
    "dl2.warmup": "dlsched.bench.dl2_studies:warmup_task",
    "dl2.advantage": "dlsched.bench.dl2_studies:advantage_task",
    "dl2.horizon": "dlsched.bench.dl2_studies:horizon_task",
    "tabu.speed": "dlsched.bench.tabu:speed_task",
    "timelimit": "dlsched.bench.timelimits:timelimit",
    "timelimit.fixed_cost": "dlsched.bench.timelimits:fixed_cost",
    "decision.scale": "dlsched.bench.decision:decision_task",
}

#: entry-point groups third-party packages register in (their pyproject's [project.entry-points."<group>"])
ENTRY_POINTS = {"policies": "dlsched.policies", "methods": "dlsched.methods"}


def plugins(kind: str) -> dict[str, str]:
    """Installed third-party ``kind`` ("policies" or "methods"): name -> target, dlsched's own names excluded."""
    own = POLICIES if kind == "policies" else METHODS
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS[kind]) if ep.name not in own}


def method_modules(name: str | None = None) -> tuple[str, ...]:
    """The modules to import for method ``name`` (every method module when None), plug-ins included."""
    found = {**{n: tuple(m) for n, m in METHODS.items()}, **{n: (m,) for n, m in plugins("methods").items()}}
    if name is None:
        return tuple(dict.fromkeys(m for mods in found.values() for m in mods))
    return found.get(name, ())


def policy_names() -> list[str]:
    """dlsched's policies in table order, then installed plug-ins'."""
    return [*POLICIES, *plugins("policies")]


def close_names(name: str, names) -> str:
    """`` (did you mean 'x'?)`` for a mistyped ``name`` among ``names``, else ``""``."""
    near = difflib.get_close_matches(str(name).lower(), [n.lower() for n in names], n=1, cutoff=0.6)
    return f" (did you mean '{[n for n in names if n.lower() == near[0]][0]}'?)" if near else ""


def load_target(target: str, what: str):
    """The object ``"module:attr"`` names; an :class:`InputError` naming ``what`` when it cannot load."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise InputError("<argument>", what, "'package.module:Class'", target)
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise InputError("<argument>", what, "an importable module", f"no module named '{exc.name}'") from None
        raise
    except AttributeError:
        raise InputError("<argument>", what, f"a name defined in module {module}", attr) from None


def policy_target(name: str) -> str:
    """The ``"module:Class"`` of policy ``name``: dlsched's own, an installed plug-in's, or the name
    itself when it is one (``--policy package.module:Class``); else an :class:`InputError`."""
    target = POLICIES.get(name) or plugins("policies").get(name)
    if target is not None:
        return target
    if ":" in str(name):
        return str(name)
    names = policy_names()
    raise InputError("<argument>", "--policy", f"one of {', '.join(names)} (see `dlsched policies`)"
                     f"{close_names(name, names)}", name)


def policy_class(name: str):
    """The class of policy ``name`` (:func:`policy_target`)."""
    return load_target(policy_target(name), "--policy" if ":" in str(name) else f"policy {name}")


def make_policy(name: str, **params):
    """A fresh policy object; ``params`` are its constructor's keyword arguments."""
    cls = policy_class(name)
    try:
        return cls(**params)
    except TypeError as exc:
        raise InputError("<argument>", f"policy {name} parameters", f"parameters {cls.__name__} accepts", str(exc)) from None


def policy_accepts(name: str, param: str) -> bool:
    """Whether policy ``name``'s constructor names the keyword ``param`` (``**kwargs`` does not count:
    what it accepts is not known)."""
    try:
        sig = inspect.signature(policy_class(name))
    except (TypeError, ValueError):      # a class whose signature cannot be read: assume not
        return False
    p = sig.parameters.get(param)
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def describe_policy(name: str) -> str:
    """The first line of the policy class's docstring, read from its source without importing it
    (``dlsched policies`` loads no policy and no torch), or why it cannot load (a missing extra)."""
    module, _, attr = policy_target(name).partition(":")
    try:    # imports the parent packages only; dlsched.rl says which extra it lacks
        spec = importlib.util.find_spec(module)
    except ImportError as exc:
        return f"(unavailable: {exc})"
    doc = None
    if spec is not None and spec.origin and spec.origin.endswith(".py"):
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        doc = next((ast.get_docstring(n) for n in tree.body if isinstance(n, ast.ClassDef) and n.name == attr), None)
    if doc is None:                 # a class defined otherwise (a compiled module, an alias): import it
        try:
            doc = policy_class(name).__doc__ or ""
        except ImportError as exc:
            return f"(unavailable: {exc})"
    return doc.strip().split("\n")[0]


def suite_module(name: str) -> str:
    if name not in SUITES:
        raise InputError("<argument>", "bench", f"one of {', '.join(sorted(SUITES))}{close_names(name, SUITES)}", name)
    return SUITES[name]

"""Benchmark suites: ``dlsched bench NAME [args]`` runs ``SUITES[NAME](args)``.

A suite module registers itself with :func:`register_suite`; it owns timing (models never
time themselves) and records versions, seeds, limits and the machine (:func:`environment`).
"""

from __future__ import annotations

import importlib
from typing import Callable

from dlsched.errors import InputError
from dlsched.provenance import environment, git_revision  # noqa: F401  (the benchmarks' names for them)

SUITES: dict[str, Callable[[list[str]], int]] = {}

#: suite name -> module that registers it (imported on demand so the CLI starts fast)
SUITE_MODULES = {
    "quick": "dlsched.bench.quick",
    "mkp": "dlsched.bench.mkp",
    "smd": "dlsched.bench.smd",
    "oasis": "dlsched.bench.oasis",
    "hetplace": "dlsched.bench.hetplace",
    "dl2": "dlsched.bench.dl2",
    "sim": "dlsched.bench.sim",
    "run": "dlsched.bench.runner",     # any suite file: dlsched bench run SUITE (dlsched/bench/suites/)
}


def register_suite(name: str):
    def deco(fn: Callable[[list[str]], int]):
        SUITES[name] = fn
        return fn

    return deco


def get_suite(name: str) -> Callable[[list[str]], int]:
    if name not in SUITE_MODULES:
        raise InputError("<argument>", "bench", f"one of {', '.join(sorted(SUITE_MODULES))}", name)
    importlib.import_module(SUITE_MODULES[name])
    # the revision the suite's code was loaded from, read now: a long run must not record a later commit
    git_revision()
    return SUITES[name]

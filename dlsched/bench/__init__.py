"""Benchmark suites: ``dlsched bench NAME [args]`` runs ``MAINS[NAME](args)``, the main function its module
registered (the module of each name is in :data:`dlsched.registry.SUITES`).

A suite module registers itself with :func:`register_suite`; it owns timing (models never
time themselves) and records versions, seeds, limits and the machine (:func:`environment`).
"""

from __future__ import annotations

import importlib
from typing import Callable

from dlsched.provenance import environment, git_revision  # noqa: F401  (the benchmarks' names for them)
from dlsched.registry import suite_module

#: suite name -> the main function its module registered with :func:`register_suite`
MAINS: dict[str, Callable[[list[str]], int]] = {}


def register_suite(name: str):
    def deco(fn: Callable[[list[str]], int]):
        MAINS[name] = fn
        return fn

    return deco


def get_suite(name: str) -> Callable[[list[str]], int]:
    importlib.import_module(suite_module(name))
    # the revision the suite's code was loaded from, read now: a long run must not record a later commit
    git_revision()
    return MAINS[name]

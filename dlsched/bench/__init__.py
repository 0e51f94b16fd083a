"""Benchmark suites: ``dlsched bench NAME [args]`` runs ``SUITES[NAME](args)``.

A suite module registers itself with :func:`register_suite`; it owns timing (models never
time themselves) and records versions, seeds, limits and the machine (:func:`environment`).
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from typing import Callable

import highspy
import numpy
import scipy

import dlsched
from dlsched.errors import InputError

SUITES: dict[str, Callable[[list[str]], int]] = {}

#: suite name -> module that registers it (imported on demand so the CLI starts fast)
SUITE_MODULES = {
    "quick": "dlsched.bench.quick",
    "mkp": "dlsched.bench.mkp",
    "smd": "dlsched.bench.smd",
    "oasis": "dlsched.bench.oasis",
    "hetplace": "dlsched.bench.hetplace",
    "sim": "dlsched.bench.sim",
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
    return SUITES[name]


def environment(**extra) -> dict:
    """Versions, machine and settings to store beside every benchmark result."""

    return {
        "dlsched": dlsched.__version__,
        "python": sys.version.split()[0],
        "highs": highspy.Highs().version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        **extra,
    }

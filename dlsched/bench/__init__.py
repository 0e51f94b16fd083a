"""Benchmark suites: ``dlsched bench NAME [args]`` runs ``SUITES[NAME](args)``.

A suite module registers itself with :func:`register_suite`; it owns timing (models never
time themselves) and records versions, seeds, limits and the machine (:func:`environment`).
"""

from __future__ import annotations

import importlib
import os
import platform
import subprocess
import sys
from functools import lru_cache
from typing import Callable

import numpy
import scipy

import dlsched
from dlsched.data import project_root
from dlsched.errors import InputError
from dlsched.solvers import highs

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
    return SUITES[name]


@lru_cache(maxsize=1)
def git_revision() -> str | None:
    """The checkout's commit (``-dirty`` with uncommitted changes to tracked files); None outside git."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project_root(), capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=project_root(),
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return rev + ("-dirty" if dirty else "")


def environment(**extra) -> dict:
    """Versions, machine, git revision and settings to store beside every benchmark result."""

    return {
        "dlsched": dlsched.__version__,
        "python": sys.version.split()[0],
        "highs": highs.version_number(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "git": git_revision(),
        **extra,
    }

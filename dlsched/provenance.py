"""Where a result came from: versions, machine and git revision, stored beside every result.

A bottom-floor module (it imports nothing of dlsched's but the version and the data folder) so that the simulator's
result files (``dlsched.sim.metrics.SimResult.to_json``) and the benchmark layer
(:mod:`dlsched.bench`, which re-exports both functions) record the same environment without the
simulator importing the benchmark layer.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from functools import lru_cache

import highspy
import numpy
import scipy

from dlsched.data import project_root
from dlsched.version import __version__


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


def highs_version() -> str:
    """HiGHS's version, read from the module's constants (creating a Highs object to ask prints its banner on stdout)."""
    return f"{highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}.{highspy.HIGHS_VERSION_PATCH}"


def environment(**extra) -> dict:
    """Versions, machine, git revision and settings to store beside every benchmark result."""

    return {
        "dlsched": __version__,
        "python": sys.version.split()[0],
        "highs": highs_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "git": git_revision(),
        **extra,
    }

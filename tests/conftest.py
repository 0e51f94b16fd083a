import contextlib
import importlib
import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI must be reproducible); locally hypothesis explores.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from dlsched.data import data_dir

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data() -> Path:
    """The reference data (shared/data); a missing folder is an error, not a skip."""
    return data_dir()


@pytest.fixture(scope="session")
def instances_dir() -> Path:
    return ROOT / "instances"


@pytest.fixture(scope="session", autouse=True)
def front_ends_loaded():
    """Pyomo and CVXPY imported once, in the test process. A Pyomo or CVXPY solve runs in a child
    forked from this process (dlsched.solvers.backends.solve_front_end), and a child whose parent has
    not imported its front end imports it afresh, every solve: a tiny Pyomo solve took 1.25 s wall
    (0.8 CPU s in the child) against 0.06 s with Pyomo loaded, and the suite runs a few hundred. The
    first import in a fresh process stays tested where it matters: in the subprocess tests (the
    `bench run` sweeps, the capture-lock script) and by test_budget's slow-import test."""
    for module in ("pyomo.environ", "cvxpy"):
        with contextlib.suppress(ImportError):      # the solvers' tests skip without them
            importlib.import_module(module)

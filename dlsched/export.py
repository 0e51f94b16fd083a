"""Write a core model to MPS or LP through highspy, so it can be taken to Gurobi, CPLEX or SCIP."""

from __future__ import annotations

from pathlib import Path

import highspy

from dlsched.errors import InputError, SolverError
from dlsched.instance.core import MCMDK
from dlsched.instance.files import replace_atomic
from dlsched.models.mcmdk import build_matrix
from dlsched.solvers.highs import load

SUFFIXES = (".mps", ".lp")


def check_model_path(path: str | Path) -> Path:
    """The suffix picks the format: ``.mps`` or ``.lp`` (checked before any work)."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InputError(str(path), "file name", "a name ending in .mps or .lp", path.suffix or "no suffix")
    return path


def core_of(instance) -> MCMDK:
    """The core MCMDK of an instance; a family without one (``oasis``) is an :class:`InputError`."""
    if not hasattr(instance, "to_core"):
        raise InputError(getattr(instance, "source", "<argument>"), "$.family",
                         "a family that reduces to the core MCMDK (mcmdk, smd, placement)",
                         f"'{getattr(instance, 'family', type(instance).__name__)}': its exact model is its own "
                         "time-indexed MILP (docs/oasis.md), which export does not write")
    return instance.to_core()


def write_model(inst: MCMDK, path: str | Path) -> None:
    """Write the MILP of MODELS.md §1 (matrix form) to ``path``; the suffix picks MPS or LP.

    Written to a temporary name and renamed, so a failure leaves no half-written file.
    """
    path = check_model_path(path)
    h = load(build_matrix(inst))

    def write(tmp: str) -> None:
        if h.writeModel(tmp) == highspy.HighsStatus.kError:
            raise SolverError(f"HiGHS could not write {path}")

    replace_atomic(path, write)

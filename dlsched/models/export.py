"""Write a core model to MPS or LP through highspy, so it can be taken to Gurobi, CPLEX or SCIP."""

from __future__ import annotations

from pathlib import Path

import highspy

from dlsched.errors import InputError, SolverError
from dlsched.instance.core import MCMDK
from dlsched.models.mcmdk import build_matrix
from dlsched.solvers.highs import load

SUFFIXES = (".mps", ".lp")


def write_model(inst: MCMDK, path: str | Path) -> None:
    """Write the MILP of MODELS.md §1 (matrix form) to ``path``; the suffix picks MPS or LP.

    Written to a temporary name and renamed, so a failure leaves no half-written file.
    """
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InputError(str(path), "file name", "a name ending in .mps or .lp", path.suffix or "no suffix")
    h = load(build_matrix(inst))
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        if h.writeModel(str(tmp)) == highspy.HighsStatus.kError:
            raise SolverError(f"HiGHS could not write {path}")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)

"""Write a core model to MPS or LP through highspy, so it can be taken to Gurobi, CPLEX or SCIP."""

from __future__ import annotations

import re
from pathlib import Path

import highspy
import numpy as np

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


def _safe(names: list[str]) -> list[str]:
    """Names a solver's MPS and LP readers take (letters, digits, ``_ . -``), each once: a repeated
    name gets its position appended."""
    out = [re.sub(r"[^A-Za-z0-9_.\-]", "_", n) for n in names]
    seen: dict[str, int] = {}
    for k, n in enumerate(out):
        seen[n] = seen.get(n, 0) + 1
    return [f"{n}_{k}" if seen[n] > 1 else n for k, n in enumerate(out)]


def model_names(inst: MCMDK) -> tuple[list[str], list[str]]:
    """Column and row names from the instance, so that a solver's log reads as the instance does:
    column ``x_<job>_<configuration>`` (the configuration's label, else its index within the job),
    capacity row ``cap_<row>``, the one-configuration row of a job ``one_<job>``."""
    jobs = list(inst.job_names) if inst.job_names else [f"j{j}" for j in range(inst.n_jobs)]
    rows = list(inst.row_names) if inst.row_names else [str(k) for k in range(inst.n_rows)]
    col_job = inst.col_job.tolist()
    within = (np.arange(inst.n_cols) - inst.job_ptr[inst.col_job]).tolist()
    labels = list(inst.config_labels) if inst.config_labels else [f"o{k}" for k in within]
    cols = [f"x_{jobs[j]}_{lab}" for j, lab in zip(col_job, labels)]
    return _safe(cols), _safe([f"cap_{r}" for r in rows] + [f"one_{j}" for j in jobs])


def write_model(inst: MCMDK, path: str | Path) -> None:
    """Write the MILP of MODELS.md §1 (matrix form) to ``path``; the suffix picks MPS or LP; rows and
    columns carry the instance's names (:func:`model_names`).

    Written to a temporary name and renamed, so a failure leaves no half-written file.
    """
    path = check_model_path(path)
    h = load(build_matrix(inst))
    cols, rows = model_names(inst)
    for k, name in enumerate(cols):
        h.passColName(k, name)
    for k, name in enumerate(rows):
        h.passRowName(k, name)

    def write(tmp: str) -> None:
        if h.writeModel(tmp) == highspy.HighsStatus.kError:
            raise SolverError(f"HiGHS could not write {path}")

    replace_atomic(path, write)

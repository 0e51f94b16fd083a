"""Independent checker: feasibility and objective recomputed from the instance alone.

This module deliberately imports nothing from ``dlsched.models`` or ``dlsched.solvers``
and does its own arithmetic, so that a bug in a model builder cannot hide itself.
Family checkers register in :data:`CHECKERS` under the instance's family name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

ABS_TOL = 1e-6
REL_TOL = 1e-9


@dataclass
class CheckReport:
    feasible: bool
    objective: float | None
    violations: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.feasible

    def raise_if_infeasible(self) -> "CheckReport":
        if not self.feasible:
            raise AssertionError("checker rejected the solution: " + "; ".join(self.violations[:10]))
        return self


def _within(used: float, cap: float) -> bool:
    return used <= cap + ABS_TOL + REL_TOL * abs(cap)


def check_mcmdk(inst, choice, claimed_objective: float | None = None) -> CheckReport:
    """Verify a core solution: one configuration index per job (``-1`` = none).

    Checks: one entry per job, each in range, every job served under ``exactly_one``,
    every capacity row respected; recomputes the objective sum of the chosen values.
    """
    bad: list[str] = []
    choice = np.asarray(choice)
    n_jobs = len(inst.job_ptr) - 1
    if choice.ndim != 1 or choice.shape[0] != n_jobs:
        return CheckReport(False, None, [f"solution has {choice.shape} entries, instance has {n_jobs} jobs"])
    if not np.issubdtype(choice.dtype, np.integer):
        if not np.all(np.equal(np.mod(choice, 1), 0)):
            return CheckReport(False, None, ["configuration indices must be integers"])
        choice = choice.astype(np.int64)
    counts = [int(inst.job_ptr[j + 1] - inst.job_ptr[j]) for j in range(n_jobs)]
    A = inst.A.tocsc()
    used = np.zeros(len(inst.b))
    total = 0.0
    for j in range(n_jobs):
        o = int(choice[j])
        name = inst.job_names[j] if inst.job_names else f"job{j}"
        if o == -1:
            if inst.choose == "exactly_one":
                bad.append(f"job '{name}' has no configuration but every job must get one")
            continue
        if not 0 <= o < counts[j]:
            bad.append(f"job '{name}' chose configuration {o}, it has {counts[j]}")
            continue
        col = int(inst.job_ptr[j]) + o
        total += float(inst.value[col])
        lo, hi = A.indptr[col], A.indptr[col + 1]
        used[A.indices[lo:hi]] += A.data[lo:hi]
    for k in range(len(inst.b)):
        if not _within(used[k], float(inst.b[k])):
            row = inst.row_names[k] if inst.row_names else f"row{k}"
            bad.append(f"capacity row '{row}' uses {used[k]:g} > {inst.b[k]:g}")
    if claimed_objective is not None and abs(claimed_objective - total) > 1e-6 * max(1.0, abs(total)):
        bad.append(f"claimed objective {claimed_objective:g} but the chosen values sum to {total:g}")
    return CheckReport(not bad, total, bad)


CHECKERS: dict[str, Callable[..., CheckReport]] = {"mcmdk": check_mcmdk}


def check(instance: Any, solution: Any, claimed_objective: float | None = None) -> CheckReport:
    """Check ``solution`` against ``instance`` with the checker of the instance's family."""
    fn = CHECKERS.get(instance.family)
    if fn is None:
        raise KeyError(f"no checker for family '{instance.family}'")
    return fn(instance, solution, claimed_objective)

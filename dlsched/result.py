"""One result type for every method (DESIGN.md "one result type").

The gap is defined once, in :func:`relative_gap`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any


class Status(str, enum.Enum):
    """What solution exists (not why the solver stopped: that is ``termination``)."""

    OPTIMAL = "optimal"          # a solution proven optimal within the requested gap
    FEASIBLE = "feasible"        # a solution, optimality not proven (time limit, heuristic)
    INFEASIBLE = "infeasible"    # proven: no solution exists
    UNBOUNDED = "unbounded"
    NO_SOLUTION = "no_solution"  # stopped (e.g. time limit) before any solution was found
    ERROR = "error"

    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    r"""Relative optimality gap, HiGHS's definition.

    .. math:: \mathrm{gap} = |\mathrm{bound} - \mathrm{objective}| / \max(|\mathrm{objective}|, 10^{-9})

    ``0`` when both are zero, ``None`` when either is missing (no certificate),
    ``inf`` when the bound is infinite.
    """
    if objective is None or bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return math.inf
    diff = abs(bound - objective)
    if diff <= 1e-12:
        return 0.0
    return diff / max(abs(objective), 1e-9)


def gap_to_reference(value: float | None, reference: float, sense: str) -> float | None:
    """Relative distance of ``value`` from a reference (best known) value, positive when worse.

    ``(reference - value) / |reference|`` for maximisation, ``(value - reference) / |reference|``
    for minimisation (``shared/data/README.md``).
    """
    if value is None:
        return None
    diff = reference - value if sense == "max" else value - reference
    if abs(diff) <= 1e-9 * max(1.0, abs(reference)):
        return 0.0
    return diff / max(abs(reference), 1e-9)


@dataclass
class Result:
    """What every method returns.

    ``solution`` is family specific; for the core model it is the chosen configuration
    index of every job (``-1``: job not chosen), a numpy int array.
    """

    method: str
    status: Status
    objective: float | None = None
    bound: float | None = None
    sense: str = "max"
    termination: str = ""
    backend: str | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    solution: Any = None
    stats: dict[str, Any] = field(default_factory=dict)
    solver_version: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)

    def summary(self) -> dict[str, Any]:
        """The fields of the CLI's ``--json`` contract, JSON-safe."""

        def num(x):
            if x is None:
                return None
            x = float(x)
            return x if math.isfinite(x) else (None if math.isnan(x) else ("inf" if x > 0 else "-inf"))

        return {
            "status": self.status.value,
            "termination": self.termination,
            "objective": num(self.objective),
            "bound": num(self.bound),
            "gap": num(self.gap),
            "sense": self.sense,
            "build_seconds": round(self.build_seconds, 6),
            "solve_seconds": round(self.solve_seconds, 6),
            "method": self.method,
            "backend": self.backend,
            "solver_version": self.solver_version,
            "stats": {k: v for k, v in self.stats.items() if isinstance(v, (int, float, str, bool, type(None)))},
            "message": self.message,
        }

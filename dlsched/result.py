"""One result type for every method (DESIGN.md "one result type").

The gap is defined once, in :func:`relative_gap`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Status(str, enum.Enum):
    """What solution exists (MOI's primal status), not why the method stopped (``termination``).

    docs/contract.md, "Status": ``OPTIMAL`` and ``FEASIBLE`` carry a solution (and its
    objective); the others carry none. ``INFEASIBLE`` and ``UNBOUNDED`` are proofs; a solver that
    can only say "infeasible or unbounded" gives ``NO_SOLUTION`` with termination
    ``infeasible_or_unbounded``.
    """

    OPTIMAL = "optimal"          # a solution proven optimal (termination "optimal")
    FEASIBLE = "feasible"        # a solution, optimality not proven (time limit, gap limit, heuristic)
    INFEASIBLE = "infeasible"    # proven: no solution exists
    UNBOUNDED = "unbounded"      # proven: the objective is unbounded
    NO_SOLUTION = "no_solution"  # no solution to return (stopped early, bound-only method, undecided)
    ERROR = "error"

    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


#: Every termination string a method may report (MOI's termination status), with its meaning.
#: docs/contract.md reproduces this table; a test checks that the two agree.
TERMINATIONS: dict[str, str] = {
    "optimal": "proven optimal (bound equals objective within HiGHS's tolerance 1e-6 absolute / 1e-9 relative)",
    "gap_limit": "stopped because the relative gap reached the requested `gap` (not proven optimal)",
    "time_limit": "stopped by the whole-call time limit; the best solution so far and its bound are returned",
    "infeasible": "proven infeasible: no solution exists",
    "unbounded": "proven unbounded",
    "infeasible_or_unbounded": "HiGHS proved that no optimal solution exists without deciding which of the two (presolve)",
    "iteration_limit": "stopped by a HiGHS iteration limit (a `raw` option)",
    "solution_limit": "stopped by a HiGHS solution-count limit (a `raw` option)",
    "objective_bound": "stopped by a HiGHS objective bound (a `raw` option)",
    "objective_target": "stopped by a HiGHS objective target (a `raw` option)",
    "interrupted": "interrupted (a callback or the user)",
    "memory_limit": "stopped by a memory limit",
    "local_optimum": "a heuristic ended at a local optimum of its neighbourhoods (lp-round)",
    "repair_failed": "lp-round found no configuration that fits for every job (exactly_one); no solution",
    "sample_optimal": "sample: optimal on the sampled columns; the whole problem's gap is in the bound",
    "time_horizon": "time-indexed with a user horizon below the provable one: optimal or infeasible only among schedules ending by it",
    "fixed_point": "smd epoch mode: the parametric iteration repeated itself before proving optimality",
    "heuristic": "a constructive heuristic ran to its end (greedy, hetplace)",
    "completed": "a simulation scheduled every job it could to the end of the instance",
    "slot_cap": "a simulation stopped at its slot cap before every job completed (no solution)",
    "bound_only": "a bound-only method (pooled-bound) solved its relaxation; it never returns a solution",
    "error": "the method or solver failed",
    "unknown": "the solver stopped for a reason it did not report",
}

#: a bound this close to the objective counts as equal (HiGHS's mip_feasibility_tolerance, and a
#: relative term for large objectives): used by the gap and by the side check
ABS_TOL = 1e-6
REL_TOL = 1e-9


def _close(a: float, b: float) -> bool:
    d = abs(a - b)
    return d <= ABS_TOL or d <= REL_TOL * max(abs(a), abs(b))


def relative_gap(objective: float | None, bound: float | None, sense: str = "max") -> float | None:
    r"""Relative optimality gap, HiGHS's definition, respecting the sense (docs/contract.md, "Gap").

    .. math:: \mathrm{gap} = \frac{\mathrm{bound} - \mathrm{objective}}{|\mathrm{objective}|}\ (\max),
              \qquad \frac{\mathrm{objective} - \mathrm{bound}}{|\mathrm{objective}|}\ (\min)

    ``None`` when either value is missing (no certificate); ``0`` when they agree within
    :data:`ABS_TOL` / :data:`REL_TOL`; ``inf`` when the bound is infinite on the valid side or the
    objective is 0 with a nonzero difference (undefined). A **negative** value means the bound is
    on the wrong side of the objective: an inconsistency, reported as such by
    :meth:`Result.inconsistency`, never hidden by ``abs()``.
    """
    if objective is None or bound is None:
        return None
    if math.isnan(objective) or math.isnan(bound):
        return math.nan
    diff = (bound - objective) if sense == "max" else (objective - bound)
    if math.isinf(bound) or math.isinf(objective):
        return math.inf if diff > 0 else (0.0 if diff == 0 or math.isnan(diff) else -math.inf)
    if _close(objective, bound):
        return 0.0
    if objective == 0:
        return math.inf if diff > 0 else -math.inf
    return diff / abs(objective)


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
    #: what ``objective`` measures when it is not the instance's own objective (the one its reference
    #: states), e.g. an SMD schedule's Σ ω_j C_j beside the §2.2 epoch reference; "" when it is
    objective_of: str = ""

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound, self.sense)

    def inconsistency(self) -> str | None:
        """What breaks the contract's invariants (docs/contract.md), or ``None``: a solution
        without an objective or the reverse, a status that disagrees with the termination, a
        bound on the wrong side of the objective."""
        has = self.status.has_solution()
        if has != (self.solution is not None) or has != (self.objective is not None):
            return (f"status {self.status.value} with solution {'present' if self.solution is not None else 'absent'}"
                    f" and objective {self.objective!r}")
        if self.termination not in TERMINATIONS:
            return f"termination {self.termination!r} is not in the documented vocabulary"
        if (self.status == Status.OPTIMAL) != (self.termination == "optimal" and has):
            return f"status {self.status.value} with termination {self.termination}"
        for st in (Status.INFEASIBLE, Status.UNBOUNDED):
            if (self.status == st) != (self.termination == st.value):
                return f"status {self.status.value} with termination {self.termination}"
        gap = self.gap
        if self.status == Status.OPTIMAL and gap != 0:
            return f"status optimal with gap {gap!r} (a proof of optimality is a bound equal to the objective)"
        if gap is not None and not gap >= 0:
            return (f"bound {self.bound!r} is on the wrong side of objective {self.objective!r} "
                    f"({'max' if self.sense == 'max' else 'min'}imisation)")
        return None

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
            "objective_of": self.objective_of,
        }


def make_result(method: str, opts: Any, *, sense: str, termination: str, solution: Any = None,
                objective: float | None = None, bound: float | None = None, backend: str | None = None,
                build_seconds: float = 0.0, solve_seconds: float | None = None, stats: dict | None = None,
                solver_version: str = "", message: str = "", objective_of: str = "") -> Result:
    """The one :class:`Result` factory (docs/contract.md): the status follows from the termination
    and from whether a solution is given, so the two can never disagree.

    * a ``solution`` (with its ``objective``) gives ``OPTIMAL`` when ``termination == "optimal"``,
      else ``FEASIBLE``;
    * no solution gives ``INFEASIBLE`` / ``UNBOUNDED`` / ``ERROR`` for those terminations and
      ``NO_SOLUTION`` otherwise;
    * ``solve_seconds`` defaults to the time since the call's budget started, less the build;
    * a bound on the wrong side of the objective is reported (``stats["inconsistency"]`` and the
      message), never repaired.

    ``opts`` is the call's :class:`~dlsched.solvers.options.SolveOptions`.
    """
    if termination not in TERMINATIONS:
        raise ValueError(f"termination {termination!r} is not in the documented vocabulary (dlsched.result.TERMINATIONS)")
    if (solution is None) != (objective is None):
        raise ValueError(f"{method}: a solution needs its objective and an objective its solution")
    if solution is not None:
        if termination in ("infeasible", "unbounded", "infeasible_or_unbounded", "error", "repair_failed",
                           "slot_cap", "bound_only"):
            raise ValueError(f"{method}: termination {termination} with a solution")
        status = Status.OPTIMAL if termination == "optimal" else Status.FEASIBLE
    else:
        if termination == "optimal":
            raise ValueError(f"{method}: termination optimal without a solution")
        status = {"infeasible": Status.INFEASIBLE, "unbounded": Status.UNBOUNDED,
                  "error": Status.ERROR}.get(termination, Status.NO_SOLUTION)
    if solve_seconds is None:
        solve_seconds = max(0.0, opts.clock.elapsed() - build_seconds)
    res = Result(method=method, status=status, objective=None if objective is None else float(objective),
                 bound=None if bound is None else float(bound), sense=sense, termination=termination,
                 backend=backend, build_seconds=float(build_seconds), solve_seconds=float(solve_seconds),
                 solution=solution, stats=dict(stats or {}), solver_version=solver_version,
                 options=opts.as_dict(), message=message, objective_of=objective_of)
    why = res.inconsistency()
    if why:
        res.stats["inconsistency"] = why
        res.message = (res.message + "; " if res.message else "") + "inconsistent: " + why
    return res


def jain(x) -> float | None:
    """Jain's fairness index J = (Σx)² / (n Σx²) ∈ [1/n, 1] of values x >= 0 (1: all equal).

    The one definition in dlsched (the simulator's fairness of JCT_iso / JCT; heterogeneous
    placement's of slowdowns). Edges: non-finite values (a job with no isolated JCT, or none
    at all) are left out, n counting the finite ones; with no finite value, or all of them 0,
    the index is undefined (0/0) and the answer is None, not a number. J is computed on x / max x
    (it is scale-free), so squares of tiny or huge values neither underflow nor overflow.
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    x = x[np.isfinite(x)]
    top = np.abs(x).max() if x.size else 0.0
    if not top > 0:
        return None
    y = x / top
    return float(y.sum() ** 2 / (y.size * (y * y).sum()))


def json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinite float (at any depth of dicts, lists and tuples) replaced by
    None, so that ``json.dumps(..., allow_nan=False)`` writes strict JSON (``Infinity`` is not JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value

"""A policy's per-decision time budget and the certified gap of each of its decisions (docs/simulator.md,
"Decision budgets and certified gaps").

A policy that solves an optimisation problem at every call takes ``budget_ms`` (``dlsched simulate
--decision-budget MS`` passes it to every policy whose constructor accepts it) and keeps a
:class:`DecisionRecord`: the budget in seconds, and per decision the gap
:func:`dlsched.result.relative_gap` of the answer's objective against the lower bound of the
policy's own model, as its attribute ``decision_record``. A decision that answers without a gap (no bound
of its model on that state within its budget) is counted as uncertified. The engine reads the gaps and that
count after the run (:func:`dlsched.sim.engine.simulate`) and the run's summary reports the gaps' mean and
maximum beside the count, so that the share of decisions the gaps leave out is seen.
"""

from __future__ import annotations

import math
from typing import Annotated

from dlsched.arguments import Range
from dlsched.result import relative_gap
from dlsched.solvers.options import Budget


#: a policy's ``budget_ms`` option as the options check reads it (:mod:`dlsched.arguments`)
BudgetMs = Annotated[float, Range(gt=0, finite=True)]

#: seconds to place one job at a new size, per server of the cluster, before a budgeted decision (smd's,
#: fluid's) has measured its own (the first fit's numpy passes over the servers: 0.26 ms a job on 3,250 DL2
#: nodes, 2026-11-27)
PLACE_PRIOR = 1e-7


class PlaceRate:
    """Seconds per job placed at a new size, from which a budgeted decision keeps its placement's time back:
    the placements of the last ``window`` decisions that placed any, pooled (their seconds over their jobs), and
    :data:`PLACE_PRIOR` per server until one is measured. ``fluid`` pools 8, because one slow placement (a
    machine's hiccup over one job) had set the rate for every decision after it; ``smd`` reads its last only
    (pooling would change its budgeted decisions, which needs its own measurement)."""

    def __init__(self, servers: int, window: int = 1):
        self.rate = PLACE_PRIOR * max(servers, 1)
        self.window, self.placed = window, []

    def measured(self, seconds: float, jobs: int) -> None:
        """A decision placed ``jobs`` > 0 jobs anew in ``seconds``."""
        self.placed.append((seconds, jobs))
        del self.placed[:-self.window]
        self.rate = sum(t for t, _ in self.placed) / sum(n for _, n in self.placed)

#: after a decision that answered the kept start because its floor was predicted not to fit (:class:`Floor`), the
#: floor's rate is multiplied by this, so that a view is built again after a few such decisions (the floor is
#: measured again: a machine's load may have passed): one decision in 7 where the floor is 1.4 budgets, one in 23 at 3
FLOOR_DECAY = 0.95


class Floor:
    """What a budgeted decision must spend before any answer of its own model exists, the floor (the view of
    the active jobs, its order, the model's arrays, the fill; not the solver's steps that stop at the budget),
    in seconds per active job, measured at the last decision that built its view (none until then). A
    decision whose predicted floor exceeds its whole budget less the margin answers the kept start instead
    (:meth:`dlsched.policies.view.AllocationPolicy.kept_start`), and then lowers the rate by
    :data:`FLOOR_DECAY`."""

    def __init__(self):
        self.rate: float | None = None

    def binds(self, clock: Budget, active: int) -> bool:
        """Whether the floor of a decision over ``active`` jobs is predicted not to fit ``clock``'s budget."""
        if self.rate is None or clock.limit is None or self.rate * active <= clock.limit - clock.margin:
            return False
        self.rate *= FLOOR_DECAY
        return True

    def measured(self, seconds: float, steps: float, limit: float | None, active: int) -> None:
        """A warm decision over ``active`` jobs that took ``seconds``, ``steps`` of them in the steps that stop at the
        budget ``limit`` (None: no budget; a solver's iterations: at a generous budget they fill it). Its floor is ``seconds`` less the
        steps, or the whole of ``seconds`` when the decision overran its budget (the steps were then at their least:
        one Lagrangian step, one look at the warm start; at 1.3 ms of a 12-ms decision over 2,000 DL2 jobs, the
        floor less them predicted one that fits)."""
        over = limit is not None and seconds > limit
        self.rate = (seconds if over else seconds - steps) / max(active, 1)


class DecisionRecord:
    """The budget (None: no budget), the gaps of the decisions made since :meth:`reset`, and how many
    decisions answered with none (``uncertified``). The policy's constructor has checked ``budget_ms``
    against :data:`BudgetMs` (``@checked``)."""

    def __init__(self, budget_ms: float | None = None):
        self.seconds = None if budget_ms is None else float(budget_ms) / 1000.0
        self.gaps: list[float] = []
        self.objectives: list[float] = []
        self.uncertified = 0

    def reset(self) -> None:
        self.gaps, self.objectives, self.uncertified = [], [], 0

    def mark(self) -> tuple[int, int, int]:
        """Where the record stands, for :meth:`undo`."""
        return len(self.objectives), len(self.gaps), self.uncertified

    def undo(self, mark: tuple[int, int, int]) -> None:
        """Forget what was recorded since ``mark`` (:meth:`mark`): a decision that replaced its answer records the
        answer it gives instead."""
        del self.objectives[mark[0]:], self.gaps[mark[1]:]
        self.uncertified = mark[2]

    def clock(self) -> Budget:
        """The running budget of one decision, started now. A solver call is given what remains less
        a tenth of the budget (not the whole-call :data:`~dlsched.solvers.options.RESOLUTION` of
        50 ms, which would leave nothing of a budget of milliseconds)."""
        return Budget(self.seconds, margin=0.0 if self.seconds is None else self.seconds / 10)

    def record(self, objective: float | None, bound: float | None) -> float | None:
        """Append the objective and the gap of a minimisation decision; a decision with an objective that no
        bound certifies is counted as uncertified (one without an objective, which runs nothing of its model,
        is not: there is nothing to certify). Return the gap."""
        gap = relative_gap(objective, bound if bound is None or math.isfinite(bound) else None, "min")
        if objective is not None:
            self.objectives.append(float(objective))
            self.uncertified += gap is None
        if gap is not None:
            self.gaps.append(gap)
        return gap

    def record_uncertified(self) -> None:
        """Count a decision that answered without its model's objective or bound (both would cost what its budget
        does not have)."""
        self.uncertified += 1

    def last_gap(self, above: float) -> bool:
        """Whether the last decision's gap exceeds ``above``."""
        return bool(self.gaps) and self.gaps[-1] > above

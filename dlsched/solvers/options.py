"""Typed solver options shared by every method and backend (STYLE.md practice 7)."""

from __future__ import annotations

import math
import numbers
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from dlsched.arguments import shown
from dlsched.errors import InputError

#: the resolution of the whole-call time limit (docs/contract.md, "Time limit"): a method checks
#: its budget at least this often between steps it cannot interrupt, and gives HiGHS the
#: remaining time less this margin, so the call ends within the limit plus about this much
#: plus the overrun of one uninterruptible step (measured in the suite timelimits)
RESOLUTION = 0.05


class Budget:
    """The wall-clock budget of one whole call (docs/contract.md, "Time limit").

    Created once at the start of the call (``dlsched.solve``, the CLI before it loads the file);
    every step reads ``remaining()`` and passes the budget (or a :meth:`share` of it) down, so
    loading, model building, warm starts, simulations and every sub-solve count against one
    clock. ``limit=None`` is an unlimited budget (``remaining()`` is ``inf``).
    """

    __slots__ = ("limit", "start", "margin")

    def __init__(self, limit: float | None = None, start: float | None = None, margin: float = RESOLUTION):
        self.limit = None if limit is None else float(limit)
        self.start = time.perf_counter() if start is None else float(start)
        self.margin = float(margin)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        """Seconds left (``inf`` without a limit, never negative)."""
        if self.limit is None:
            return math.inf
        return max(0.0, self.limit - self.elapsed())

    def expired(self) -> bool:
        return self.limit is not None and self.elapsed() >= self.limit

    @property
    def limited(self) -> bool:
        return self.limit is not None

    def share(self, fraction: float, at_most: float | None = None) -> "Budget":
        """A child budget of ``fraction`` of the time left (capped at ``at_most`` seconds) starting now:
        how a decomposition divides what remains among its steps. At least 1 ms, so that a spent
        budget still gives a valid (immediately expiring) one."""
        left = self.remaining()
        sec = fraction * left if math.isfinite(left) else None
        if at_most is not None:
            sec = at_most if sec is None else min(sec, at_most)
        return Budget(None if sec is None else max(sec, 1e-3), margin=self.margin)

    def seconds_for_solver(self) -> float | None:
        """The time limit to give one uninterruptible solver call: what remains less ``margin``
        (:data:`RESOLUTION` unless given; a per-decision budget of milliseconds gives a
        proportionate one, dlsched/policies/budget.py) and at least 1 ms, so a spent budget still
        returns an answer at once."""
        if self.limit is None:
            return None
        return max(self.remaining() - self.margin, 1e-3)

    def __repr__(self) -> str:
        return f"Budget(limit={self.limit}, elapsed={self.elapsed():.3f})"


@dataclass(frozen=True)
class Incumbent:
    """An improving solution reported while a method runs (for gap-versus-time curves)."""

    seconds: float
    objective: float
    bound: float | None = None


@dataclass
class SolveOptions:
    """Options every backend understands.

    ``mip_rel_gap`` defaults to 0: "exact" means proven optimal unless asked otherwise
    (HiGHS's own default of 1e-4 stops early and still reports "optimal").
    ``warm_start`` is a core solution (configuration index per job, ``-1`` = none).
    ``raw`` holds backend options passed last, unchanged.
    ``on_incumbent`` is called with an :class:`Incumbent` whenever a better solution is found.
    ``budget`` is the call's :class:`Budget`; :meth:`started` creates it from ``time_limit`` when
    the call starts (the registry does this for every method), and sub-steps receive
    :meth:`within` copies that carry a share of it.
    """

    time_limit: float | None = None
    mip_rel_gap: float = 0.0
    threads: int | None = None
    seed: int = 0
    log: bool = False
    warm_start: np.ndarray | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    on_incumbent: Callable[[Incumbent], None] | None = None
    budget: Budget | None = None

    def __post_init__(self) -> None:
        def real(x) -> bool:
            return isinstance(x, numbers.Real) and not isinstance(x, bool) and not math.isnan(x)

        def integer(x) -> bool:
            return isinstance(x, numbers.Integral) and not isinstance(x, bool)

        if self.time_limit is not None and not (real(self.time_limit) and self.time_limit > 0):
            raise InputError("<argument>", "time_limit", "a positive number of seconds", shown(self.time_limit))
        if not (real(self.mip_rel_gap) and 0 <= self.mip_rel_gap < 1):
            raise InputError("<argument>", "gap", "a relative gap in [0, 1)", shown(self.mip_rel_gap))
        if self.threads is not None and not (integer(self.threads) and self.threads >= 1):
            raise InputError("<argument>", "threads", "a positive integer", shown(self.threads))
        if not (integer(self.seed) and self.seed >= 0):     # numpy's generators take seeds >= 0
            raise InputError("<argument>", "seed", "an integer >= 0", shown(self.seed))
        if not isinstance(self.log, bool):
            raise InputError("<argument>", "log", "True or False", shown(self.log))
        if not isinstance(self.raw, dict):
            raise InputError("<argument>", "raw", "a dict of HiGHS options", type(self.raw).__name__)
        if self.on_incumbent is not None and not callable(self.on_incumbent):
            raise InputError("<argument>", "on_incumbent", "a function of an Incumbent, or None", shown(self.on_incumbent))

    def started(self) -> "SolveOptions":
        """These options with the call's budget running (the existing one if already started)."""
        if self.budget is not None:
            return self
        return replace(self, budget=Budget(self.time_limit))

    @property
    def clock(self) -> Budget:
        """The running budget (a fresh one when the options were never started)."""
        return self.budget if self.budget is not None else Budget(self.time_limit)

    def within(self, budget: Budget, **changes) -> "SolveOptions":
        """Options for a sub-step limited by ``budget`` (e.g. ``opts.budget.share(0.3)``)."""
        return replace(self, budget=budget, time_limit=budget.limit, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The options as recorded beside a result."""
        return {"time_limit": self.time_limit, "mip_rel_gap": self.mip_rel_gap, "threads": self.threads,
                "seed": self.seed, "warm_start": self.warm_start is not None, "raw": dict(self.raw)}


def warn_unknown(raw: dict[str, Any], known: set[str], backend: str) -> dict[str, Any]:
    """Keep the raw options a backend knows; warn about the others instead of failing silently."""
    unknown = sorted(set(raw) - known)
    if unknown:
        warnings.warn(f"{backend}: ignoring unknown raw options {unknown}", stacklevel=3)
    return {k: v for k, v in raw.items() if k in known}

"""Typed solver options shared by every method and backend (STYLE.md practice 7)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from dlsched.errors import InputError


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
    """

    time_limit: float | None = None
    mip_rel_gap: float = 0.0
    threads: int | None = None
    seed: int = 0
    log: bool = False
    warm_start: np.ndarray | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    on_incumbent: Callable[[Incumbent], None] | None = None

    def __post_init__(self) -> None:
        if self.time_limit is not None and not (self.time_limit > 0):
            raise InputError("<argument>", "time_limit", "a positive number of seconds", self.time_limit)
        if not (0 <= self.mip_rel_gap < 1):
            raise InputError("<argument>", "gap", "a relative gap in [0, 1)", self.mip_rel_gap)
        if self.threads is not None and self.threads < 1:
            raise InputError("<argument>", "threads", "a positive integer", self.threads)

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

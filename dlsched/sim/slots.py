"""The engine's one slot arithmetic: slots [kΔ, (k+1)Δ) of ``slot_seconds`` Δ.

The engine calls a policy with ``slot_seconds`` at every :func:`next_boundary`; the SMD and OASiS
slot grids (:class:`dlsched.policies.slotted.Slotted`) and DL2's environment (which drives the
stepwise engine itself, one inference per step) count slots with the same functions. A time within
1e-9 slots of a boundary counts as on it.
"""

from __future__ import annotations

import math


def slot_of(seconds: float, slot_seconds: float) -> int:
    """Index k of the slot [kΔ, (k+1)Δ) that ``seconds`` falls in, a boundary within 1e-9 slots counting as the later one."""
    return int(math.floor(seconds / slot_seconds + 1e-9))


def next_boundary(seconds: float, slot_seconds: float) -> float:
    """The first slot boundary kΔ after ``seconds``: (k + 1)Δ with k = :func:`slot_of`."""
    return (slot_of(seconds, slot_seconds) + 1) * slot_seconds


def completion_slot(seconds: float, slot_seconds: float) -> int:
    """1-based index of the slot a job completing at ``seconds`` held resources in last (MODELS.md §2.4: C_j)."""
    return max(1, int(math.ceil(seconds / slot_seconds - 1e-9)))

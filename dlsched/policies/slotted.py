"""Slot grids for the family simulations (MODELS.md §2.4 for SMD, §3.1 for OASiS).

The SMD and OASiS models live on a grid of slots of length Δ: an allocation is decided at a slot
boundary and its resources are held for the whole slot, even by a job that completes inside it.
:class:`Slotted` turns any event-driven policy into one on that grid: it answers the engine's
calls inside a slot with the allocation of the slot's start (less the jobs that completed), and
calls the inner policy only at a boundary, with every event since its last call, when one of them
is an arrival or a completion (``replan="events"``), at every boundary (``"slots"``), or at a
boundary listed in ``wake`` (slot indices). It records the placements it held in each slot, the
schedule the family checkers verify.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from dlsched.errors import InputError
from dlsched.sim.policy import ClusterState, Decision, Event, Placement, PolicyContext
from dlsched.sim.slots import next_boundary, slot_of

REPLAN = ("events", "slots")


def deadline_left(until: float | None) -> float | None:
    """Seconds left until ``until`` (a ``time.monotonic()`` instant), for an engine that measures its
    deadline from its own start: a family runner's set-up before the engine counts against it."""
    return None if until is None else max(until - time.monotonic(), 0.0)


def deadline_of(opts) -> float | None:
    """The wall-clock seconds left of a method call's time limit (its budget if it carries one), or None."""
    budget = getattr(opts, "budget", None)
    if budget is not None and getattr(budget, "limited", False):
        return budget.remaining()
    return opts.time_limit


class Slotted:
    """``inner`` re-decided only at slot boundaries (module docstring); ``history[k]`` = placements held in slot k."""

    def __init__(self, inner, slot_seconds: float, replan: str = "events", wake: Sequence[int] = ()):
        if replan not in REPLAN:
            raise InputError("<argument>", "replan", f"one of {REPLAN}", replan)
        if not slot_seconds > 0:
            raise InputError("<argument>", "slot_seconds", "a slot length > 0", slot_seconds)
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.slot_seconds = float(slot_seconds)
        self.replan = replan
        self.wake = frozenset(int(k) for k in wake)
        self.offline = bool(getattr(inner, "offline", False))

    def reset(self, ctx: PolicyContext) -> None:
        self.inner.reset(ctx)
        self.current: dict[int, Placement] = {}
        self.pending: list[Event] = []
        self.dirty = True
        self.last_slot = -1
        self.history: dict[int, dict[int, Placement]] = {}
        self.decisions = 0
        self.decision_seconds: list[float] = []

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> Decision:
        self.pending.extend(events)
        self.dirty |= any(e.kind != "timer" for e in events)
        k = slot_of(state.time, self.slot_seconds)
        at_boundary = abs(state.time - k * self.slot_seconds) <= 1e-9 * self.slot_seconds * max(1, k)
        if at_boundary and k != self.last_slot:
            self.last_slot = k
            if self.dirty or self.replan == "slots" or k in self.wake:
                active = np.asarray(state.active)
                if active.size:
                    t0 = time.perf_counter()
                    answer = self.inner.schedule(state, tuple(self.pending))
                    self.decision_seconds.append(time.perf_counter() - t0)
                    self.decisions += 1
                    self.current = dict(answer.placements if isinstance(answer, Decision) else answer)
                    self.pending, self.dirty = [], False
                else:
                    # nothing to run; the events wait for the next decision
                    self.current = {}
        self.current = {j: p for j, p in self.current.items() if not state.done[j]}
        if at_boundary:
            self.history[k] = dict(self.current)
        return Decision(dict(self.current), next_call=next_boundary(state.time, self.slot_seconds))

"""The running jobs' per-job quantities in dense arrays, one slot per running job.

The engine advances every running job at every event (``remaining -= r_j * eff``, the completion
time of each, docs/simulator.md). Read through the trace-long arrays that is a gather per
quantity per event; here each quantity of the running jobs lies contiguously, so an event reads
and writes slices, and a start or a stop costs one slot (a stop moves the last slot into the
hole). Slot order is not job order: callers sort what they report.
"""

from __future__ import annotations

import numpy as np


class RunningTable:
    """Slots ``0..size-1`` hold the running jobs: ``job``, ``rate`` r_j, ``resume`` (the time its
    placement starts to progress), ``remaining`` iterations, ``least`` (the remaining below which
    it is done: 1e-12 of its iterations), ``held`` GPUs, and ``note`` (it has something to report
    when it progresses: a loss curve, or a speed sample not taken yet). ``slot_of[j]`` is job j's
    slot, or -1; ``stalled`` counts the running jobs at rate 0."""

    FIELDS = ("job", "rate", "resume", "remaining", "least", "held", "note")

    def __init__(self, n: int, capacity: int = 64):
        self.size = 0
        self.stalled = 0
        self.slot_of = np.full(n, -1, dtype=np.int64)
        self._alloc(capacity)

    def _alloc(self, capacity: int) -> None:
        old = {f: getattr(self, "_" + f, None) for f in self.FIELDS}
        self._job = np.zeros(capacity, dtype=np.int64)
        self._note = np.zeros(capacity, dtype=bool)
        for f in ("rate", "resume", "remaining", "least", "held"):
            setattr(self, "_" + f, np.zeros(capacity))
        for f, a in old.items():
            if a is not None:
                getattr(self, "_" + f)[:self.size] = a[:self.size]

    # the live slots of each field (views: writes go to the table)
    job = property(lambda self: self._job[:self.size])
    rate = property(lambda self: self._rate[:self.size])
    resume = property(lambda self: self._resume[:self.size])
    remaining = property(lambda self: self._remaining[:self.size])
    least = property(lambda self: self._least[:self.size])
    held = property(lambda self: self._held[:self.size])
    note = property(lambda self: self._note[:self.size])

    def put(self, j: int, rate: float, resume: float, remaining: float, iterations: float, held: float, note: bool) -> None:
        """Job j's values: in its slot if it runs, else in a new slot."""
        s = int(self.slot_of[j])
        if s >= 0:
            self.stalled -= self._rate[s] == 0
        else:
            if self.size == self._job.size:
                self._alloc(2 * self._job.size)
            s = self.size
            self.size += 1
            self.slot_of[j] = s
            self._job[s] = j
        self._rate[s], self._resume[s], self._remaining[s] = rate, resume, remaining
        self._least[s], self._held[s], self._note[s] = 1e-12 * iterations, held, note
        self.stalled += rate == 0

    def drop(self, j: int) -> None:
        """Job j no longer runs: the last slot moves into its slot."""
        s = int(self.slot_of[j])
        self.stalled -= self._rate[s] == 0
        last = self.size - 1
        if s != last:
            for f in self.FIELDS:
                a = getattr(self, "_" + f)
                a[s] = a[last]
            self.slot_of[self._job[s]] = s
        self.slot_of[j] = -1
        self.size = last

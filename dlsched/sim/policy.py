"""The one interface between the simulator and a scheduler (STYLE.md practice 12).

A policy is called at every event (arrivals, completions, a re-decision it asked for, and every
slot boundary if it is slotted) with a read-only :class:`ClusterState` and the events since its
last call, and answers with the placements of the jobs that should run until the next call:

    class MyPolicy:
        name = "mine"
        slot_seconds = None                    # or a slot length: called at every boundary too
        def reset(self, ctx: PolicyContext) -> None: ...
        def schedule(self, state: ClusterState, events: Sequence[Event]) -> Decision | dict[int, Placement]: ...

Jobs absent from the answer do not run (queued or preempted); a job whose placement changes pays
the context's ``restart_seconds`` (Optimus and DL2 charge a rescaling cost). The engine rejects,
naming the policy and the time, an answer that over-commits a server or names an unknown,
unarrived or finished job.

A :class:`Placer` (the shared ones are in :mod:`dlsched.sim.placement`) puts sized jobs on servers.
Admission and sizing are not separate parts: FIFO sizes its queue only as far as the head places,
and DRF grants a job its next bundle only if the bundle places (Blox's split would tie them back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace


@dataclass(frozen=True)
class Placement:
    """Where a job runs: ``workers[s]`` workers and ``ps[s]`` PSs on server s (only non-zero entries).

    A placement is a value: its mappings are not changed after it is made (the counts below are
    computed once; policies compare sizes of every job at every event).
    """

    workers: Mapping[int, int]
    ps: Mapping[int, int] = field(default_factory=dict)

    @cached_property
    def n_workers(self) -> int:
        return int(sum(self.workers.values()))

    @cached_property
    def n_ps(self) -> int:
        return int(sum(self.ps.values()))

    @cached_property
    def servers(self) -> frozenset[int]:
        return frozenset(s for s, k in self.workers.items() if k) | frozenset(s for s, k in self.ps.items() if k)


@dataclass(frozen=True)
class Event:
    """``arrival`` / ``completion`` of ``job`` (a trace index), or a ``timer`` (requested or slot)."""

    time: float
    kind: Literal["arrival", "completion", "timer"]
    job: int | None = None


@dataclass
class Decision:
    """A policy's answer: the placements to run, and optionally when to be called again at the latest."""

    placements: dict[int, Placement]
    next_call: float | None = None


@dataclass
class Observations:
    """What a job's own training reports, as a real scheduler would see it (Optimus fits these, §5).

    ``loss`` rows are (step, observed loss); ``speed`` rows are (PSs, workers, iterations/s)
    measured while the job ran with that allocation.
    """

    loss: list[tuple[float, float]] = field(default_factory=list)
    speed: list[tuple[int, int, float]] = field(default_factory=list)


@dataclass(frozen=True)
class PolicyContext:
    """What a policy is told once, before the first call.

    ``speed`` is the simulator's speed source: a policy that assumes a known performance model
    (SMD, heterogeneous placement) may query it; one that must learn (Optimus) uses
    :class:`Observations` instead. ``future`` is the whole trace, given only to offline
    references (policies with ``offline = True``); online policies see jobs as they arrive.
    """

    cluster: Cluster
    speed: "SpeedSourceLike"
    seed: int = 0
    restart_seconds: float = 0.0
    future: Trace | None = None


class SpeedSourceLike(Protocol):
    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        """Iterations per second of ``job`` running with ``placement`` (0 if it cannot progress)."""
        ...


@dataclass
class ClusterState:
    """The cluster as the policy sees it at ``time``. Arrays are indexed by trace index j = 0..n-1.

    ``demand_w[j]``, ``demand_p[j]`` are a worker's and a PS's demand in the cluster's resource
    order; ``free[s]`` the capacity not held by the current ``allocation``. ``remaining[j]`` is the
    true remaining iterations: an oracle that size-based baselines (SRTF) are defined with; learning
    policies should use ``observations`` instead. ``attained[j]`` is GPU-seconds received so far.
    ``running`` (sorted trace indices) and ``sizes`` (job -> (workers, PSs)) restate the
    allocation's keys and sizes, kept up to date by the engine at the cost of the jobs that change,
    so that a policy need not read every placement at every event; None where the state was built
    without them (then derive them from ``allocation``).
    """

    time: float
    cluster: Cluster
    jobs: Sequence[Job]
    active: np.ndarray
    arrival: np.ndarray
    done: np.ndarray
    remaining: np.ndarray
    attained: np.ndarray
    demand_w: np.ndarray
    demand_p: np.ndarray
    allocation: Mapping[int, Placement]
    free: np.ndarray
    observations: Mapping[int, Observations]
    running: np.ndarray | None = None
    sizes: Mapping[int, tuple[int, int]] | None = None


@runtime_checkable
class Policy(Protocol):
    name: str
    slot_seconds: float | None

    def reset(self, ctx: PolicyContext) -> None: ...

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> "Decision | dict[int, Placement]": ...


class Placer(Protocol):
    def place(self, state: ClusterState, sizes: Mapping[int, tuple[int, int]]) -> dict[int, Placement]:
        """Servers for each sized job; a job that cannot be placed is left out (it waits)."""
        ...

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

A policy whose decisions mostly keep the running jobs may answer with only what changes: it
derives from :class:`ChangePolicy` and defines ``changes(state, events) -> Changes`` (the jobs it
places: started, resized or moved; the jobs it stops). The engine then calls ``changes`` instead
of ``schedule`` and checks, places and books only those jobs, so an event costs the jobs that
change rather than the jobs that run. ``schedule`` stays the whole allocation
(:meth:`Changes.applied`), for the callers that read a decision as one (a slotted wrapper, a
teacher's targets, an audit).

A :class:`Placer` (the shared ones are in :mod:`dlsched.sim.placement`) puts sized jobs on servers.
Admission and sizing are not separate parts: FIFO sizes its queue only as far as the head places,
and DRF grants a job its next bundle only if the bundle places (Blox's split would tie them back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Literal, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace


@dataclass(frozen=True)
class Placement:
    """Where a job runs: ``workers[s]`` workers and ``ps[s]`` PSs on server s (only non-zero entries).

    ``partner``: the job (trace index) this one shares its GPUs with, or None (the default: the job
    has its GPUs to itself). A packed lease is two placements, one for each job, with the same
    workers (servers and counts) and each naming the other as partner; the two run side by side on
    those GPUs, each at its rate in the pair (the speed source's ``pair_rates``), and the GPUs count
    once (docs/simulator.md, "Co-location").

    A placement is a value: its mappings are not changed after it is made (the counts below are
    computed once; policies compare sizes of every job at every event).
    """

    workers: Mapping[int, int]
    ps: Mapping[int, int] = field(default_factory=dict)
    partner: int | None = None

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
class Changes:
    """A policy's answer as changes to the current allocation ``A`` (the engine's, ``state.allocation``).

    ``place``: a placement for each job that starts, or runs on with another placement (an equal
    one keeps the job where it is, without a restart); ``stop``: running jobs that stop (queued or
    preempted). Every other running job keeps its placement. The allocation from now on is
    ``applied(A)``: A without the stopped jobs, then ``place`` over it (a job in both is placed).
    """

    place: dict[int, Placement] = field(default_factory=dict)
    stop: Sequence[int] = ()
    next_call: float | None = None

    def applied(self, allocation: Mapping[int, Placement]) -> dict[int, Placement]:
        """The whole allocation these changes make of ``allocation`` (kept jobs in its order, then
        the jobs placed anew, in the order of ``place``)."""
        # a mapping proxy copies its dict at C speed; dict(proxy) goes key by key
        out = allocation.copy() if isinstance(allocation, (dict, MappingProxyType)) else dict(allocation)
        for j in self.stop:
            out.pop(j, None)
        out.update(self.place)
        return out


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
    """``rate`` for a job alone; a source that knows how jobs share GPUs (space sharing) also has
    ``pair_rates(job, other, placement, cluster) -> (rate of job, rate of other)``, both on the same
    GPUs, (0, 0) where the two cannot share."""

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


class ChangePolicy:
    """A policy that answers with :class:`Changes` (``changes``); its ``schedule`` is derived.

    ``changes(state, events)`` returns a :class:`Changes`, or, where it is simpler, the whole
    allocation as ``schedule`` would (a dict or a :class:`Decision`). The engine calls
    ``changes`` in place of ``schedule`` only while ``schedule`` is this one: a subclass that
    overrides ``schedule`` is called through it.
    """

    def changes(self, state: ClusterState, events: Sequence[Event]) -> "Changes | Decision | dict[int, Placement]":
        raise NotImplementedError

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> "Decision | dict[int, Placement]":
        """The whole allocation: ``changes`` applied to ``state.allocation``."""
        answer = self.changes(state, events)
        if not isinstance(answer, Changes):
            return answer
        out = answer.applied(state.allocation)
        return out if answer.next_call is None else Decision(out, answer.next_call)


def answers_changes(policy) -> bool:
    """Whether the engine calls ``policy.changes`` rather than ``policy.schedule`` (see :class:`ChangePolicy`)."""
    return getattr(type(policy), "schedule", None) is ChangePolicy.schedule


class Placer(Protocol):
    def place(self, state: ClusterState, sizes: Mapping[int, tuple[int, int]]) -> dict[int, Placement]:
        """Servers for each sized job; a job that cannot be placed is left out (it waits)."""
        ...

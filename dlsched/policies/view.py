r"""The SMD view of the simulator's state, on which SMD and the greedy family decide (MODELS.md §2.1).

* :func:`instance_view` turns a generic trace into an :class:`SMDInstance` whose :math:`\tau_j(w, p)`
  is read from the simulator's speed source (:class:`SpeedView`): aggregate capacity, ω_j = weight.
* :class:`AllocationPolicy` runs an ``allocate(inst, active) -> (n, 2)`` rule on that view (or on an
  SMD instance's own jobs, :func:`dlsched.policies.smd.to_trace`) with the remaining iterations of
  the moment, and places the sizes with a shared placer (first fit by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dlsched.arguments import checked
from dlsched.instance.cluster import Cluster
from dlsched.instance.smd import SMDInstance
from dlsched.instance.workload import Job
from dlsched.policies.optimus import admit_in_order
from dlsched.sim.placement import PlacerName, make_placer
from dlsched.solvers.anytime import placeable_prefix
from dlsched.sim.speed import rate_key
from dlsched.sim.policy import ClusterState, Placement, PolicyContext


@dataclass(eq=False)
class SpeedView(SMDInstance):
    """An SMD instance whose :math:`\\tau_j(w, p)` is read from a speed source: job j of ``trace_jobs``
    with w workers and p PSs on one pooled server of ``cluster``."""

    trace_jobs: tuple[Job, ...] = ()
    cluster: Cluster | None = None
    speed: Any = None

    def tau(self, j, w, p):
        job = self.trace_jobs[j]
        w, p = np.broadcast_arrays(np.asarray(w), np.asarray(p))
        ps = job.uses_ps          # an all-reduce job is modelled with P_j = 1 PS that does not exist
        out = np.array([1.0 / max(self.speed.rate(job, Placement({0: int(a)}, {0: int(b)} if b and ps else {}), self.cluster), 1e-300)
                        for a, b in zip(w.ravel().tolist(), p.ravel().tolist())]).reshape(w.shape)
        return out if out.ndim else float(out)

    def __post_init__(self) -> None:
        super().__post_init__()
        # computed here, on the view, so that the re-plans' copies (with_remaining) share it: computed
        # on each copy, it was a pass over every job of the trace at every decision
        _ = self.min_workers, self.kinds

    @cached_property
    def kinds(self) -> np.ndarray:
        """Per job, its kind: jobs of one kind have the same τ grid and configurations (the same
        :func:`~dlsched.sim.speed.rate_key`, demands and size limits), so that what is read of a job's τ
        is read once per kind (a first decision over 2,000 of DL2's jobs read 2,000 grids of 256 rates,
        1.7 s, for 8 kinds). A job whose speed source gives no key is a kind of its own."""
        codes: dict = {}
        code = np.array([-1 if (k := rate_key(self.speed, job)) is None else codes.setdefault(k, len(codes))
                         for job in self.trace_jobs], dtype=np.int64).reshape(-1)
        own = code < 0
        code[own] = len(codes) + np.flatnonzero(own)
        rows = np.column_stack([code, np.asarray(self.d, float).reshape(code.size, -1),
                                np.asarray(self.e, float).reshape(code.size, -1), self.min_workers,
                                self.max_workers, self.max_ps])
        return np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1) if code.size else code

    @cached_property
    def min_workers(self) -> np.ndarray:
        # a job of fixed size (min_workers = max_workers, gang-scheduled) has no smaller configuration
        return np.array([job.min_workers for job in self.trace_jobs], dtype=np.int64)

    def _config_key(self, j: int) -> tuple:
        return ("kind", int(self.kinds[j]))


def instance_view(jobs, cluster: Cluster, speed, slot_seconds: float = 1200.0) -> SMDInstance:
    """The SMD view of a generic trace on ``cluster``: aggregate capacity, τ from ``speed``, ω_j = weight,
    arrivals in slots of ``slot_seconds``.

    A job without PSs (all-reduce) is given ``P_j = 1`` with no PS demand, so every configuration
    is (w, 1) and the speed source sees no PS.
    """
    res = tuple(cluster.resources)
    d = np.array([cluster.vector(j.worker_demand) for j in jobs])
    e = np.array([cluster.vector(j.ps_demand) for j in jobs])
    n = len(jobs)
    return SpeedView(name="trace", resources=res, server_cap=cluster.capacity, server_names=tuple(cluster.names),
                     profiles={j.job_type: None for j in jobs}, job_names=tuple(j.name for j in jobs),
                     job_type=tuple(j.job_type for j in jobs), batch=np.ones(n),
                     iterations=np.array([j.iterations for j in jobs]), weight=np.array([j.weight for j in jobs]),
                     arrival=np.array([j.arrival for j in jobs]) / slot_seconds, d=d, e=e, slot_seconds=slot_seconds,
                     max_workers=np.array([j.max_workers for j in jobs]),
                     max_ps=np.array([max(j.max_ps, 1) for j in jobs]),
                     trace_jobs=tuple(jobs), cluster=cluster, speed=speed)


class AllocationPolicy:
    """Calls ``allocate(inst, active) -> (n, 2)`` on the SMD view and packs the answer (event-driven)."""

    name = "smd-allocation"
    slot_seconds = None

    @checked
    def __init__(self, inst: SMDInstance | None = None, placer: PlacerName = "first_fit"):
        self.inst = inst
        self.placer = make_placer(placer)

    def reset(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.view = self.inst
        self.index = None
        self._limits = None           # (jobs, min workers, max workers, uses PSs) of the trace

    def allocate(self, inst: SMDInstance, active: np.ndarray) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def limits(self, state: ClusterState) -> tuple:
        """(the trace's jobs, each job's fewest and most workers, whether it uses PSs), kept per trace."""
        if self._limits is None or self._limits[0] is not state.jobs:
            jobs = state.jobs
            self._limits = (jobs, np.array([j.min_workers for j in jobs]), np.array([j.max_workers for j in jobs]),
                            np.array([j.uses_ps for j in jobs], dtype=bool))
        return self._limits

    def held_sizes(self, state: ClusterState) -> dict[int, tuple[int, int]]:
        """The running jobs' sizes as the view's (w, p), by trace index: a job without PSs has p = 1, the PS the view
        gives it that does not exist (:func:`instance_view`), so that an answer of the view that keeps it reads as
        unchanged."""
        _, _, _, uses_ps = self.limits(state)
        return {j: (pl.n_workers, pl.n_ps if uses_ps[j] else 1) for j, pl in state.allocation.items()}

    def held_previous(self, n_jobs: int) -> np.ndarray:
        """The last answer's sizes (``n_jobs`` x 2, by view index) that a first budgeted decision on a state with
        running jobs starts from (``fluid``'s, ``smd``'s): theirs, as :meth:`held_sizes` gave them into
        ``running_sizes``, and 0 for the others. Without them an answer cut to what its placement can place
        counts the running jobs as waiting and stops them (1,716 of 2,000 DL2 jobs in fluid's, 198 of 199 in smd's)."""
        run = np.fromiter(self.running_sizes, dtype=np.int64)
        previous = np.zeros((n_jobs, 2), dtype=np.int64)
        previous[self.index[run]] = np.array(list(self.running_sizes.values()), dtype=np.int64)
        return previous

    def kept_start(self, state: ClusterState, time_left: float, place_rate: float) -> tuple[dict[int, Placement], np.ndarray, np.ndarray]:
        r"""The cheapest sound answer of a budgeted decision whose view alone would not fit its budget
        (:meth:`dlsched.policies.fluid.FluidPolicy.schedule`, :meth:`dlsched.policies.smd.SMDPolicy.schedule`):
        every running job where it is, and the waiting jobs at their first size (one PS, the fewest workers;
        no PS for an all-reduce job), shortest first at that size (:math:`R_j \tau_j(\underline w_j, 1)`, then
        index), while they fit what the running ones leave of the cluster's capacity, cut to the most whose
        placement (``place_rate`` seconds a job) is expected within ``time_left`` seconds, at least one
        (:func:`~dlsched.solvers.anytime.placeable_prefix`). Read from the state's arrays and the view's
        per-kind τ: no view of every active job is built. Returns (the placements, the jobs started (trace indices),
        their workers)."""
        active = np.asarray(state.active, dtype=np.int64)
        running = (np.asarray(state.running, dtype=np.int64) if state.running is not None
                   else np.fromiter(state.allocation, dtype=np.int64))
        waiting = active[~np.isin(active, running)]
        if not waiting.size:
            return dict(state.allocation), waiting, waiting
        _, minw, _, uses_ps = self.limits(state)
        v = self.index[waiting]
        w0 = minw[waiting]
        p0 = uses_ps[waiting].astype(np.int64)
        need = w0[:, None] * np.asarray(state.demand_w, float)[waiting] + p0[:, None] * np.asarray(state.demand_p, float)[waiting]
        first = np.asarray(state.remaining, float)[waiting] * self.view.tau_least_of(v)
        order = np.lexsort((waiting, first))
        started, _ = admit_in_order(need, np.isfinite(first), order, np.asarray(state.free, float).sum(axis=0))
        k = max(placeable_prefix(lambda k: place_rate * k, started.size, time_left), min(started.size, 1))
        go = started[:k]
        return self.placer.add(state, dict(zip(waiting[go].tolist(), zip(w0[go].tolist(), p0[go].tolist())))), waiting[go], w0[go]

    def kept_start_answer(self, state: ClusterState) -> dict[int, Placement]:
        """:meth:`kept_start` as the answer of a budgeted decision whose floor does not fit (``fluid``'s, ``smd``'s:
        a policy with a budget ``clock``, a :class:`~dlsched.policies.budget.PlaceRate` ``place`` and the last
        answer's sizes ``previous``): its placement measured into the rate as any other's (its own reading of the
        state in it), the sizes it started recorded in the last answer's, and the decision counted as uncertified
        (:meth:`~dlsched.policies.budget.DecisionRecord.record_uncertified`)."""
        out, started, workers = self.kept_start(state, self.clock.remaining() - self.clock.margin, self.place.rate)
        # no gap: its objective and any bound of the policy's model are read from the view of every active job (smd's
        # core, fluid's LP jobs), whose predicted cost is why this answer was given
        self.decision_record.record_uncertified()
        if started.size:
            self.place.measured(self.clock.elapsed(), started.size)
        self.previous = self.previous.copy()
        self.previous[self.index[started]] = np.stack([workers, np.ones_like(workers)], axis=1)
        self.last_answer = "kept start, no view"
        return out

    def schedule(self, state: ClusterState, events) -> dict[int, Placement]:
        if self.index is None:
            if self.view is None:
                self.view = instance_view(state.jobs, self.ctx.cluster, self.ctx.speed)
                self.index = np.arange(len(state.jobs))
            else:
                self.index = np.array([int(j.meta["index"]) for j in state.jobs], dtype=np.int64)
        active = np.asarray(state.active, dtype=np.int64)
        if not active.size:
            return {}
        # remaining iterations on the view; jobs not yet arrived keep their full size (unused by the decision)
        rem = self.view.iterations.astype(float).copy()
        rem[self.index[state.done]] = 0.0
        rem[self.index[active]] = state.remaining[active]
        alloc = np.asarray(self.allocate(self.view.with_remaining(rem), self.index[active]), dtype=np.int64)
        _, minw, maxw, uses_ps = self.limits(state)
        # a fixed-size job runs with its size or waits; an all-reduce job has no PS
        w, p = alloc[self.index[active], 0], alloc[self.index[active], 1]
        ok = (minw[active] <= w) & (w <= maxw[active])
        p = np.where(uses_ps[active], p, 0)
        sizes = {j: (a, b) for j, a, b in zip(active[ok].tolist(), w[ok].tolist(), p[ok].tolist())}
        return self.placer.place(state, sizes)

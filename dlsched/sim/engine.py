"""The event-driven cluster simulator: mechanism only (STYLE.md practice 12, docs/simulator.md).

Time jumps from event to event: the next arrival, the earliest completion at the current rates,
or a time the caller asks for (a policy's ``next_call`` or a slot boundary). Between events every
running job j advances at r_j = ``speed.rate(job, placement, cluster)`` iterations per second,
except during the ``restart_seconds`` that follow a change of its placement (start, resume,
rescale, move), when it holds its resources and makes no progress. Two jobs in a packed lease
(placements naming each other as ``partner``, docs/simulator.md "Co-location") share their GPUs,
each at its rate in the pair (``speed.pair_rates``). A job completes at the exact
time its remaining iterations reach zero at its current rate, wherever that falls in a slot:

    t_complete(j) = max(t, t_resume(j)) + remaining(j) / r_j

:class:`Simulation` is the stepwise engine (``state`` / ``apply`` / ``advance``) that
:func:`simulate` and the gymnasium environment drive; it validates every decision and raises
:class:`PolicyError`, naming the policy and the time, for one it cannot carry out.

Cost per event: one numpy pass over the running jobs (their advance, on a dense table); checks,
placement and bookkeeping at the cost of the jobs whose placement changes when the policy answers
with :class:`Changes` (a whole allocation costs a C-level comparison with the current one). No
Python loop over all n jobs of the trace happens after construction.
"""

from __future__ import annotations

import contextlib
import gc
import math
import sys
import time as _time
from types import MappingProxyType
from typing import Mapping

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from dlsched.console import EtaColumn, clock, eta
from dlsched.errors import DlschedError, InputError

try:
    import resource                 # Unix only: peak memory
except ImportError:                 # pragma: no cover
    resource = None
from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Trace
from dlsched.sim.metrics import SimResult
from dlsched.sim.placement import EPS, EmptyCluster, task_slots, usage
from dlsched.sim.policy import (Changes, ClusterState, Decision, Event, Observations, Placement, PolicyContext,
                                SpeedSourceLike, answers_changes)
from dlsched.sim.running import RunningTable
from dlsched.sim.slots import next_boundary


class PolicyError(DlschedError, RuntimeError):
    """A policy raised, or answered with a decision the engine cannot carry out."""

    def __init__(self, policy: str, time: float, message: str):
        self.policy = policy
        self.time = time
        super().__init__(f"policy '{policy}' at t={time:.6g}s: {message}")


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def unschedulable(cluster: Cluster, trace: Trace, demand_w: np.ndarray, demand_p: np.ndarray) -> dict[int, str]:
    """Jobs that cannot run even alone on the empty cluster, with the reason.

    A job needs ``min_workers`` workers, plus one PS if it uses PSs (MODELS.md §1). It is
    unschedulable if that exceeds the cluster's total in some resource, or if no packing of those
    tasks on the servers exists (tasks are indivisible). Jobs are grouped by demand so the check
    costs one numpy pass per distinct job shape.
    """
    jobs = trace.jobs
    minw = np.array([j.min_workers for j in jobs], dtype=float)
    ps = np.array([1.0 if j.uses_ps else 0.0 for j in jobs])
    shape = np.hstack([demand_w, demand_p, minw[:, None], ps[:, None]])
    uniq, inverse = np.unique(shape, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    cap, total, R = cluster.capacity, cluster.total(), demand_w.shape[1]
    reasons: dict[int, str] = {}
    for u, row in enumerate(uniq):
        dw, dp, k, has_ps = row[:R], row[R:2 * R], int(row[2 * R]), bool(row[2 * R + 1])
        need = k * dw + (dp if has_ps else 0.0)
        over = np.flatnonzero(need > total + EPS)
        reason = None
        if over.size:
            r = over[0]
            reason = (f"needs {need[r]:g} {cluster.resources[r]} ({k} workers" + (" + 1 PS" if has_ps else "")
                      + f") but the whole cluster has {total[r]:g}")
        else:
            slots = task_slots(cap, dw)
            if has_ps:
                hosts = task_slots(cap, dp) >= 1
                best = (slots.sum() - slots + task_slots(np.maximum(cap - dp, 0), dw))[hosts].max() if hosts.any() else -1
            else:
                best = slots.sum()
            if best < 0:
                reason = "its PS fits on no server"
            elif best < k:
                reason = f"at most {int(best)} of its {k} workers" + (" (with its PS)" if has_ps else "") + \
                    " fit on the empty cluster"
        if reason:
            for j in np.flatnonzero(inverse == u):
                reasons[int(j)] = reason
    return reasons


class Simulation:
    """A stepwise replay of ``trace`` on ``cluster``: ``state()``, ``apply(decision)``, ``advance(until)``.

    The caller alternates: read :meth:`state`, :meth:`apply` a policy's decision, :meth:`advance`
    to the next event. ``max_time`` caps simulated time (``status`` becomes ``"max_time"``).
    ``seed`` drives the noise of the observed losses.
    """

    def __init__(self, trace: Trace, cluster: Cluster, speed: SpeedSourceLike, *, seed: int = 0,
                 restart_seconds: float = 0.0, max_time: float | None = None):
        if not (math.isfinite(restart_seconds) and restart_seconds >= 0):
            raise InputError("<argument>", "restart_seconds", "a finite number of seconds >= 0", restart_seconds)
        if max_time is not None and not (max_time > 0):
            raise InputError("<argument>", "max_time", "a simulated time > 0", max_time)
        self.trace, self.cluster, self.speed = trace, cluster, speed
        self.seed, self.restart_seconds, self.max_time = seed, float(restart_seconds), max_time
        self.jobs = jobs = trace.jobs
        n, R = len(jobs), len(cluster.resources)
        self.n = n
        self.arrival = np.array([j.arrival for j in jobs], dtype=float)
        self.iterations = np.array([j.iterations for j in jobs], dtype=float)
        self.remaining = self.iterations.copy()
        self.attained = np.zeros(n)
        self.finished = np.zeros(n, dtype=bool)   # completed (ClusterState.done)
        self.demand_w = np.array([cluster.vector(j.worker_demand, f"{trace.source}: jobs[{i}].worker_demand")
                                  for i, j in enumerate(jobs)]).reshape(n, R)
        self.demand_p = np.array([cluster.vector(j.ps_demand, f"{trace.source}: jobs[{i}].ps_demand")
                                  for i, j in enumerate(jobs)]).reshape(n, R)
        self.first_start = np.full(n, np.nan)
        self.completion = np.full(n, np.nan)
        self.unschedulable = unschedulable(cluster, trace, self.demand_w, self.demand_p)
        self.status = "running"
        self.time = 0.0
        self._gpu = cluster.resources.index("gpu") if "gpu" in cluster.resources else None
        self._next = 0                                # trace index of the next arrival
        self._active = np.empty(0, dtype=np.int64)    # arrived, unfinished, schedulable; sorted
        self._alloc: dict[int, Placement] = {}
        self._sizes: dict[int, tuple[int, int]] = {}   # (workers, PSs) of each job in _alloc
        self._usage: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._used = np.zeros_like(cluster.capacity)
        self._cap_limit = cluster.capacity + EPS * np.maximum(1.0, cluster.capacity)   # over-commitment beyond float slack
        self._rate_of = np.zeros(n)
        self._resume_of = np.zeros(n)                 # time from which a job's current placement progresses
        self._held_gpu = np.zeros(n)                  # GPUs a job holds now
        self._pair: dict[int, int] = {}               # running jobs in a packed lease -> their partner
        self._run = np.empty(0, dtype=np.int64)      # the running jobs, sorted
        self._table = RunningTable(n)                 # the running jobs' quantities, one slot each
        self._resume_max = 0.0                        # the latest resume time given: none later restarts
        self._moved: set[int] = set()                 # progressed since the last state()
        self._sampled = np.zeros(n, dtype=bool)       # speed of the current placement already reported
        self._has_curve = np.array([j.convergence is not None for j in jobs], dtype=bool)
        self._obs: dict[int, Observations] = {}
        self._rng = np.random.default_rng(seed)
        self._seg: list[tuple[float, float]] = []     # (start, end) of each interval between events
        self._seg_used: list[np.ndarray] = []         # total use per resource in that interval
        self.engine_seconds = 0.0
        self.n_events = 0

    # -- what the policy sees ------------------------------------------------------------------
    @property
    def done_all(self) -> bool:
        return self._next >= self.n and self._active.size == 0

    @property
    def done(self) -> bool:
        """All jobs finished (or unschedulable), or ``max_time`` reached."""
        return self.status != "running" or self.done_all

    @property
    def running(self) -> np.ndarray:
        """Trace indices of the jobs holding resources now."""
        return self._run

    @property
    def progressing(self) -> int:
        """How many running jobs have a positive rate (will progress, after any restart)."""
        return int((self._table.rate > 0).sum())

    @property
    def active(self) -> np.ndarray:
        return self._active

    @property
    def pending_arrivals(self) -> int:
        return self.n - self._next

    def state(self) -> ClusterState:
        """The read-only view a policy gets now; first records the observations since the last call.

        Arrays and mappings are views of the engine's own (not writeable) and are valid during the
        call: the engine changes them in place afterwards (copy what must outlive the call).
        """
        t0 = _time.perf_counter()
        self._observe()
        # _active and _run are replaced, never changed in place: a view of each is the state's own.
        # The views are made at each call: kept, a copy of the engine (copy.deepcopy, as the RL
        # environment forks episodes) would keep views of the original's arrays
        st = ClusterState(
            time=self.time, cluster=self.cluster, jobs=self.jobs, active=_read_only(self._active),
            arrival=_read_only(self.arrival), done=_read_only(self.finished), remaining=_read_only(self.remaining),
            attained=_read_only(self.attained), demand_w=_read_only(self.demand_w), demand_p=_read_only(self.demand_p),
            allocation=MappingProxyType(self._alloc), free=self.cluster.capacity - self._used,
            observations=MappingProxyType(self._obs), running=_read_only(self._run),
            sizes=MappingProxyType(self._sizes))
        self.engine_seconds += _time.perf_counter() - t0
        return st

    def _observe(self) -> None:
        """Noisy (step, loss) for jobs that progressed (relative noise ``convergence.noise``, seeded);
        one (PSs, workers, rate) sample per placement a job progressed with."""
        for j in sorted(self._moved):
            job = self.jobs[j]
            pl = self._alloc.get(j)
            if job.convergence is None and (pl is None or self._sampled[j]):
                continue
            obs = self._obs.get(j)
            if obs is None:
                obs = self._obs[j] = Observations()
            if job.convergence is not None:
                step = float(self.iterations[j] - self.remaining[j])
                c = job.convergence
                obs.loss.append((step, float(c.loss(step)) * (1.0 + c.noise * self._rng.standard_normal())))
            if pl is not None and not self._sampled[j]:
                obs.speed.append((pl.n_ps, pl.n_workers, float(self._rate_of[j])))
                self._sampled[j] = True
                self._table.note[self._table.slot_of[j]] = job.convergence is not None
        self._moved.clear()

    # -- decisions -----------------------------------------------------------------------------
    def apply(self, decision: Decision | Changes | Mapping[int, Placement], policy: str = "<policy>") -> None:
        """Make ``decision`` the allocation from now on: a whole allocation (jobs absent from it hold
        nothing), or :class:`Changes` to the current one (what it does not name runs on as it is).

        Raises PolicyError for an unknown, unarrived, unschedulable or finished job, a malformed
        placement, a server that does not exist, a worker count outside [min_workers,
        max_workers], a PS job without a PS (or more than max_ps), PSs for an all-reduce job, a
        stopped job that is not running, any server and resource over-committed (a packed pair's
        GPUs counted once), or a packed lease that is not one or cannot share (:meth:`_packed_rates`);
        the allocation is then unchanged.
        """
        t0 = _time.perf_counter()
        if isinstance(decision, Changes):
            released, changed, new = self._diff_changes(decision, policy)
        else:
            placements = decision.placements if isinstance(decision, Decision) else decision
            if not isinstance(placements, Mapping):
                raise PolicyError(policy, self.time,
                                  f"expected a Decision, Changes or a dict job -> Placement, got {type(placements).__name__}")
            released, changed, new = self._diff_whole(placements, policy)
        if released or changed:
            self._commit(released, changed, new, policy)
        elif new is not None:
            self._alloc = new                      # the same jobs where they were, in the decision's order
        self.engine_seconds += _time.perf_counter() - t0

    def _diff_whole(self, placements: Mapping, policy: str) -> tuple[list[int], dict[int, Placement], dict | None]:
        """(jobs released, jobs placed anew -> placement, the new allocation or None if it is the
        current one changed in place) of a whole allocation."""
        new: dict[int, Placement] = {}
        changed: dict[int, Placement] = {}
        alloc = self._alloc
        kept = 0                                   # entries of alloc carried over as they are
        items = placements.items()
        if type(placements) is dict and alloc.items() <= items:
            # every running job kept as it is (the usual answer, e.g. dict(state.allocation) plus new
            # jobs): one C-level pass over the running jobs (identity before equality), then only the
            # new entries, in the decision's order, are checked and added to the allocation in place
            new, kept = None, len(alloc)
            items = _added(placements, alloc)
        for key, pl in items:
            if pl is not None and alloc.get(key) is pl:    # unchanged: checked when it was applied
                new[key] = pl
                kept += 1
                continue
            j = self._check_job(key, policy)
            if pl is None:
                continue
            if not isinstance(pl, Placement):
                raise PolicyError(policy, self.time, f"job {j}: expected a Placement, got {type(pl).__name__}")
            old = alloc.get(j)
            if old is pl or old == pl:
                if new is not None:
                    new[j] = old
                kept += 1
                continue
            if not pl.workers and not pl.ps:
                continue
            self._check_placement(j, pl, policy)
            if new is not None:
                new[j] = pl
            changed[j] = pl
        # most calls keep every running job where it is: then nothing is released (no second pass)
        released = [] if kept == len(alloc) else [j for j in alloc if new.get(j) is not alloc[j]]
        return released, changed, new

    def _diff_changes(self, changes: Changes, policy: str) -> tuple[list[int], dict[int, Placement], None]:
        """(jobs released, jobs placed anew -> placement, None) of :class:`Changes`: checks and
        costs the jobs it names only."""
        alloc = self._alloc
        released: list[int] = []
        for key in changes.stop:
            j = self._check_job(key, policy)
            if j not in alloc:
                raise PolicyError(policy, self.time, f"job {j} ({self.jobs[j].name}) is stopped but does not run")
            released.append(j)
        if not isinstance(changes.place, Mapping):
            raise PolicyError(policy, self.time,
                              f"Changes.place: expected a dict job -> Placement, got {type(changes.place).__name__}")
        stopped = set(released)
        changed: dict[int, Placement] = {}
        for key, pl in changes.place.items():
            j = self._check_job(key, policy)
            if not isinstance(pl, Placement):
                raise PolicyError(policy, self.time, f"job {j}: expected a Placement, got {type(pl).__name__}")
            if j in stopped:
                raise PolicyError(policy, self.time, f"job {j} ({self.jobs[j].name}) is both stopped and placed")
            old = alloc.get(j)
            if old is pl or old == pl:
                continue
            if not pl.workers and not pl.ps:
                raise PolicyError(policy, self.time, f"job {j} ({self.jobs[j].name}): an empty placement (stop it instead)")
            self._check_placement(j, pl, policy)
            if old is not None:
                released.append(j)             # moves: releases its old placement
            changed[j] = pl
        return released, changed, None

    def _commit(self, released: list[int], changed: dict[int, Placement], new: dict | None, policy: str) -> None:
        """Release ``released``, start ``changed`` (a job in both moves); ``new``: the whole allocation
        that results, or None to change the current one in place. Costs the jobs named: capacity is
        checked on the servers they touch (the others hold no more than they did)."""
        rates = {}
        packed = False
        for j, pl in changed.items():
            if pl.partner is not None:
                packed = True
                continue
            rate = self.speed.rate(self.jobs[j], pl, self.cluster)
            if not (isinstance(rate, (int, float, np.floating, np.integer)) and math.isfinite(rate) and rate >= 0):
                raise PolicyError(policy, self.time, f"the speed source gave job {j} the rate {rate!r} (expected a finite rate >= 0)")
            rates[j] = float(rate)
        if packed or (self._pair and released):
            rates.update(self._packed_rates(released, changed, new, policy))
        used = self._used
        fresh = {j: usage(pl, self.demand_w[j], self.demand_p[j]) for j, pl in changed.items()}
        held = {j: f[1][:, self._gpu].sum() if self._gpu is not None else 0.0 for j, f in fresh.items()}
        if packed and self._gpu is not None:
            # a packed pair's GPUs are booked once, on the job of the lower trace index
            for j, pl in changed.items():
                if pl.partner is not None and pl.partner < j:
                    rows = fresh[j][1].copy()
                    rows[:, self._gpu] = 0.0
                    fresh[j] = (fresh[j][0], rows)
        touched = np.unique(np.concatenate([self._usage[j][0] for j in released] + [f[0] for f in fresh.values()]))
        before = used[touched]                   # a copy: restored if the decision is refused
        for j in released:
            srv, rows = self._usage[j]
            used[srv] -= rows
        for srv, rows in fresh.values():
            used[srv] += rows
        over = used[touched] > self._cap_limit[touched]
        if over.any():
            k, r = np.argwhere(over)[0]
            s = int(touched[k])
            value = used[s, r]
            used[touched] = before
            after = new if new is not None else {**{j: pl for j, pl in self._alloc.items() if j not in released}, **changed}
            holders = sorted(j for j, pl in after.items() if s in pl.servers)
            raise PolicyError(policy, self.time,
                              f"over-commits server {self.cluster.names[s]} (index {s}) in {self.cluster.resources[r]}: "
                              f"{value:g} > capacity {self.cluster.capacity[s, r]:g} (jobs {holders[:10]})")
        alloc, sizes = self._alloc, self._sizes
        tab = self._table
        for j in released:
            del self._usage[j]
            del sizes[j]
            self._sampled[j] = False
            self._held_gpu[j] = 0.0
            self._pair.pop(j, None)
            if j not in changed:
                tab.drop(j)
        for j, pl in changed.items():
            self._rate_of[j] = rates[j]
            self._resume_of[j] = self.time + self.restart_seconds
            self._resume_max = max(self._resume_max, self._resume_of[j])
            self._usage[j] = fresh[j]
            sizes[j] = (pl.n_workers, pl.n_ps)
            self._held_gpu[j] = held[j]
            if pl.partner is not None:
                self._pair[j] = int(pl.partner)
            tab.put(j, self._rate_of[j], self._resume_of[j], self.remaining[j], self.iterations[j], self._held_gpu[j], True)
            if np.isnan(self.first_start[j]):
                self.first_start[j] = self.time
        # the running jobs: those that stop leave, those that start join (one that moves stays where it is)
        stop = [j for j in released if j not in changed]
        start = [j for j in changed if j not in alloc]
        if new is not None:
            self._alloc = new
        else:
            for j in stop:
                del alloc[j]
            alloc.update(changed)
        if stop:
            self._run = np.delete(self._run, np.searchsorted(self._run, sorted(stop)))
        if start:
            add = np.array(sorted(start), dtype=np.int64)
            self._run = np.insert(self._run, np.searchsorted(self._run, add), add)

    def _packed_rates(self, released: list[int], changed: dict[int, Placement], new: dict | None,
                      policy: str) -> dict[int, float]:
        """The rates of the changed jobs in packed leases (``pair_rates`` of the speed source: the
        entry of the lower trace index's job with the other's as its partner); raises PolicyError for
        a pair whose two placements are not the same workers naming each other, a pair the speed
        source says cannot share (a rate of 0), or a job left packed with one that stops or moves."""
        gone = set(released) - changed.keys()

        def after(i):
            if new is not None:
                return new.get(i)
            return changed.get(i) or (None if i in gone else self._alloc.get(i))

        rates = {}
        pair_rates = getattr(self.speed, "pair_rates", None)
        for j, pl in changed.items():
            p = pl.partner
            if p is None:
                continue
            name = self.jobs[j].name
            other = after(int(p)) if isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)) and p != j else None
            if other is None or other.partner != j or dict(other.workers) != dict(pl.workers):
                raise PolicyError(policy, self.time, f"job {j} ({name}) is packed with job {p!r}, which this decision does not "
                                                     f"place on the same workers packed with job {j}")
            if pair_rates is None:
                raise PolicyError(policy, self.time, f"job {j} ({name}) is packed with job {p}, but the speed source "
                                                     f"{type(self.speed).__name__} has no pair throughputs (pair_rates)")
            a, b = sorted((j, int(p)))
            ra, rb = pair_rates(self.jobs[a], self.jobs[b], pl, self.cluster)
            if not (math.isfinite(ra) and math.isfinite(rb) and ra > 0 and rb > 0):
                raise PolicyError(policy, self.time, f"jobs {a} ({self.jobs[a].name}) and {b} ({self.jobs[b].name}) cannot share "
                                                     f"their GPUs: the speed source gives the pair the rates ({ra:g}, {rb:g})")
            rates[j] = float(ra if j == a else rb)
        for j in released:
            p = self._pair.get(j)
            if p is not None and (j not in changed or changed[j].partner != p):
                other = after(p)
                if other is not None and other.partner == j:
                    raise PolicyError(policy, self.time, f"job {p} ({self.jobs[p].name}) stays packed with job {j}, "
                                                         f"which stops or moves")
        return rates

    def _alone(self, j: int) -> None:
        """Job j's partner has finished: j runs on alone on the same GPUs, books them and runs at its
        own rate from now (its placement, which still names the partner, does not change)."""
        pl = self._alloc[j]
        srv, rows = usage(pl, self.demand_w[j], self.demand_p[j])
        self._used[srv] += rows - self._usage[j][1]
        self._usage[j] = (srv, rows)
        self._rate_of[j] = float(self.speed.rate(self.jobs[j], Placement(pl.workers, pl.ps), self.cluster))
        self._sampled[j] = False
        self._table.put(j, self._rate_of[j], self._resume_of[j], self.remaining[j], self.iterations[j], self._held_gpu[j], True)

    def _check_job(self, key, policy: str) -> int:
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
            raise PolicyError(policy, self.time, f"unknown job {key!r} (jobs are trace indices 0..{self.n - 1})")
        j = int(key)
        if not 0 <= j < self.n:
            raise PolicyError(policy, self.time, f"unknown job {j} (jobs are trace indices 0..{self.n - 1})")
        name = self.jobs[j].name
        if j >= self._next:
            raise PolicyError(policy, self.time, f"job {j} ({name}) has not arrived (arrives at {self.arrival[j]:g}s)")
        if self.finished[j]:
            raise PolicyError(policy, self.time, f"job {j} ({name}) has finished")
        if j in self.unschedulable:
            raise PolicyError(policy, self.time, f"job {j} ({name}) is unschedulable: {self.unschedulable[j]}")
        return j

    def _check_placement(self, j: int, pl: Placement, policy: str) -> None:
        job = self.jobs[j]
        S = self.cluster.n_servers
        for kind, counts in (("workers", pl.workers), ("ps", pl.ps)):
            for s, k in counts.items():
                if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or not 0 <= s < S:
                    raise PolicyError(policy, self.time, f"job {j} ({job.name}): {kind} on server {s!r}, which does not exist (0..{S - 1})")
                if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 0:
                    raise PolicyError(policy, self.time, f"job {j} ({job.name}): {kind} count {k!r} on server {s} (expected an integer >= 0)")
        w, p = pl.n_workers, pl.n_ps
        if not job.min_workers <= w <= job.max_workers:
            raise PolicyError(policy, self.time, f"job {j} ({job.name}): {w} workers, outside [{job.min_workers}, {job.max_workers}]")
        if job.uses_ps and not 1 <= p <= job.max_ps:
            raise PolicyError(policy, self.time, f"job {j} ({job.name}): {p} PSs, a PS job needs 1..{job.max_ps}")
        if not job.uses_ps and p:
            raise PolicyError(policy, self.time, f"job {j} ({job.name}): {p} PSs for a job without PSs (all-reduce)")

    # -- time ----------------------------------------------------------------------------------
    def _completions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per running job (in the slots of :class:`RunningTable`): rate r_j, the time its progress
        starts (after any restart), and t_complete(j) = start + remaining / r_j (inf at rate 0)."""
        tab = self._table
        rate = tab.rate
        if self._resume_max <= self.time and not tab.stalled:
            # none restarting, none at rate 0 (the usual): the same values, in fewer passes; start None = now
            return rate, None, self.time + tab.remaining / rate
        start = np.maximum(self.time, tab.resume)
        pos = rate > 0
        return rate, start, np.where(pos, start + tab.remaining / np.where(pos, rate, 1.0), math.inf)

    def next_event_time(self, until: float | None = None, completions=None) -> float:
        """When :meth:`advance` would stop: the next arrival, completion, ``until`` or ``max_time``."""
        t = self.arrival[self._next] if self._next < self.n else math.inf
        if self._table.size:
            tc = (completions or self._completions())[2]
            t = min(t, float(tc.min()))
        if until is not None:
            t = min(t, until)
        if self.max_time is not None:
            t = min(t, self.max_time)
        return max(t, self.time)

    def advance(self, until: float | None = None) -> list[Event]:
        """Run to the next event (or ``until``) and return what happened there.

        Returns [] and leaves time unchanged when nothing can ever happen (no job progresses, no
        arrival is pending, no ``until``): the caller decides whether that is a stall. The
        arrival of an unschedulable job is no event: time runs on past it.
        """
        while True:
            before = (self.time, self._next)
            events = self._step(until)
            if events or self.done or (self.time, self._next) == before:
                return events

    def _step(self, until: float | None) -> list[Event]:
        t0 = _time.perf_counter()
        if self.done:
            return []
        tab = self._table
        comp = self._completions() if tab.size else None
        t_next = self.next_event_time(until, comp)
        if math.isinf(t_next):
            self.engine_seconds += _time.perf_counter() - t0
            return []
        dt = t_next - self.time
        finished = np.empty(0, dtype=np.int64)
        if tab.size:
            # every running job advances (eagerly: the same arithmetic at every event keeps runs
            # bit for bit), on the table's contiguous slots; the trace-long arrays get one scatter
            rate, start, tc = comp
            run = tab.job
            eff = dt if start is None else np.maximum(t_next - start, 0.0)
            rem = tab.remaining - rate * eff
            # exact completion: the job whose completion time defines t_next (and any tie) ends now
            tol = 1e-9 * max(1.0, abs(t_next))
            fin = (tc <= t_next + tol) | (rem <= tab.least)
            if fin.any():
                rem[fin] = 0.0
            np.maximum(rem, 0.0, out=tab.remaining)
            self.remaining[run] = tab.remaining
            self.attained[run] += tab.held * dt
            # only jobs with something to report: a loss curve, or a placement not yet sampled
            progressed = tab.note if start is None else (eff > 0) & tab.note
            if start is not None or dt > 0:
                self._moved.update(run[progressed].tolist())
            finished = np.sort(run[fin])
        if dt > 0:
            self._seg.append((self.time, t_next))
            self._seg_used.append(self._used.sum(axis=0))
        self.time = t_next
        events: list[Event] = []
        if finished.size:
            self.finished[finished] = True
            self.completion[finished] = t_next
            for j in finished.tolist():
                srv, rows = self._usage.pop(j)
                self._used[srv] -= rows
                del self._alloc[j]
                del self._sizes[j]
                tab.drop(j)
                self._held_gpu[j] = 0.0
                self._sampled[j] = False
                events.append(Event(t_next, "completion", j))
            if self._pair:
                for j in finished.tolist():
                    p = self._pair.pop(j, None)
                    if p is not None and self._pair.pop(p, None) is not None and not self.finished[p]:
                        self._alone(p)
            self._run = np.delete(self._run, np.searchsorted(self._run, finished))
            self._active = np.delete(self._active, np.searchsorted(self._active, finished))
        first = self._next
        while self._next < self.n and self.arrival[self._next] <= t_next:
            self._next += 1
        if self._next > first:
            arrived = np.arange(first, self._next)
            ok = np.array([j not in self.unschedulable for j in arrived.tolist()], dtype=bool)
            self._active = np.concatenate([self._active, arrived[ok]])
            events += [Event(t_next, "arrival", int(j)) for j in arrived[ok]]
        if until is not None and t_next >= until:
            events.append(Event(t_next, "timer"))
        if self.max_time is not None and t_next >= self.max_time and not self.done_all:
            self.status = "max_time"
        self.n_events += 1
        self.engine_seconds += _time.perf_counter() - t0
        return events

    # -- outcome -------------------------------------------------------------------------------
    def isolated_jct(self) -> np.ndarray:
        """Each job's JCT alone on the empty cluster, at its largest size that fits (consolidated),
        on its fastest GPU type.

        The reference of the slowdown JCT / isolated JCT that fairness is measured on; NaN for
        unschedulable jobs or a zero rate. On a cluster of several GPU types the size is placed on
        the servers of each type alone and on the whole cluster, and the fastest of those that fit
        is the job's time alone: the first server's type is not every job's best (Gavel's
        Recommendation runs faster on P100 than on V100), and a reference slower than the job's
        best makes a job that runs on its best type look faster than alone.
        """
        out = np.full(self.n, np.nan)
        types = sorted(set(self.cluster.gpu_type))
        views = [EmptyCluster(self.cluster.capacity)]
        if len(types) > 1:
            views += [EmptyCluster(np.where(np.asarray(self.cluster.gpu_type)[:, None] == t, self.cluster.capacity, 0.0))
                      for t in types]
        for j, job in enumerate(self.jobs):
            if j in self.unschedulable:
                continue
            p = job.max_ps if job.uses_ps else 0
            for w in range(job.max_workers, job.min_workers - 1, -1):
                fits = [pl for pl in (self._placed_alone(v, j, w, p) for v in views) if pl is not None]
                if fits:
                    rate = max(self.speed.rate(job, pl, self.cluster) for pl in fits)
                    if rate > 0:
                        out[j] = self.iterations[j] / rate
                    break
        return out

    def _placed_alone(self, empty: EmptyCluster, j: int, w: int, p: int) -> Placement | None:
        """Job j's w workers and p PSs placed by ``empty``, with one PS if p do not fit."""
        pl = empty.consolidated(self.demand_w[j], self.demand_p[j], w, p)
        if pl is None and p > 1:
            pl = empty.consolidated(self.demand_w[j], self.demand_p[j], w, 1)
        return pl

    def result(self, *, policy: str = "", status: str | None = None, message: str = "",
               decision_seconds=(), decision_gaps=(), decisions_uncertified: int | None = None,
               wall_seconds: float = 0.0) -> SimResult:
        """The outcome so far: per-job times, utilisation over time, latencies (see metrics.SimResult)."""
        status = status or ("completed" if self.done_all else self.status)
        util = self.cluster.total()
        utility = np.full(self.n, np.nan)
        for j in np.flatnonzero(~np.isnan(self.completion)).tolist():
            u = self.jobs[j].utility
            if u is not None:
                utility[j] = float(u(self.completion[j] - self.arrival[j]))
        return SimResult(
            policy=policy, status=status, message=message, trace=self.trace.source, cluster=self.cluster.source,
            names=tuple(j.name for j in self.jobs), arrival=self.arrival.copy(), first_start=self.first_start.copy(),
            completion=self.completion.copy(), isolated_jct=self.isolated_jct(), utility=utility,
            unschedulable={self.jobs[j].name: r for j, r in sorted(self.unschedulable.items())},
            resources=self.cluster.resources, capacity_total=util,
            segments=np.array(self._seg, dtype=float).reshape(-1, 2),
            segment_used=np.array(self._seg_used, dtype=float).reshape(-1, len(util)),
            decision_seconds=np.asarray(decision_seconds, dtype=float), engine_seconds=self.engine_seconds,
            decision_gaps=np.asarray(decision_gaps, dtype=float), decisions_uncertified=decisions_uncertified,
            n_events=self.n_events, sim_time=self.time, wall_seconds=wall_seconds, seed=self.seed,
            restart_seconds=self.restart_seconds, max_time=self.max_time, peak_memory_mib=peak_memory_mib())


def simulate(trace: Trace, cluster: Cluster, policy, speed: SpeedSourceLike, *, seed: int = 0,
             restart_seconds: float = 0.0, max_time: float | None = None, deadline: float | None = None,
             progress: bool = False, stall_calls: int = 1000, stop=None) -> SimResult:
    """Replay ``trace`` on ``cluster`` under ``policy`` (docs/simulator.md).

    The policy is reset once, then called at every event, at every slot boundary if it has
    ``slot_seconds`` (while jobs are active), and at a Decision's ``next_call``. ``deadline`` is a
    wall-clock budget in seconds: the partial result has status ``"time_limit"``. ``max_time``
    caps simulated time (status ``"max_time"``). A run where nothing can happen any more while
    jobs wait (no job progresses, no arrival or timer pending), or where no job progresses while
    jobs wait and no arrival is pending for ``stall_calls`` consecutive calls, stops with status
    ``"stalled"``. The deadline is checked between calls (a single call is not interrupted), and
    so is ``stop`` (an object with ``is_set()``, e.g. :func:`dlsched.console.stop_requests` set by
    Ctrl-C or SIGTERM): once set, the partial result has status ``"stopped"``.
    A policy that raises ends the run with PolicyError naming it (an InputError it raises, to
    refuse a trace or cluster it does not apply to, passes through). ``progress`` reports on stderr
    as the run goes: a bar on a terminal, a plain line a minute otherwise (:class:`_progress_bar`).
    """
    name = str(getattr(policy, "name", type(policy).__name__))
    wall0 = _time.monotonic()
    sim = Simulation(trace, cluster, speed, seed=seed, restart_seconds=restart_seconds, max_time=max_time)
    ctx = PolicyContext(cluster=cluster, speed=speed, seed=seed, restart_seconds=restart_seconds,
                        future=trace if getattr(policy, "offline", False) else None)
    _guard(name, 0.0, policy.reset, ctx)
    slot = getattr(policy, "slot_seconds", None)
    if slot is not None and not (slot > 0):
        raise PolicyError(name, 0.0, f"slot_seconds must be > 0 or None, got {slot!r}")
    # a policy that answers with the changes only is asked for them (its schedule is derived from them)
    decide = policy.changes if answers_changes(policy) else policy.schedule
    latencies: list[float] = []
    status, message = None, ""
    idle_calls = 0
    events = sim.advance(None)
    with _progress_bar(progress, sim, name) as tick, _frozen_heap():
        while not sim.done:
            if deadline is not None and _time.monotonic() - wall0 > deadline:
                status, message = "time_limit", f"wall-clock deadline of {deadline:g}s reached at t={sim.time:.6g}s"
                break
            if stop is not None and stop.is_set():
                status, message = "stopped", f"stopped by a signal at t={sim.time:.6g}s"
                break
            state = sim.state()
            t0 = _time.perf_counter()
            decision = _guard(name, sim.time, decide, state, events)
            latencies.append(_time.perf_counter() - t0)
            sim.apply(decision, name)
            until = decision.next_call if isinstance(decision, (Decision, Changes)) else None
            if until is not None:
                real = isinstance(until, (int, float, np.integer, np.floating)) and not isinstance(until, bool)
                if not (real and until > sim.time):
                    shown = f"{float(until):g}" if real else repr(until)
                    raise PolicyError(name, sim.time, f"next_call {shown} is not a time later than now")
            if slot is not None and sim.active.size:
                boundary = next_boundary(sim.time, slot)
                until = boundary if until is None else min(until, boundary)
            waiting = sim.pending_arrivals == 0 and sim.active.size > 0 and sim.progressing == 0   # cheap tests first
            idle_calls = idle_calls + 1 if waiting else 0
            events = sim.advance(until)
            if (not events and not sim.done) or idle_calls > stall_calls:
                status = "stalled"
                message = (f"policy '{name}' runs no job that can progress while {sim.active.size} jobs wait, "
                           f"and no arrival is pending (t={sim.time:.6g}s)")
                break
            tick()
    if status is None and sim.status == "max_time":
        message = f"simulated time reached max_time={max_time:g}s with {sim.active.size + sim.pending_arrivals} jobs unfinished"
    if status is None and sim.unschedulable and not message:
        message = f"{len(sim.unschedulable)} jobs unschedulable (larger than the cluster)"
    # a policy that certifies its decisions keeps their gaps and counts those it could not certify
    # (dlsched.policies.budget.DecisionRecord)
    record = getattr(policy, "decision_record", None)
    return sim.result(policy=name, status=status, message=message, decision_seconds=latencies,
                      decision_gaps=getattr(record, "gaps", ()), decisions_uncertified=getattr(record, "uncertified", None),
                      wall_seconds=_time.monotonic() - wall0)


def _added(placements: dict, alloc: dict) -> list[tuple]:
    """The entries of ``placements`` whose key is not in ``alloc``, in the order of ``placements``,
    given that every key of ``alloc`` is in ``placements``: read from its end, where a policy that
    copies the allocation and adds to it put them (one pass over ``placements`` at most)."""
    k = len(placements) - len(alloc)
    found = []
    if k:
        for key in reversed(placements):
            if key not in alloc:
                found.append((key, placements[key]))
                if len(found) == k:
                    break
        found.reverse()
    return found


def _guard(name: str, t: float, fn, *args):
    """Call a policy method; anything it raises becomes a PolicyError naming it, except an
    InputError (a policy that refuses the trace or cluster it is given says so itself)."""
    try:
        return fn(*args)
    except (PolicyError, InputError):
        raise       # InputError: the policy refuses this trace or cluster, and says why
    except Exception as exc:  # a third-party policy may raise anything: report it, not a traceback
        raise PolicyError(name, t, f"raised {type(exc).__name__}: {exc}") from exc


def peak_memory_mib() -> float | None:
    """The process's largest resident set so far, in MiB (None without the ``resource`` module)."""
    if resource is None:
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1 << 20) if sys.platform == "darwin" else rss / 1024.0   # bytes on macOS, KiB on Linux


@contextlib.contextmanager
def _frozen_heap():
    """The objects made before the run (modules, trace, the policy's set-up) left out of the garbage collector's full
    passes while it goes (:func:`gc.freeze`; unfrozen after, unless a caller had frozen them): one such pass inside a
    decision took 35-51 of the 39-55 ms of the worst calls of Gavel's max-min and finish-time LP policies on Gavel's msr
    0e4a51 at a 10-ms budget (10-17 ms with them frozen, 2026-11-28: ``benchmarks/gavel_worst_calls.py``)."""
    mine = gc.get_freeze_count() == 0
    if mine:
        gc.freeze()
    try:
        yield
    finally:
        if mine:
            gc.unfreeze()


class _progress_bar:
    """Progress of a run of policy ``policy`` on stderr: on a terminal a transient bar (jobs finished, simulated time,
    events, elapsed, ETA) redrawn at most 5 times a second; otherwise one plain line a minute.

    The ETA counts arrivals and completions, two per job, as the work: a run spends one event on
    each (policies with slots or timers add more), so (elapsed / done) x left is an honest guess
    from the rate so far, not a promise."""

    LINE_SECONDS = 60.0

    def __init__(self, enabled: bool, sim: Simulation, policy: str):
        self.enabled, self.sim, self.bar = enabled, sim, None
        self.label = f"simulating {policy}"     # names the policy: `simulate --policy a,b` runs several
        self.tty = enabled and sys.stderr.isatty()
        self.start = self.last = _time.monotonic()

    def __enter__(self):
        if self.tty:
            self.bar = Progress(TextColumn(self.label), BarColumn(), TextColumn("{task.fields[jobs]} jobs"),
                                TextColumn("t={task.fields[t]}"), TextColumn("{task.fields[events]} events"),
                                TimeElapsedColumn(), EtaColumn(),
                                console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("simulating", total=2 * self.sim.n, jobs="0", t="0s", events=0, base=0)
        return self.tick

    def _counts(self) -> tuple[int, int]:
        sim = self.sim
        arrived = sim.n - sim.pending_arrivals
        return arrived - sim.active.size, arrived

    def tick(self) -> None:
        if not self.enabled:
            return
        now = _time.monotonic()
        if self.bar is not None and now - self.last > 0.2:
            self.last = now
            finished, arrived = self._counts()
            self.bar.update(self.task, completed=finished + arrived, jobs=f"{finished:,}/{self.sim.n:,}",
                            t=clock(self.sim.time), events=f"{self.sim.n_events:,}")
        elif self.bar is None and now - self.last >= self.LINE_SECONDS:
            self.last = now
            finished, arrived = self._counts()
            done, elapsed = finished + arrived, now - self.start
            print(f"{self.label}: {finished:,}/{self.sim.n:,} jobs finished, t={clock(self.sim.time)} simulated, "
                  f"{self.sim.n_events:,} events, {clock(elapsed)} elapsed, ETA {eta(elapsed, done, 2 * self.sim.n - done)}",
                  file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
        return False


r"""Heterogeneous placement (MODELS.md §4) on the simulator: converter, speed source, and the policy re-run at events.

* :func:`to_trace` turns a :class:`PlacementInstance` into (Trace, Cluster, speed source): one
  server per instance server holding its GPUs (GPU type ``gpu_types[server_type[s]]``), every job
  arriving at 0 with :math:`T_i` iterations, one GPU per worker, at most :math:`M_i` workers, no
  PSs. :class:`PlacementSpeed` gives a job :math:`T_i / J_i` iterations per second, :math:`J_i`
  the JCT of §4.1 for its GPU type counts and whether it spans servers, so a placement held
  until every job ends reproduces the model's JCTs exactly.
* :class:`HetPlace` re-runs the §4.3 pipeline (``dlsched.solvers.hetplace``) at every arrival
  and completion over the active jobs with their remaining iterations, and places each job on
  the GPUs the pipeline chose. On a generic trace it builds the §4 view from the cluster's GPU
  types and the speed source: :math:`\rho_{i,g}` is job i's rate with one worker on a type-g server
  per GPU of that worker, :math:`P_i = 1`, no communication term (the speed source already
  charges it), a type where the job cannot progress gets a negligible throughput so the
  placement avoids it. The policy (``order="srpt"``, the default without ``incremental``) also
  decides *which* jobs run: it takes the active jobs in increasing remaining time on one worker of
  their best GPU type, each if its smallest size fits the GPUs left by the ones before it, and the
  rest wait; a job that arrives shorter than a running one preempts it at the next event. The
  pipeline then sizes the jobs it is given, as in the paper, with each job's rates read at its
  smallest size; on a cluster of several GPU types the jobs take their types in rounds by Smith's
  rule (:meth:`HetPlace._by_type`: round k, the k-th fastest type of each job, in increasing
  remaining work over the pace it loses falling to its next type), each on one type (a synchronous
  job runs at its slowest worker's pace), the pipeline's placement kept only for a job that no
  single type holds; then (``exchange``, on by default; under a decision budget of at least
  :data:`EXCHANGE_MIN_BUDGET`, stopped by a clock) a local search over sets of jobs moved between types keeps a
  promotion where the projected sum of the admitted jobs' completion times falls
  (:mod:`dlsched.policies.type_exchange`); then (``span_up``, on by default) a job on a type slower than the
  GPUs left of faster types moves to them where, spanning types at the speed source's pace, it runs faster
  (:meth:`HetPlace._span_up`). With ``order="arrival"`` (the paper's order) the pipeline gets the first
  active jobs, one GPU each, and the later arrivals wait: it only optimises where the first jobs go
  (on Gavel's msr trace 0e4a51 an average JCT more than twice srpt's, on ITP cluster 02 nearly ten
  times: docs/hetplace.md).

``budget_ms`` bounds each decision (docs/hetplace.md, "Decisions within a budget"). Always done: the
§4 view, the pipeline's least answer (the subgradient steps until the picks nearly fit, category 0's
priced counts, their packing) and the placement of the answer; the budget ends the further subgradient
steps, the market, the
polish and the categories after the first, each with the best so far
(:func:`dlsched.solvers.hetplace.hetplace`), so every decision has an answer. Every decision's gap
is that of the pipeline's average JCT against its bound, the larger of the Lagrangian bound of the
steps taken and every job alone on its best GPUs. The solver's cut leaves room for what follows it (the
packing, the placement: as long as at the last full decision, in proportion to the active jobs, and a tenth
of the budget); where the least work itself, so predicted, exceeds the budget, the decision is the anytime
answer instead (:meth:`HetPlace._over_budget`): under ``order="srpt"`` srpt's decision without the solver
(:meth:`HetPlace._srpt_answer`: which jobs run, and their types by the same rounds, from the empty cluster where
that placement is predicted to fit the budget, else with the admitted running jobs kept); under
``order="arrival"`` the running jobs kept and the waiting ones started as an incremental decision starts them
(:meth:`HetPlace._step`); each with the gap of what runs against each job alone. The jobs without GPUs (outside
the §4 model) are placed after the GPU jobs in a pass that no clock stops, its time kept back from theirs
(:meth:`HetPlace._place_rest`). Unbudgeted full decisions are measured too, so that a budget set later in a run
predicts its first decision.

``pop_k`` > 1 (default 1: off) decides by POP once at least ``pop_min`` jobs are active (docs/hetplace.md,
"POP"): the jobs the pipeline places dealt at random into k groups, the GPU servers into k groups with equal
shares of each type, each pair solved by the pipeline alone (:meth:`HetPlace._pop`), the gap against bounds
of the unsplit problem.

``incremental`` (off by default; ``order="arrival"`` only, its default order there) makes every ``refresh``-th
decision (default 50) the full one above and the decisions between incremental (docs/hetplace.md, "Incremental decisions"): the
running jobs keep their placements, and the waiting jobs that the event lets start do, in arrival order,
each at the (size, type) that minimises its §4 JCT plus the last full decision's type prices
:math:`\lambda_g` on the GPUs it takes, on the free room (:meth:`HetPlace._step`); the answer is
:class:`~dlsched.sim.policy.Changes`. A job that found no room is tried again only once a server it may
fit has more room than the last decision left it, so an event costs the jobs it lets start. An
incremental decision's gap is against each running job alone at its largest size on its fastest type
(no Lagrangian bound: that would be a pass over every job); a full decision follows an incremental one
whose gap exceeds the last full decision's, in the same terms, by more than ``refresh_gap`` (default 0.05).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Annotated, Literal

import numpy as np

from dlsched.arguments import Range, checked
from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.placement import GpuAssignment, PlacementInstance
from dlsched.instance.workload import Job, Trace
from dlsched.models.placement import alone_jct, evaluate, jct_counts, workloads
from dlsched.policies.budget import BudgetMs, DecisionRecord
from dlsched.policies.bundles import take_in_order
from dlsched.policies.fifo import waiting_jobs
from dlsched.policies import type_exchange
from dlsched.sim.placement import (EPS, ConsolidatedPool, EmptyCluster, PlacerName, consolidated, fill_in_order, make_placer,
                                   task_slots, usage)
from dlsched.sim.policy import ChangePolicy, Changes, ClusterState, Placement, PolicyContext
from dlsched.result import Result
from dlsched.solvers.anytime import pop_groups
from dlsched.solvers.hetplace import ConfigTable, hetplace, placement_result, type_prices
from dlsched.solvers.options import Budget, SolveOptions

#: seconds per GPU-less job of :meth:`HetPlace._place_rest`'s pass (never stopped by a clock) that a budgeted full
#: decision keeps back from its GPU jobs' placement before one has measured its own: 26-29 ms for the 496 GPU-less
#: jobs of a first decision over 2,000 DL2 jobs (2026-11-28); with none kept back, that decision took 120 ms at 100
REST_PRIOR = 5e-5

#: throughput given to a GPU type on which a job cannot progress (the §4 model needs rho > 0)
NEGLIGIBLE = 1e-9

#: the placements whose least wall time per job predicts :meth:`HetPlace._srpt_answer`'s: on a loaded machine a
#: placement is descheduled for whole time slices (on Gavel's msr trace 0e4a51 at 10 ms, load 5-6 on 2 cores: 1.1 ms
#: of CPU at the 90th percentile took 109 ms of wall time), which says nothing of the next placement's work
SRPT_MEASURES = 8

#: the most admitted jobs :meth:`HetPlace._exchange` searches over: a step of the search replays every try, each
#: completion through the rounds (:func:`~dlsched.policies.type_exchange.projected_many`), so its cost grows with the
#: square of the jobs; 64 holds every state of the generated loaded streams ``gavel:300:SEED:rate=3`` (at most 57
#: admitted), where searching past the former 32 lowered the average JCT on 8 seeds of 8 (results/gavel.md), while
#: Gavel's msr 0e4a51 (up to 108 admitted 1-GPU jobs) keeps a bounded tail
EXCHANGE_MAX_JOBS = 64

#: the least budget (seconds) under which :meth:`HetPlace._exchange` searches: on Gavel's 0e4a51 at 100 ms the search
#: on its clock lowered the average JCT in 3 runs of 4 beside main's (mean -0.07 %, latency p99 63-71 ms), at 10 ms
#: it did not (mean +0.3 % over 7 runs, 4 worse); both within the runs' spread (the same code differed by 0.6 % at
#: 10 ms): docs/hetplace.md, "Exchanges between types"
EXCHANGE_MIN_BUDGET = 0.1

#: the placement of a job that holds nothing yet (:meth:`HetPlace._srpt_answer`): its size is its smallest
_NOWHERE = Placement({}, {})


class PlacementSpeed:
    """Iterations per second of a placement-family job: :math:`T_i / J_i` (MODELS.md §4.1)."""

    def __init__(self, inst: PlacementInstance):
        self.inst = inst

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        inst, i = self.inst, int(job.meta["index"])
        counts = np.zeros(inst.n_types)
        for s, k in placement.workers.items():
            counts[inst.server_type[s]] += k
        if counts.sum() < 1:
            return 0.0
        jct = float(jct_counts(inst, i, counts, len([s for s, k in placement.workers.items() if k]) > 1))
        return float(inst.iterations[i]) / jct


def to_trace(inst: PlacementInstance) -> tuple[Trace, Cluster, PlacementSpeed]:
    """(Trace, Cluster, speed source) of ``inst`` (module docstring)."""
    S = inst.n_servers
    cluster = Cluster(("gpu",), inst.server_gpus.astype(float)[:, None], tuple(inst.gpu_types[t] for t in inst.server_type),
                      np.arange(S), tuple(inst.server_names), intra_server_gbps=float(inst.intra_gbps),
                      inter_server_gbps=float(inst.inter_gbps), inter_rack_gbps=float(inst.inter_gbps), source=inst.source)
    jobs = [Job(name=inst.job_names[i], arrival=0.0, job_type=inst.job_types[i], iterations=float(inst.iterations[i]),
                worker_demand={"gpu": 1.0}, min_workers=1, max_workers=int(inst.max_workers[i]),
                meta={"index": i, "family": "placement", "placement": inst}) for i in range(inst.n_jobs)]
    return Trace(tuple(jobs), inst.source), cluster, PlacementSpeed(inst)


def n_ps(job: Job, workers: int) -> int:
    """The PSs of a job at ``workers`` workers, which the §4 model leaves out: one a worker up to
    ``max_ps`` (DRF's and DL2's task pairs), none without PSs. One PS whatever the workers made the
    PS the bottleneck (DL2's mix at 16 workers: 17-76 % of the job's best rate; `dl2:60:1` 169,976 s,
    3.6 times DRF's average JCT; docs/hetplace.md)."""
    return min(int(workers), int(job.max_ps)) if job.uses_ps else 0


class HetPlace(ChangePolicy):
    """Heterogeneous placement (MODELS.md §4.3): the sampled-categories + market pipeline re-run at every arrival and
    completion; or (``incremental``) re-run every ``refresh`` decisions, the decisions between placing only the jobs an
    event lets start, at the last run's type prices (:meth:`_step`)."""

    name = "hetplace"
    slot_seconds = None

    @checked
    def __init__(self, samples: Annotated[int, Range(ge=1)] = 8, seed: Annotated[int, Range(ge=0)] | None = None,
                 placer: PlacerName = "consolidated", budget_ms: BudgetMs | None = None,
                 order: Literal["arrival", "srpt"] | None = None, incremental: bool = False,
                 refresh: Annotated[int, Range(ge=1)] = 50, refresh_gap: Annotated[float, Range(ge=0, finite=True)] = 0.05,
                 pop_k: Annotated[int, Range(ge=1)] = 1, pop_min: Annotated[int, Range(ge=0)] = 0,
                 exchange: bool = True, span_up: bool = True):
        order = order or ("arrival" if incremental else "srpt")
        if incremental and order != "arrival":
            raise InputError("<argument>", "incremental", "false with order='srpt' (the incremental decision keeps "
                             "the running jobs, srpt re-decides which jobs run)", incremental)
        self.samples, self.seed, self.placer_name, self.order = int(samples), seed, placer, order
        self.incremental, self.refresh, self.refresh_gap = bool(incremental), int(refresh), float(refresh_gap)
        self.decision_record = DecisionRecord(budget_ms)
        self.pop_k, self.pop_min = int(pop_k), int(pop_min)
        self.exchange, self.span_up = bool(exchange), bool(span_up)

    def reset(self, ctx: PolicyContext) -> None:
        if "gpu" not in ctx.cluster.resources:
            raise InputError(ctx.cluster.source, "resources", "a cluster with GPUs (heterogeneous placement places GPUs)",
                             ctx.cluster.resources)
        self.ctx = ctx
        self.placer = make_placer(self.placer_name)
        self.g = ctx.cluster.index("gpu")
        self.rng_seed = ctx.seed if self.seed is None else self.seed
        self.calls = 0
        self.pop_rng = np.random.default_rng(self.rng_seed)   # POP's deals of the jobs (:meth:`_pop`)
        self._server_deal: tuple | None = None               # (key, server groups) of the last POP view
        self.decision_record.reset()
        # the GPU types of the GPU servers, each server's type, the first server of each type
        servers = np.flatnonzero(ctx.cluster.capacity[:, self.g] >= 1)
        self.types = sorted({ctx.cluster.gpu_type[s] for s in servers})
        self.type_of = np.array([self.types.index(ctx.cluster.gpu_type[s]) for s in servers], dtype=np.int64)
        self.first = [int(servers[np.flatnonzero(self.type_of == g)[0]]) for g in range(len(self.types))]
        self._empty = EmptyCluster(ctx.cluster.capacity)
        # each cluster server's GPU type (-1 without GPUs), and the empty cluster with only type g's GPUs
        # (other resources stay), for rates at a job's own size and placements on one type
        self.server_type = np.full(ctx.cluster.n_servers, -1, dtype=np.int64)
        self.server_type[servers] = self.type_of
        self.on_type = [self.server_type == g for g in range(len(self.types))]
        # how the speed source paces a job across types (``ThroughputSpeed``'s reading; the sum of its GPUs' rates
        # for a source that does not say): the exchange's projection of a job that spans types
        speed = getattr(ctx.speed, "source", ctx.speed)
        self._mixed = getattr(speed, "mixed", "average")
        self.type_servers = [np.flatnonzero(t) for t in self.on_type]
        self.type_capacity = [self._only_type(ctx.cluster.capacity, g) for g in range(len(self.types))]
        cap = ctx.cluster.capacity[:, self.g]
        self.whole_cluster = bool((cap == np.round(cap)).all())   # every server has whole GPUs
        self._whole: np.ndarray | None = None   # per trace job: whole GPUs per worker and nothing else (first call)
        # per trace job (first call): rho_{j,g} rows and whether each is known, min and max workers, PS
        self._rho_tab = self._rho_known = self._min_w = self._max_w = self._ps = None
        self._single: dict[tuple[int, int], Placement] = {}   # (server, workers) -> its placement (:meth:`_placement`)
        # incremental (:meth:`_step`): the last full decision's type prices (None: none yet), decisions since it,
        # its gap in the step's terms; per trace job its pace (GPU throughput of its placement), whether it waits
        # having found no room, and its shape class; the free room the last decision left
        self._prices: np.ndarray | None = None
        self.since_full, self.full_gap, self.full_solves = 0, 0.0, 0
        self._step_gap: float | None = None        # the last incremental decision's gap (None after a full one)
        self._pace = self._tried = self._shape = self._last_free = None
        self._placing = None             # under a budget, the clock the placement of a full answer stops at
        self._rest_cost = REST_PRIOR     # seconds per GPU-less job of the last full decision's pass (:meth:`_place_rest`)
        self._placement_cut = False      # whether that placement stopped at its clock (:meth:`_placement_over`)
        # under a budget (not ``incremental``): the last full decision's measured least work (:meth:`_predicted`),
        # and the answers that were :meth:`_step`'s because the pipeline could not hold the budget (:meth:`_over_budget`)
        self._full_cost: tuple[float, float, int] | None = None    # (least, after, active jobs)
        self._unkept: np.ndarray | None = None    # an unbudgeted full decision's type prices (:meth:`_timed_full`)
        self.kept_answers, self.last_answer = 0, None
        # under a budget with ``order="srpt"``: the wall seconds per admitted job of the last placements of srpt's
        # admitted jobs (a full decision's or :meth:`_srpt_answer`'s); the answers that were srpt's
        self._srpt_cost: deque[float] = deque(maxlen=SRPT_MEASURES)
        self._full_whole: tuple[float, int] | None = None     # the last full decision's wall seconds, active jobs
        self.srpt_answers = 0
        self.exchanges = 0          # decisions whose types came from a kept exchange (:meth:`_exchange`)
        # the start of the decision being made (its budget's) and the wall seconds of its exchange search
        self._decided, self._exchange_s = 0.0, 0.0
        self._search_rate = 0.0     # under a budget, wall seconds per admitted job squared of a search (:meth:`_exchange`)

    def _only_type(self, capacity: np.ndarray, g: int) -> np.ndarray:
        """A copy of ``capacity`` (servers x resources) whose GPUs are those of type g only (other resources stay)."""
        room = capacity.astype(float).copy()
        room[~self.on_type[g], self.g] = 0.0
        return room

    def _rho_row(self, state: ClusterState, j: int, gpw: int) -> np.ndarray:
        r""":math:`\rho_{j,g}`: job j's rate on GPU type g per GPU: with one worker on a server of the type, or
        (``order="srpt"``) with its smallest size (``min_workers`` workers) on the fewest servers of the type,
        per GPU of those workers (one worker where that size does fit on the type). Speeds scale far from
        linearly (Gavel's LM at 8 GPUs: 615 steps/s on V100, 128 on P100, where one worker reads 82 and 77),
        so a rigid job's type is chosen by its rate at the size it runs."""
        if self._rho_known[j]:
            return self._rho_tab[j]
        # the speed protocol takes no time: a job's rate on a placement is fixed within a run
        job, cl = state.jobs[j], state.cluster
        w = job.min_workers if self.order == "srpt" else 1
        rates = []
        for g, s in enumerate(self.first):
            pl = consolidated(self.type_capacity[g], state.demand_w[j], state.demand_p[j], w, n_ps(job, w)) if w > 1 else None
            if pl is None:
                pl = Placement({s: 1}, {s: 1} if job.uses_ps else {})
            rates.append(max(float(self.ctx.speed.rate(job, pl, cl)) / (gpw * pl.n_workers), NEGLIGIBLE))
        self._rho_tab[j], self._rho_known[j] = rates, True
        return self._rho_tab[j]

    def _rho_rows(self, state: ClusterState, jobs: np.ndarray, gpw: np.ndarray) -> np.ndarray:
        """(len(jobs), G): :meth:`_rho_row` of each job, the rows kept in one table over the trace's jobs
        (a row a job, looked up per decision, took 5 % of a decision over 2,000 OpenB pods)."""
        for a in np.flatnonzero(~self._rho_known[jobs]).tolist():
            self._rho_row(state, int(jobs[a]), int(gpw[a]))
        return self._rho_tab[jobs]

    def _one_type(self, state: ClusterState, free: np.ndarray, j: int, size: int) -> Placement | None:
        """Job j at ``size`` workers on the fewest servers of one GPU type, the fastest for it (by
        :math:`\rho_{j,g}`) whose ``free`` room holds it; None if no type does."""
        gpw = int(round(state.demand_w[j, self.g]))
        for g in np.argsort(-self._rho_row(state, j, gpw), kind="stable").tolist():
            pl = self._on_type(state, free, j, size, g)
            if pl is not None:
                return pl
        return None

    def _on_type(self, state: ClusterState, free: np.ndarray, j: int, size: int, g: int) -> Placement | None:
        """Job j at ``size`` workers (and its PSs) on the fewest servers of GPU type g whose ``free`` room holds
        it (:func:`~dlsched.sim.placement.consolidated`); None if they do not. A job of whole GPUs and nothing
        else on a cluster of whole GPUs (:meth:`_whole_gpus`) is placed on the free GPUs of the type's servers
        alone, as consolidated places it there (servers by decreasing slots, ties by index, each filled in
        turn; the same slots, so the same placement): the copy of the cluster and the pass over every server
        were most of a decision of :meth:`_srpt_answer` (0.2 ms a job on Gavel's 108 servers)."""
        if self.whole_cluster and self._whole_gpus(state)[j]:
            srv = self.type_servers[g]
            slots = np.maximum(np.floor(free[srv, self.g] / state.demand_w[j, self.g] + EPS), 0).astype(np.int64)
            s = int(np.argmax(slots)) if srv.size else 0
            if srv.size and slots[s] >= size:
                return self._placement({int(srv[s]): int(size)})
            order = np.argsort(-slots, kind="stable")
            got = fill_in_order(slots[order], size)
            if got is None:
                return None
            return Placement({int(srv[order[i]]): int(got[i]) for i in np.flatnonzero(got)}, {})
        return consolidated(self._only_type(free, g), state.demand_w[j], state.demand_p[j], size,
                            n_ps(state.jobs[j], size))

    def _whole_gpus(self, state: ClusterState) -> np.ndarray:
        """Per trace job: whether its workers hold whole GPUs and nothing else and it has no PS, so that
        only the servers' free GPUs decide where it fits (:meth:`_place_whole`)."""
        if self._whole is None:
            w, g = state.demand_w, self.g
            others = np.delete(w, g, axis=1)
            self._whole = ((w[:, g] >= 1) & (w[:, g] == np.round(w[:, g])) & ~others.any(axis=1)
                           & ~state.demand_p.any(axis=1) & np.array([not job.uses_ps for job in state.jobs]))
        return self._whole

    def _placement(self, workers: dict[int, int]) -> Placement:
        """The placement of ``workers`` (server -> workers, no PS); one object per single-server
        placement, shared by the decisions of a run, so that a job the pipeline leaves where it was gets
        the allocation's own object and the engine keeps it with an identity check. (On the first
        2,000 pods of the inflated OpenB trace, building a Placement per job and the engine's equality
        checks took 12 % of the run's CPU.)"""
        if len(workers) != 1:
            return Placement(workers, {})
        key = next(iter(workers.items()))
        pl = self._single.get(key)
        if pl is None:
            pl = self._single[key] = Placement(workers, {})
        return pl

    def _place_one(self, state: ClusterState, free: np.ndarray, j: int, pl: Placement, spans: bool,
                   pool: ConsolidatedPool | None = None) -> Placement | None:
        """Job j on the pipeline's placement ``pl`` where it is allowed and fits ``free``, else placed
        again (module docstring); updates ``free``. None if it is not placed. ``pool``: a
        :class:`~dlsched.sim.placement.ConsolidatedPool` on ``free`` (the consolidated placer), which
        places and holds for the placer."""
        job = state.jobs[j]
        fit = self.placer.fit if pool is None else (lambda f, *request: pool.fit(*request))
        one = self._one_type(state, free, j, pl.n_workers) if spans else None
        pl = pl if one is None else one
        if job.uses_ps and pl.workers:
            # the §4 model has no PS: the job's PSs (n_ps) with its first worker's server if they fit, else anywhere
            pl = fit(free, state.demand_w[j], state.demand_p[j], pl.n_workers, n_ps(job, pl.n_workers))
        ok = pl is not None and job.min_workers <= pl.n_workers <= job.max_workers
        if ok:
            at, rows = usage(pl, state.demand_w[j], state.demand_p[j])
            ok = bool((rows <= free[at] + 1e-9).all())
        if not ok:
            size = min(max(pl.n_workers if pl is not None else 0, job.min_workers), job.max_workers)
            pl = self._one_type(state, free, j, size) if self.order == "srpt" else None
            if pl is None:
                pl = fit(free, state.demand_w[j], state.demand_p[j], size, n_ps(job, size))
        if pl is not None:
            if pool is not None:
                pool.hold(pl, state.demand_w[j], state.demand_p[j])
            else:
                at, rows = usage(pl, state.demand_w[j], state.demand_p[j])
                free[at] -= rows
        return pl

    def _pool(self, free: np.ndarray) -> ConsolidatedPool | None:
        """A :class:`~dlsched.sim.placement.ConsolidatedPool` on ``free`` for the consolidated placer (None
        for another placer): the placements of a sequence of jobs at the cost of the free rows' classes."""
        return ConsolidatedPool(free) if self.placer_name == "consolidated" else None

    def _place_chosen(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray,
                      start: np.ndarray, srv: np.ndarray, cnt: np.ndarray) -> dict[int, Placement]:
        """The jobs of ``take`` at the pipeline's sizes on the GPU types of :meth:`_by_type` (``order="srpt"``
        on a cluster of several types), or each in turn on the pipeline's placement (``srv[start[a]:start[a+1]]``,
        ``cnt`` workers each) where it is allowed and fits ``free``, else placed again (:meth:`_place_one`:
        the loop that :meth:`_place_kept` and :meth:`_place_whole` batch); updates ``free``."""
        srv_l, cnt_l = srv.tolist(), cnt.tolist()
        chosen = [self._placement(_workers(srv_l, cnt_l, lo, hi)) for lo, hi in zip(start[:-1].tolist(), start[1:].tolist())]
        if self.order == "srpt" and len(self.types) > 1:
            return self._by_type(state, free, take, per, chosen)
        out: dict[int, Placement] = {}
        for j, pl in zip(take.tolist(), chosen):
            if self._placement_over(out):
                # the budget is the whole call's: the jobs not yet placed wait (a first decision over 2,000 of
                # DL2's jobs placed 1,504 in 0.54 s whatever the budget); at least one job runs
                break
            pl = self._place_one(state, free, j, pl, False)
            if pl is not None:
                out[j] = pl
        return out

    def _by_type(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray,
                 chosen: list[Placement]) -> dict[int, Placement]:
        r"""The GPU types of ``order="srpt"`` on a cluster of G > 1 types, each job at the pipeline's size
        (``chosen``, within the job's range): in rounds k = 1..G, the jobs not yet placed each try their k-th
        fastest type (by :math:`\rho_{j,g}`, the rate per GPU at the job's size, :meth:`_rho_row`; a type where
        the job cannot progress skipped), on the fewest servers of it whose ``free`` room holds them
        (:func:`~dlsched.sim.placement.consolidated`), in increasing

        .. math:: \kappa_{j,k} = \frac{R_j}{g_j\,(\rho_{j,(k)} - \rho_{j,(k+1)})},
                  \qquad \rho_{j,(G+1)} = 0,

        :math:`R_j` the remaining iterations, :math:`g_j` the GPUs per worker, :math:`\rho_{j,(k)}` the job's
        k-th largest rate (ties by :math:`p_j` below). A job that no single type holds keeps the pipeline's
        placement where it fits, else is placed again (:meth:`_place_one`), after the others. With ``exchange``
        the jobs of :meth:`_exchange`'s promotions take their types first (:meth:`_rounds`). Updates ``free``.

        Why (Smith's rule): a job that loses its k-th type in round k falls to its (k+1)-th, where, with free
        migration, it progresses all the while and moves up once the type frees: held there D seconds, it ends
        :math:`D\,w_{j,k}` later than on its k-th type, :math:`w_{j,k} = (\rho_{j,(k)} - \rho_{j,(k+1)}) / \rho_{j,(1)}`
        (the pace it lost, as a share of its fastest). Its work is :math:`p_j = R_j / (g_j \rho_{j,(1)})`
        worker-seconds on its fastest type. So each round is one machine whose jobs take :math:`p_j` and cost
        :math:`w_{j,k}` a second of waiting, where :math:`\sum_j w_j C_j` is least in increasing
        :math:`p_j / w_{j,k} = \kappa_{j,k}` (Smith, 1956). A type goes first to the jobs for which it is
        the fastest, in that order, and only then to those it is the second fastest for, and so on.

        The pipeline's own types minimise :math:`\sum_j J_j` as if every job held its GPUs to its end: on
        Gavel's msr trace 2869ce it moved a 32-GPU ResNet-18 with 1.8 h left on V100s onto K80s (11.6 h
        there), leaving the V100s to 8-GPU jobs of 9-15 h there, where the V100s would have been free again
        after 1.8 h (docs/results/gavel.md)."""
        rho = self._rho_rows(state, take, per)
        sizes = [min(max(pl.n_workers, self._min_w[j]), self._max_w[j]) for j, pl in zip(take.tolist(), chosen)]
        first: list[tuple[int, int]] = []
        budget = self.decision_record.seconds
        if self.exchange and take.size > 1 and (budget is None or budget >= EXCHANGE_MIN_BUDGET):
            first = self._exchange(state, free, take, per, rho, sizes)
        if first:
            before = free.copy()
            out, left = self._rounds(state, free, take, per, rho, sizes, first)
            if any(int(take[a]) not in out or not self.on_type[g][next(iter(out[int(take[a])].workers))] for a, g in first):
                # the servers did not hold a promotion the pooled GPUs did (fragments): the rule's own types
                free[:] = before
                out, left = self._rounds(state, free, take, per, rho, sizes, [])
            else:
                self.exchanges += 1
        else:
            out, left = self._rounds(state, free, take, per, rho, sizes, [])
        for a in left.tolist():
            if self._placement_over(out):
                break
            j = int(take[a])
            pl = self._place_one(state, free, j, chosen[a], True)
            if pl is not None:
                out[j] = pl
        if self.span_up:
            self._span_up(state, free, take, per, rho, out)
        return out

    def _movable(self, state: ClusterState, take: np.ndarray) -> np.ndarray:
        """Per admitted job: whether :meth:`_span_up` may move it (``span_up``, and its workers hold whole GPUs and
        nothing else on a cluster of whole GPUs: its placement is its GPUs alone)."""
        return self._whole_gpus(state)[take] & (self.span_up and self.whole_cluster)

    def _span_up(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray, rho: np.ndarray,
                 out: dict[int, Placement]) -> None:
        r"""Step 2 of :func:`~dlsched.policies.type_exchange.spans` on the servers, after the rounds and the jobs
        no type holds: each :meth:`_movable` job placed on one type slower than its fastest, in increasing
        :math:`p_j = R_j / (g_j \rho_{j,(1)})`, is given its GPUs back and takes the free GPUs of its fastest types
        first (on each type the servers with the most free workers' room first, :meth:`_fastest_span`); it moves
        there where the speed source runs it faster there, else stays. Updates ``out`` and ``free``.

        The rounds keep each job on one type and leave the GPUs that no whole job fits (Gavel's 8-GPU jobs on
        4-GPU servers leave 4 GPUs of a type): a job on K80s that moves to 4 V100s and 4 P100s runs at least at the
        P100s' pace, even where the slowest GPU sets a synchronous job's pace (``--speed-param mixed=slowest``)."""
        movable = self._movable(state, take)
        if not movable.any():
            return
        speed, cl = self.ctx.speed, state.cluster
        p = np.asarray(state.remaining)[take] / (per * rho.max(axis=1))
        for a in np.argsort(p, kind="stable").tolist():
            j = int(take[a])
            pl = out.get(j)
            if not movable[a] or pl is None or not pl.workers or self._placement_over(out):
                continue
            kinds = set(self.server_type[list(pl.workers)].tolist())
            if len(kinds) != 1 or rho[a, next(iter(kinds))] >= rho[a].max():
                continue
            at, rows = usage(pl, state.demand_w[j], state.demand_p[j])
            free[at] += rows
            span = self._fastest_span(free, rho[a], state.demand_w[j, self.g], pl.n_workers)
            job = state.jobs[j]
            if span is not None and speed.rate(job, span, cl) > speed.rate(job, pl, cl) * (1 + 1e-9):
                pl = out[j] = span
            at, rows = usage(pl, state.demand_w[j], state.demand_p[j])
            free[at] -= rows

    def _fastest_span(self, free: np.ndarray, rho: np.ndarray, gpw: float, n: int) -> Placement | None:
        """``n`` workers of ``gpw`` GPUs on the ``free`` GPUs of the types by decreasing ``rho`` (a type where the
        job cannot progress skipped), on each type the servers with the most room first (ties by index); None if
        they do not hold them."""
        srv, room = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for g in np.argsort(-rho, kind="stable").tolist():
            if rho[g] > NEGLIGIBLE:
                slots = np.maximum(np.floor(free[self.type_servers[g], self.g] / gpw + EPS), 0).astype(np.int64)
                most = np.argsort(-slots, kind="stable")
                srv.append(self.type_servers[g][most])
                room.append(slots[most])
        srv = np.concatenate(srv)
        got = fill_in_order(np.concatenate(room), n)
        return None if got is None else Placement({int(srv[i]): int(got[i]) for i in np.flatnonzero(got)}, {})

    def _exchange(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray, rho: np.ndarray,
                  sizes: list[int]) -> list[tuple[int, int]]:
        r"""The promotions (position in ``take``, type) that :meth:`_rounds` places first: the exchange of
        :func:`~dlsched.policies.type_exchange.exchange` on the admitted jobs at their sizes, each type's GPUs
        pooled (its free GPUs in ``free``), which lowers the projected sum of their completion times
        (docs/hetplace.md, "Exchanges between types"). None where every job has its fastest type by the rounds
        alone, or over :data:`EXCHANGE_MAX_JOBS` admitted jobs (its cost). Under a budget the search stops at
        :meth:`_exchange_clock` with the best found so far, and is not started where that clock is predicted not to
        hold it whole (its cost grows with the square of the jobs: the wall seconds per job squared of the last
        search its clock did not stop, ``_search_rate``). Its wall seconds are kept in ``_exchange_s``, which the
        measures of the placement leave out."""
        if take.size > EXCHANGE_MAX_JOBS:
            return []
        clock = self._exchange_clock(take.size)
        if clock is not None and (clock.expired() or self._search_rate * take.size ** 2 > clock.remaining()):
            # a search its clock would cut in its first step spends the time and finds nothing (Gavel's 0e4a51 at
            # 10 ms, before the least budget, without this: latency p99 11.7-12.9 ms in 4 runs, main's 7.7-10.1 ms)
            return []
        t = time.perf_counter()
        first, searched = self._search(state, free, take, per, rho, sizes, clock)
        spent = time.perf_counter() - t
        self._exchange_s += spent
        if searched and clock is not None and not clock.expired():
            self._search_rate = spent / take.size ** 2
        return first

    def _exchange_clock(self, admitted: int) -> Budget | None:
        """The clock :meth:`_exchange` stops at under a budget (None without one): half of the time from now to
        the latest start of the placement of ``admitted`` jobs, which is what the placement's clock leaves
        (``_placing``'s limit, else the budget less its margin) less that placement, predicted at the least cost
        per job of the last placements (``_srpt_cost``, the exchange's own time left out; none measured: nothing
        kept back). The other half is slack for the placement: on a loaded machine a placement is descheduled
        for whole time slices, and where it meets its clock the jobs not yet placed wait (the search up to the
        latest start: Gavel's 0e4a51 at 100 ms, 6.04e6 s average JCT against main's 2.25e5 s)."""
        if self.decision_record.seconds is None:
            return None
        whole = self.decision_record.clock()
        end = self._placing.limit if self._placing is not None else whole.limit - whole.margin
        place = min(self._srpt_cost) * admitted if self._srpt_cost else 0.0
        spent = time.perf_counter() - self._decided
        return Budget(spent + max(end - place - spent, 0.0) / 2, start=self._decided, margin=0.0)

    def _search(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray, rho: np.ndarray,
                sizes: list[int], clock: Budget | None) -> tuple[list[tuple[int, int]], bool]:
        """:meth:`_exchange`'s search on the pooled model, stopped at ``clock`` (None: not stopped), and whether
        it searched (not where the rounds give every job its fastest type)."""
        cap = np.array([free[srv, self.g].sum() for srv in self.type_servers])
        model = type_exchange.TypeModel(np.asarray(state.remaining)[take], np.array(sizes) * per, rho, per, cap, NEGLIGIBLE,
                                        mixed=self._mixed, movable=self._movable(state, take))
        # cheap first: the rounds' pooled types; no job below its fastest type, nothing to exchange
        t0 = type_exchange.rounds(model, model.rem, np.ones(take.size, dtype=bool))
        if (t0 == model.rank[:, 0]).all():
            return [], False
        return type_exchange.exchange(model, base=t0, clock=clock)[0], True

    def _rounds(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray, rho: np.ndarray,
                sizes: list[int], first: list[tuple[int, int]]) -> tuple[dict[int, Placement], np.ndarray]:
        """:meth:`_by_type`'s rounds on the servers: the jobs of ``first`` (position in ``take``, type) placed on
        their types before the rounds, then the rounds; the placements and the positions of the jobs no single
        type held. Updates ``free``."""
        rank = np.argsort(-rho, axis=1, kind="stable")
        ranked = np.c_[np.take_along_axis(rho, rank, axis=1), np.zeros(take.size)]
        rem = np.asarray(state.remaining)[take]
        p = rem / (per * ranked[:, 0])
        out: dict[int, Placement] = {}
        for a, g in first:
            j = int(take[a])
            pl = self._on_type(state, free, j, sizes[a], g)
            if pl is not None:
                at, rows = usage(pl, state.demand_w[j], state.demand_p[j])
                free[at] -= rows
                out[j] = pl
        placed = {a for a, _ in first if int(take[a]) in out}
        left = np.array([a for a in range(take.size) if a not in placed], dtype=np.int64)
        for k in range(len(self.types)):
            lost = (ranked[left, k] - ranked[left, k + 1]) * per[left]
            kappa = np.full(left.size, np.inf)
            np.divide(rem[left], lost, out=kappa, where=lost > 0)
            wait = []
            for a in left[np.lexsort((p[left], kappa))].tolist():        # ties by p_j
                if self._placement_over(out):
                    # the whole call's budget is spent: the others wait (:meth:`_place_chosen`)
                    return out, np.zeros(0, dtype=np.int64)
                j, g = int(take[a]), int(rank[a, k])
                pl = None if rho[a, g] <= NEGLIGIBLE else self._on_type(state, free, j, sizes[a], g)
                if pl is None:
                    wait.append(a)
                    continue
                at, rows = usage(pl, state.demand_w[j], state.demand_p[j])
                free[at] -= rows
                out[j] = pl
            left = np.sort(np.array(wait, dtype=np.int64))
        return out, left

    def _place_kept(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray,
                    start: np.ndarray, srv: np.ndarray, cnt: np.ndarray) -> dict[int, Placement]:
        """:meth:`_place_chosen` for ``order="arrival"`` (no job is moved for spanning types), the checks
        in numpy passes: in job order, each server's free room before each job is the sequence of
        subtractions ``free[s] -= rows`` folded by :func:`numpy.subtract.accumulate` (the same
        floating-point values), so every job up to the first that does not fit (or has PSs or a size
        outside its range) keeps its placement at once; that job goes through :meth:`_place_one` and
        the pass resumes after it, such jobs placed on a :meth:`_pool` (the placer's placements at the
        cost of the free rows' classes: a DL2 decision is all PS jobs). The same placements in the same
        order: on the first 2,000 pods of the inflated OpenB trace the per-job checks took a quarter of
        the run's CPU. Under a budget the pass stops where the placement's clock has run out with some job
        placed (:meth:`_placement_over`, checked before each batch and each job placed again): the others
        wait, and the decision certifies what runs (:meth:`_record_full`)."""
        A = take.size
        size = np.diff(start)
        pair_job = np.repeat(np.arange(A), size)
        workers = np.bincount(pair_job, weights=cnt, minlength=A).astype(np.int64)
        plain = (self._min_w[take] <= workers) & (workers <= self._max_w[take]) & ~self._ps[take]
        held = cnt > 0
        rows_all = cnt[:, None] * state.demand_w[take[pair_job]]      # what each (job, server) pair holds
        out: dict[int, Placement] = {}
        alloc, srv_l, cnt_l, start_l = state.allocation, srv.tolist(), cnt.tolist(), start.tolist()
        pool = None                  # made at the first job placed again (DL2's PS jobs: every job)

        def keep(a: int) -> None:
            j, lo, hi = int(take[a]), start_l[a], start_l[a + 1]
            pl = self._placement(_workers(srv_l, cnt_l, lo, hi))
            old = alloc.get(j)
            out[j] = old if old is not None and old is not pl and old == pl else pl

        pos = 0
        while pos < A:
            if self._placement_over(out):
                # the budget is the whole call's (:meth:`_place_chosen`): the jobs not yet placed wait
                break
            stop = pos + int(np.argmin(plain[pos:])) if not plain[pos:].all() else A
            if stop > pos:
                sel = slice(start_l[pos], start_l[stop])
                m = held[sel]
                s_p, j_p, rows = srv[sel][m], pair_job[sel][m], rows_all[sel][m]
                order = np.argsort(s_p, kind="stable")                # by server, jobs in order within one
                s_o = s_p[order]
                first = np.r_[True, s_o[1:] != s_o[:-1]]
                grp = np.cumsum(first) - 1
                servers = s_o[first]
                rank = np.arange(s_o.size) - np.flatnonzero(first)[grp]
                stack = np.zeros((int(rank.max(initial=-1)) + 2, servers.size, free.shape[1]))
                stack[0] = free[servers]
                stack[rank + 1, grp] = rows[order]
                room = np.subtract.accumulate(stack, axis=0)         # room[r]: before the server's r-th pair
                bad = ~(rows[order] <= room[rank, grp] + 1e-9).all(axis=1)
                fail = np.zeros(A, dtype=bool)
                fail[j_p[order][bad]] = True
                end = pos + int(np.argmax(fail[pos:stop])) if fail[pos:stop].any() else stop
                ok = j_p[order] < end                                  # the pairs of the jobs kept
                kept_n = np.bincount(grp[ok], minlength=servers.size)
                free[servers] = room[kept_n, np.arange(servers.size)]
                if pool is not None:
                    pool.refresh(servers.tolist())
                for a in range(pos, end):
                    keep(a)
                stop = end
            if stop < A:
                j, lo, hi = int(take[stop]), start_l[stop], start_l[stop + 1]
                pool = self._pool(free) if pool is None else pool
                pl = self._place_one(state, free, j, self._placement(_workers(srv_l, cnt_l, lo, hi)), False, pool)
                if pl is not None:
                    out[j] = pl
            pos = stop + 1
        return out

    def _place_whole(self, state: ClusterState, free: np.ndarray, take: np.ndarray, per: np.ndarray,
                     start: np.ndarray, srv: np.ndarray, cnt: np.ndarray) -> dict[int, Placement]:
        """The loop of :meth:`schedule` for jobs of whole GPUs per worker without PSs on a cluster of whole
        GPUs (``order="arrival"``, the consolidated placer): each job in turn keeps the pipeline's
        placement (``srv[start[a]:start[a+1]]``, ``cnt`` workers each) if its size is allowed and its
        servers still have the GPUs, else goes where :func:`~dlsched.sim.placement.consolidated` puts
        its size: servers by decreasing free slots (ties by index), each filled in turn. The same
        placements, on the free GPUs alone (the only resource such a job asks for, whole numbers), the
        jobs placed again through a :class:`~dlsched.sim.placement.ConsolidatedPool` on that one column
        (its classes are the servers' numbers of free GPUs, a handful), none tried once the free GPUs
        cannot hold its size: a request walks the servers in the placer's order only as far as it
        places, where a sort of every server per job took 0.50 s of a 10,000-job Gavel decision (6,065
        of whose 6,498 jobs are placed again or wait), now 0.06 s (both on one state in one process).
        Updates ``free``'s GPU column."""
        free_g = np.rint(free[:, self.g]).tolist()   # whole numbers of free GPUs, as floats
        left = sum(free_g)                           # a size needing more GPUs than this has no slots
        pool = None                                  # made at the first job placed again
        ask = {}                                     # GPUs per worker -> a worker's demand on the column
        none = np.zeros(1)
        srv, cnt, start = srv.tolist(), cnt.tolist(), start.tolist()
        lo_w, hi_w = self._min_w[take].tolist(), self._max_w[take].tolist()
        out: dict[int, Placement] = {}
        for a, (j, w) in enumerate(zip(take.tolist(), per.tolist())):
            lo, hi = start[a], start[a + 1]
            n = sum(cnt[lo:hi])
            if lo_w[a] <= n <= hi_w[a] and all(free_g[s] >= k * w for s, k in zip(srv[lo:hi], cnt[lo:hi])):
                pl = Placement(_workers(srv, cnt, lo, hi), {})
            else:
                size = min(max(n, lo_w[a]), hi_w[a])
                if size * w > left:
                    continue
                d = ask.get(w)
                if d is None:
                    d = ask[w] = np.array([float(w)])
                if pool is None:
                    pool = ConsolidatedPool(np.array(free_g)[:, None])
                pl = pool.fit(d, none, size, 0)
                if pl is None:
                    continue
            for s, k in pl.workers.items():
                free_g[s] -= k * w
                left -= k * w
            if pool is not None:
                at = list(pl.workers)
                pool.free[at, 0] = [free_g[s] for s in at]
                pool.refresh(at)
            out[j] = pl
        free[:, self.g] = free_g
        return out

    def _admitted(self, state: ClusterState, jobs: np.ndarray, gpw: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The jobs the §4 pipeline places, and their GPUs per worker: the first ``k`` (the cluster's GPUs)
        in arrival order; or (``order="srpt"``) in increasing remaining time on one worker of their best
        type, each taken if its smallest size (``min_workers`` workers) fits the GPUs the jobs before it
        left, skipped otherwise (:func:`~dlsched.policies.bundles.take_in_order`), so that no GPU idles while a job that fits waits."""
        if self.order == "srpt":
            best = self._rho_rows(state, jobs, gpw).max(axis=1) * gpw
            need = self._min_w[jobs].astype(float) * gpw
            order = np.argsort(np.asarray(state.remaining)[jobs] / best, kind="stable")
            pick = np.sort(order[take_in_order(need[order, None], np.array([float(k)]))])
            return jobs[pick], gpw[pick]
        return jobs[:k], gpw[:k]

    def _view(self, state: ClusterState, jobs: np.ndarray, gpw: np.ndarray) -> tuple[PlacementInstance, np.ndarray]:
        """The §4 instance of ``jobs`` on the cluster's GPU servers, and the cluster index of each view server."""
        cl = state.cluster
        servers = np.flatnonzero(cl.capacity[:, self.g] >= 1)
        fam = state.jobs[int(jobs[0])].meta.get("placement")
        if fam is not None and all(state.jobs[int(j)].meta.get("placement") is fam for j in jobs):
            idx = np.array([int(state.jobs[int(j)].meta["index"]) for j in jobs])
            return PlacementInstance(fam.gpu_types, fam.server_names, fam.server_type, fam.server_gpus,
                                     tuple(fam.job_names[i] for i in idx), tuple(fam.job_types[i] for i in idx),
                                     fam.rho[idx], fam.global_batch[idx], np.asarray(state.remaining)[jobs],
                                     fam.model_size_mb[idx], np.minimum(fam.max_workers[idx], fam.n_gpus),
                                     fam.intra_gbps, fam.inter_gbps, fam.communication, fam.workload,
                                     source=fam.source), np.arange(fam.n_servers)
        types, t_of = self.types, self.type_of
        rho = self._rho_rows(state, jobs, gpw)
        K = int(cl.capacity[servers, self.g].astype(np.int64).sum())
        maxw = np.minimum(self._max_w[jobs] * gpw, K)
        intra = cl.intra_server_gbps if np.isfinite(cl.intra_server_gbps) else 1e9
        return PlacementInstance(tuple(t or "gpu" for t in types), tuple(cl.names[s] for s in servers), t_of,
                                 cl.capacity[servers, self.g].astype(np.int64), tuple(state.jobs[j].name for j in jobs.tolist()),
                                 tuple(state.jobs[j].job_type for j in jobs.tolist()), rho, np.ones(len(jobs)),
                                 np.asarray(state.remaining)[jobs], np.zeros(len(jobs)), maxw,
                                 intra, min(cl.inter_server_gbps, intra), source=cl.source), servers

    def _pop(self, view: PlacementInstance, opts: SolveOptions, k: int, least: np.ndarray, per: np.ndarray) -> Result:
        r"""POP (Narayanan et al., SOSP'21) of the §4 view ``view`` (``pop_k`` = k > 1; docs/hetplace.md, "POP"):
        the view's servers dealt into k groups (:func:`deal_servers`: each GPU type's servers, largest first,
        each to the group with the fewest GPUs of the type so far), the jobs dealt at random
        (:func:`~dlsched.solvers.anytime.pop_groups`, the policy's seeded ``pop_rng``) into groups of sizes in
        proportion to the groups' GPUs (never more jobs than GPUs), and each (job group, server group) solved by
        the §4.3 pipeline alone with an equal share of what remains of the budget; the answers, on disjoint GPUs,
        make one assignment of the whole view, scored by its exact JCT model (:func:`placement_result`).
        ``least`` and ``per`` are each job's smallest size and GPUs per worker, in GPUs: a job whose smallest
        size is more than its group's GPUs, or whose worker needs more GPUs than its group's largest server
        holds (where a server of the cluster does hold it), would wait in its group whatever the others do,
        so then the view is decided unsplit, as ``smd`` does.

        The groups share the budget with the certificate, one more part after them. The bound certifies the
        combined answer against the **unsplit** problem: it is the largest of
        :math:`\frac1n \sum_i J_i^{\mathrm{alone}}` of the whole view (the floor, always) and the whole view's
        Lagrangian :math:`L(\lambda)/n = \frac1n\big(\sum_i \min_c (J_i(c) + \lambda^\top c) - \lambda^\top N\big)`
        over the whole view's configurations (:class:`~dlsched.solvers.hetplace.ConfigTable`) at the prices
        :meth:`_unsplit_bound` visits: :math:`\bar\lambda_g`, the groups' prices of type g averaged with their
        GPUs of type g as weights (always), then subgradient steps from there within what remains of the
        budget (:func:`~dlsched.solvers.hetplace.type_prices`, at most 200 picks, no market). Each is a bound on the
        unsplit optimum: the first because no job runs faster than alone on the whole cluster, the others
        because :math:`L(\lambda) \le \mathrm{OPT}` for every :math:`\lambda \ge 0` (weak duality),
        whatever prices are put in, so a budget that ends the steps leaves a valid one. The sum of
        the groups' own bounds is not one: a group's configurations stop at the group's GPUs and its
        alone JCTs at its largest servers, so each bounds its group's restricted problem, whose optimum may
        exceed the unsplit one (POP's partition is a restriction); only at one price vector for every
        group, with every configuration of the whole view, does the sum become :math:`L(\lambda)` of the
        whole problem, the Lagrangian bound at those prices. The combined answer is feasible for the unsplit problem,
        so its gap against this bound is at least 0."""
        groups = [g for g in self._deal(view, k) if g.size]
        gpus = np.array([int(view.server_gpus[g].sum()) for g in groups])
        jobs = pop_groups(view.n_jobs, len(groups), self.pop_rng, weights=gpus)
        widest = int(view.server_gpus.max())
        ok = all(not J.size or ((least[J] <= K) & ((per[J] <= view.server_gpus[S].max()) | (per[J] > widest))).all()
                 for S, J, K in zip(groups, jobs, gpus))
        if not ok:
            return hetplace(view, opts, samples=self.samples)
        offset = np.cumsum(view.server_gpus) - view.server_gpus      # the view's first GPU of each server
        gpu_job = np.full(view.n_gpus, -1, dtype=np.int64)
        prices, held, stopped = [], [], False
        t0, endable, pack_s = time.perf_counter(), 0.0, 0.0     # the groups' parts that a budget ends, their tails
        for gi, (S, J) in enumerate(zip(groups, jobs)):
            if not J.size:
                continue
            # the certificate counts as one more part: it gets the last share of the budget
            t = time.perf_counter()
            res = hetplace(_subview(view, J, S), opts.within(opts.clock.share(1.0 / (len(groups) - gi + 1))), samples=self.samples)
            if "least_seconds" in res.stats:
                endable += time.perf_counter() - t - res.stats["least_seconds"]
                pack_s += res.stats["after_seconds"]
            sg = view.server_gpus[S]
            # the group's GPU k is the view's: its servers' GPUs, server by server, as both number them
            at = np.repeat(offset[S], sg) + np.arange(int(sg.sum())) - np.repeat(np.cumsum(sg) - sg, sg)
            mine = res.solution.gpu_job >= 0
            gpu_job[at[mine]] = J[res.solution.gpu_job[mine]]
            prices.append(res.stats["prices"])
            held.append(np.bincount(view.server_type[S], weights=sg, minlength=view.n_types))
            stopped |= res.termination == "time_limit"
        held = np.array(held)
        lam = (np.array(prices) * held).sum(axis=0) / np.maximum(held.sum(axis=0), 1.0)
        L, cut = self._unsplit_bound(view, gpu_job, lam, opts)
        bound = max(L, float(alone_jct(view).mean()))
        stats = {"pop_k": len(groups), "lagrangian_bound": L, "prices": lam.tolist()}
        if opts.clock.limited:
            # as the unsplit solver reports them (:meth:`_timed_full`): all but the groups' parts a budget ends
            stats["least_seconds"], stats["after_seconds"] = time.perf_counter() - t0 - endable, pack_s
        return placement_result(view, gpu_job, "hetplace", opts, termination="time_limit" if stopped or cut else "heuristic",
                                bound=bound, stats=stats)

    @staticmethod
    def _unsplit_bound(view: PlacementInstance, gpu_job: np.ndarray, lam: np.ndarray, opts: SolveOptions) -> tuple[float, bool]:
        r"""POP's Lagrangian bound of the unsplit problem (:meth:`_pop`), :math:`\max L(\lambda) / n` over the
        prices it visits, and whether the budget cut it. Always, as the unsplit decision always has its least
        bound: the whole view's configuration table and :math:`L(\bar\lambda)` at the groups' prices (one
        pick: 1-14 ms of 0.16-0.96 s decisions of 2,000 and 10,000 Gavel and DL2 jobs, where the jobs-alone
        bound alone left gaps of 46-94 %); then, within what remains of the budget, the subgradient steps from
        there (:func:`~dlsched.solvers.hetplace.type_prices`, at most 200 picks, Polyak's rule towards the
        combined answer's total JCT, a feasible value of the unsplit problem), which the budget ends at any
        step: every :math:`\lambda \ge 0` gives a bound, so a cut one is as valid. (The steps used to run
        whatever the budget: 0.1-0.2 s of a 10,000-job Gavel decision after the groups had spent it.)"""
        clock = opts.clock
        cut = False

        def spent() -> bool:
            nonlocal cut
            cut = cut or clock.expired()
            return cut

        upper = float(evaluate(view, GpuAssignment(gpu_job, workloads(view, gpu_job))).sum())   # inf: a job left out
        _, L = type_prices(view, ConfigTable(view), upper=upper if np.isfinite(upper) else None, start=lam,
                           stop=spent if clock.limited else None, slack=np.inf)
        return L / view.n_jobs, cut

    def _deal(self, view: PlacementInstance, k: int) -> list[np.ndarray]:
        """:func:`deal_servers` of the view's servers, kept while the servers stay the same."""
        key = (k, view.server_gpus.tobytes(), view.server_type.tobytes())
        if self._server_deal is None or self._server_deal[0] != key:
            self._server_deal = (key, deal_servers(view.server_gpus, view.server_type, k))
        return self._server_deal[1]

    def changes(self, state: ClusterState, events) -> Changes | dict[int, Placement]:
        """The whole allocation of the §4.3 pipeline (:meth:`_full`), or (``incremental``, between full decisions)
        the jobs that start (:meth:`_step`); nothing at a timer. Under a budget that the pipeline cannot hold
        (:meth:`_over_budget`), the jobs that start too: the anytime answer."""
        if state.allocation and not any(e.kind != "timer" for e in events):
            return Changes()                         # re-run at arrivals and completions only
        budgeted = self.decision_record.seconds is not None
        if (self.incremental or budgeted) and self._pace is None:
            self._full_setup(state)
            self._setup_incremental(state)
        if budgeted and self._unkept is not None:
            # the decisions before were unbudgeted (a budget set during a run, as dlsched.bench.decision sets it): what
            # :meth:`_after_full` keeps, from the last one's prices and the allocation now
            self._after_full(state, state.allocation, self._unkept)
            self._unkept = None
        if not self.incremental:
            if budgeted and self._over_budget(state):
                if self.order == "srpt":
                    self.srpt_answers += 1
                    return self._srpt_answer(state)
                self.last_answer, self.kept_answers = "kept", self.kept_answers + 1
                return self._step(state)
            self.last_answer = "full"
            return self._timed_full(state)
        if (self._prices is not None and self.since_full + 1 < self.refresh
                and not (self._step_gap is not None and self._step_gap > self.full_gap + self.refresh_gap)):
            self.since_full += 1
            self.last_answer = "step"
            return self._step(state)
        self.last_answer = "full"
        out, lam = self._full(state)
        self.since_full = 0
        self.full_solves += 1
        self._after_full(state, out, lam)
        obj, bound = self._linear_jct(state, np.fromiter(out, dtype=np.int64, count=len(out)))
        self.full_gap = 0.0 if obj is None else (obj - bound) / obj
        return out

    def _predicted(self, state: ClusterState) -> tuple[float, float]:
        """(least, after): the wall seconds of the last full decision's least work (what no budget ends: the
        §4 view, the solver's always-done parts, ``least_seconds`` of :func:`~dlsched.solvers.hetplace.hetplace`,
        the placement of its answer and the bookkeeping after it) and of the part of it that follows the
        solver's cut (the packing, the placement), each in proportion to the active jobs now: each of these
        parts is a pass over the active jobs. (0, 0) with nothing measured."""
        if self._full_cost is None:
            return 0.0, 0.0
        least, after, jobs = self._full_cost
        scale = len(state.active) / max(jobs, 1)
        return least * scale, after * scale

    def _over_budget(self, state: ClusterState) -> bool:
        """Whether the budget cannot buy the pipeline (``budget_ms``, not ``incremental``): its least work,
        predicted from the last full decision (:meth:`_predicted`), exceeds the budget. Then the decision is
        the anytime answer (:meth:`_step`). The first decision has nothing measured and is a full one.

        Under ``order="srpt"`` the whole of the last full decision, not only its least work, must fit (in
        proportion to the active jobs, ``_full_whole``): a full decision that the budget cuts places only the jobs
        it reaches, and the others, running ones too, wait, where :meth:`_srpt_answer` places every admitted job
        (on Gavel's msr 0e4a51 at 10 ms, 728 such full decisions in 2,324 made a run of 577,845 s against 224,016 s
        unbudgeted)."""
        if self._prices is None:
            return False
        if self.order == "srpt" and self._full_whole is not None:
            seconds, jobs = self._full_whole
            if seconds * len(state.active) / max(jobs, 1) > self.decision_record.seconds:
                return True
        return self._predicted(state)[0] > self.decision_record.seconds

    def _srpt_answer(self, state: ClusterState) -> Changes:
        r"""The decision of ``order="srpt"`` without the §4 solver, where the budget cannot buy the solver
        (:meth:`_over_budget`): the jobs :meth:`_admitted` takes (increasing remaining time on their best type,
        each if its smallest size fits the GPUs left) run, each at its size now (a running job's workers, a
        waiting job's smallest size: the pipeline's size of a rigid job), and the running GPU jobs not admitted
        stop (a shorter arrival preempts them); a waiting elastic job takes the size the kept answer would give it
        (:meth:`_priced`, at the last full decision's type prices). Where the placement, predicted in proportion to the admitted jobs
        from the least cost per job of the last :data:`SRPT_MEASURES` placements (``_srpt_cost``), fits what is
        left of the budget, every admitted job is placed from the empty cluster as a full decision places it (on
        several GPU types by :meth:`_by_type`'s rounds of Smith's rule, else each on its placement where it fits,
        else on the fewest servers: :meth:`_place_one`; ``last_answer`` "srpt"): so the two things that make
        srpt's unbudgeted decisions good, which jobs run and on which type, are re-decided, and only the
        pipeline's sizing of elastic jobs is lost. Otherwise (``last_answer`` "srpt kept") the admitted running
        jobs keep their placements and the admitted waiting ones are placed the same way on the room the others
        leave, until the budget's placement clock ends, placed or not (the rest wait; a preempted job whose room no
        new job took runs on; on one GPU type a job whose shape found no room is not tried again, as in
        :meth:`_step`): srpt's order at a cost in the jobs that change, but no job moves to a faster type. A waiting
        elastic job is priced when the placement reaches it, each request on the room before it tried once
        (:meth:`_priced`'s ``memo``). GPU-less jobs
        keep theirs and the waiting ones start as :meth:`_step` starts them. Records the :meth:`_linear_jct` gap
        of the GPU jobs that run, as :meth:`_step` does."""
        clock = self.decision_record.clock()
        self._decided, self._exchange_s = clock.start, 0.0
        active = np.asarray(state.active, dtype=np.int64)
        gpw = np.rint(state.demand_w[active, self.g]).astype(np.int64)
        K = int(state.cluster.capacity[:, self.g].astype(np.int64).sum())
        take, per = self._admitted(state, active[gpw >= 1], gpw[gpw >= 1], K)
        alloc = state.allocation
        running = np.asarray(state.running, dtype=np.int64)
        on_gpus = running[np.rint(state.demand_w[running, self.g]) >= 1]
        whole = not self._srpt_cost or min(self._srpt_cost) * take.size <= clock.remaining() - clock.margin
        t = time.perf_counter()
        if whole:
            # the room of the empty cluster less what the GPU-less running jobs hold (they stay)
            free = state.cluster.capacity.astype(float).copy()
            for j in np.setdiff1d(running, on_gpus).tolist():
                at, rows = usage(alloc[j], state.demand_w[j], state.demand_p[j])
                free[at] -= rows
            keep: dict[int, Placement] = {}
            new = take
        else:
            free = state.free.copy()
            for j in np.setdiff1d(on_gpus, take).tolist():           # preempted: their room is free
                at, rows = usage(alloc[j], state.demand_w[j], state.demand_p[j])
                free[at] += rows
            keep = {j: alloc[j] for j in np.intersect1d(on_gpus, take).tolist()}
            pick = ~np.isin(take, on_gpus)
            new, per = take[pick], per[pick]
            self._placing = Budget(self.decision_record.seconds - clock.margin, start=clock.start, margin=0.0)
        # a waiting elastic job's size: the kept answer's, least JCT plus the last full decision's type prices on
        # the room before the placement (:meth:`_priced`; the smallest size cost DL2's mix 7 %: docs/hetplace.md),
        # priced only for the jobs the placement reaches (on one GPU type) or before its clock ends (on several)
        room, fits = free.copy(), {}

        def size_of(j: int) -> Placement:
            return alloc.get(j) or (self._priced(state, room, j, fits) if self._min_w[j] < self._max_w[j] else None) or _NOWHERE
        tried = new.size
        if len(self.types) > 1:
            chosen = [_NOWHERE if self._placing is not None and self._placing.expired() else size_of(j) for j in new.tolist()]
            out = self._by_type(state, free, new, per, chosen)
            if self._placement_cut:
                tried = max(len(out), 1)
        else:
            out, tried, full = {}, 0, set()
            for j in new.tolist():
                # the kept running jobs run whatever this pass places: it may stop before placing any (a pass over
                # 364 waiting DL2 jobs that no longer fit took 0.2 s of CPU under a 10-ms budget)
                if self._placement_over(out or keep):
                    break
                if not whole and self._shape[j] in full:
                    continue        # the room only shrinks in this pass: as in :meth:`_step`, one failed try a shape
                tried += 1
                pl = self._place_one(state, free, j, size_of(j), False)
                if pl is not None:
                    out[j] = pl
                else:
                    full.add(self._shape[j])
        self._placing = None
        if tried:       # both measure the placement per job tried (one never tried would never be re-measured)
            self._srpt_cost.append((time.perf_counter() - t - self._exchange_s) / tried)
        placed = np.fromiter(out, dtype=np.int64, count=len(out))
        self._pace[placed] = self._paces(state, placed, list(out.values()))
        stop = []
        for j in np.setdiff1d(on_gpus, placed).tolist():
            if j in keep:
                continue
            at, rows = usage(alloc[j], state.demand_w[j], state.demand_p[j])
            if not whole and (rows <= free[at] + EPS).all():
                free[at] -= rows                    # no new job took its room: it runs on
                keep[j] = alloc[j]
            else:
                stop.append(j)
        # the waiting GPU-less jobs, as the anytime answer starts them (one try per shape while none fits)
        waiting = waiting_jobs(active, alloc, state.running)
        full: set[int] = set()
        for j in waiting[np.rint(state.demand_w[waiting, self.g]) < 1].tolist():
            got = {} if self._shape[j] in full else self._place_rest(state, free, np.array([j]))
            out.update(got)
            if not got:
                full.add(self._shape[j])
        self._tried[:] = False                       # the GPU jobs were re-decided: every waiting job may fit again
        self._last_free = free
        obj, bound = self._linear_jct(state, np.concatenate([placed, np.fromiter(keep, dtype=np.int64, count=len(keep))]))
        self.decision_record.record(obj, bound)
        self._step_gap = None
        self.last_answer = "srpt" if whole else "srpt kept"
        return Changes(out, stop)

    def _timed_full(self, state: ClusterState) -> dict[int, Placement]:
        """:meth:`_full` with its least work measured (``_full_cost``: :meth:`_predicted`'s): the wall time outside the
        solver, and the solver's own ``least_seconds`` (:meth:`_pop`'s: all but its groups' parts that the budget
        ends; without a budget the solver's whole time). Under a budget, with what the anytime answer needs after it
        (:meth:`_after_full`); without one its prices are kept aside (``_unkept``), so that a budget set later in the
        run predicts its first decision from this one (:meth:`changes`) rather than overrun it with nothing measured
        (a 100-ms decision over 2,000 DL2 jobs after an unbudgeted one took 134 ms of CPU). Nothing of an unbudgeted
        decision changes: it reads the clock twice more."""
        out, lam = self._full(state)
        if self.decision_record.seconds is not None:
            self._after_full(state, out, lam)
        else:
            self._unkept = lam
        start, call, back, stats = self._full_times
        # the exchange's search fills what its clock leaves: not the least work (it would cut the next solver)
        end = time.perf_counter() - self._exchange_s
        self._full_whole = (end - start, len(state.active))
        if call is None:                              # nothing for the solver: the view's jobs are none
            self._full_cost = (end - start, end - start, len(state.active))
        else:
            solver = stats.get("least_seconds", back - call)
            self._full_cost = ((call - start) + solver + (end - back), stats.get("after_seconds", 0.0) + (end - back),
                               len(state.active))
        return out

    def _after_full(self, state: ClusterState, out: dict[int, Placement], lam: np.ndarray) -> None:
        """What :meth:`_step` keeps from a full decision: its type prices, every waiting job worth trying again
        (the full decision re-packed the cluster), the paces of the jobs it placed (:meth:`_paces`)."""
        self._prices, self._step_gap = lam, None
        self._tried[:] = False
        jobs = np.fromiter(out, dtype=np.int64, count=len(out))
        self._pace[jobs] = self._paces(state, jobs, list(out.values()))

    def _full(self, state: ClusterState) -> tuple[dict[int, Placement], np.ndarray]:
        r"""The §4.3 pipeline over the active jobs (module docstring): the whole allocation, and the type prices
        :math:`\lambda_g` of its Lagrangian step in the order of ``self.types`` (zeros without GPU jobs)."""
        # the budget runs from here: building the §4 view counts against it
        clock = self.decision_record.clock()
        self._decided, self._exchange_s = clock.start, 0.0
        # the solver's cut leaves room for what follows it (its packing, the placement: as measured last time)
        # and the record's margin (a tenth of the budget: a market round or an exchange runs past the cut)
        reserve = self._predicted(state)[1] + clock.margin if clock.limited else 0.0
        if reserve > 0:
            clock = Budget(max(clock.limit - reserve, 1e-3), start=clock.start, margin=clock.margin)
        opts = SolveOptions(seed=self.rng_seed + self.calls, threads=1, time_limit=self.decision_record.seconds,
                            budget=clock)
        call = back = None
        stats: dict = {}
        self._full_setup(state)
        active = np.asarray(state.active, dtype=np.int64)
        gpw = np.rint(state.demand_w[active, self.g]).astype(np.int64)   # as int(round(.)): halves to even
        gpu_jobs, other = active[gpw >= 1], active[gpw < 1]
        K = int(state.cluster.capacity[:, self.g].astype(np.int64).sum())
        take, per = self._admitted(state, gpu_jobs, gpw[gpw >= 1], K)
        free = state.cluster.capacity.astype(float).copy()
        out: dict[int, Placement] = {}
        lam = np.zeros(len(self.types))
        if take.size:
            view, servers = self._view(state, take, per)
            k = self.pop_k if active.size >= self.pop_min else 1
            call = time.perf_counter()
            res = hetplace(view, opts, samples=self.samples) if k == 1 else self._pop(view, opts, k, self._min_w[take] * per, per)
            back = time.perf_counter()
            stats = res.stats if clock.limited else {}          # a budget's measures (:meth:`_timed_full`)
            self.calls += 1
            price = dict(zip(view.gpu_types, res.stats["prices"]))
            lam = np.array([price.get(t or "gpu", 0.0) for t in self.types])
            # each job's GPUs per server, servers ascending: one sort of the (job, server) pairs
            S, gpu_job = state.cluster.n_servers, res.solution.gpu_job
            held = gpu_job >= 0
            pair, count = np.unique(gpu_job[held] * S + servers[view.gpu_server][held], return_counts=True)
            start = np.searchsorted(pair // S, np.arange(take.size + 1))
            srv, cnt = pair % S, count // np.repeat(per, np.diff(start))
            whole = (self.order == "arrival" and self.placer_name == "consolidated" and self.whole_cluster
                     and self._whole_gpus(state)[take].all())
            place = self._place_whole if whole else self._place_kept if self.order == "arrival" else self._place_chosen
            # the placement of the answer stops at the whole call's budget (:meth:`_place_chosen`), less the time of
            # the GPU-less jobs' pass after it, which no clock stops (as long a job as at the last pass)
            rest = self._rest_cost * other.size
            self._placing = (Budget(max(self.decision_record.seconds - clock.margin - rest, 0.0), start=clock.start,
                                    margin=0.0) if clock.limited else None)
            t = time.perf_counter()
            self._placement_cut = False
            out = place(state, free, take, per, start, srv, cnt)
            if self.order == "srpt":
                # :meth:`_srpt_answer`'s prior
                self._srpt_cost.append((time.perf_counter() - t - self._exchange_s) / take.size)
            self._record_full(state, res, out)
        self._placing = None
        if other.size:
            # every GPU-less job that fits runs, as without a budget: its placement is cheap (no GPU type to choose)
            # and its time was kept back from the GPU jobs' (a cut here had left DL2's 496 waiting at 100 ms)
            t = time.perf_counter()
            out.update(self._place_rest(state, free, other))
            self._rest_cost = (time.perf_counter() - t) / other.size
        self._last_free = free
        self._full_times = (clock.start, call, back, stats)
        return out, lam

    def _full_setup(self, state: ClusterState) -> None:
        """The per-trace-job tables, on the first call: rho rows (filled as jobs are seen), sizes, PS or not."""
        jobs = state.jobs
        if self._rho_tab is None:
            self._rho_tab, self._rho_known = np.zeros((len(jobs), len(self.types))), np.zeros(len(jobs), dtype=bool)
        if self._min_w is None:
            self._min_w = np.array([job.min_workers for job in jobs], dtype=np.int64)
            self._max_w = np.array([job.max_workers for job in jobs], dtype=np.int64)
            self._ps = np.array([job.uses_ps for job in jobs], dtype=bool)

    def _place_rest(self, state: ClusterState, free: np.ndarray, other: np.ndarray) -> dict[int, Placement]:
        """The jobs without GPUs, in order, each at the largest size the cluster holds (asking for
        max_workers that never fit left such jobs waiting for ever), placed by the placer on ``free``;
        updates ``free``. A one-worker job without PSs under the consolidated placer goes to the first
        server with the most slots for it, as :func:`~dlsched.sim.placement.consolidated` puts it,
        without building its placement and usage anew (OpenB's CPU-only and small-GPU pods, a third of
        the active jobs: this loop was 14 % of a run's CPU). Once a job has not fitted, a job whose request
        (its workers' and PSs' demands, each resource summed) exceeds the cluster's free room summed over the
        servers is not tried: no placer fits it (a server counts a task where its room is within
        :data:`~dlsched.sim.placement.EPS` of the task's, hence the slack). On DL2's mix 303 of 495 GPU-less
        jobs of 34 CPUs each were tried once the free CPUs had fallen below 34, each a pass of the placer. Never stopped by a budget's
        placement clock: :meth:`_full` keeps this pass's time back from the GPU jobs' placement."""
        out: dict[int, Placement] = {}
        alone = self.placer_name == "consolidated"
        pool = None                  # several jobs placed by the placer: a :meth:`_pool` (DL2's GPU-less PS jobs)
        room = None                  # after a job that did not fit: the free room summed over the servers
        for j in other.tolist():
            lo, hi, ps = int(self._min_w[j]), int(self._max_w[j]), 1 if self._ps[j] else 0
            size = lo if lo == hi else self._empty.largest(state.demand_w[j], state.demand_p[j], lo, hi, ps)[0]
            if room is not None:
                need = size * state.demand_w[j] + ps * state.demand_p[j]
                if ((need > 0) & (room < need * (1.0 - 2 * EPS) - EPS)).any():
                    continue
            n = len(out)
            if alone and size == 1 and not ps:
                slots = task_slots(free, state.demand_w[j])
                s = int(np.argmax(slots))
                if slots[s] >= 1:
                    free[s] -= state.demand_w[j]
                    out[j] = self._placement({s: 1})
                    if pool is not None:
                        pool.refresh([s])
            else:
                if pool is None and other.size > 1:
                    pool = self._pool(free)
                if pool is not None:
                    pl = pool.fit(state.demand_w[j], state.demand_p[j], size, ps)
                    if pl is not None:
                        pool.hold(pl, state.demand_w[j], state.demand_p[j])
                        out[j] = pl
                else:
                    pl = self.placer.fit(free, state.demand_w[j], state.demand_p[j], size, ps)
                    if pl is not None:
                        srv, rows = usage(pl, state.demand_w[j], state.demand_p[j])
                        free[srv] -= rows
                        out[j] = pl
            room = free.sum(axis=0) if len(out) == n else None
        return out

    # ------------------------------------------------------------------ incremental decisions

    def _setup_incremental(self, state: ClusterState) -> None:
        """Per trace job: its pace, whether it waits having found no room, and its shape class (jobs of one
        class fit the same free room: worker and PS demands, sizes, PS or not)."""
        n = len(state.jobs)
        self._pace, self._tried = np.zeros(n), np.zeros(n, dtype=bool)
        shape = np.column_stack([state.demand_w, state.demand_p, self._min_w, self._max_w, self._ps])
        classes, self._shape = np.unique(shape, axis=0, return_inverse=True)
        self._shape = self._shape.reshape(-1)
        R = state.demand_w.shape[1]
        self._class_w = classes[:, :R]
        # a class whose jobs are one worker without PSs fits wherever a server holds one worker
        self._class_one = (classes[:, 2 * R] == 1) & (classes[:, 2 * R + 2] == 0)
        self._class_min = classes[:, 2 * R]

    def _rho_of(self, state: ClusterState, j: int) -> np.ndarray:
        """:meth:`_rho_row` of job j (its GPUs per worker from its demand)."""
        return self._rho_row(state, j, max(1, int(round(state.demand_w[j, self.g]))))

    def _placement_over(self, out: dict) -> bool:
        """Whether a full answer's placement stops here: some job is placed and the placement clock of the whole
        call's budget (``_placing``, set by the full decision) has run out; the jobs not yet placed wait (noted in
        ``_placement_cut``: the decision then certifies what runs, :meth:`_record_full`)."""
        over = bool(out) and self._placing is not None and self._placing.expired()
        self._placement_cut = self._placement_cut or over
        return over

    def _record_full(self, state: ClusterState, res, out: dict[int, Placement]) -> None:
        """Record a full decision's gap: the §4 solver's objective and bound where its answer was placed whole;
        where the budget stopped the placement (:meth:`_placement_over`) the solver's objective is of jobs that do not
        run, so the gap is that of what runs, :meth:`_linear_jct` of the GPU jobs placed, as the anytime answers
        record theirs (its bound, each job alone at its largest size on its fastest type, holds on any state)."""
        if not self._placement_cut:
            self.decision_record.record(res.objective, res.bound)
            return
        placed = np.fromiter(out, dtype=np.int64, count=len(out))
        self._pace[placed] = self._paces(state, placed, list(out.values()))
        self.decision_record.record(*self._linear_jct(state, placed))

    def _paces(self, state: ClusterState, jobs: np.ndarray, placements: list[Placement]) -> np.ndarray:
        r"""Each job's pace on its placement in the §4 view, :math:`\sum_k \rho_{j,k}` over its GPUs (0 without
        GPUs), in numpy passes over the (job, server) pairs (a loop over the 2,000 jobs of a DL2 decision cost as
        much as the decision's placement)."""
        gpw = np.rint(state.demand_w[jobs, self.g]).astype(np.int64)
        sized = gpw >= 1
        self._rho_rows(state, jobs[sized], gpw[sized])
        srv = [s for pl in placements for s in pl.workers]
        cnt = [k for pl in placements for k in pl.workers.values()]
        pair = np.repeat(np.arange(jobs.size), [len(pl.workers) for pl in placements])
        srv, cnt = np.array(srv, dtype=np.int64), np.array(cnt, dtype=np.int64)
        terms = (cnt * gpw[pair]) * self._rho_tab[jobs[pair], self.server_type[srv]]
        pace = np.bincount(pair, weights=terms, minlength=jobs.size)
        return np.where(sized, pace, 0.0)

    def _linear_jct(self, state: ClusterState, jobs: np.ndarray) -> tuple[float | None, float]:
        r"""Average JCT of the GPU jobs of ``jobs`` in the §4 view (:math:`J_j = T_j / \sum_k \rho_{j,k}`, no
        communication term) at their paces, and its lower bound: each alone at its largest size on its fastest
        type, :math:`T_j / (\min(M_j g_j, K) \max_g \rho_{j,g})`. (None, 0) without GPU jobs."""
        jobs = jobs[self._pace[jobs] > 0]
        if not jobs.size:
            return None, 0.0
        rem = np.asarray(state.remaining)[jobs]
        gpw = np.rint(state.demand_w[jobs, self.g])
        K = float(state.cluster.capacity[:, self.g].astype(np.int64).sum())
        best = self._rho_tab[jobs].max(axis=1) * np.minimum(self._max_w[jobs] * gpw, K)
        return float((rem / self._pace[jobs]).mean()), float((rem / best).mean())

    def _step(self, state: ClusterState) -> Changes:
        r"""An incremental decision (``incremental``), or the anytime answer of a budget that the pipeline cannot
        hold (:meth:`_over_budget`): the running jobs keep their placements; the waiting jobs
        that may fit now, in arrival order (``order="srpt"``: :meth:`_admitted`'s order), start at the last full decision's type prices :math:`\lambda` on the
        free room (:meth:`_priced`; GPU-less jobs as :meth:`_place_rest` places them), at most one GPU job per
        GPU as in :meth:`_admitted`. A waiting job that found no room is tried again only once a server it may
        fit has more room (a completion freed it): one test per job shape and such server, so that an event
        costs the jobs it lets start, not the jobs that wait. Records the decision's :meth:`_linear_jct` gap."""
        free = state.free.copy()
        waiting = waiting_jobs(np.asarray(state.active, dtype=np.int64), state.allocation, state.running)
        # servers with more room than the last decision left: freed since, by completions
        grew = np.flatnonzero((free > self._last_free + 1e-9).any(axis=1))
        tried = self._tried[waiting]
        keep = ~tried
        keep[~tried] = self._may_fit(free, slice(None), self._shape[waiting[~tried]])
        if grew.size and tried.any():
            keep[tried] = self._may_fit(free, grew, self._shape[waiting[tried]])
        self._tried[waiting[~keep]] = True          # no room for them: tried without a search
        cand = waiting[keep]
        gpw = np.rint(state.demand_w[cand, self.g]).astype(np.int64)
        K = int(state.cluster.capacity[:, self.g].astype(np.int64).sum())
        running = np.asarray(state.running, dtype=np.int64)
        slots = K - int((np.rint(state.demand_w[running, self.g]) >= 1).sum())
        out: dict[int, Placement] = {}
        # the room only shrinks in this pass: once a job finds none, the later jobs of its shape find none either
        full: set[int] = set()
        first = cand[gpw >= 1]
        if self.order == "srpt":
            # srpt's order (:meth:`_admitted`): increasing remaining time on one worker of the best type
            best = self._rho_rows(state, first, gpw[gpw >= 1]).max(axis=1) * gpw[gpw >= 1]
            first = first[np.argsort(np.asarray(state.remaining)[first] / best, kind="stable")]
        for j in first.tolist():
            if slots <= 0:
                break                               # the rest stay untried: they may start once a GPU job ends
            pl = None if self._shape[j] in full else self._priced(state, free, j)
            if pl is None:
                self._tried[j] = True
                full.add(self._shape[j])
                continue
            at, rows = usage(pl, state.demand_w[j], state.demand_p[j])
            free[at] -= rows
            out[j] = pl
            slots -= 1
        started = np.fromiter(out, dtype=np.int64, count=len(out))
        self._pace[started] = self._paces(state, started, list(out.values()))
        for j in cand[gpw < 1].tolist():
            placed = {} if self._shape[j] in full else self._place_rest(state, free, np.array([j]))
            out.update(placed)
            if not placed:
                self._tried[j] = True
                full.add(self._shape[j])
        self._last_free = free
        obj, bound = self._linear_jct(state, np.concatenate([running, np.fromiter(out, dtype=np.int64, count=len(out))]))
        self._step_gap = None if obj is None else self.decision_record.record(obj, bound)
        return Changes(out)

    def _may_fit(self, free: np.ndarray, rows, shape: np.ndarray) -> np.ndarray:
        """Per job of shape class ``shape``: whether it may start on ``free`` (servers x resources) now that
        the servers ``rows`` have more room (every server: ``slice(None)``): a one-worker job without PSs iff
        one of those servers holds its worker (exact: the others held none before); any other job iff the
        cluster has slots for its smallest size (what every placer needs). One test per class."""
        cls, inv = np.unique(shape, return_inverse=True)
        one = self._class_one[cls]
        fits = np.empty(cls.size, dtype=bool)
        if one.any():
            room, need = free[rows], self._class_w[cls[one]]
            fits[one] = (room[None, :, :] >= need[:, None, :] - 1e-9).all(axis=2).any(axis=1)
        for k in np.flatnonzero(~one).tolist():
            fits[k] = task_slots(free, self._class_w[cls[k]]).sum() >= self._class_min[cls[k]]
        return fits[inv.reshape(-1)]

    def _priced(self, state: ClusterState, free: np.ndarray, j: int, memo: dict | None = None) -> Placement | None:
        r"""Job j on ``free`` at the kept type prices: its (size n, type g) pairs in increasing
        :math:`T_j / (n g_j \rho_{j,g}) + \lambda_g n g_j` (the §4 view's JCT plus the GPUs' price, the order
        of the Lagrangian step's pick), the first that fits: one worker without PSs on the server of type g
        with the least free GPUs that holds it (the pipeline's best fit), more on the fewest servers of the
        type; else the placer at the smallest size, over any types. None if nothing fits. ``memo``: a dict the
        caller keeps while ``free`` does not change, holding each placement tried per request (demands, size, PSs,
        type), which depends on ``free`` and the request alone: :meth:`_srpt_answer` prices every waiting job on one
        room, and DL2's waiting PS jobs, a few shapes, tried each of their sizes on all 3,250 servers (3.3 ms of
        CPU a job, 1.2 s a decision)."""
        dw, dp = state.demand_w[j], state.demand_p[j]
        gpw, ps = int(round(dw[self.g])), bool(self._ps[j])
        memo = {} if memo is None else memo
        shape = (dw.tobytes(), dp.tobytes())

        def tried(key: tuple, place):
            key = (shape, *key)
            if key not in memo:
                memo[key] = place()
            return memo[key]
        rho = self._rho_of(state, j)
        sizes = np.arange(int(self._min_w[j]), int(self._max_w[j]) + 1)
        m = (sizes * gpw)[:, None]
        cost = float(state.remaining[j]) / (m * rho[None, :]) + self._prices[None, :] * m
        if ps:
            # the §4 model has no PS: the sizes in that order (each at its cheapest type), wherever the placer puts them
            for n in sizes[np.argsort(cost.min(axis=1), kind="stable")].tolist():
                k = n_ps(state.jobs[j], n)
                pl = tried(("placer", n, k), lambda: self.placer.fit(free, dw, dp, n, k))
                if pl is not None:
                    return pl
            return None
        for k in np.argsort(cost, axis=None, kind="stable").tolist():
            n, g = int(sizes[k // len(self.types)]), k % len(self.types)
            if n == 1:
                pl = tried(("one", g), lambda: self._best_fit_one(free, dw, g))
            else:
                pl = tried(("type", n, g), lambda: consolidated(self._only_type(free, g), dw, dp, n, 0))
            if pl is not None:
                return pl
        n = int(self._min_w[j])
        return tried(("placer", n, 0), lambda: self.placer.fit(free, dw, dp, n, 0))

    def _best_fit_one(self, free: np.ndarray, dw: np.ndarray, g: int) -> Placement | None:
        """One worker of demand ``dw`` (no PS) on the server of GPU type g with the least free GPUs that holds it
        (ties by index); None if none does."""
        ok = np.flatnonzero((free >= dw - 1e-9).all(axis=1) & self.on_type[g])
        return self._placement({int(ok[np.argmin(free[ok, self.g])]): 1}) if ok.size else None


def _workers(srv: list[int], cnt: list[int], lo: int, hi: int) -> dict[int, int]:
    """One job's workers per server from the pipeline's (job, server) pairs ``lo:hi`` (``srv`` servers,
    ``cnt`` workers), the servers where it holds none left out."""
    return {s: k for s, k in zip(srv[lo:hi], cnt[lo:hi]) if k}


def deal_servers(gpus: np.ndarray, types: np.ndarray, k: int) -> list[np.ndarray]:
    """POP's server groups: the servers (``gpus`` GPUs each, of type ``types``) dealt into ``min(k, servers)``
    groups with as equal a share of each type's GPUs as the servers allow: type by type, servers of more GPUs
    first (ties by index), each to the group with the fewest GPUs of that type so far, ties to the group with
    the fewest GPUs in all, then the first (the largest-first rule for unequal servers; with servers of one
    size, a round robin). Each group's servers ascending."""
    k = max(1, min(int(k), gpus.size))
    of_type, total = np.zeros((k, int(types.max(initial=0)) + 1)), np.zeros(k)
    member = np.empty(gpus.size, dtype=np.int64)
    for s in np.lexsort((np.arange(gpus.size), -gpus, types)).tolist():
        t = int(types[s])
        g = int(np.lexsort((np.arange(k), total, of_type[:, t]))[0])
        member[s] = g
        of_type[g, t] += gpus[s]
        total[g] += gpus[s]
    return [np.flatnonzero(member == g) for g in range(k)]


def _subview(view: PlacementInstance, jobs: np.ndarray, servers: np.ndarray) -> PlacementInstance:
    """The §4 instance of ``view``'s jobs ``jobs`` on its servers ``servers`` (the same GPU types, a job's
    largest size at most the servers' GPUs)."""
    K = int(view.server_gpus[servers].sum())
    names = [view.job_names[i] for i in jobs.tolist()]
    return PlacementInstance(view.gpu_types, tuple(view.server_names[s] for s in servers.tolist()), view.server_type[servers],
                             view.server_gpus[servers], tuple(names), tuple(view.job_types[i] for i in jobs.tolist()),
                             view.rho[jobs], view.global_batch[jobs], view.iterations[jobs], view.model_size_mb[jobs],
                             np.minimum(view.max_workers[jobs], K), view.intra_gbps, view.inter_gbps, view.communication,
                             view.workload, source=view.source)

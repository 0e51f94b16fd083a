r"""The SMD family on the simulator (MODELS.md §2.3, §2.4): converter, speed source, policies, runner.

* :func:`to_trace` turns an :class:`SMDInstance` into (Trace, Cluster, speed source) so the same
  jobs can be simulated by every policy. The SMD model has aggregate capacity (schedules place no
  servers), so the cluster is one pooled server holding :math:`C^r`; job j arrives at
  :math:`a_j \Delta` seconds and needs :math:`R_j` iterations at :math:`1/\tau_j(w, p)` per second
  (:class:`SMDSpeed`). Jobs with :math:`R_j = 0` or that fit nowhere are left out of the trace
  (``meta["index"]`` maps trace jobs back to the instance).
* :class:`SMDPolicy` is the SMD decision (outer selection + parametric iteration, §2.3) and
  :class:`OptimusGreedyPolicy` Optimus's one-shot marginal-gain greedy (§5), both re-deciding at
  every call; on a generic trace they see :math:`\tau_j(w, p)` through the simulator's speed
  source (:func:`instance_view`) and are placed by a shared placer (first fit by default).
* :func:`run` simulates a family instance on the SMD slot grid (:class:`~dlsched.policies.slotted.Slotted`)
  and returns the :class:`Schedule` that ``check_smd`` verifies: C_j is the slot the job completes in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.instance.smd import SMDInstance, require_aggregate
from dlsched.sim.engine import simulate
from dlsched.sim.placement import make_placer
from dlsched.policies.fluid import fluid_shares, pareto_configs
from dlsched.policies.optimus import marginal_gain_allocation
from dlsched.policies.slotted import Slotted, completion_slot
from dlsched.sim.policy import ClusterState, Placement, PolicyContext
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.smd import TIE_BREAK, decide


# ----------------------------------------------------------------------------- converter

class SMDSpeed:
    """Iterations per second of an SMD job: :math:`1/\\tau_j(w, p)` of the instance (MODELS.md §2.1); 0 without a PS."""

    def __init__(self, inst: SMDInstance):
        self.inst = inst

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        w, p = placement.n_workers, placement.n_ps
        if w < 1 or p < 1:
            return 0.0
        return 1.0 / float(self.inst.tau(int(job.meta["index"]), w, p))


def to_trace(inst: SMDInstance) -> tuple[Trace, Cluster, SMDSpeed]:
    """(Trace, pooled one-server Cluster, speed source) of ``inst`` (module docstring)."""
    require_aggregate(inst)
    skip = set(inst.unschedulable)
    delta = float(inst.slot_seconds)
    jobs = []
    for j in range(inst.n_jobs):
        if inst.iterations[j] <= 0 or j in skip:
            continue
        jobs.append(Job(name=inst.job_names[j], arrival=float(inst.arrival[j]) * delta, job_type=inst.job_type[j],
                        iterations=float(inst.iterations[j]),
                        worker_demand={r: float(v) for r, v in zip(inst.resources, inst.d[j]) if v > 0},
                        ps_demand={r: float(v) for r, v in zip(inst.resources, inst.e[j]) if v > 0},
                        min_workers=int(inst.min_workers[j]), max_workers=int(inst.max_workers[j]),
                        max_ps=int(inst.max_ps[j]),
                        weight=float(inst.weight[j]), meta={"index": j, "family": "smd", "smd": inst}))
    cluster = Cluster(tuple(inst.resources), inst.capacity[None, :], ("",), np.zeros(1, np.int64), ("pool",),
                      source=f"{inst.source} (pooled capacity)")
    return Trace.sorted(jobs, source=inst.source), cluster, SMDSpeed(inst)


class _SpeedView(SMDInstance):
    """An SMD instance whose :math:`\\tau_j(w, p)` is read from a speed source (a generic trace)."""

    def tau(self, j, w, p):
        job, cluster, speed = self.meta["jobs"][j], self.meta["cluster"], self.meta["speed"]
        w, p = np.broadcast_arrays(np.asarray(w), np.asarray(p))
        ps = job.uses_ps          # an all-reduce job is modelled with P_j = 1 PS that does not exist
        out = np.array([1.0 / max(speed.rate(job, Placement({0: int(a)}, {0: int(b)} if b and ps else {}), cluster), 1e-300)
                        for a, b in zip(w.ravel().tolist(), p.ravel().tolist())]).reshape(w.shape)
        return out if out.ndim else float(out)

    @cached_property
    def min_workers(self) -> np.ndarray:
        # a job of fixed size (min_workers = max_workers, gang-scheduled) has no smaller configuration
        return np.array([job.min_workers for job in self.meta["jobs"]], dtype=np.int64)

    def _config_key(self, j: int) -> tuple:
        return (j,)


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
    return _SpeedView(name="trace", resources=res, server_cap=cluster.capacity, server_names=tuple(cluster.names),
                      profiles={j.job_type: None for j in jobs}, job_names=tuple(j.name for j in jobs),
                      job_type=tuple(j.job_type for j in jobs), batch=np.ones(n),
                      iterations=np.array([j.iterations for j in jobs]), weight=np.array([j.weight for j in jobs]),
                      arrival=np.array([j.arrival for j in jobs]) / slot_seconds, d=d, e=e, slot_seconds=slot_seconds,
                      max_workers=np.array([j.max_workers for j in jobs]),
                      max_ps=np.array([max(j.max_ps, 1) for j in jobs]),
                      meta={"jobs": list(jobs), "cluster": cluster, "speed": speed})


# ----------------------------------------------------------------------------- policies

class _AllocationPolicy:
    """Calls ``allocate(view, active) -> (n, 2)`` on the SMD view and packs the answer (event-driven)."""

    name = "smd-allocation"
    slot_seconds = None

    def __init__(self, inst: SMDInstance | None = None, placer: str = "first_fit"):
        self.inst = inst
        self.placer = make_placer(placer)

    def reset(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.view = self.inst
        self.index = None
        self._limits = None           # (jobs, min workers, max workers, uses PSs) of the trace

    def allocate(self, view: SMDInstance, active: np.ndarray) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

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
        if self._limits is None or self._limits[0] is not state.jobs:
            jobs = state.jobs
            self._limits = (jobs, np.array([j.min_workers for j in jobs]), np.array([j.max_workers for j in jobs]),
                            np.array([j.uses_ps for j in jobs], dtype=bool))
        _, minw, maxw, uses_ps = self._limits
        # a fixed-size job runs with its size or waits; an all-reduce job has no PS
        w, p = alloc[self.index[active], 0], alloc[self.index[active], 1]
        ok = (minw[active] <= w) & (w <= maxw[active])
        p = np.where(uses_ps[active], p, 0)
        sizes = {j: (a, b) for j, a, b in zip(active[ok].tolist(), w[ok].tolist(), p[ok].tolist())}
        return self.placer.place(state, sizes)


class SMDPolicy(_AllocationPolicy):
    """SMD (MODELS.md §2.3): one decision per call over the active jobs, slot-aware costs by default."""

    name = "smd"

    def __init__(self, inst: SMDInstance | None = None, opts=None, placer: str = "first_fit", **kw):
        super().__init__(inst, placer)
        self.opts = opts or SolveOptions(threads=1)
        self.kw = {"slot_aware": True, "wait_slots": 1.0, "tie_break": TIE_BREAK, **kw}

    def allocate(self, view, active):
        return decide(view, active, self.opts, **self.kw)[0]


def optimus_policy(inst: SMDInstance, active: np.ndarray, alpha: float = 0.0, start: str = "arrival",
                   pairs: bool = False, shares: float | str | None = None) -> np.ndarray:
    r"""Optimus's marginal-gain greedy (MODELS.md §5) with the known τ -> (n, 2) allocation (w, p).

    The one greedy :func:`dlsched.policies.optimus.marginal_gain_allocation` on the remaining
    times :math:`T_j(p, w) = R_j \tau_j(w, p)`: every active job starts with 1 PS + its fewest
    workers (1, or a gang-scheduled job's whole size; in arrival order, as long as they fit; the
    others wait), then the task with the largest positive gain
    :math:`(T_j(p, w) - T_j(p', w')) / \max_r \text{demand}^r / C^r` is added until no gain is
    positive or nothing fits. ``ps_le_workers`` makes every p > w unreachable.

    The options are :class:`SRPTGreedyPolicy`'s (not Optimus): ``alpha`` > 0 divides job j's gains
    by :math:`(T_j^{\min})^\alpha`, its remaining time at its fastest size to the power α (α = 1:
    the fraction of its remaining time a task saves, Optimus's ``gain="relative"``); ``start =
    "shortest"`` starts the jobs in order of :math:`T_j^{\min}` instead of arrival; ``pairs``
    as in :func:`marginal_gain_allocation`; ``shares`` = p (:class:`HeSRPTPolicy`'s) replaces each
    first size by the fastest (p, w) within the job's share of :func:`hesrpt_shares` by its rank in
    that order (its dominant resource share at most θ; the fewest workers if none is within it);
    ``shares = "fluid"`` (:class:`FluidPolicy`'s) takes θ from :func:`~dlsched.policies.fluid.fluid_shares`
    instead, the fluid LP of the active jobs completing in that order.
    """
    idx = np.sort(np.asarray(active, dtype=np.int64))
    alloc = np.zeros((inst.n_jobs, 2), dtype=np.int64)
    if not idx.size:
        return alloc
    # every job's grid at once, padded with inf to the largest (elementwise: the same IEEE operations per job)
    grid = _tau_stack(inst, idx)
    times3 = inst.iterations[idx][:, None, None] * grid
    finite = np.isfinite(times3)
    fastest = np.where(finite, times3, np.inf).min(axis=(1, 2))
    order = np.lexsort((idx, inst.arrival[idx] if start == "arrival" else fastest)).tolist()
    w0s = inst.min_workers[idx]
    # a job whose only finite time is at its first size (or that has none) keeps it whatever its share
    one = finite.sum(axis=(1, 2)) - finite[np.arange(idx.size), 1, np.minimum(w0s, grid.shape[2] - 1)] <= 0
    theta = None
    if shares == "fluid":
        if not one.all():                             # else no share can move a first size: no LP
            times = [inst.iterations[j] * _tau_grid(inst, int(j)) for j in idx.tolist()]
            configs = [_pareto(inst, int(j)) for j in idx.tolist()]
            lp = fluid_shares(times, inst.d[idx], inst.e[idx], inst.capacity, order, configs)
            theta = None if lp is None else lp[0]
    elif shares is not None:
        theta = np.empty(idx.size)
        theta[order] = hesrpt_shares(idx.size, shares)
    if alpha:
        # Python floats: the same pow() of the C library as a numpy scalar's, without numpy's per-element cost
        scale = np.array([f ** alpha if 0 < f < math.inf else 1.0 for f in fastest.tolist()])
        times3 = np.where((np.isfinite(fastest) & (fastest > 0))[:, None, None], times3 / scale[:, None, None], times3)
    # the padded grids as they are: an inf cell is a size the job cannot take, whatever the shape says
    times = times3
    first_sizes = [(1, w0) for w0 in w0s.tolist()]
    if theta is not None:
        for i in order:
            if not one[i]:
                fit = _fastest_within(times[i], inst.d[idx[i]], inst.e[idx[i]], inst.capacity, float(theta[i]))
                first_sizes[i] = fit or first_sizes[i]
    sizes = marginal_gain_allocation(times, inst.d[idx], inst.e[idx], inst.capacity, inst.capacity,
                                     first_sizes, order=order, pairs=pairs)
    if sizes:
        alloc[idx[np.fromiter(sizes, np.int64, len(sizes))]] = np.array(list(sizes.values()), dtype=np.int64)[:, ::-1]
    return alloc


def hesrpt_shares(m: int, p: float) -> np.ndarray:
    r"""heSRPT's shares of the cluster for m jobs listed shortest first (Berg, Vesilo and Harchol-Balter,
    "heSRPT: Optimal parallel scheduling of jobs with known sizes", arXiv:1903.09346).

    With every job's speedup :math:`k^p` (0 < p < 1) and no arrivals, the optimal schedule completes
    the jobs in size order and gives the job of rank i (i = 1 the largest, ..., m the smallest)
    :math:`\theta_i = (i/m)^{1/(1-p)} - ((i-1)/m)^{1/(1-p)}` of the servers: the shares sum to 1 and
    grow as the jobs get shorter (p -> 1, linear speedup: all to the shortest, SRPT; p -> 0: equal
    shares).
    """
    c = 1.0 / (1.0 - p)
    i = np.arange(m, 0, -1, dtype=float)
    return (i / m) ** c - ((i - 1) / m) ** c


def _fastest_within(T: np.ndarray, d: np.ndarray, e: np.ndarray, capacity: np.ndarray,
                    theta: float) -> tuple[int, int] | None:
    """(p, w) of least ``T[p, w]`` whose dominant share max_r (p e_r + w d_r) / C_r is at most θ (None if none)."""
    P, W = T.shape
    use = np.arange(P)[:, None, None] * e + np.arange(W)[None, :, None] * d
    share = np.max(np.where(capacity > 0, use / np.where(capacity > 0, capacity, 1.0), 0.0), axis=2)
    within = np.where(np.isfinite(T) & (share <= theta + 1e-12), T, np.inf)
    k = int(np.argmin(within))
    return divmod(k, W) if np.isfinite(within.flat[k]) else None


def _tau_grid(inst: SMDInstance, j: int) -> np.ndarray:
    """τ_j(w, p) as an array [p, w] over 0..P_j × 0..W_j (inf at p = 0, w = 0 and, with
    ``ps_le_workers``, at p > w); cached with the instance's configurations (shared by re-plans)."""
    def make() -> np.ndarray:
        W, P = int(inst.max_workers[j]), int(inst.max_ps[j])
        p, w = np.meshgrid(np.arange(1, P + 1), np.arange(1, W + 1), indexing="ij")
        grid = np.full((P + 1, W + 1), np.inf)
        grid[1:, 1:] = np.asarray(inst.tau(j, w.ravel(), p.ravel()), dtype=float).reshape(p.shape)
        grid[:, :int(inst.min_workers[j])] = np.inf
        if inst.options.ps_le_workers:
            grid[np.greater.outer(np.arange(P + 1), np.arange(W + 1))] = np.inf
        return grid
    return inst.cached(("optimus-tau", inst._config_key(j)), make)


def _tau_stack(inst: SMDInstance, jobs: np.ndarray) -> np.ndarray:
    """The :func:`_tau_grid` of each job in ``jobs`` stacked, padded with inf to one shape; a job's
    grid is read once and kept with the instance's configurations, so a re-plan copies rows instead
    of reading a grid per job."""
    key = ("optimus-tau-stack",)
    stack, shape = inst.cached(key, lambda: (np.full((inst.n_jobs, 2, 2), np.inf), np.zeros((inst.n_jobs, 2), dtype=np.int64)))
    new = jobs[shape[jobs, 0] == 0]
    if new.size:
        grids = [_tau_grid(inst, int(j)) for j in new.tolist()]
        P = max(stack.shape[1], max(g.shape[0] for g in grids))
        W = max(stack.shape[2], max(g.shape[1] for g in grids))
        if (P, W) != stack.shape[1:]:
            wider = np.full((stack.shape[0], P, W), np.inf)
            wider[:, :stack.shape[1], :stack.shape[2]] = stack
            stack = wider
        for j, g in zip(new.tolist(), grids):
            stack[j, :g.shape[0], :g.shape[1]] = g
            shape[j] = g.shape
        inst._config_cache[key] = (stack, shape)           # a wider stack replaces the kept one
    return stack[jobs]


def _pareto(inst: SMDInstance, j: int) -> np.ndarray:
    """:func:`~dlsched.policies.fluid.pareto_configs` of job j's τ grid, cached with its configurations."""
    return inst.cached(("pareto", inst._config_key(j)), lambda: pareto_configs(_tau_grid(inst, j), inst.d[j], inst.e[j]))


class OptimusGreedyPolicy(_AllocationPolicy):
    """Optimus's marginal-gain greedy fed the known τ (no fitting), re-run at every call (MODELS.md §5)."""

    name = "optimus-greedy"
    #: :func:`optimus_policy`'s options (Optimus's own greedy: none)
    options: dict = {}

    def allocate(self, view, active):
        return optimus_policy(view, active, **self.options)


class SRPTGreedyPolicy(OptimusGreedyPolicy):
    """Optimus's greedy fed the known τ, gains divided by the job's shortest remaining time squared, shortest started first (not Optimus).

    :func:`optimus_policy` with ``alpha`` (default 2), ``start`` ("shortest" or "arrival") and
    ``pairs`` (default True): a task is worth the time it saves over the square of the job's
    remaining time at its fastest size, which favours short jobs as SRPT does; every job still gets
    a first worker and PS (shortest first) so none starves. The defaults were chosen on DL2's
    tuning and training traces (docs/dl2.md, "Choosing the teacher"), as DL2's warm-up teacher.
    """

    name = "srpt-greedy"

    def __init__(self, inst: SMDInstance | None = None, placer: str = "first_fit", alpha: float = 2.0,
                 start: str = "shortest", pairs: bool = True):
        super().__init__(inst, placer)
        if start not in ("shortest", "arrival"):
            raise InputError("<argument>", "start", "'shortest' or 'arrival'", start)
        if not (np.isfinite(alpha) and alpha >= 0):
            raise InputError("<argument>", "alpha", "a finite number >= 0", alpha)
        self.options = {"alpha": float(alpha), "start": start, "pairs": bool(pairs)}


class HeSRPTPolicy(SRPTGreedyPolicy):
    """heSRPT's shares of the cluster (Berg et al., optimal for speedup k^p without arrivals) as first sizes, then srpt-greedy's fill (not a seed paper's).

    :func:`optimus_policy` with ``shares`` = ``speedup_exponent``: at every call the active jobs,
    shortest remaining time (at the fastest size) first, get as first size the fastest (p, w) within
    their share of :func:`hesrpt_shares`; what is left is filled by ``srpt-greedy``'s gains
    (``alpha``, ``pairs``). heSRPT assumes one speedup curve k^p for all jobs; DL2's measured ones
    differ, so p is a parameter: 0.6 was chosen on DL2's tuning traces 2000–2002 and checked on
    training traces 1000–1003 (docs/dl2.md, "Choosing the teacher").
    """

    name = "hesrpt"

    def __init__(self, inst: SMDInstance | None = None, placer: str = "first_fit", speedup_exponent: float = 0.6,
                 alpha: float = 2.0, pairs: bool = True):
        super().__init__(inst, placer, alpha=alpha, start="shortest", pairs=pairs)
        if not 0 < speedup_exponent < 1:
            raise InputError("<argument>", "speedup_exponent", "a number in (0, 1)", speedup_exponent)
        self.options["shares"] = float(speedup_exponent)


class FluidPolicy(SRPTGreedyPolicy):
    """The fluid LP of the active jobs (shortest first, no further arrivals) gives each its share of the cluster until the next completion, then srpt-greedy's fill (not a seed paper's).

    :func:`optimus_policy` with ``shares="fluid"``: at every call the LP of
    :mod:`dlsched.policies.fluid` over the active jobs' Pareto-efficient sizes, each job's
    average dominant share θ in its first phase, the fastest (p, w) within θ as first size, what
    is left filled by ``srpt-greedy``'s gains (``alpha``, ``pairs``). Unlike :class:`HeSRPTPolicy`
    it uses every job's own measured speedup curve instead of one k^p; DL2's warm-up teacher
    (docs/dl2.md, "The fluid teacher").
    """

    name = "fluid"

    def __init__(self, inst: SMDInstance | None = None, placer: str = "first_fit", alpha: float = 2.0,
                 pairs: bool = True):
        super().__init__(inst, placer, alpha=alpha, start="shortest", pairs=pairs)
        self.options["shares"] = "fluid"


# ----------------------------------------------------------------------------- the family runner

@dataclass
class Schedule:
    """w[k, j], p[k, j] for slots k = 0..T-1 (slot k + 1), completion slot per job (-1: none)."""

    w: np.ndarray
    p: np.ndarray
    completion: np.ndarray
    objective: float
    complete: bool
    unschedulable: list[int]
    decisions: int
    decision_seconds: list[float] = field(default_factory=list)
    termination: str = "completed"

    def as_solution(self) -> dict:
        return {"schedule": np.stack([self.w, self.p], axis=2)}


def slot_cap(inst: SMDInstance) -> int:
    """A generous number of slots: every job run one after the other on its slowest kept configuration."""
    skip = set(inst.unschedulable)
    todo = [j for j in range(inst.n_jobs) if inst.iterations[j] > 0 and j not in skip]
    slow = sum(math.ceil(inst.iterations[j] * float(inst.configurations(j).tau.max()) / inst.slot_seconds) for j in todo)
    return int(np.ceil(inst.arrival.max(initial=0) - 1e-9) + slow + 2)


def run(inst: SMDInstance, policy, replan: str = "events", max_slots: int | None = None,
        deadline: float | None = None) -> Schedule:
    """Simulate ``policy`` on ``inst``'s slot grid (re-deciding after arrivals and completions, or every slot).

    Arrivals of jobs left out of the trace still trigger a re-decision, as any arrival does.
    """
    n, delta = inst.n_jobs, float(inst.slot_seconds)
    unsched = sorted(inst.unschedulable)
    completion = np.full(n, -1, dtype=np.int64)
    completion[inst.iterations <= 0] = 0
    trace_jobs = [j for j in range(n) if inst.iterations[j] > 0 and j not in set(unsched)]
    if not trace_jobs:
        z = np.zeros((0, n), np.int64)
        return Schedule(z, z, completion, 0.0, True, unsched, 0)
    trace, cluster, speed = to_trace(inst)
    left_out = [j for j in range(n) if j not in set(trace_jobs)]
    wake = np.ceil(inst.arrival[left_out] - 1e-9).astype(np.int64) if left_out else []
    slotted = Slotted(policy, delta, replan=replan, wake=wake)
    cap = slot_cap(inst) if max_slots is None else int(max_slots)
    res = simulate(trace, cluster, slotted, speed, max_time=cap * delta, deadline=deadline)
    index = np.array([int(j.meta["index"]) for j in trace.jobs], dtype=np.int64)
    done_at = np.asarray(res.completion, dtype=float)
    for t, j in zip(done_at.tolist(), index.tolist()):
        if np.isfinite(t):
            completion[j] = completion_slot(t, delta)
    T = int(max(completion.max(initial=0), max(slotted.history, default=-1) + 1))
    W = np.zeros((T, n), np.int64)
    P = np.zeros((T, n), np.int64)
    held: dict[int, Placement] = {}
    for k in range(T):
        held = slotted.history.get(k, held)
        for tj, pl in held.items():
            j = int(index[tj])
            if completion[j] < 0 or k < completion[j]:
                W[k, j], P[k, j] = pl.n_workers, pl.n_ps
    ok = completion >= 0
    objective = float(np.sum(inst.weight[ok & (completion > 0)] * completion[ok & (completion > 0)]))
    complete = bool(all(completion[j] >= 0 for j in trace_jobs))
    return Schedule(W, P, completion, objective, complete, unsched, slotted.decisions, slotted.decision_seconds,
                    termination=res.status)

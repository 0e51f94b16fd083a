r"""The OASiS family on the simulator (MODELS.md §3.1–§3.3): converter, speed source, policies, runner.

* :func:`to_trace` turns an :class:`OasisInstance` into (Trace, Cluster, speed source). Worker
  servers h come first, then PS servers k (server ``H + k``); two role resources,
  ``oasis_worker`` and ``oasis_ps``, exist only on their own role's servers (with room for every
  unit that could fit there), and a worker or PS task demands one unit of its role, so the engine
  itself refuses a PS on a worker server. Job i arrives at the start of its arrival slot,
  :math:`(a_i - 1)\Delta`, needs :math:`R_i` worker-slots of work and progresses y worker-slots per
  slot with y workers, provided it has the :math:`\lceil b_i y / B_i \rceil` PSs they need
  (:class:`OasisSpeed`); its utility is :math:`f_i` of its duration in slots.
* :class:`SlotView` is the slot-level view two OASiS baselines decide on (free capacity of worker
  and PS servers, allocations, remaining work), and :class:`SlotDecide` runs a policy written
  against it (``decide(t, sim, arrived, completed)``) in the engine.
* :class:`OasisPolicy` is the online primal-dual algorithm (MODELS.md §3.2,
  :mod:`dlsched.solvers.oasis`): at the boundary of a job's arrival slot it prices the job's best
  schedule over the remaining slots, admits it iff the surplus is positive, and from then on runs
  the committed plan slot by slot.
* :func:`run` simulates a family instance over slots 1..T (``max_time`` = T slots): a job not
  finished by T earns nothing and its allocations are dropped from the schedule (which keeps
  every capacity constraint), as ``check_oasis`` expects.
"""

from __future__ import annotations

import time
from typing import Annotated

import numpy as np

from dlsched.arguments import Range, checked
from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.oasis import OasisInstance, OasisSchedule
from dlsched.instance.workload import Job, Trace
from dlsched.sim.engine import simulate
from dlsched.sim.placement import fill_in_order, task_slots
from dlsched.sim.slots import completion_slot, slot_of
from dlsched.policies.slotted import Slotted, deadline_left
from dlsched.sim.policy import ClusterState, Placement, PolicyContext
from dlsched.policies.budget import BudgetMs, DecisionRecord
from dlsched.solvers.oasis import Prices, admit, price_params

ROLES = ("oasis_worker", "oasis_ps")


# ----------------------------------------------------------------------------- converter

def first_fit(free: np.ndarray, demand: np.ndarray, count: int) -> np.ndarray | None:
    """Place ``count`` units on servers in index order (as many per server as fit); None if they do not."""
    return fill_in_order(task_slots(free, demand), count)


class OasisSpeed:
    """Worker-slots per second of an OASiS job: y / Δ with y workers, 0 without the PSs they need (§3.1)."""

    def __init__(self, inst: OasisInstance, slot_seconds: float):
        self.inst = inst
        self.slot_seconds = float(slot_seconds)

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        i, y = int(job.meta["index"]), placement.n_workers
        if y < 1 or placement.n_ps < int(self.inst.ps_needed(i, y)):
            return 0.0
        return min(y, int(self.inst.chunks[i])) / self.slot_seconds


def to_trace(inst: OasisInstance, slot_seconds: float | None = None) -> tuple[Trace, Cluster, OasisSpeed]:
    """(Trace, Cluster, speed source) of ``inst`` (module docstring); ``slot_seconds`` defaults to Δ of the instance.

    Every job is in the trace (``meta["index"]`` is its index in the instance), including those that
    can never run: a policy reports them (:meth:`OasisInstance.infeasible_reason`).
    """
    delta = float(inst.slot_seconds if slot_seconds is None else slot_seconds)
    H, K = inst.n_worker_servers, inst.n_ps_servers
    res = tuple(inst.resources) + ROLES
    cap = np.zeros((H + K, len(res)))
    cap[:H, :len(inst.resources)] = inst.worker_cap
    cap[H:, :len(inst.resources)] = inst.ps_cap
    # every job's units that fit the empty server, summed: a role capacity that never binds
    cap[:H, -2] = np.maximum(inst.worker_fit().sum(axis=0), 1)
    cap[H:, -1] = np.maximum(inst.ps_fit().sum(axis=0), 1)
    cluster = Cluster(res, cap, ("",) * (H + K), np.zeros(H + K, np.int64), tuple(inst.worker_names) + tuple(inst.ps_names),
                      source=f"{inst.source} (worker servers 0..{H - 1}, PS servers {H}..{H + K - 1})")
    work = inst.work()
    jobs = []
    for i in range(inst.n_jobs):
        u = inst.utilities[i]
        jobs.append(Job(name=inst.job_names[i], arrival=float(inst.arrival[i] - 1) * delta,
                        job_type=inst.job_classes[i] if inst.job_classes else "oasis", iterations=float(work[i]),
                        worker_demand={**{r: float(v) for r, v in zip(inst.resources, inst.worker_demand[i]) if v > 0}, ROLES[0]: 1.0},
                        ps_demand={**{r: float(v) for r, v in zip(inst.resources, inst.ps_demand[i]) if v > 0}, ROLES[1]: 1.0},
                        min_workers=1, max_workers=int(inst.chunks[i]), max_ps=max(int(inst.ps_needed(i, int(inst.chunks[i]))), 1),
                        workers_per_ps=float(inst.ps_gbps[i] / inst.worker_gbps[i]),
                        utility=lambda s, u=u: float(u(max(1, int(np.ceil(s / delta - 1e-9))))),
                        meta={"index": i, "family": "oasis", "oasis": inst}))
    return Trace.sorted(jobs, source=inst.source), cluster, OasisSpeed(inst, delta)


def instance_of(jobs, policy: str) -> tuple[OasisInstance, np.ndarray]:
    """The OASiS instance behind a trace made by :func:`to_trace`, and the instance index of every trace job."""
    insts = {id(j.meta.get("oasis")) for j in jobs}
    if len(insts) != 1 or jobs[0].meta.get("oasis") is None:
        raise InputError("<trace>", "jobs[*].meta", f"an OASiS trace (dlsched.policies.oasis.to_trace) for policy '{policy}'",
                         "jobs without OASiS utilities, work and bandwidths")
    return jobs[0].meta["oasis"], np.array([int(j.meta["index"]) for j in jobs], dtype=np.int64)


# ----------------------------------------------------------------------------- the policies' slot view

class SlotView:
    """The cluster as an OASiS baseline sees it in slot ``t``: free capacity, allocations, remaining work.

    ``assign``/``release`` keep ``free_w`` (H, R) and ``free_p`` (K, R) in step with ``alloc``
    (job -> per-server workers (H,) and PSs (K,)); :class:`SlotDecide` syncs completions and
    remaining work from the engine before every decision.
    """

    def __init__(self, inst: OasisInstance):
        self.inst = inst
        self.free_w = inst.worker_cap.astype(float).copy()
        self.free_p = inst.ps_cap.astype(float).copy()
        self.alloc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.remaining = inst.work().astype(np.int64).copy()
        self.done = np.zeros(inst.n_jobs, bool)
        self.reasons: dict[int, str] = {}
        self.t = 0

    def release(self, i: int) -> None:
        if i in self.alloc:
            y, z = self.alloc.pop(i)
            self.free_w += y[:, None] * self.inst.worker_demand[i]
            self.free_p += z[:, None] * self.inst.ps_demand[i]

    def assign(self, i: int, y: np.ndarray, z: np.ndarray) -> None:
        """Give job i the per-server workers y (H,) and PSs z (K,) (its old allocation released first)."""
        self.release(i)
        if y.sum() == 0:
            return
        self.free_w -= y[:, None] * self.inst.worker_demand[i]
        self.free_p -= z[:, None] * self.inst.ps_demand[i]
        self.alloc[i] = (y.astype(np.int64), z.astype(np.int64))

    def try_bundle(self, i: int, workers: int) -> tuple[np.ndarray, np.ndarray] | None:
        """First-fit placement of ``workers`` workers and their fewest PSs in the free capacity."""
        y = first_fit(self.free_w, self.inst.worker_demand[i], workers)
        if y is None:
            return None
        z = first_fit(self.free_p, self.inst.ps_demand[i], int(self.inst.ps_needed(i, workers)))
        if z is None:
            return None
        return y, z

    def can_finish(self, i: int, t: int, workers: int | None = None) -> bool:
        """Whether job i could still finish by T from slot t at ``workers`` per slot (N_i by default)."""
        w = int(workers or self.inst.chunks[i])
        return t + -(-int(self.remaining[i]) // max(w, 1)) - 1 <= self.inst.horizon


def _placement(y: np.ndarray, z: np.ndarray, H: int) -> Placement:
    return Placement({int(h): int(y[h]) for h in np.flatnonzero(y)}, {H + int(k): int(z[k]) for k in np.flatnonzero(z)})


class SlotDecide:
    """An engine policy running a slot-level OASiS policy (``decide(t, sim, arrived, completed)``).

    Called (through :class:`Slotted`) at the start of every slot t: jobs that can never run are
    reported with their reason and never shown to the policy, the others arriving since the last
    call are ``arrived``; completions since then are released and passed as ``completed``.
    """

    def __init__(self, make, name: str):
        self.make = make
        self.name = name
        self.slot_seconds = None

    def reset(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.sim = None

    def schedule(self, state: ClusterState, events) -> dict[int, Placement]:
        if self.sim is None:
            self.inst, self.index = instance_of(state.jobs, self.name)
            self.blocked = self.inst.infeasible_reasons()
            self.trace_of = {int(i): tj for tj, i in enumerate(self.index.tolist())}
            self.sim = SlotView(self.inst)
            self.policy = self.make(self.inst)
        sim, inst = self.sim, self.inst
        t = slot_of(state.time, _slot(self.ctx)) + 1
        sim.t = t
        completed, arrived = [], []
        for e in events:
            i = int(self.index[e.job]) if e.job is not None else None
            if e.kind == "completion" and i in sim.alloc:
                completed.append(i)
            elif e.kind == "arrival":
                why = self.blocked[i]
                if why is not None:
                    sim.reasons[i] = why
                else:
                    arrived.append(i)
        for i in completed:
            sim.done[i] = True
            sim.release(i)
        live = np.asarray(state.active, dtype=np.int64)
        sim.remaining[self.index[live]] = np.rint(np.asarray(state.remaining)[live]).astype(np.int64)
        self.policy.decide(t, sim, arrived, completed)
        H = inst.n_worker_servers
        return {self.trace_of[i]: _placement(y, z, H) for i, (y, z) in sim.alloc.items()}

    @property
    def reasons(self) -> dict[int, str]:
        return {} if self.sim is None else self.sim.reasons


def _slot(ctx: PolicyContext) -> float:
    return float(ctx.speed.slot_seconds)


# ----------------------------------------------------------------------------- OASiS online primal-dual

class OasisPolicy:
    r"""OASiS (MODELS.md §3.2) as a policy: price, admit and plan each arrival; run the committed plans.

    ``params`` are U and L (:class:`dlsched.solvers.oasis.PriceParams`); by default the formula's
    values over the whole instance times ``u_scale``/``l_scale`` (the estimates of §3.2).

    What a call solves is the pricing of each job that arrives: the best surplus
    :math:`\max(0, \max_s f_i(s) - \text{cost}(s))` over its schedules s at the current prices (0: rejected), by
    the exact DP of :func:`~dlsched.solvers.oasis.dual_subroutine`. ``record`` (a
    :class:`~dlsched.policies.budget.DecisionRecord`) gets, per call with arrivals, the sum over them of the surplus
    committed against the sum of the passes' bounds (:attr:`~dlsched.solvers.oasis.DualResult.bound`), both
    negated (the record takes a minimisation): gap 0 where every pass ran to its end or its pruning. Under a budget
    (``record.seconds``; ``clock`` gives the running call's) a pass stops when the call's clock is spent and its job
    is judged by the best schedule found so far (``anytime``), the bound then counting what the unexamined
    completion slots could earn.
    """

    name = "oasis"
    slot_seconds = None

    def __init__(self, u_scale: float = 1.0, l_scale: float = 1.0, l_min_share: float = 0.0, params=None,
                 record: DecisionRecord | None = None, clock=None):
        self.u_scale, self.l_scale, self.l_min_share = float(u_scale), float(l_scale), float(l_min_share)
        self.params = params
        self.record = record if record is not None else DecisionRecord()
        self.clock = clock if clock is not None else self.record.clock

    def reset(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.state = None

    def _start(self, jobs) -> None:
        self.inst, self.index = instance_of(jobs, self.name)
        self.trace_of = {int(i): tj for tj, i in enumerate(self.index.tolist())}
        params = self.params or price_params(self.inst, self.u_scale, self.l_scale, self.l_min_share)
        self.state = Prices(self.inst, params)
        n = self.inst.n_jobs
        self.plans: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}
        self.reasons: dict[int, str] = {}
        self.decision = np.zeros(n)
        self.surplus = np.full(n, np.nan)

    def admit(self, i: int, budget=None, bounds: list | None = None) -> float:
        """The dual subroutine for job i at current prices, within ``budget`` (anytime); its plan is committed if the
        surplus is positive. Returns the surplus committed (0 for a job rejected); the pass's bound is appended to
        ``bounds``."""
        t_start = time.perf_counter()
        why, plan, self.surplus[i] = admit(self.state, i, budget, anytime=True, bounds=bounds)
        if plan is not None:
            self.plans[i] = plan
        if why is not None:
            self.reasons[i] = why
        self.decision[i] = time.perf_counter() - t_start
        return float(self.surplus[i]) if plan is not None else 0.0

    def schedule(self, state: ClusterState, events) -> dict[int, Placement]:
        if self.state is None:
            self._start(state.jobs)
        clock = self.clock()
        budget = clock if clock.limited else None
        won, bounds = [], []
        for e in events:
            if e.kind == "arrival":
                won.append(self.admit(int(self.index[e.job]), budget, bounds))
        if won:
            self.record.record(-sum(won), -sum(bounds))
        t = slot_of(state.time, _slot(self.ctx)) + 1
        H = self.inst.n_worker_servers
        out = {}
        for i, (t0, y, z) in self.plans.items():
            k = t - t0
            tj = self.trace_of[i]
            if 0 <= k < y.shape[0] and y[k].any() and not state.done[tj]:
                out[tj] = _placement(y[k], z[k], H)
        return out


# ----------------------------------------------------------------------------- the family runner

def engine_setting(inst: OasisInstance) -> tuple[Trace, Cluster, OasisSpeed, float]:
    """The engine's trace, cluster, speed source and horizon (its ``max_time``) for ``inst``: time in slots (Δ = 1 s
    in the engine), so that work, a whole number of worker-slots, is done exactly, over slots 1..T. What
    :func:`run`, ``dlsched simulate INSTANCE.json`` and :func:`dlsched.simulate` give the engine."""
    trace, cluster, speed = to_trace(inst, slot_seconds=1.0)
    return trace, cluster, speed, float(inst.horizon)


def run(inst: OasisInstance, policy, deadline: float | None = None) -> tuple[OasisSchedule, dict]:
    """Simulate ``policy`` over slots 1..T on ``inst``; the schedule (finished jobs only) and statistics.

    Time runs in slots (Δ = 1 s in the engine) so that work, a whole number of worker-slots, is
    done exactly. Every slot is a decision point, as in the OASiS evaluation. ``deadline`` (seconds)
    runs from this call, the set-up before the engine included.
    """
    until = None if deadline is None else time.monotonic() + deadline
    trace, cluster, speed, horizon = engine_setting(inst)
    slotted = Slotted(policy, 1.0, replan="slots")
    res = simulate(trace, cluster, slotted, speed, max_time=horizon, deadline=deadline_left(until))
    index = np.array([int(j.meta["index"]) for j in trace.jobs], dtype=np.int64)
    n, H = inst.n_jobs, inst.n_worker_servers
    done = np.zeros(n, bool)
    completion = np.zeros(n, np.int64)
    for t, i in zip(np.asarray(res.completion, dtype=float).tolist(), index.tolist()):
        if np.isfinite(t) and t <= inst.horizon + 1e-9:
            done[i], completion[i] = True, completion_slot(t, 1.0)
    wrows, prows = [], []
    for k, held in sorted(slotted.history.items()):
        if k >= inst.horizon:
            continue
        for tj, pl in held.items():
            i = int(index[tj])
            wrows += [(i, k + 1, s, c) for s, c in pl.workers.items() if c]
            prows += [(i, k + 1, s - H, c) for s, c in pl.ps.items() if c]
    W = np.array(wrows, np.int64).reshape(-1, 4)
    P = np.array(prows, np.int64).reshape(-1, 4)
    inner = slotted.inner
    reasons = dict(getattr(inner, "reasons", {}))
    blocked, started = inst.infeasible_reasons(), set(W[:, 0].tolist())
    for i in np.flatnonzero(~done).tolist():
        if i not in reasons:
            reasons[i] = blocked[i] or ("did not finish by T" if i in started else "never started")
    keep_w, keep_p = done[W[:, 0]], done[P[:, 0]]
    sched = OasisSchedule(done, W[keep_w], P[keep_p], completion, {i: r for i, r in reasons.items() if not done[i]})
    info = {"wasted_worker_slots": int(W[~keep_w, 3].sum()), "decisions": slotted.decisions,
            # reaching T is the end of an OASiS run; only the wall-clock limit cuts it short
            "termination": "time_limit" if res.status == "time_limit" else "completed"}
    return sched, info


# ----------------------------------------------------------------------------- named policies for OASiS traces

class _OnOasisSlots(Slotted):
    """A slot-level OASiS policy as an engine policy on a trace from :func:`to_trace` (slots of that trace's Δ)."""

    #: the family whose instances (through :func:`to_trace`) it runs on: ``dlsched simulate`` refuses any other trace
    trace_family = "oasis"

    def __init__(self, inner):
        super().__init__(inner, 1.0, replan="slots")

    def reset(self, ctx: PolicyContext) -> None:
        if not isinstance(ctx.speed, OasisSpeed):
            raise InputError("<argument>", "speed", f"the OASiS speed source of to_trace() for policy '{self.name}'",
                             type(ctx.speed).__name__)
        self.slot_seconds = ctx.speed.slot_seconds
        super().reset(ctx)


class OASiS(_OnOasisSlots):
    """OASiS online primal-dual admission and scheduling (MODELS.md §3.2) on an OASiS trace."""

    name = "oasis"

    @checked
    def __init__(self, u_scale: Annotated[float, Range(gt=0, finite=True)] = 1.0,
                 l_scale: Annotated[float, Range(gt=0, finite=True)] = 1.0,
                 l_min_share: Annotated[float, Range(ge=0, le=1)] = 0.0, budget_ms: BudgetMs | None = None):
        self.decision_record = DecisionRecord(budget_ms)
        self.clock = self.decision_record.clock()
        super().__init__(OasisPolicy(u_scale, l_scale, l_min_share, record=self.decision_record, clock=lambda: self.clock))

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self.decision_record.reset()

    def schedule(self, state: ClusterState, events):
        self.clock = self.decision_record.clock()     # the budget is the whole call's (OasisPolicy)
        return super().schedule(state, events)

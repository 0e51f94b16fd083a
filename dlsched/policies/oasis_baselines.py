"""The baselines of the OASiS evaluation (MODELS.md §3.3) as policies on OASiS traces (:mod:`dlsched.policies.oasis`).

* ``fifo``: jobs in arrival order, each with a fixed worker count (``workers``, default N_i,
  capped by what the empty cluster holds) and the fewest PSs that serve them; strict head-of-line
  blocking; an allocation is held until the job finishes: the simulator's one FIFO
  (:class:`dlsched.policies.fifo.FIFO`, placed first fit) with those sizes, whose queue drops a job
  that can no longer finish by T (:class:`FifoPolicy`).
* ``drf``: the simulator's one DRF (:class:`dlsched.policies.drf.DRF`, progressive filling by
  worker+PS bundles, placed first fit) over the jobs that could finish by T with N_i workers when
  they arrived (:class:`DrfPolicy`).
* ``risk_reward``: our reading of a risk-reward heuristic (docs/oasis.md): at every event,
  active jobs are ranked by reward per resource, f_i(earliest completion from now) divided by
  the remaining work times the dominant share of one worker bundle; a job whose reward has
  fallen below ``risk`` times its best utility is dropped (the risk of sinking resources in a
  job whose utility is gone); the ranked jobs get N_i workers each, as far as they fit.
* ``dorm``: a Dorm-like utilisation maximiser, in :func:`dorm_policy`: at every event an integer
  program over (workers, PSs) per active job maximises the cluster's utilised share subject to
  aggregate capacities and a fairness floor, then the counts are placed first fit.

Every baseline knows job sizes but not prices; all of them skip a job that cannot finish by T
even at full speed (it could earn nothing), recording the reason.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Annotated

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from dlsched.arguments import Range, checked
from dlsched.instance.oasis import OasisInstance
from dlsched.policies.budget import BudgetMs, DecisionRecord
from dlsched.sim.placement import task_slots
from dlsched.sim.slots import slot_of
from dlsched.policies.drf import DRF
from dlsched.policies.fifo import FIFO
from dlsched.policies.oasis import SlotDecide, SlotView, _OnOasisSlots, instance_of


def _max_workers_empty(inst: OasisInstance, i: int) -> int:
    """Largest worker count of job i (with its PSs) that the empty cluster holds, at most N_i."""
    wmax = int(task_slots(inst.worker_cap, inst.worker_demand[i]).sum())
    pmax = int(task_slots(inst.ps_cap, inst.ps_demand[i]).sum())
    w = min(int(inst.chunks[i]), wmax)
    while w > 0 and int(inst.ps_needed(i, w)) > pmax:
        w -= 1
    return w


# ----------------------------------------------------------------------------- FIFO

class FifoPolicy(FIFO):
    """FIFO on the OASiS cluster: the one FIFO with fixed worker counts over the jobs admitted at arrival.

    A job is admitted when it arrives if it could finish by T with its fixed count ``workers``
    (default N_i, capped by what the empty cluster holds) and leaves the queue, its reason recorded,
    when it reaches the head and can no longer finish by T.
    """

    @checked
    def __init__(self, workers: Annotated[int, Range(ge=1)] | None = None):
        super().__init__(placer="first_fit")
        self.workers = workers

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.inst = None
        self.reasons: dict[int, str] = {}
        self.queued: set[int] = set()

    def _can_finish(self, state, j: int) -> bool:
        """Whether job j could still finish by T from slot t at its fixed count (:meth:`SlotView.can_finish`)."""
        w = self.fixed[int(self.index[j])]
        left = int(np.rint(state.remaining[j]))
        return self.t + -(-left // max(w, 1)) - 1 <= self.inst.horizon

    def schedule(self, state, events):
        if self.inst is None:
            self.inst, self.index = instance_of(state.jobs, self.name)
            self.blocked = self.inst.infeasible_reasons()
            inst = self.inst
            self.fixed = {i: min(_max_workers_empty(inst, i), int(self.workers) if self.workers else int(inst.chunks[i]))
                          for i in range(inst.n_jobs)}
        self.t = slot_of(state.time, float(self.ctx.speed.slot_seconds)) + 1
        for e in events:
            if e.kind != "arrival":
                continue
            i = int(self.index[e.job])
            why = self.blocked[i]
            if why is None and (self.fixed[i] < 1 or not self._can_finish(state, e.job)):
                why = "cannot finish by T at its fixed worker count"
            if why is None:
                self.queued.add(e.job)
            else:
                self.reasons[i] = why
        return super().schedule(state, events)

    def waiting(self, state, j: int) -> bool:
        if j not in self.queued:
            return False
        if not self._can_finish(state, j):
            self.reasons[int(self.index[j])] = "waited until it could no longer finish by T"
            self.queued.discard(j)
            return False
        return True

    def size(self, state, j: int) -> tuple[int, int]:
        i = int(self.index[j])
        return self.fixed[i], int(self.inst.ps_needed(i, self.fixed[i]))


# ----------------------------------------------------------------------------- DRF

def _dominant(inst: OasisInstance):
    """Per job, the dominant share of one worker and of one PS (over the whole cluster)."""
    total = inst.worker_cap.sum(axis=0) + inst.ps_cap.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ws = np.where(total > 0, inst.worker_demand / total, 0).max(axis=1)
        ps = np.where(total > 0, inst.ps_demand / total, 0).max(axis=1)
    return ws, ps


class DrfPolicy(DRF):
    """DRF on the OASiS cluster: the one DRF over the jobs admitted at arrival, placed first fit.

    A job is admitted when it arrives if it could finish by T with N_i workers (otherwise it could
    earn nothing and its reason is recorded).
    """

    def __init__(self):
        super().__init__(placer="first_fit")

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.sim = None
        self.admitted: set[int] = set()

    @property
    def reasons(self) -> dict[int, str]:
        return {} if self.sim is None else self.sim.reasons

    def candidates(self, state, events):
        if self.sim is None:
            self.inst, self.index = instance_of(state.jobs, self.name)
            self.blocked = self.inst.infeasible_reasons()
            self.sim = SlotView(self.inst)
        t = slot_of(state.time, float(self.ctx.speed.slot_seconds)) + 1
        for e in events:
            if e.kind != "arrival":
                continue
            i = int(self.index[e.job])
            why = self.blocked[i]
            if why is None and not self.sim.can_finish(i, t):
                why = "cannot finish by T even with N workers"
            if why is None:
                self.admitted.add(e.job)
            else:
                self.sim.reasons[i] = why
        return np.array([j for j in state.active.tolist() if j in self.admitted], dtype=np.int64)


# ----------------------------------------------------------------------------- shared helpers

def _largest_bundle(sim: SlotView, i: int, upto: int):
    """The largest worker count <= ``upto`` (with its PSs) that fits now, placed first fit."""
    inst = sim.inst
    y_cap = int(task_slots(sim.free_w, inst.worker_demand[i]).sum())
    for w in range(min(upto, y_cap), 0, -1):
        b = sim.try_bundle(i, w)
        if b is not None:
            return b
    return None


class _EventPolicy:
    """Keeps the active set; reallocates at arrivals and completions via ``allocate``."""

    name = "event"

    def __init__(self, inst: OasisInstance):
        self.inst = inst
        self.active: list[int] = []

    def decide(self, t, sim: SlotView, arrived, completed):
        for i in arrived:
            if sim.can_finish(i, t):
                self.active.append(i)
            else:
                sim.reasons[i] = "cannot finish by T even with N workers"
        if not arrived and not completed:
            return
        self.active = [i for i in self.active if not sim.done[i]]
        for i in self.active:
            sim.release(i)
        self.allocate(t, sim)

    def allocate(self, t, sim):  # pragma: no cover - overridden
        raise NotImplementedError


# ----------------------------------------------------------------------------- risk-reward

class RiskRewardPolicy(_EventPolicy):
    """Reward per resource with a risk cut-off (docs/oasis.md).

    ``preempt=False`` (default, like the non-preemptive task service the heuristic comes from):
    a started job keeps its workers until it finishes; at each event the waiting jobs are ranked
    and started while they fit. ``preempt=True``: every active job is re-ranked and re-allocated
    at every event (elastic), a stronger policy than the paper's baselines.
    """

    name = "risk_reward"

    def __init__(self, inst: OasisInstance, risk: float = 0.05, preempt: bool = False):
        super().__init__(inst)
        self.risk = float(risk)
        self.preempt = bool(preempt)
        self.ws, self.ps = _dominant(inst)
        self.best = np.array([float(inst.utility_of(i, d)) for i, d in enumerate(inst.min_duration())])

    def decide(self, t, sim: SlotView, arrived, completed):
        if self.preempt:
            return super().decide(t, sim, arrived, completed)
        for i in arrived:
            self.active.append(i)
        if arrived or completed:
            self.active = [i for i in self.active if not sim.done[i]]
            self.allocate(t, sim, [i for i in self.active if i not in sim.alloc])

    def _reward(self, sim, i, t, workers):
        d = t - int(self.inst.arrival[i]) + -(-int(sim.remaining[i]) // max(workers, 1))
        return float(self.inst.utility_of(i, d)), t + -(-int(sim.remaining[i]) // max(workers, 1)) - 1 <= self.inst.horizon

    def allocate(self, t, sim, waiting=None):
        inst = self.inst
        waiting = list(self.active) if waiting is None else waiting
        scores = {}
        for i in waiting:
            reward, fits = self._reward(sim, i, t, int(inst.chunks[i]))
            if not fits or reward <= 0 or reward < self.risk * self.best[i]:
                self.active.remove(i)
                sim.reasons[i] = f"dropped at slot {t}: best reward {reward:.3g} below {self.risk:g} x its best utility"
                continue
            bundle = self.ws[i] + self.ps[i] * float(inst.worker_gbps[i] / inst.ps_gbps[i])
            scores[i] = reward / (max(int(sim.remaining[i]), 1) * max(bundle, 1e-12))
        for i in sorted(scores, key=lambda j: -scores[j]):
            b = _largest_bundle(sim, i, int(inst.chunks[i]))
            if b is None:
                continue
            reward, fits = self._reward(sim, i, t, int(b[0].sum()))
            if fits and reward > 0 and reward >= self.risk * self.best[i]:
                sim.assign(i, *b)


# ----------------------------------------------------------------------------- Dorm-like

#: seconds a call of scipy's ``milp`` costs however early its time limit cuts it, before a decision has measured its
#: own (3-7 ms of CPU at a limit of 1 ms on the generated paper instances of 100 and 300 jobs, 2026-11-28), and the
#: calls whose least fixed part is the measured one (:class:`DormPolicy`)
MILP_FLOOR_PRIOR, MILP_FLOOR_WINDOW = 4e-3, 8


class DormPolicy(_EventPolicy):
    r"""At every event: max utilisation + fairness over integer totals (y_i, z_i), then first-fit.

    .. math::

        \max \sum_i \sum_r \frac{w_i^r y_i + s_i^r z_i}{C^r} + \lambda\,|J|\,u
        \quad\text{s.t.}\quad \sum_i w_i^r y_i \le \sum_h c_h^r,\;
        \sum_i s_i^r z_i \le \sum_k c_k^r,\; b_i y_i \le B_i z_i,\; z_i \le y_i \le N_i,\;
        u \le \sigma_i y_i,\; u \le 1

    with :math:`\sigma_i` the dominant share of one worker of job i and :math:`C^r` the
    cluster's total capacity (``lam`` = :math:`\lambda`, default 1).

    ``record`` (a :class:`~dlsched.policies.budget.DecisionRecord`) and ``clock`` (the running decision's
    :class:`~dlsched.solvers.options.Budget`, read when the MILP starts) come from :class:`Dorm`. Without a
    budget the MILP has ``time_limit`` seconds (1, as always); under one, what remains of the decision's clock less
    its margin. Each allocation records the objective above of what runs (the counts placed, each job with the
    PSs its workers need), negated (the record takes a minimisation), against the MILP's dual bound (HiGHS's
    ``mip_dual_bound``, of the negated objective over aggregate capacities: a relaxation of the placement, so a
    bound for what runs too). Its gap is the MILP's own (``mip_rel_gap`` 1e-3, or the time limit's) plus what the
    placement loses: PSs the MILP gave beyond the :math:`\lceil b_i y_i / B_i \rceil` a job's workers need (they
    raise its utilisation term and run nothing) and counts that do not pack. With no incumbent in time the counts
    are :meth:`fallback`'s; a decision with no finite bound either is counted uncertified. Under a budget, where
    what remains less the margin is below the MILP's fixed cost (the least of its last :data:`MILP_FLOOR_WINDOW`
    calls' seconds, those beyond its time limit for a call the limit cut; :data:`MILP_FLOOR_PRIOR` before one), the
    MILP is not called: the counts
    are :meth:`fallback`'s, placed and recorded with no bound (uncertified), rather than a call that overruns
    the budget by its fixed cost (a 1-ms budget: decisions of 6-7 ms).
    """

    name = "dorm"

    def __init__(self, inst: OasisInstance, lam: float = 1.0, time_limit: float = 1.0, record: DecisionRecord | None = None,
                 clock=None):
        super().__init__(inst)
        self.lam = float(lam)
        self.time_limit = float(time_limit)
        self.ws, _ = _dominant(inst)
        total = inst.worker_cap.sum(axis=0) + inst.ps_cap.sum(axis=0)
        self.total = np.where(total > 0, total, 1.0)
        self.solves = 0
        self.record = record if record is not None else DecisionRecord()
        self.clock = clock if clock is not None else self.record.clock
        self.placed: dict[int, int] = {}       # job -> workers placed by the last allocation
        self.milp_seconds: deque[float] = deque(maxlen=MILP_FLOOR_WINDOW)     # the last MILP calls' wall seconds

    def allocate(self, t, sim):
        inst = self.inst
        J = list(self.active)
        if not J:
            return
        clock = self.clock()
        n = len(J)
        w, s = inst.worker_demand[J], inst.ps_demand[J]
        Rn = w.shape[1]
        # columns: y (n), z (n), u
        c = np.concatenate([(w / self.total).sum(axis=1), (s / self.total).sum(axis=1), [self.lam * n]])
        res = None
        if clock.limit is None or clock.remaining() - clock.margin >= min(self.milp_seconds, default=MILP_FLOOR_PRIOR):
            A_cap = np.zeros((2 * Rn, 2 * n + 1))
            A_cap[:Rn, :n] = w.T
            A_cap[Rn:, n:2 * n] = s.T
            cap = np.concatenate([inst.worker_cap.sum(axis=0), inst.ps_cap.sum(axis=0)])
            eye = np.eye(n)
            A_bw = np.hstack([eye * inst.worker_gbps[J], -eye * inst.ps_gbps[J], np.zeros((n, 1))])
            A_zy = np.hstack([-eye, eye, np.zeros((n, 1))])
            A_u = np.hstack([-eye * self.ws[J], np.zeros((n, n)), np.ones((n, 1))])
            A = np.vstack([A_cap, A_bw, A_zy, A_u])
            ub_rows = np.concatenate([cap, np.zeros(3 * n)])
            ub = np.concatenate([inst.chunks[J], [int(inst.ps_needed(i, int(inst.chunks[i]))) for i in J], [1.0]])
            integ = np.concatenate([np.ones(2 * n), [0]])
            limit = self.time_limit if clock.limit is None else clock.seconds_for_solver()
            t0 = time.perf_counter()
            res = milp(-c, constraints=LinearConstraint(A, -np.inf, ub_rows), bounds=Bounds(0, ub),
                       integrality=integ, options={"time_limit": limit, "mip_rel_gap": 1e-3})
            spent = time.perf_counter() - t0
            # a call its limit cut spent the limit in the search: its fixed part is what it took beyond (were it the
            # whole call, a run of cut calls would set the fixed cost at the budget and never call the MILP again)
            self.milp_seconds.append(spent - limit if spent >= limit else spent)
            self.solves += 1
        y = self.fallback(J) if res is None or res.x is None else np.rint(res.x[:n]).astype(np.int64)
        # place the counts first fit, largest first; what does not pack is trimmed
        for k in np.argsort(-y, kind="stable"):
            if y[k] > 0:
                b = _largest_bundle(sim, J[k], int(y[k]))
                if b is not None:
                    sim.assign(J[k], *b)
        self.placed = {i: int(sim.alloc[i][0].sum()) for i in J if i in sim.alloc}
        bound = None if res is None else getattr(res, "mip_dual_bound", None)
        self.record.record(-self.value(J, sim, c), None if bound is None else float(bound))

    def fallback(self, J: list[int]) -> np.ndarray:
        """Counts for a MILP with no incumbent in time: each job's last placed workers, N_i for a job with none.
        The placement turns any counts into a feasible allocation (each job gets the largest bundle up to its count
        that fits what the jobs before it left), so this is feasible, and it is not empty where one bundle of some
        active job fits the cluster the active jobs have released (that job is tried and gets at least one)."""
        return np.array([self.placed.get(i, int(self.inst.chunks[i])) for i in J], dtype=np.int64)

    def value(self, J: list[int], sim: SlotView, c: np.ndarray) -> float:
        r"""The MILP's objective at the counts placed (``c`` its costs over (y, z, u)): u at its largest,
        :math:`\min(1, \min_i \sigma_i y_i)`."""
        y = np.array([sim.alloc[i][0].sum() if i in sim.alloc else 0 for i in J], dtype=float)
        z = np.array([sim.alloc[i][1].sum() if i in sim.alloc else 0 for i in J], dtype=float)
        n = len(J)
        u = min(1.0, float((self.ws[J] * y).min()))
        return float(c[:n] @ y + c[n:2 * n] @ z + c[-1] * u)


class RiskReward(_OnOasisSlots):
    """Risk-reward heuristic (OASiS baseline, MODELS.md §3.3): reward per resource, drop jobs whose utility is gone."""

    name = "risk_reward"

    @checked
    def __init__(self, risk: Annotated[float, Range(ge=0, le=1)] = 0.05, preempt: bool = False):
        super().__init__(SlotDecide(lambda inst: RiskRewardPolicy(inst, float(risk), bool(preempt)), "risk_reward"))


class Dorm(_OnOasisSlots):
    """Dorm-like utilisation-maximising MILP with a fairness term, re-solved at events (OASiS baseline, MODELS.md §3.3);
    ``budget_ms`` bounds each call (:class:`DormPolicy`; default none: the MILP's one second, as without it)."""

    name = "dorm"

    @checked
    def __init__(self, lam: Annotated[float, Range(ge=0, finite=True)] = 1.0, budget_ms: BudgetMs | None = None):
        self.decision_record = DecisionRecord(budget_ms)
        self.clock = self.decision_record.clock()
        super().__init__(SlotDecide(lambda inst: DormPolicy(inst, float(lam), record=self.decision_record,
                                                            clock=lambda: self.clock), "dorm"))

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.decision_record.reset()

    def schedule(self, state, events):
        self.clock = self.decision_record.clock()     # the budget is the whole call's
        return super().schedule(state, events)

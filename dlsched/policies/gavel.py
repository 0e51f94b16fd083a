r"""Gavel's heterogeneity-aware policies on the engine: an allocation of time fractions, realised in rounds.

A Gavel policy (Narayanan et al., OSDI'20; ``scheduler/scheduler.py`` of stanford-futuredata/gavel)
decides in two steps:

1. **Allocation.** At a round start where the set of active jobs has changed, and at least
   ``reset_seconds`` after the allocation in force was computed, it solves one of the problems of
   :mod:`dlsched.policies.gavel_lp` over the active jobs (until then a job that arrived has no
   share and waits, and the share of one that finished idles: Gavel's
   ``minimum_time_between_allocation_resets``, 1920 s in its code; 0 here by default, a new
   allocation at the first round after every change): :math:`X_{jk}`, the fraction of time job
   j should spend on GPU type k. Job j's throughput on type k, :math:`T_{jk}`, is the speed
   source's rate with the job's workers all on one server of type k, at its size :math:`z_{jk}`:
   the most workers in [min, max] that fit the type's servers when empty (a synchronous job runs
   at its slowest worker's pace, so a job never mixes types). The GPU types are the cluster's
   ``gpu_type`` of its servers with GPUs.
2. **Rounds** of ``round_seconds`` (Gavel: 360 s; the engine's ``slot_seconds``). At each round
   start every job has, on each type, Gavel's priority

   .. math:: p_{jk} = X_{jk} / f_{jk}, \qquad f_{jk} = \frac{r_{jk}}{\sum_i r_{ik}},

   :math:`r_{jk}` the seconds job j has run on type k since the allocation was last computed, each
   job's seconds counted once whatever its size (Gavel's ``_job_time_so_far`` over
   ``_worker_time_so_far``: X is a fraction of time, so the share it is compared with is one of
   time; a share of GPU-seconds would give a job of z GPUs 1/z of its time)
   (:math:`p_{jk} = 10^9 X_{jk}` while :math:`f_{jk} = 0`, 0 where :math:`X_{jk} = 0` or
   :math:`T_{jk} = 0`); ties by the deficit :math:`\sum (X_{jk} \Delta t) - r_{jk}` carried over
   from earlier allocations, then by :math:`X_{jk}`. Types are visited fastest first (Gavel's
   ``v100, p100, k80``: here the order of the mean normalised throughput of the active jobs; shuffled
   every round with the run's seed for the heterogeneity-agnostic policy), and within a type jobs
   in decreasing priority take leases of :math:`z_{jk}` GPUs while the type has room, each job on
   one type per round. A job keeps its servers when it stays on the same type; new leases go on
   the type's servers with the most room first. A lease lasts the round: a GPU that a finishing
   job frees stays idle until the round ends, and jobs that arrive mid-round wait for its end
   (Gavel's simulator does both), unless the cluster is idle, when a round starts at once.

A job that fits no single type (larger than every type) waits for a round in which the cluster's
free GPUs hold it, and then runs across types at the speed source's rate.
"""

from __future__ import annotations

from typing import Annotated, Sequence

import numpy as np

from dlsched.arguments import MIN_SLOT_SECONDS, Range, checked
from dlsched.errors import InputError
from dlsched.policies import gavel_lp
from dlsched.policies.budget import BudgetMs, DecisionRecord
from dlsched.policies.gavel_prices import LPCut
from dlsched.sim.placement import consolidated, hold, usage
from dlsched.sim.policy import ClusterState, Event, Placement, PolicyContext

#: Gavel's round length (seconds), ``--time_per_iteration`` of its simulator
ROUND_SECONDS = 360.0


def fastest_first(T: np.ndarray) -> np.ndarray:
    """The GPU types in the order rounds visit them: by the mean over the jobs of their throughput on
    the type normalised by their best (``T`` (jobs, types)), fastest first."""
    norm = T / np.maximum(T.max(axis=1, keepdims=True), 1e-300)
    return np.argsort(-norm.mean(axis=0), kind="stable")


def lease_order(x: np.ndarray, ran: np.ndarray, total: float, deficit: np.ndarray) -> np.ndarray:
    """Candidates of one type in the order they take leases: Gavel's priority :math:`X / f` (``x`` their
    fractions, f = ``ran`` / ``total`` their share of the seconds run on the type; :math:`10^9 X`
    while f = 0), then the ``deficit`` carried over, then X, each decreasing (module docstring, step 2)."""
    f = ran / total if total > 0 else np.zeros(x.size)
    prio = np.where(f > 0, x / np.where(f > 0, f, 1.0), 1e9 * x)
    return np.lexsort((-x, -deficit, -prio))


class GavelPolicy:
    """Gavel's round-based mechanism around an allocation problem (subclasses give :meth:`allocate`)."""

    name = "gavel"
    #: heterogeneity-aware: visit types fastest first (Gavel's ``_Perf`` policies); else shuffle each round
    perf = True

    @checked
    def __init__(self, round_seconds: Annotated[float, Range(ge=MIN_SLOT_SECONDS, finite=True)] = ROUND_SECONDS,
                 reset_seconds: Annotated[float, Range(ge=0, finite=True)] = 0.0):
        self.slot_seconds = float(round_seconds)
        self.reset_seconds = float(reset_seconds)

    # -- set-up --------------------------------------------------------------------------------
    def reset(self, ctx: PolicyContext) -> None:
        cl = ctx.cluster
        if "gpu" not in cl.resources:
            raise InputError(cl.source, "resources", "a cluster with GPUs (Gavel allocates GPU types)", cl.resources)
        self.ctx, self.g = ctx, cl.index("gpu")
        has_gpu = cl.capacity[:, self.g] > 0
        self.types = sorted({cl.gpu_type[s] for s in np.flatnonzero(has_gpu)})
        self.type_of = np.array([self.types.index(t) if has_gpu[s] else -1 for s, t in enumerate(cl.gpu_type)])
        self.cap = np.array([cl.capacity[self.type_of == k, self.g].sum() for k in range(len(self.types))])
        # each type's servers alone, empty (:meth:`job_row`): made once, where a copy per job and type took 10 of the
        # 25 ms (profiled) of the rows of a burst of 195 jobs on Gavel's 0e4a51, the slowest call but a collector's pass
        self.type_capacity = [self.on_type(cl.capacity, k) for k in range(len(self.types))]
        self.rng = np.random.default_rng(ctx.seed)
        self._rows: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}   # j -> (T_j, z_j GPUs, workers_j)
        self.X: dict[int, np.ndarray] = {}            # the allocation in force, per job
        self.jobs_of_X: frozenset = frozenset()
        self.received = None                          # (n, K) seconds run on each type since the allocation
        self.deficit = None
        self.last_round: tuple[float, dict[int, int]] | None = None   # (start, job -> type) of the last round
        self.since = 0.0                              # when the allocation in force was computed
        self.order = np.arange(len(self.types))

    def job_row(self, state: ClusterState, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T_jk, z_jk GPUs, workers) of job j on every type (0 where it does not fit), computed once."""
        got = self._rows.get(j)
        if got is None:
            job, cl, K = state.jobs[j], state.cluster, len(self.types)
            T, z, w_of = np.zeros(K), np.zeros(K), np.zeros(K, dtype=np.int64)
            p = 1 if job.uses_ps else 0
            for k in range(K):
                cap = self.type_capacity[k]
                for w in range(job.max_workers, job.min_workers - 1, -1):
                    pl = consolidated(cap, state.demand_w[j], state.demand_p[j], w, p)
                    if pl is not None:
                        T[k] = float(self.ctx.speed.rate(job, pl, cl))
                        z[k], w_of[k] = w * state.demand_w[j, self.g], w
                        break
            got = self._rows[j] = (T, z, w_of)
        return got

    def on_type(self, free: np.ndarray, k: int) -> np.ndarray:
        """``free`` with the GPUs of every server not of type k taken away (other resources stay: a PS
        may sit on any server)."""
        room = free.astype(float).copy()
        room[self.type_of != k, self.g] = 0.0
        return room

    # -- the allocation problem ----------------------------------------------------------------
    def allocate(self, state: ClusterState, jobs: np.ndarray, T: np.ndarray, z: np.ndarray) -> np.ndarray:
        """X (len(jobs), K) for the active ``jobs`` (trace order = arrival order)."""
        raise NotImplementedError

    # -- rounds --------------------------------------------------------------------------------
    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        timer = any(e.kind == "timer" for e in events)
        if state.allocation and not timer:
            return dict(state.allocation)             # leases hold until the round ends
        n, K = len(state.jobs), len(self.types)
        if self.received is None or self.received.shape[0] != n:
            self.received, self.deficit = np.zeros((n, K)), np.zeros((n, K))
        now = state.time
        if self.last_round is not None:
            start, ran = self.last_round
            for j, k in ran.items():
                if k >= 0 and not state.done[j]:
                    self.received[j, k] += now - start
        active = np.asarray(state.active, dtype=np.int64)
        if frozenset(active.tolist()) != self.jobs_of_X and (not self.X or now - self.since >= self.reset_seconds):
            self._reallocate(state, active, now)
        ran = self._lease(state, active)
        self.last_round = (now, {j: k for j, (k, _) in ran.items()})
        return {j: pl for j, (_, pl) in ran.items()}

    def _reallocate(self, state: ClusterState, active: np.ndarray, now: float) -> None:
        """Gavel's reset: fold the time run against the old allocation into the deficits, solve anew."""
        elapsed = now - self.since
        for j, x in self.X.items():
            self.deficit[j] += x * elapsed - self.received[j]
        self.received[:] = 0.0
        self.since = now
        rows = [self.job_row(state, j) for j in active.tolist()]
        K = len(self.types)
        T = np.array([r[0] for r in rows]).reshape(-1, K)
        z = np.array([r[1] for r in rows]).reshape(-1, K)
        X = self.allocate(state, active, T, z) if active.size else np.zeros((0, K))
        X = np.where(T > 0, X, 0.0)
        self.X = {j: X[a] for a, j in enumerate(active.tolist())}
        self.jobs_of_X = frozenset(active.tolist())
        if active.size:
            self.order = fastest_first(T)

    def _lease(self, state: ClusterState, active: np.ndarray) -> dict[int, tuple[int, Placement]]:
        """This round's leases: (type, placement) per job that runs (module docstring, step 2)."""
        order = self.order.copy()
        if not self.perf:
            self.rng.shuffle(order)
        left = self.cap.astype(float).copy()
        chosen: list[tuple[int, int]] = []
        taken: set[int] = set()
        total = self.received.sum(axis=0)             # job-seconds run on each type since the allocation
        for k in order.tolist():
            cand = [j for j in active.tolist() if self.X.get(j) is not None and self.X[j][k] > 0]
            if not cand:
                continue
            c = np.array(cand)
            x = np.array([self.X[j][k] for j in cand])
            zk = np.array([self._rows[j][1][k] for j in cand])
            for a in lease_order(x, self.received[c, k], total[k], self.deficit[c, k]).tolist():
                j = cand[a]
                if j in taken or zk[a] > left[k] + 1e-9:
                    continue
                left[k] -= zk[a]
                taken.add(j)
                chosen.append((j, k))
        return self._place(state, active, chosen, taken)

    def _place(self, state: ClusterState, active: np.ndarray, chosen, taken, free: np.ndarray | None = None,
               prev: dict[int, int] | None = None) -> dict[int, tuple[int, Placement]]:
        """Servers for the chosen (job, type) leases: kept where a job stays on its type, the rest
        largest first on the type's servers with the most room; then jobs that fit no single type.
        ``free``: what is left for them (the whole cluster by default); ``prev``: job -> the type it
        ran on alone in the last round (by default the last round's)."""
        cl = state.cluster
        free = cl.capacity.astype(float).copy() if free is None else free
        out: dict[int, tuple[int, Placement]] = {}
        if prev is None:
            prev = self.last_round[1] if self.last_round is not None else {}
        rest = []
        for j, k in chosen:
            old = state.allocation.get(j)
            if old is not None and prev.get(j) == k:
                srv, rows = usage(old, state.demand_w[j], state.demand_p[j])
                if (rows <= free[srv] + 1e-9).all():
                    free[srv] -= rows
                    out[j] = (k, old)
                    continue
            rest.append((j, k))
        rest.sort(key=lambda jk: -self._rows[jk[0]][1][jk[1]])
        for j, k in rest:
            job = state.jobs[j]
            pl = consolidated(self.on_type(free, k), state.demand_w[j], state.demand_p[j], int(self._rows[j][2][k]), 1 if job.uses_ps else 0)
            if pl is not None:
                hold(free, pl, state.demand_w[j], state.demand_p[j])
                out[j] = (k, pl)
        for j in active.tolist():
            if j in taken or j not in self.X or self._rows[j][1].any():   # no share yet: wait for the next allocation
                continue
            job = state.jobs[j]
            for w in range(job.max_workers, job.min_workers - 1, -1):
                pl = consolidated(free, state.demand_w[j], state.demand_p[j], w, 1 if job.uses_ps else 0)
                if pl is not None:
                    hold(free, pl, state.demand_w[j], state.demand_p[j])
                    out[j] = (-1, pl)
                    break
        return out


class GavelLPPolicy(GavelPolicy):
    """A Gavel policy whose allocation solves an LP (:mod:`dlsched.policies.gavel_lp`), within ``budget_ms`` per
    decision (docs/simulator.md, "Decision budgets and certified gaps"; default none: every LP solved to
    optimality, as without the option).

    The budget runs from the call (:meth:`schedule`); every LP of the allocation gets what remains less a tenth of
    the budget as HiGHS's time limit. A solved allocation records its value against the bound its LPs prove
    (``Allocation.bound``: the optimum itself, gap 0, for a single LP solved to optimality; the prices' Lagrangian
    bound for the max-min LP through them; the bisection's lower end for finish-time fairness, also when the
    budget stops it). An allocation whose LP the budget cut answers :meth:`kept` instead, uncertified (HiGHS
    gives no dual bound short of optimality). ``sense``: whether the problem's value is maximised (recorded
    negated: :meth:`~dlsched.policies.budget.DecisionRecord.record` takes a minimisation) or minimised."""

    sense = "max"

    @checked
    def __init__(self, round_seconds: Annotated[float, Range(ge=MIN_SLOT_SECONDS, finite=True)] = ROUND_SECONDS,
                 reset_seconds: Annotated[float, Range(ge=0, finite=True)] = 0.0, budget_ms: BudgetMs | None = None):
        super().__init__(round_seconds, reset_seconds)
        self.decision_record = DecisionRecord(budget_ms)

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self.decision_record.reset()
        self.clock = self.decision_record.clock()

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        self.clock = self.decision_record.clock()
        return super().schedule(state, events)

    def allocate(self, state, jobs, T, z):
        try:
            got = self.solve(state, jobs, T, z)
        except LPCut:
            self.decision_record.record_uncertified()
            return self.kept(jobs, z)
        self.certify(got.value, got.bound)
        return got.X

    def solve(self, state: ClusterState, jobs: np.ndarray, T: np.ndarray, z: np.ndarray) -> gavel_lp.Allocation:
        """The allocation problem's answer for the active ``jobs``, its LPs within ``self.clock``."""
        raise NotImplementedError

    def certify(self, value: float, bound: float | None) -> None:
        """Record a solved allocation's value against its bound (none: no LP ran, nothing to certify)."""
        if bound is not None:
            sign = -1.0 if self.sense == "max" else 1.0
            self.decision_record.record(sign * value, sign * bound)

    def kept(self, jobs: np.ndarray, z: np.ndarray) -> np.ndarray:
        r"""The answer of a decision whose LP the budget cut: the allocation in force for the jobs it had, and for
        the others :func:`~dlsched.policies.gavel_lp.isolated_share` of the GPUs it leaves on each type.
        Feasible for the base constraints: the kept rows are the old allocation's restricted to fewer jobs, and
        the m' new jobs put at most :math:`\sum_j z_{jk} r_k / (m' z_{jk}) = r_k` on type k with :math:`r_k` what
        the kept rows leave (the rows scaled to sum at most 1)."""
        X = np.zeros(z.shape)
        new = np.array([j not in self.X for j in jobs.tolist()], dtype=bool)
        for a in np.flatnonzero(~new).tolist():
            X[a] = self.X[int(jobs[a])]
        if new.any():
            left = np.maximum(self.cap - (z * X).sum(axis=0), 0.0)
            X[new] = gavel_lp.isolated_share(z[new], left)
        return X


class GavelMaxMinFairness(GavelLPPolicy):
    """Gavel's max-min fairness (LAS), heterogeneity-agnostic: max min_j z_j sum_k X_jk, time even over the types, in rounds."""

    name = "gavel-max-min-fairness"
    perf = False

    def solve(self, state, jobs, T, z):
        W = np.where(T > 0, z, 0.0)
        # the even split keeps every job's sum of z X, so the value and its bound stand (even_over_types)
        got = gavel_lp.max_min_fairness(W, z, self.cap, budget=self.clock)
        return gavel_lp.Allocation(gavel_lp.even_over_types(got.X, W, self.cap), got.value, got.lps, got.bound)


class GavelMaxMinFairnessPerf(GavelLPPolicy):
    """Gavel's heterogeneity-aware max-min fairness: max min_j of z_j tau_j(X) over an equal share's throughput, in rounds."""

    name = "gavel-max-min-fairness-perf"

    def solve(self, state, jobs, T, z):
        share = (T * self.cap).sum(axis=1) / self.cap.sum()
        W = np.where(share[:, None] > 0, z * T / np.where(share > 0, share, 1.0)[:, None], 0.0)
        return gavel_lp.max_min_fairness(W, z, self.cap, budget=self.clock)


class GavelMaxSumThroughput(GavelLPPolicy):
    """Gavel's max-sum-throughput: max sum_jk T_jk X_jk (steps/s), in rounds."""

    name = "gavel-max-sum-throughput"

    def solve(self, state, jobs, T, z):
        return gavel_lp.max_sum_throughput(T, z, self.cap, budget=self.clock)


class GavelMinTotalDuration(GavelLPPolicy):
    """Gavel's min-total-duration: the allocation that finishes the active jobs soonest (makespan), one LP, in rounds."""

    name = "gavel-min-total-duration"
    sense = "min"

    def solve(self, state, jobs, T, z):
        return gavel_lp.min_total_duration(T, z, self.cap, np.asarray(state.remaining)[jobs], budget=self.clock)


class GavelFinishTimeFairness(GavelLPPolicy):
    """Gavel's finish-time fairness (Themis's rho): min max_j finish time over the isolated one, in rounds."""

    name = "gavel-finish-time-fairness"
    sense = "min"

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self.isolated_time: dict[int, float] = {}     # I_j: progress so far at the isolated throughput
        self._prev: dict[int, tuple[float, float]] = {}   # j -> (remaining, isolated throughput) at the last solve

    def solve(self, state, jobs, T, z):
        R = np.asarray(state.remaining, float)[jobs]
        iso = (gavel_lp.isolated_share(z, self.cap) * T).sum(axis=1)
        for a, j in enumerate(jobs.tolist()):
            rem, tau = self._prev.get(j, (R[a], 0.0))
            self.isolated_time[j] = self.isolated_time.get(j, 0.0) + ((rem - R[a]) / tau if tau > 0 else 0.0)
        self._prev = {j: (R[a], iso[a]) for a, j in enumerate(jobs.tolist())}
        I = np.array([self.isolated_time[j] for j in jobs.tolist()])
        E = I + np.where(iso > 0, R / np.where(iso > 0, iso, 1.0), np.inf)
        elapsed = state.time - np.asarray(state.arrival)[jobs]
        return gavel_lp.finish_time_fairness(T, z, self.cap, R, elapsed, E, budget=self.clock)


class GavelFIFOPerf(GavelPolicy):
    """Gavel's type-aware FIFO: in arrival order, each job on the free type where it runs fastest, in rounds."""

    name = "gavel-fifo-perf"

    def allocate(self, state, jobs, T, z):
        return gavel_lp.fifo_perf(T, z, self.cap).X


class HetSRPT(GavelPolicy):
    """Heterogeneity-aware SRPT in Gavel's rounds: shortest remaining time at the best type first, each job on its fastest free type."""

    name = "het-srpt"

    def allocate(self, state, jobs, T, z):
        return gavel_lp.srpt_perf(T, z, self.cap, np.asarray(state.remaining, float)[jobs]).X

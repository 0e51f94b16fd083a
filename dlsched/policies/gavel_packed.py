r"""Gavel's max-min fairness with space sharing (``max_min_fairness_packed``) on the engine.

Gavel (Narayanan et al., OSDI'20, §3.1 and §4.1, "space sharing"; ``MaxMinFairnessPolicyWithPacking``
and the round mechanism of ``scheduler/scheduler.py``) lets two jobs share the same GPUs, each at
its measured throughput in the pair. The policy decides as :mod:`dlsched.policies.gavel` does, over
*combinations* instead of jobs:

1. **Allocation** (:func:`dlsched.policies.gavel_lp.max_min_fairness_packed`): time fractions X over
   each active job alone and Y over each pair of active jobs that can share on a type (the same
   workers and GPUs there, no PS, a positive measured rate for both: the speed source's
   ``pair_rates``), maximising the least normalised effective throughput
   :math:`\sum_k W_{jk} X_{jk} + \sum_{p \ni j} \sum_k V_{jpk} Y_{pk}`, with
   :math:`W_{jk} = z_{jk} T_{jk} / \bar\tau_j` as for ``gavel-max-min-fairness-perf`` and
   :math:`V_{jpk}` the same with job j's rate in pair p; a pair's GPUs count once. The LP is stated
   over classes of interchangeable jobs (same job type, rates, sizes and demands; ``count`` of the
   LP), and each pair of classes' fraction goes to every pair of their jobs.
2. **Rounds**: every combination c (a job, or a pair) has on each type Gavel's priority
   :math:`X_{ck} / f_{ck}`, :math:`f_{ck}` its share of the seconds the combinations have run on
   type k since the allocation (:math:`10^9 X_{ck}` while 0), ties by the deficit carried over from
   earlier allocations, then by :math:`X_{ck}`. Types fastest first; within a type combinations in
   decreasing priority take leases while the type has room, none of whose jobs has a lease yet.
   A pair's lease is one packed lease: the same workers for both jobs, each placement naming the
   other as ``partner`` (:class:`dlsched.sim.policy.Placement`), GPUs held once. Leases last the
   round, as for the other Gavel policies; a job whose partner finishes runs on alone on the
   same GPUs until the round ends (the engine's contract, docs/simulator.md "Co-location").

The speed source must know pair rates (``pair_rates``: :class:`dlsched.sim.speed.ThroughputSpeed`
reads them from Gavel's file); another, or a throughput file without pairs, is refused with an
InputError.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dlsched.errors import InputError
from dlsched.policies import gavel_lp
from dlsched.policies.gavel import GavelLPPolicy, fastest_first, lease_order
from dlsched.policies.gavel_prices import LPCut
from dlsched.sim.placement import consolidated, hold, usage
from dlsched.sim.policy import ClusterState, Event, Placement, PolicyContext


class GavelMaxMinFairnessPacked(GavelLPPolicy):
    """Gavel's heterogeneity-aware max-min fairness with space sharing: jobs alone or in pairs on the same GPUs, in rounds."""

    name = "gavel-max-min-fairness-packed"

    def reset(self, ctx: PolicyContext) -> None:
        if getattr(ctx.speed, "pair_rates", None) is None:
            raise InputError("<argument>", "speed", f"a speed source with pair throughputs (pair_rates: Gavel's file, "
                                                    f"--speed throughput) for policy '{self.name}'", type(ctx.speed).__name__)
        table = getattr(ctx.speed, "table", None)
        if getattr(table, "pairs", None) == {}:
            raise InputError(table.source, "co-located entries", f"a throughput file with pair throughputs (an entry's "
                                                                 f"other job types beside 'null') for policy '{self.name}'", "none")
        super().reset(ctx)
        K = len(self.types)
        self._pairs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}   # (a, b) -> rates of a and b per type
        self.combos = np.zeros((0, 2), dtype=np.int64)   # the allocation's combinations: (j, -1) alone, (a, b) a pair
        self.Xc = np.zeros((0, K))                        # their time fractions per type
        self.rc = np.zeros((0, K))                        # seconds each ran on each type since the allocation
        self.Dc = np.zeros((0, K))                        # the deficits carried over to them
        self.deficits: dict[tuple[int, int], np.ndarray] = {}
        self.ran: dict[tuple[int, int], int] = {}        # the last round's leases: combination -> type

    def pair_row(self, state: ClusterState, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Rates of jobs a and b sharing the same workers on each type (0 where they cannot: not the
        same workers and GPUs there, a PS job, or a pair rate of 0), computed once."""
        got = self._pairs.get((a, b))
        if got is None:
            (Ta, za, wa), (Tb, zb, wb) = self.job_row(state, a), self.job_row(state, b)
            K, cl = len(self.types), state.cluster
            ra, rb = np.zeros(K), np.zeros(K)
            ja, jb = state.jobs[a], state.jobs[b]
            if not (ja.uses_ps or jb.uses_ps):
                for k in np.flatnonzero((wa > 0) & (wa == wb) & (za == zb) & (Ta > 0) & (Tb > 0)).tolist():
                    pl = consolidated(self.on_type(cl.capacity, k), self._both(state, a, b), state.demand_p[a], int(wa[k]), 0)
                    if pl is not None:
                        x, y = self.ctx.speed.pair_rates(ja, jb, pl, cl)
                        if x > 0 and y > 0:
                            ra[k], rb[k] = x, y
            got = self._pairs[(a, b)] = (ra, rb)
        return got

    def _both(self, state: ClusterState, a: int, b: int) -> np.ndarray:
        """What a worker of the pair holds: both workers' demands, the GPUs once."""
        d = state.demand_w[a] + state.demand_w[b]
        d[self.g] = state.demand_w[a, self.g]
        return d

    # -- allocation ----------------------------------------------------------------------------
    def _reallocate(self, state: ClusterState, active: np.ndarray, now: float) -> None:
        elapsed = now - self.since
        for c, comb in enumerate(map(tuple, self.combos.tolist())):
            self.deficits[comb] = self.deficits.get(comb, 0.0) + self.Xc[c] * elapsed - self.rc[c]
        self.since = now
        K, m = len(self.types), active.size
        rows = [self.job_row(state, j) for j in active.tolist()]
        T = np.array([r[0] for r in rows]).reshape(-1, K)
        z = np.array([r[1] for r in rows]).reshape(-1, K)
        share = (T * self.cap).sum(axis=1) / self.cap.sum()
        div = np.where(share > 0, share, 1.0)[:, None]
        W = np.where(share[:, None] > 0, z * T / div, 0.0)      # as gavel-max-min-fairness-perf's
        pairs, Y, count, inverse = self._class_pairs(state, active, T, z, div)
        try:
            if pairs.size:
                first = np.unique(inverse, return_index=True)[1]
                sol = gavel_lp.max_min_fairness_packed(W[first], z[first], self.cap, pairs, *Y, count, budget=self.clock)
                X, Yc = sol.X[inverse], sol.Y
                self.certify(sol.value, sol.value if sol.lps else None)   # the first LP's optimum, its own bound
            else:   # no pair can share: the problem is gavel-max-min-fairness-perf's, and so are the decisions
                got = gavel_lp.max_min_fairness(W, z, self.cap, budget=self.clock)
                X, Yc = got.X, np.zeros((0, K))
                self.certify(got.value, got.bound)
        except LPCut:
            # the budget cut the LP: every job alone as kept (GavelLPPolicy.kept), no pair shares until the next
            self.decision_record.record_uncertified()
            X, Yc = self.kept(active, z), np.zeros((0, K))
        X = np.where(T > 0, X, 0.0)
        # the combinations: every job alone, then each pair of jobs of a pair of classes given time
        members = [np.flatnonzero(inverse == c) for c in range(count.size)]
        jp, yp = [np.zeros((0, 2), dtype=np.int64)], [np.zeros((0, K))]
        for p in np.flatnonzero(Yc.any(axis=1)).tolist():
            u, v = pairs[p].tolist()
            if u == v:
                i, k = np.triu_indices(members[u].size, 1)
                two = np.stack([members[u][i], members[u][k]], axis=1)
            else:
                two = np.stack(np.meshgrid(members[u], members[v], indexing="ij"), axis=-1).reshape(-1, 2)
            jp.append(np.sort(active[two], axis=1))
            yp.append(np.repeat(Yc[p][None, :], two.shape[0], axis=0))
        self.combos = np.concatenate([np.stack([active, np.full(m, -1)], axis=1)] + jp).astype(np.int64)
        self.Xc = np.concatenate([X] + yp)
        self.rc = np.zeros_like(self.Xc)
        zero = np.zeros(K)
        self.Dc = np.array([self.deficits.get(c, zero) for c in map(tuple, self.combos.tolist())]).reshape(-1, K)
        # a combination with a finished job never returns: its deficit goes (else one per pair ever run, for ever)
        alive = set(active.tolist()) | {-1}
        self.deficits = {c: d for c, d in self.deficits.items() if c[0] in alive and c[1] in alive}
        self.X = {j: X[a] for a, j in enumerate(active.tolist())}
        self.jobs_of_X = frozenset(active.tolist())
        if m:
            self.order = fastest_first(T)

    def _class_pairs(self, state: ClusterState, active: np.ndarray, T: np.ndarray, z: np.ndarray, div: np.ndarray):
        """The classes of the active jobs (same job type, rates, sizes and demands: interchangeable in
        pairs) and the pairs of classes that can share: (pairs (P, 2) of classes, (Va, Vb) their
        normalised pair throughputs, the classes' sizes, job -> class). A pair of classes takes its
        rates from its first jobs (the second where a class pairs with itself)."""
        jobs, K = state.jobs, T.shape[1]
        if active.size == 0:
            return np.zeros((0, 2), dtype=np.int64), (np.zeros((0, K)), np.zeros((0, K))), np.zeros(0), np.zeros(0, dtype=np.int64)
        kind = {t: i for i, t in enumerate(sorted({jobs[j].job_type for j in active.tolist()}))}
        key = (T, z, np.array([self._rows[j][2] for j in active.tolist()]).reshape(-1, T.shape[1]),
               np.array([kind[jobs[j].job_type] for j in active.tolist()]), state.demand_w[active],
               np.array([jobs[j].uses_ps for j in active.tolist()]))
        first, inverse, count = gavel_lp.classes(*key)
        C = first.size
        ca, cb = np.triu_indices(C)
        ok = (z[first[ca]] == z[first[cb]]).all(axis=1) & (z[first[ca]] > 0).any(axis=1) & ((ca != cb) | (count[ca] > 1))
        ca, cb = ca[ok], cb[ok]
        second = {c: int(np.flatnonzero(inverse == c)[1]) for c in np.unique(ca[ca == cb]).tolist()}
        Ra, Rb = np.zeros((ca.size, K)), np.zeros((ca.size, K))
        for p, (u, v) in enumerate(zip(ca.tolist(), cb.tolist())):
            a, b = int(active[first[u]]), int(active[second[u] if u == v else first[v]])
            Ra[p], Rb[p] = self.pair_row(state, min(a, b), max(a, b))[::1 if a < b else -1]
        shares = ((Ra > 0) & (Rb > 0)).any(axis=1)
        ca, cb, Ra, Rb = ca[shares], cb[shares], Ra[shares], Rb[shares]
        za, zb, da, db = z[first[ca]], z[first[cb]], div[first[ca]], div[first[cb]]
        return np.stack([ca, cb], axis=1), (za * Ra / da, zb * Rb / db), count, inverse

    # -- rounds --------------------------------------------------------------------------------
    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        self.clock = self.decision_record.clock()
        timer = any(e.kind == "timer" for e in events)
        if state.allocation and not timer:
            return dict(state.allocation)             # leases hold until the round ends
        now = state.time
        if self.last_round is not None:
            start, ran = self.last_round
            for c, k in ran.items():
                self.rc[c, k] += now - start
        active = np.asarray(state.active, dtype=np.int64)
        if frozenset(active.tolist()) != self.jobs_of_X and (not self.X or now - self.since >= self.reset_seconds):
            self._reallocate(state, active, now)
        chosen = self._lease_combos(active)
        out = self._place_combos(state, active, chosen)
        self.last_round = (now, {c: k for c, k in chosen if int(self.combos[c, 0]) in out})   # the leases placed
        self.ran = {tuple(self.combos[c].tolist()): k for c, k in self.last_round[1].items()}
        return {j: pl for j, (_, pl) in out.items()}

    def _lease_combos(self, active: np.ndarray) -> list[tuple[int, int]]:
        """This round's (combination, type) leases in decreasing priority per type (module docstring),
        among the combinations whose jobs are all active (an allocation held ``reset_seconds`` may
        name jobs that have finished since)."""
        left = self.cap.astype(float).copy()
        total = self.rc.sum(axis=0)
        alive = np.isin(self.combos, active) | (self.combos < 0)
        alive = alive[:, 0] & alive[:, 1]
        taken: set[int] = set()
        chosen = []
        for k in self.order.tolist():
            cand = np.flatnonzero((self.Xc[:, k] > 0) & alive)
            if not cand.size:
                continue
            for c in cand[lease_order(self.Xc[cand, k], self.rc[cand, k], total[k], self.Dc[cand, k])].tolist():
                if left[k] < 1e-9:
                    break
                a, b = self.combos[c].tolist()
                zk = self._rows[a][1][k]
                if a in taken or b in taken or zk > left[k] + 1e-9:
                    continue
                left[k] -= zk
                taken.update((a, b) if b >= 0 else (a,))
                chosen.append((c, k))
        return chosen

    def _place_combos(self, state: ClusterState, active: np.ndarray, chosen) -> dict[int, tuple[int, Placement]]:
        """Servers for the leases: each pair's on one type's servers (kept where the pair ran there in
        the last round), then the jobs alone as :meth:`GavelPolicy._place` places them."""
        free = state.cluster.capacity.astype(float).copy()
        out: dict[int, tuple[int, Placement]] = {}
        singles, taken = [], set()
        zero = np.zeros(free.shape[1])
        for c, k in chosen:
            a, b = self.combos[c].tolist()
            if b < 0:
                singles.append((a, k))
                taken.add(a)
                continue
            both = self._both(state, a, b)
            old = state.allocation.get(a)
            pl = None
            if self.ran.get((a, b)) == k and old is not None and old.partner == b and \
                    getattr(state.allocation.get(b), "partner", None) == a:
                srv, rows = usage(old, both, zero)
                if (rows <= free[srv] + 1e-9).all():
                    pl = old
            if pl is None:
                pl = consolidated(self.on_type(free, k), both, zero, int(self._rows[a][2][k]), 0)
            if pl is not None:
                hold(free, pl, both, zero)
                out[a] = (k, pl if pl.partner == b else Placement(pl.workers, {}, partner=b))
                pb = state.allocation.get(b)
                out[b] = (k, pb if pl is old and pb is not None else Placement(pl.workers, {}, partner=a))
                taken.update((a, b))
        prev = {c[0]: k for c, k in self.ran.items() if c[1] < 0}
        out.update(self._place(state, active, singles, taken, free=free, prev=prev))
        return out

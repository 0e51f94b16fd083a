r"""Methods of the ``placement`` family (MODELS.md §4): ``exact``, ``greedy`` and ``hetplace``.

``hetplace`` is our reconstruction of the sampling-based pipeline of §4.3:

1. **categories**: a category is a sizing vector :math:`(n_1..n_n)`, :math:`1 \le n_i \le M_i`,
   :math:`\sum_i n_i \le K`. Lagrangian prices :math:`\lambda_g` of the GPU types are computed
   first (:func:`type_prices`, which also gives a valid lower bound); category 0 is the sizing
   the jobs choose at :math:`\lambda`, the other :math:`N - 1` the sizings they choose at
   job-wise perturbed prices (seeded). This is importance sampling around a good sizing instead
   of uniform draws from the :math:`\binom{K-1}{n-1}` categories (docs/hetplace.md);
   ``sampler="moves"`` draws random unit moves around the greedy sizing instead.
2. **matching market** per category (:mod:`dlsched.solvers.market`): job i buys :math:`n_i`
   units from the GPU types; the valuation is pluggable. ``tangent`` (default) values a unit of
   type g by its first-order JCT reduction :math:`T_i P_i \rho_{i,g} / S_i^2` at
   :math:`S_i` = :math:`n_i` GPUs of average throughput (``market_iters`` re-runs at the
   :math:`S_i` of the market's allocation);
   ``throughput`` values it by :math:`\rho_{i,g}`. The market's type counts are then improved
   by exchanges of one GPU between two jobs (or with the idle pool), and for small instances by
   re-choosing the counts of pairs of jobs, while the category's JCT drops (``polish``).
3. **placement**: type counts become GPUs, one-server jobs first (best fit), and the
   exact JCT model (:func:`dlsched.models.placement.evaluate`) scores the category.
4. **sampling**: the best of the N evaluated categories is returned.

With one GPU type step 2's market and exchanges are skipped (they leave every job its size); without
a communication term (:func:`placement_free`) a category is scored by its counts and only the best is
placed (docs/hetplace.md, "Shortcuts that keep the answer").

Every method reports, in ``Result.stats``, the average JCT, Jain's index of the slowdowns
:math:`J_i / J_i^{\mathrm{alone}}` and the largest slowdown. ``greedy`` reports the valid lower
bound :math:`\frac1n \sum_i J_i^{\mathrm{alone}}` (each job alone on its best GPUs),
``hetplace`` the larger of that and the Lagrangian bound.
"""

from __future__ import annotations

import bisect
import heapq
import time
from typing import Callable, Iterator

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.placement import GpuAssignment, PlacementInstance
from dlsched.models.placement import alone_jct, core_model, count_vectors, decode, evaluate, jct_counts, workloads
from dlsched.result import Result, make_result
from dlsched.result import jain
from dlsched.solvers import highs
from dlsched.solvers.backends import BACKENDS
from dlsched.solvers.milp import solve_core
from dlsched.solvers.market import clear
from dlsched.solvers.options import Budget, SolveOptions
from dlsched.solvers.registry import register

VALUATIONS = ("tangent", "throughput")


# ------------------------------------------------------------------------------ shared pieces

def fairness_stats(inst: PlacementInstance, jct: np.ndarray) -> dict:
    """Average JCT, Jain's index of slowdowns J_i / J_i^alone, and the extreme slowdowns."""
    slow = jct / alone_jct(inst)
    return {"average_jct": float(jct.mean()), "jain_fairness": jain(slow),
            "max_slowdown": float(slow.max()), "mean_slowdown": float(slow.mean())}


def placement_result(inst: PlacementInstance, gpu_job: np.ndarray | None, method: str, opts: SolveOptions, *,
                     termination: str, bound: float | None, stats: dict, build: float = 0.0,
                     backend: str | None = None, message: str = "") -> Result:
    """A placement method's :class:`Result` through the one factory: the placement (when there is
    one) scored by the exact JCT model, with its fairness figures."""
    stats = dict(stats)
    solution = objective = None
    if gpu_job is not None:
        solution = GpuAssignment(gpu_job, workloads(inst, gpu_job), inst.job_names, _gpu_names(inst))
        jct = evaluate(inst, solution)
        objective = float(jct.mean())
        stats.update(fairness_stats(inst, jct))
    return make_result(method, opts, sense="min", termination=termination, solution=solution, objective=objective,
                       bound=bound, backend=backend, build_seconds=build, stats=stats,
                       solver_version=highs.version() if backend else "", message=message)


#: the last cluster's GPU names, (server names, GPUs per server) -> names: the simulator's policy
#: decides again and again on one cluster (naming its 6,212 GPUs took 4 % of a decision on OpenB)
_names_memo: dict[tuple, tuple[str, ...]] = {}


def _gpu_names(inst: PlacementInstance) -> tuple[str, ...]:
    key = (inst.server_names, inst.server_gpus.tobytes())
    names = _names_memo.get(key)
    if names is None:
        _names_memo.clear()
        names = _names_memo[key] = tuple(inst.gpu_names())
    return names


def _biggest_server(inst: PlacementInstance) -> np.ndarray:
    """GPUs of the largest server of each type, once per instance (``cost`` without it asks for it at
    every call: 1.6 ms each on OpenB's 1,213 servers, a quarter of a decision over 1,450 pods)."""
    out = getattr(inst, "_biggest", None)
    if out is None:
        out = np.zeros(inst.n_types, dtype=np.int64)
        np.maximum.at(out, inst.server_type, inst.server_gpus)
        inst._biggest = out
    return out.copy()


def est_spans(inst: PlacementInstance, counts: np.ndarray, biggest: np.ndarray | None = None) -> np.ndarray:
    """Whether type counts must span servers: several types, or more GPUs than a server holds."""
    biggest = _biggest_server(inst) if biggest is None else biggest
    counts = np.asarray(counts)
    n = counts.sum(axis=-1)
    kinds = (counts > 0).sum(axis=-1)
    too_big = np.any(counts > biggest, axis=-1)
    return (n > 1) & ((kinds > 1) | too_big)


def cost(inst: PlacementInstance, i, counts, biggest=None) -> np.ndarray:
    """JCT of type counts with the locality they can best hope for (the category's score)."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum(axis=-1)
    ok = n > 0
    if ok.all():
        return jct_counts(inst, np.broadcast_to(np.asarray(i), n.shape), counts, est_spans(inst, counts, biggest))
    out = np.full(n.shape, np.inf)
    if ok.any():
        ii = np.broadcast_to(np.asarray(i), n.shape)[ok]
        out[ok] = jct_counts(inst, ii, counts[ok], est_spans(inst, counts[ok], biggest))
    return out


# ------------------------------------------------------------------------------ greedy baseline

def greedy_counts(inst: PlacementInstance) -> np.ndarray:
    """Marginal-gain greedy (Optimus-style, MODELS.md §5 adapted): type counts per job.

    Every job first gets one GPU of the fastest type still free (longest jobs choose first);
    then the (job, type) pair with the largest JCT reduction gets one more GPU, until no
    addition helps or no GPU is left.
    """
    n, G = inst.n_jobs, inst.n_types
    free = inst.type_counts.copy()
    counts = np.zeros((n, G), dtype=np.int64)
    biggest = _biggest_server(inst)
    first = inst.iterations * inst.global_batch / inst.rho.max(axis=1)
    for i in np.argsort(-first, kind="stable"):
        g = max((g for g in range(G) if free[g] > 0), key=lambda g: inst.rho[i, g])
        counts[i, g] += 1
        free[g] -= 1
    eye = np.eye(G, dtype=np.int64)
    cur = cost(inst, np.arange(n), counts, biggest)

    def gains(i):
        if counts[i].sum() >= inst.max_workers[i]:
            return []
        new = cost(inst, np.full(G, i), counts[i] + eye, biggest)
        return [(-(cur[i] - new[g]), int(i), g) for g in range(G) if cur[i] - new[g] > 0]

    # lazy max-heap of gains; an entry is stale once its job has grown (version) or its type ran out
    version = np.zeros(n, dtype=np.int64)
    heap = [(*e, 0) for i in range(n) for e in gains(i)]
    heapq.heapify(heap)
    while heap and free.sum() > 0:
        _, i, g, ver = heapq.heappop(heap)
        if ver != version[i] or free[g] == 0:
            continue
        counts[i, g] += 1
        free[g] -= 1
        cur[i] = cost(inst, i, counts[i][None, :], biggest)[0]
        version[i] += 1
        for e in gains(i):
            if free[e[2]] > 0:
                heapq.heappush(heap, (*e, int(version[i])))
    return counts


def pack(inst: PlacementInstance, counts: np.ndarray) -> np.ndarray:
    """GPUs for type counts; the better (by true average JCT) of two orders for the one-server
    jobs: largest first, and largest spanning penalty :math:`J_i^{span} - J_i^{one}` first."""
    counts = np.asarray(counts, dtype=np.int64)
    n_i = counts.sum(axis=1)
    idx = np.arange(inst.n_jobs)
    penalty = (jct_counts(inst, idx, np.maximum(counts, 0), n_i > 1) - jct_counts(inst, idx, np.maximum(counts, 0), np.zeros(inst.n_jobs, bool))
               if inst.n_jobs else np.zeros(0))
    best, best_val = None, np.inf
    for key in (-n_i, -penalty):
        gpu_job = _pack_order(inst, counts, np.argsort(key, kind="stable"))
        jct = evaluate(inst, GpuAssignment(gpu_job, np.zeros(inst.n_gpus)))
        if jct.sum() < best_val:
            best, best_val = gpu_job, jct.sum()
        if np.allclose(jct, cost(inst, np.arange(inst.n_jobs), counts)):
            break  # every job got the locality its counts allow: no order can do better
    return best


def _pack_order(inst: PlacementInstance, counts: np.ndarray, order: np.ndarray) -> np.ndarray:
    """One-type jobs that fit a server in ``order`` (best fit), then jobs that must span (from the
    emptiest servers), then single GPUs into the smallest holes. A server's GPUs are contiguous,
    so its free GPUs are ``start[s] + used[s] ...``."""
    cap = inst.server_gpus
    start = np.concatenate([[0], np.cumsum(cap)[:-1]])
    used = np.zeros_like(cap)
    gpu_job = np.full(inst.n_gpus, -1, dtype=np.int64)
    of_type = [np.flatnonzero(inst.server_type == g) for g in range(inst.n_types)]
    n_i = counts.sum(axis=1)
    kinds = (counts > 0).sum(axis=1)
    first = counts.argmax(axis=1)

    def take(s, m, i):
        gpu_job[start[s] + used[s]: start[s] + used[s] + m] = i
        used[s] += m

    spanning: list[int] = list(np.flatnonzero(kinds > 1))
    one_type = (kinds == 1) & (n_i >= 2)
    # best fit: the first server of the type (by index) with the least room that holds the job, found
    # in buckets of servers by room (per type, ascending) rather than a pass over the type's servers
    # per job (on DL2's 3,250 nodes the passes were two thirds of a 2,000-job pack)
    top = int(cap.max(initial=0))
    holes = [[[] for _ in range(top + 1)] for _ in range(inst.n_types)]
    for s, (g, c) in enumerate(zip(inst.server_type.tolist(), cap.tolist())):
        holes[g][c].append(s)
    for i in order[one_type[order]].tolist():
        m, rooms = int(n_i[i]), holes[first[i]]
        r = next((r for r in range(m, top + 1) if rooms[r]), None)
        if r is None:
            spanning.append(i)
            continue
        s = rooms[r].pop(0)
        take(s, m, i)
        bisect.insort(rooms[r - m], s)
    for i in sorted(spanning, key=lambda i: -n_i[i]):
        for g in np.flatnonzero(counts[i]):
            m = int(counts[i, g])
            cand = of_type[g]
            for s in cand[np.argsort(-(cap[cand] - used[cand]), kind="stable")]:
                k = min(m, int(cap[s] - used[s]))
                take(s, k, i)
                m -= k
                if not m:
                    break
    # single GPUs, in job order, each into the smallest hole of its type (the first such server): a
    # server so chosen stays the smallest hole until it is full, so the singles fill the servers with
    # room in increasing room (ties by index), each to the brim, in one pass per type
    singles = np.flatnonzero(n_i == 1)
    for g in np.unique(first[singles]).tolist():
        mine, cand = singles[first[singles] == g], of_type[g]
        room = cap[cand] - used[cand]
        fill = np.argsort(room, kind="stable")
        fill = cand[fill[room[fill] > 0]]
        r = cap[fill] - used[fill]
        gpus = np.repeat(start[fill] + used[fill] - (np.cumsum(r) - r), r) + np.arange(int(r.sum()))
        gpu_job[gpus[:mine.size]] = mine
    return gpu_job


# ------------------------------------------------------------------------------ type prices

#: the most (jobs x configurations) entries one dense table of a one-type instance may hold
DENSE_ENTRIES = 1 << 22


class ConfigTable:
    r"""Every job's type-count vectors ``C`` (rows, within the type counts) and their category
    scores :math:`J_i(c)` (:func:`cost`), kept per group of jobs with one largest size
    :math:`M_i`: a group holds only the columns with :math:`\sum_g c_g \le M_i`, the others
    scoring ``inf``. A dense (jobs x configurations) table would cost every job the columns of
    the largest job: on OpenB, ~6,400 columns for a one-GPU pod that can use 7."""

    def __init__(self, inst: PlacementInstance, biggest=None):
        C = count_vectors(inst.n_types, int(inst.max_workers.max()))
        self.C = C = C[np.all(C <= inst.type_counts, axis=1)]
        self.n = inst.n_jobs
        size = C.sum(axis=1)
        spans = est_spans(inst, C, biggest)
        self.groups = []                                           # (rows, cols, J[rows][:, cols])
        if inst.n_types == 1 and self.n * C.shape[0] <= DENSE_ENTRIES:
            # one type: the columns are the sizes 1, 2, ... and a group's columns a prefix of them, so
            # one table with inf beyond each job's largest size picks the same (argmin takes the first
            # of equal values either way): two groups, the one-GPU jobs and one table for the others
            for rows in (np.flatnonzero(inst.max_workers == 1), np.flatnonzero(inst.max_workers > 1)):
                if rows.size:
                    cols = np.flatnonzero(size <= inst.max_workers[rows].max())
                    r = np.broadcast_to(rows[:, None], (rows.size, cols.size))
                    J = jct_counts(inst, r, np.broadcast_to(C[cols], (rows.size, *C[cols].shape)), np.broadcast_to(spans[cols], r.shape))
                    self.groups.append((rows, cols, np.where(size[cols][None, :] <= inst.max_workers[rows][:, None], J, np.inf)))
            return
        for m in np.unique(inst.max_workers).tolist():
            rows = np.flatnonzero(inst.max_workers == m)
            cols = np.flatnonzero(size <= m)
            r = np.broadcast_to(rows[:, None], (rows.size, cols.size))
            J = jct_counts(inst, r, np.broadcast_to(C[cols], (rows.size, *C[cols].shape)), np.broadcast_to(spans[cols], r.shape))
            self.groups.append((rows, cols, J))

    def pick(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""Per job, the configuration minimising :math:`J_i(c) + \lambda_i^\top c` (the first of
        equal ones, as over the dense table) and that minimum. ``lam``: (G,) or per job (n, G)."""
        pick, val = np.empty(self.n, dtype=np.int64), np.empty(self.n)
        price = self.C @ lam if lam.ndim == 1 else None
        for rows, cols, J in self.groups:
            red = J + (price[cols] if price is not None else lam[rows] @ self.C[cols].T)
            k = red.argmin(axis=1)
            pick[rows], val[rows] = cols[k], red[np.arange(rows.size), k]
        return pick, val


#: a budget ends the subgradient steps once the picks at the best prices over-demand the GPU types by at
#: most this share of the GPUs. The steps are cheap and the repair of the excess is not: on 10,000 Gavel
#: jobs (6,498 GPUs) a step costs 0.5 ms, and priced_counts took 9.1 s after 1 step (excess 13,104
#: GPUs), 1.8 s after 20 (1,508), 27 ms after 50 (231); the answer cut there is category 0's counts
PRICES_SLACK = 0.02
#: the share of a call's budget the subgradient steps may take from their start, spent or not (a
#: 2,000-job DL2 decision at 10 ms: 1.108 times the unbudgeted average JCT without it, 1.002 with it)
PRICES_FLOOR = 0.5
#: without a feasible total JCT, the subgradient steps aim this factor above the best value so far
POLYAK_OVERSHOOT = 1.05
#: the step is halved after this many steps without improvement
STALL_STEPS = 10


def type_prices(inst: PlacementInstance, table: ConfigTable, upper: float | None = None,
                iters: int = 200, stop: Callable[[], bool] | None = None,
                start: np.ndarray | None = None, slack: float = PRICES_SLACK) -> tuple[np.ndarray, float]:
    r"""Lagrangian prices :math:`\lambda_g \ge 0` of the type rows (MODELS.md §1, pricing).

    Maximises :math:`L(\lambda) = \sum_i \min_c (J_i(c) + \lambda^\top c) - \lambda^\top N` by
    projected subgradient steps (Polyak's rule towards ``upper``, a feasible total JCT, or,
    without one, :data:`POLYAK_OVERSHOOT` times the best value so far).
    :math:`L(\lambda) / n` is a valid lower bound on the average JCT: the category score of a
    count vector never exceeds the JCT of any placement with those counts. ``stop()`` true ends the
    steps (every :math:`L(\lambda)` is a bound) once the picks at the best prices over-demand the types
    by at most ``slack`` (default :data:`PRICES_SLACK`) of their GPUs: :func:`priced_counts` repairs that
    excess a unit per job and step, and far from the optimal prices the repair costs more than the steps
    it saves; a caller that wants the bound alone passes ``slack=inf`` (any step may end them). ``start``:
    the first prices (default 0), e.g. prices found elsewhere whose :math:`L` the steps then improve on.
    """
    N = inst.type_counts.astype(float)
    lam = np.zeros(inst.n_types) if start is None else np.maximum(np.asarray(start, dtype=float), 0.0)
    best_lam, best_L = lam.copy(), -np.inf
    theta = 1.0
    since = 0
    excess, slack = np.inf, slack * N.sum()
    for k in range(iters):
        if k and stop is not None and excess <= slack and stop():
            break
        pick, val = table.pick(lam)
        L = float(val.sum() - lam @ N)
        if L > best_L + 1e-12 * abs(L):
            best_L, best_lam, since = L, lam.copy(), 0
            if stop is not None:
                excess = float(np.maximum(table.C[pick].sum(axis=0) - N, 0.0).sum())
        else:
            since += 1
            if since >= STALL_STEPS:
                theta, since = theta / 2, 0
        g = N - table.C[pick].sum(axis=0)          # supply minus demand
        if np.all(g >= 0):
            if np.all(np.abs(lam * g) <= 1e-8):    # np.allclose(lam * g, 0), without its overhead
                break                              # complementary: L is the optimum of the relaxation
            if L + float(lam @ g) <= best_L + 1e-12 * abs(best_L):
                # the picks fit: their total JCT L + lam.g is a feasible value of the relaxation, so no
                # later L can improve on best_L by the margin above, and the steps would not change
                # (best_lam, best_L). With one speed per job on every type (OpenB's durations) the jobs
                # all pick the first type at lam = 0, whose L is already the optimum: the 200 steps
                # that followed were 40 % of the solver's time on the inflated OpenB trace
                break
        target = upper if upper is not None else POLYAK_OVERSHOOT * best_L
        step = theta * max(target - L, 1e-12 * abs(target)) / max(float(g @ g), 1.0)
        lam = np.maximum(0.0, lam - step * g)
    return best_lam, best_L


def priced_counts(inst: PlacementInstance, table: ConfigTable, lam: np.ndarray) -> np.ndarray:
    """Each job's best count vector at prices ``lam`` (per job, ``lam`` may be (n, G)), repaired to fit.

    Repair: while a type is over-demanded, the job whose unit of it costs least to give up
    moves it to a type with free GPUs, or drops it (if it keeps one GPU).
    """
    counts = table.C[table.pick(np.broadcast_to(lam, (table.n, inst.n_types)))[0]].copy()
    N = inst.type_counts
    idx = np.arange(inst.n_jobs)
    G = inst.n_types
    while True:
        excess = counts.sum(axis=0) - N
        over = np.flatnonzero(excess > 0)
        if over.size == 0:
            return counts
        g = over[0]
        free = np.maximum(-excess, 0)
        base = cost(inst, idx, counts)
        # per job: the cheapest way to give up one type-g GPU (drop it, or trade it for a free type)
        options = [None, *np.flatnonzero(free > 0)]
        D = np.full((len(options), inst.n_jobs), np.inf)
        for o, h in enumerate(options):
            new = counts.copy()
            new[:, g] -= 1
            if h is not None:
                new[:, h] += 1
            size = new.sum(axis=1)
            ok = (counts[:, g] > 0) & (size >= 1) & (size <= inst.max_workers)
            if ok.any():
                D[o, ok] = cost(inst, idx[ok], np.maximum(new[ok], 0)) - base[ok]
        choice = D.argmin(axis=0)
        delta = D[choice, idx]
        # a batch: up to `excess` jobs, cheapest first, one unit each, trades within free capacity:
        # in that order a trade into h stands if fewer than free[h] earlier ones went there
        order = np.argsort(delta, kind="stable")
        order = order[np.isfinite(delta[order])]
        opt = choice[order]                                   # 0: drop the unit; o: trade it for options[o]
        rank = np.empty(order.size, dtype=np.int64)
        for o in np.unique(opt).tolist():
            at = opt == o
            rank[at] = np.arange(int(at.sum()))
        room = np.array([np.inf, *(free[h] for h in options[1:])])
        stand = rank < room[opt]
        take, into = order[stand][:int(excess[g])], opt[stand][:int(excess[g])]
        counts[take, g] -= 1
        trade = into > 0
        counts[take[trade], np.array(options[1:], dtype=np.int64)[into[trade] - 1]] += 1
        if not take.size:
            # Stuck: every holder of type g has one GPU and no other type is free. Free a unit of
            # some type elsewhere (the cheapest drop by a job with two or more GPUs), so that a
            # one-GPU holder of g can trade into it on the next round.
            size = counts.sum(axis=1)
            best = (np.inf, -1, -1)
            for h in range(G):
                rows = np.flatnonzero((counts[:, h] > 0) & (size >= 2))
                if rows.size:
                    new = counts[rows].copy()
                    new[:, h] -= 1
                    d = cost(inst, idx[rows], new) - base[rows]
                    k = int(d.argmin())
                    if d[k] < best[0]:
                        best = (float(d[k]), int(rows[k]), h)
            if best[1] < 0:
                raise RuntimeError(f"cannot repair the demand for GPU type {inst.gpu_types[g]}: "
                                   f"{inst.n_jobs} jobs need at least one GPU each")
            counts[best[1], best[2]] -= 1


# ------------------------------------------------------------------------------ one category

def _swap_deltas(inst, counts, cur, rows, biggest) -> np.ndarray:
    """(len(rows), G, G): change of job JCT when one of its type-g GPUs becomes type h (inf if none).
    Only the moves that exist are scored, (job, held type g, other type h): a job holding one type
    has G - 1 of the G^2 (on the inflated OpenB trace, 7 types, scoring all of them was 13 % of the
    solver's time)."""
    G = counts.shape[1]
    c = counts[rows]
    out = np.full((rows.size, G, G), np.inf)
    a, g = np.nonzero(c > 0)                                       # every type each job holds
    a, g = np.repeat(a, G - 1), np.repeat(g, G - 1)
    h = (g + np.tile(np.arange(1, G), a.size // max(G - 1, 1))) % G   # every other type
    moved = c[a]
    k = np.arange(a.size)
    moved[k, g] -= 1
    moved[k, h] += 1
    out[a, g, h] = cost(inst, rows[a], moved, biggest) - cur[rows][a]
    return out


def polish_counts(inst: PlacementInstance, counts: np.ndarray, biggest=None, max_moves: int = 10_000,
                  stop: Callable[[], bool] | None = None) -> tuple[np.ndarray, int]:
    """Exchange one GPU between two jobs (or with the idle pool) while the category's JCT drops.

    The best exchange over every (job, job, type, type) is taken each step; only the two jobs
    it touches are re-scored. ``stop()`` true ends the exchanges (each one lowers the JCT).
    """
    counts = np.array(counts, dtype=np.int64)
    n, G = counts.shape
    biggest = _biggest_server(inst) if biggest is None else biggest
    idx = np.arange(n)
    cur = cost(inst, idx, counts, biggest)
    D = _swap_deltas(inst, counts, cur, idx, biggest)            # (n, G, G)
    moves = 0
    while moves < max_moves and not (stop is not None and stop()):
        free = inst.type_counts - counts.sum(axis=0)
        best, act = -1e-9 * max(1.0, float(cur.sum())), None
        order = np.argsort(D, axis=0)[:2]                          # two best jobs per (g, h)
        for g in range(G):
            for h in range(G):
                if g == h:
                    continue
                i0 = int(order[0, g, h])
                if free[h] > 0 and D[i0, g, h] < best:
                    best, act = D[i0, g, h], (i0, g, h, None)
                if h > g:
                    for i in order[:, g, h]:
                        for j in order[:, h, g]:
                            if i != j and D[i, g, h] + D[j, h, g] < best:
                                best, act = D[i, g, h] + D[j, h, g], (int(i), g, h, int(j))
        if act is None:
            break
        i, g, h, j = act
        counts[i, g] -= 1
        counts[i, h] += 1
        touched = [i]
        if j is not None:
            counts[j, h] -= 1
            counts[j, g] += 1
            touched.append(j)
        rows = np.array(touched)
        cur[rows] = cost(inst, rows, counts[rows], biggest)
        D[rows] = _swap_deltas(inst, counts, cur, rows, biggest)
        moves += 1
    return counts, moves


def pair_polish(inst: PlacementInstance, counts: np.ndarray, biggest=None, max_passes: int = 20,
                stop: Callable[[], bool] | None = None) -> tuple[np.ndarray, int]:
    """Re-choose the type counts of two jobs jointly (sizes kept) from what they hold plus the idle
    GPUs, for every pair, while the category's JCT drops. Catches what single exchanges cannot:
    e.g. a job trading two GPUs of different servers for two of one server. ``stop()`` true ends the
    passes."""

    counts = np.array(counts, dtype=np.int64)
    n, G = counts.shape
    biggest = _biggest_server(inst) if biggest is None else biggest
    sizes = counts.sum(axis=1)
    vecs = {}
    for m in np.unique(sizes).tolist():
        V = count_vectors(G, m)
        vecs[m] = V[V.sum(axis=1) == m]
    table = {(i, m): cost(inst, i, vecs[m], biggest) for i in range(n) for m in [int(sizes[i])]}
    cur = cost(inst, np.arange(n), counts, biggest)
    moves = 0
    for _ in range(max_passes):
        if stop is not None and stop():
            break
        improved = False
        for i in range(n):
            for j in range(i + 1, n):
                free = inst.type_counts - counts.sum(axis=0)
                pool = free + counts[i] + counts[j]
                A, B = vecs[int(sizes[i])], vecs[int(sizes[j])]
                okA, okB = np.all(A <= pool, axis=1), np.all(B <= pool, axis=1)
                A, B = A[okA], B[okB]
                ca, cb = table[(i, int(sizes[i]))][okA], table[(j, int(sizes[j]))][okB]
                fit = np.all(A[:, None, :] + B[None, :, :] <= pool, axis=2)
                tot = np.where(fit, ca[:, None] + cb[None, :], np.inf)
                a, b = np.unravel_index(np.argmin(tot), tot.shape)
                if tot[a, b] < cur[i] + cur[j] - 1e-9 * (cur[i] + cur[j]):
                    counts[i], counts[j] = A[a], B[b]
                    cur[i], cur[j] = ca[a], cb[b]
                    moves += 1
                    improved = True
        if not improved:
            break
    return counts, moves


def market_counts(inst: PlacementInstance, sizes: np.ndarray, valuation: str | Callable = "tangent",
                  iters: int = 4, biggest=None, init: np.ndarray | None = None,
                  prices: np.ndarray | None = None, stop: Callable[[], bool] | None = None) -> tuple[np.ndarray | None, int, np.ndarray]:
    """Type counts for a category from the matching market (module docstring, step 2).

    ``valuation``: ``tangent``, ``throughput`` or a callable ``(inst, S) -> (n, G) values``
    where ``S`` is every job's current total throughput (from ``init`` counts if given, else
    ``n_i`` GPUs of the cluster's average throughput). ``prices`` warm-starts the market.
    Returns the counts, the market rounds and the last clearing prices; ``stop()`` true ends the
    market between rounds (:func:`~dlsched.solvers.market.clear`): the best counts of the markets
    cleared before, None if none did.
    """
    N = inst.type_counts
    idx = np.arange(inst.n_jobs)
    S = np.einsum("ig,ig->i", init, inst.rho) if init is not None else sizes * (inst.rho @ N / N.sum())
    best, best_cost, rounds, seen = None, np.inf, 0, set()
    if init is not None:
        seen.add(np.asarray(init, dtype=np.int64).tobytes())
    for _ in range(iters if valuation == "tangent" else 1):
        if valuation == "tangent":
            v = (inst.iterations * inst.global_batch / S**2)[:, None] * inst.rho
        elif valuation == "throughput":
            v = inst.rho.copy()
        elif callable(valuation):
            v = np.asarray(valuation(inst, S), dtype=float)
        else:
            raise InputError("<argument>", "valuation", f"one of {VALUATIONS} or a callable", valuation)
        out = clear(v, sizes, N, prices=prices, stop=stop)
        if out is None:
            break
        rounds += out.rounds
        prices = out.prices
        c = cost(inst, idx, out.alloc, biggest).sum()
        if c < best_cost:
            best, best_cost = out.alloc, c
        key = out.alloc.tobytes()
        if key in seen:
            break
        seen.add(key)
        S = np.einsum("ig,ig->i", out.alloc, inst.rho)
    return best, rounds, prices


def sample_categories(inst: PlacementInstance, base: np.ndarray, N: int, rng: np.random.Generator,
                      moves: float = 1.5) -> list[np.ndarray]:
    """``base`` and up to N-1 distinct sizings, each 1 + Poisson(moves) random unit moves away
    (a unit goes from a job with more than one GPU, or from the idle pool, to another job below
    its maximum, or to the idle pool; ``-1`` stands for the pool)."""
    K = inst.n_gpus
    out, seen = [base.copy()], {base.tobytes()}
    for _ in range(20 * N):
        if len(out) >= N:
            break
        s = base.copy()
        for _ in range(1 + rng.poisson(moves)):
            donors = [*np.flatnonzero(s > 1).tolist(), *([-1] if s.sum() < K else [])]
            if not donors:
                break
            d = donors[rng.integers(len(donors))]
            takers = [t for t in (*np.flatnonzero(s < inst.max_workers).tolist(), -1) if t != d]
            t = takers[rng.integers(len(takers))]
            if d >= 0:
                s[d] -= 1
            if t >= 0:
                s[t] += 1
        if s.tobytes() not in seen:
            seen.add(s.tobytes())
            out.append(s)
    return out


# ------------------------------------------------------------------------------ methods

class _Stop:
    """Whether the call's budget is spent, as the pipeline's steps ask between their own steps;
    ``seen`` once it was (the call's termination is then ``time_limit``)."""

    def __init__(self, clock: Budget):
        self.clock, self.seen, self.at = clock, False, None

    def __call__(self) -> bool:
        if not self.seen and self.clock.expired():
            self.seen, self.at = True, time.perf_counter()     # when the budget cut: what follows is the tail
        return self.seen




def _need(instance) -> PlacementInstance:
    if not isinstance(instance, PlacementInstance):
        raise InputError("<argument>", "instance", "a placement instance", type(instance).__name__)
    return instance


@register("exact", families=("placement",), params=("backend", "solver"), supports=("gap", "raw"), backends=BACKENDS,
          description="exact MCMDK over type-count configurations (MODELS.md §4.2), decoded to a placement")
def exact(instance, opts: SolveOptions, backend: str = "highs", solver: str | None = None) -> Result:
    inst = _need(instance)
    t0 = time.perf_counter()
    # with a limit, the greedy placement (0.1 s for 500 jobs) is the answer if HiGHS finds none in time
    start = pack(inst, greedy_counts(inst)) if opts.clock.limited else None
    model = core_model(inst)
    build = time.perf_counter() - t0
    res = solve_core(model.core, opts, backend, solver=solver)
    stats = {"columns": model.core.n_cols, "rows": model.core.n_rows, "mip_seconds": res.solve_seconds, **res.stats}
    gpu_job = decode(inst, model, res.solution).gpu_job if res.status.has_solution() else None
    if gpu_job is None and start is not None and res.termination == "time_limit":
        gpu_job, stats["returned"] = start, "greedy placement"
    out = placement_result(inst, gpu_job, "exact", opts, termination=res.termination, bound=res.bound, stats=stats,
                           build=build + res.build_seconds, backend=backend, message=res.message)
    out.solver_version = res.solver_version
    return out


@register("greedy", families=("placement",), params=(),
          description="marginal-gain greedy sizing + best-fit placement (baseline)")
def greedy(instance, opts: SolveOptions) -> Result:
    inst = _need(instance)
    counts = greedy_counts(inst)
    gpu_job = pack(inst, counts)
    return placement_result(inst, gpu_job, "greedy", opts, termination="heuristic", bound=float(alone_jct(inst).mean()),
                            stats={})


DEFAULT_SAMPLES = 8
#: the pairwise re-choice costs O(n^2) per pass: used up to this many jobs
PAIR_POLISH_MAX_JOBS = 16


def category_counts(inst: PlacementInstance, sizes: np.ndarray, valuation="tangent", polish: bool = True,
                    biggest=None, init=None, prices=None, iters: int = 2,
                    stop: Callable[[], bool] | None = None) -> tuple[np.ndarray, int, int, np.ndarray]:
    """Market + exchange polish of one category: (type counts, market rounds, swaps, prices). ``stop()``
    true ends the market between rounds and the exchanges between moves: the category's priced counts
    ``init`` (feasible) stand for a market cut short, and the market goes on to clearing only without them."""
    if inst.n_types == 1:
        # one type: the market sells every job its size of it, and no exchange between types exists
        return np.asarray(sizes, dtype=np.int64)[:, None].copy(), 0, 0, prices
    priced = init is not None and np.array_equal(np.asarray(init).sum(axis=1), sizes)
    # the tangent is taken at n_i GPUs of average throughput: at the priced counts it overweights
    # jobs that hold only slow GPUs (measured: 3-13% worse allocations on 32 jobs)
    counts, rounds, prices = market_counts(inst, sizes, valuation, iters, biggest, None, prices, stop if priced else None)
    swaps, cut = 0, counts is None
    if cut:                                  # the budget ended the market: the priced counts alone
        counts = np.array(init, dtype=np.int64)
    if polish:
        # the market's valuation is additive and blind to locality: polish its allocation and,
        # when the category came with priced counts, those too, and keep the better
        starts = [counts] + ([np.asarray(init)] if priced and not cut else [])
        best = np.inf
        for start in starts:
            c, m = polish_counts(inst, start, biggest, stop=stop)
            if inst.n_jobs <= PAIR_POLISH_MAX_JOBS:
                c, more = pair_polish(inst, c, biggest, stop=stop)
                m += more
            swaps += m
            val = cost(inst, np.arange(inst.n_jobs), c, biggest).sum()
            if val < best:
                best, counts = val, c
    return counts, rounds, swaps, prices


def evaluate_category(inst: PlacementInstance, sizes: np.ndarray, valuation="tangent", polish: bool = True,
                      biggest=None, init=None, prices=None, iters: int = 2,
                      stop: Callable[[], bool] | None = None) -> tuple[np.ndarray, float, int, int, np.ndarray]:
    """Market + exchange polish + placement of one category: (gpu_job, average JCT, rounds, swaps, prices)."""
    counts, rounds, swaps, prices = category_counts(inst, sizes, valuation, polish, biggest, init, prices, iters, stop)
    gpu_job = pack(inst, counts)
    return gpu_job, float(evaluate(inst, GpuAssignment(gpu_job, np.zeros(inst.n_gpus))).mean()), rounds, swaps, prices


def placement_free(inst: PlacementInstance) -> bool:
    """Whether every job's JCT depends on its type counts only, not on where its GPUs are: no
    communication term (:func:`~dlsched.instance.placement.comm_seconds` is 0 whether a job spans
    servers or not, the bandwidths being positive). Then :func:`pack` realises any counts at
    exactly their :func:`cost`."""
    return not inst.model_size_mb.any()


def price_categories(inst: PlacementInstance, table: ConfigTable, lam, N: int, rng: np.random.Generator,
                     noise: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Category 0: the sizes jobs choose at the Lagrangian type prices; the others: the sizes
    they choose when each job sees its own prices ``lam * exp(noise * z)``, z ~ N(0, 1) (seeded).
    Each (sizes, priced counts) as it is drawn: a budget that ends the sampling ends the drawing."""
    made, seen = 0, set()
    # at zero prices every perturbation is zero too: one category
    for k in range(max(1, 3 * N) if lam.any() else 1):
        if made >= N:
            break
        lam_k = lam if k == 0 else lam * np.exp(noise * rng.standard_normal((inst.n_jobs, inst.n_types)))
        counts = priced_counts(inst, table, lam_k)
        sizes = counts.sum(axis=1)
        if sizes.tobytes() not in seen:
            seen.add(sizes.tobytes())
            made += 1
            yield sizes, counts


@register("hetplace", families=("placement",), params=("samples", "valuation", "polish", "sampler", "noise", "market_iters"),
          supports=("gap",),
          description="sampled categories + matching market per category (MODELS.md §4.3)")
def hetplace(instance, opts: SolveOptions, samples: int = DEFAULT_SAMPLES,
             valuation: str | Callable = "tangent", polish: bool = True, sampler: str = "prices", noise: float = 0.1,
             market_iters: int = 1) -> Result:
    r"""The §4.3 pipeline (module docstring). ``sampler``: ``prices`` (default; categories chosen by
    the jobs at perturbed Lagrangian type prices) or ``moves`` (random unit moves around the
    greedy sizing). Reports the Lagrangian lower bound as ``bound`` and the type prices :math:`\lambda_g`
    it comes from as ``stats["prices"]`` (in the order of ``gpu_types``). Stops evaluating categories
    when the best placement is within the requested gap of the bound (``gap_limit``).

    **Within the call's budget** (termination ``time_limit`` when it cut anything). Always done, the
    least work of an answer: the configuration table, the subgradient steps until the picks at the
    best prices over-demand the GPU types by at most :data:`PRICES_SLACK` of them (a bound; steps
    are cheap, the repair of a larger excess is not) and for :data:`PRICES_FLOOR` of the budget from
    their start, category 0's priced counts (feasible: repaired
    to the type counts) and the packing of the answer. What the budget ends, each part returning the
    best so far: the further subgradient steps (the bound and prices of the steps taken), the market
    (category 0's priced counts stand for a market cut between rounds), the exchanges of the polish
    (each one lowers the JCT), and the categories after the first (not drawn). The answer is the
    best category evaluated; its gap is against the bound of the steps taken. Under a budget ``stats`` has
    ``least_seconds``, the wall time of the always-done parts (the table, the steps until the picks first
    nearly fit, category 0's priced counts, the packing and scoring of the answer), and ``after_seconds``,
    the time from the budget's cut (or from the packing, uncut) to the return."""
    inst = _need(instance)
    if int(samples) < 1:
        raise InputError("<argument>", "samples", "a number of categories >= 1", samples)
    if sampler not in ("prices", "moves"):
        raise InputError("<argument>", "sampler", "'prices' or 'moves'", sampler)
    polish = polish in (True, "true", "True", "1", 1)
    seed = int(opts.seed)  # the common option: dlsched.solve(..., seed=S), `dlsched solve --seed S`
    rng = np.random.default_rng(seed)
    stop = _Stop(opts.clock) if opts.clock.limited else None
    t_start = time.perf_counter()
    biggest = _biggest_server(inst)
    table = ConfigTable(inst, biggest)
    # the steps get at least a share of the budget from their start, however late that is (the view
    # and the table may have spent a small budget): the answer cut shortest is only as good as its prices
    floor = Budget(PRICES_FLOOR * opts.clock.limit) if stop is not None else None
    slack_at = []               # when the steps' picks first nearly fit: the steps after it are the budget's

    def prices_spent() -> bool:
        if not slack_at:
            slack_at.append(time.perf_counter())
        return floor.expired() and stop()

    lam, L = type_prices(inst, table, stop=None if stop is None else prices_spent)
    least = (slack_at[0] if slack_at else time.perf_counter()) - t_start
    if sampler == "prices":
        cats = price_categories(inst, table, lam, int(samples), rng, float(noise))
    else:
        cats = iter([(s, None) for s in sample_categories(inst, greedy_counts(inst).sum(axis=1), int(samples), rng)])
    # the Lagrangian prices are per-GPU JCT values, the scale of the tangent valuation: a warm start
    best_val, best_job, rounds, swaps, prices = np.inf, None, 0, 0, (lam if valuation == "tangent" else None)
    bound = max(L / inst.n_jobs, float(alone_jct(inst).mean()))
    termination = "heuristic"
    # without a communication term a category scores its counts whatever their placement: only the
    # best is packed (the same value, to the bit, as packing each: jct_counts adds a 0 either way)
    by_counts = placement_free(inst)
    idx = np.arange(inst.n_jobs)
    drawn = 0
    while True:
        if best_job is not None and stop is not None and stop():
            break
        if best_job is not None and opts.mip_rel_gap > 0 and best_val - bound <= opts.mip_rel_gap * best_val:
            termination = "gap_limit"
            break
        t_cat = time.perf_counter()
        cat = next(cats, None)
        if cat is None:
            break
        sizes, init = cat
        if not drawn:
            least += time.perf_counter() - t_cat          # category 0's priced counts (repaired)
        drawn += 1
        if by_counts:
            counts, r, m, prices = category_counts(inst, sizes, valuation, polish, biggest, init, prices, int(market_iters), stop)
            val, got = float(cost(inst, idx, counts, biggest).mean()), counts
        else:
            got, val, r, m, prices = evaluate_category(inst, sizes, valuation, polish, biggest, init, prices,
                                                       int(market_iters), stop)
        rounds += r
        swaps += m
        if val < best_val:
            best_val, best_job = val, got
    t_pack = time.perf_counter()
    if by_counts and best_job is not None:
        best_job = pack(inst, best_job)
    if stop is not None and stop.seen:
        termination = "time_limit"
    stats = {"samples": int(samples), "categories": drawn, "market_rounds": rounds, "swaps": swaps,
             "valuation": valuation if isinstance(valuation, str) else "custom", "sampler": sampler, "seed": seed,
             "lagrangian_bound": L / inst.n_jobs, "prices": lam.tolist()}
    out = placement_result(inst, best_job, "hetplace", opts, termination=termination, bound=bound, stats=stats)
    if stop is not None:
        # in wall seconds, what the budget did not end (the always-done parts above, the packing and scoring of
        # the answer) and what followed its cut (from the packing where it cut nothing): the caller's measure of
        # what its next call must leave room for (HetPlace._over_budget)
        end = time.perf_counter()
        out.stats["least_seconds"] = least + end - t_pack
        out.stats["after_seconds"] = end - (stop.at if stop.at is not None and stop.at < t_pack else t_pack)
    return out

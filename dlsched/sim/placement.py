"""Shared placers: where the workers and PSs of a sized job go (MODELS.md §1, §5 placement).

A task (one worker or one PS) holds its demand vector d (R,) on one server. ``task_slots(free,
d)[s]`` is how many such tasks fit on server s. Two placements:

* **first fit** — servers in index order, each taking as many tasks as fit;
* **consolidated** — the fewest servers: servers in decreasing order of the worker slots they
  offer, so a job spreads over as few servers as its size allows (locality, Optimus's principle
  without its equal-split refinement).

PSs are placed before workers, on the same server order, so a consolidated job keeps its PSs
beside its workers when there is room (workers first if that fails). :class:`FirstFit` and
:class:`Consolidated` are :class:`~dlsched.sim.policy.Placer` objects: they keep a job's current
placement when its size is unchanged (no restart cost) and place the others in the order given;
a job whose size does not pack onto the servers is shrunk a bundle at a time (not below its
``min_workers``) before it is left out.
"""

from __future__ import annotations

import bisect
import heapq
import math
from itertools import filterfalse
from typing import Literal, Mapping, get_args

import numpy as np

from dlsched.errors import InputError
from dlsched.sim.policy import Changes, ClusterState, Placement

#: capacity slack for float demands (fractional GPUs, memory in GB)
EPS = 1e-9
#: how many tasks that need nothing fit on a server: more than any task count, and small enough that
#: a sum over the servers stays far inside int64 (2^40 x 100,000 servers < 2^57)
UNBOUNDED = 1 << 40


def task_slots(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """How many tasks of ``demand`` (R,) fit on each server of ``free`` (S, R); :data:`UNBOUNDED` if ``demand`` is 0."""
    need = demand > 0
    if not need.any():
        return np.full(free.shape[0], UNBOUNDED, dtype=np.int64)
    return np.maximum(np.floor(free[:, need] / demand[need] + EPS).min(axis=1), 0).astype(np.int64)


def fill_in_order(slots: np.ndarray, count: int) -> np.ndarray | None:
    """Counts per position, filling positions in order (as many as fit); None if ``count`` does not fit."""
    if count <= 0:
        return np.zeros(slots.shape[0], np.int64)
    if slots.sum() < count:
        return None
    return np.minimum(slots, np.maximum(count - (np.cumsum(slots) - slots), 0))


def usage(placement: Placement, demand_w: np.ndarray, demand_p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(servers, rows): the distinct servers a placement touches and what it holds on each, shape (k, R)."""
    servers = sorted(placement.servers)
    srv = np.array(servers, dtype=np.int64)
    w = np.array([placement.workers.get(s, 0) for s in servers], dtype=float)
    p = np.array([placement.ps.get(s, 0) for s in servers], dtype=float)
    return srv, w[:, None] * demand_w[None, :] + p[:, None] * demand_p[None, :]


def _fit_in_order(f, order, demand_w, demand_p, n_workers, n_ps, ps_first: bool):
    """Place one kind of task, then the other, filling servers in ``order``; None if either fails."""
    kinds = [(demand_p, n_ps), (demand_w, n_workers)]
    if not ps_first:
        kinds.reverse()
    counts = []
    for demand, count in kinds:
        c = fill_in_order(task_slots(f, demand), count) if count else np.zeros(len(order), np.int64)
        if c is None:
            return None
        if count:
            f = f - c[:, None] * demand[None, :]
        counts.append(c)
    ps, w = counts if ps_first else counts[::-1]
    return Placement({int(order[i]): int(w[i]) for i in np.flatnonzero(w)},
                     {int(order[i]): int(ps[i]) for i in np.flatnonzero(ps)})


def hold(free: np.ndarray, placement: Placement, demand_w: np.ndarray, demand_p: np.ndarray) -> None:
    """Take what ``placement`` holds out of ``free`` (in place)."""
    srv, rows = usage(placement, demand_w, demand_p)
    free[srv] -= rows


def fit(free: np.ndarray, demand_w: np.ndarray, demand_p: np.ndarray, n_workers: int, n_ps: int,
        order: np.ndarray | None = None) -> Placement | None:
    """Place ``n_ps`` PSs and ``n_workers`` workers on servers in ``order`` (index order if None).

    PSs first, and if that leaves too little for the workers, workers first (PSs that fill
    servers first can crowd out the workers, and the other way round). Returns None when neither
    fits; ``free`` is not modified.
    """
    order = np.arange(free.shape[0]) if order is None else order
    f = free[order]
    got = _fit_in_order(f, order, demand_w, demand_p, n_workers, n_ps, ps_first=True)
    if got is None and n_ps:
        got = _fit_in_order(f, order, demand_w, demand_p, n_workers, n_ps, ps_first=False)
    return got


def first_fit(free, demand_w, demand_p, n_workers: int, n_ps: int) -> Placement | None:
    """Servers in index order."""
    return fit(free, demand_w, demand_p, n_workers, n_ps)


class FirstFitPool:
    """Free capacity (S, R) from which tasks are taken first fit, one request after another.

    ``take(demand_w, demand_p, n_workers, n_ps)`` answers exactly what ``first_fit(pool.free, ...)``
    followed by ``hold(pool.free, ...)`` would (the same placement, the same floating-point
    operations on ``free``) for a fraction of the cost, because free capacity here only
    decreases: for each demand vector the servers before the first one with room for it never
    get room again and are skipped, and the servers from there on are read one by one while few
    are needed (most requests), the rest of the row in one numpy pass (a long scan, or a request
    that does not fit). DRF's tentative placement of every grant (policies/drf.drf_fill)
    is the caller this exists for. A request of workers alone (no PS) that does not fit never fits
    again, nor does one of more workers of the same demand: the pool remembers the fewest workers
    that failed per demand vector and answers None at once (with PSs, a later, emptier state can
    move the PSs and let the workers fit, so those are always tried).
    """

    #: servers read one by one before the rest of the row is done in one numpy pass
    SCAN = 8

    def __init__(self, free: np.ndarray):
        self.free = np.array(free, dtype=float)
        self.S = self.free.shape[0]
        self._lo: dict[tuple, int] = {}     # demand vector -> no server before this one has room for it
        self._fail: dict[tuple, int] = {}   # demand vector -> the fewest workers alone that did not fit
        self._need: dict[tuple, tuple] = {}  # demand vector -> its (resource, amount > 0) pairs, their indices, amounts

    def mark(self) -> tuple:
        """What the pool has learnt besides its free capacity, for :meth:`restore` (a copy)."""
        return dict(self._lo), dict(self._fail)

    def restore(self, free: np.ndarray, mark: tuple) -> None:
        """Back to an earlier state of this request sequence: its free capacity and its :meth:`mark`."""
        self.free, self._lo, self._fail = free.copy(), dict(mark[0]), dict(mark[1])

    def take(self, demand_w, demand_p, n_workers: int, n_ps: int) -> tuple[list, list] | None:
        """Place and hold ``n_workers`` workers and ``n_ps`` PSs as :func:`fit` does (PSs first, else
        workers first); returns ([(server, workers)], [(server, PSs)]) in server order, or None
        (nothing held)."""
        dw = demand_w if type(demand_w) is tuple else tuple(map(float, demand_w))
        dp = demand_p if type(demand_p) is tuple else tuple(map(float, demand_p))
        if not n_ps and n_workers >= self._fail.get(dw, n_workers + 1):
            return None
        if not n_ps and n_workers == 1 and self.needs(dw)[0]:
            # one worker alone, DRF's most frequent request (every first grant of a one-task pod)
            s = self._first_room(dw)
            if s is None:
                self._fail[dw] = 1
                return None
            F, item = self.free, self.free.item
            for r, x in enumerate(dw):
                F[s, r] = item(s, r) - 1.0 * x       # hold()'s arithmetic for one worker, no PS
            return [(s, 1)], []
        got = self._fit(dw, dp, n_workers, n_ps, ps_first=True)
        if got is None and n_ps:
            got = self._fit(dw, dp, n_workers, n_ps, ps_first=False)
        if got is None:
            if not n_ps:
                self._fail[dw] = min(n_workers, self._fail.get(dw, n_workers))
            return None
        w, p = got
        # hold()'s arithmetic, free[s] -= w_s * d_w + p_s * d_p, per touched server
        F, item = self.free, self.free.item
        if not p:
            for s, a in w:
                a = float(a)
                for r, x in enumerate(dw):
                    F[s, r] = item(s, r) - a * x      # = a * x + 0 * d_p: no PS here
            return w, p
        ws, ps = dict(w), dict(p)
        for s in sorted(ws.keys() | ps.keys()):
            a, b = float(ws.get(s, 0)), float(ps.get(s, 0))
            for r, (x, y) in enumerate(zip(dw, dp)):
                F[s, r] = item(s, r) - (a * x + b * y)
        return w, p

    def needs(self, d: tuple) -> tuple:
        """([(resource, amount)] over the amounts > 0 of ``d``, their resource indices, their amounts)."""
        got = self._need.get(d)
        if got is None:
            need = [(r, x) for r, x in enumerate(d) if x > 0]
            got = self._need[d] = (need, [r for r, _ in need], np.array([x for _, x in need]))
        return got

    def _first_room(self, d: tuple) -> int | None:
        """The first server with room for one task of ``d`` (some amount > 0), as :meth:`_scan` finds it
        for one task: floor(f / x + EPS) >= 1, i.e. f / x + EPS >= 1, for every amount x > 0."""
        need, idx, xs = self.needs(d)
        F, S, item = self.free, self.S, self.free.item
        lo = self._lo.get(d, 0)
        end = min(S, lo + self.SCAN)
        for s in range(lo, end):
            for r, x in need:
                if item(s, r) / x + EPS < 1.0:
                    break
            else:
                self._lo[d] = s
                return s
        has = np.flatnonzero((F[end:, idx] / xs + EPS >= 1.0).all(axis=1)) if end < S else ()
        if not len(has):
            self._lo[d] = S
            return None
        s = end + int(has[0])
        self._lo[d] = s
        return s

    def _fit(self, dw, dp, n_workers, n_ps, ps_first: bool):
        kinds = [(dp, n_ps), (dw, n_workers)]
        if not ps_first:
            kinds.reverse()
        (d0, c0), (d1, c1) = kinds
        first = self._scan(d0, c0, None) if c0 else []
        if first is None:
            return None
        second = self._scan(d1, c1, (d0, first) if first else None) if c1 else []
        if second is None:
            return None
        return (second, first) if ps_first else (first, second)

    def _scan(self, d: tuple, count: int, pending) -> list | None:
        """[(server, tasks)] filling servers in index order with ``count`` tasks of demand ``d``, as
        ``fill_in_order(task_slots(f, d), count)`` on f = free minus ``pending`` = (demand, [(server,
        tasks)]) (taken as ``f - c * demand``, :func:`_fit_in_order`'s arithmetic); None if they do
        not fit."""
        need = self.needs(d)[0]
        F, S = self.free, self.S
        if not need:                       # no resource needed: the generic path, whatever it answers
            f = F.copy()
            if pending:
                for s, c in pending[1]:
                    f[s] = f[s] - c * np.asarray(pending[0])
            c = fill_in_order(task_slots(f, np.asarray(d)), count)
            return None if c is None else [(int(s), int(c[s])) for s in np.flatnonzero(c)]
        sub = {} if pending is None else {s: c for s, c in pending[1]}
        pd = None if pending is None else pending[0]
        lo = self._lo.get(d, 0)
        out, left, room = [], count, None
        s, end = lo, min(S, lo + self.SCAN)
        item, floor = F.item, math.floor
        while s < end:
            k = None
            c_s = sub.get(s)
            for r, x in need:
                f = item(s, r) if c_s is None else item(s, r) - c_s * pd[r]
                v = floor(f / x + EPS)
                if k is None or v < k:
                    k = v
            if k > 0:
                if room is None:
                    room = s
                c = k if k < left else left
                out.append((s, c))
                left -= c
                if not left:
                    break
            s += 1
        if left:
            s = end
            if s < S:
                idx = [r for r, _ in need]
                f = F[s:, idx]
                for t, c in sub.items():
                    if t >= s:
                        f[t - s] = f[t - s] - c * np.array([pd[r] for r in idx])
                slots = np.maximum(np.floor(f / np.array([x for _, x in need]) + EPS).min(axis=1), 0).astype(np.int64)
                has = np.flatnonzero(slots)
                if room is None:
                    room = s + int(has[0]) if has.size else S
                if slots.sum() >= left:
                    c = np.minimum(slots, np.maximum(left - (np.cumsum(slots) - slots), 0))
                    out += [(s + int(t), int(c[t])) for t in np.flatnonzero(c)]
                    left = 0
            elif room is None:
                room = S
        if pending is None and room is not None:
            self._lo[d] = room
        return None if left else out


def consolidated(free, demand_w, demand_p, n_workers: int, n_ps: int) -> Placement | None:
    """The fewest servers: those offering the most worker slots first (ties by index)."""
    slots = task_slots(free, demand_w)
    if not n_ps and n_workers > 0:
        s = int(np.argmax(slots))
        if slots[s] >= n_workers:
            # the first server with the most slots holds every worker: what fit() answers in that
            # order, without sorting the servers (most starts of a large cluster end here)
            return Placement({s: int(n_workers)}, {})
    order = np.argsort(-slots, kind="stable")
    return fit(free, demand_w, demand_p, n_workers, n_ps, order)


class ConsolidatedPool:
    """Free capacity (S, R), held in place, on which sized jobs are placed one after another by
    :func:`consolidated`, each held (:func:`hold`) before the next: :meth:`fit` answers what
    ``consolidated(free, ...)`` answers and :meth:`hold` makes the same floating-point changes, at a
    cost that grows with the number of distinct free rows (*classes*) instead of the servers.

    Servers with equal free rows offer the same slots to any task and differ only by their index,
    the placer's tie rule. So a request computes its worker and PS slots once per class and walks the
    servers in the placer's order (decreasing worker slots, then index: the classes of each slot
    value merged by index) only as far as it places tasks. A decision from scratch places on the empty
    cluster (DL2's 3,250 nodes are one class) and a job changes a few servers: the 2,000 jobs of one
    DL2 decision spent 85 % of it in :func:`consolidated`'s passes over every server. Where the free
    rows fragment into more than :data:`CLASSES` classes (fractional demands), it calls
    :func:`consolidated` itself. :meth:`refresh` re-reads servers whose rows the caller changed."""

    #: the most classes kept; beyond, every request goes to :func:`consolidated`
    CLASSES = 64

    def __init__(self, free: np.ndarray):
        self.free = free
        self.key: list[tuple] = [tuple(r) for r in free.tolist()]   # each server's free row
        self.members: dict[tuple, list[int]] | None = {}              # class -> its servers, ascending
        self._slots: dict[tuple, int] = {}                           # (class, needs) -> slots
        for s, k in enumerate(self.key):
            self.members.setdefault(k, []).append(s)
        if len(self.members) > self.CLASSES:
            self.members = None

    def fit(self, demand_w: np.ndarray, demand_p: np.ndarray, n_workers: int, n_ps: int) -> Placement | None:
        """``consolidated(self.free, demand_w, demand_p, n_workers, n_ps)``; ``free`` is not changed."""
        n_workers, n_ps = int(n_workers), int(n_ps)
        if self.members is None or n_workers <= 0:
            return consolidated(self.free, demand_w, demand_p, n_workers, n_ps)
        need_w = tuple((r, x) for r, x in enumerate(demand_w.tolist()) if x > 0)
        need_p = tuple((r, x) for r, x in enumerate(demand_p.tolist()) if x > 0)
        w_slot, p_slot = self._class_slots(need_w), self._class_slots(need_p)
        if not n_ps:
            # consolidated's shortcut: the first server with the most slots, if it holds every worker
            top = max(w_slot.values())
            if top >= n_workers:
                return Placement({min(m[0] for k, m in self.members.items() if w_slot[k] == top): int(n_workers)}, {})
        levels: dict[int, list[tuple]] = {}
        for k, v in w_slot.items():
            levels.setdefault(v, []).append(k)
        order = [levels[v] for v in sorted(levels, reverse=True)]    # the placer's order, by class
        dp, dw = demand_p.tolist(), demand_w.tolist()
        got = self._fill_two(order, (need_p, p_slot, dp, n_ps), (need_w, w_slot, dw, n_workers))
        if got is not None:
            ps, w = got
        elif n_ps:
            got = self._fill_two(order, (need_w, w_slot, dw, n_workers), (need_p, p_slot, dp, n_ps))
            if got is None:
                return None
            w, ps = got
        else:
            return None
        return Placement(dict(w), dict(ps))

    def _class_slots(self, need: tuple) -> dict[tuple, int]:
        """Each class's slots for a task of ``need`` ([(resource, amount > 0)])."""
        memo, out = self._slots, {}
        for k in self.members:
            v = memo.get((k, need))
            if v is None:
                v = memo[(k, need)] = _slots(k, need)
            out[k] = v
        return out

    def _fill_two(self, order: list, first: tuple, second: tuple) -> tuple[list, list] | None:
        """:func:`_fit_in_order` by classes: ``first`` = (needs, class slots, demand, count) filled in the
        placer's ``order``, then ``second`` on the rows less what ``first`` took there; None if either fails."""
        _, slot0, d0, c0 = first
        got0 = self._fill(order, slot0, c0, {}) if c0 else []
        if got0 is None:
            return None
        need1, slot1, _, c1 = second
        less = {}
        for s, c in got0:       # _fit_in_order's f - c * demand on the servers the first kind took
            less[s] = _slots(tuple(f - c * x for f, x in zip(self.key[s], d0)), need1)
        got1 = self._fill(order, slot1, c1, less) if c1 else []
        return None if got1 is None else (got0, got1)

    def _fill(self, order: list, slot: dict, count: int, less: dict) -> list | None:
        """[(server, tasks)] as :func:`fill_in_order` fills ``count`` tasks in ``order`` (lists of classes per
        worker-slot level, merged by index), ``slot``: each class's slots for the task, ``less``: the slots of
        servers whose rows the other kind reduced; None if the slots add up to less than ``count``."""
        total = sum(slot[k] * len(m) for k, m in self.members.items())
        total += sum(v - slot[self.key[s]] for s, v in less.items())
        if total < count:
            return None
        out, left = [], count
        for level in order:
            lists = [self.members[k] for k in level if slot[k] > 0]
            servers = lists[0] if len(lists) == 1 else heapq.merge(*lists)
            for s in servers:
                v = less.get(s, slot[self.key[s]])
                if v > 0:
                    c = v if v < left else left
                    out.append((s, c))
                    left -= c
                    if not left:
                        return out
        return out if not left else None

    def hold(self, placement: Placement, demand_w: np.ndarray, demand_p: np.ndarray) -> None:
        """:func:`hold` on ``free``, the classes of the servers it touches updated."""
        srv, rows = usage(placement, demand_w, demand_p)
        self.free[srv] -= rows
        self.refresh(srv.tolist())

    def refresh(self, servers) -> None:
        """Re-read the free rows of ``servers`` (changed by the caller) into the classes."""
        if self.members is None:
            return
        for s, row in zip(servers, self.free[servers].tolist()):
            old, new = self.key[s], tuple(row)
            if old == new:
                continue
            mem = self.members[old]
            del mem[bisect.bisect_left(mem, s)]
            if not mem:
                del self.members[old]
            bisect.insort(self.members.setdefault(new, []), s)
            self.key[s] = new
        if len(self.members) > self.CLASSES:
            self.members = None


def _slots(row: tuple, need: list) -> int:
    """:func:`task_slots` of one free row for a task of ``need`` ([(resource, amount > 0)]), in Python floats
    (the same operations: floor(f / x + EPS), the least over the needs, not below 0)."""
    if not need:
        return UNBOUNDED
    k = min(math.floor(row[r] / x + EPS) for r, x in need)
    return k if k > 0 else 0


class EmptyCluster:
    """:func:`consolidated` on the empty cluster ``capacity``, remembered per request (demand vectors,
    workers, PSs): the answer depends on nothing else, and a trace of 100,000 jobs asks about a few
    dozen shapes (a job's full size, its time alone, its offered load). Placements are values, so
    jobs of one shape share one."""

    def __init__(self, capacity: np.ndarray):
        self.capacity = capacity
        self._memo: dict[tuple, Placement | None] = {}

    def consolidated(self, demand_w: np.ndarray, demand_p: np.ndarray, n_workers: int, n_ps: int) -> Placement | None:
        key = (demand_w.tobytes(), demand_p.tobytes(), int(n_workers), int(n_ps))
        try:
            return self._memo[key]
        except KeyError:
            pl = self._memo[key] = consolidated(self.capacity, demand_w, demand_p, n_workers, n_ps)
            return pl

    def largest(self, demand_w: np.ndarray, demand_p: np.ndarray, min_workers: int, max_workers: int,
                n_ps: int) -> tuple[int, Placement | None]:
        """The most workers in [min_workers, max_workers] (with ``n_ps`` PSs) that fit the empty
        cluster and their placement; (min_workers, None) if even the fewest do not fit."""
        for w in range(max_workers, min_workers - 1, -1):
            pl = self.consolidated(demand_w, demand_p, w, n_ps)
            if pl is not None:
                return w, pl
        return min_workers, None


class _KeepOrPlace:
    """Keep unchanged sizes where they are, release the rest, place changed jobs in the given order.

    Subclasses give ``fit(free, demand_w, demand_p, n_workers, n_ps)``.
    """

    def place(self, state: ClusterState, sizes: Mapping[int, tuple[int, int]]) -> dict[int, Placement]:
        alloc = state.allocation
        now = state.sizes
        if now is not None and type(sizes) is dict and type(next(iter(sizes.values()), ())) is tuple and now.items() <= sizes.items():
            # every running job keeps its size (most calls): one C-level pass over the running jobs and
            # one over the sizes rather than a Python step per job. poisson:10000:0 at load 0.9 on
            # 1,625 x 4 GPUs under DRF took 46.9 CPU s with the general path below alone, 22.8 with this
            return self.add(state, {j: sizes[j] for j in filterfalse(now.__contains__, sizes)})
        free = state.free.copy()
        # comprehensions over the running jobs and the sizes rather than a Python step with lookups per
        # job: poisson:2000:3 at load 1.5 on 1,625 x 4 GPUs under Tetris spends 1.9 CPU s here, 2.6 s
        # with the loop
        keep = {j for j, old in alloc.items() if (s := sizes.get(j)) is not None and tuple(s) == (old.n_workers, old.n_ps)}
        for j in [j for j in alloc if j not in keep]:
            srv, rows = usage(alloc[j], state.demand_w[j], state.demand_p[j])
            free[srv] += rows
        out = {j: alloc[j] for j in sizes if j in keep}
        return self._fit_all(state, free, {j: sizes[j] for j in sizes if j not in keep}, out)

    def add(self, state: ClusterState, sizes: Mapping[int, tuple[int, int]]) -> dict[int, Placement]:
        """Every running job where it is, and the jobs of ``sizes`` (none of them running) placed in
        that order on what is free: what :meth:`place` answers when ``sizes`` adds to the running
        jobs at their current sizes, at the cost of the jobs added (the kept ones come in the
        allocation's order, which the engine keeps for them anyway)."""
        return Changes(self.added(state, sizes)).applied(state.allocation)

    def added(self, state: ClusterState, sizes: Mapping[int, tuple[int, int]]) -> dict[int, Placement]:
        """What :meth:`add` adds to the allocation, alone: the placements of the jobs of ``sizes``
        (none of them running) that fit, in that order (:class:`Changes` to start them)."""
        return self._fit_all(state, state.free.copy(), sizes, {}) if sizes else {}

    def _fit_all(self, state: ClusterState, free: np.ndarray, sizes: Mapping[int, tuple[int, int]],
                 out: dict[int, Placement]) -> dict[int, Placement]:
        """Place the jobs of ``sizes`` in order on ``free`` (taken in place) into ``out``; a size that
        does not pack is shrunk a bundle at a time, not below min_workers, before the job is left out."""
        for j, (w, p) in sizes.items():
            if w <= 0:
                continue
            pl = self.fit(free, state.demand_w[j], state.demand_p[j], int(w), int(p))
            lo = state.jobs[j].min_workers
            while pl is None and w > lo:
                # the sizing counted aggregate capacity; servers may not pack it: shrink by a bundle
                w, p = w - 1, (min(p, w - 1) if p else 0)
                pl = self.fit(free, state.demand_w[j], state.demand_p[j], int(w), int(p))
            if pl is not None:
                hold(free, pl, state.demand_w[j], state.demand_p[j])
                out[j] = pl
        return out


class FirstFit(_KeepOrPlace):
    """Placer: first fit in server index order."""

    name = "first_fit"
    fit = staticmethod(first_fit)


class Consolidated(_KeepOrPlace):
    """Placer: fewest servers (most worker slots first)."""

    name = "consolidated"
    fit = staticmethod(consolidated)


#: the placers a policy's ``placer`` option names
PlacerName = Literal["first_fit", "consolidated"]
PLACERS = dict(zip(get_args(PlacerName), (FirstFit, Consolidated)))


def make_placer(name: str):
    if name not in PLACERS:
        raise InputError("<argument>", "placer", f"one of {', '.join(PLACERS)}", name)
    return PLACERS[name]()

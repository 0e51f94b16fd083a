r"""Exchanges of jobs between GPU types for ``hetplace``'s srpt types (docs/hetplace.md, "Exchanges between types").

``hetplace`` (``order="srpt"``, several GPU types) gives the admitted jobs their types in rounds by Smith's rule
(:meth:`dlsched.policies.hetplace.HetPlace._by_type`): round k, each job not yet placed tries its k-th fastest type,
in increasing :math:`\kappa_{j,k} = R_j / (g_j(\rho_{j,(k)} - \rho_{j,(k+1)}))`. The rule weighs single jobs; where a
job of 32 GPUs needs the fast GPUs that four 8-GPU jobs hold, moving it costs the others, at that moment, about the
pace it gains, and no order of single jobs finds the move. This module weighs the move of a *set* of jobs: it
promotes one job to a faster type, the rounds re-deciding the others around it, and keeps the promotion where the
projected sum of the admitted jobs' completion times falls.

The model (GPUs of one type pooled, as the rounds see them when servers do not fragment): job a needs
:math:`n_a` GPUs (its workers times GPUs per worker) and, on type g, progresses at
:math:`\pi_{a,g} = n_a \rho_{a,g}` iterations a second. An assignment :math:`t` (a type per job, or none) is
*projected* by replaying the policy on the admitted jobs alone, as if none arrived: every job runs on its type at
:math:`\pi_{a,t_a}`; a job without a type spans types where the GPUs the others leave hold it, as ``hetplace``
places it (:func:`spans`), else waits; at each completion the types are decided again by the rounds
(:func:`rounds`) from the remaining iterations, since ``hetplace`` re-decides every type at every event,
migrations free. The objective is the projected

.. math:: F(t) = \sum_a C_a(t),

the sum of the admitted jobs' completion times from now (:func:`projected`). The rule's own assignment is
:math:`t^0` = :func:`rounds`; :func:`exchange` tries, for each job on a type slower than its fastest or spanning
types, each faster type g (every type, for a job that spans): the job placed there first and the rounds deciding
the rest around it (the jobs it displaces fall to their next types), and keeps the assignment of least
:math:`F`, strictly below :math:`F(t^0)`; then tries again from there, each job promoted at most once. A one-step
improvement of the rule by its own rollout (Bertsekas's rollout): :math:`F` of the answer is never above
:math:`F(t^0)`.

Under a decision budget the search takes a clock (:func:`exchange`'s ``clock``): it is read at every event of a
step's replay, and where it has run out the step ends with the tries replayed to their end (their :math:`F` exact),
the best of them kept if it lowers :math:`F`, and the search stops there: the answer is the best found so far, its
:math:`F` still never above :math:`F(t^0)`.
"""

from __future__ import annotations

import numpy as np

#: a completion within this share of the remaining work of the job (float residue of the replay's steps)
_DONE = 1e-9


class TypeModel:
    r"""The admitted jobs in the pooled model: remaining iterations ``rem`` (n,), GPUs ``need`` (n,), rates per
    GPU ``rho`` (n, G) (at most ``slow`` where the job cannot progress: never tried there), GPUs per worker
    ``per`` (n,) and GPUs of each type ``cap`` (G,). ``rank[a]`` the types by decreasing rate (ties by index, as
    :func:`numpy.argsort` stable), ``lost[a, k]`` :math:`g_a(\rho_{a,(k)} - \rho_{a,(k+1)})` (0 after the last).
    ``mixed``: the pace of a job that spans types (:func:`spans`), "average" (the sum of its GPUs' rates) or
    "slowest" (its GPUs all at the slowest one's rate: synchronous training), as the speed source reads it;
    ``movable`` (n,) bool: the jobs that move up from a type to a faster span (:func:`spans`; None: none)."""

    def __init__(self, rem, need, rho, per, cap, slow: float, mixed: str = "average", movable=None):
        self.rem = np.asarray(rem, dtype=float)
        self.need = np.asarray(need, dtype=float)
        self.rho = np.asarray(rho, dtype=float)
        self.per = np.asarray(per, dtype=float)
        self.cap = np.asarray(cap, dtype=float)
        self.slow = slow
        n, G = self.rho.shape
        self.rank = np.argsort(-self.rho, axis=1, kind="stable")
        ranked = np.c_[np.take_along_axis(self.rho, self.rank, axis=1), np.zeros(n)]
        self.lost = (ranked[:, :G] - ranked[:, 1:]) * self.per[:, None]
        self.best = ranked[:, 0] * self.per
        self.pace = self.need[:, None] * self.rho          # iterations a second on each type
        self.ok = self.rho > slow
        self.mixed = mixed
        self.movable = np.zeros(n, dtype=bool) if movable is None else np.asarray(movable, dtype=bool)


def rounds(m: TypeModel, rem: np.ndarray, alive: np.ndarray, first: list[tuple[int, int]] = ()) -> np.ndarray:
    r"""The rounds of Smith's rule on pooled GPUs (:meth:`~dlsched.policies.hetplace.HetPlace._by_type`'s order:
    round k, the jobs not yet placed in increasing :math:`\kappa_{a,k} = R_a / \text{lost}_{a,k}`, ties by
    :math:`p_a = R_a / (g_a \rho_{a,(1)})`, each on its k-th type if that type's free GPUs hold it), the jobs of
    ``first`` (job, type) placed before the rounds. The type of each job (-1: it waits, or is not ``alive``)."""
    return rounds_many(m, rem[None], alive[None], first)[0]


def rounds_many(m: TypeModel, rem: np.ndarray, alive: np.ndarray, first: list[tuple[int, int]] = (),
                own: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    r""":func:`rounds` for C states at once: ``rem`` and ``alive`` (C, n), the types (C, n). ``first`` placed first in
    every state, then, where ``own`` = (jobs, types) (C,) each, job ``own[0][c]`` on type ``own[1][c]`` in state c.

    Within round k the types do not interact (each job tries one type, its k-th), so each type's jobs, in the
    round's order, are placed first-fit: those that fit in turn are the prefix whose running sum of GPUs is within
    the type's room; the first that does not fit waits, and after it only the jobs that need no more than the room
    left can still fit, so a pass per distinct number of GPUs at most. The same types as placing one job at a
    time (exactly where the GPU counts are whole numbers, as the servers' are)."""
    C, n = rem.shape
    G = m.cap.size
    t = np.full((C, n), -1, dtype=np.int64)
    cap = np.tile(m.cap, (C, 1))
    for a, g in first:
        put = alive[:, a] & m.ok[a, g] & (m.need[a] <= cap[:, g] + 1e-9)
        t[put, a] = g
        cap[put, g] -= m.need[a]
    if own is not None:
        rows, (a, g) = np.arange(C), own
        put = alive[rows, a] & m.ok[a, g] & (m.need[a] <= cap[rows, g] + 1e-9)
        t[rows[put], a[put]] = g[put]
        cap[rows[put], g[put]] -= m.need[a[put]]
    left = alive & (t < 0)
    p = rem / m.best
    for k in range(G):
        if not left.any():
            break
        lost = m.lost[:, k]
        kappa = np.full((C, n), np.inf)
        np.divide(rem, lost, out=kappa, where=lost > 0)
        g = m.rank[:, k]
        # sorted by type first, so each type's queue is one stretch of the row, at the same place in every row
        order = np.lexsort((p, kappa, np.broadcast_to(g, (C, n))), axis=-1)
        seg = np.sort(g)
        cut = np.searchsorted(seg, np.arange(G))
        need = m.need[order]
        go = np.take_along_axis(left & m.ok[np.arange(n), g], order, axis=1)
        fit = np.zeros((C, n), dtype=bool)
        while go.any():
            cs = np.cumsum(np.where(go, need, 0.0), axis=1)
            before = np.c_[np.zeros(C), cs][:, cut]                 # each type's running sum starts from 0
            now = go & (cs - before[:, seg] <= cap[:, seg] + 1e-9)
            fit |= now
            took = np.c_[np.zeros(C), np.cumsum(np.where(now, need, 0.0), axis=1)]
            cap -= took[:, np.r_[cut[1:], n]] - took[:, cut]
            go &= ~now & (need <= cap[:, seg] + 1e-9)
        placed = np.empty_like(fit)
        np.put_along_axis(placed, order, fit, axis=1)
        t[placed] = np.broadcast_to(g, (C, n))[placed]
        left &= ~placed
    return t


def spans(m: TypeModel, rem: np.ndarray, alive: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The jobs that span types in C states (``rem``, ``alive``, types ``t`` of :func:`rounds_many`, all (C, n)), as
    :meth:`~dlsched.policies.hetplace.HetPlace._by_type` places them after the rounds:

    1. each alive job without a type, in the order of the jobs, takes the GPUs the jobs before it leave, its fastest
       types first, whole workers (``per[a]`` GPUs each), where they hold its :math:`n_a` GPUs: :math:`m_{a,g}` of
       type g (the policy places such a job on the pipeline's servers where they are free, which the model does
       not follow);
    2. then each ``movable`` job on a type slower than its fastest, in increasing :math:`p_a = R_a / (g_a
       \rho_{a,(1)})` (the rounds' tie order), takes the span of the GPUs left and its own, fastest types first,
       where that span holds it at a greater pace than its type (:meth:`~dlsched.policies.hetplace.HetPlace._span_up`).

    A span's pace, iterations a second, as the speed source reads a job across types (``m.mixed``):
    :math:`\sum_g m_{a,g} \rho_{a,g}` ("average") or :math:`n_a \min_{g: m_{a,g} > 0} \rho_{a,g}` ("slowest").
    Returns the types, G (one past the last type) for each job that spans, and the pace of each that spans
    (0 elsewhere).

    Why (1): without it a job that no type holds waits in the projection while the policy runs it, and a try
    that sends it to a slow type looks better than it is (a generated burst, seed 6: the exchange moved a 32-GPU
    job from V100s and P100s to K80s and lost 2.4 % of the average JCT; docs/hetplace.md). Why (2): where the
    jobs of 8 GPUs on 4-GPU servers leave 4 GPUs of each type, a job on K80s runs faster on the V100s and P100s
    left, at the P100s' pace even when the slowest GPU sets it."""
    C, n = t.shape
    G = m.cap.size
    rows = np.arange(C)
    t = t.copy()
    pace = np.zeros((C, n))
    room = np.tile(m.cap, (C, 1)).astype(float)
    typed = alive & (t >= 0)
    for g in range(G):
        room[:, g] -= np.where(typed & (t == g), m.need, 0.0).sum(axis=1)
    if not (room >= 1e-9).any():
        return t, pace                               # no GPU left in any state: nothing spans
    cand = alive & (t < 0)
    for a in np.flatnonzero(cand.any(axis=0)).tolist():
        c = np.flatnonzero(cand[:, a] & (room @ m.ok[a] >= m.need[a] - 1e-9))     # the GPUs left may hold it
        if not c.size:
            continue
        took, fits, span = _span(m, np.full(c.size, a), room[c], np.ones(c.size, dtype=bool))
        c = c[fits]
        room[c] -= took[fits]
        t[c, a] = G
        pace[c, a] = span[fits]
    up = typed & m.movable & (t != m.rank[:, 0])
    if not up.any():
        return t, pace
    # in increasing p, each such job with a worker's room on a faster type (no other can make a faster span): each
    # state's next one at a time, its flags recomputed where a move changed its room
    flag = _faster_room(m, t, room, up)
    if not flag.any():
        return t, pace
    rank = np.empty((C, n), dtype=np.int64)
    np.put_along_axis(rank, np.argsort(np.where(up, rem / m.best, np.inf), axis=1, kind="stable"), np.arange(n), axis=1)
    last = np.full(C, -1)
    while True:
        after = np.where(flag & (rank > last[:, None]), rank, n)
        a = after.argmin(axis=1)
        on = after[rows, a] < n
        if not on.any():
            break
        c, a = rows[on], a[on]
        last[c] = rank[c, a]
        g0 = t[c, a]
        own = room[c]
        own[np.arange(c.size), g0] += m.need[a]
        took, fits, span = _span(m, a, own, np.ones(c.size, dtype=bool))
        moves = fits & (span > m.pace[a, g0] * (1 + 1e-9))
        c, a = c[moves], a[moves]
        room[c] = own[moves] - took[moves]
        t[c, a] = G
        pace[c, a] = span[moves]
        up[c, a] = False
        flag[c] = _faster_room(m, t[c], room[c], up[c])
    return t, pace


def _faster_room(m: TypeModel, t: np.ndarray, room: np.ndarray, which: np.ndarray) -> np.ndarray:
    """(C, n): for each job of ``which`` (C, n), whether ``room`` (C, G) has a worker's room on a type faster than
    its type ``t`` (C, n); False for the others."""
    c, a = np.nonzero(which)
    out = np.zeros(which.shape, dtype=bool)
    if c.size:
        rate = m.rho[a, t[c, a]]
        out[c, a] = ((m.rho[a] > rate[:, None]) * room[c]).sum(axis=1) >= m.per[a]
    return out


def _span(m: TypeModel, a: np.ndarray, room: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Job ``a[c]`` (C,) on ``room[c]`` (C, G), its fastest types first, whole workers, in each state c where ``want``:
    the GPUs it takes of each type (C, G), whether they hold it, and their pace (:func:`spans`)."""
    C, G = room.shape
    rows = np.arange(C)
    need = np.where(want, m.need[a], 0.0)
    took = np.zeros((C, G))
    slowest = np.full(C, np.inf)
    for k in range(G):
        g = m.rank[a, k]
        ok = m.ok[a, g]
        took[rows, g] = np.where(ok, np.floor(np.minimum(room[rows, g], need) / m.per[a] + 1e-9) * m.per[a], 0.0)
        need = need - took[rows, g]
        slowest = np.where(took[rows, g] > 0, np.minimum(slowest, m.rho[a, g]), slowest)
    fits = want & (need <= 1e-9)
    if m.mixed == "slowest":
        span = np.where(fits, m.need[a] * slowest, 0.0)
    else:
        span = (took * m.rho[a]).sum(axis=1)
    return took, fits, span


def projected(m: TypeModel, t0: np.ndarray, stop: float = np.inf, clock=None) -> float:
    r""":math:`F(t^0)`: the sum of the jobs' completion times (seconds from now) when they start on the types
    ``t0`` (the jobs without one spanning types where they can, :func:`spans`) and, at each completion, the types
    are decided again by :func:`rounds` and :func:`spans`; inf if the jobs left cannot
    progress. Once :math:`F` is sure to reach ``stop`` (each job left ends no earlier than now plus its remaining
    work at its fastest pace), inf: a candidate that cannot win is not replayed to its end (the same answers).
    ``clock``: as :func:`projected_many`'s."""
    return float(projected_many(m, t0[None], stop, clock)[0])


def projected_many(m: TypeModel, ts: np.ndarray, stop: float = np.inf, clock=None) -> np.ndarray:
    r""":func:`projected` of C assignments ``ts`` (C, n) replayed side by side, one event of each a step (the
    per-event work of a replay is a few array operations, the same for one state as for C: 5.0 times less CPU on
    Gavel's 0e4a51 at 33-108 admitted jobs, results/gavel.md). inf for a replay whose :math:`F` is sure to reach
    ``stop``, or, strictly, to exceed :math:`F/(1 - 10^{-12})` of one already ended: neither can be the one
    :func:`exchange` keeps, which is at most :math:`10^{-12}` above every other's. ``clock`` (anything with
    ``expired()``, e.g. a :class:`~dlsched.solvers.options.Budget`; None: none) is read before each event: once it
    has run out, the replays not yet ended are inf (unknown), those ended keep their exact :math:`F`."""
    C, n = ts.shape
    G = m.cap.size
    out = np.full(C, np.inf)
    ids = np.arange(C)
    rem = np.tile(m.rem, (C, 1))
    alive = np.ones((C, n), dtype=bool)
    t, span = spans(m, rem, alive, ts)
    now, total = np.zeros(C), np.zeros(C)
    fastest = m.pace.max(axis=1)
    jobs = np.arange(n)
    ended = np.inf
    while ids.size:
        if clock is not None and clock.expired():
            break
        keep = np.ones(ids.size, dtype=bool)
        if stop < np.inf or ended < np.inf:
            least = _least(total, now, rem, alive, fastest)
            keep &= (least < stop) & ~(least > ended / (1 - 1e-12))
        on = alive & (t >= 0)
        keep &= on.any(axis=1)                       # the jobs left cannot progress: inf
        if not keep.all():
            ids, t, span, rem, alive, now, total, on = _replays(keep, ids, t, span, rem, alive, now, total, on)
            if not ids.size:
                break
        # every job left on its fastest type: so it stays (those jobs fit their fastest types together, and so does
        # any subset at the next rounds), each ending at now + its remaining work at its fastest pace, the bound
        # above: F without the events left (the same F to float rounding; CPU in docs/hetplace.md, "Exchanges")
        calm = (~alive | (t == m.rank[:, 0])).all(axis=1)
        if calm.any():
            out[ids[calm]] = f = _least(total[calm], now[calm], rem[calm], alive[calm], fastest)
            ended = min(ended, f.min())
            go = ~calm
            ids, t, span, rem, alive, now, total, on = _replays(go, ids, t, span, rem, alive, now, total, on)
            if not ids.size:
                break
        rows = np.arange(ids.size)
        pace = np.where(on, np.where(t == G, span, m.pace[jobs, np.clip(t, 0, G - 1)]), 0.0)
        left = np.full(rem.shape, np.inf)
        np.divide(rem, pace, out=left, where=on)
        first = np.argmin(left, axis=1)
        dt = left[rows, first]
        now = now + dt
        rem = rem - pace * dt[:, None]
        done = on & (rem <= _DONE * m.rem)
        done[rows, first] = True                     # the job that set the step, whatever the float residue
        total = total + now * done.sum(axis=1)
        alive &= ~done
        rem[done] = 0.0
        end = ~alive.any(axis=1)
        if end.any():
            out[ids[end]] = total[end]
            ended = min(ended, total[end].min())
            go = ~end
            ids, t, span, rem, alive, now, total = _replays(go, ids, t, span, rem, alive, now, total)
            if not ids.size:
                break
        t, span = spans(m, rem, alive, rounds_many(m, rem, alive))
    return out


def _least(total: np.ndarray, now: np.ndarray, rem: np.ndarray, alive: np.ndarray, fastest: np.ndarray) -> np.ndarray:
    """The least :math:`F` each replay can reach: its jobs ended so far (``total``) and each job left ending at
    ``now`` plus its remaining work at its fastest pace (exact where every job left is on its fastest type)."""
    return total + np.where(alive, now[:, None] + rem / fastest, 0.0).sum(axis=1)


def _replays(kept: np.ndarray, *arrays: np.ndarray) -> tuple:
    """The rows ``kept`` of each of :func:`projected_many`'s parallel arrays (one row a replay)."""
    return tuple(x[kept] for x in arrays)


def exchange(m: TypeModel, limit: int | None = None, base: np.ndarray | None = None,
             clock=None) -> tuple[list[tuple[int, int]], float, float]:
    r"""The promotions (job, type), in order, that :func:`rounds` takes first, found by the local search of the
    module docstring, with :math:`F` of the rule's assignment and of the answer (equal, and no promotion, where
    none lowers it). ``limit``: at most this many promotions tried in all (None: every one). ``base``: the rule's
    assignment, :func:`rounds` of every job, where the caller has it already. Each step's tries are replayed side
    by side (:func:`projected_many`); the one kept is the first, in the order of the jobs and then their types
    fastest first, whose :math:`F` is below the best before it by a share of :math:`10^{-12}`. ``clock`` (anything
    with ``expired()``; None: none) ends the search where it runs out (module docstring): after the step it ends
    in, with the best found so far; before the first step, with no promotion (both :math:`F` inf where the clock
    ran out before :math:`F(t^0)` was known)."""
    n = m.rem.size
    base = rounds(m, m.rem, np.ones(n, dtype=bool)) if base is None else base
    f0 = projected(m, base, clock=clock)
    if clock is not None and clock.expired():
        return [], f0, f0
    first: list[tuple[int, int]] = []
    cur, f_cur = base, f0
    tried = 0
    everyone = np.ones((1, n), dtype=bool)
    while True:
        fixed = {a for a, _ in first}
        tries = []
        placed = spans(m, m.rem[None], everyone, cur[None])[0][0]      # a type, or G: it spans (any type is faster)
        for a in np.flatnonzero(placed >= 0).tolist():
            if a in fixed:
                continue
            pos = int(np.flatnonzero(m.rank[a] == cur[a])[0]) if cur[a] >= 0 else m.cap.size
            for g in m.rank[a, :pos].tolist():
                if not m.ok[a, g]:
                    continue
                if limit is not None and tried >= limit:
                    break
                tried += 1
                tries.append((a, int(g)))
        if not tries:
            return first, f0, f_cur
        job, to = np.array(tries).T
        ts = rounds_many(m, np.tile(m.rem, (job.size, 1)), np.ones((job.size, n), dtype=bool), first, (job, to))
        new = (ts[np.arange(job.size), job] == to) & ~(ts == cur).all(axis=1)
        f = np.full(job.size, np.inf)
        if new.any():
            f[new] = projected_many(m, ts[new], f_cur * (1 - 1e-12), clock)
        best = None
        for i in np.flatnonzero(f < np.inf).tolist():
            if f[i] < (f_cur if best is None else f[best]) * (1 - 1e-12):
                best = i
        if best is not None:
            first = first + [tries[best]]
            f_cur, cur = float(f[best]), ts[best]
        if best is None or (clock is not None and clock.expired()):
            return first, f0, f_cur

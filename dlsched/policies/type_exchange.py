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
:math:`\pi_{a,g} = n_a \rho_{a,g}` iterations a second. An assignment :math:`t` (a type per job, or none: the job
waits) is *projected* by replaying the policy on the admitted jobs alone, as if none arrived: every job runs on its
type at :math:`\pi_{a,t_a}`; at each completion the types are decided again by the rounds (:func:`rounds`) from
the remaining iterations, since ``hetplace`` re-decides every type at every event, migrations free. The objective
is the projected

.. math:: F(t) = \sum_a C_a(t),

the sum of the admitted jobs' completion times from now (:func:`projected`). The rule's own assignment is
:math:`t^0` = :func:`rounds`; :func:`exchange` tries, for each job on a type slower than its fastest, each faster
type g: the job placed there first and the rounds deciding the rest around it (the jobs it displaces fall to
their next types), and keeps the assignment of least :math:`F`, strictly below :math:`F(t^0)`; then tries again
from there, each job promoted at most once. A one-step improvement of the rule by its own rollout (Bertsekas's
rollout): :math:`F` of the answer is never above :math:`F(t^0)`.
"""

from __future__ import annotations

import numpy as np

#: a completion within this share of the remaining work of the job (float residue of the replay's steps)
_DONE = 1e-9


class TypeModel:
    r"""The admitted jobs in the pooled model: remaining iterations ``rem`` (n,), GPUs ``need`` (n,), rates per
    GPU ``rho`` (n, G) (at most ``slow`` where the job cannot progress: never tried there), GPUs per worker
    ``per`` (n,) and GPUs of each type ``cap`` (G,). ``rank[a]`` the types by decreasing rate (ties by index, as
    :func:`numpy.argsort` stable), ``lost[a, k]`` :math:`g_a(\rho_{a,(k)} - \rho_{a,(k+1)})` (0 after the last)."""

    def __init__(self, rem, need, rho, per, cap, slow: float):
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


def rounds(m: TypeModel, rem: np.ndarray, alive: np.ndarray, first: list[tuple[int, int]] = ()) -> np.ndarray:
    r"""The rounds of Smith's rule on pooled GPUs (:meth:`~dlsched.policies.hetplace.HetPlace._by_type`'s order:
    round k, the jobs not yet placed in increasing :math:`\kappa_{a,k} = R_a / \text{lost}_{a,k}`, ties by
    :math:`p_a = R_a / (g_a \rho_{a,(1)})`, each on its k-th type if that type's free GPUs hold it), the jobs of
    ``first`` (job, type) placed before the rounds. The type of each job (-1: it waits, or is not ``alive``)."""
    n, G = m.rho.shape
    t = np.full(n, -1, dtype=np.int64)
    cap = m.cap.copy()
    for a, g in first:
        if alive[a] and m.ok[a, g] and m.need[a] <= cap[g] + 1e-9:
            t[a] = g
            cap[g] -= m.need[a]
    left = np.flatnonzero(alive & (t < 0))
    p = rem / m.best
    for k in range(G):
        if not left.size:
            break
        lost = m.lost[left, k]
        kappa = np.full(left.size, np.inf)
        np.divide(rem[left], lost, out=kappa, where=lost > 0)
        wait = []
        need = m.need.tolist()
        for a in left[np.lexsort((p[left], kappa))].tolist():
            g = int(m.rank[a, k])
            if m.ok[a, g] and need[a] <= cap[g] + 1e-9:
                t[a] = g
                cap[g] -= need[a]
            else:
                wait.append(a)
        left = np.sort(np.array(wait, dtype=np.int64))
    return t


def projected(m: TypeModel, t0: np.ndarray, stop: float = np.inf) -> float:
    r""":math:`F(t^0)`: the sum of the jobs' completion times (seconds from now) when they start on the types
    ``t0`` and, at each completion, the types are decided again by :func:`rounds`; inf if the jobs left cannot
    progress. Once :math:`F` is sure to reach ``stop`` (each job left ends no earlier than now plus its remaining
    work at its fastest pace), inf: a candidate that cannot win is not replayed to its end (the same answers)."""
    rem = m.rem.copy()
    alive = np.ones(rem.size, dtype=bool)
    t, now, total = t0.copy(), 0.0, 0.0
    idx = np.arange(rem.size)
    fastest = m.pace.max(axis=1)
    while alive.any():
        if stop < np.inf and total + np.sum(now + rem[alive] / fastest[alive]) >= stop:
            return float("inf")
        on = alive & (t >= 0)
        if not on.any():
            return float("inf")
        at = idx[on]
        pace = m.pace[at, t[on]]
        left = rem[at] / pace
        first = int(np.argmin(left))
        dt = float(left[first])
        now += dt
        rem[at] -= pace * dt
        done = on & (rem <= _DONE * m.rem)
        done[at[first]] = True                   # the job that set the step, whatever the float residue
        total += now * int(done.sum())
        alive &= ~done
        rem[done] = 0.0
        if alive.any():
            t = rounds(m, rem, alive)
    return total


def exchange(m: TypeModel, limit: int | None = None,
             base: np.ndarray | None = None) -> tuple[list[tuple[int, int]], float, float]:
    r"""The promotions (job, type), in order, that :func:`rounds` takes first, found by the local search of the
    module docstring, with :math:`F` of the rule's assignment and of the answer (equal, and no promotion, where
    none lowers it). ``limit``: at most this many promotions tried in all (None: every one). ``base``: the rule's
    assignment, :func:`rounds` of every job, where the caller has it already."""
    alive = np.ones(m.rem.size, dtype=bool)
    base = rounds(m, m.rem, alive) if base is None else base
    f0 = projected(m, base)
    first: list[tuple[int, int]] = []
    cur, f_cur = base, f0
    tried = 0
    while True:
        fixed = {a for a, _ in first}
        best = None
        for a in np.flatnonzero(cur >= 0).tolist():
            if a in fixed:
                continue
            pos = int(np.flatnonzero(m.rank[a] == cur[a])[0])
            for g in m.rank[a, :pos].tolist():
                if not m.ok[a, g]:
                    continue
                if limit is not None and tried >= limit:
                    break
                tried += 1
                cand = first + [(a, int(g))]
                t = rounds(m, m.rem, alive, cand)
                if t[a] != g or np.array_equal(t, cur):
                    continue
                bar = (f_cur if best is None else best[0]) * (1 - 1e-12)
                f = projected(m, t, bar)
                if f < bar:
                    best = (f, cand, t)
        if best is None:
            return first, f0, f_cur
        f_cur, first, cur = best

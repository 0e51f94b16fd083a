"""Tetris (MODELS.md §7): grant the job whose next worker+PS bundle best aligns with the free
resources, favouring less remaining work."""

from __future__ import annotations

import bisect
from typing import Annotated, Sequence

import numpy as np

from dlsched.arguments import Range, checked
from dlsched.policies.bundles import Baseline, _job_limits, grant, grant_vectors, ps_count
from dlsched.sim.placement import EPS, PlacerName
from dlsched.sim.policy import ClusterState, Event, Placement, PolicyContext

#: scores within this relative distance of the best are ties, won by the lowest candidate index
TIE = 1e-12


def tie_floor(best):
    """The lowest score tied with ``best`` (a score s ties with it when s >= best − TIE·|best|)."""
    return best - TIE * np.abs(best)


class Tetris(Baseline):
    """Tetris: grant the job whose next bundle best aligns with the free resources, favouring less remaining work.

    Score of candidate j with next grant b_j: ⟨free/C, b_j/C⟩ normalised by its maximum over the
    candidates whose next grant fits, plus ``remaining_weight`` · (1 − T_j / max T), T_j the
    remaining-time estimate. Each step grants the best score; scores within a relative ``TIE``
    (1e-12) of the best are ties, won by the lowest candidate index (so that how a product rounds
    cannot change a decision).
    """

    name = "tetris"

    @checked
    def __init__(self, placer: PlacerName = "consolidated", remaining_weight: Annotated[float, Range(finite=True)] = 1.0,
                 incremental: bool = True):
        super().__init__(placer)
        self.remaining_weight = float(remaining_weight)
        self.incremental = bool(incremental)

    def terms(self, state: ClusterState, cand: np.ndarray):
        """What a call starts from: the grant vectors of the candidates (:func:`grant_vectors`),
        their remaining-work term 1 − T_j / max T (0 where T_j is unknown), 1 / C per resource (0
        where C = 0), the aggregate capacity left, zero sizes w and p, and each candidate's next
        grant vector (its first)."""
        T = self.remaining_time(state, cand)
        finite = np.isfinite(T)
        tmax = T[finite].max() if finite.any() else 1.0
        short = np.where(finite, 1.0 - T / tmax if tmax > 0 else 1.0, 0.0)
        inv_total = np.where(self.total > 0, 1.0 / np.where(self.total > 0, self.total, 1.0), 0.0)
        vectors = grant_vectors(state, cand)
        return (vectors, short, inv_total, self.total.astype(float).copy(), np.zeros(cand.size, dtype=np.int64),
                np.zeros(cand.size, dtype=np.int64), vectors[-1].copy())

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> dict[int, Placement]:
        cand = np.asarray(state.active, dtype=np.int64)
        if not cand.size:
            return {}
        vectors, short, inv_total, avail, w, p, nxt = self.terms(state, cand)
        weighted = self.remaining_weight * short
        if self.grouped:
            key = (id(state.jobs), self.total.tobytes())
            hint = self._steps[1] if self.incremental and self._steps is not None and self._steps[0] == key else None
            order, taken = _grouped_steps(vectors, weighted, inv_total, avail, w, p, nxt, hint, _job_limits(state.jobs)[4][cand])
            self._steps = (key, taken)
        else:
            order = _whole_steps(vectors, weighted, inv_total, avail, w, p, nxt)
        o = np.array(order, dtype=np.int64)
        return self.placer.place(state, dict(zip(cand[o].tolist(), zip(w[o].tolist(), p[o].tolist()))))

    def reset(self, ctx: PolicyContext) -> None:
        super().reset(ctx)
        self._steps = None            # (setting, the grants of the last call in the order taken)

    #: the first and the most steps of the last call's one check of :meth:`_Groups.replay` takes, and the
    #: most steps in a row decided in full that :class:`_Plan` does not foresee before it is dropped.
    #: The replay earns its lines: the first 960 s of the inflated OpenB list (2,149 calls) take 37 CPU s
    #: with it; without it (``incremental=False``) a run was stopped after more than 60.
    REPLAY = (64, 4096, 8)
    #: choose by groups of candidates with the same next grant (:func:`_grouped_steps`); False: every
    #: candidate at every step (:func:`_whole_steps`), the same decisions. Groups earn their lines: one
    #: call on 7,000 inflated OpenB pods at time 0 takes 0.97 CPU s grouped, 2.17 s not (placing them included).
    grouped = True


def _whole_steps(vectors, weighted, inv_total, avail, w, p, nxt) -> list[int]:
    """Tetris's steps from its definition (MODELS.md §7): at every step the best score among the
    candidates whose next grant fits, ties (:data:`TIE`) to the earliest; a candidate whose next grant
    does not fit is out for good (free capacity only shrinks; its next grant changes only when it is
    chosen). Grants into ``w``, ``p``, ``avail``; returns the candidates in the order of their first grants."""
    out = np.zeros(nxt.shape[0], dtype=bool)
    A = nxt * inv_total
    order: list[int] = []
    while True:
        alive = np.flatnonzero(~out)
        fits = (nxt[alive] <= avail + EPS).all(axis=1)
        out[alive[~fits]] = True
        alive = alive[fits]
        if not alive.size:
            return order
        al = A[alive] @ (avail * inv_total)
        top = al.max()
        score = (al / top if top > 0 else 0.0) + weighted[alive]
        i = int(alive[int(np.argmax(score >= tie_floor(score.max())))])
        g = grant(i, w, p, order, avail, vectors)
        if g is None:
            out[i] = True
        else:
            nxt[i] = g[2]
            A[i] = nxt[i] * inv_total


def _grouped_steps(vectors, weighted, inv_total, avail, w, p, nxt, hint: np.ndarray | None = None,
                   p0: np.ndarray | None = None) -> tuple[list[int], np.ndarray]:
    """:func:`_whole_steps`'s decisions at a cost per step in the number of distinct next grants
    rather than of candidates.

    Candidates with equal next grants have equal alignments and fit or not together: :class:`_Groups`
    keeps one group each, its members sorted by (−weight, index). With c = alignment / top common to a
    group, fl(c + weight) does not decrease with the weight, so a group's best score is its first
    member's, and its members tied with the best score (:func:`tie_floor`) are a prefix of the order,
    whose earliest index the step takes if no other group's is earlier (:func:`_earliest`). One step
    a numpy pass: preparing several steps of one group per pass did not pay (the first 960 s of the
    inflated OpenB list: 36.1 CPU s one step a pass, 36.8 with up to 32).

    ``hint``: the grant vectors the last call took, in order (the second value returned). Calls differ
    by a few candidates and slightly in weight, so this call mostly takes the same grants in the same
    order: :meth:`_Groups.replay` takes the longest prefix of the hint that it proves the steps would
    take (a replay checks every step it takes, so the hint is only a guess), the next step is decided
    in full, and the hint is followed on from there; from the first step that differs the hint is
    realigned (:class:`_Plan`). ``p0``: each candidate's PSs at its first grant (:func:`ps_count`),
    computed here if not given.
    """
    if p0 is None:
        p0 = np.array([ps_count(a, a, b, c) for a, b, c in zip(vectors[0].tolist(), vectors[2].tolist(), vectors[3].tolist())],
                      dtype=np.int64)
    G = _Groups(nxt, weighted, inv_total)
    wl, members, R = G.wl, G.members, nxt.shape[1]
    order: list[int] = []
    taken: list[bytes] = []
    plan = None if hint is None or not hint.shape[0] else _Plan(hint)
    hint_groups = None if plan is None else G.of_rows(hint)
    chunk = Tetris.REPLAY[0]
    while True:
        if plan is not None:
            ahead = plan.ahead(chunk)
            got = G.replay(hint[ahead], hint_groups[ahead], avail, inv_total, w, p, order, vectors, p0) if ahead.size else 0
            if got:
                taken.append(hint[ahead[:got]].tobytes())
                plan.took(ahead[:got])
            if got == chunk:
                chunk = min(2 * chunk, Tetris.REPLAY[1])
                continue
            chunk = Tetris.REPLAY[0]
            if not ahead.size or plan.misses > Tetris.REPLAY[2]:
                plan = None
        live = np.flatnonzero(G.alive)
        fits = (G.gn[live] <= avail + EPS).all(axis=1)
        G.kill(live[~fits])
        live = live[fits]
        if not live.size:
            return order, np.frombuffer(b"".join(taken)).reshape(-1, R)
        al = G.values(avail * inv_total, live)
        top = al.max()
        c = al / top if top > 0 else np.zeros(live.size)      # the definition's 0.0 + weight
        score = c + G.wbest[live]
        floor = tie_floor(score.max())
        i, h, at = len(wl), -1, -1
        for q in np.flatnonzero(score >= floor).tolist():
            j, pos = _earliest(members[live[q]], float(c[q]), floor, wl)
            if j < i:
                i, h, at = j, int(live[q]), pos
        if plan is not None:
            plan.decided(G.gn[h].tobytes())
        taken.append(G.gn[h].tobytes())
        nx = G.take(i, h, at, w, p, order, avail, vectors)
        if nx is not None:                        # a candidate that grows on moves to another group
            G.move(i, nx, nxt)


class _Plan:
    """Which of the last call's grants (``hint``, (m, R)) :func:`_grouped_steps` expects next.

    Steps taken by a replay are the plan's next grants; a step decided in full takes the plan's next
    grant, or the one after it (the next is skipped: a grant of a group that has fewer members now),
    or neither (a grant the last call did not take, e.g. of a new candidate: the plan stays).
    Correctness never depends on it: every step a replay takes is checked.
    """

    def __init__(self, hint: np.ndarray):
        self.rows = [r.tobytes() for r in hint]
        self.done = np.zeros(len(self.rows), dtype=bool)
        self.at = 0                    # the first grant not taken nor skipped
        self.misses = 0                # steps decided in full in a row that the plan did not foresee

    def ahead(self, k: int) -> np.ndarray:
        """The next k grants (positions in the hint) not taken nor skipped."""
        while self.at < self.done.size and self.done[self.at]:
            self.at += 1
        nxt = self.at + np.flatnonzero(~self.done[self.at:self.at + 2 * k])
        return nxt[:k]

    def took(self, positions: np.ndarray) -> None:
        self.done[positions] = True
        self.misses = 0

    def decided(self, row: bytes) -> None:
        """A step decided in full took the grant ``row``."""
        nxt = self.ahead(2)
        if nxt.size and self.rows[nxt[0]] == row:
            self.took(nxt[:1])
        elif nxt.size > 1 and self.rows[nxt[1]] == row:
            self.took(nxt[:2])
        else:
            self.misses += 1


def _earliest(mk: list[int], c: float, floor: float, wl: list[float]) -> tuple[int, int]:
    """The earliest candidate, and its place in ``mk``, among those of group ``mk`` (sorted by (−weight,
    index)) whose score c + weight is at least ``floor`` (the tie floor of the step's best score);
    (len, -1) if none. They are a prefix of mk (the score does not decrease with the weight; of equal
    weights the first has the earliest index)."""
    i, at, prev = len(wl), -1, None
    for pos, j in enumerate(mk):
        wj = wl[j]
        if wj == prev:
            continue
        if not c + wj >= floor:
            break
        prev = wj
        if j < i:
            i, at = j, pos
    return i, at


def _rows(a: np.ndarray) -> np.ndarray:
    """Each row of ``a`` as one opaque value (equal bytes, equal values), for np.unique."""
    return np.ascontiguousarray(a).view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()


class _Groups:
    """Tetris's candidates in groups of equal next grants (:func:`_grouped_steps`), each group's
    members sorted by (−weight, index). A group is alive while it has members and its grant fitted at
    every step so far; once its grant does not fit it is dead for the call (free capacity only
    shrinks) and takes no candidate.
    """

    def __init__(self, nxt: np.ndarray, weighted: np.ndarray, inv_total: np.ndarray):
        n = nxt.shape[0]
        self.wl = weighted.tolist()
        self.weighted = weighted
        self.inv_total = inv_total
        keys, first, gid = np.unique(_rows(nxt), return_index=True, return_inverse=True)
        gid = gid.reshape(-1)
        ranked = np.lexsort((np.arange(n), -weighted, gid))
        self.members = [m.tolist() for m in np.split(ranked, np.cumsum(np.bincount(gid, minlength=keys.size))[:-1])]
        self.index = {k.tobytes(): g for g, k in enumerate(keys)}
        self.gn = nxt[first]                              # each group's next grant
        self.A = self.gn * inv_total                      # its row of the alignment's product
        self.alive = np.ones(keys.size, dtype=bool)
        self.dead = np.zeros(keys.size, dtype=bool)
        self.wbest = np.array([self.wl[m[0]] for m in self.members])
        self._flat = None
        self._ranked()

    def values(self, V: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """The alignments of ``groups`` at each row of ``V`` (free capacity / C): (rows of V, groups)."""
        return V @ self.A[groups].T

    def replay(self, rows, gk, avail, inv_total, w, p, order, vectors, p0) -> int:
        """Take the longest prefix of the grant vectors ``rows`` (L, R), of groups ``gk`` (−1: none now),
        that the steps would take now, as :func:`_grouped_steps` would take them; returns its length.

        Step k of the prefix sees the free capacity after rows 0..k−1 (subtracted in that order: the
        steps' own values), its group g_k is that of row k, and each group's first members are those
        its earlier steps did not take, in its order. The step stands when g_k has members and fits,
        its first member has no grant after this one (a first grant at its maximum size), top > 0, and
        every other member of g_k and every other live group scores below the tie floor of g_k's
        first member; the first step that does not stand ends the prefix. Every quantity is one
        numpy pass over (L, live groups).
        """
        live = np.flatnonzero(self.alive)
        col = np.full(len(self.members), -1, dtype=np.int64)
        col[live] = np.arange(live.size)
        gc = np.where(gk >= 0, col[gk], -1)
        L = int(np.argmin(gc >= 0)) if (gc < 0).any() else gc.size
        if not L:
            return 0
        gk, gc, rows = gk[:L], gc[:L], rows[:L]
        flat, start, nd, fw = self._ranked()
        first = (start + self.cut)[live]                                       # each live group's first member
        left = (self.size - self.cut)[live]
        aseq = np.subtract.accumulate(np.vstack([avail, rows]), axis=0)       # before each step, and after the last
        ar = np.arange(L)
        hit = np.zeros((L, live.size), dtype=np.int64)
        hit[ar, gc] = 1
        before = np.cumsum(hit, axis=0) - hit                                  # each group's steps before step k
        has = before < left
        alive = (self.gn[live][None] <= aseq[:L, None] + EPS).all(axis=2) & has
        q = np.minimum(first + before, flat.size - 1)
        head = q[ar, gc]
        pick = flat[head]
        weight = np.where(has, fw[q], -np.inf)
        minw, maxw = vectors[0], vectors[1]
        sure = alive[ar, gc] & (w[pick] == 0) & (minw[pick] >= maxw[pick])
        masked = np.where(alive, self.values(aseq[:L] * inv_total, live), -np.inf)
        top = masked.max(axis=1)
        c = masked / np.where(top > 0, top, 1.0)[:, None]
        score = c + weight
        floor = tie_floor(score[ar, gc])
        score[ar, gc] = -np.inf
        ok = sure & (top > 0) & (score.max(axis=1) < floor) & (c[ar, gc] + nd[head] < floor)
        n_ok = int(np.argmin(ok)) if not ok.all() else L
        if not n_ok:
            return 0
        pick = pick[:n_ok]
        w[pick], p[pick] = minw[pick], p0[pick]
        order.extend(pick.tolist())
        avail[:] = aseq[n_ok]
        counts = np.bincount(gk[:n_ok], minlength=len(self.members))
        self.cut += counts
        for g in np.flatnonzero(counts).tolist():
            m = self.members[g] = self.members[g][counts[g]:]
            self.wbest[g] = self.wl[m[0]] if m else -np.inf
            self.alive[g] = bool(m) and not self.dead[g]
        return n_ok

    def _ranked(self):
        """Every group's members in one array, group after group in their order (as of the last time a
        member was taken other than first or a member moved in; ``cut``: the members taken first
        since), where each group starts in it, each member's next distinct weight in its group (−inf:
        none) and the weights (with −inf after the last)."""
        if self._flat is None:
            self.size = size = np.array([len(m) for m in self.members], dtype=np.int64)
            self.cut = np.zeros(size.size, dtype=np.int64)
            flat = np.array([j for m in self.members for j in m], dtype=np.int64)
            start = np.concatenate([[0], np.cumsum(size)[:-1]])
            fw = self.weighted[flat]
            group_of = np.repeat(np.arange(size.size), size)
            new_run = np.ones(flat.size, dtype=bool)
            new_run[1:] = (fw[1:] != fw[:-1]) | (group_of[1:] != group_of[:-1])
            nxt_run = np.append(np.flatnonzero(new_run), flat.size)[np.cumsum(new_run)]   # where the next run starts
            fw = np.append(fw, -np.inf)
            nd = np.where(nxt_run < (start + size)[group_of], fw[np.minimum(nxt_run, flat.size)], -np.inf)
            self._flat = flat, start, nd, fw
        return self._flat

    def of_rows(self, rows: np.ndarray) -> np.ndarray:
        """The group of each grant vector of ``rows``, −1 if none."""
        if not rows.shape[0]:
            return np.zeros(0, dtype=np.int64)
        keys, inverse = np.unique(_rows(rows), return_inverse=True)
        return np.array([self.index.get(k.tobytes(), -1) for k in keys], dtype=np.int64)[inverse.reshape(-1)]

    def kill(self, groups: np.ndarray) -> None:
        """These groups' grants no longer fit."""
        self.alive[groups] = False
        self.dead[groups] = True

    def take(self, i, g, at, w, p, order, avail, vectors):
        """Grant candidate i, at place ``at`` of group g (:func:`grant`); returns its next grant or None."""
        mg = self.members[g]
        mg.pop(at)
        if at or g >= len(self.cut):
            self._flat = None                              # _ranked() is rebuilt on its next use
        elif self._flat is not None:
            self.cut[g] += 1
        if mg:
            self.wbest[g] = self.wl[mg[0]]
        else:
            self.alive[g], self.wbest[g] = False, -np.inf
        return grant(i, w, p, order, avail, vectors)

    def move(self, i, nx, nxt) -> None:
        """Candidate i has the next grant nx: into its group, unless that one is dead."""
        nxt[i] = nx[2]
        key = nxt[i].tobytes()
        h = self.index.get(key)
        if h is None:
            h = self.index[key] = len(self.members)
            self.gn = np.vstack([self.gn, nxt[i]])
            self.A = np.vstack([self.A, nxt[i] * self.inv_total])
            self.members.append([])
            self.alive, self.dead = np.append(self.alive, False), np.append(self.dead, False)
            self.wbest = np.append(self.wbest, -np.inf)
        if self.dead[h]:
            return
        wl = self.wl
        bisect.insort(self.members[h], i, key=lambda j: (-wl[j], j))
        self._flat = None
        self.alive[h], self.wbest[h] = True, wl[self.members[h][0]]

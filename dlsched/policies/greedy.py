r"""The greedy family: Optimus's marginal-gain greedy fed the known τ, and its variants (MODELS.md §5).

Optimus itself (fitting its speed and convergence models from what jobs report) is
:class:`dlsched.policies.optimus.Optimus`. The policies here skip the fitting: they read the true
:math:`\tau_j(w, p)` of the SMD view (:mod:`dlsched.policies.view`) and decide once per call by the
same marginal-gain core, :func:`dlsched.policies.optimus.marginal_gain_sizes`, over an explicit
view of the state (:class:`GreedyView`, built by :func:`greedy_view`):

* ``optimus-greedy`` (:class:`OptimusGreedyPolicy`): Optimus's greedy as it is, on the known τ;
* ``srpt-greedy`` (:class:`SRPTGreedyPolicy`, not Optimus): gains divided by the job's shortest
  remaining time squared, shortest started first;
* ``hesrpt`` (:class:`HeSRPTPolicy`, not Optimus): heSRPT's shares of the cluster as first sizes,
  then srpt-greedy's fill;
* ``fluid`` (:class:`dlsched.policies.fluid.FluidPolicy`): the fluid LP's shares as first sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Callable, Literal

import numpy as np

from dlsched.arguments import Range, checked
from dlsched.instance.smd import SMDInstance
from dlsched.policies.optimus import marginal_gain_sizes
from dlsched.policies.view import AllocationPolicy
from dlsched.sim.placement import PlacerName
from dlsched.solvers.options import Budget


@dataclass(frozen=True)
class GreedyView:
    r"""What the greedy family reads of the state: the m active jobs (in index order) as arrays.

    Job i's :math:`\tau_j(w, p)` of job ``jobs[i]`` over p = 0..P, w = 0..W is ``tau_kinds[kind[i]]``
    (``kind`` None: ``tau_kinds`` has one grid per job, ``kind[i]`` = i), padded with inf to one shape
    for all jobs (inf also at p = 0, w = 0, w below the job's fewest workers and, with
    ``ps_le_workers``, p > w: sizes the job cannot take); ``grid[i]`` = (P_j + 1, W_j + 1), the
    job's own part of it. Jobs of one kind (:meth:`~dlsched.instance.smd.SMDInstance.kinds`) share
    one grid, so what depends on the grid alone (:attr:`least`, :attr:`least_at`, :attr:`sizes`) is
    read once per kind. ``remaining`` is :math:`R_j`, ``d``/``e`` (m, R) a worker's and a PS's
    demand, ``capacity`` :math:`C^r`, ``arrival`` :math:`a_j`, ``min_workers`` the fewest workers.
    """

    jobs: np.ndarray
    remaining: np.ndarray
    tau_kinds: np.ndarray
    grid: np.ndarray
    d: np.ndarray
    e: np.ndarray
    capacity: np.ndarray
    arrival: np.ndarray
    min_workers: np.ndarray
    kind: np.ndarray | None = None

    @cached_property
    def of(self) -> np.ndarray:
        """Per job, the index of its grid in ``tau_kinds``."""
        return np.arange(self.jobs.size) if self.kind is None else self.kind

    @cached_property
    def tau(self) -> np.ndarray:
        """Every job's grid, (m, P, W): a copy of m grids (23 MB at 10,000 DL2 jobs), for what reads them all."""
        return self.tau_kinds[self.of]

    def tau_of(self, i) -> np.ndarray:
        """The grids of the jobs ``i`` (indices into the view)."""
        return self.tau_kinds[self.of[i]]

    def at(self, i, p, w) -> np.ndarray:
        """τ of the jobs ``i`` at (p, w)."""
        return self.tau_kinds[self.of[i], p, w]

    @cached_property
    def _kind_least(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        flat = self.tau_kinds.reshape(self.tau_kinds.shape[0], -1)
        return flat.min(axis=1, initial=np.inf), (np.argmin(flat, axis=1) if flat.size else np.zeros(0, np.int64)), \
            np.isfinite(flat).sum(axis=1)

    @property
    def least(self) -> np.ndarray:
        """Per job, its least τ (inf if it has no size)."""
        return self._kind_least[0][self.of]

    @property
    def least_at(self) -> np.ndarray:
        """Per job, the flat index into its (P, W) grid of its least τ (the first of equal ones)."""
        return self._kind_least[1][self.of]

    @property
    def sizes(self) -> np.ndarray:
        """Per job, how many sizes it can take (finite τ)."""
        return self._kind_least[2][self.of]

    def times(self, i: int) -> np.ndarray:
        r"""Job i's remaining times :math:`T_j(p, w) = R_j \tau_j(w, p)` over its own grid."""
        P, W = self.grid[i].tolist()
        return self.remaining[i] * self.tau_kinds[self.of[i], :P, :W]


class ScaledTimes:
    r"""The greedy's times :math:`T_j(p, w) / s_j = R_j \tau_j(w, p) / s_j` of a :class:`GreedyView`'s jobs,
    read only where indexed (``times[i, p, w]``, as :func:`~dlsched.policies.optimus.marginal_gain_sizes`
    does): the same products and quotients as of the (m, P, W) stack, without the stack (its products
    and copies were 15 of the 35 ms of CPU of a warm fluid decision over 10,000 DL2 jobs). ``scale``
    None: no division."""

    ndim = 3

    def __init__(self, view: GreedyView, scale: np.ndarray | None = None):
        self.view, self.scale = view, scale
        self.shape = (view.jobs.size, *view.tau_kinds.shape[1:])

    def __getitem__(self, key) -> np.ndarray:
        i, p, w = key
        out = self.view.remaining[i] * self.view.at(i, p, w)
        return out if self.scale is None else out / self.scale[i]

    def rows(self, i: np.ndarray) -> np.ndarray:
        """The (len(i), P, W) stack of the jobs ``i``."""
        out = self.view.remaining[i, None, None] * self.view.tau_of(i)
        return out if self.scale is None else out / self.scale[i, None, None]


def greedy_view(inst: SMDInstance, active: np.ndarray) -> GreedyView:
    """The :class:`GreedyView` of ``inst``'s jobs ``active`` (their τ grids read once per kind and kept with
    the instance's configurations, so a re-plan reads no grid)."""
    idx = np.sort(np.asarray(active, dtype=np.int64))
    tau, kind, grid = _kind_stack(inst, idx)
    return GreedyView(idx, inst.iterations[idx], tau, grid, inst.d[idx], inst.e[idx], inst.capacity,
                      inst.arrival[idx], inst.min_workers[idx], kind)


#: the largest ``alpha``: gains are divided by T^alpha, and T^alpha stays a float for remaining times
#: up to 10^15 s (the largest time a trace may hold) up to this power
MAX_ALPHA = 10.0


def greedy_allocation(view: GreedyView, alpha: float = 0.0, start: str = "arrival", pairs: bool = False,
                      shares: float | Callable | None = None, budget: Budget | None = None) -> np.ndarray:
    r"""Optimus's marginal-gain greedy (MODELS.md §5) with the known τ: (w, p) of every job of the
    view, as an (m, 2) array (0, 0 for a job that waits).

    The one greedy :func:`dlsched.policies.optimus.marginal_gain_sizes` on the remaining
    times :math:`T_j(p, w) = R_j \tau_j(w, p)`: every active job starts with 1 PS + its fewest
    workers (1, or a gang-scheduled job's whole size; in arrival order, as long as they fit; the
    others wait), then the task with the largest positive gain
    :math:`(T_j(p, w) - T_j(p', w')) / \max_r \text{demand}^r / C^r` is added until no gain is
    positive or nothing fits.

    The options are the variants' (not Optimus): ``alpha`` > 0 divides job j's gains by
    :math:`(T_j^{\min})^\alpha`, its remaining time at its fastest size to the power α (α = 1: the
    fraction of its remaining time a task saves, Optimus's ``gain="relative"``); ``start =
    "shortest"`` starts the jobs in order of :math:`T_j^{\min}` instead of arrival; ``pairs`` as in
    :func:`marginal_gain_allocation`; ``shares`` = p (heSRPT's exponent) replaces each first size by
    the fastest (p, w) within the job's share of :func:`hesrpt_shares` by its rank in that order (its
    dominant resource share at most θ; the fewest workers if none is within it); ``shares`` a
    function ``(view, order) -> θ or None`` takes θ from it instead (the fluid LP's,
    :meth:`dlsched.policies.fluid.FluidPolicy.shares`). With a ``budget`` the fill stops adding tasks once it
    has expired (:func:`~dlsched.policies.optimus.marginal_gain_sizes`): the sizes so far are the answer.
    """
    m = view.jobs.size
    out = np.zeros((m, 2), dtype=np.int64)
    if not m:
        return out
    # per job from its kind's grid (R_j min τ is min R_j τ: a product by R_j >= 0 keeps the order), not from
    # the (m, P, W) stack of times, which the fill reads only where it steps (ScaledTimes)
    least = view.least
    fastest = np.where(np.isfinite(least), view.remaining * least, np.inf)
    order = np.lexsort((view.jobs, view.arrival if start == "arrival" else fastest)).tolist()
    w0s = view.min_workers
    # a job whose only finite time is at its first size (or that has none) keeps it whatever its share
    one = view.sizes - np.isfinite(view.at(np.arange(m), 1, np.minimum(w0s, view.tau_kinds.shape[2] - 1))) <= 0
    theta = None
    if callable(shares):
        if not one.all():                             # else no share can move a first size: no LP
            theta = shares(view, order)
    elif shares is not None:
        theta = np.empty(m)
        theta[order] = hesrpt_shares(m, shares)
    scale = None
    if alpha:
        # Python floats: the same pow() of the C library as a numpy scalar's, without numpy's per-element cost
        # (a job without a positive finite fastest time is divided by 1: unchanged, inf and nan included)
        scale = np.array([f ** alpha if 0 < f < math.inf else 1.0 for f in fastest.tolist()])
    # the padded grids as they are: an inf cell is a size the job cannot take, whatever the shape says
    times = ScaledTimes(view, scale)
    first_sizes = np.stack([np.ones(m, dtype=np.int64), w0s.astype(np.int64)], axis=1)
    if theta is not None:
        # θ = -1 for a one-size job: no size is within it, so it keeps its first size
        theta = np.where(one, -1.0, np.asarray(theta, float))
        # only a job whose θ holds its least size (1, 1) can have a size within it (the view's sizes at p = 0
        # or w = 0 are inf, and with demands >= 0 no size uses less): outside the LP's jobs θ = 0 holds none,
        # and the others are not read (12 of the 25 ms of CPU the array work takes at 10,000 DL2 jobs)
        cand = np.arange(m)
        if (view.d >= 0).all() and (view.e >= 0).all():
            res = np.flatnonzero(view.capacity > 0)
            least_use = np.max((view.e[:, res] + view.d[:, res]) / view.capacity[res], axis=1, initial=0.0)
            cand = np.flatnonzero(least_use <= theta + 1e-12)
        fit = fastest_within(times.rows(cand), view.d[cand], view.e[cand], view.capacity, theta[cand])
        found = fit[:, 0] >= 0
        first_sizes[cand[found]] = fit[found]
    admitted, pw = marginal_gain_sizes(times, view.d, view.e, view.capacity, view.capacity,
                                       first_sizes, order=order, pairs=pairs, budget=budget)
    out[admitted] = pw[:, ::-1]
    return out


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


def fastest_within(T: np.ndarray, d: np.ndarray, e: np.ndarray, capacity: np.ndarray,
                   theta: np.ndarray) -> np.ndarray:
    """Per job i of the stack ``T[i, p, w]``: (p, w) of least ``T[i, p, w]`` whose dominant share
    max_r (p e_ir + w d_ir) / C_r is at most θ_i, the first in (p, w) order of equal times, as
    an (m, 2) array ((-1, -1) if none). The sizes within θ are found once per distinct (d, e, θ)
    (a job mix has a few demands; the jobs outside the fluid LP share θ = 0, within which no size
    usually is), and only the jobs with a size within θ read their times."""
    m, P, W = T.shape
    out = np.full((m, 2), -1, dtype=np.int64)
    if not m:
        return out
    key, group = np.unique(np.column_stack([d, e, theta]), axis=0, return_inverse=True)
    group = group.reshape(-1)
    R = np.shape(d)[1]
    p, w = np.arange(P)[None, :, None], np.arange(W)[None, None, :]
    share = np.zeros((key.shape[0], P, W))
    for r in np.flatnonzero(capacity > 0).tolist():
        np.maximum(share, (p * key[:, R + r, None, None] + w * key[:, r, None, None]) / capacity[r], out=share)
    # a size no job can take (p = 0 or w = 0: share 0, within any θ) is not a candidate
    within = (share <= key[:, -1, None, None] + 1e-12) & np.isfinite(T).any(axis=0)
    rows = np.flatnonzero(within.reshape(key.shape[0], -1).any(axis=1)[group])
    Tw = np.where(np.isfinite(T[rows]) & within[group[rows]], T[rows], np.inf).reshape(rows.size, P * W)
    k = np.argmin(Tw, axis=1) if rows.size else np.zeros(0, dtype=np.int64)
    ok = np.isfinite(Tw[np.arange(rows.size), k])
    out[rows[ok]] = np.stack(np.divmod(k[ok], W), axis=1)
    return out


def tau_grid(inst: SMDInstance, j: int) -> np.ndarray:
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


def _kind_stack(inst: SMDInstance, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the :func:`tau_grid` of every kind of ``inst``'s jobs, padded with inf to one shape, a kind not yet
    read all inf; the kind of each job of ``jobs``; each job's own grid shape). A kind's grid is read once
    and kept with the instance's configurations, so a re-plan reads no grid and copies none."""
    kinds = np.asarray(inst.kinds)
    key = ("optimus-tau-kinds",)
    n_kinds = int(kinds.max(initial=-1)) + 1
    stack, shape = inst.cached(key, lambda: (np.full((n_kinds, 2, 2), np.inf), np.zeros((n_kinds, 2), dtype=np.int64)))
    kind = kinds[jobs]
    new = np.unique(kind[shape[kind, 0] == 0])
    if new.size:
        one = np.empty(n_kinds, dtype=np.int64)
        one[kinds[::-1]] = np.arange(kinds.size)[::-1]            # the first job of each kind
        grids = [tau_grid(inst, int(j)) for j in one[new].tolist()]
        P = max(stack.shape[1], max(g.shape[0] for g in grids))
        W = max(stack.shape[2], max(g.shape[1] for g in grids))
        if (P, W) != stack.shape[1:]:
            wider = np.full((stack.shape[0], P, W), np.inf)
            wider[:, :stack.shape[1], :stack.shape[2]] = stack
            stack = wider
            inst._config_cache[key] = (stack, shape)           # a wider stack replaces the kept one
        for k, g in zip(new.tolist(), grids):
            stack[k, :g.shape[0], :g.shape[1]] = g
            shape[k] = g.shape
    return stack, kind, shape[kind]


def _tau_stack(inst: SMDInstance, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The :func:`tau_grid` of each job in ``jobs`` stacked, padded with inf to one shape, and each
    grid's own shape (:func:`_kind_stack`, spread to the jobs)."""
    stack, kind, shape = _kind_stack(inst, np.asarray(jobs, dtype=np.int64))
    return stack[kind], shape


class OptimusGreedyPolicy(AllocationPolicy):
    """Optimus's marginal-gain greedy fed the known τ (no fitting), re-run at every call (MODELS.md §5)."""

    name = "optimus-greedy"
    #: :func:`greedy_allocation`'s options (Optimus's own greedy: none)
    options: dict = {}

    def shares(self, inst: SMDInstance):
        """The first sizes' shares of :func:`greedy_allocation`: ``options["shares"]`` (None or heSRPT's p;
        a subclass turns a named rule into its function, :class:`dlsched.policies.fluid.FluidPolicy`)."""
        return self.options.get("shares")

    def allocate(self, inst: SMDInstance, active: np.ndarray) -> np.ndarray:
        return self.filled(greedy_view(inst, active), inst)

    def filled(self, view, inst: SMDInstance, **extra) -> np.ndarray:
        """(workers, PSs) of every job of ``inst``: :func:`greedy_allocation` over ``view``'s jobs with this
        policy's options and shares (and ``extra``, e.g. a budget), 0 for the others."""
        alloc = np.zeros((inst.n_jobs, 2), dtype=np.int64)
        alloc[view.jobs] = greedy_allocation(view, **{**self.options, "shares": self.shares(inst), **extra})
        return alloc


class SRPTGreedyPolicy(OptimusGreedyPolicy):
    """Optimus's greedy fed the known τ, gains divided by the job's shortest remaining time squared, shortest started first (not Optimus).

    :func:`greedy_allocation` with ``alpha`` (default 2), ``start`` ("shortest" or "arrival") and
    ``pairs`` (default True): a task is worth the time it saves over the square of the job's
    remaining time at its fastest size, which favours short jobs as SRPT does; every job still gets
    a first worker and PS (shortest first) so none starves. The defaults were chosen on DL2's
    tuning and training traces (docs/dl2.md, "Choosing the teacher"), as DL2's warm-up teacher.
    """

    name = "srpt-greedy"

    @checked
    def __init__(self, inst: SMDInstance | None = None, placer: PlacerName = "first_fit",
                 alpha: Annotated[float, Range(ge=0, le=MAX_ALPHA)] = 2.0,
                 start: Literal["shortest", "arrival"] = "shortest", pairs: bool = True):
        super().__init__(inst, placer)
        self.options = {"alpha": float(alpha), "start": start, "pairs": bool(pairs)}


class HeSRPTPolicy(SRPTGreedyPolicy):
    """heSRPT's shares of the cluster (Berg et al., optimal for speedup k^p without arrivals) as first sizes, then srpt-greedy's fill (not a seed paper's).

    :func:`greedy_allocation` with ``shares`` = ``speedup_exponent``: at every call the active jobs,
    shortest remaining time (at the fastest size) first, get as first size the fastest (p, w) within
    their share of :func:`hesrpt_shares`; what is left is filled by ``srpt-greedy``'s gains
    (``alpha``, ``pairs``). heSRPT assumes one speedup curve k^p for all jobs; DL2's measured ones
    differ, so p is a parameter: 0.6 was chosen on DL2's tuning traces 2000–2002 and checked on
    training traces 1000–1003 (docs/dl2.md, "Choosing the teacher").
    """

    name = "hesrpt"

    @checked
    def __init__(self, inst: SMDInstance | None = None, placer: PlacerName = "first_fit",
                 speedup_exponent: Annotated[float, Range(gt=0, lt=1)] = 0.6,
                 alpha: Annotated[float, Range(ge=0, le=MAX_ALPHA)] = 2.0, pairs: bool = True):
        super().__init__(inst, placer, alpha=alpha, start="shortest", pairs=pairs)
        self.options["shares"] = float(speedup_exponent)

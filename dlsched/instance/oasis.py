r"""OASiS family data (MODELS.md §3.1): utilities, the instance, schedules.

Slot convention (MODELS.md §3.1 asks for it): slots are ``t = 1..T``. A job with arrival
:math:`a_i` may run from slot :math:`a_i` on; its completion slot :math:`\hat t_i` is the last
slot in which it has workers; its duration is :math:`\hat t_i - a_i + 1` slots (a job that
finishes inside its arrival slot took one slot), and its utility is
:math:`f_i(\hat t_i - a_i + 1)`.


=======================  ==============================================================
symbol                   field
=======================  ==============================================================
:math:`T`                ``OasisInstance.horizon``
:math:`c_h^r, c_k^r`     ``worker_cap[h, r]``, ``ps_cap[k, r]``
:math:`a_i`              ``arrival[i]`` (slot, 1-based)
:math:`N_i, M_i, E_i`    ``chunks``, ``minibatches``, ``epochs``
:math:`\tau_i`           ``tau`` (slots per mini-batch of compute)
:math:`e_i, b_i, B_i`    ``grad_mb`` (MB), ``worker_gbps``, ``ps_gbps``
:math:`w_i^r, s_i^r`     ``worker_demand[i, r]``, ``ps_demand[i, r]``
:math:`f_i`              ``utilities[i]`` (:class:`Utility`)
:math:`R_i`              ``work()`` (worker-slots), :math:`D^{min}_i` = ``min_duration()``
=======================  ==============================================================


The offline time-indexed MILP built on it is in :mod:`dlsched.models.oasis`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.fields import array_argument, integer, names_argument, number_argument

UTILITY_KINDS = ("sigmoid", "step", "linear")


# ----------------------------------------------------------------------------- utilities

@dataclass(frozen=True)
class Utility:
    r"""A non-increasing utility of the duration d (slots, d >= 1), stored as data.

    * ``sigmoid``: :math:`\gamma_1 / (1 + e^{\gamma_2 (d - \gamma_3)})` (params gamma1, gamma2, gamma3);
    * ``step``: ``value`` if :math:`d \le` ``deadline`` else ``after`` (default 0);
    * ``linear``: :math:`\max(\text{floor}, \text{value} - \text{slope}\,(d - 1))` (floor default 0).
    """

    kind: str
    params: dict[str, float]

    def __call__(self, d):
        d = np.asarray(d, dtype=float)
        p = self.params
        if self.kind == "sigmoid":
            # exp overflow gives inf, 1/inf = 0: the right limit
            with np.errstate(over="ignore"):
                return p["gamma1"] / (1.0 + np.exp(p["gamma2"] * (d - p["gamma3"])))
        if self.kind == "step":
            return np.where(d <= p["deadline"], p["value"], p.get("after", 0.0))
        if self.kind == "linear":
            return np.maximum(p.get("floor", 0.0), p["value"] - p["slope"] * (d - 1.0))
        raise ValueError(self.kind)

    def validate(self, source: str, where: str) -> None:
        """Raise :class:`InputError` unless the utility is non-negative and non-increasing."""
        p = self.params
        need = {"sigmoid": ("gamma1", "gamma2", "gamma3"), "step": ("value", "deadline"),
                "linear": ("value", "slope")}
        if self.kind not in need:
            raise InputError(source, where + ".kind", f"one of {', '.join(UTILITY_KINDS)}", self.kind)
        for k in need[self.kind]:
            if k not in p:
                raise InputError(source, f"{where}.{k}", f"the parameter '{k}' of a {self.kind} utility", "no such field")
        for k, v in p.items():
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError(source, f"{where}.{k}", "a finite number", v)
        if self.kind == "sigmoid":
            if p["gamma2"] < 0:
                raise InputError(source, f"{where}.gamma2", "gamma2 >= 0 (a utility that does not increase with time)", p["gamma2"])
            if p["gamma1"] < 0:
                raise InputError(source, f"{where}.gamma1", "gamma1 >= 0", p["gamma1"])
        elif self.kind == "step":
            for k in ("value", "after"):
                if p.get(k, 0.0) < 0:
                    raise InputError(source, f"{where}.{k}", "a non-negative number", p[k])
            if p.get("after", 0.0) > p["value"]:
                raise InputError(source, f"{where}.after", f"at most value={p['value']} (a utility that does not increase with time)", p["after"])
        else:
            if p["slope"] < 0:
                raise InputError(source, f"{where}.slope", "slope >= 0 (a utility that does not increase with time)", p["slope"])
            if p["value"] < 0 or p.get("floor", 0.0) < 0:
                raise InputError(source, f"{where}.value", "non-negative value and floor", p["value"])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params}


# ----------------------------------------------------------------------------- instance

@dataclass(eq=False)
class OasisInstance:
    """An OASiS instance (MODELS.md §3.1); symbols in the module docstring.

    Servers are listed one per row (a file's ``count`` is expanded); ``worker_class`` /
    ``ps_class`` give each server the index of its group of identical servers.
    """

    resources: tuple[str, ...]
    horizon: int
    worker_cap: np.ndarray          # (H, R)
    ps_cap: np.ndarray              # (K, R)
    arrival: np.ndarray             # (n,) int, 1..T
    chunks: np.ndarray              # N_i
    minibatches: np.ndarray         # M_i
    epochs: np.ndarray              # E_i
    tau: np.ndarray                 # slots per mini-batch of compute
    grad_mb: np.ndarray             # e_i, MB
    worker_gbps: np.ndarray         # b_i
    ps_gbps: np.ndarray             # B_i
    worker_demand: np.ndarray       # (n, R)
    ps_demand: np.ndarray           # (n, R)
    utilities: tuple[Utility, ...]
    slot_seconds: float = 60.0
    name: str = ""
    job_names: tuple[str, ...] = ()
    worker_names: tuple[str, ...] = ()
    ps_names: tuple[str, ...] = ()
    worker_class: np.ndarray | None = None
    ps_class: np.ndarray | None = None
    job_classes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = "<memory>"
    reference: Any = None           # dlsched.instance.core.Reference: a known optimum, if any

    family = "oasis"

    def __post_init__(self) -> None:
        src = self.source
        self.resources = names_argument(src, "resources", self.resources)
        self.horizon = integer(self.horizon, src, "horizon", 1)
        self.slot_seconds = number_argument(src, "slot_seconds", self.slot_seconds)
        for name in ("arrival", "chunks", "minibatches", "epochs"):
            setattr(self, name, array_argument(src, name, getattr(self, name), np.int64))
        for name in ("tau", "grad_mb", "worker_gbps", "ps_gbps"):
            setattr(self, name, array_argument(src, name, getattr(self, name)))
        for name in ("worker_cap", "ps_cap", "worker_demand", "ps_demand"):
            setattr(self, name, array_argument(src, name, getattr(self, name), float, (None, len(self.resources))))
        if not isinstance(self.utilities, (list, tuple)) or not all(isinstance(u, Utility) for u in self.utilities) \
                or len(self.utilities) != len(self.arrival):
            raise InputError(src, "utilities", f"{len(self.arrival)} Utility objects (one per job)", self.utilities)
        n = self.n_jobs
        if not self.job_names:
            self.job_names = tuple(f"job{i}" for i in range(n))
        if not self.worker_names:
            self.worker_names = tuple(f"w{h}" for h in range(self.n_worker_servers))
        if not self.ps_names:
            self.ps_names = tuple(f"ps{k}" for k in range(self.n_ps_servers))
        if self.worker_class is None:
            self.worker_class = _classes(self.worker_cap)
        if self.ps_class is None:
            self.ps_class = _classes(self.ps_cap)
        self.validate()

    # sizes
    @property
    def n_jobs(self) -> int:
        return int(self.arrival.shape[0])

    @property
    def n_worker_servers(self) -> int:
        return int(self.worker_cap.shape[0])

    @property
    def n_ps_servers(self) -> int:
        return int(self.ps_cap.shape[0])

    # derived quantities (MODELS.md §3.1)
    def minibatch_slots(self) -> np.ndarray:
        r"""Time per mini-batch in slots: :math:`\tau_i + 2 e_i / b_i` (MB over Gbps, converted)."""
        comm_seconds = 2.0 * self.grad_mb * 8e-3 / self.worker_gbps
        return self.tau + comm_seconds / self.slot_seconds

    def work(self) -> np.ndarray:
        r""":math:`R_i = \lceil E_i N_i M_i (\tau_i + 2e_i/b_i) \rceil` worker-slots (integer)."""
        w = self.epochs * self.chunks * self.minibatches * self.minibatch_slots()
        return np.ceil(w - 1e-9).astype(np.int64)

    def min_duration(self) -> np.ndarray:
        r""":math:`D^{min}_i = \lceil R_i / N_i \rceil` slots (N_i workers every slot)."""
        return -(-self.work() // self.chunks)

    def ps_needed(self, i: int, y) -> np.ndarray:
        r"""Fewest PSs serving y workers: :math:`\lceil b_i y / B_i \rceil` (one at least when y > 0)."""
        y = np.asarray(y)
        # the 1e-9 absorbs rounding in b y / B; it must not round a tiny positive need down to 0
        need = np.ceil(self.worker_gbps[i] * y / self.ps_gbps[i] - 1e-9).astype(np.int64)
        return np.where(y > 0, np.maximum(need, 1), 0)

    def worker_fit(self) -> np.ndarray:
        """(n, H) workers of job i that fit on an empty worker server h."""
        return _fit(self.worker_cap, self.worker_demand)

    def ps_fit(self) -> np.ndarray:
        """(n, K) PSs of job i that fit on an empty PS server k."""
        return _fit(self.ps_cap, self.ps_demand)

    def _blockers(self) -> list[tuple[np.ndarray, Any]]:
        """Why jobs can never run: (n,) masks with the reason for a job i, in reporting order."""
        dmin = self.min_duration()
        more_ps = (self.worker_gbps > self.ps_gbps) & (np.ceil(self.worker_gbps / self.ps_gbps - 1e-9) > 1)  # ps_needed(i, 1) > 1
        return [
            (~self.worker_fit().any(axis=1), lambda i: "one worker exceeds every worker server's capacity"),
            (~self.ps_fit().any(axis=1), lambda i: "one parameter server exceeds every PS server's capacity"),
            (more_ps, lambda i: "worker bandwidth b exceeds PS bandwidth B: more PSs than workers needed"),
            (self.arrival + dmin - 1 > self.horizon,
             lambda i: f"needs at least {int(dmin[i])} slots but only {self.horizon - int(self.arrival[i]) + 1} remain before T"),
        ]

    def runnable(self) -> np.ndarray:
        """(n,) bool: jobs that could finish by T alone on the empty cluster (``infeasible_reason`` is None)."""
        return ~np.logical_or.reduce([mask for mask, _ in self._blockers()])

    def infeasible_reason(self, i: int) -> str | None:
        """Why job i can never run (a rejection reason), or None."""
        return next((why(i) for mask, why in self._blockers() if mask[i]), None)

    def infeasible_reasons(self) -> list[str | None]:
        """:meth:`infeasible_reason` of every job, the masks computed once (a call per job costs
        O(n) each: over a run of 500 jobs that was 4 s)."""
        out: list[str | None] = [None] * self.n_jobs
        for mask, why in reversed(self._blockers()):       # the first reason in reporting order wins
            for i in np.flatnonzero(mask).tolist():
                out[i] = why(i)
        return out

    def utility_of(self, i: int, duration) -> np.ndarray:
        return self.utilities[i](duration)

    def validate(self) -> None:
        src = self.source
        R = len(self.resources)
        if self.horizon < 1:
            raise InputError(src, "$.horizon", "a positive number of slots", self.horizon)
        if self.worker_cap.shape[0] == 0 or self.ps_cap.shape[0] == 0:
            raise InputError(src, "$.worker_servers" if self.worker_cap.shape[0] == 0 else "$.ps_servers", "at least one server", "none")
        if (self.worker_cap < 0).any() or (self.ps_cap < 0).any():
            raise InputError(src, "$.worker_servers", "non-negative capacities", "a negative capacity")
        total = self.worker_cap.sum(axis=0) + self.ps_cap.sum(axis=0)
        for r in range(R):
            if total[r] <= 0:
                raise InputError(src, f"$.resources[{r}]", f"a resource with positive capacity on some server ('{self.resources[r]}' has zero everywhere)", 0)
        n = self.n_jobs
        for name in ("chunks", "minibatches", "epochs", "tau", "grad_mb", "worker_gbps", "ps_gbps", "worker_demand", "ps_demand"):
            if getattr(self, name).shape[0] != n:
                raise InputError(src, f"$.jobs.{name}", f"{n} entries", getattr(self, name).shape[0])
        for i in range(n):
            where = f"$.jobs[{i}]"
            if not 1 <= self.arrival[i] <= self.horizon:
                raise InputError(src, where + ".arrival", f"a slot in 1..{self.horizon} (the horizon)", int(self.arrival[i]))
            for name in ("chunks", "minibatches", "epochs"):
                if getattr(self, name)[i] < 1:
                    raise InputError(src, f"{where}.{name}", "a positive integer", int(getattr(self, name)[i]))
            if self.tau[i] < 0 or self.grad_mb[i] < 0:
                raise InputError(src, where + ".tau", "non-negative tau and grad_mb", float(self.tau[i]))
            if self.worker_gbps[i] <= 0 or self.ps_gbps[i] <= 0:
                raise InputError(src, where + ".worker_gbps", "positive bandwidths", float(self.worker_gbps[i]))
            if self.minibatch_slots()[i] <= 0:
                raise InputError(src, where + ".tau", "a positive time per mini-batch (tau + 2e/b)", 0)
            if (self.worker_demand[i] < 0).any() or (self.ps_demand[i] < 0).any():
                raise InputError(src, where + ".worker_demand", "non-negative demands", self.worker_demand[i].tolist())
            if not (self.worker_demand[i] > 0).any():
                raise InputError(src, where + ".worker_demand", "a positive demand of some resource", "all zero")
            if not (self.ps_demand[i] > 0).any():
                raise InputError(src, where + ".ps_demand", "a positive demand of some resource", "all zero")
            self.utilities[i].validate(src, where + ".utility")


def _classes(cap: np.ndarray) -> np.ndarray:
    """Index of the group of identical servers (equal capacity rows) of each server."""
    _, inv = np.unique(cap, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


def _fit(cap: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """(n, S) how many units of demand row i fit in capacity row s (resources with zero demand ignored)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(demand[:, None, :] > 0, cap[None, :, :] / demand[:, None, :], np.inf)
    out = np.floor(q.min(axis=2) + 1e-9)
    return np.where(np.isfinite(out), out, 0).astype(np.int64)


# ----------------------------------------------------------------------------- schedules

@dataclass
class OasisSchedule:
    """A solution of the oasis family: admitted jobs, worker/PS placements per slot, completions.

    ``workers`` and ``ps`` are integer arrays of rows ``(job, slot, server, count)`` with
    ``count > 0``; ``completion[i]`` is the completion slot (0 for a job not admitted);
    ``reasons`` maps a rejected job to why (online methods record it).
    """

    admitted: np.ndarray
    workers: np.ndarray
    ps: np.ndarray
    completion: np.ndarray
    reasons: dict[int, str] = field(default_factory=dict)

    @staticmethod
    def empty(n: int) -> "OasisSchedule":
        return OasisSchedule(np.zeros(n, bool), np.zeros((0, 4), np.int64), np.zeros((0, 4), np.int64),
                             np.zeros(n, np.int64))


def schedule_from_dense(inst: OasisInstance, y: np.ndarray, z: np.ndarray, reasons=None) -> OasisSchedule:
    """Build a schedule from dense ``y[i, t, h]`` and ``z[i, t, k]`` (t index 0 = slot 1)."""
    y = np.rint(y).astype(np.int64)
    z = np.rint(z).astype(np.int64)
    wi = np.argwhere(y > 0)
    pi = np.argwhere(z > 0)
    workers = np.column_stack([wi[:, 0], wi[:, 1] + 1, wi[:, 2], y[tuple(wi.T)]]) if len(wi) else np.zeros((0, 4), np.int64)
    ps = np.column_stack([pi[:, 0], pi[:, 1] + 1, pi[:, 2], z[tuple(pi.T)]]) if len(pi) else np.zeros((0, 4), np.int64)
    active = y.sum(axis=2) > 0
    admitted = active.any(axis=1)
    last = np.where(admitted, y.shape[1] - np.argmax(active[:, ::-1], axis=1), 0)
    return OasisSchedule(admitted, workers.astype(np.int64), ps.astype(np.int64), last.astype(np.int64), dict(reasons or {}))


def schedule_utility(inst: OasisInstance, sched: OasisSchedule) -> float:
    """Total utility of a schedule, from its completion slots."""
    tot = 0.0
    for i in np.flatnonzero(sched.admitted):
        tot += float(inst.utility_of(int(i), sched.completion[i] - inst.arrival[i] + 1))
    return tot

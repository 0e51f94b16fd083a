r"""The SMD family: layered DNN jobs on a PS cluster, one-epoch allocation as an MCMDK (MODELS.md §2.2).

.. math::

    \min \sum_{j \in A} \Big( \sum_{o \in O_j} \omega_j R_j \tau_j(w_o, p_o)\, x_{j,o}
          + \omega_j D_j\, x_{j,\varnothing} \Big)
    \quad\text{s.t.}\quad
    \sum_{j,o} (w_o d_j^r + p_o e_j^r)\, x_{j,o} \le C^r \;\forall r,\qquad
    x_{j,\varnothing} + \sum_{o} x_{j,o} = 1 \;\forall j,\qquad x \in \{0,1\}

==========================  ==================================================  ========================
symbol                      meaning                                             where
==========================  ==================================================  ========================
:math:`R_j`                 remaining iterations of job j                       ``jobs.iterations``
:math:`\omega_j`            weight                                              ``jobs.weight``
:math:`\tau_j(w,p)`         seconds per iteration, MODELS.md §2.1               :mod:`dlsched.perf.layered`
:math:`d_j^r, e_j^r`        demand per worker / per PS of resource r            ``jobs.d``, ``jobs.e``
:math:`C^r`                 capacity (aggregate; or per server c_s^r)           ``cap``
:math:`O_j`                 Pareto-efficient (w, p), 1 ≤ w ≤ W_j, 1 ≤ p ≤ P_j   :meth:`SMDInstance.configurations`
:math:`x_{j,\varnothing}`   job j waits this epoch (the "defer" column)         column 0 of every job
:math:`D_j`                 deferral cost: ``deferral_factor`` · R_j τ_j(1,1)   option
==========================  ==================================================  ========================

Choices MODELS.md leaves open, all options (docs/smd.md): the deferral estimate
(``deferral_factor``), ``ps_le_workers`` (p ≤ w), the capacity mode (``aggregate``: one row per
resource; ``per_server``: every job is placed on one server, configurations (w, p, s), one row per
(resource, server)), and the overlap variant of τ. A job whose smallest configuration (1, 1)
fits nowhere "cannot be scheduled": it keeps only its defer column and is listed in
``unschedulable`` (it is never silently dropped).

Pareto pruning: a configuration is dropped when another one of the same job is no slower and
uses no more of every resource (strictly better somewhere). The exact optimum is unchanged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from dlsched.errors import InputError
from dlsched.instance.fields import array_argument, names_argument, number_argument
from dlsched.instance.core import MCMDK, Reference
from dlsched.perf.layered import OVERLAP_MODES, LayerProfile, iteration_time

CAPACITY_MODES = ("aggregate", "per_server")

#: what a schedule's objective is (``Result.objective_of`` of the methods that return a schedule): not
#: the §2.2 epoch objective an SMD instance's reference states
SCHEDULE_OBJECTIVE = "the schedule's weighted completion time Σ ω_j C_j in slots (MODELS.md §2.4), not the §2.2 epoch objective"


@dataclass(frozen=True)
class SMDOptions:
    overlap: str = "layerwise"
    capacity: str = "aggregate"
    ps_le_workers: bool = False
    deferral_factor: float = 2.0
    max_workers: int = 16
    max_ps: int = 16

    def __post_init__(self) -> None:
        if self.overlap not in OVERLAP_MODES:
            raise InputError("<argument>", "options.overlap", f"one of {OVERLAP_MODES}", self.overlap)
        if self.capacity not in CAPACITY_MODES:
            raise InputError("<argument>", "options.capacity", f"one of {CAPACITY_MODES}", self.capacity)
        if not self.deferral_factor >= 1:
            raise InputError("<argument>", "options.deferral_factor", "a number >= 1", self.deferral_factor)
        if self.max_workers < 1 or self.max_ps < 1:
            raise InputError("<argument>", "options.max_workers/max_ps", "integers >= 1", (self.max_workers, self.max_ps))


@dataclass(frozen=True)
class Configs:
    """Pareto-efficient configurations of one job: arrays over o."""

    w: np.ndarray
    p: np.ndarray
    tau: np.ndarray      # seconds per iteration

    @property
    def size(self) -> int:
        return self.w.size


@dataclass(eq=False)
class SMDInstance:
    """Servers, layer profiles and jobs of an SMD problem (MODELS.md §2)."""

    name: str
    resources: tuple[str, ...]
    server_cap: np.ndarray            # (S, R) capacity c_s^r of every server (counts expanded)
    server_names: tuple[str, ...]
    profiles: dict[str, LayerProfile]
    job_names: tuple[str, ...]
    job_type: tuple[str, ...]         # profile name of every job
    batch: np.ndarray                 # B_j
    iterations: np.ndarray            # R_j (remaining)
    weight: np.ndarray                # ω_j
    arrival: np.ndarray               # a_j (slots)
    d: np.ndarray                     # (n, R) per-worker demand
    e: np.ndarray                     # (n, R) per-PS demand
    max_workers: np.ndarray           # W_j
    max_ps: np.ndarray                # P_j
    options: SMDOptions = field(default_factory=SMDOptions)
    slot_seconds: float = 1200.0
    horizon: int | None = None
    source: str = "<memory>"
    meta: dict = field(default_factory=dict)
    reference: Reference | None = None   # known optimum of the §2.2 one-epoch problem

    family = "smd"

    def __post_init__(self) -> None:
        src = self.source
        self.resources = names_argument(src, "resources", self.resources)
        self.job_names = names_argument(src, "job_names", self.job_names)
        n, R = len(self.job_names), len(self.resources)
        self.job_type = names_argument(src, "job_type", self.job_type, n)
        self.server_cap = array_argument(src, "server_cap", self.server_cap, float, (None, R))
        self.server_names = names_argument(src, "server_names", self.server_names, self.server_cap.shape[0])
        for attr in ("batch", "iterations", "weight", "arrival"):
            setattr(self, attr, array_argument(src, attr, getattr(self, attr)))
        self.d = array_argument(src, "d", self.d, float, (n, R))
        self.e = array_argument(src, "e", self.e, float, (n, R))
        self.max_workers = array_argument(src, "max_workers", self.max_workers, np.int64)
        self.max_ps = array_argument(src, "max_ps", self.max_ps, np.int64)
        self.slot_seconds = number_argument(src, "slot_seconds", self.slot_seconds)
        if not isinstance(self.profiles, dict) or not isinstance(self.options, SMDOptions):
            raise InputError(src, "profiles/options", "a dict of LayerProfile and an SMDOptions", (type(self.profiles).__name__, type(self.options).__name__))
        for attr, lo, strict in (("batch", 0, True), ("iterations", 0, False), ("weight", 0, True), ("arrival", 0, False)):
            arr = getattr(self, attr)
            if arr.size != n:
                raise InputError(src, f"jobs.{attr}", f"{n} values", arr.size)
            bad = np.flatnonzero(~np.isfinite(arr) | ((arr <= lo) if strict else (arr < lo)))
            if bad.size:
                raise InputError(src, f"$.jobs[{bad[0]}].{attr}", f"a number {'>' if strict else '>='} {lo}", float(arr[bad[0]]))
        for attr, arr in (("worker_demand", self.d), ("ps_demand", self.e)):
            bad = np.argwhere(~np.isfinite(arr) | (arr < 0))
            if bad.size:
                j, r = bad[0]
                raise InputError(src, f"$.jobs[{j}].{attr}.{self.resources[r]}", "a demand >= 0", float(arr[j, r]))
        bad = np.argwhere(~np.isfinite(self.server_cap) | (self.server_cap < 0))
        if bad.size:
            raise InputError(src, f"cluster.servers[{bad[0][0]}].capacity", "capacities >= 0", float(self.server_cap[tuple(bad[0])]))
        for j, t in enumerate(self.job_type):
            if t not in self.profiles:
                raise InputError(src, f"$.jobs[{j}].type", f"a profile name ({', '.join(sorted(self.profiles))})", t)
        no_use = np.flatnonzero((self.d.sum(axis=1) <= 0) & (self.e.sum(axis=1) <= 0))
        if no_use.size:
            raise InputError(src, f"$.jobs[{no_use[0]}]", "a job that uses some resource (worker or PS demand > 0)",
                             "zero demand everywhere (it could take the whole cluster)")
        bad = np.flatnonzero((self.max_workers < 1) | (self.max_ps < 1))
        if bad.size:
            raise InputError(src, f"$.jobs[{bad[0]}].max_workers", "max_workers and max_ps >= 1",
                             (int(self.max_workers[bad[0]]), int(self.max_ps[bad[0]])))
        if not self.slot_seconds > 0:
            raise InputError(src, "cluster.slot_seconds", "a slot length > 0", self.slot_seconds)

    # -- sizes -----------------------------------------------------------------------
    @property
    def n_jobs(self) -> int:
        return len(self.job_names)

    @property
    def n_servers(self) -> int:
        return self.server_cap.shape[0]

    @property
    def capacity(self) -> np.ndarray:
        """C^r: aggregate capacity of every resource."""
        return self.server_cap.sum(axis=0)

    @property
    def min_workers(self) -> np.ndarray:
        """The fewest workers each job runs with: 1 in the SMD model (w ∈ 1..W_j, MODELS.md §2.2).
        The simulator's view of a trace raises it for gang-scheduled jobs."""
        return np.ones(self.n_jobs, dtype=np.int64)

    def profile(self, j: int) -> LayerProfile:
        return self.profiles[self.job_type[j]]

    def tau(self, j: int, w, p) -> np.ndarray:
        """τ_j(w, p) in seconds (MODELS.md §2.1)."""
        return iteration_time(self.profile(j), float(self.batch[j]), w, p, self.options.overlap)

    # -- configurations ----------------------------------------------------------------
    def _config_key(self, j: int) -> tuple:
        return (self.job_type[j], float(self.batch[j]), self.d[j].tobytes(), self.e[j].tobytes(),
                int(self.max_workers[j]), int(self.max_ps[j]))

    @cached_property
    def _config_cache(self) -> dict:
        return {}

    @property
    def kinds(self) -> np.ndarray:
        """Per job, its kind: the index of its :meth:`_config_key` (jobs of one kind have the same
        configurations and τ), kept with the configurations. What is read per configuration key is read
        once per kind of the jobs asked (:meth:`configurations_of`, :meth:`tau_least_of`)."""
        def make() -> np.ndarray:
            codes: dict = {}
            return np.array([codes.setdefault(self._config_key(j), len(codes)) for j in range(self.n_jobs)], dtype=np.int64)
        return self.cached(("kinds",), make)

    def by_kind(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(one job of each kind among ``jobs``, the index of each job's kind in it): what depends on the
        kind only is computed for the first and spread by the second."""
        _, first, inverse = np.unique(self.kinds[jobs], return_index=True, return_inverse=True)
        return jobs[first], inverse.reshape(-1)

    def cached(self, key: tuple, make: Callable[[], Any]) -> Any:
        """``make()``, computed once and kept with the configurations under ``key`` (shared by the
        re-plans' copies, :meth:`with_remaining`): what depends on a job's type, not its progress."""
        cache = self._config_cache
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def tau_least(self, j: int) -> float:
        """τ_j(w̲_j, 1), cached: the iteration time on the job's smallest configuration, w̲_j workers and
        one PS (τ_j(1, 1) in the SMD model, where w̲_j = 1; the simulator's view raises w̲_j for
        gang-scheduled jobs, which cannot run on fewer). The selection score and the wait and
        deferral costs read it for every active job at every decision."""
        w = int(self.min_workers[j])
        return self.cached(("tau-least", w, *self._config_key(j)), lambda: float(self.tau(j, w, 1)))

    def tau_least_of(self, jobs: np.ndarray) -> np.ndarray:
        """:meth:`tau_least` of every job of ``jobs``, from an array over the instance's jobs filled on first
        use (kept with the configurations: the re-plans' copies have the same jobs)."""
        jobs = np.asarray(jobs, dtype=np.int64)
        known = self.cached(("tau-least-by-job",), lambda: np.full(self.n_jobs, np.nan))
        new = np.unique(jobs[np.isnan(known[jobs])])
        if new.size:
            one, kind = self.by_kind(new)
            known[new] = np.array([self.tau_least(j) for j in one.tolist()])[kind]
        return known[jobs]

    def configurations_of(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(count, w, p, τ) of the :meth:`configurations` of ``jobs``: each job's count, and w, p, τ of
        all their configurations, job after job, in one array each. Read from per-job arrays filled
        on first use (kept with the configurations, as :meth:`tau_least_of`), so a re-plan gathers rows
        instead of visiting every job."""
        jobs = np.asarray(jobs, dtype=np.int64)
        key = ("configurations-by-job",)
        k, w, p, tau = self.cached(key, lambda: (np.full(self.n_jobs, -1, dtype=np.int64), np.zeros((self.n_jobs, 1), np.int64),
                                                 np.zeros((self.n_jobs, 1), np.int64), np.zeros((self.n_jobs, 1))))
        new = np.unique(jobs[k[jobs] < 0])
        if new.size:
            one, kind = self.by_kind(new)
            cs = [self.configurations(j) for j in one.tolist()]
            width = max(w.shape[1], max(c.size for c in cs))
            if width > w.shape[1]:                           # a wider table replaces the kept one
                w, p, tau = (np.concatenate([a, np.zeros((self.n_jobs, width - a.shape[1]), a.dtype)], axis=1) for a in (w, p, tau))
                self._config_cache[key] = (k, w, p, tau)
            rows = [np.zeros((len(cs), width), a.dtype) for a in (w, p, tau)]
            for a, c in enumerate(cs):
                rows[0][a, :c.size], rows[1][a, :c.size], rows[2][a, :c.size] = c.w, c.p, c.tau
            k[new] = np.array([c.size for c in cs], dtype=np.int64)[kind]
            w[new], p[new], tau[new] = (r[kind] for r in rows)
        count = k[jobs]
        mask = np.arange(w.shape[1])[None, :] < count[:, None]
        return count, w[jobs][mask], p[jobs][mask], tau[jobs][mask]

    def configurations(self, j: int) -> Configs:
        """The Pareto-efficient (w, p) of job j that fit the cluster (aggregate capacity)."""
        return self.cached(self._config_key(j), lambda: self._enumerate(j))

    def _enumerate(self, j: int) -> Configs:
        W, P = int(self.max_workers[j]), int(self.max_ps[j])
        w, p = np.meshgrid(np.arange(int(self.min_workers[j]), W + 1), np.arange(1, P + 1), indexing="ij")
        w, p = w.ravel(), p.ravel()
        if self.options.ps_le_workers:
            keep = p <= w
            w, p = w[keep], p[keep]
        use = w[:, None] * self.d[j][None, :] + p[:, None] * self.e[j][None, :]
        fits = np.all(use <= self.capacity[None, :] + 1e-9, axis=1)
        if self.options.capacity == "per_server":
            fits &= np.any(np.all(use[:, None, :] <= self.server_cap[None, :, :] + 1e-9, axis=2), axis=1)
        w, p, use = w[fits], p[fits], use[fits]
        tau = self.tau(j, w, p)
        keep = pareto_mask(tau, use)
        return Configs(w[keep], p[keep], tau[keep])

    def deferral_cost(self, j: int) -> float:
        """ω_j D_j with D_j = deferral_factor · R_j · τ_j(w̲_j, 1) (MODELS.md §2.2, an option): the job run
        later on its smallest configuration (:meth:`tau_least`)."""
        return float(self.weight[j] * self.options.deferral_factor * self.iterations[j] * self.tau_least(j))

    @property
    def unschedulable(self) -> list[int]:
        """Jobs whose configuration (1, 1) fits nowhere: status "cannot be scheduled"."""
        return [j for j in range(self.n_jobs) if self.configurations(j).size == 0]

    @property
    def scheduled(self) -> list[int]:
        """The jobs a schedule holds: those with iterations to run (R_j > 0) that are not unschedulable."""
        unsched = set(self.unschedulable)
        return [j for j in range(self.n_jobs) if self.iterations[j] > 0 and j not in unsched]

    # -- the core model -------------------------------------------------------------------
    def to_core(self, jobs: np.ndarray | None = None, labels: bool = True) -> MCMDK:
        """The MCMDK of MODELS.md §2.2 over ``jobs`` (default: every job with R_j > 0).

        Column 0 of every job is "defer" (no resources, cost ω_j D_j); the others are its
        Pareto configurations, cost ω_j R_j τ_j(w, p). ``meta["configs"]`` maps columns back to
        (job, w, p, server); server is -1 under aggregate capacity. ``labels=False`` (aggregate
        capacity only) leaves out the columns' display labels ("w=2,p=1"): a policy's decision
        never shows them, and with thousands of active jobs they cost more than the rest of the
        model.
        """
        if jobs is None:
            jobs = np.flatnonzero(self.iterations > 0)
        jobs = np.asarray(jobs, dtype=np.int64)
        per_server = self.options.capacity == "per_server"
        if not per_server:
            return self._aggregate_core(jobs, labels)
        S, Rn = self.n_servers, len(self.resources)
        values, rows, cols, data, counts = [], [], [], [], []
        cfg_job, cfg_w, cfg_p, cfg_s = [], [], [], []
        col = 0
        for j in jobs.tolist():
            c = self.configurations(j)
            use = c.w[:, None] * self.d[j][None, :] + c.p[:, None] * self.e[j][None, :]   # (o, r)
            cost = self.weight[j] * self.iterations[j] * c.tau
            if per_server:
                fits = np.all(use[:, None, :] <= self.server_cap[None, :, :] + 1e-9, axis=2)      # (o, s)
                o_idx, s_idx = np.nonzero(fits)
            else:
                o_idx, s_idx = np.arange(c.size), np.full(c.size, -1)
            k = o_idx.size
            values.append(np.concatenate([[self.deferral_cost(j)], cost[o_idx]]))
            new_cols = col + 1 + np.arange(k)
            u = use[o_idx]                                                                   # (k, r)
            nz = np.nonzero(u > 0)
            row_of = nz[1] if not per_server else s_idx[nz[0]] * Rn + nz[1]
            rows.append(row_of)
            cols.append(new_cols[nz[0]])
            data.append(u[nz])
            counts.append(k + 1)
            cfg_job += [j] * (k + 1)
            cfg_w.append(np.concatenate([[0], c.w[o_idx]]))
            cfg_p.append(np.concatenate([[0], c.p[o_idx]]))
            cfg_s.append(np.concatenate([[-1], s_idx]))
            col += k + 1
        n_rows = S * Rn if per_server else Rn
        A = sp.csr_matrix((np.concatenate(data) if data else [], (np.concatenate(rows) if rows else [],
                                                                     np.concatenate(cols) if cols else [])),
                          shape=(n_rows, col))
        b = self.server_cap.ravel() if per_server else self.capacity
        row_names = (tuple(f"{r}@{s}" for s in self.server_names for r in self.resources) if per_server
                     else tuple(self.resources))
        w_all = np.concatenate(cfg_w) if cfg_w else np.zeros(0, np.int64)
        p_all = np.concatenate(cfg_p) if cfg_p else np.zeros(0, np.int64)
        s_all = np.concatenate(cfg_s) if cfg_s else np.zeros(0, np.int64)
        labels = tuple("defer" if wv == 0 else (f"w={wv},p={pv}" + (f",s={sv}" if sv >= 0 else ""))
                       for wv, pv, sv in zip(w_all.tolist(), p_all.tolist(), s_all.tolist()))
        meta = {"family": "smd", "jobs": jobs, "configs": np.stack([np.asarray(cfg_job, np.int64), w_all, p_all, s_all], 1)
                if col else np.zeros((0, 4), np.int64)}
        return MCMDK(np.concatenate(values) if values else np.zeros(0), A, b,
                     np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), "min", "exactly_one",
                     self.name, tuple(self.job_names[j] for j in jobs.tolist()), row_names, labels, None, meta, self.source)

    def _aggregate_core(self, jobs: np.ndarray, labels: bool = True) -> MCMDK:
        """:meth:`to_core` under aggregate capacity in whole-array steps (the same model, column for
        column): each job's cached configurations are gathered once, then costs, uses and the
        matrix are built for all of them together."""
        k, w, p, tau = self.configurations_of(jobs)
        job_of = np.repeat(jobs, k)
        ptr = np.concatenate([[0], np.cumsum(k + 1)]).astype(np.int64)
        n_cols = int(ptr[-1])
        run = np.ones(n_cols, dtype=bool)
        run[ptr[:-1]] = False                           # column 0 of every job: defer
        value = np.empty(n_cols)
        value[ptr[:-1]] = self.weight[jobs] * self.options.deferral_factor * self.iterations[jobs] * self.tau_least_of(jobs)
        value[run] = self.weight[job_of] * self.iterations[job_of] * tau
        use = w[:, None] * self.d[job_of] + p[:, None] * self.e[job_of]         # (configs, r)
        o, r = np.nonzero(use > 0)
        col = np.flatnonzero(run)
        A = sp.csr_matrix((use[o, r], (r, col[o])), shape=(len(self.resources), n_cols))
        cfg = np.zeros((n_cols, 4), dtype=np.int64)
        cfg[:, 0] = np.repeat(jobs, k + 1)
        cfg[run, 1], cfg[run, 2] = w, p
        cfg[:, 3] = -1
        shown = None if not labels else tuple(lab for j in jobs.tolist() for lab in self.cached(
            ("labels", *self._config_key(j)), lambda j=j: ("defer",) + tuple(
                f"w={wv},p={pv}" for wv, pv in zip(self.configurations(j).w.tolist(), self.configurations(j).p.tolist()))))
        meta = {"family": "smd", "jobs": jobs, "configs": cfg}
        names = self.cached(("names-by-job",), lambda: np.array(self.job_names, dtype=object))
        return MCMDK(value, A, self.capacity, ptr, "min", "exactly_one", self.name,
                     tuple(names[jobs]), tuple(self.resources), shown, None, meta, self.source)

    def allocation_from_core(self, core: MCMDK, choice: np.ndarray) -> np.ndarray:
        """(n, 3) array of (w, p, server) per job of the instance from a core solution (0 = not run)."""
        alloc = np.zeros((self.n_jobs, 3), dtype=np.int64)
        alloc[:, 2] = -1
        cfg = core.meta["configs"]
        cols = core.columns_of(choice)
        jobs = cfg[cols, 0]
        alloc[jobs] = cfg[cols, 1:4]
        return alloc

    def solution_from_core(self, choice: np.ndarray, core: MCMDK | None = None) -> dict:
        """A core solution of ``core`` (default ``to_core()``) as this family's ``{"allocation": (n, 2|3)}``
        (the server column only under per-server capacity), the form ``check_smd`` verifies."""
        alloc = self.allocation_from_core(core if core is not None else self.to_core(), choice)
        return {"allocation": alloc if self.options.capacity == "per_server" else alloc[:, :2]}

    def epoch_objective(self, alloc: np.ndarray, jobs: np.ndarray | None = None) -> float:
        """§2.2 objective of an allocation ((w, p) per job; w = 0: deferred)."""
        if jobs is None:
            jobs = np.flatnonzero(self.iterations > 0)
        total = 0.0
        for j in np.asarray(jobs).tolist():
            w, p = int(alloc[j][0]), int(alloc[j][1])
            total += self.deferral_cost(j) if w == 0 else float(self.weight[j] * self.iterations[j] * self.tau(j, w, p))
        return total

    def with_remaining(self, iterations: np.ndarray) -> "SMDInstance":
        """A copy with other remaining iterations (re-planning); the configuration cache is shared."""

        new = copy.copy(self)
        new.iterations = np.asarray(iterations, dtype=float)
        new.__dict__["_config_cache"] = self._config_cache
        return new


def pareto_mask(tau: np.ndarray, use: np.ndarray) -> np.ndarray:
    """True for configurations no other one dominates (no slower, no more of any resource,
    strictly better in one). Ties in both keep the first."""
    n = tau.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    le_use = np.all(use[:, None, :] <= use[None, :, :] + 1e-12, axis=2)      # [a, b]: a uses <= b
    le_tau = tau[:, None] <= tau[None, :] * (1 + 1e-12)
    dom = le_use & le_tau                                                    # a weakly dominates b
    strict = dom & ~(dom.T)                                                  # a strictly dominates b
    equal = dom & dom.T
    first = np.tril(equal, -1)                                               # an earlier identical config
    return ~(strict.any(axis=0) | first.any(axis=1))


def require_aggregate(inst: "SMDInstance") -> None:
    """Schedules (slots x jobs x (w, p)) place no servers, so schedule methods (the simulator and
    the time-indexed MILP) model aggregate capacity only; refuse a per-server instance instead
    of returning schedules that may break its per-server capacities."""
    if inst.options.capacity == "per_server":
        raise InputError(inst.source, "$.options.capacity",
                         "'aggregate' for schedule methods (per-server capacity is modelled by the one-epoch "
                         "allocation: method exact, or smd -P mode=epoch)", "per_server")


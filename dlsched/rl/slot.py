"""One DL2 scheduling slot: the state matrix, the 3J + 1 actions, their mask, and the placement (MODELS.md §6).

At each slot boundary DL2 rebuilds every job's allocation from nothing, one inference at a time:

* **state** ``x`` (J × F): one row per job of the scheduling window (the first J active jobs in
  order of arrival; later ones wait, as in DL2), columns

  ====================  =================================================================
  ``0 .. L-1``          one-hot job type (``Spec.job_types``)
  ``L``                 slots the job has run (its run time / Δ), / ``slots_norm``
  ``L+1``               remaining epochs, / ``epochs_norm``
  ``L+2``               dominant share allocated this slot, max_r a_r / Σ_s c_s^r, × S / ``tasks_norm``
  ``L+3``, ``L+4``      workers and PSs allocated this slot, / ``tasks_norm``
  ====================  =================================================================

  (an empty row is all zeros);
* **action** a ∈ {0..3J}: ``a < J`` adds a worker to job a, ``J <= a < 2J`` a PS to job a − J,
  ``2J <= a < 3J`` one of each to job a − 2J, ``a = 3J`` stops. An action is valid when the job
  exists, stays within its worker/PS limits and the tasks fit on some server; "stop" always is.
* or, with ``Spec.actions = "jobs"``, one action for the whole slot: a size level k_i ∈
  {0..C−1} per window row i (:meth:`Slot.level_mask`), the index of a (workers, PSs) pair in
  ``Spec.configs``, carried out row by row in window order as task actions while they fit
  (:meth:`Slot.fill`): rows earlier in the window are served first.

Tasks are placed as they are added (a server already hosting the job first, then first fit), so
the mask is exact and the slot's allocation always fits. At the end only the difference to the
last slot is applied (elastic scaling): a job whose worker and PS counts did not change keeps its
servers, so the simulator charges it no restart.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from dlsched.errors import InputError
from dlsched.sim.placement import first_fit, usage
from dlsched.sim.policy import ClusterState, Placement
from dlsched.sim.slots import next_boundary

#: DL2's simulator job mix (../shared/data/dl2/job_types.csv), the default job-type set
DL2_JOB_TYPES = ("resnet-50", "vgg-16", "resnext-110", "inception-bn", "seq2seq",
                 "cnn-text-classification", "dssm", "wlm")

#: when DL2 decides: only at slot boundaries (DL2's), or also at every arrival and completion
DECIDE_AT = ("slots", "events")
#: order of the window's rows: by arrival (DL2's), or by remaining time at the job's fastest size
ROWS = ("arrival", "remaining")
#: what one inference decides: one task of one job (DL2's 3J + 1 actions), or every window job's size at once
ACTIONS = ("tasks", "jobs")
#: ``actions="jobs"``: the (workers, PSs) a window job may be given, level 0 none. Equal counts up to
#: DL2's limit of 16, and one to three workers with more PSs than workers: the PS-bound models of
#: DL2's mix train fastest per GPU that way (heSRPT's and Optimus's allocations use such shapes)
CONFIGS = ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (6, 6), (8, 8), (11, 11), (16, 16),
           (1, 2), (1, 3), (1, 4), (1, 6), (1, 9), (1, 14), (2, 4), (2, 6), (3, 5), (2, 1))
#: features saturate here (only slots run can grow past 1, after slots_norm slots)
OBS_HIGH = 10.0

#: the largest window (and number of job types) a network may have: a larger one is refused, not allocated
MAX_WINDOW = 4096


@dataclass(frozen=True)
class Spec:
    """Shape of DL2's state and action space; stored in every checkpoint.

    ``J`` is the scheduling window; DL2's slot is 1,200 s (shared/data/README.md). The norms only
    scale features to about [0, 1]; they are part of the network's input contract. ``decide_at``
    (:data:`DECIDE_AT`): "slots" decides only at slot boundaries, as DL2; "events" also at every
    arrival and completion (the slot boundaries stay on the grid kΔ; docs/dl2.md, "Decision timing").
    ``rows`` (:data:`ROWS`): the window (always the first J active jobs by arrival) is laid out in
    order of arrival, as DL2, or of remaining time at the job's fastest size, shortest first
    (remaining epochs times the job type's fastest seconds per epoch; docs/dl2.md, "Row order").
    ``actions`` (:data:`ACTIONS`): "tasks" is DL2's one task per inference; "jobs" decides the whole
    slot in one inference, a size level per window row: an index into ``configs`` (workers, PSs),
    level 0 being (0, 0) (:meth:`Slot.fill`). ``leave_out`` (``actions="jobs"``): whether a window job
    may be given level 0 while a larger level is valid; False makes the rows work-conserving, a job
    then waits only when the rows before it took the room (:meth:`Slot.level_mask`; docs/dl2.md, round 16).
    ``prior_load`` (``actions="jobs"``): whether the row prior's features (:func:`dlsched.rl.networks.row_features`)
    also carry the window's number of jobs, so that the size a row prior prefers can follow the load
    (docs/dl2.md, round 17).
    """

    job_types: tuple[str, ...] = DL2_JOB_TYPES
    J: int = 40
    slot_seconds: float = 1200.0
    slots_norm: float = 50.0
    epochs_norm: float = 30000.0
    tasks_norm: float = 16.0
    decide_at: str = "slots"
    rows: str = "arrival"
    actions: str = "tasks"
    configs: tuple[tuple[int, int], ...] = CONFIGS
    leave_out: bool = True
    prior_load: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.J, bool) or not isinstance(self.J, int) or not 1 <= self.J <= MAX_WINDOW:
            raise InputError("<argument>", "J", f"a window of 1 to {MAX_WINDOW} jobs", self.J)
        if not 1 <= len(self.job_types) <= MAX_WINDOW or not all(isinstance(t, str) for t in self.job_types):
            raise InputError("<argument>", "job_types", f"1 to {MAX_WINDOW} job type names", len(self.job_types))
        for name in ("slot_seconds", "slots_norm", "epochs_norm", "tasks_norm"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise InputError("<argument>", name, "a positive finite number", value)
        if self.decide_at not in DECIDE_AT:
            raise InputError("<argument>", "decide_at", f"one of {DECIDE_AT}", self.decide_at)
        if self.rows not in ROWS:
            raise InputError("<argument>", "rows", f"one of {ROWS}", self.rows)
        if self.actions not in ACTIONS:
            raise InputError("<argument>", "actions", f"one of {ACTIONS}", self.actions)
        ok = (2 <= len(self.configs) <= MAX_WINDOW and tuple(self.configs[0]) == (0, 0)
              and all(len(c) == 2 and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_WINDOW for x in c)
                      for c in self.configs))
        if not ok:
            raise InputError("<argument>", "configs", f"2 to {MAX_WINDOW} (workers, PSs) pairs, the first (0, 0)",
                             self.configs)
        if not isinstance(self.leave_out, bool) or not (self.leave_out or self.actions == "jobs"):
            raise InputError("<argument>", "leave_out", 'True, or False with actions="jobs"', self.leave_out)
        if not isinstance(self.prior_load, bool) or (self.prior_load and self.actions != "jobs"):
            raise InputError("<argument>", "prior_load", 'False, or True with actions="jobs"', self.prior_load)

    @property
    def n_types(self) -> int:
        return len(self.job_types)

    @property
    def n_features(self) -> int:
        return self.n_types + 5

    @property
    def n_actions(self) -> int:
        """The network's outputs: 3J + 1 task actions, or J × C size levels (``actions="jobs"``, C configs)."""
        return 3 * self.J + 1 if self.actions == "tasks" else self.J * self.n_levels

    @property
    def n_levels(self) -> int:
        return len(self.configs)

    @property
    def stop(self) -> int:
        return 3 * self.J

    def to_dict(self) -> dict:
        return {"job_types": list(self.job_types), "J": self.J, "slot_seconds": self.slot_seconds,
                "slots_norm": self.slots_norm, "epochs_norm": self.epochs_norm, "tasks_norm": self.tasks_norm,
                "decide_at": self.decide_at, "rows": self.rows, "actions": self.actions,
                "configs": [list(c) for c in self.configs],
                # written only where it differs from the default, so that earlier checkpoints' specs stay as they were
                **({} if self.leave_out else {"leave_out": False}), **({"prior_load": True} if self.prior_load else {})}

    def next_boundary(self, t: float) -> float:
        """The first slot boundary kΔ after time ``t`` (a time within 1e-9 slots of a boundary counts as on it)."""
        return next_boundary(t, self.slot_seconds)

    @classmethod
    def from_dict(cls, d: Mapping) -> "Spec":
        extra = {"configs": tuple(tuple(c) for c in d["configs"])} if "configs" in d else {}
        return cls(**{**d, "job_types": tuple(d["job_types"]), **extra})

    def type_index(self, jobs: Sequence, source: str = "<trace>") -> np.ndarray:
        """Index of each job's type in ``job_types``; a type the network was not trained on is bad input."""
        lookup = {t: i for i, t in enumerate(self.job_types)}
        out = np.empty(len(jobs), dtype=np.int64)
        for j, job in enumerate(jobs):
            if job.job_type not in lookup:
                raise InputError(source, f"jobs[{j}].job_type",
                                 f"one of the job types the DL2 network was trained on {self.job_types} "
                                 "(retrain with `dlsched train dl2` on traces of this mix)", job.job_type)
            out[j] = lookup[job.job_type]
        return out


def window(state: ClusterState, J: int, rate: np.ndarray | None = None) -> np.ndarray:
    """The first J active jobs in order of arrival (trace index breaks ties): DL2's scheduling window.

    With ``rate`` (each job's fastest iterations/s, :func:`fastest_rate`) the window's rows are
    ordered by remaining time at that rate, shortest first (arrival breaks ties)."""
    act = np.asarray(state.active, dtype=np.int64)
    win = act[np.lexsort((act, state.arrival[act]))][:J]
    if rate is None:
        return win
    with np.errstate(divide="ignore"):
        left = np.where(rate[win] > 0, state.remaining[win] / np.where(rate[win] > 0, rate[win], 1.0), np.inf)
    return win[np.argsort(left, kind="stable")]


def fastest_rate(jobs: Sequence, speed) -> np.ndarray:
    """Each job's iterations/s at its fastest (p, w) within its limits, from ``speed.speeds(type, p, w)``
    (0 if it cannot run): remaining iterations over it is the remaining-time key of ``Spec.rows``."""
    cache: dict[tuple, float] = {}
    out = np.zeros(len(jobs))
    for j, job in enumerate(jobs):
        key = (job.job_type, job.min_workers, job.max_workers, max(job.max_ps, 1))
        if key not in cache:
            p, w = np.meshgrid(np.arange(1, key[3] + 1), np.arange(key[1], key[2] + 1), indexing="ij")
            cache[key] = float(np.max(speed.speeds(job.job_type, p, w), initial=0.0))
        out[j] = cache[key]
    return out


def action_kind(a: int, J: int) -> tuple[str, int]:
    """``("worker"|"ps"|"both", row)`` or ``("stop", -1)``."""
    if a >= 3 * J:
        return "stop", -1
    return ("worker", "ps", "both")[a // J], a % J


@dataclass
class Slot:
    """The allocation of one slot under construction; see the module docstring.

    ``jobs[i]`` is the trace index in window row i; ``slots_run`` and ``rate`` (:func:`fastest_rate`,
    needed when ``spec.rows == "remaining"``) are indexed by trace index.
    """

    spec: Spec
    state: ClusterState
    type_index: np.ndarray
    slots_run: np.ndarray
    rate: np.ndarray | None = None
    jobs: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        J, st = self.spec.J, self.state
        if self.spec.rows == "remaining" and self.rate is None:
            raise ValueError("Spec.rows='remaining' needs each job's fastest rate (fastest_rate)")
        self.jobs = window(st, J, self.rate if self.spec.rows == "remaining" else None)
        n = len(self.jobs)
        R = st.cluster.capacity.shape[1]
        self.free = st.cluster.capacity.astype(float).copy()
        self.total = st.cluster.capacity.sum(axis=0)
        self.dw = np.zeros((J, R))
        self.dp = np.zeros((J, R))
        self.max_w = np.zeros(J, dtype=np.int64)
        self.max_p = np.zeros(J, dtype=np.int64)
        self.w = np.zeros(J, dtype=np.int64)
        self.p = np.zeros(J, dtype=np.int64)
        if n:
            self.dw[:n] = st.demand_w[self.jobs]
            self.dp[:n] = st.demand_p[self.jobs]
            self.max_w[:n] = [st.jobs[j].max_workers for j in self.jobs]
            self.max_p[:n] = [st.jobs[j].max_ps for j in self.jobs]
        self.on_w = [Counter() for _ in range(J)]
        self.on_p = [Counter() for _ in range(J)]
        self._static = self._static_rows()
        self._mask: np.ndarray | None = None

    # -- state --------------------------------------------------------------------------
    def _static_rows(self) -> np.ndarray:
        spec, st, n = self.spec, self.state, len(self.jobs)
        x = np.zeros((spec.J, spec.n_features), dtype=np.float32)
        if n:
            x[np.arange(n), self.type_index[self.jobs]] = 1.0
            x[:n, spec.n_types] = self.slots_run[self.jobs] / spec.slots_norm
            per_epoch = np.array([st.jobs[j].iterations_per_epoch or st.jobs[j].iterations for j in self.jobs])
            x[:n, spec.n_types + 1] = st.remaining[self.jobs] / per_epoch / spec.epochs_norm
        return x

    def dominant_share(self) -> np.ndarray:
        """max_r (w d_w + p d_p)_r / Σ_s c_s^r per window row (MODELS.md §7, DRF's dominant share)."""
        used = self.w[:, None] * self.dw + self.p[:, None] * self.dp
        share = np.divide(used, self.total, out=np.zeros_like(used), where=self.total > 0)
        return share.max(axis=1) if share.shape[1] else np.zeros(self.spec.J)

    def observation(self) -> np.ndarray:
        spec = self.spec
        x = self._static.copy()
        L = spec.n_types
        x[:, L + 2] = self.dominant_share() * self.free.shape[0] / spec.tasks_norm
        x[:, L + 3] = self.w / spec.tasks_norm
        x[:, L + 4] = self.p / spec.tasks_norm
        return np.minimum(x, OBS_HIGH, out=x)

    # -- actions ------------------------------------------------------------------------
    def mask(self) -> np.ndarray:
        """Valid actions (int8, 1 = valid); recomputed only after the allocation changed."""
        if self._mask is None:
            self._mask = self._compute_mask()
        return self._mask

    def _compute_mask(self) -> np.ndarray:
        J, n = self.spec.J, len(self.jobs)
        m = np.zeros(3 * J + 1, dtype=np.int8)     # the task actions (also under actions="jobs", for apply)
        m[3 * J] = 1
        if not n:
            return m
        can_w, can_p, can_b = self._can(slice(0, n))
        m[:n] = can_w
        m[J:J + n] = can_p
        m[2 * J:2 * J + n] = can_b
        return m

    def _can(self, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Whether a worker, a PS, and one of each can be added to window ``rows`` (a slice or indices)."""
        dw, dp = self.dw[rows], self.dp[rows]
        fit_w = (self.free[None, :, :] >= dw[:, None, :] - 1e-9).all(axis=2)      # (rows, S)
        fit_p = (self.free[None, :, :] >= dp[:, None, :] - 1e-9).all(axis=2)
        fit_wp = (self.free[None, :, :] >= (dw + dp)[:, None, :] - 1e-9).all(axis=2)
        cw, cp = fit_w.sum(axis=1), fit_p.sum(axis=1)
        # one of each on two different servers, or both on one
        apart = (cw >= 1) & (cp >= 1) & ~((cw == 1) & (cp == 1) & (fit_w & fit_p).any(axis=1))
        room_w, room_p = self.w[rows] < self.max_w[rows], self.p[rows] < self.max_p[rows]
        return room_w & (cw >= 1), room_p & (cp >= 1), room_w & room_p & (fit_wp.any(axis=1) | apart)

    def level_mask(self) -> np.ndarray:
        """Valid size levels (J, C), int8 (``Spec.actions = "jobs"``): for a window job the configs within
        its worker and PS limits (a job without PSs: the PS count is ignored), and 0, leaving it out,
        unless ``Spec.leave_out`` is False and another level is valid; level 0 alone for an empty row."""
        n = len(self.jobs)
        cw, cp = np.array(self.spec.configs).T
        m = np.zeros((self.spec.J, len(cw)), dtype=np.int8)
        m[:, 0] = 1
        ps_ok = (cp[None, :] <= self.max_p[:n, None]) | (self.max_p[:n, None] == 0)
        m[:n] = (cw[None, :] <= self.max_w[:n, None]) & ps_ok & (cw[None, :] >= 1)
        m[:n, 0] = 1 if self.spec.leave_out else ~m[:n, 1:].any(axis=1)
        return m

    def fill(self, levels) -> None:
        """Give window row i (in order) the workers and PSs of config ``levels[i]``: one of each while
        both are wanted, then the rest singly (workers alone for a job without PSs), each task while
        it fits; the slot's allocation of ``Spec.actions = "jobs"``.

        The same tasks on the same servers as :meth:`_can` and :meth:`_place` task by task, with
        only the one row's fits computed (this is most of a job-level episode's time)."""
        full = set()    # task demands that fit nowhere any more (free space only shrinks while filling)
        free = self.free
        for i in range(len(self.jobs)):
            w, p = self.spec.configs[int(levels[i])]
            p = p if self.max_p[i] > 0 else 0
            if not w and not p:
                continue
            both = min(w, p)
            dw, dp = self.dw[i], self.dp[i]
            hosting = np.zeros(len(free), dtype=bool)
            hosting[list(self.on_w[i] | self.on_p[i])] = True

            def pick(fits: np.ndarray) -> int:
                cand = np.flatnonzero(fits & hosting)
                return int(cand[0]) if len(cand) else int(np.flatnonzero(fits)[0])

            def put(s: int, worker: bool) -> None:
                self._put(i, s, worker)
                hosting[s] = True
            for kind in ["both"] * both + ["worker"] * (w - both) + ["ps"] * (p - both):
                key = (kind, dw.tobytes(), dp.tobytes())
                if key in full:
                    break
                room_w, room_p = self.w[i] < self.max_w[i], self.p[i] < self.max_p[i]
                if kind != "both":
                    worker = kind == "worker"
                    fit = (free >= (dw if worker else dp) - 1e-9).all(axis=1)
                    if not ((room_w if worker else room_p) and fit.any()):
                        full.add(key)
                        break
                    put(pick(fit), worker)
                else:
                    fit_w = (free >= dw - 1e-9).all(axis=1)
                    fit_p = (free >= dp - 1e-9).all(axis=1)
                    fit_wp = (free >= dw + dp - 1e-9).all(axis=1)
                    cw, cp = fit_w.sum(), fit_p.sum()
                    apart = cw >= 1 and cp >= 1 and not (cw == 1 and cp == 1 and (fit_w & fit_p).any())
                    if not (room_w and room_p and (fit_wp.any() or apart)):
                        full.add(key)
                        break
                    if fit_wp.any():
                        s = pick(fit_wp)
                        put(s, True)
                        put(s, False)
                    else:
                        put(pick((free >= dw - 1e-9).all(axis=1)), True)
                        put(pick((free >= dp - 1e-9).all(axis=1)), False)

    def apply(self, a: int) -> bool:
        """Carry out action ``a`` if valid; False (nothing changes) for "stop" or an invalid action."""
        kind, i = action_kind(int(a), self.spec.J)
        if kind == "stop" or not self.mask()[a]:
            return False
        self._place(kind, i)
        return True

    def _place(self, kind: str, i: int) -> None:
        """Add the task(s) of a valid action of ``kind`` to row ``i``."""
        if kind == "both":
            both = (self.free >= self.dw[i] + self.dp[i] - 1e-9).all(axis=1)
            if both.any():
                s = self._pick(both, i)
                self._put(i, s, worker=True)
                self._put(i, s, worker=False)
                return
            self._add(i, worker=True)
            self._add(i, worker=False)
            return
        self._add(i, worker=kind == "worker")

    def _pick(self, fits: np.ndarray, i: int) -> int:
        """A server already hosting job i if one fits (locality), else the first that fits."""
        hosting = np.zeros_like(fits)
        hosting[list(self.on_w[i] | self.on_p[i])] = True
        cand = np.flatnonzero(fits & hosting)
        return int(cand[0]) if len(cand) else int(np.flatnonzero(fits)[0])

    def _add(self, i: int, worker: bool) -> None:
        d = self.dw[i] if worker else self.dp[i]
        self._put(i, self._pick((self.free >= d - 1e-9).all(axis=1), i), worker)

    def _put(self, i: int, s: int, worker: bool) -> None:
        self._mask = None
        if worker:
            self.free[s] -= self.dw[i]
            self.on_w[i][s] += 1
            self.w[i] += 1
        else:
            self.free[s] -= self.dp[i]
            self.on_p[i][s] += 1
            self.p[i] += 1

    def bad_rows(self) -> np.ndarray:
        """Rows in a "bad state" (§6): workers but no PS, PSs but no workers, or a ratio above 10."""
        n = len(self.jobs)
        w, p, ps_job = self.w[:n], self.p[:n], self.max_p[:n] > 0
        bad = ps_job & (((w > 0) & (p == 0)) | ((p > 0) & (w == 0)) | (w > 10 * p) | (p > 10 * w))
        return np.flatnonzero(bad & ((w > 0) | (p > 0)))

    # -- result -------------------------------------------------------------------------
    def runnable(self) -> list[tuple[int, int]]:
        """(row, trace index) of the jobs whose tasks let them train: enough workers, and a PS if
        they use PSs. The tasks of a job in a bad state that cannot train are left idle this slot."""
        st = self.state
        return [(i, int(j)) for i, j in enumerate(self.jobs)
                if self.w[i] >= st.jobs[j].min_workers and (self.p[i] >= 1 or self.max_p[i] == 0)]

    def placements(self, previous: Mapping[int, Placement]) -> dict[int, Placement]:
        """The slot's placements, applying only the difference to ``previous`` (elastic scaling).

        Jobs whose counts are unchanged keep their servers and the changed ones are placed first
        fit around them; if that does not fit, every job takes the servers chosen while building.
        """
        built = {int(j): Placement(dict(self.on_w[i]), dict(self.on_p[i])) for i, j in self.runnable()}
        st = self.state
        keep = {j: previous[j] for j, pl in built.items()
                if j in previous and (previous[j].n_workers, previous[j].n_ps) == (pl.n_workers, pl.n_ps)}
        if not keep or len(keep) == len(built):
            return {j: keep.get(j, pl) for j, pl in built.items()}
        free = st.cluster.capacity.astype(float).copy()
        for j, pl in keep.items():
            srv, rows = usage(pl, st.demand_w[j], st.demand_p[j])
            free[srv] -= rows
        out = dict(keep)
        for j, pl in built.items():
            if j in keep:
                continue
            placed = first_fit(free, st.demand_w[j], st.demand_p[j], pl.n_workers, pl.n_ps)
            if placed is None:
                return built
            srv, rows = usage(placed, st.demand_w[j], st.demand_p[j])
            free[srv] -= rows
            out[j] = placed
        return out


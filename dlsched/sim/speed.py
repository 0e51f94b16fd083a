r"""Speed sources: how many iterations per second a job makes with a placement (MODELS.md §2.1, §4.1, §5, §6).

Every source implements :class:`dlsched.sim.policy.SpeedSourceLike`,
``rate(job, placement, cluster) -> iterations/s`` (0 when the job cannot progress: no worker, or
a PS job without a PS). The unit of "iteration" is the trace's: a global batch of the measured
table for DL2's job mix (:mod:`dlsched.instance.synthetic`), a Gavel step for Gavel traces, and
for traces whose work is a duration (Tiresias, OpenB) whatever makes :class:`DurationSpeed`
reproduce the recorded duration (:mod:`dlsched.instance.traces`).

==========================  ===========================================================================
source                      rate of job j with p PSs and w workers
==========================  ===========================================================================
:class:`TableSpeed`         :math:`\hat S_t(p, w) / B_t`: DL2's measured Σ worker samples/s
                            (config_speed.txt) interpolated by a linear RBF over (p, w) clamped to the
                            measured grid; B_t the measured global batch (MODELS.md §6)
:class:`LayeredSpeed`       :math:`g(w, p) = 1/\tau(w, p)`, MODELS.md §2.1 (``dlsched.perf.layered``)
:class:`OptimusSpeed`       :math:`f(p, w) = (\theta_0 M/w + \theta_1 + \theta_2 w/p + \theta_3 w +
                            \theta_4 p)^{-1}` fitted to the table, MODELS.md §5
                            (``dlsched.perf.optimus_fit``)
:class:`ThroughputSpeed`    :math:`\sum_{k} h_{i,g(k)}(n)/n` over the n workers k (Gavel steps/s, §4.1);
                            ``mixed="slowest"``: :math:`n \min_k h_{i,g(k)}(n)/n`; co-located with
                            job i' on the same GPUs (``pair_rates``): Gavel's measured pair
:class:`DurationSpeed`      :math:`K_j / d_j \cdot w / n_j`: the recorded duration :math:`d_j` at the
                            requested size :math:`n_j`, linear in the number of workers otherwise
:class:`Noisy`              any of these times :math:`\exp(\sigma Z - \sigma^2/2)`, Z ~ N(0, 1) drawn
                            once per (seed, job, placement)
==========================  ===========================================================================

All-reduce jobs (no PS) on a PS table use p = w, as DL2's simulator does for its non-PS mode.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
from scipy.interpolate import RBFInterpolator

from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.synthetic import DURATION
from dlsched.instance.workload import Job
from dlsched.perf.layered import throughput
from dlsched.perf.optimus_fit import fit_sync
from dlsched.perf.profiles import MEASURED_BATCH, builtin
from dlsched.perf.speeds import read_config_speed
from dlsched.perf.throughputs import calibrate, load_gavel, ring_factor
from dlsched.sim.policy import Placement, SpeedSourceLike


def _ps_and_workers(job: Job, placement: Placement) -> tuple[int, int] | None:
    """(p, w) the job trains with, or None if it cannot progress."""
    w = placement.n_workers
    if w <= 0:
        return None
    if job.uses_ps:
        p = placement.n_ps
        return None if p <= 0 else (p, w)
    return w, w


def rate_key(speed, job: Job):
    """A key of ``job`` such that two jobs with the same key have the same ``speed.rate`` at every placement
    (the source's ``rate_key``; a view reads one τ grid per key instead of one per job,
    :class:`dlsched.policies.view.SpeedView`), or None: a source without one, or a job whose rate is its own."""
    of = getattr(speed, "rate_key", None)
    return None if of is None else of(job)


class _PerTypeCache(ABC):
    """A rate that depends only on (job type, p, w), memoised: the engine asks again at every event."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, int], float] = {}

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        pw = _ps_and_workers(job, placement)
        if pw is None:
            return 0.0
        key = (job.job_type, *pw)
        r = self._cache.get(key)
        if r is None:
            r = self._cache[key] = float(self.speed(job.job_type, *pw))
        return r

    def rate_key(self, job: Job):
        """What :meth:`rate` reads of ``job`` (:func:`rate_key`): its type and whether it has PSs."""
        return job.job_type, job.uses_ps

    @abstractmethod
    def speed(self, job_type: str, p: int, w: int) -> float:
        """Iterations/s of a job of ``job_type`` with p PSs and w workers (both >= 1)."""


class TableSpeed(_PerTypeCache):
    r"""DL2's measured speeds (``shared/data/dl2/config_speed.txt`` via :mod:`dlsched.perf.speeds`).

    :math:`\text{rate} = \hat S_t(\bar p, \bar w) / B_t` iterations/s, where :math:`\hat S_t` is
    :class:`scipy.interpolate.RBFInterpolator` (``kernel``, default linear as DL2's own
    ``scipy.interpolate.Rbf(function='linear')``) through the measured (p, w, Σ worker samples/s)
    points of job type t, :math:`(\bar p, \bar w)` are p and w clamped to the measured grid's
    range per axis, and :math:`B_t` the measured global batch. It equals the measurement at every
    measured point. Rate 0 with no worker, or no PS for a PS job.
    """

    def __init__(self, path: str | Path | None = None, kernel: str = "linear") -> None:
        super().__init__()
        self.tables, self.n_dropped = read_config_speed(path)
        self.source = str(path) if path is not None else "config_speed.txt"
        self.kernel = kernel
        self._interp: dict[str, Callable] = {}

    def speed(self, job_type: str, p: int, w: int) -> float:
        """Interpolated iterations/s of ``job_type`` at (p, w) (clamped to the measured range)."""
        return float(self.speeds(job_type, p, w))

    def speeds(self, job_type: str, p, w) -> np.ndarray:
        """:meth:`speed` over arrays of PS and worker counts (broadcast together); 0 where p or w < 1."""
        t = self.tables.get(job_type)
        if t is None:
            raise InputError(self.source, f"job type '{job_type}'", f"a model of the measured table {sorted(self.tables)}",
                             "not measured")
        f = self._interp.get(job_type)
        if f is None:
            f = self._interp[job_type] = RBFInterpolator(np.c_[t.p, t.w], t.speed, kernel=self.kernel, degree=0)
        p, w = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(w, dtype=float))
        x = np.stack([np.clip(p, t.p.min(), t.p.max()).ravel(), np.clip(w, t.w.min(), t.w.max()).ravel()], axis=1)
        g = np.maximum(f(x), 0.0).reshape(p.shape) / t.batch
        return np.where((p >= 1) & (w >= 1), g, 0.0)


class OptimusSpeed(_PerTypeCache):
    r"""Optimus's fitted synchronous speed model f(p, w) (MODELS.md §5) of each type's measured table.

    :math:`f(p, w) = (\theta_0 M/w + \theta_1 + \theta_2 w/p + \theta_3 w + \theta_4 p)^{-1}`
    iterations/s, θ ≥ 0 fitted once per job type by :func:`dlsched.perf.optimus_fit.fit_sync`.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        self.tables, _ = read_config_speed(path)
        self.source = str(path) if path is not None else "config_speed.txt"
        self._models: dict = {}

    def speed(self, job_type: str, p: int, w: int) -> float:
        model = self._models.get(job_type)
        if model is None:
            if job_type not in self.tables:
                raise InputError(self.source, f"job type '{job_type}'", f"a model of the measured table {sorted(self.tables)}",
                                 "not measured")
            model = self._models[job_type] = fit_sync(self.tables[job_type])
        return float(model.speed(p, w)[0])


class LayeredSpeed(_PerTypeCache):
    r"""The layered per-iteration time of MODELS.md §2.1: rate :math:`g(w,p) = 1/\tau(w,p)`.

    A job's profile is ``job.meta["profile"]`` (a :class:`dlsched.perf.layered.LayerProfile`)
    with global batch ``job.meta["batch"]``; otherwise the calibrated built-in profile of its job
    type (:func:`dlsched.perf.profiles.builtin`, DL2's eight models) at the measured batch.
    """

    def __init__(self, overlap: str = "layerwise") -> None:
        super().__init__()
        self.overlap = overlap
        self._own: dict[tuple, float] = {}
        self._profiles: dict[int, object] = {}

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        prof = job.meta.get("profile")
        if prof is None:
            return super().rate(job, placement, cluster)
        pw = _ps_and_workers(job, placement)
        if pw is None:
            return 0.0
        key = (id(prof), job.meta.get("batch"), *pw)
        r = self._own.get(key)
        if r is None:
            batch = job.meta.get("batch")
            if batch is None:
                raise InputError(f"job '{job.name}'", "meta.batch", "the global batch of a job with a layer profile", "none")
            # the profile is kept alive with its entry so that its id is never reused
            r = float(throughput(prof, batch, pw[1], pw[0], self.overlap))
            self._own[key] = r
            self._profiles[id(prof)] = prof
        return r

    def rate_key(self, job: Job):
        # a job with its own layer profile has a rate of its own
        return None if job.meta.get("profile") is not None else super().rate_key(job)

    def speed(self, job_type: str, p: int, w: int) -> float:
        return float(throughput(builtin(job_type), MEASURED_BATCH[job_type], w, p, self.overlap))


class ThroughputSpeed:
    r"""Gavel's measured per-GPU-type throughputs (MODELS.md §4.1) for heterogeneous clusters.

    A job of Gavel type i with n workers, worker k on a GPU of type g(k) (the cluster's
    ``gpu_type`` of its server), makes :math:`\sum_k h_{i,g(k)}(n) / n` steps/s with
    ``mixed="average"`` (the default): HETPLACE's proportional rule, each worker's share is its
    own throughput; with ``mixed="slowest"`` it makes :math:`n \min_k h_{i,g(k)}(n) / n`, the pace
    of synchronous training, where every step waits for the slowest worker (Gavel keeps a job on
    one type, where the two agree). :math:`h_{i,g}(n)` is the measured steps/s at scale factor n
    where Gavel measured it, else the calibrated model
    :math:`h_{i,g}(n) = n / (t_{i,g}(1) + c_i f(n))`, :math:`f(n) = 2(n-1)/n`
    (:func:`dlsched.perf.throughputs.calibrate`). Where Gavel's file records 0 (a failed
    measurement: ResNet-50 at batch 128 on K80 at 2, 4 and 8 GPUs), ``failed="model"`` (the
    default) uses the calibrated model as for an unmeasured scale, ``failed="cannot-run"`` gives
    those workers the rate 0, as Gavel's simulator does. On one GPU type at a measured n this is
    Gavel's own simulator's rate :math:`h_{i,g}(n)`. GPU type names match case-insensitively.
    """

    MIXED = ("average", "slowest")
    #: a placement runs at most the worker-weighted mean of its size's rates on each GPU type alone
    #: (either reading of a mix): what the type-aware LP bound needs (:func:`dlsched.sim.bounds.lp_lower_bound`)
    per_worker_types = True
    FAILED = ("model", "cannot-run")

    def __init__(self, path: str | Path | None = None, *, mixed: str = "average", failed: str = "model") -> None:
        if mixed not in self.MIXED:
            raise InputError("<argument>", "speed parameter mixed", f"one of {', '.join(self.MIXED)}", mixed)
        if failed not in self.FAILED:
            raise InputError("<argument>", "speed parameter failed", f"one of {', '.join(self.FAILED)}", failed)
        self.table = load_gavel(path)
        self.comm = calibrate(self.table).comm_seconds
        self.mixed, self.failed = mixed, failed
        self._cache: dict[tuple[str, int, tuple[tuple[str, int], ...]], float] = {}

    def per_worker(self, job_type: str, gpu_type: str, n: int) -> float:
        """:math:`h_{i,g}(n)/n`: one worker's steps/s in a job of n workers on GPUs of type g."""
        g = gpu_type.lower()
        h = self.table.steps.get((job_type, g, n))
        if h is not None:
            return h / n
        if self.failed == "cannot-run" and (job_type, g, n) in self.table.failed:
            return 0.0
        h1 = self.table.steps.get((job_type, g, 1))
        if h1 is None:
            if job_type not in self.table.job_types:
                raise InputError(self.table.source, f"job type '{job_type}'",
                                 f"a job type of the throughput table (e.g. {self.table.job_types[0]!r})", "not in the table")
            raise InputError(self.table.source, f"job type '{job_type}' on GPU type '{gpu_type}'",
                             f"a measured throughput (GPU types: {', '.join(self.table.gpu_types)})", "no measurement")
        return 1.0 / (1.0 / h1 + self.comm.get(job_type, 0.0) * float(ring_factor(n)))

    def rate_key(self, job: Job):
        """What :meth:`rate` reads of ``job`` (:func:`rate_key`): its type and whether it has PSs."""
        return job.job_type, job.uses_ps

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        n = placement.n_workers
        if n <= 0 or (job.uses_ps and placement.n_ps <= 0):
            return 0.0
        counts: dict[str, int] = {}
        for s, k in placement.workers.items():
            if k:
                counts[cluster.gpu_type[s]] = counts.get(cluster.gpu_type[s], 0) + int(k)
        key = (job.job_type, n, tuple(sorted(counts.items())))
        r = self._cache.get(key)
        if r is None:
            if self.mixed == "slowest":
                r = n * min(self.per_worker(job.job_type, g, n) for g in counts)
            else:
                r = sum(k * self.per_worker(job.job_type, g, n) for g, k in counts.items())
            self._cache[key] = r
        return r


    def pair_rates(self, job: Job, other: Job, placement: Placement, cluster: Cluster) -> tuple[float, float]:
        """Steps/s of ``job`` and ``other`` co-located on the same GPUs (``placement``: n workers each,
        all on one GPU type g): Gavel's measured pair, the entry of (job's type, n) on g under the key
        (other's type, n); (0, 0) where the two cannot share: the file records 0 for either, has no
        such pair, or the workers span GPU types (Gavel packs on one type)."""
        n = placement.n_workers
        types = {cluster.gpu_type[s].lower() for s, k in placement.workers.items() if k}
        if n <= 0 or len(types) != 1 or (job.uses_ps and placement.n_ps <= 0):
            return 0.0, 0.0
        a, b = self.table.pairs.get((job.job_type, other.job_type, types.pop(), n), (0.0, 0.0))
        return (a, b) if a > 0 and b > 0 else (0.0, 0.0)


class DurationSpeed:
    r"""Reproduces a recorded duration: rate :math:`K_j / d_j \cdot w / n_j` iterations/s.

    :math:`d_j` = ``job.meta["duration"]`` (seconds the job ran at its requested size
    :math:`n_j` = ``job.max_workers``), :math:`K_j` = ``job.iterations``; other sizes scale
    linearly in the workers w (the traces that record durations fix the size, so this is only an
    assumption for policies that resize them).
    """

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        pw = _ps_and_workers(job, placement)
        if pw is None:
            return 0.0
        d = job.meta.get(DURATION)
        if d is None or not (d > 0 and math.isfinite(d)):
            raise InputError(f"job '{job.name}'", f"meta.{DURATION}", "a recorded duration > 0 (seconds)", d)
        return job.iterations / d * pw[1] / job.max_workers


class Noisy:
    r"""``source``'s rate times :math:`\exp(\sigma Z - \sigma^2/2)` (mean 1, lognormal).

    Z ~ N(0, 1) is drawn from a generator seeded by (``seed``, the job's name, the placement's
    workers and PSs per server), so the same job with the same allocation always gets the same
    speed within a run and across runs, and a new allocation a new draw.
    """

    def __init__(self, source: SpeedSourceLike, sigma: float, seed: int = 0) -> None:
        if not (sigma >= 0 and math.isfinite(sigma)):
            raise InputError("<argument>", "sigma", "a finite noise level >= 0", sigma)
        self.source, self.sigma, self.seed = source, float(sigma), int(seed)
        self._cache: dict[tuple, float] = {}

    def factor(self, job: Job, placement: Placement) -> float:
        key = (job.name, tuple(sorted((s, k) for s, k in placement.workers.items() if k)),
               tuple(sorted((s, k) for s, k in placement.ps.items() if k)))
        f = self._cache.get(key)
        if f is None:
            digest = hashlib.blake2b(repr((self.seed, key)).encode(), digest_size=8).digest()
            z = np.random.default_rng(int.from_bytes(digest, "little")).standard_normal()
            f = self._cache[key] = math.exp(self.sigma * z - self.sigma ** 2 / 2)
        return f

    def rate(self, job: Job, placement: Placement, cluster: Cluster) -> float:
        r = self.source.rate(job, placement, cluster)
        return r * self.factor(job, placement) if r > 0 and self.sigma > 0 else r


SPEEDS: Mapping[str, Callable[..., SpeedSourceLike]] = {
    "table": TableSpeed,
    "layered": LayeredSpeed,
    "optimus": OptimusSpeed,
    "throughput": ThroughputSpeed,
    "duration": DurationSpeed,
}


#: the largest lognormal sigma (exp(sigma z - sigma^2 / 2) overflows a float near sigma = 37; at 5
#: a factor already spans e^-25 to e^12 for |z| < 3)
MAX_NOISE = 5.0


def make_speed(name: str, *, noise: float = 0.0, seed: int = 0, **kw) -> SpeedSourceLike:
    """The speed source ``name`` (``--speed`` of the CLI: one of :data:`SPEEDS`), with
    multiplicative lognormal ``noise`` (σ) seeded by ``seed`` if σ > 0; ``kw`` go to its constructor."""
    try:
        cls = SPEEDS[name]
    except KeyError:
        raise InputError("<argument>", "--speed", f"one of {', '.join(SPEEDS)}", name) from None
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0 <= noise <= MAX_NOISE:
        raise InputError("<argument>", "--speed-noise", f"a noise level sigma in [0, {MAX_NOISE:g}]", noise)
    accepted = [k for k, p in inspect.signature(cls).parameters.items() if p.kind is p.KEYWORD_ONLY]
    for k in kw:
        if k not in accepted:
            raise InputError("<argument>", f"--speed-param {k}",
                             f"a parameter of the {name} speed source ({', '.join(accepted) or 'it takes none'})", k)
    source = cls(**kw)
    return Noisy(source, noise, seed) if noise > 0 else source

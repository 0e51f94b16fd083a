r"""Seeded synthetic traces: DL2's job mix (MODELS.md §6) and a generic Poisson GPU trace.

**DL2's setting** (``shared/data/dl2/job_types.csv``, transcribed from DL2's ``trace.py`` and
``parameters.py``): 8 model types drawn uniformly; a job of type t trains
:math:`E_t = f_t \cdot E_{max} \cdot u` "epochs" (:math:`f_t` the file's
``epochs_fraction_of_max``, :math:`E_{max}` = 30,000, :math:`u` a jitter of ±10 % as in DL2's
non-fixed job lengths); workers and PSs hold the file's resource slots, with 8 slots per node and
resource and 1 GPU = 4 slots, so a worker of a GPU type needs 2 CPU slots and 1 GPU and a PS 2
CPU slots; PS architecture with at most 16 workers and 16 PSs (DL2's ``MAX_NUM_WORKERS``, which
bounds both counts).

*Iterations.* DL2's simulator advances a job by :math:`\text{speed} \cdot \Delta t /
\text{epoch\_size}` epochs, ``speed`` being the measured samples/s of ``config_speed.txt``
summed over the workers; so one DL2 "epoch" is ``epoch_size`` samples. We count iterations in
global batches of the measured table (B samples, ``dlsched.perf.speeds.SpeedTable.batch``):

.. math::  K_j = E_j \cdot \text{epoch\_size}_t / B_t, \qquad
           \text{iterations\_per\_epoch} = \text{epoch\_size}_t / B_t,

which with :class:`dlsched.sim.speed.TableSpeed` (rate Σ speeds / B iterations/s) gives exactly
DL2's simulated durations.

*Convergence.* Each job carries its true loss curve :math:`\ell(k) = 1/(\beta_0 k + \beta_1) +
\beta_2` (MODELS.md §5). Optimus declares convergence when the loss improves by less than δ over
a window of W steps; the improvement :math:`\ell(k-W) - \ell(k)` decreases in k, so the curve is
built (:func:`convergence_curve`) with a reducible loss left at :math:`K_j` of a fraction r of
the initial one and δ is recorded as the improvement at :math:`K_j`
(``meta["convergence_delta"]``, ``meta["convergence_window"]``); :func:`converged_step` then
returns :math:`K_j` exactly. DL2 measured no loss curves: the initial loss and floor are drawn.

**Generic trace** (:func:`poisson_trace`): Poisson arrivals, jobs of a fixed number of GPUs
(one GPU per worker) whose work is a duration at that size; by the duration convention of
:mod:`dlsched.instance.traces` a job has ``iterations = duration`` (1 iteration/s at its requested
size, :class:`dlsched.sim.speed.DurationSpeed`).

Every random choice draws from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster, server_count
from dlsched.instance.workload import Convergence, Job, Trace, job_count
from dlsched.perf.convergence import Criterion, converged_step as perf_converged_step
from dlsched.perf.speeds import read_config_speed

#: DL2's parameters.py: MAX_NUM_EPOCHS, MAX_NUM_WORKERS (bounds workers and PSs), TS_DURATION,
#: NUM_RESR_SLOTS per node and resource, GPU slots per GPU, MAX_ARRVS_PER_TS (default setting)
DL2_MAX_EPOCHS = 30_000
DL2_MAX_WORKERS = 16
DL2_MAX_PS = 16
DL2_SLOT_SECONDS = 1200.0
DL2_SLOTS_PER_NODE = 8
DL2_GPU_SLOTS_PER_GPU = 4
DL2_ARRIVALS_PER_SLOT = 3
DL2_DEFAULT_NODES = 96
#: key of a job's recorded duration (seconds at its requested size) in ``Job.meta``
DURATION = "duration"

_JOB_TYPE_COLUMNS = ("model", "local_comp_time_s", "model_size_mb", "epoch_size", "inter_bw_mb_s",
                     "intra_bw_mb_s", "worker_cpu_slots", "worker_gpu_slots", "ps_cpu_slots", "ps_gpu_slots",
                     "epochs_fraction_of_max")


@dataclass(frozen=True)
class DL2JobType:
    """One row of DL2's job-type table (units of the file: seconds, MB, MB/s, resource slots)."""

    model: str
    local_comp_time_s: float
    model_size_mb: float
    epoch_size: float
    inter_bw_mb_s: float
    intra_bw_mb_s: float
    worker_cpu_slots: float
    worker_gpu_slots: float
    ps_cpu_slots: float
    ps_gpu_slots: float
    epochs_fraction_of_max: float

    def worker_demand(self) -> dict[str, float]:
        """A worker's CPU slots and GPUs (a type with 0 GPU slots trains on CPUs)."""
        return {"cpu": self.worker_cpu_slots, "gpu": self.worker_gpu_slots / DL2_GPU_SLOTS_PER_GPU}

    def ps_demand(self) -> dict[str, float]:
        """A PS's CPU slots (and GPUs, none in DL2's table)."""
        d = {"cpu": self.ps_cpu_slots, "gpu": self.ps_gpu_slots / DL2_GPU_SLOTS_PER_GPU}
        return {r: v for r, v in d.items() if v > 0}


def read_dl2_job_types(path: str | Path | None = None) -> tuple[DL2JobType, ...]:
    """DL2's job-type table (default ``shared/data/dl2/job_types.csv``), in the file's order."""
    if path is None:
        path = data_dir() / "dl2" / "job_types.csv"
    return _read_job_types(str(path))


@lru_cache(maxsize=4)
def _read_job_types(path: str) -> tuple[DL2JobType, ...]:
    try:
        fh = open(path, newline="")
    except FileNotFoundError:
        raise InputError(path, "file", "DL2's job_types.csv", "no such file") from None
    with fh:
        reader = csv.DictReader(fh)
        missing = [c for c in _JOB_TYPE_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise InputError(path, "line 1", f"columns {', '.join(_JOB_TYPE_COLUMNS)}", f"missing {missing}")
        out = []
        for ln, row in enumerate(reader, 2):
            try:
                vals = [float(row[c]) for c in _JOB_TYPE_COLUMNS[1:]]
            except (TypeError, ValueError):
                raise InputError(path, f"line {ln}", "numeric job-type fields", row) from None
            if not all(math.isfinite(v) and v >= 0 for v in vals) or vals[2] <= 0:
                raise InputError(path, f"line {ln}", "finite values >= 0 and epoch_size > 0", row)
            out.append(DL2JobType(row["model"], *vals))
    if not out:
        raise InputError(path, "line 2", "at least one job type", "none")
    return tuple(out)


@lru_cache(maxsize=4)
def _global_batches(path: str | None) -> dict[str, float]:
    tables, _ = read_config_speed(path)
    return {m: t.batch for m, t in tables.items()}


def convergence_curve(iterations: float, window: float, remaining: float, initial_loss: float,
                      floor: float, noise: float = 0.0) -> tuple[Convergence, float]:
    r"""The curve :math:`\ell(k) = 1/(\beta_0 k + \beta_1) + \beta_2` with :math:`\ell(0)` =
    ``initial_loss``, :math:`\beta_2` = ``floor`` and :math:`(\ell(K) - \beta_2)/(\ell(0) - \beta_2)`
    = ``remaining`` at K = ``iterations``; and δ = ℓ(K − W) − ℓ(K), the improvement over the last
    window that Optimus's convergence test (MODELS.md §5) compares with.
    """
    if not (0 < remaining < 1 and initial_loss > floor >= 0 and 0 < window < iterations):
        raise InputError("<argument>", "convergence_curve", "0 < remaining < 1, initial_loss > floor >= 0, "
                         "0 < window < iterations", (remaining, initial_loss, floor, window, iterations))
    beta1 = 1.0 / (initial_loss - floor)
    beta0 = beta1 * (1.0 / remaining - 1.0) / iterations
    curve = Convergence(beta0, beta1, floor, noise)
    return curve, float(curve.loss(iterations - window) - curve.loss(iterations))


def converged_step(curve: Convergence, delta: float, window: float) -> float:
    """The step at which ``curve`` has converged by the (δ, W) test: the one closed form of
    :func:`dlsched.perf.convergence.converged_step`, which Optimus applies to its fitted curves."""
    return perf_converged_step((curve.beta0, curve.beta1, curve.beta2), Criterion(delta, window))


def _poisson_arrivals(rng: np.random.Generator, n_jobs: int, arrival_rate: float, slot_seconds: float | None) -> np.ndarray:
    """Arrival times of a Poisson process of ``arrival_rate`` jobs/s; with ``slot_seconds``,
    DL2's slotted form (a Poisson number of jobs at the start of each slot)."""
    if not (arrival_rate > 0 and math.isfinite(arrival_rate)):
        raise InputError("<argument>", "arrival_rate", "a finite rate > 0 (jobs per second)", arrival_rate)
    times = np.cumsum(rng.exponential(1.0 / arrival_rate, n_jobs))
    if slot_seconds is None:
        return times
    if not (slot_seconds > 0 and math.isfinite(slot_seconds)):
        raise InputError("<argument>", "slot_seconds", "a finite slot length > 0", slot_seconds)
    # the counts of a Poisson process in disjoint slots are independent Poisson(rate * slot)
    return np.floor(times / slot_seconds) * float(slot_seconds)


def dl2_trace(n_jobs: int, seed: int, arrival_rate: float = DL2_ARRIVALS_PER_SLOT / DL2_SLOT_SECONDS, *,
              slot_seconds: float | None = None, max_epochs: float = DL2_MAX_EPOCHS, length_jitter: float = 0.1,
              types: tuple[str, ...] | None = None, max_workers: int = DL2_MAX_WORKERS, max_ps: int = DL2_MAX_PS,
              remaining: float = 0.05, window_fraction: float = 0.02, loss_noise: float = 0.02,
              job_types_path: str | Path | None = None, speed_path: str | Path | None = None) -> Trace:
    """DL2's synthetic job mix (module docstring): ``n_jobs`` PS jobs, Poisson arrivals of
    ``arrival_rate`` jobs/s (default DL2's 3 per 1,200 s slot; ``slot_seconds`` puts them at slot
    starts as DL2's simulator does), types uniform over ``types`` (default all 8)."""
    n_jobs = job_count(n_jobs)
    if not (0 <= length_jitter < 1):
        raise InputError("<argument>", "length_jitter", "a fraction in [0, 1)", length_jitter)
    table = {t.model: t for t in read_dl2_job_types(job_types_path)}
    batches = _global_batches(None if speed_path is None else str(speed_path))
    names = tuple(types) if types else tuple(table)
    for name in names:
        if name not in table or name not in batches:
            raise InputError("<argument>", "types", f"DL2 job types with a measured speed {sorted(set(table) & set(batches))}", name)
    rng = np.random.default_rng(seed)
    arrivals = _poisson_arrivals(rng, n_jobs, arrival_rate, slot_seconds)
    kinds = rng.integers(0, len(names), n_jobs)
    jitter = rng.uniform(1 - length_jitter, 1 + length_jitter, n_jobs)
    initial = rng.uniform(2.0, 8.0, n_jobs)
    floor = rng.uniform(0.05, 0.5, n_jobs)
    jobs = []
    for j in range(n_jobs):
        t = table[names[kinds[j]]]
        per_epoch = t.epoch_size / batches[t.model]
        epochs = max(1.0, t.epochs_fraction_of_max * max_epochs * float(jitter[j]))
        K = epochs * per_epoch
        window = max(1.0, window_fraction * K)
        curve, delta = convergence_curve(K, window, remaining, float(floor[j] + initial[j]), float(floor[j]),
                                         loss_noise)
        jobs.append(Job(f"dl2-{j}", float(arrivals[j]), t.model, K, t.worker_demand(), t.ps_demand(),
                        min_workers=1, max_workers=max_workers, max_ps=max_ps, iterations_per_epoch=per_epoch,
                        convergence=curve,
                        meta={"epochs": epochs, "convergence_delta": delta, "convergence_window": window}))
    return Trace(tuple(jobs), f"dl2_trace(n_jobs={n_jobs}, seed={seed}, arrival_rate={arrival_rate:g})")


#: the bandwidths a Cluster takes (Gb/s)
BANDWIDTHS = ("intra_server_gbps", "inter_server_gbps", "inter_rack_gbps")


def dl2_cluster(n_servers: int = DL2_DEFAULT_NODES, servers_per_rack: int | None = None, **bandwidths: float) -> Cluster:
    """DL2's nodes: 8 CPU slots and 8 GPU slots (= 2 GPUs, 1 GPU = 4 slots) each; ``bandwidths``:
    the Cluster's ``intra_server_gbps``, ``inter_server_gbps``, ``inter_rack_gbps``."""
    n_servers = server_count(n_servers, where="n_servers")
    other = sorted(set(bandwidths) - set(BANDWIDTHS))
    if other:
        raise InputError("<argument>", other[0], f"n_servers, servers_per_rack or a bandwidth ({', '.join(BANDWIDTHS)})",
                         other[0])
    return Cluster.homogeneous(n_servers, {"cpu": float(DL2_SLOTS_PER_NODE),
                                           "gpu": DL2_SLOTS_PER_NODE / DL2_GPU_SLOTS_PER_GPU},
                               servers_per_rack=servers_per_rack, **bandwidths)


def gpu_cluster(n_servers: int, gpus_per_server: int = 4) -> Cluster:
    """``n_servers`` identical servers of ``gpus_per_server`` GPUs, one resource (``gpu``): the cluster
    :func:`poisson_trace`'s jobs ask for."""
    n_servers = server_count(n_servers, where="n_servers")
    return Cluster.homogeneous(n_servers, {"gpu": gpus_per_server}, source=f"{n_servers} x {gpus_per_server} GPUs")


def poisson_trace(n_jobs: int, seed: int, arrival_rate: float = 1 / 60, *, gpus: tuple[int, ...] = (1, 2, 4, 8),
                  mean_duration: float = 3600.0, sigma: float = 1.0, job_type: str = "synthetic") -> Trace:
    """A generic trace for scale tests: Poisson arrivals (``arrival_rate`` jobs/s); each job asks
    for a fixed number of GPUs drawn uniformly from ``gpus`` (one worker per GPU, all-reduce) and
    runs a lognormal duration of mean ``mean_duration`` seconds at that size (``iterations =
    duration``, the duration convention)."""
    n_jobs = job_count(n_jobs)
    if not gpus or min(gpus) < 1:
        raise InputError("<argument>", "gpus", "GPU counts >= 1", gpus)
    if not (mean_duration > 0 and sigma >= 0):
        raise InputError("<argument>", "mean_duration, sigma", "mean_duration > 0, sigma >= 0", (mean_duration, sigma))
    rng = np.random.default_rng(seed)
    arrivals = _poisson_arrivals(rng, n_jobs, arrival_rate, None)
    size = rng.choice(np.asarray(gpus, dtype=int), n_jobs)
    # lognormal with the given mean: mu = ln(mean) - sigma^2 / 2
    duration = rng.lognormal(math.log(mean_duration) - sigma ** 2 / 2, sigma, n_jobs)
    jobs = tuple(Job(f"job-{j}", float(arrivals[j]), job_type, float(duration[j]), {"gpu": 1.0},
                     min_workers=int(size[j]), max_workers=int(size[j]), meta={DURATION: float(duration[j])})
                 for j in range(n_jobs))
    return Trace(jobs, f"poisson_trace(n_jobs={n_jobs}, seed={seed}, arrival_rate={arrival_rate:g})")

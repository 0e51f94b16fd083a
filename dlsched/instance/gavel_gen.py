r"""Seeded Gavel-style traces: the recipe of Gavel's simulator for generated jobs, and bursts of large jobs.

Source: stanford-futuredata/gavel @ c4fa400, ``scheduler/utils.py`` (``generate_job`` and the two
samplers before it), ``scheduler/job_table.py`` (the job types) and ``scheduler/scheduler.py``
(``simulate``: Poisson arrivals). Nothing of that code is used here; the distributions, in our words:

* **GPUs** (Gavel's "scale factor", sampled "from the Philly distribution"): with :math:`r \sim U(0, 1)`,
  1 GPU below 0.7, 2 GPUs for :math:`0.7 \le r \le 0.8`, 4 GPUs up to 0.95, 8 GPUs above:
  probabilities 0.70 / 0.10 / 0.15 / 0.05.
* **Job type**: uniform over Gavel's job table, 26 entries (ResNet-18 at batch 16-256, ResNet-50 at
  16-128, Transformer at 16-256, LM at 5-80, Recommendation at 512-8192, A3C, CycleGAN). A job of more
  than one GPU is drawn again until its type is one the table marks distributed (ResNet-18, ResNet-50,
  Transformer, LM: 19 entries), so it is uniform over those.
* **Duration** on a V100 (seconds): with probability 0.2, :math:`60 \cdot 10^{U(3, 4)}` (16.7 h to 167 h),
  else :math:`60 \cdot 10^{U(1.5, 3)}` (32 min to 16.7 h).
* **Work**: ``iterations`` = duration :math:`\times\ h_{i,\mathrm{v100}}(n)`, the type's measured steps/s
  alone on n V100s (``simulation_throughputs.json``); so the job takes its duration on V100s.
* **Arrivals**: the first job at 0, then exponential gaps of mean :math:`3600/\lambda` s, :math:`\lambda`
  jobs an hour (Gavel's ``lam`` is that mean gap in seconds).

**Bursts** (ours, not Gavel's; off by default): ``bursts`` B groups of ``burst_jobs`` K jobs each, the
group's start uniform over the span of the other arrivals, its jobs within ``burst_seconds`` of it,
each of 8 GPUs with probability 0.85 and 32 GPUs else (a burst of 14 asks for 162 GPUs on average),
type uniform over the distributed entries, duration as above. This is the situation where Gavel's
msr traces (Philly's sizes, up to 32 GPUs) put many large jobs on a 3-type cluster at once and its
fast GPUs do not suffice. At 32 GPUs, which Gavel never measured, the V100 rate is the calibrated
model that :class:`dlsched.sim.speed.ThroughputSpeed` runs such a job at (:func:`v100_steps`).

Every random choice draws from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.workload import Job, Trace, job_count
from dlsched.perf.throughputs import ThroughputTable, calibrate, load_gavel, ring_factor

#: Gavel's Philly sizes and their probabilities (``_generate_scale_factor``)
PHILLY_GPUS = (1, 2, 4, 8)
PHILLY_CUTS = (0.7, 0.8, 0.95)
#: the job families Gavel's job table marks distributed (may run on more than one GPU)
DISTRIBUTED = ("ResNet-18", "ResNet-50", "Transformer", "LM")
#: the long-job probability and the two log10-uniform ranges of minutes (``_generate_duration``)
LONG_SHARE = 0.2
SHORT_LOG10_MINUTES = (1.5, 3.0)
LONG_LOG10_MINUTES = (3.0, 4.0)
#: reference GPU type of a job's duration (``reference_worker_type``)
REFERENCE = "v100"
#: a burst job's GPUs and their probabilities
BURST_GPUS = (8, 32)
BURST_BIG_SHARE = 0.15
#: the options a ``gavel:N:SEED:KEY=VALUE,...`` spec takes, with their types
OPTIONS = {"rate": float, "bursts": int, "burst_jobs": int, "burst_seconds": float}


def philly_gpus(r: np.ndarray) -> np.ndarray:
    """GPUs of jobs drawn with uniforms ``r`` by Gavel's Philly rule (module docstring), its bounds as
    Gavel's: 2 GPUs on [0.7, 0.8], 4 on (0.8, 0.95], 8 above."""
    r = np.asarray(r)
    lo, mid, hi = PHILLY_CUTS
    return np.asarray(PHILLY_GPUS)[(r >= lo).astype(int) + (r > mid) + (r > hi)]


def durations(rng: np.random.Generator, n: int) -> np.ndarray:
    r"""``n`` durations (s on V100s): :math:`60 \cdot 10^{U(3,4)}` with probability 0.2, else
    :math:`60 \cdot 10^{U(1.5,3)}`."""
    long = rng.random(n) >= 1.0 - LONG_SHARE
    lo = np.where(long, LONG_LOG10_MINUTES[0], SHORT_LOG10_MINUTES[0])
    hi = np.where(long, LONG_LOG10_MINUTES[1], SHORT_LOG10_MINUTES[1])
    return 60.0 * 10.0 ** rng.uniform(lo, hi)


def _positive(name: str, value, kind, *, zero: bool = False):
    ok = (isinstance(value, kind) or (kind is float and isinstance(value, int))) and not isinstance(value, bool)
    if ok and kind is float:
        ok = math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        raise InputError("<argument>", f"gavel trace option {name}",
                         f"{'an integer' if kind is int else 'a finite number'} {'>= 0' if zero else '> 0'}", value)
    return value


def v100_steps(table: ThroughputTable, comm: dict[str, float], job_type: str, n: int) -> float:
    r"""Steps/s of ``job_type`` alone on n V100s: Gavel's measurement, else the calibrated
    :math:`n / (t(1) + c_i f(n))` that :meth:`dlsched.sim.speed.ThroughputSpeed.per_worker` runs it at
    (``comm`` = :func:`~dlsched.perf.throughputs.calibrate`'s ``comm_seconds``; equal, tested)."""
    h = table.steps.get((job_type, REFERENCE, n))
    if h is not None:
        return h
    return n / (1.0 / table.steps[(job_type, REFERENCE, 1)] + comm.get(job_type, 0.0) * float(ring_factor(n)))


def gavel_trace(n_jobs: int, seed: int = 0, rate: float = 1.0, *, bursts: int = 0, burst_jobs: int = 14,
                burst_seconds: float = 36.0, throughputs: ThroughputTable | None = None) -> Trace:
    """``n_jobs`` Gavel-style jobs (module docstring), ``rate`` jobs an hour, of which ``bursts`` x
    ``burst_jobs`` arrive in bursts of large jobs; ``throughputs``: Gavel's table (default: its file)."""
    n_jobs = job_count(n_jobs)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError("<argument>", "gavel trace seed", "an integer >= 0", seed)
    rate = _positive("rate", rate, float)
    bursts = _positive("bursts", bursts, int, zero=True)
    burst_jobs = _positive("burst_jobs", burst_jobs, int)
    burst_seconds = _positive("burst_seconds", burst_seconds, float, zero=True)
    if bursts * burst_jobs > n_jobs:
        raise InputError("<argument>", "gavel trace option bursts", f"bursts x burst_jobs at most the {n_jobs} jobs",
                         f"{bursts} x {burst_jobs}")
    table = throughputs or load_gavel()
    comm = calibrate(table).comm_seconds
    types = table.job_types
    distributed = tuple(t for t in types if t.split(" (")[0] in DISTRIBUTED)
    rng = np.random.default_rng(seed)
    n_plain = n_jobs - bursts * burst_jobs
    gaps = rng.exponential(3600.0 / rate, n_plain)
    arrivals = np.r_[0.0, np.cumsum(gaps[1:])] if n_plain else np.zeros(0)
    gpus = philly_gpus(rng.random(n_plain))
    any_type = rng.integers(0, len(types), n_plain)
    dist_type = rng.integers(0, len(distributed), n_plain)
    kinds = [types[a] if g == 1 else distributed[b] for g, a, b in zip(gpus.tolist(), any_type.tolist(), dist_type.tolist())]
    span = float(arrivals[-1]) if n_plain else 0.0
    starts = rng.uniform(0.0, span, bursts)
    b_arr = (starts[:, None] + rng.uniform(0.0, burst_seconds, (bursts, burst_jobs))).ravel()
    b_gpus = np.where(rng.random(b_arr.size) < BURST_BIG_SHARE, BURST_GPUS[1], BURST_GPUS[0])
    b_kinds = [distributed[b] for b in rng.integers(0, len(distributed), b_arr.size).tolist()]
    seconds = durations(rng, n_jobs)
    arr = np.r_[arrivals, b_arr]
    size = np.r_[gpus, b_gpus].astype(int)
    kind = kinds + b_kinds
    burst = np.r_[np.zeros(n_plain, dtype=bool), np.ones(b_arr.size, dtype=bool)]
    jobs = []
    for new, j in enumerate(np.argsort(arr, kind="stable").tolist()):
        n = int(size[j])
        steps = float(seconds[j]) * v100_steps(table, comm, kind[j], n)
        jobs.append(Job(f"gavel-{new}", float(arr[j]), kind[j], steps, {"gpu": 1.0}, min_workers=n, max_workers=n,
                        meta={"v100_seconds": float(seconds[j]), "burst": bool(burst[j])}))
    return Trace(tuple(jobs), f"gavel_trace(n_jobs={n_jobs}, seed={seed}, rate={rate:g}, bursts={bursts}, "
                              f"burst_jobs={burst_jobs})")


def parse_options(text: str | None) -> dict:
    """``KEY=VALUE,...`` of a ``gavel:N:SEED:...`` spec as :func:`gavel_trace`'s keywords (:data:`OPTIONS`)."""
    out: dict = {}
    for item in (text or "").split(","):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if key not in OPTIONS or not eq:
            raise InputError("<argument>", "gavel trace option", f"KEY=VALUE with KEY one of {', '.join(OPTIONS)}", item)
        try:
            out[key] = OPTIONS[key](value)
        except ValueError:
            raise InputError("<argument>", f"gavel trace option {key}",
                             "an integer" if OPTIONS[key] is int else "a number", value) from None
    return out

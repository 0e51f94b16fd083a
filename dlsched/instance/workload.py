"""Jobs and traces replayed by the simulator (MODELS.md §1 job j, §5 Optimus, §6 DL2).

A job needs ``iterations`` steps of training (K_j); a worker holds ``worker_demand`` and a
parameter server ``ps_demand`` (empty for all-reduce jobs, which have no PSs). Elastic jobs
(Optimus, DL2) may run with ``min_workers..max_workers`` workers and ``0..max_ps`` PSs; a job
from a trace that fixes its GPU count has ``min_workers == max_workers``. Times are seconds
since the start of the trace.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from dlsched.errors import InputError

#: the most jobs a trace may grow to by inflation (each job is a Python object of about 1 KiB; the
#: largest reference trace has 16,000)
MAX_JOBS = 1_000_000


def job_count(n, source: str = "<argument>", where: str = "n_jobs") -> int:
    """``n`` jobs, refused with an :class:`InputError` unless 1 <= n <= :data:`MAX_JOBS`."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= MAX_JOBS:
        raise InputError(source, where, f"1 to {MAX_JOBS:,} jobs", n)
    return int(n)


@dataclass(frozen=True, eq=False)
class Convergence:
    r"""A job's true training-loss curve, :math:`\ell(k) = 1/(\beta_0 k + \beta_1) + \beta_2` (MODELS.md §5).

    The job has converged (and completes) after ``Job.iterations`` steps; the simulator emits
    noisy (step, loss) points from this curve for policies that fit it online (Optimus).
    """

    beta0: float
    beta1: float
    beta2: float = 0.0
    noise: float = 0.0            # relative standard deviation of an observed loss

    def loss(self, k):
        return 1.0 / (self.beta0 * k + self.beta1) + self.beta2


@dataclass(frozen=True, eq=False)
class Job:
    """One training job of a trace. See the module docstring for the units."""

    name: str
    arrival: float
    job_type: str
    iterations: float
    worker_demand: Mapping[str, float]
    ps_demand: Mapping[str, float] = field(default_factory=dict)
    min_workers: int = 1
    max_workers: int = 1
    max_ps: int = 0
    #: workers one PS can serve (PS bandwidth / worker bandwidth, MODELS.md §3.1 b_i Σy ≤ B_i Σz);
    #: None: a PS per worker, the worker+PS bundle of §7
    workers_per_ps: float | None = None
    weight: float = 1.0
    iterations_per_epoch: float | None = None
    convergence: Convergence | None = None
    #: utility of the job's completion time (seconds after arrival), e.g. an OASiS sigmoid (§3.3)
    utility: Callable[[float], float] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def uses_ps(self) -> bool:
        """PS architecture (needs at least one PS to run) rather than all-reduce."""
        return self.max_ps > 0

    @property
    def epochs(self) -> float | None:
        return None if not self.iterations_per_epoch else self.iterations / self.iterations_per_epoch

    def validate(self, source: str, where: str) -> None:
        """Raise InputError naming ``source`` and ``where`` (e.g. ``line 12``) for an impossible job."""
        def bad(field_: str, expected: str, found: object):
            raise InputError(source, f"{where}.{field_}", expected, found)

        if not (math.isfinite(self.arrival) and self.arrival >= 0):
            bad("arrival", "a finite time >= 0", self.arrival)
        if not (math.isfinite(self.iterations) and self.iterations > 0):
            bad("iterations", "a finite number of steps > 0", self.iterations)
        if not (1 <= self.min_workers <= self.max_workers):
            bad("workers", "1 <= min_workers <= max_workers", (self.min_workers, self.max_workers))
        if self.max_ps < 0:
            bad("max_ps", "a count >= 0", self.max_ps)
        if self.workers_per_ps is not None and not (math.isfinite(self.workers_per_ps) and self.workers_per_ps > 0):
            bad("workers_per_ps", "a finite number of workers > 0", self.workers_per_ps)
        if not (math.isfinite(self.weight) and self.weight > 0):
            bad("weight", "a finite weight > 0", self.weight)
        for kind, demand in (("worker_demand", self.worker_demand), ("ps_demand", self.ps_demand)):
            for r, v in demand.items():
                if not (math.isfinite(float(v)) and float(v) >= 0):
                    bad(f"{kind}.{r}", "a finite amount >= 0", v)


@dataclass(frozen=True, eq=False)
class Trace:
    """Jobs in order of arrival; ``source`` names the file (or the generator and its seed)."""

    jobs: tuple[Job, ...]
    source: str = "<trace>"

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))
        if not self.jobs:
            raise InputError(self.source, "jobs", "at least one job", "an empty trace")
        names: set[str] = set()
        last = -math.inf
        for i, job in enumerate(self.jobs):
            job.validate(self.source, f"jobs[{i}]")
            if job.name in names:
                raise InputError(self.source, f"jobs[{i}].name", "a unique job name", job.name)
            names.add(job.name)
            if job.arrival < last:
                raise InputError(self.source, f"jobs[{i}].arrival", f"arrivals in order (>= {last})", job.arrival)
            last = job.arrival

    def __len__(self) -> int:
        return len(self.jobs)

    @classmethod
    def sorted(cls, jobs: Sequence[Job], source: str = "<trace>") -> "Trace":
        """A trace of ``jobs`` put in order of arrival (stable: ties keep their given order)."""
        return cls(tuple(sorted(jobs, key=lambda j: j.arrival)), source)

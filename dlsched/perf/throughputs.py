r"""Measured throughputs of DL job types on GPU types (Gavel), and the §4.1 calibration.

MODELS.md §4.1. Source: ``gavel/simulation_throughputs.json`` (shared/data/README.md). The file
maps a GPU type (``k80``, ``p100``, ``v100``; the ``*_unconsolidated`` copies are ignored) and a
key ``"('<job type>', <scale factor>)"`` to measured steps per second, alone under the key
``"null"``, and co-located with another job (space sharing: both on the same GPUs) under that
job's key: ``[this job's steps/s, the other's]``, 0 where the two cannot share
(:attr:`ThroughputTable.pairs`).

Interpretation (docs/hetplace.md): a job type ``"ResNet-50 (batch size 64)"`` runs with a
per-worker batch :math:`b` = 64; at scale factor :math:`n` the measured value :math:`h(n)` is the
job's steps per second summed over its n data-parallel workers, each step processing b samples.
So the job's sample rate is :math:`b\,h(n)` and one synchronous iteration (every worker does
one step) takes :math:`t(n) = n / h(n)` seconds. A3C and CycleGAN carry no batch size; their
"sample" is one step (b = 1).

===================  ===============================================================
symbol               meaning
===================  ===============================================================
:math:`\rho_{i,g}`   samples/s of job type i on one GPU of type g: :math:`b_i h_{i,g}(1)`
:math:`t_{i,g}(n)`   measured iteration time at scale factor n: :math:`n / h_{i,g}(n)`
:math:`f(n)`         ring all-reduce volume factor :math:`2(n-1)/n`
:math:`c_i`          fitted communication seconds per unit of f: model
                     :math:`\hat t_{i,g}(n) = t_{i,g}(1) + c_i f(n)`
:math:`D_i`          model size implied by the fit: :math:`c_i \cdot r_{\mathrm{cal}}`
===================  ===============================================================
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dlsched.data import data_dir, literal
from dlsched.errors import InputError

GPU_TYPES = ("k80", "p100", "v100")
SCALE_FACTORS = (1, 2, 4, 8)
_BATCH = re.compile(r"batch size (\d+)")


def batch_size(job_type: str) -> int:
    """Per-worker batch b parsed from a Gavel job-type name (1 when the name has none)."""
    m = _BATCH.search(job_type)
    return int(m.group(1)) if m else 1


@dataclass
class ThroughputTable:
    """Steps/s ``steps[(job_type, gpu_type, scale_factor)]`` measured alone (missing = not measured);
    ``failed``: the keys the file records as 0 (the measurement failed: the job cannot run there);
    ``pairs[(job_type, other_type, gpu_type, scale_factor)]``: (this job's steps/s, the other's) when
    the two share the same GPUs (missing = not measured)."""

    steps: dict[tuple[str, str, int], float]
    source: str = "<memory>"
    failed: frozenset[tuple[str, str, int]] = frozenset()
    pairs: dict[tuple[str, str, str, int], tuple[float, float]] = field(default_factory=dict)
    job_types: tuple[str, ...] = field(init=False)
    gpu_types: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.job_types = tuple(sorted({k[0] for k in self.steps}))
        self.gpu_types = tuple(g for g in GPU_TYPES if any(k[1] == g for k in self.steps)) + tuple(
            sorted({k[1] for k in self.steps} - set(GPU_TYPES)))

    def rho(self, job_type: str, gpu_type: str) -> float:
        r""":math:`\rho_{i,g}` in samples/s; a clear error for an unknown job type, GPU type or a zero."""
        if job_type not in self.job_types:
            raise InputError(self.source, f"job type '{job_type}'", f"a job type of the throughput table ({len(self.job_types)} known, e.g. {self.job_types[0]!r})", "not in the table")
        h = self.steps.get((job_type, gpu_type, 1))
        if h is None:
            raise InputError(self.source, f"job type '{job_type}' on GPU type '{gpu_type}'", f"a measured throughput (GPU types: {', '.join(self.gpu_types)})", "no measurement")
        if not h > 0:
            raise InputError(self.source, f"job type '{job_type}' on GPU type '{gpu_type}'", "a positive throughput", h)
        return batch_size(job_type) * h

    def rho_row(self, job_type: str, gpu_types: tuple[str, ...]) -> np.ndarray:
        return np.array([self.rho(job_type, g) for g in gpu_types])

    def scale_factors(self, job_type: str) -> tuple[int, ...]:
        return tuple(sorted({k[2] for k, v in self.steps.items() if k[0] == job_type and v > 0}))


def load_gavel(path: str | Path | None = None) -> ThroughputTable:
    """Read ``simulation_throughputs.json`` (default: the shared reference data)."""
    if path is None:
        path = data_dir() / "gavel" / "simulation_throughputs.json"
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), "file", "the Gavel throughput file", "no such file") from None
    steps: dict[tuple[str, str, int], float] = {}
    failed: set[tuple[str, str, int]] = set()
    pairs: dict[tuple[str, str, str, int], tuple[float, float]] = {}
    for gpu, table in doc.items():
        if gpu.endswith("_unconsolidated"):
            continue
        for key, entry in table.items():
            try:
                job_type, sf = literal(key)
            except (ValueError, SyntaxError):
                raise InputError(str(path), f"$.{gpu}[{key!r}]", "a key \"('<job type>', <scale factor>)\"", key) from None
            alone = entry.get("null") if isinstance(entry, dict) else None
            if alone is None:
                raise InputError(str(path), f"$.{gpu}[{key!r}].null", "the isolated throughput", "no such field")
            # zeros are failed measurements (e.g. ResNet-50 batch 128 on K80 at scale > 1)
            if alone > 0:
                steps[(job_type, gpu, int(sf))] = float(alone)
            else:
                failed.add((job_type, gpu, int(sf)))
            for other, both in entry.items():
                if other == "null":
                    continue
                try:
                    other_type, other_sf = literal(other)
                    pair = (float(both[0]), float(both[1]))
                except (ValueError, SyntaxError, TypeError, IndexError):
                    raise InputError(str(path), f"$.{gpu}[{key!r}][{other!r}]",
                                     "a co-located pair \"('<job type>', <scale factor>)\": [steps/s, steps/s]", both) from None
                if int(other_sf) == int(sf):
                    pairs[(job_type, other_type, gpu, int(sf))] = pair
    return ThroughputTable(steps, str(path), frozenset(failed), pairs)


# ------------------------------------------------------------------------------ calibration

def ring_factor(n) -> np.ndarray:
    """f(n) = 2 (n - 1) / n: bytes each worker sends per byte of model in a ring all-reduce."""
    n = np.asarray(n, dtype=float)
    return 2.0 * (n - 1.0) / n


@dataclass(frozen=True)
class Calibration:
    """Fitted communication term per job type and the model's error at each scale factor."""

    comm_seconds: dict[str, float]                      # c_i
    rel_error: dict[tuple[str, int], float]             # mean |predicted/measured - 1| over GPU types
    points: int

    def model_size_mb(self, job_type: str, calibration_gbps: float) -> float:
        r""":math:`D_i = c_i r_{\mathrm{cal}}` in MB (1 Gbps moves 125 MB/s)."""
        return self.comm_seconds[job_type] * calibration_gbps * 125.0

    def error_by_scale(self) -> dict[int, float]:
        """Mean relative throughput error over job types, per scale factor 2, 4, 8."""
        out = {}
        for sf in SCALE_FACTORS[1:]:
            errs = [e for (jt, s), e in self.rel_error.items() if s == sf]
            out[sf] = float(np.mean(errs)) if errs else float("nan")
        return out


def calibrate(table: ThroughputTable) -> Calibration:
    r"""Fit :math:`c_i \ge 0` per job type to the multi-GPU measurements (MODELS.md §4.1).

    Minimises :math:`\sum_{g,n>1} ((t_{i,g}(1) + c_i f(n)) / t_{i,g}(n) - 1)^2` (relative error,
    so that fast and slow GPU types weigh alike) in closed form, clipped at 0: a few
    measurements are super-linear (e.g. ResNet-18 on V100 at scale factor 2), which no
    non-negative communication term can reproduce; their error is reported, not hidden.
    """
    comm, err, points = {}, {}, 0
    for jt in table.job_types:
        rows = []  # (t1, tn, f(n), n, gpu)
        for g in table.gpu_types:
            h1 = table.steps.get((jt, g, 1))
            if h1 is None:
                continue
            for n in SCALE_FACTORS[1:]:
                hn = table.steps.get((jt, g, n))
                if hn is not None:
                    rows.append((1.0 / h1, n / hn, float(ring_factor(n)), n))
        if not rows:
            comm[jt] = 0.0
            continue
        t1, tn, f, n = (np.array(c) for c in zip(*rows))
        w = 1.0 / tn**2
        c = max(0.0, float(np.sum(w * f * (tn - t1)) / np.sum(w * f * f)))
        comm[jt] = c
        pred_h = n / (t1 + c * f)
        rel = np.abs(pred_h / (n / tn) - 1.0)
        for sf in SCALE_FACTORS[1:]:
            if np.any(n == sf):
                err[(jt, sf)] = float(rel[n == sf].mean())
        points += len(rows)
    return Calibration(comm, err, points)

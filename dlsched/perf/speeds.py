"""DL2's measured parameter-server speeds (``shared/data/dl2/config_speed.txt``), MODELS.md §5, §6.

Each line is a Python tuple ``(model, mode, global_batch, num_ps, num_workers, [speed of each
worker], [CPU of each PS], [CPU of each worker])``. Following DL2's own simulator, the job's
speed is the sum of its workers' speeds (samples/s); with the global batch B split over the
workers this is B / τ, so the measured iteration time is τ = B / Σ speeds. Rows whose speeds
sum to zero are measurement failures and are dropped (``n_dropped`` says how many).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dlsched.data import data_dir, literal
from dlsched.errors import InputError


@dataclass(frozen=True)
class SpeedTable:
    """The measured grid of one model: arrays over its valid (PS, worker) points."""

    model: str
    batch: float
    p: np.ndarray
    w: np.ndarray
    speed: np.ndarray        # Σ worker speeds, samples/s

    @property
    def tau(self) -> np.ndarray:
        """Measured seconds per iteration, B / Σ speeds."""
        return self.batch / self.speed

    @property
    def g(self) -> np.ndarray:
        """Measured iterations per second."""
        return self.speed / self.batch


def read_config_speed(path: str | Path | None = None) -> tuple[dict[str, SpeedTable], int]:
    """All models' tables and the number of zero-speed rows dropped."""
    if path is None:

        path = data_dir() / "dl2" / "config_speed.txt"
    path = Path(path)
    rows: dict[str, list] = {}
    batches: dict[str, float] = {}
    dropped = 0
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            model, _mode, batch, n_ps, n_w, speeds, _ps_cpu, _w_cpu = literal(line)
        except (ValueError, SyntaxError) as exc:
            raise InputError(str(path), f"line {lineno}", "a tuple (model, mode, batch, ps, workers, speeds, ...)",
                             line[:60]) from exc
        total = float(sum(speeds))
        if total <= 0:
            dropped += 1
            continue
        batches[model] = float(batch)
        rows.setdefault(model, []).append((n_ps, n_w, total))
    tables = {}
    for model, pts in rows.items():
        arr = np.array(pts, dtype=float)
        tables[model] = SpeedTable(model, batches[model], arr[:, 0], arr[:, 1], arr[:, 2])
    return tables, dropped

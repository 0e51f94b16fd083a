r"""Optimus's resource-speed model (MODELS.md §5), fitted to measured speeds.

Synchronous training with p PSs, w workers and global batch M:

.. math::

    f(p, w) = \big(\theta_0 \tfrac{M}{w} + \theta_1 + \theta_2 \tfrac{w}{p} + \theta_3 w + \theta_4 p\big)^{-1},
    \qquad \theta \ge 0

(iterations per second). :math:`1/f` is linear in θ, so the fit is a non-negative least
squares on :math:`1/f`; each row is divided by the measured :math:`1/f` so that the fit
minimises *relative* error, as the layered model's calibration does. The asynchronous form
:math:`f = w\,(\theta_0 + \theta_1 w/p + \theta_2 w + \theta_3 p)^{-1}` is :func:`fit_async`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from dlsched.perf.speeds import SpeedTable


@dataclass(frozen=True)
class OptimusModel:
    theta: np.ndarray
    batch: float
    mode: str = "sync"

    def time(self, p, w) -> np.ndarray:
        """1 / f(p, w): seconds per iteration (sync) or per unit of async throughput."""
        p = np.asarray(p, dtype=float)
        w = np.asarray(w, dtype=float)
        return _features(p, w, self.batch, self.mode) @ self.theta

    def speed(self, p, w) -> np.ndarray:
        """f(p, w)."""
        t = self.time(p, w)
        w = np.asarray(w, dtype=float)
        return (w / t) if self.mode == "async" else (1.0 / t)


def _features(p: np.ndarray, w: np.ndarray, M: float, mode: str) -> np.ndarray:
    p, w = np.broadcast_arrays(np.atleast_1d(p), np.atleast_1d(w))
    if mode == "sync":
        return np.stack([M / w, np.ones_like(w), w / p, w, p], axis=-1)
    return np.stack([np.ones_like(w), w / p, w, p], axis=-1)


def fit_sync(table: SpeedTable) -> OptimusModel:
    """θ ≥ 0 of the synchronous model from the measured grid (relative least squares)."""
    return fit_sync_points(table.p, table.w, table.g, table.batch)


def fit_sync_points(p, w, rate, batch: float) -> OptimusModel:
    """θ ≥ 0 of the synchronous model from samples (p_i, w_i, f_i), f in iterations/s.

    The samples a running job reports (repeats of one (p, w) are kept: each is a measurement),
    fitted as :func:`fit_sync` fits a table: NNLS on 1/f with rows divided by the measured 1/f.
    Samples with f <= 0 or p, w < 1 are ignored; with none left the answer is an error.
    """
    p, w, rate = (np.asarray(x, dtype=float).ravel() for x in (p, w, rate))
    ok = (rate > 0) & (p >= 1) & (w >= 1) & np.isfinite(rate)
    if not ok.any():
        raise ValueError("fit_sync_points needs at least one sample with p, w >= 1 and a speed > 0")
    p, w, rate = p[ok], w[ok], rate[ok]
    X = _features(p, w, batch, "sync")
    theta, _ = nnls(X * rate[:, None], np.ones_like(rate))
    return OptimusModel(theta, float(batch), "sync")


def fit_async(table: SpeedTable) -> OptimusModel:
    """θ ≥ 0 of the asynchronous model (speeds read as the job's total throughput)."""
    X = _features(table.p, table.w, table.batch, "async")
    y = table.w / table.g  # w / f
    theta, _ = nnls(X / y[:, None], np.ones_like(y))
    return OptimusModel(theta, table.batch, "async")


def relative_errors(model: OptimusModel, table: SpeedTable) -> np.ndarray:
    return np.abs(model.speed(table.p, table.w) - table.g) / table.g

r"""Optimus's resource-speed model (MODELS.md §5), fitted to measured speeds.

Synchronous training with p PSs, w workers and global batch M:

.. math::

    f(p, w) = \big(\theta_0 \tfrac{M}{w} + \theta_1 + \theta_2 \tfrac{w}{p} + \theta_3 w + \theta_4 p\big)^{-1},
    \qquad \theta \ge 0

(iterations per second). :math:`1/f` is linear in θ, so the fit is a non-negative least
squares on :math:`1/f`; each row is divided by the measured :math:`1/f` so that the fit
minimises *relative* error, as the layered model's calibration does. The asynchronous form
:math:`f = w\,(\theta_0 + \theta_1 w/p + \theta_2 w + \theta_3 p)^{-1}` is :func:`fit_async`.

The estimator of the authors' scheduler (pengyanghua/optimus, ``estimator.est_speed``; read, not
copied) is :class:`MeasuredSpeed`: the measured speed itself at a measured (p, w), elsewhere the
sync form fitted by :func:`fit_sync_curve` (bounded least squares on the speeds themselves, from
θ = 1, as their ``curve_fit`` call does) once at least ``min_points`` sizes are measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares, nnls

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


def fit_sync_curve(p, w, rate, batch: float, theta0=None) -> OptimusModel:
    r"""θ ≥ 0 of the synchronous model minimising :math:`\sum_i (f(p_i, w_i) - f_i)^2`, the
    *absolute* speed error (the authors' bounded ``curve_fit`` with unit σ), by a bounded
    trust-region least squares from ``theta0`` (default θ = 1, ``curve_fit``'s start under bounds).

    One sample per (p, w) is expected (the caller keeps the latest or mean measurement of each);
    samples with f <= 0 or p, w < 1 are ignored; with none left the answer is an error. With
    samples only on the diagonal p = w (the authors' profiling sizes) θ is not identifiable, and
    the fit extrapolates off the diagonal with whatever split the start leaves (MODELS.md §5).
    """
    p, w, rate = (np.asarray(x, dtype=float).ravel() for x in (p, w, rate))
    ok = (rate > 0) & (p >= 1) & (w >= 1) & np.isfinite(rate)
    if not ok.any():
        raise ValueError("fit_sync_curve needs at least one sample with p, w >= 1 and a speed > 0")
    X = _features(p[ok], w[ok], batch, "sync")
    y = rate[ok]

    def residual(theta):
        return 1.0 / np.maximum(X @ theta, 1e-300) - y

    def jac(theta):
        return -X / np.maximum(X @ theta, 1e-300)[:, None] ** 2

    x0 = np.ones(X.shape[1]) if theta0 is None else np.maximum(np.asarray(theta0, dtype=float), 0.0)
    sol = least_squares(residual, x0, jac=jac, bounds=(0.0, np.inf), method="trf")
    return OptimusModel(sol.x, float(batch), "sync")


class MeasuredSpeed:
    r"""The authors' speed estimate of one job (MODELS.md §5; pengyanghua/optimus ``est_speed``):
    the measured iterations/s at a measured (p, w), elsewhere :func:`fit_sync_curve` of all the
    measured sizes when there are at least ``min_points`` of them, else NaN (unknown).

    ``points`` maps (p, w) to its measured speed (one value per size). Callable on arrays of p
    and w (broadcast together), like :meth:`OptimusModel.speed`.
    """

    def __init__(self, points, batch: float, min_points: int = 5, theta0=None) -> None:
        items = sorted((int(p), int(w), float(r)) for (p, w), r in dict(points).items() if r > 0 and p >= 1 and w >= 1)
        a = np.asarray(items, dtype=float).reshape(-1, 3)
        self.points = {(int(p), int(w)): r for p, w, r in a}
        self._span = float(a[:, 1].max() + 2.0) if len(a) else 2.0
        self._keys = a[:, 0] * self._span + a[:, 1]       # sorted: the items are sorted by (p, w)
        self._rates = a[:, 2]
        self.fit = fit_sync_curve(a[:, 0], a[:, 1], a[:, 2], batch, theta0) if len(a) >= max(min_points, 1) else None

    def __call__(self, p, w) -> np.ndarray:
        p, w = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(w, dtype=float))
        est = self.fit.speed(p, w).reshape(p.shape) if self.fit is not None else np.full(p.shape, np.nan)
        if self._keys.size:
            key = np.where(w < self._span, p * self._span + w, -1.0)
            i = np.clip(np.searchsorted(self._keys, key), 0, self._keys.size - 1)
            hit = self._keys[i] == key
            est = np.where(hit, self._rates[i], est)
        return est


def fit_async(table: SpeedTable) -> OptimusModel:
    """θ ≥ 0 of the asynchronous model (speeds read as the job's total throughput)."""
    X = _features(table.p, table.w, table.batch, "async")
    y = table.w / table.g  # w / f
    theta, _ = nnls(X / y[:, None], np.ones_like(y))
    return OptimusModel(theta, table.batch, "async")


def relative_errors(model: OptimusModel, table: SpeedTable) -> np.ndarray:
    return np.abs(model.speed(table.p, table.w) - table.g) / table.g

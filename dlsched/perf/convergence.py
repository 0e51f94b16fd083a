r"""Optimus's online convergence model (MODELS.md §5), fitted on observed (step, loss) points.

.. math::

    \ell(k) = \frac{1}{\beta_0 k + \beta_1} + \beta_2, \qquad \beta \ge 0

**Fit** (:func:`fit_loss_curve`). For a fixed :math:`\beta_2` the model is linear after
linearisation, :math:`1/(\ell - \beta_2) = \beta_0 k + \beta_1`, so (β0, β1) is a weighted
non-negative least squares in two unknowns (closed form, for all grid values of β2 at once).
Each linearised row is scaled by
:math:`(\ell_i - \beta_2)^2`, the first-order factor that turns an error in
:math:`1/(\ell-\beta_2)` back into an error in ℓ, so the fit approximates least squares on
the observed loss itself. :math:`\beta_2` is chosen on a grid in :math:`[0, \min_i \ell_i)`
by the weighted squared error on ℓ itself, and the grid is refined around the best point
(``rounds`` times), all vectorised: a bounded fit with no iterative solver, cheap enough to
refit every job at every scheduling call. Point i is weighted by
:math:`\gamma^{(n-1-i)/(n-1)}` after sorting by step (so the newest point weighs 1 and the
oldest γ, default γ = 0.1): later points describe the part of the curve that decides the
remaining steps, as Optimus weights them.

**Convergence** (:func:`converged_step`). A job has converged at the first step k at which
the fitted loss improved by less than δ over the last ``window`` W steps,
:math:`\ell(k - W) - \ell(k) < \delta` (the test a running job can make on its own past, and the
one :func:`dlsched.instance.synthetic.convergence_curve` builds the true curves with). With
:math:`x = \beta_0 k + \beta_1` the condition is :math:`\beta_0 W / (x (x - \beta_0 W)) = \delta`,
i.e. :math:`\delta x^2 - \delta \beta_0 W x - \beta_0 W = 0`, so

.. math::

    k^\star = \frac{x^\star - \beta_1}{\beta_0}, \qquad
    x^\star = \frac{\delta \beta_0 W + \sqrt{(\delta \beta_0 W)^2 + 4 \delta \beta_0 W}}{2 \delta},

and the remaining steps are :math:`\max(k^\star - k_{\text{done}}, 0)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Criterion:
    """Converged when the loss improves by less than ``delta`` over ``window`` steps (MODELS.md §5)."""

    delta: float = 1e-3
    window: float = 1000.0

    def __post_init__(self) -> None:
        if not (self.delta > 0 and self.window > 0):
            raise ValueError(f"Criterion needs delta > 0 and window > 0, got {self.delta}, {self.window}")


@dataclass(frozen=True)
class LossFit:
    """Fitted β = (β0, β1, β2) ≥ 0 and the number of points it was fitted on."""

    beta: np.ndarray
    n_points: int

    def loss(self, k) -> np.ndarray:
        b0, b1, b2 = self.beta
        return 1.0 / (b0 * np.asarray(k, dtype=float) + b1) + b2

    def converged_step(self, criterion: Criterion) -> float:
        return converged_step(self.beta, criterion)

    def remaining_steps(self, done: float, criterion: Criterion) -> float:
        """max(k* − done, 0) (MODELS.md §5)."""
        return max(self.converged_step(criterion) - float(done), 0.0)


def converged_step(beta, criterion: Criterion) -> float:
    """k* of the module docstring: the first step where ℓ(k − W) − ℓ(k) < δ (0 for a flat curve)."""
    b0, b1, _ = (float(x) for x in beta)
    if b0 <= 0:
        return 0.0  # a flat curve never improves: it has converged
    dw = criterion.delta * b0 * criterion.window
    x_star = (dw + math.sqrt(dw * dw + 4.0 * dw)) / (2.0 * criterion.delta)
    return max((x_star - b1) / b0, 0.0)


def _weights(n: int, gamma: float) -> np.ndarray:
    if n == 1:
        return np.ones(1)
    return gamma ** ((n - 1 - np.arange(n)) / (n - 1))


def _linear_fits(k: np.ndarray, loss: np.ndarray, sw: np.ndarray, b2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(β0, β1) ≥ 0 for each fixed β2 in ``b2`` (G,): weighted NNLS on 1/(ℓ − β2), rows scaled back
    to loss units, solved in closed form (two unknowns: the unconstrained solution, else the best
    one-variable fit); and each fit's loss-space weighted SSE. Returns arrays (G, 2) and (G,)."""
    gap = loss[None, :] - b2[:, None]                       # (G, n)
    y = 1.0 / gap
    s2 = (sw[None, :] * gap * gap) ** 2                     # squared row scales
    Skk, Sk, S1 = s2 @ (k * k), s2 @ k, s2.sum(axis=1)
    Sky, Sy = (s2 * y) @ k, (s2 * y).sum(axis=1)
    det = Skk * S1 - Sk * Sk
    with np.errstate(divide="ignore", invalid="ignore"):
        b0 = np.where(det > 0, (Sky * S1 - Sk * Sy) / det, -1.0)
        b1 = np.where(det > 0, (Skk * Sy - Sk * Sky) / det, -1.0)
        only1 = np.stack([np.zeros_like(Sy), Sy / S1], axis=1)                       # β0 = 0
        only0 = np.stack([np.where(Skk > 0, Sky / Skk, 0.0), np.zeros_like(Sy)], axis=1)  # β1 = 0
    cands = np.stack([np.stack([b0, b1], axis=1), only1, only0], axis=0)           # (3, G, 2)

    def sse(c):
        lin = c[..., 0:1] * k + c[..., 1:2]                                         # (3, G, n)
        pred = 1.0 / np.maximum(lin, 1e-300) + b2[None, :, None]
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.sum((sw * (pred - loss)) ** 2, axis=-1)
        return np.where(np.all(c >= 0, axis=-1) & np.isfinite(out), out, np.inf)

    err = sse(cands)
    pick = np.argmin(err, axis=0)
    G = np.arange(b2.size)
    return cands[pick, G], err[pick, G]


def fit_loss_curve(steps, losses, *, gamma: float = 0.1, grid: int = 16, rounds: int = 8) -> LossFit:
    """Bounded weighted fit of ℓ(k) = 1/(β0 k + β1) + β2 on observed points (module docstring).

    ``steps`` and ``losses`` are equal-length arrays (at least 2 points, losses > 0); points
    are sorted by step before weighting, so the newest point weighs most.
    """
    k = np.asarray(steps, dtype=float)
    loss = np.asarray(losses, dtype=float)
    if k.shape != loss.shape or k.ndim != 1 or k.size < 2:
        raise ValueError(f"need two equal-length 1-d arrays of at least 2 points, got {k.shape}, {loss.shape}")
    if not (np.isfinite(k).all() and np.isfinite(loss).all() and (loss > 0).all()):
        raise ValueError("steps must be finite and losses finite and > 0")
    order = np.argsort(k, kind="stable")
    k, loss = k[order], loss[order]
    sw = np.sqrt(_weights(k.size, gamma))
    lmin = float(loss.min())
    b2 = lmin * (1.0 - np.geomspace(1.0, 1e-3, grid))        # from 0 towards min ℓ, denser near it
    best = (np.inf, np.array([0.0, 1.0 / lmin, 0.0]))
    for _ in range(rounds):
        coef, err = _linear_fits(k, loss, sw, b2)
        err = np.where(coef[:, 1] > 0, err, np.inf)
        g = int(np.argmin(err))
        if err[g] < best[0]:
            best = (float(err[g]), np.array([coef[g, 0], coef[g, 1], b2[g]]))
        # zoom in between the best point's neighbours
        lo, hi = b2[max(g - 1, 0)], b2[min(g + 1, b2.size - 1)]
        b2 = np.linspace(lo, min(hi, lmin * (1 - 1e-9)), grid)
    beta = best[1]
    return LossFit(np.maximum(beta, 0.0), int(k.size))

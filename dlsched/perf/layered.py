r"""Layered per-iteration time of synchronous parameter-server training (MODELS.md §2.1).

.. math::

    F(w) &= \tfrac{B}{w} \textstyle\sum_\ell \varphi_\ell, \qquad
    G_\ell(w) = \tfrac{B}{w} \textstyle\sum_{\ell' \ge \ell} \psi_{\ell'} \\
    c_\ell(w,p) &= m_\ell\, s(w,p), \qquad
    s(w,p) = 2 \max\!\Big(\tfrac{1}{\beta_W}, \tfrac{w}{p\,\beta_P}\Big) + \tfrac{1}{p\,\mu_P} \\
    C_{L+1} &= 0,\quad C_\ell = \max(G_\ell, C_{\ell+1}) + c_\ell \quad(\ell = L..1) \\
    \tau(w,p) &= \delta + F(w) + C_1(w,p), \qquad g(w,p) = 1/\tau(w,p)

=====================  ==========================================  ===========
symbol                 meaning                                     field
=====================  ==========================================  ===========
:math:`\varphi_\ell`   forward seconds per sample of layer ℓ       ``phi``
:math:`\psi_\ell`      backward seconds per sample of layer ℓ      ``psi``
:math:`m_\ell`         parameter bytes of layer ℓ                   ``m``
:math:`\beta_W`        worker NIC bandwidth (bytes/s)               ``beta_w``
:math:`\beta_P`        PS NIC bandwidth (bytes/s)                   ``beta_p``
:math:`\mu_P`          PS aggregation/update rate (bytes/s)         ``mu_p``
:math:`\delta`         fixed per-iteration overhead (s)             ``delta``
:math:`B`              global batch (samples per iteration)         argument
=====================  ==========================================  ===========

MODELS.md §2.1 is the case :math:`\mu_P = \infty, \delta = 0`. The two extra terms are
options (docs/smd.md): the PS update, done once per iteration on the PS's shard of the
parameters, is what makes DL2's measured speeds improve with p even with a single worker;
:math:`\delta` is the synchronisation barrier.

The recursion unrolls (max-plus algebra) to
:math:`C_1 = \max_\ell \big(G_\ell + s\,\sum_{k \le \ell} m_k\big)`, so a whole table of
(w, p) configurations is one (configurations x layers) array operation. The "no overlap"
variant is :math:`\tau = \delta + F + G_1 + s \sum_\ell m_\ell`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dlsched.errors import InputError

OVERLAP_MODES = ("layerwise", "none")


@dataclass(frozen=True, eq=False)
class LayerProfile:
    """A job type's layers (forward order 1..L) and the network it trains on (MODELS.md §2.1)."""

    name: str
    phi: np.ndarray
    psi: np.ndarray
    m: np.ndarray
    beta_w: float
    beta_p: float
    mu_p: float = math.inf
    delta: float = 0.0
    layer_names: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        src = f"profile '{self.name}'"
        for attr in ("phi", "psi", "m"):
            arr = np.asarray(getattr(self, attr), dtype=float).ravel()
            object.__setattr__(self, attr, arr)
        L = self.m.size
        if L == 0:
            raise InputError(src, "layers", "at least one layer", "no layers")
        if self.phi.size != L or self.psi.size != L:
            raise InputError(src, "layers", f"phi, psi and m of the same length {L}",
                             f"phi {self.phi.size}, psi {self.psi.size}")
        for attr in ("phi", "psi", "m"):
            arr = getattr(self, attr)
            bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
            if bad.size:
                raise InputError(src, f"layers[{bad[0]}].{attr}", "a finite number >= 0", float(arr[bad[0]]))
        for attr in ("beta_w", "beta_p", "mu_p"):
            v = float(getattr(self, attr))
            if not v > 0 or math.isnan(v):
                raise InputError(src, attr, "a bandwidth > 0 (bytes/s)", v)
        if not (self.delta >= 0 and math.isfinite(self.delta)):
            raise InputError(src, "delta", "a finite overhead >= 0 (s)", self.delta)
        if float(self.phi.sum() + self.psi.sum() + self.m.sum()) <= 0 and self.delta <= 0:
            raise InputError(src, "layers", "some compute or some parameters", "all zero (the job would take no time)")

    @property
    def n_layers(self) -> int:
        return self.m.size

    @property
    def model_bytes(self) -> float:
        return float(self.m.sum())


def transfer_factor(prof: LayerProfile, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    r""":math:`s(w,p)`: seconds per parameter byte of one layer's push + pull (+ PS update)."""
    w = np.asarray(w, dtype=float)
    p = np.asarray(p, dtype=float)
    s = 2.0 * np.maximum(1.0 / prof.beta_w, w / (p * prof.beta_p))
    if math.isfinite(prof.mu_p):
        s = s + 1.0 / (p * prof.mu_p)
    return s


def iteration_time(prof: LayerProfile, batch: float, w, p, overlap: str = "layerwise") -> np.ndarray:
    r""":math:`\tau(w,p)` for arrays of worker and PS counts (broadcast together), seconds.

    ``overlap="layerwise"`` is MODELS.md §2.1's recursion, ``"none"`` the no-overlap variant.
    Configurations with w < 1 or p < 1 get ``inf`` (the job does not run).
    """
    if overlap not in OVERLAP_MODES:
        raise InputError("<argument>", "overlap", f"one of {OVERLAP_MODES}", overlap)
    if not batch > 0:
        raise InputError(f"profile '{prof.name}'", "batch", "a global batch > 0", batch)
    w_arr, p_arr = np.broadcast_arrays(np.asarray(w, dtype=float), np.asarray(p, dtype=float))
    shape = w_arr.shape
    w1 = w_arr.ravel()
    p1 = p_arr.ravel()
    ok = (w1 >= 1) & (p1 >= 1)
    ws, ps = np.where(ok, w1, 1.0), np.where(ok, p1, 1.0)
    per_worker = batch / ws                                   # B / w samples per worker
    F = per_worker * prof.phi.sum()
    s = transfer_factor(prof, ws, ps)
    if overlap == "none":
        tau = prof.delta + F + per_worker * prof.psi.sum() + s * prof.m.sum()
    else:
        suffix_psi = np.cumsum(prof.psi[::-1])[::-1]          # Σ_{ℓ' ≥ ℓ} ψ_ℓ'
        prefix_m = np.cumsum(prof.m)                          # Σ_{k ≤ ℓ} m_k
        C1 = np.max(per_worker[:, None] * suffix_psi[None, :] + s[:, None] * prefix_m[None, :], axis=1)
        tau = prof.delta + F + C1
    return np.where(ok, tau, np.inf).reshape(shape)


def iteration_time_recursive(prof: LayerProfile, batch: float, w: float, p: float) -> float:
    """The recursion of MODELS.md §2.1 written out layer by layer (reference for tests)."""
    per = batch / w
    G = per * np.cumsum(prof.psi[::-1])[::-1]
    s = float(transfer_factor(prof, np.array(w), np.array(p)))
    C = 0.0
    for ell in range(prof.n_layers - 1, -1, -1):
        C = max(G[ell], C) + prof.m[ell] * s
    return prof.delta + per * float(prof.phi.sum()) + C


def throughput(prof: LayerProfile, batch: float, w, p, overlap: str = "layerwise") -> np.ndarray:
    """g(w,p) = 1/τ(w,p) iterations per second (0 where the job does not run)."""
    return 1.0 / iteration_time(prof, batch, w, p, overlap)

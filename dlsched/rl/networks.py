"""DL2's policy and value networks (MODELS.md §6): MLPs over the flattened J × F state matrix.

The policy network ends in a softmax over the 3J + 1 actions restricted to the valid ones
(masked logits); the value network has the same hidden layers and one output, V(s).
The paper uses 2 hidden layers of 256 units; ``hidden`` sets them.

With ``Spec.actions = "jobs"`` the policy may carry a row prior Θ (``--es-features``, docs/dl2.md
round 13): a (P, Q) matrix added to the logits through features of each window row (φ,
:func:`row_features`) and of each size level (ψ, :func:`level_features`),

    z_ik = s · (W h)_ik + b_ik + φ(row i)ᵀ Θ ψ(level k),

so the sizes it prefers can follow the job (its type, its remaining work, its rank), which a bias
per (row, level) cannot; Θ = 0 is the network without it, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dlsched.rl.slot import Spec


#: φ's columns after the job type's one-hot (:func:`row_features`; and "log window jobs" last with ``Spec.prior_load``)
ROW_FEATURES = ("log remaining epochs", "log rank")
#: ψ's columns (:func:`level_features`)
LEVEL_FEATURES = ("leave out", "u", "v", "curvature")


def level_features(spec: Spec) -> np.ndarray:
    """ψ (C, 4): per size level k, [k = 0] (leave the job out), u_k = log₂(1 + w_k), v_k = log₂(1 + p_k)
    and −(u_k² + v_k²) / 4, (w_k, p_k) = ``spec.configs[k]``. Log counts: one unit is about one
    doubling of a size; with a weight d > 0 on the last and b, c on u, v a row's prior
    b u + c v − d (u² + v²) / 4 peaks at u = 2b / d, v = 2c / d, a preferred size (slopes alone pick a
    corner of the menu); the curvature at a quarter moves the logits about as much as a slope."""
    u, v = np.log2(1.0 + np.asarray(spec.configs, dtype=float)).T
    return np.stack([np.arange(len(u)) == 0, u, v, -(u ** 2 + v ** 2) / 4], axis=1)


def row_features(x: torch.Tensor, spec: Spec) -> torch.Tensor:
    """φ (B, J, L + 2) of the window rows of states ``x`` (B, J, F) (:mod:`dlsched.rl.slot`'s columns):
    the job type's one-hot (L columns; for a job they sum to 1, so they also act as its intercept),
    (log₂(1 + remaining epochs / 1000) − 3) / 1.5 and (log₂(1 + rank) − 2.5) / 1.5, the rank being the
    row's index (by remaining time with ``rows="remaining"``). The centring and scale keep both
    within about ±2 over DL2's mix (1,000–30,000 epochs, J = 40), as the one-hot's 0/1, so that a
    perturbation of Θ moves every direction's logits alike. With ``spec.prior_load`` one more column,
    (log₂(1 + n) − 4) / 1.5, n the window's jobs (the same in every row of a state)."""
    L = spec.n_types
    rem = x[..., L + 1] * spec.epochs_norm
    rank = torch.log2(torch.arange(1, spec.J + 1, dtype=x.dtype)).expand_as(rem)
    cols = [x[..., :L], ((torch.log2(1 + rem / 1000) - 3) / 1.5)[..., None], ((rank - 2.5) / 1.5)[..., None]]
    if spec.prior_load:
        # the window's jobs (rows with a type), the same in every row of a state: Θ's row for it shifts every
        # row's preferred size with the load, as the best sizes of SRPT-like schedules shrink with more jobs
        n = x[..., :L].sum(dim=(-1, -2))
        cols.append(((torch.log2(1 + n) - 4) / 1.5)[:, None, None].expand(*rem.shape, 1))
    return torch.cat(cols, dim=-1)


def prior_shape(spec: Spec) -> tuple[int, int]:
    """Θ's shape (P, Q): the row features of :func:`row_features` by the level features of :func:`level_features`."""
    return spec.n_types + len(ROW_FEATURES) + spec.prior_load, len(LEVEL_FEATURES)


def mlp(n_in: int, hidden: tuple[int, ...], n_out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(n_in, h), nn.ReLU()]
        n_in = h
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits with invalid actions at the dtype's lowest value, so their softmax weight is 0."""
    return logits.masked_fill(~mask.bool(), torch.finfo(logits.dtype).min)


@dataclass(frozen=True)
class NetShape:
    spec: Spec
    hidden: tuple[int, ...] = (256, 256)


class PolicyNet(nn.Module):
    """π(a | s): logits over the 3J + 1 actions, or over each row's size levels (``Spec.actions = "jobs"``,
    one categorical per row: π(k | s) = Π_i π_i(k_i | s)).

    ``logit_scale`` s multiplies the last layer's product but not its bias b, z = s · W h + b
    (``--es-basis``, :func:`dlsched.rl.es.es_basis`: s small leaves the logits to the
    state-independent prior b); s = 1 is the plain MLP, bit for bit. ``prior`` Θ (None: none;
    :func:`prior_shape`, ``Spec.actions = "jobs"`` only) adds φ(row)ᵀ Θ ψ(level) (module docstring)."""

    def __init__(self, shape: NetShape):
        super().__init__()
        self.shape = shape
        self.body = mlp(shape.spec.J * shape.spec.n_features, shape.hidden, shape.spec.n_actions)
        self.logit_scale = 1.0
        self.prior: torch.Tensor | None = None
        self._psi = (torch.from_numpy(level_features(shape.spec)).float().t().contiguous()
                     if shape.spec.actions == "jobs" else None)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked logits for a batch of states (B, J, F) and masks (B, 3J + 1), or (B, J, C) flattened."""
        spec = self.shape.spec
        phi = None if self.prior is None else row_features(x.view(len(x), spec.J, spec.n_features), spec)
        x = x.flatten(1)
        if self.logit_scale == 1.0:
            z = self.body(x)
        else:
            for layer in self.body[:-1]:
                x = layer(x)
            last = self.body[-1]
            z = torch.addmm(last.bias, x, last.weight.t(), alpha=self.logit_scale)
        if phi is not None:
            z = z + (phi @ self.prior @ self._psi).flatten(1)
        return masked_logits(z, mask.flatten(1))

    def levels(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``Spec.actions = "jobs"``: masked logits (B, J, C) of each window row's size level."""
        return self(x, mask).view(len(x), self.shape.spec.J, self.shape.spec.n_levels)

    def dist(self, x: torch.Tensor, mask: torch.Tensor) -> torch.distributions.Categorical:
        return torch.distributions.Categorical(logits=self(x, mask))


class ValueNet(nn.Module):
    """V(s): the expected discounted reward from a state."""

    def __init__(self, shape: NetShape):
        super().__init__()
        self.shape = shape
        self.body = mlp(shape.spec.J * shape.spec.n_features, shape.hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.flatten(1)).squeeze(-1)

"""DL2's policy and value networks (MODELS.md §6): MLPs over the flattened J × F state matrix.

The policy network ends in a softmax over the 3J + 1 actions restricted to the valid ones
(masked logits); the value network has the same hidden layers and one output, V(s).
The paper uses 2 hidden layers of 256 units; ``hidden`` sets them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from dlsched.rl.slot import Spec


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
    state-independent prior b); s = 1 is the plain MLP, bit for bit."""

    def __init__(self, shape: NetShape):
        super().__init__()
        self.shape = shape
        self.body = mlp(shape.spec.J * shape.spec.n_features, shape.hidden, shape.spec.n_actions)
        self.logit_scale = 1.0

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked logits for a batch of states (B, J, F) and masks (B, 3J + 1), or (B, J, C) flattened."""
        x = x.flatten(1)
        if self.logit_scale == 1.0:
            z = self.body(x)
        else:
            for layer in self.body[:-1]:
                x = layer(x)
            last = self.body[-1]
            z = torch.addmm(last.bias, x, last.weight.t(), alpha=self.logit_scale)
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

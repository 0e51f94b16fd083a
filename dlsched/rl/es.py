"""Reinforcement learning of job-level sizes by evolution strategies (Salimans et al. 2017), ``--baseline es``.

The simulator is deterministic, so a policy's return on a trace is an exact number and two
policies compared on the same traces differ only by what they decide. Evolution strategies use
that directly: a generation draws ``pairs`` directions ε_j ~ N(0, I) in the space of the
parameters θ it searches and ``traces`` common training traces, plays the greedy policy at
θ + σε_j and at θ − σε_j on each of those traces (antithetic pairs, common random traces), and
steps θ along

    g = (1 / n) Σ_j  d_j / rms(d) · ε_j,     d_j = F(θ + σε_j) − F(θ − σε_j)

(Adam, learning rate ``--rl-lr``), F the mean undiscounted return of the ``jct`` reward on the
generation's traces (minus the jobs in the system summed over slots: −ΣJCT / slot). Dividing by
the differences' RMS makes the step independent of the reward's scale. The trace noise that makes
the tuning JCT of one trace swing by several per cent cancels in each d_j, since both sides of a
pair play the same traces. No teacher is involved after the warm-up.

θ is the policy network's output bias, one number per (window row, size level): with ``--rows
remaining`` the rows are the window's jobs in order of remaining time, shortest first, so θ is a
prior over which sizes the jobs of each rank get, the freedom that separates DRF's spreading from
an SRPT-like order (the menu played by heSRPT is 22.5 % below DRF, docs/dl2.md "round 8").
``--es-groups`` searches it with the rows tied in rank groups (:func:`rank_groups`: 6 × 19 = 114
numbers for J = 40 instead of 760).
"""

from __future__ import annotations

import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.policy import Model, choose


def searched(model: Model) -> torch.nn.Parameter:
    """θ: the policy network's output bias."""
    return model.policy.body[-1].bias


def rank_groups(J: int, C: int) -> np.ndarray:
    """The (J·C, G·C) 0/1 matrix that ties the bias of rows 0, 1–2, 3–6, 7–14, … (ranks by remaining time,
    doubling groups) level by level: the searched directions, G·C of them instead of J·C (a
    generation of a few pairs cannot estimate J·C = 760 slopes; with ties the rows of one rank
    group move together)."""
    group = np.floor(np.log2(np.arange(J) + 1)).astype(int)
    E = np.zeros((J, C, group.max() + 1, C))
    E[np.arange(J)[:, None], np.arange(C)[None, :], group[:, None], np.arange(C)[None, :]] = 1.0
    return E.reshape(J * C, -1)


def greedy_return(env: DL2Env, model: Model, trace: int) -> float:
    """The undiscounted return of the greedy policy on training trace ``trace``."""
    obs, info = env.reset(options={"trace": int(trace)})
    total, done = 0.0, False
    while not done:
        obs, r, term, trunc, info = env.step(choose(model, obs, info["action_mask"]))
        total += r
        done = term or trunc
    return total


def member_returns(env: DL2Env, model: Model, members) -> list[float]:
    """:func:`greedy_return` of every (θ, trace) member in this process; ``model``'s θ is left as it was."""
    p = searched(model)
    theta = p.detach().clone()
    try:
        out = []
        for bias, k in members:
            with torch.no_grad():
                p.copy_(torch.from_numpy(bias).view_as(p))
            out.append(greedy_return(env, model, k))
        return out
    finally:
        with torch.no_grad():
            p.copy_(theta)


def es_gradient(env: DL2Env, model: Model, rng: np.random.Generator, *, pairs: int, traces: int,
                sigma: float, basis: np.ndarray | None = None, pool=None) -> tuple[np.ndarray, np.ndarray, float, float]:
    """One generation (module docstring): the ascent direction g, the pairs' differences d_j, the
    generation's mean return, and the CPU seconds of worker processes. With ``basis``
    (:func:`rank_groups`) the directions are ``basis`` ε, ε of its column count, and g is in those
    coordinates. ``pool`` (:class:`dlsched.rl.forks.ForkPool`) plays the 2 · pairs · traces greedy
    episodes in its processes; each is deterministic, so g is the same bit for bit as in this
    process. θ is left as it was."""
    theta = searched(model).detach().clone()
    ks = rng.choice(len(env.traces), size=min(traces, len(env.traces)), replace=False)
    eps = rng.standard_normal((pairs, theta.numel() if basis is None else basis.shape[1]))
    members = []
    for e in eps:
        e_full = torch.from_numpy(e if basis is None else basis @ e).to(theta.dtype).view_as(theta)
        for sign in (1.0, -1.0):
            bias = (theta + sign * sigma * e_full).numpy()
            members += [(bias, int(k)) for k in ks]
    if pool is None:
        R, cpu = member_returns(env, model, members), 0.0
    else:
        R, cpu = pool.greedy_returns(model, members)
    F = np.asarray(R, dtype=float).reshape(pairs, 2, len(ks)).mean(axis=2)     # F(θ ± σε_j)
    d = F[:, 0] - F[:, 1]
    rms = float(np.sqrt(np.mean(d ** 2)))
    g = (d / rms) @ eps / pairs if rms > 0 else np.zeros(eps.shape[1])
    return g, d, float(F.mean()), cpu


class Adam:
    """Adam's ascent step on θ (Kingma and Ba 2015), for a gradient that autograd does not produce."""

    def __init__(self, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = self.v = None
        self.t = 0

    def step(self, p: torch.nn.Parameter, g: np.ndarray, basis: np.ndarray | None = None) -> None:
        """θ += lr m̂ / (√v̂ + eps), in ``basis``'s coordinates when given (g is then in them)."""
        if self.m is None:
            self.m, self.v = np.zeros_like(g), np.zeros_like(g)
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * g
        self.v = self.b2 * self.v + (1 - self.b2) * g * g
        step = self.lr * (self.m / (1 - self.b1 ** self.t)) / (np.sqrt(self.v / (1 - self.b2 ** self.t)) + self.eps)
        if basis is not None:
            step = basis @ step
        with torch.no_grad():
            p.add_(torch.from_numpy(step).to(p.dtype).view_as(p))

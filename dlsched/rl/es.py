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
numbers for J = 40 instead of 760). ``--es-basis`` searches 1 + 4G directions that matter
(:func:`es_basis`): the log of the network's logit scale s (z = s · W h + b,
:class:`~dlsched.rl.networks.PolicyNet`) and, per rank group g, the bias a_g of level 0 (leave the
job out), slopes b_g, c_g in u = log₂(1 + workers) and v = log₂(1 + PSs) of the level, and a
curvature d_g (−(u² + v²)) that gives the group a preferred size, so that

    z = s · W h + b_warm + E θ,      θ = 0, s = 1: the warm-up exactly.

``--es-features`` (:func:`es_features`) searches the policy's row prior Θ instead
(:class:`~dlsched.rl.networks.PolicyNet`: z_ik = s · (W h)_ik + b_ik + φ(row i)ᵀ Θ ψ(level k), φ the job's
type, log remaining epochs and log rank, ψ the leave-out, u, v and curvature of :func:`es_basis`), and
log s unless held: (1 +) P·Q = (1 +) 40 directions for DL2's 8 job types, in which the size a row
prefers can follow its job, not only its rank (docs/dl2.md, round 13). Θ = 0 is the warm-up exactly.

``--es-scale S`` plays and searches at a held logit scale s = S, the output bias scaled with it
(:func:`at_scale`: z = s · (W h + b) + φᵀ Θ ψ, so Θ = 0 is still the warm-up's argmax). Since the argmax
is unchanged by a positive factor and Adam's step is unchanged by the gradient's scale, this is the
search at s = 1 with σ and the learning rate divided by s, generation by generation (docs/dl2.md,
round 14): a small s is a larger step, not a different search.

The step is Adam's (:class:`Adam`, a fixed learning rate) unless ``--es-optimizer cma`` asks for CMA-ES over the
same coordinates (:mod:`dlsched.rl.cmaes`: mirrored pairs, pairwise selection, σ adapted by the evolution
path; docs/dl2.md, round 15).

Every mode's θ is held as one vector (log s, b) (:func:`theta`), and (log s, b, Θ) for a policy with
a row prior; the bias-only modes leave log s at 0.
"""

from __future__ import annotations

import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.networks import level_features, prior_shape
from dlsched.rl.policy import Model, choose
from dlsched.rl.slot import Spec


def searched(model: Model) -> torch.nn.Parameter:
    """θ: the policy network's output bias."""
    return model.policy.body[-1].bias


def theta(model: Model) -> torch.Tensor:
    """The searched vector (log s, b[, Θ]): the log of the policy's logit scale, its output bias, and
    its row prior flattened where it has one (a copy)."""
    b = searched(model).detach()
    prior = model.policy.prior
    return torch.cat([torch.tensor([np.log(model.policy.logit_scale)], dtype=b.dtype), b,
                      *(() if prior is None else (prior.flatten().to(b.dtype),))])


def set_theta(model: Model, v: torch.Tensor | np.ndarray) -> None:
    """Set the policy's logit scale, output bias and row prior (where it has one) from a vector of
    :func:`theta`'s layout."""
    v = torch.as_tensor(v)
    p = searched(model)
    # exp(0) is exactly 1: θ's first coordinate left at 0 keeps the plain MLP, bit for bit
    model.policy.logit_scale = float(np.exp(float(v[0])))
    with torch.no_grad():
        p.copy_(v[1:1 + p.numel()].to(p.dtype).view_as(p))
    if model.policy.prior is not None:
        model.policy.prior = v[1 + p.numel():].to(torch.float32).view(model.policy.prior.shape).clone()


def with_prior(model: Model) -> Model:
    """``model`` with a row prior Θ = 0 (:class:`~dlsched.rl.networks.PolicyNet`) unless it has one:
    the same decisions, and the coordinates that ``--es-features`` searches."""
    if model.policy.prior is None:
        model.policy.prior = torch.zeros(prior_shape(model.spec))
    return model


def at_scale(model: Model, scale: float) -> Model:
    """``model`` with logit scale ``scale`` and its output bias scaled alike, z = s · (W h + b) at Θ = 0: the
    same argmax in every row, so the same greedy decisions (``--es-scale``). Scaling W h alone would
    not do: at s = 0.01 the warm-up's bias (|b| ≤ 0.06) outweighs s times the network's margins in
    many rows (round 9's DRF warm-up: 75,404 s on the tuning traces instead of 49,236; docs/dl2.md,
    round 14)."""
    factor = scale / model.policy.logit_scale
    model.policy.logit_scale = float(scale)
    with torch.no_grad():
        searched(model).mul_(factor)
    return model


def lift(e: np.ndarray, basis: np.ndarray | None, size: int) -> np.ndarray:
    """A direction in the searched coordinates as a change of :func:`theta`'s vector (``size`` long):
    ``basis`` e (e itself without a basis), log s left at 0 when that spans the bias alone."""
    v = e if basis is None else basis @ e
    return v if len(v) == size else np.concatenate([[0.0], v])


def rank_groups(J: int, C: int) -> np.ndarray:
    """The (J·C, G·C) 0/1 matrix that ties the bias of rows 0, 1–2, 3–6, 7–14, … (ranks by remaining time,
    doubling groups) level by level: the searched directions, G·C of them instead of J·C (a
    generation of a few pairs cannot estimate J·C = 760 slopes; with ties the rows of one rank
    group move together)."""
    group = rank_group(J)
    E = np.zeros((J, C, group.max() + 1, C))
    E[np.arange(J)[:, None], np.arange(C)[None, :], group[:, None], np.arange(C)[None, :]] = 1.0
    return E.reshape(J * C, -1)


def rank_group(J: int) -> np.ndarray:
    """The rank group of each window row: 0, 1–2, 3–6, 7–14, … (doubling, by remaining time)."""
    return np.floor(np.log2(np.arange(J) + 1)).astype(int)


def es_basis(spec: Spec, scale: bool = True) -> np.ndarray:
    """The (1 + J·C, 1 + 4G) matrix E of ``--es-basis`` (module docstring): column 0 moves log s
    alone; per rank group g (:func:`rank_group`), columns 1 + 4g … 4 + 4g add to level k's logit of
    the group's rows [k = 0] (a_g, leaving the job out), u_k (b_g), v_k (c_g) and −(u_k² + v_k²) / 4
    (d_g), u_k = log₂(1 + w_k), v_k = log₂(1 + p_k) and (w_k, p_k) = ``spec.configs[k]``. With
    d_g > 0 the prior b_g u + c_g v − d_g (u² + v²) / 4 peaks at u = 2b_g / d_g, v = 2c_g / d_g: a
    preferred size per rank group, which slopes alone (d_g = 0) cannot express, since they pick a
    corner of the menu (docs/dl2.md, round 12). Log counts: one unit is about one doubling of a size.
    ``scale=False`` leaves out column 0 (s stays as it is)."""
    J, C = spec.J, spec.n_levels
    group = rank_group(J)
    G = group.max() + 1
    feats = level_features(spec)       # (C, 4)
    bias = np.zeros((J, C, G, 4))           # the bias's rows by (row, level), columns by (group, a/b/c/d)
    bias[np.arange(J), :, group, :] = feats
    E = np.zeros((1 + J * C, 1 + 4 * G))
    E[0, 0] = 1.0
    E[1:, 1:] = bias.reshape(J * C, 4 * G)
    return E if scale else E[:, 1:]


def es_features(spec: Spec, scale: bool = True) -> np.ndarray:
    """The (1 + J·C + P·Q, 1 + P·Q) matrix E of ``--es-features`` (module docstring) in :func:`theta`'s
    layout for a policy with a row prior: column 0 moves log s alone, column 1 + q the q-th entry of
    Θ (row-major, :func:`~dlsched.rl.networks.prior_shape`); the output bias is not searched. With
    ``spec.leave_out`` False no row of a window job can take level 0, so Θ's leave-out column moves no
    decision and is not searched (P·Q − P directions). ``scale=False`` leaves out column 0."""
    P, Q = prior_shape(spec)
    searched_q = np.arange(Q) != 0 if not spec.leave_out else np.ones(Q, dtype=bool)
    cols = np.flatnonzero(np.tile(searched_q, P))          # Θ's entries searched, row-major
    E = np.zeros((1 + spec.J * spec.n_levels + P * Q, 1 + len(cols)))
    E[0, 0] = 1.0
    E[1 + spec.J * spec.n_levels + cols, 1 + np.arange(len(cols))] = 1.0
    return E if scale else E[:, 1:]


def greedy_episode(env: DL2Env, model: Model, trace: int) -> tuple[float, bool]:
    """The undiscounted return of the greedy policy on training trace ``trace``, and whether the episode
    was cut at the environment's ``max_slots`` (a job still waiting)."""
    obs, info = env.reset(options={"trace": int(trace)})
    total, term, trunc = 0.0, False, False
    while not (term or trunc):
        obs, r, term, trunc, info = env.step(choose(model, obs, info["action_mask"]))
        total += r
    return total, bool(trunc)


def greedy_return(env: DL2Env, model: Model, trace: int) -> float:
    """The undiscounted return of the greedy policy on training trace ``trace``."""
    return greedy_episode(env, model, trace)[0]


def member_returns(env: DL2Env, model: Model, members) -> list[float]:
    """:func:`greedy_return` of every (θ, trace) member in this process, θ in :func:`theta`'s layout;
    ``model``'s θ is left as it was."""
    start = theta(model)
    try:
        out = []
        for v, k in members:
            set_theta(model, v)
            out.append(greedy_return(env, model, k))
        return out
    finally:
        set_theta(model, start)


def es_gradient(env: DL2Env, model: Model, rng: np.random.Generator, *, pairs: int, traces: int,
                sigma: float, basis: np.ndarray | None = None, pool=None) -> tuple[np.ndarray, np.ndarray, float, float]:
    """One generation (module docstring): the ascent direction g, the pairs' differences d_j, the
    generation's mean return, and the CPU seconds of worker processes. With ``basis``
    (:func:`rank_groups`, :func:`es_basis`) the directions are ``basis`` ε, ε of its column count,
    and g is in those coordinates; without, ε is the bias. ``pool``
    (:class:`dlsched.rl.forks.ForkPool`) plays the 2 · pairs · traces greedy episodes in its
    processes; each is deterministic, so g is the same bit for bit as in this process. θ is left as
    it was."""
    start = theta(model)
    ks = rng.choice(len(env.traces), size=min(traces, len(env.traces)), replace=False)
    eps = rng.standard_normal((pairs, start.numel() - 1 if basis is None else basis.shape[1]))
    members = []
    for e in eps:
        e_full = torch.from_numpy(lift(e, basis, start.numel())).to(start.dtype)
        for sign in (1.0, -1.0):
            v = (start + sign * sigma * e_full).numpy()
            members += [(v, int(k)) for k in ks]
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

    def step(self, model: Model, g: np.ndarray, basis: np.ndarray | None = None) -> None:
        """θ += lr m̂ / (√v̂ + eps) (:func:`theta`), in ``basis``'s coordinates when given (g is then in them)."""
        if self.m is None:
            self.m, self.v = np.zeros_like(g), np.zeros_like(g)
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * g
        self.v = self.b2 * self.v + (1 - self.b2) * g * g
        step = self.lr * (self.m / (1 - self.b1 ** self.t)) / (np.sqrt(self.v / (1 - self.b2 ** self.t)) + self.eps)
        v = theta(model)
        set_theta(model, v + torch.from_numpy(lift(step, basis, v.numel())).to(v.dtype))

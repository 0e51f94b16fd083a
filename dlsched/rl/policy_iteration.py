"""Approximate policy iteration by exact forks (``--baseline api``, MODELS.md §6; docs/dl2.md round 20).

The simulator is deterministic, so :func:`dlsched.rl.forks.fork_episode` measures exactly, on one
training trace, what each of C levels of one decisive row i is worth at a state s of the greedy
episode: the return R_c of the episode forked there with row i's job held at level k_c for ``hold``
slots and the greedy policy after. Policy iteration takes the best of them as the improved
policy's choice at (s, i):

    k*(s, i) = argmax_c R_c        if  max_c R_c − R_greedy > m,   else the greedy level,

m (``--api-margin``, in the return's units: one job in the system for one slot) keeping the
differences of a fraction of a job-slot from relabelling a row. Every fork whose candidates'
returns differ gives a label, the greedy level included (where it won, the label holds it).

The update (:func:`api_update`) fits the network to the labels by cross-entropy, with a trust
region towards the policy before the update over every valid row of the labelled states:

    L(θ) = −(1/N) Σ_n log π_θ,i_n(k*_n | s_n)  +  κ · (1/N) Σ_n Σ_i KL(π_old,i(· | s_n) ‖ π_θ,i(· | s_n)),

κ = ``--kl``, so that the rows no fork measured keep their decisions while the labelled ones move.
Unlike the evolution strategies of rounds 9-19, which search only a prior added to the logits
(the row prior Θ, :func:`dlsched.rl.es.es_features`), this changes the network's weights; Θ and
the logit scale stay in the logits as the checkpoint has them. Labels accumulate over the
iterations in a memory of the ``--api-memory`` most recent (older policies' labels are still
exact statements about their states: the better level there, given the policy that continued).
"""

from __future__ import annotations

import copy

import numpy as np
import torch


def fork_targets(K: np.ndarray, ADV: np.ndarray, F: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per fork of :func:`~dlsched.rl.forks.fork_episode`'s samples (``F``: the fork of each sample; a fork's
    first sample is its greedy level): the index of its first sample, its label k* (module docstring) and
    the return its best candidate gains over the greedy one (0 where the label is the greedy level).

    With C candidates the leave-one-out advantage is A_c = R_c − (S − R_c) / (C − 1), S = Σ R, so
    R_c − R_g = (A_c − A_g) (C − 1) / C: the returns' differences are read back from the advantages."""
    first = np.flatnonzero(np.r_[True, F[1:] != F[:-1]]) if len(F) else np.zeros(0, np.int64)
    ends = np.r_[first[1:], len(F)]
    labels, gains = np.empty(len(first), np.int64), np.zeros(len(first))
    for n, (a, b) in enumerate(zip(first, ends)):
        C = b - a
        best = a + int(np.argmax(ADV[a:b]))
        gain = (ADV[best] - ADV[a]) * (C - 1) / C
        if gain > margin:
            labels[n], gains[n] = K[best], gain
        else:
            labels[n] = K[a]
    return first, labels, gains


class Labels:
    """The most recent ``size`` labels (state, mask, row, level) of the run (a ring)."""

    def __init__(self, size: int):
        self.size, self.X, self.M, self.I, self.K = size, None, None, None, None

    def __len__(self) -> int:
        return 0 if self.K is None else len(self.K)

    def add(self, X, M, I, K) -> None:
        if self.K is None:
            self.X, self.M, self.I, self.K = X, M, I, K
        else:
            self.X, self.M = np.concatenate([self.X, X]), np.concatenate([self.M, M])
            self.I, self.K = np.concatenate([self.I, I]), np.concatenate([self.K, K])
        if len(self.K) > self.size:
            self.X, self.M, self.I, self.K = (v[-self.size:] for v in (self.X, self.M, self.I, self.K))


def api_update(model, opt: torch.optim.Optimizer, labels: Labels, *, kl: float, steps: int, batch: int,
               rng: np.random.Generator) -> dict:
    """``steps`` minibatch steps on L(θ) (module docstring) over ``labels``, the trust region towards the
    policy as it was before the first step. Returns the first and last minibatch's cross-entropy and KL,
    and the share of the labels the greedy policy takes after the update (its argmax = k*)."""
    n = len(labels)
    if not n or not steps:
        return {}
    old = copy.deepcopy(model.policy).eval()
    x, m = torch.from_numpy(labels.X), torch.from_numpy(labels.M)
    i, k = torch.from_numpy(labels.I), torch.from_numpy(labels.K)
    model.policy.train()
    stats = []
    for _ in range(steps):
        idx = torch.from_numpy(rng.choice(n, size=min(batch, n), replace=False))
        logits = model.policy.levels(x[idx], m[idx])
        logp = torch.log_softmax(logits, dim=2)
        ce = -logp[torch.arange(len(idx)), i[idx], k[idx]].mean()
        with torch.no_grad():
            logq = torch.log_softmax(old.levels(x[idx], m[idx]), dim=2)
        valid = m[idx].bool()
        # KL(π_old ‖ π) per row, summed over the valid levels (the masked ones have probability 0 under both)
        div = torch.where(valid, logq.exp() * (logq - logp), torch.zeros_like(logp)).sum(dim=2).sum(dim=1).mean()
        loss = ce + kl * div
        opt.zero_grad()
        loss.backward()
        opt.step()
        stats.append((float(ce.detach()), float(div.detach())))
    model.policy.eval()
    with torch.inference_mode():
        agree = float((model.policy.levels(x, m).argmax(dim=2)[torch.arange(n), i] == k).float().mean())
    return {"ce_first": stats[0][0], "ce_last": stats[-1][0], "kl_first": stats[0][1], "kl_last": stats[-1][1],
            "label_agreement": agree}

"""Probes of a job-level DL2 policy's search space on the tuning traces (docs/dl2.md, round 12).

Measurements, not models to ship: how far a row's top logit stands from its next valid one
(:func:`logit_margins`: can a bias of a few units change decisions?), what a state-independent
prior by rank reaches (:func:`prior_jct`: the logits s · W h + b plus a large bias on one level per
rank group), where a point of ``--es-basis``'s space lies (:func:`basis_jct`), and which levels a
teacher's allocation takes by rank group (:func:`teacher_levels_by_group`), and what the best point
of ``--es-features``'s row prior reaches (:func:`feature_fit`: Θ fitted to a teacher's levels, a
measurement of the space's reach, never a start of training; docs/dl2.md, round 13), and what a first
generation of a search around the warm-up plays (:func:`member_spread`: with or without work-conserving rows;
round 16).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from dlsched.registry import make_policy
from dlsched.rl.env import DL2Env
from dlsched.rl.es import at_scale, es_basis, es_features, greedy_episode, lift, rank_group, set_theta, theta, with_prior
from dlsched.rl.networks import level_features, row_features
from dlsched.rl.policy import DL2Policy, Model, choose, load_checkpoint
from dlsched.rl.train import TrainConfig, mean_jct, setting, teacher_picker

#: the tuning traces of ``train dl2`` (never the validation seeds 1-20)
TUNE = TrainConfig().tune_seeds
#: the bias that makes a level the choice of its row (the network's logits stay within ±20)
PRIOR = 50.0


def _tuning(model: Model, seeds: Sequence[int]) -> DL2Env:
    traces, cluster, speed = setting(TrainConfig(), seeds)
    return DL2Env(traces, cluster, speed, model.spec, reward="jct")


def logit_margins(checkpoint: str | Path, seeds: Sequence[int] = TUNE) -> dict:
    """Over the states of the greedy episodes on ``seeds``: per window row with more than one valid
    level, the top valid logit minus the next one; their percentiles, the share below 1, 2, 4, 8,
    and how often each level is chosen."""
    model = load_checkpoint(checkpoint)
    env = _tuning(model, seeds)
    J, C = model.spec.J, model.spec.n_levels
    margins, chosen = [], np.zeros(C, dtype=int)
    for k in range(len(seeds)):
        obs, info = env.reset(options={"trace": k})
        done = False
        while not done:
            mask = info["action_mask"]
            valid = mask.reshape(J, C).astype(bool)
            with torch.no_grad():
                z = model.policy.levels(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])[0].numpy()
            rows = valid.sum(axis=1) > 1
            top2 = np.sort(np.where(valid, z, -np.inf)[rows], axis=1)[:, -2:]
            margins += (top2[:, 1] - top2[:, 0]).tolist()
            levels = choose(model, obs, mask)
            chosen += np.bincount(levels[rows], minlength=C)
            obs, _, term, trunc, info = env.step(levels)
            done = term or trunc
    m = np.asarray(margins)
    return {"rows": int(m.size), "percentiles_10_25_50_75_90": np.percentile(m, [10, 25, 50, 75, 90]).round(2).tolist(),
            "share_below": {str(x): round(float((m < x).mean()), 3) for x in (1, 2, 4, 8)},
            "chosen": dict(zip(map(str, model.spec.configs), chosen.tolist()))}


def scale_agreement(checkpoint: str | Path, scales: Sequence[float] = (0.1, 0.01), seeds: Sequence[int] = TUNE) -> dict:
    """Over the states of the checkpoint's greedy episodes on ``seeds``, per logit scale s: the share of
    window rows with a choice whose greedy level at s (z = s · W h + b, Θ = 0) is the one at the
    checkpoint's own s, and where it is not, the network's margin (the top valid W h minus the next)
    at those rows (``--es-scale``: a small s leaves the argmax alone only where s · margin outweighs
    the output bias; docs/dl2.md, round 14)."""
    model = load_checkpoint(checkpoint)
    env = _tuning(model, seeds)
    J, C = model.spec.J, model.spec.n_levels
    own = model.policy.logit_scale
    same = {s: [] for s in scales}
    margin = {s: [] for s in scales}
    for k in range(len(seeds)):
        obs, info = env.reset(options={"trace": k})
        done = False
        while not done:
            mask = info["action_mask"]
            rows = mask.reshape(J, C).sum(axis=1) > 1
            levels = choose(model, obs, mask)
            model.policy.logit_scale = 1.0
            with torch.no_grad():        # W h alone: z at s = 1 less the bias
                wh = (model.policy.levels(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])[0]
                      - model.policy.body[-1].bias.view(J, C)).numpy()
            top2 = np.sort(np.where(mask.reshape(J, C).astype(bool), wh, -np.inf), axis=1)[:, -2:]
            for s in scales:
                model.policy.logit_scale = s
                agree = (choose(model, obs, mask) == levels)[rows]
                same[s] += agree.tolist()
                margin[s] += (top2[rows, 1] - top2[rows, 0])[~agree].tolist()
            model.policy.logit_scale = own
            obs, _, term, trunc, info = env.step(levels)
            done = term or trunc
    return {f"s={s:g}": {"rows": len(same[s]), "same": round(float(np.mean(same[s])), 4),
                         "margin_where_not_p50_p90": (np.percentile(margin[s], [50, 90]).round(3).tolist()
                                                      if margin[s] else [])} for s in scales}


def prior_jct(checkpoint: str | Path, levels: int | Sequence[int], scale: float = 0.01,
              seeds: Sequence[int] = TUNE) -> float:
    """Mean JCT on ``seeds`` (event-driven, as ``train`` evaluates) of the policy whose logits are
    ``scale`` · W h + b + :data:`PRIOR` on ``levels`` (one level for every row, or one per rank group,
    :func:`dlsched.rl.es.rank_group`); a row for which that level is not valid takes the network's choice."""
    model = load_checkpoint(checkpoint)
    J, C = model.spec.J, model.spec.n_levels
    group = rank_group(J)
    per_row = np.full(J, levels) if np.ndim(levels) == 0 else np.asarray(levels)[group]
    prior = np.zeros((J, C))
    prior[np.arange(J), per_row] = PRIOR
    v = theta(model)
    v[0] = float(np.log(scale))
    set_theta(model, v + torch.from_numpy(np.concatenate([[0.0], prior.ravel()])).to(v.dtype))
    traces, cluster, speed = setting(TrainConfig(), seeds)
    return mean_jct(lambda: DL2Policy(model), traces, cluster, speed)


def basis_jct(checkpoint: str | Path, point: Sequence[float], seeds: Sequence[int] = TUNE) -> float:
    """Mean JCT on ``seeds`` at θ = ``point`` of :func:`dlsched.rl.es.es_basis` (log s, then (a, b, c, d)
    per rank group) from the checkpoint."""
    model = load_checkpoint(checkpoint)
    v = theta(model)
    set_theta(model, v + torch.from_numpy(es_basis(model.spec) @ np.asarray(point, dtype=float)).to(v.dtype))
    traces, cluster, speed = setting(TrainConfig(), seeds)
    return mean_jct(lambda: DL2Policy(model), traces, cluster, speed)


def teacher_levels_by_group(checkpoint: str | Path, teacher: str, seeds: Sequence[int] = TUNE) -> dict:
    """How often the teacher's allocation, as levels of the checkpoint's menu
    (:func:`dlsched.rl.train.teacher_levels`), takes each level in each rank group (window jobs only)."""
    configs = load_checkpoint(checkpoint).spec.configs
    _, _, A, N = teacher_states(checkpoint, teacher, seeds)
    group = np.broadcast_to(rank_group(A.shape[1]), A.shape)
    jobs = np.arange(A.shape[1])[None, :] < N[:, None]
    counts = np.zeros((group.max() + 1, len(configs)), dtype=int)
    np.add.at(counts, (group[jobs], A[jobs]), 1)
    return {f"group {g}": {str(configs[c]): int(counts[g, c]) for c in np.flatnonzero(counts[g])}
            for g in range(len(counts))}


def teacher_states(checkpoint: str | Path, teacher: str, seeds: Sequence[int] = TUNE):
    """The states of ``teacher``'s episodes on ``seeds`` in the checkpoint's job-level environment:
    observations (N, J, F), level masks (N, J, C), the teacher's levels (N, J) and the window's
    jobs in each state (N,; rows below it hold a job)."""
    model = load_checkpoint(checkpoint)
    env = _tuning(model, seeds)
    J, C = model.spec.J, model.spec.n_levels
    X, M, A, N = [], [], [], []
    for k in range(len(seeds)):
        act = teacher_picker(env, lambda: make_policy(teacher))
        obs, info = env.reset(options={"trace": k})
        done = False
        while not done:
            a = act(obs, info, True)
            X.append(obs.copy())
            M.append(info["action_mask"].reshape(J, C).copy())
            A.append(np.asarray(a).copy())
            N.append(len(env.slot.jobs))
            obs, _, term, trunc, info = env.step(a)
            done = term or trunc
    return np.stack(X), np.stack(M), np.stack(A), np.asarray(N)


def feature_fit(checkpoint: str | Path, teacher: str, seeds: Sequence[int] = TUNE, *, steps: int = 300,
                gains: Sequence[float] = (1.0, 4.0), scales: Sequence[float] = (0.01, 1.0)) -> dict:
    """The reach of ``--es-features``'s space: Θ of the row prior fitted by maximum likelihood to
    ``teacher``'s levels (the softmax of φᵀ Θ ψ over each window job's valid levels; L-BFGS, ``steps``
    iterations) on the states of its episodes on ``seeds``; then the mean JCT on ``seeds`` of the
    checkpoint with logit scale s and row prior g · Θ, for s in ``scales`` and g in ``gains`` (s small:
    the prior alone decides), and the fitted prior's agreement with the teacher's levels."""
    model = with_prior(load_checkpoint(checkpoint))
    spec = model.spec
    X, M, A, _ = teacher_states(checkpoint, teacher, seeds)
    x = torch.from_numpy(X)
    rows = torch.from_numpy(M.sum(axis=2) > 1)          # window jobs (an empty row has level 0 only)
    phi = row_features(x, spec)[rows]                   # (n, P)
    mask = torch.from_numpy(M)[rows].bool()
    target = torch.from_numpy(A)[rows].long()
    psi = torch.from_numpy(level_features(spec)).float()
    T = torch.zeros(model.policy.prior.shape, requires_grad=True)
    opt = torch.optim.LBFGS([T], max_iter=steps, line_search_fn="strong_wolfe")

    def loss():
        opt.zero_grad()
        z = (phi @ T @ psi.t()).masked_fill(~mask, -1e9)
        out = torch.nn.functional.cross_entropy(z, target)
        out.backward()
        return out
    opt.step(loss)
    with torch.no_grad():
        z = (phi @ T @ psi.t()).masked_fill(~mask, -1e9)
        agree = float((z.argmax(dim=1) == target).float().mean())
        nll = float(torch.nn.functional.cross_entropy(z, target))
    traces, cluster, speed = setting(TrainConfig(), seeds)
    base = theta(model)
    jct = {}
    for s in scales:
        for g in gains:
            v = base.clone()
            v[0] = float(np.log(s))
            v[-T.numel():] = g * T.detach().flatten()
            set_theta(model, v)
            jct[f"s={s:g}, gain={g:g}"] = mean_jct(lambda: DL2Policy(model), traces, cluster, speed)
    return {"rows": int(rows.sum()), "agreement": round(agree, 4), "nll": round(nll, 4),
            "theta": T.detach().numpy().round(3).tolist(), "tune_jct": jct}


def member_spread(checkpoint: str | Path, sigma: float = 0.5, scale: float = 0.1, members: int = 5, seed: int = 0,
                  seeds: Sequence[int] = TUNE) -> dict:
    """What the members of a first ``--es-features`` generation play: the checkpoint at logit scale ``scale``
    (:func:`dlsched.rl.es.at_scale`) with Θ = 0 and with ``members`` priors Θ ~ N(0, σ² I) in the searched
    coordinates (:func:`dlsched.rl.es.es_features`, held scale), each played greedily on ``seeds`` in the
    training environment (episodes cut at ``TrainConfig.max_slots``). Per member: its return over Θ = 0's
    (the total JCT in slots, > 1 worse) and how many of its episodes were cut, i.e. left a job waiting to
    the end (docs/dl2.md, round 16)."""
    model = at_scale(with_prior(load_checkpoint(checkpoint)), scale)
    env = _tuning(model, seeds)
    E = es_features(model.spec, scale=False)
    start = theta(model)
    rng = np.random.default_rng(seed)

    def play(v) -> tuple[float, int]:
        set_theta(model, v)
        episodes = [greedy_episode(env, model, k) for k in range(len(seeds))]
        return sum(r for r, _ in episodes), sum(cut for _, cut in episodes)

    base, base_cut = play(start)
    out = []
    for _ in range(members):
        v = start + torch.from_numpy(lift(sigma * rng.standard_normal(E.shape[1]), E, start.numel())).to(start.dtype)
        total, cut = play(v)
        out.append({"return_over_warm_up": round(total / base, 3), "episodes_cut": cut})
    return {"leave_out": model.spec.leave_out, "sigma": sigma, "scale": scale, "warm_up_episodes_cut": base_cut,
            "members": out}

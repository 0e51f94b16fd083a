"""DL2's design studies (docs/dl2.md) as study tasks: which teacher to copy, how well the warm-up
copies it, and how good the critic's advantage is. Traces are tuning (2000-2002) and training
(1000-1047) seeds of DL2's job mix, never the validation seeds 1-20.

* ``dl2.teacher``: a candidate teacher (``NAME`` or ``NAME:KEY=VALUE,...``, JSON values) simulated
  event-driven, and replayed in :class:`~dlsched.rl.env.DL2Env` at DL2's slot boundaries (what the
  warm-up imitates: the best a copy can do) and, with ``events``, at the boundaries and at every
  arrival and completion; mean JCT in seconds.
* ``dl2.warmup``: the teacher replayed on training and held-out traces, the warm-up of ``dlsched
  train dl2``, agreement on both sets and per kind of action, the held-out disagreements that are
  ties in dominant share; with ``jct``, the mean JCT of the teacher, the teacher at DL2's slots and
  the warm-up network.
* ``dl2.advantage``: forks of the greedy episode at random slots, the true advantage of the slot's
  sampled actions against the critic's estimate G_t − V(s_t) (their spread and correlation).
* ``dl2.horizon``: the forks of ``--baseline forks`` (job-level actions), every candidate continued
  to the end of its episode; the leave-one-out advantages cut after H slots, and cut after H slots
  plus a fitted value of the cut-off state, against those to the end (:func:`horizon_task`).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from dlsched.errors import InputError
from dlsched.registry import make_policy
from dlsched.rl.env import DL2Env
from dlsched.rl.forks import continue_greedy, draw_fork
from dlsched.rl.policy import DL2Policy, Model, choose, load_checkpoint
from dlsched.rl.slot import Spec, action_kind
from dlsched.rl.train import (TrainConfig, _seeds, agreement, agreement_by_kind, fork, mean_jct, rollout, sampler,
                              setting, teacher_picker, teacher_samples, warmup)
from dlsched.sim.run import parse_params


def parse_teacher(text: str) -> tuple[str, dict]:
    """``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE`` -> (name, options)."""
    name, _, opts = text.partition(":")
    return name, parse_params([o for o in opts.split(",") if o], "teacher option")


def _slotted_jct(make, traces, cluster, speed, spec: Spec, gamma: float, order: str = "share") -> float:
    """Mean JCT of the teacher's allocations issued by DL2's environment (``spec.decide_at``)."""
    env = DL2Env(traces, cluster, speed, spec)
    out = []
    for k in range(len(traces)):
        rollout(env, teacher_picker(env, make, order), gamma, trace=k)
        out.append(float(np.mean(env.result().jct)))
    return float(np.mean(out))


def teacher_task(teacher: str, tune: str = "2000-2002", events: bool = False) -> dict:
    torch.set_num_threads(1)
    cfg = TrainConfig()
    spec = Spec(J=cfg.J)
    traces, cluster, speed = setting(cfg, _seeds(tune))
    name, opts = parse_teacher(teacher)
    make = lambda: make_policy(name, **opts)  # noqa: E731
    row = {"teacher": teacher, "tune": tune, "event_driven": mean_jct(make, traces, cluster, speed),
           "in_dl2_slots": _slotted_jct(make, traces, cluster, speed, spec, 0.95)}
    if events:
        row["in_dl2_slots_and_events"] = _slotted_jct(make, traces, cluster, speed, replace(spec, decide_at="events"), 0.95)
    return row


def warmup_task(teacher: str = "drf", traces: str = "1000-1011", held_out: str = "2000-2002", epochs: int = 15,
                lr_final: float | None = None, seed: int = 0, order: str = "share", decide_at: str = "slots",
                rows: str = "arrival", jct: bool = False) -> dict:
    torch.set_num_threads(1)
    t0 = time.monotonic()
    cfg = TrainConfig()
    spec = Spec(J=cfg.J, decide_at=decide_at, rows=rows)
    name, opts = parse_teacher(teacher)
    make = lambda: make_policy(name, **opts)  # noqa: E731
    data = {}
    for part, seeds in (("train", _seeds(traces)), ("held_out", _seeds(held_out))):
        tr, cluster, speed = setting(cfg, seeds)
        data[part] = teacher_samples(DL2Env(tr, cluster, speed, spec), make, range(len(tr)), cfg.gamma, order)[:3]
    model = Model.new(spec, cfg.hidden, seed=seed)
    losses = warmup(model, *data["train"], epochs=epochs, lr=cfg.warmup_lr, batch=cfg.batch, seed=seed,
                    lr_final=lr_final)
    X, M, A = data["held_out"]
    with torch.inference_mode():
        pred = model.policy(torch.from_numpy(X), torch.from_numpy(M)).argmax(dim=1).numpy()
    share = X[:, :, spec.n_types + 2]
    wrong = np.flatnonzero(pred != A)
    # a disagreement is a tie when both actions add to a job and the two rows have the same dominant share
    both_jobs = [k for k in wrong
                 if action_kind(int(pred[k]), spec.J)[0] != "stop" and action_kind(int(A[k]), spec.J)[0] != "stop"]
    ties = int(np.sum(np.isclose(share[both_jobs, A[both_jobs] % spec.J], share[both_jobs, pred[both_jobs] % spec.J])))
    out = {"teacher": teacher, "order": order, "decide_at": decide_at, "rows": rows, "train_traces": traces,
           "held_out_traces": held_out, "epochs": epochs, "samples": {k: int(len(v[2])) for k, v in data.items()},
           "loss": losses, "agreement_train": agreement(model, *data["train"]),
           "agreement_held_out": agreement(model, X, M, A), "held_out_by_action": agreement_by_kind(model, X, M, A),
           "held_out_disagreements": int(len(wrong)), "of_which_ties_in_dominant_share": ties}
    if jct:
        tr, cluster, speed = setting(cfg, _seeds(held_out))
        out["mean_jct_held_out"] = {"teacher": mean_jct(make, tr, cluster, speed),
                                    "teacher_in_dl2_slots": _slotted_jct(make, tr, cluster, speed, spec, cfg.gamma, order),
                                    "warmup_network": mean_jct(lambda: DL2Policy(model), tr, cluster, speed)}
    return {**out, "seconds": time.monotonic() - t0}


def advantage_task(checkpoint: str | None = None, traces: str = "2000-2002", p_branch: float = 0.15,
                   temperature: float = 1.0, gamma: float | None = None, seed: int = 0) -> dict:
    torch.set_num_threads(1)
    model = load_checkpoint(checkpoint)
    cfg = TrainConfig()
    gamma = cfg.gamma if gamma is None else gamma
    tr, cluster, speed = setting(cfg, _seeds(traces))
    env = DL2Env(tr, cluster, speed, model.spec, reward="jct")
    rng = np.random.default_rng(seed)
    greedy = lambda obs, info: choose(model, obs, info["action_mask"])  # noqa: E731
    exact, critic, jct_change = [], [], []

    def rest(e: DL2Env, first) -> list[float]:
        """Per-slot rewards from e's open slot to the end: ``first`` acts in this slot, greedy after."""
        out, obs, info, act = [], e.slot.observation(), e._info(slot_end=False), first
        while True:
            a = act(obs, info)
            obs, r, term, trunc, info = e.step(a if isinstance(a, int) else a[0])
            if info["slot_end"]:
                out.append(r)
                act = greedy
                if term or trunc:
                    return out

    for k in range(len(tr)):
        env.reset(options={"trace": k})
        obs, info, done, slot_start = env.slot.observation(), env._info(slot_end=False), False, True
        samp = sampler(env, model, rng, 0.0, temperature)
        while not done:
            if slot_start and rng.random() < p_branch:
                with torch.inference_mode():
                    v = float(model.value(torch.from_numpy(env.slot.observation())[None])[0])
                g_env, s_env = fork(env), fork(env)
                changed = []

                def sample_and_note(o, i):
                    a, _ = samp(o, i, False)
                    changed.append(a != greedy(o, i))
                    return a

                rg, rs = rest(g_env, greedy), rest(s_env, sample_and_note)
                if any(changed):
                    n = max(len(rg), len(rs))
                    rg, rs = np.pad(rg, (0, n - len(rg))), np.pad(rs, (0, n - len(rs)))
                    disc = gamma ** np.arange(n)
                    exact.append(float(disc @ (rs - rg)))
                    critic.append(float(disc @ rs) - v)
                    jct_change.append(float((rg - rs).sum()) * env.dl2_spec.slot_seconds / len(env.trace))
            obs, r, term, trunc, info = env.step(greedy(obs, info))
            done = term or trunc
            slot_start = bool(info["slot_end"])
    ex, cr = np.array(exact), np.array(critic)
    if not len(ex):
        return {"checkpoint": checkpoint or "shipped", "traces": traces, "forks": 0}
    return {"checkpoint": checkpoint or "shipped", "traces": traces, "forks": len(ex), "gamma": gamma,
            "temperature": temperature,
            "exact_advantage": {"mean": float(ex.mean()), "std": float(ex.std()), "share_positive": float((ex > 0).mean())},
            "critic_advantage": {"mean": float(cr.mean()), "std": float(cr.std())},
            "correlation": float(np.corrcoef(ex, cr)[0, 1]) if len(ex) > 2 else None,
            "mean_jct_change_s": {"mean": float(np.mean(jct_change)), "min": float(np.min(jct_change)),
                                  "max": float(np.max(jct_change))}}


def fork_continuations(env: DL2Env, model: Model, rng: np.random.Generator, n_forks: int, *, p_fork: float,
                       candidates: int, temperature: float, cutoffs: tuple[int, ...], hold: int = 0) -> list[dict]:
    """Greedy episodes on ``env``'s traces in turn, forked where and as
    :func:`~dlsched.rl.forks.fork_episode` forks (the same draws from ``rng``), every candidate
    continued to the end of its episode, the forked job held at its level for ``hold`` slots (0: to
    the end); per fork its levels, each candidate's per-slot rewards and
    its state after slot H of ``cutoffs`` (the last state if the episode ended before)."""
    out: list[dict] = []
    k = 0
    while len(out) < n_forks:
        obs, info = env.reset(options={"trace": k % len(env.traces)})
        k += 1
        done, forks_before = False, len(out)
        while not done and len(out) < n_forks:
            levels, i, _, ks = draw_fork(env, model, obs, info["action_mask"], rng, p_fork=p_fork,
                                         candidates=candidates, temperature=temperature)
            if i is not None:
                rewards, states = [], []
                for level in ks:
                    alt = levels.copy()
                    alt[i] = level
                    rec: list = []
                    continue_greedy(fork(env), model, alt, 0, (int(env.slot.jobs[i]), int(level)), record=rec,
                                    hold_slots=hold)
                    rewards.append(np.array([r for r, _ in rec]))
                    states.append([rec[min(H, len(rec)) - 1][1] for H in cutoffs])
                out.append({"levels": ks, "rewards": rewards, "states": states})
            obs, _, term, trunc, info = env.step(levels)
            done = term or trunc
        if k >= len(env.traces) and len(out) == forks_before == 0:
            break   # a whole pass over the traces without a fork: nothing to fork
    return out


def leave_one_out(R: np.ndarray) -> np.ndarray:
    """A_c = R_c − mean of the other candidates' returns (``fork_episode``'s advantage)."""
    return R - (R.sum() - R) / (len(R) - 1)


def ridge_out_of_fold(F: np.ndarray, y: np.ndarray, groups: np.ndarray, folds: int = 5, alpha: float = 1.0) -> np.ndarray:
    """Out-of-fold predictions of a ridge regression of y on F (standardised, with intercept);
    folds by group, so no fork's own candidates are in the fit that predicts them."""
    pred = np.empty_like(y)
    fold = np.searchsorted(np.unique(groups), groups) % folds
    for f in range(folds):
        tr, te = fold != f, fold == f
        if not te.any():
            continue
        mu, sd = F[tr].mean(0), F[tr].std(0) + 1e-8
        X = (F[tr] - mu) / sd
        w = np.linalg.solve(X.T @ X + alpha * len(X) * np.eye(X.shape[1]), X.T @ (y[tr] - y[tr].mean()))
        pred[te] = ((F[te] - mu) / sd) @ w + y[tr].mean()
    return pred


def _agreement(a: np.ndarray, ref: np.ndarray, groups: np.ndarray) -> dict:
    """Pooled correlation of advantages ``a`` with ``ref``, the share of ``ref``'s nonzero advantages
    with the same sign, the share of forks whose best candidate is the same, and the mean within-fork
    rank correlation (Spearman)."""
    nz = ref != 0
    best, rank = [], []
    for g in np.unique(groups):
        x, y = a[groups == g], ref[groups == g]
        best.append(np.argmax(x) == np.argmax(y))
        if np.ptp(x) > 0 and np.ptp(y) > 0:
            rank.append(np.corrcoef(np.argsort(np.argsort(x)), np.argsort(np.argsort(y)))[0, 1])
    return {"correlation": float(np.corrcoef(a, ref)[0, 1]) if np.ptp(a) > 0 else 0.0,
            "sign_agreement": float(np.mean(np.sign(a[nz]) == np.sign(ref[nz]))),
            "same_best": float(np.mean(best)), "rank_correlation": float(np.mean(rank)) if rank else None}


def _size_bias(a: np.ndarray, workers: np.ndarray, groups: np.ndarray) -> float | None:
    """Mean over forks of the correlation between a candidate's workers and its advantage (> 0: the
    estimator favours larger sizes)."""
    cs = [np.corrcoef(workers[groups == g], a[groups == g])[0, 1] for g in np.unique(groups)
          if np.ptp(workers[groups == g]) > 0 and np.ptp(a[groups == g]) > 0]
    return float(np.mean(cs)) if cs else None


def horizon_task(checkpoint: str | None = None, traces: str = "1000-1023", forks: int = 40, candidates: int = 5,
                 p_fork: float = 0.1, temperature: float = 1.0, cutoffs: str = "5,15,30", hold: int = 0,
                 seed: int = 0) -> dict:
    """The bias of a fork's horizon (module docstring): per cut-off H, the advantages of the return
    of the first H slots (``--horizon H``) and of that return plus V̂(s_H), V̂ a ridge regression of
    the rest of the return on the cut-off state fitted out of fold, each against the advantages to
    the end, over the forks whose returns to the end differ. The forked job keeps its level for
    ``hold`` slots (0: to the end; a hold of H is what ``--horizon H`` plays, so the cut-off at H
    is exactly that estimator and the end its truth)."""
    torch.set_num_threads(1)
    cpu = time.process_time()
    model = load_checkpoint(checkpoint)
    if model.spec.actions != "jobs":
        raise InputError(checkpoint or "shipped checkpoint", "spec.actions", "a checkpoint with job-level actions "
                         "(`dlsched train dl2 --actions jobs ...`)", model.spec.actions)
    cfg = TrainConfig()
    tr, cluster, speed = setting(cfg, _seeds(traces))
    env = DL2Env(tr, cluster, speed, model.spec, reward="jct", max_slots=cfg.max_slots)
    Hs = tuple(int(h) for h in str(cutoffs).split(","))
    played = fork_continuations(env, model, np.random.default_rng(seed), forks, p_fork=p_fork,
                                candidates=candidates, temperature=temperature, cutoffs=Hs, hold=hold)
    keep = [f for f in played if np.ptp([r.sum() for r in f["rewards"]]) > 0]
    row = {"checkpoint": checkpoint or "shipped", "traces": traces, "forks": len(played),
           "forks_kept": len(keep), "candidates": candidates, "hold": hold, "seed": seed}
    if len(keep) < 2:
        return {**row, "cpu_seconds": time.process_time() - cpu}
    groups = np.repeat(np.arange(len(keep)), [len(f["levels"]) for f in keep])
    workers = np.array([model.spec.configs[k][0] for f in keep for k in f["levels"]], float)
    R_end = [np.array([r.sum() for r in f["rewards"]]) for f in keep]
    A_end = np.concatenate([leave_one_out(R) for R in R_end])
    row["slots_to_end"] = float(np.mean([len(r) for f in keep for r in f["rewards"]]))
    row["end"] = {"size_bias": _size_bias(A_end, workers, groups), "advantage_rms": float(np.sqrt(np.mean(A_end ** 2)))}
    for n, H in enumerate(Hs):
        R_H = [np.array([r[:H].sum() for r in f["rewards"]]) for f in keep]
        A_H = np.concatenate([leave_one_out(R) for R in R_H])
        tail = np.concatenate(R_end) - np.concatenate(R_H)
        S = np.stack([s[n].ravel() for f in keep for s in f["states"]])
        V = ridge_out_of_fold(np.column_stack([S, (S != 0).sum(1)]), tail, groups)
        A_V = np.concatenate([leave_one_out(Rh + V[groups == g]) for g, Rh in enumerate(R_H)])
        row[f"H{H}"] = {"truncated": {**_agreement(A_H, A_end, groups), "size_bias": _size_bias(A_H, workers, groups),
                                      "advantage_rms": float(np.sqrt(np.mean(A_H ** 2)))},
                        "bootstrapped": {**_agreement(A_V, A_end, groups), "size_bias": _size_bias(A_V, workers, groups),
                                         "tail_r2": float(1 - np.var(tail - V) / max(np.var(tail), 1e-12))}}
    return {**row, "cpu_seconds": time.process_time() - cpu}

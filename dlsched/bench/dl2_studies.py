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
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from dlsched.registry import make_policy
from dlsched.rl.env import DL2Env
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

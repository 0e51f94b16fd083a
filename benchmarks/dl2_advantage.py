"""Why DL2's actor-critic did not improve on its warm-up: the advantage's signal against its noise (docs/dl2.md).

The simulator is deterministic, so the true advantage of a slot's sampled actions over the greedy
policy can be measured: fork the greedy episode at the slot (:func:`dlsched.rl.train.fork`), play
that slot with samples from π and the rest greedily, and compare the discounted returns of the two
continuations from the slot on. The actor-critic instead credits the slot with G_t − V(s_t), the
sampled continuation's discounted return minus the critic's estimate. This script prints, over the
forks that changed the slot, the spread of both and their correlation (1 would be a perfect
critic), using the checkpoint's value network. Traces: tuning seeds (never the validation ones).

    PYTHONPATH=$PWD python benchmarks/dl2_advantage.py --checkpoint dlsched/rl/checkpoints/dl2-default.pt
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.policy import choose, load_checkpoint
from dlsched.rl.train import TrainConfig, _seeds, fork, sampler, setting


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--traces", default="2000-2002")
    ap.add_argument("--p-branch", type=float, default=0.15)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--gamma", type=float, default=TrainConfig().gamma)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.monotonic()
    model = load_checkpoint(args.checkpoint)
    cfg = TrainConfig()
    traces, cluster, speed = setting(cfg, _seeds(args.traces))
    env = DL2Env(traces, cluster, speed, model.spec, reward="jct")
    rng = np.random.default_rng(args.seed)
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

    for k in range(len(traces)):
        env.reset(options={"trace": k})
        obs, info, done, slot_start = env.slot.observation(), env._info(slot_end=False), False, True
        samp = sampler(env, model, rng, 0.0, args.temperature)
        while not done:
            if slot_start and rng.random() < args.p_branch:
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
                    disc = args.gamma ** np.arange(n)
                    exact.append(float(disc @ (rs - rg)))
                    critic.append(float(disc @ rs) - v)
                    jct_change.append(float((rg - rs).sum()) * env.dl2_spec.slot_seconds / len(env.trace))
            obs, r, term, trunc, info = env.step(greedy(obs, info))
            done = term or trunc
            slot_start = bool(info["slot_end"])
    ex, cr = np.array(exact), np.array(critic)
    print(json.dumps({"checkpoint": args.checkpoint or "shipped", "traces": args.traces, "forks": len(ex),
                      "gamma": args.gamma, "temperature": args.temperature,
                      "exact_advantage": {"mean": float(ex.mean()), "std": float(ex.std()),
                                          "share_positive": float((ex > 0).mean())},
                      "critic_advantage": {"mean": float(cr.mean()), "std": float(cr.std())},
                      "correlation": float(np.corrcoef(ex, cr)[0, 1]) if len(ex) > 2 else None,
                      "mean_jct_change_s": {"mean": float(np.mean(jct_change)), "min": float(np.min(jct_change)),
                                            "max": float(np.max(jct_change))},
                      "seconds": time.monotonic() - t0}))


if __name__ == "__main__":
    main()

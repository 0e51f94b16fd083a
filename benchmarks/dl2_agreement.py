"""Why DL2's warm-up disagrees with its teacher (docs/dl2.md, "Warm-up agreement").

Replays the teacher on training and held-out traces of DL2's job mix, trains the policy network by
the warm-up of ``dlsched train dl2`` and prints one JSON object: agreement on both sets, per kind of
the teacher's action, and how many held-out disagreements are ties, i.e. the network chose another
row whose dominant share equals the one of the teacher's row (the teacher takes the earliest such
row). With ``--jct`` it also simulates, on the held-out traces, the teacher itself (event-driven),
the teacher's allocations issued only at DL2's slot boundaries (the best an exact copy can do) and
the warm-up network deciding greedily: how much of the copy's JCT gap is the slotting and how
much the imitation. ``--order`` issues the teacher's allocation in DRF's progressive-filling order
(``share``) or Optimus's marginal-gain order (``gain``, :func:`dlsched.rl.train.gain_action`).
Usage (from the repository root):

    PYTHONPATH=$PWD python benchmarks/dl2_agreement.py --traces 1000-1005 --epochs 10
    PYTHONPATH=$PWD python benchmarks/dl2_agreement.py --traces 1000-1011 --epochs 15
    PYTHONPATH=$PWD python benchmarks/dl2_agreement.py --teacher optimus --order gain --jct
    PYTHONPATH=$PWD python benchmarks/dl2_agreement.py --teacher srpt-greedy --decide-at events --rows remaining --order job --epochs 10 --lr-final 0.0002

``--decide-at`` and ``--rows`` set the state's decision timing and row order (:class:`dlsched.rl.slot.Spec`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.policy import Model
from dlsched.rl.slot import DECIDE_AT, ROWS, Spec, action_kind
from dlsched.rl.policy import DL2Policy
from dlsched.rl.train import (ORDERS, TrainConfig, _seeds, agreement, agreement_by_kind, mean_jct, rollout, setting,
                              teacher_picker, teacher_samples, warmup)
from dlsched.registry import make_policy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="drf")
    ap.add_argument("--traces", default="1000-1011", help="training trace seeds")
    ap.add_argument("--held-out", default="2000-2002", help="held-out trace seeds (the tuning traces)")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--lr-final", type=float, default=None, help="cosine decay of the warm-up's learning rate to this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--order", choices=ORDERS, default="share", help="order of the teacher's actions in a slot")
    ap.add_argument("--decide-at", choices=DECIDE_AT, default="slots", help="when DL2 decides")
    ap.add_argument("--rows", choices=ROWS, default="arrival", help="order of the window's rows")
    ap.add_argument("--jct", action="store_true", help="also simulate teacher, slotted teacher and warm-up on the held-out traces")
    ap.add_argument("--save", default=None, help="write the warm-up model to this checkpoint")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig()
    spec = Spec(J=cfg.J, decide_at=args.decide_at, rows=args.rows)
    t0 = time.monotonic()
    data = {}
    for name, seeds in (("train", _seeds(args.traces)), ("held_out", _seeds(args.held_out))):
        traces, cluster, speed = setting(cfg, seeds)
        env = DL2Env(traces, cluster, speed, spec)
        data[name] = teacher_samples(env, lambda: make_policy(args.teacher), range(len(traces)), cfg.gamma,
                                     args.order)[:3]
    model = Model.new(spec, cfg.hidden, seed=args.seed)
    losses = warmup(model, *data["train"], epochs=args.epochs, lr=cfg.warmup_lr, batch=cfg.batch, seed=args.seed,
                    lr_final=args.lr_final)
    X, M, A = data["held_out"]
    with torch.inference_mode():
        pred = model.policy(torch.from_numpy(X), torch.from_numpy(M)).argmax(dim=1).numpy()
    share = X[:, :, spec.n_types + 2]
    wrong = np.flatnonzero(pred != A)
    # a disagreement is a tie when both actions add to a job and the two rows have the same dominant share
    both_jobs = [k for k in wrong if action_kind(int(pred[k]), spec.J)[0] != "stop" and action_kind(int(A[k]), spec.J)[0] != "stop"]
    ties = int(np.sum(np.isclose(share[both_jobs, A[both_jobs] % spec.J], share[both_jobs, pred[both_jobs] % spec.J])))
    jct = {}
    if args.jct:
        traces, cluster, speed = setting(cfg, _seeds(args.held_out))
        env = DL2Env(traces, cluster, speed, spec)
        slotted = []
        for k in range(len(traces)):
            rollout(env, teacher_picker(env, lambda: make_policy(args.teacher), args.order), cfg.gamma, trace=k)
            slotted.append(float(np.mean(env.result().jct)))
        jct = {"teacher": mean_jct(lambda: make_policy(args.teacher), traces, cluster, speed),
               "teacher_in_dl2_slots": float(np.mean(slotted)),
               "warmup_network": mean_jct(lambda: DL2Policy(model), traces, cluster, speed)}
    if args.save:
        from dlsched.rl.policy import save_checkpoint

        model.provenance = {"command": "benchmarks/dl2_agreement.py " + " ".join(sys.argv[1:]),
                            "config": {"teacher": args.teacher, "order": args.order, "seed": args.seed,
                                       "decide_at": args.decide_at, "rows": args.rows}}
        save_checkpoint(model, args.save)
    print(json.dumps({"teacher": args.teacher, "order": args.order, "decide_at": args.decide_at, "rows": args.rows, "mean_jct_held_out": jct, "train_traces": args.traces, "held_out_traces": args.held_out,
                      "epochs": args.epochs, "samples": {k: int(len(v[2])) for k, v in data.items()},
                      "loss": losses, "agreement_train": agreement(model, *data["train"]),
                      "agreement_held_out": agreement(model, X, M, A),
                      "held_out_by_action": agreement_by_kind(model, X, M, A),
                      "held_out_disagreements": int(len(wrong)), "of_which_ties_in_dominant_share": ties,
                      "seconds": time.monotonic() - t0}))


if __name__ == "__main__":
    main()

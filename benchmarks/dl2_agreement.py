"""Why DL2's warm-up disagrees with its teacher (docs/dl2.md, "Warm-up agreement").

Replays the teacher on training and held-out traces of DL2's job mix, trains the policy network by
the warm-up of ``dlsched train dl2`` and prints one JSON object: agreement on both sets, per kind of
the teacher's action, and how many held-out disagreements are ties, i.e. the network chose another
row whose dominant share equals the one of the teacher's row (the teacher takes the earliest such
row). Usage (from the repository root):

    PYTHONPATH=$PWD python benchmarks/dl2_agreement.py --traces 1000-1005 --epochs 10
    PYTHONPATH=$PWD python benchmarks/dl2_agreement.py --traces 1000-1011 --epochs 15
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.policy import Model
from dlsched.rl.slot import Spec, action_kind
from dlsched.rl.train import TrainConfig, _seeds, agreement, agreement_by_kind, setting, teacher_samples, warmup
from dlsched.sim.policies import make_policy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="drf")
    ap.add_argument("--traces", default="1000-1011", help="training trace seeds")
    ap.add_argument("--held-out", default="2000-2002", help="held-out trace seeds (the tuning traces)")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig()
    spec = Spec(J=cfg.J)
    t0 = time.monotonic()
    data = {}
    for name, seeds in (("train", _seeds(args.traces)), ("held_out", _seeds(args.held_out))):
        traces, cluster, speed = setting(cfg, seeds)
        env = DL2Env(traces, cluster, speed, spec)
        data[name] = teacher_samples(env, lambda: make_policy(args.teacher), range(len(traces)), cfg.gamma)[:3]
    model = Model.new(spec, cfg.hidden, seed=args.seed)
    losses = warmup(model, *data["train"], epochs=args.epochs, lr=cfg.warmup_lr, batch=cfg.batch, seed=args.seed)
    X, M, A = data["held_out"]
    with torch.inference_mode():
        pred = model.policy(torch.from_numpy(X), torch.from_numpy(M)).argmax(dim=1).numpy()
    share = X[:, :, spec.n_types + 2]
    wrong = np.flatnonzero(pred != A)
    # a disagreement is a tie when both actions add to a job and the two rows have the same dominant share
    both_jobs = [k for k in wrong if action_kind(int(pred[k]), spec.J)[0] != "stop" and action_kind(int(A[k]), spec.J)[0] != "stop"]
    ties = int(np.sum(np.isclose(share[both_jobs, A[both_jobs] % spec.J], share[both_jobs, pred[both_jobs] % spec.J])))
    print(json.dumps({"teacher": args.teacher, "train_traces": args.traces, "held_out_traces": args.held_out,
                      "epochs": args.epochs, "samples": {k: int(len(v[2])) for k, v in data.items()},
                      "loss": losses, "agreement_train": agreement(model, *data["train"]),
                      "agreement_held_out": agreement(model, X, M, A),
                      "held_out_by_action": agreement_by_kind(model, X, M, A),
                      "held_out_disagreements": int(len(wrong)), "of_which_ties_in_dominant_share": ties,
                      "seconds": time.monotonic() - t0}))


if __name__ == "__main__":
    main()

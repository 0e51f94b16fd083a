"""Which teacher to warm DL2 up on (docs/dl2.md, "Choosing the teacher").

For each candidate teacher (a registered policy with options, ``NAME`` or ``NAME:KEY=VALUE,...``,
values parsed as JSON) prints one JSON line with its mean JCT on the tuning traces of DL2's job mix
(not the validation traces), simulated event-driven and with its allocations issued only at DL2's
slot boundaries (replayed in :class:`~dlsched.rl.env.DL2Env` exactly as the warm-up sees it: the
best a copy can do), and, when ``--events`` is given, issued at DL2's boundaries and at every
arrival and completion (``Spec.decide_at = "events"``). Usage (from the repository root):

    PYTHONPATH=$PWD python benchmarks/dl2_teachers.py drf optimus optimus:gain=\\"relative\\" optimus-greedy
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.slot import Spec
from dlsched.rl.train import TrainConfig, _seeds, mean_jct, rollout, setting, teacher_picker
from dlsched.registry import make_policy
from dlsched.sim.run import parse_params


def parse_teacher(text: str) -> tuple[str, dict]:
    """``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE`` -> (name, options)."""
    name, _, opts = text.partition(":")
    return name, parse_params([o for o in opts.split(",") if o], "teacher option")


def in_dl2_slots(make, traces, cluster, speed, spec: Spec, decide_at: str) -> float:
    """Mean JCT of the teacher's allocations issued by DL2's environment (progressive filling)."""
    env = DL2Env(traces, cluster, speed, replace(spec, decide_at=decide_at))
    out = []
    for k in range(len(traces)):
        rollout(env, teacher_picker(env, make), 0.95, trace=k)
        out.append(float(np.mean(env.result().jct)))
    return float(np.mean(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("teachers", nargs="+", help="NAME or NAME:KEY=VALUE,... (JSON values)")
    ap.add_argument("--tune", default="2000-2002", help="trace seeds (the tuning traces)")
    ap.add_argument("--events", action="store_true", help="also issue the allocations at arrivals and completions")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig()
    spec = Spec(J=cfg.J)
    traces, cluster, speed = setting(cfg, _seeds(args.tune))
    for text in args.teachers:
        name, opts = parse_teacher(text)
        make = lambda: make_policy(name, **opts)  # noqa: E731
        t0 = time.monotonic()
        row = {"teacher": text, "tune": args.tune,
               "event_driven": mean_jct(make, traces, cluster, speed),
               "in_dl2_slots": in_dl2_slots(make, traces, cluster, speed, spec, "slots")}
        if args.events:
            row["in_dl2_slots_and_events"] = in_dl2_slots(make, traces, cluster, speed, spec, "events")
        row["seconds"] = time.monotonic() - t0
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()

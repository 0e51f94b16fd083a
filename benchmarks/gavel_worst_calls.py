"""The worst calls of a Gavel LP policy on Gavel's msr ``0e4a51`` (``36:36:36``) and the garbage collector's part in
them (docs/results/budgets-lp.md, "The worst calls"):

    PYTHONPATH=TREE DLSCHED_DATA=/work/shared/data python benchmarks/gavel_worst_calls.py POLICY BUDGET_MS|none

runs ``dlsched simulate`` in this process with every ``GavelLPPolicy.schedule`` call timed in CPU
(``time.process_time``) and the collector's passes inside each call timed by ``gc.callbacks``; prints the calls'
median, p99 and largest CPU ms, the same less the collector's time, the calls with a full (generation-2) pass,
and the five slowest calls with their collector's ms and active jobs.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
import time

import numpy as np

from dlsched.cli import main as cli
from dlsched.policies import gavel


def main(policy: str, budget: str) -> None:
    data = os.environ.get("DLSCHED_DATA", "../shared/data")
    now = {"gc": 0.0, "full": 0, "start": None}

    def collector(phase, info):
        if phase == "start":
            now["start"] = time.process_time()
        elif now["start"] is not None:
            now["gc"] += time.process_time() - now["start"]
            now["full"] += info["generation"] == 2

    rows = []
    schedule = gavel.GavelLPPolicy.schedule

    def timed(self, state, events):
        now["gc"], now["full"] = 0.0, 0
        c = time.process_time()
        out = schedule(self, state, events)
        rows.append((time.process_time() - c, now["gc"], now["full"], len(state.active)))
        return out

    gc.callbacks.append(collector)
    gavel.GavelLPPolicy.schedule = timed
    args = ["simulate", f"{data}/gavel/msr_seed0_0e4a51.trace", "--cluster", "36:36:36", "--policy", policy,
            "--json", "--bound", "none"] + ([] if budget == "none" else ["--decision-budget", budget])
    with contextlib.redirect_stdout(io.StringIO()):
        cli(args)
    a = np.array(rows)
    cpu, less = a[:, 0] * 1e3, (a[:, 0] - a[:, 1]) * 1e3
    print(f"{policy} budget {budget}: {len(a)} calls, CPU ms median {np.median(cpu):.2f} p99 {np.percentile(cpu, 99):.2f} "
          f"max {cpu.max():.2f} | less the collector: p99 {np.percentile(less, 99):.2f} max {less.max():.2f} | "
          f"calls with a full pass {int((a[:, 2] > 0).sum())}")
    for i in np.argsort(-cpu)[:5].tolist():
        print(f"  call {cpu[i]:.1f} ms, collector {a[i, 1] * 1e3:.1f} ms (full passes {int(a[i, 2])}), {int(a[i, 3])} active")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

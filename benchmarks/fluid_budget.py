"""``fluid`` under decision budgets on a busy DL2 run, side by side (docs/results/fluid-budget.md).

    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data OMP_NUM_THREADS=1 python benchmarks/fluid_budget.py [--json OUT]

Runs ``dlsched simulate dl2:1000:1 --target-load 1.5 --json``, then the same on ``dl2:1000:2`` (a trace
the cut LP was not tuned on) and the quick trace ``dl2:60:1``, one row after another, each in its own
process: ``fluid`` at ``--decision-budget`` 10 and 100 ms (the LP's job count adapting,
``FluidPolicy.adapt_lp_jobs``), ``fluid -P lp_jobs=20`` without a budget (every decision's LP of 20
jobs solved to the end) and ``srpt-greedy`` (the fill alone, no LP); on the quick trace also ``fluid``
(every active job in the LP) and ``fluid -P lp_jobs=4``. Per row: decision latency (wall: the run's
``decision_latency_ms``; CPU: ``time.process_time`` around each ``schedule`` call, measured here),
decisions with an objective, average JCT, the run's wall and CPU seconds and the load average before it; once, ``uptime`` before the first row and the environment
the runs record (versions, machine, git revision).

    ... python benchmarks/fluid_budget.py --shares

instead runs ``fluid -P lp_jobs=20`` over the first 80,000 s of ``dl2:1000:1`` at load 1.5 and, at each
decision with more than 60 active jobs, compares its sizes with srpt-greedy's on the same view: the
cluster's dominant shares and the progress rates of the LP's 20 jobs and of the jobs behind them
(medians; the cause of a cut LP's loss, docs/results/fluid-budget.md).

    ... python benchmarks/fluid_budget.py --profile MIX N BUDGET_MS [--lp-jobs K]

instead profiles one decision of ``decision-scale`` (``dlsched.bench.decision``: the decision at 1 s of
``one_decision`` on ``scene(MIX, N, 0)``, the policy's caches from an unbudgeted ``fluid`` on that state):
its wall and CPU ms, what it answered, and ``cProfile``'s functions by cumulative time (what takes the time
at each budget, docs/results/fluid-budget.md, "The whole call within the budget").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

#: the child that runs each row: the CLI in-process with each decision's CPU time taken around the policy's
#: ``schedule`` (the greedy family's, fluid's included)
TIMED = [sys.executable, str(Path(__file__).with_name("timed_run.py")), "dlsched.policies.greedy:SRPTGreedyPolicy.schedule"]

#: ``--shares``: the run of ``fluid`` in the child, and at each decision with more than 60 active jobs, on the
#: same view, its sizes beside srpt-greedy's: the dominant shares of the cluster (summed) and the progress
#: rates (sum of 1 / remaining time at the size, per hour) of the LP's m jobs and of the jobs behind them
SHARES = r"""
import contextlib, io, json, sys
import numpy as np
from dlsched.cli import main
from dlsched.policies.fluid import FluidPolicy
from dlsched.policies.greedy import greedy_allocation, greedy_view

rows, allocate = [], FluidPolicy.allocate

def compared(self, inst, active):
    alloc = allocate(self, inst, active)
    view = greedy_view(inst, active)
    if view.jobs.size <= 60:
        return alloc
    fill = {k: v for k, v in self.options.items() if k != "shares"}        # srpt-greedy's options
    both = {"fluid": alloc[view.jobs], "srpt": greedy_allocation(view, **fill)}
    fastest = (view.remaining[:, None, None] * view.tau).min(axis=(1, 2))
    order = np.lexsort((view.jobs, fastest))
    parts = {"lp": order[:self.lp_jobs or self.auto_jobs], "behind": order[self.lp_jobs or self.auto_jobs:]}
    row = {"active": int(view.jobs.size)}
    for name, wp in both.items():
        share = (wp[:, :1] * view.d + wp[:, 1:] * view.e) / view.capacity
        runs = wp[:, 0] > 0
        rate = np.zeros(view.jobs.size)
        rate[runs] = 3600.0 / (view.remaining[runs] * view.tau[np.flatnonzero(runs), wp[runs, 1], wp[runs, 0]])
        for part, idx in parts.items():
            row[f"{part} share, {name}"] = float(share[idx].max(axis=1).sum())
            row[f"{part} rate, {name}"] = float(rate[idx].sum())
        row[f"running, {name}"] = int(runs.sum())
    rows.append(row)
    return alloc

FluidPolicy.allocate = compared
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print(json.dumps({"decisions": len(rows), "median": {k: float(np.median([r[k] for r in rows])) for k in rows[0]}}))
"""
SHARES_RUN = ["simulate", "dl2:1000:1", "--target-load", "1.5", "--max-time", "80000", "--json",
              "--policy", "fluid", "-P", "lp_jobs=20"]

#: the runs: (the simulate arguments, {row: the policy's arguments}); dl2:1000:1 at load 1.5 is the run
#: the aggregate of the cut LP (``fluid.Rest``) was tuned on, dl2:1000:2 one it was not, dl2:60:1 the
#: quick trace (where the LP without lp_jobs holds every active job)
ROWS = {"fluid, budget 10 ms": ["--policy", "fluid", "--decision-budget", "10"],
        "fluid, budget 100 ms": ["--policy", "fluid", "--decision-budget", "100"],
        "fluid -P lp_jobs=20, no budget": ["--policy", "fluid", "-P", "lp_jobs=20"],
        "srpt-greedy": ["--policy", "srpt-greedy"]}
RUNS = [(["simulate", "dl2:1000:1", "--target-load", "1.5", "--json"], ROWS),
        (["simulate", "dl2:1000:2", "--target-load", "1.5", "--json"], ROWS),
        (["simulate", "dl2:60:1", "--json"], {"fluid (every active job in the LP)": ["--policy", "fluid"],
                                            "fluid -P lp_jobs=4, no budget": ["--policy", "fluid", "-P", "lp_jobs=4"],
                                            **ROWS})]


def profile(mix: str, n: int, budget_ms: float, lp_jobs: int | None) -> None:
    """``--profile``: the decision at 1 s of one_decision under cProfile (module docstring)."""
    import cProfile
    import pstats

    from dlsched.bench.decision import one_decision, scene
    from dlsched.registry import make_policy

    trace, cluster, speed = scene(mix, n, 0)
    options = {} if lp_jobs is None else {"lp_jobs": lp_jobs}
    donor = make_policy("fluid", **options)
    one_decision(donor, trace, cluster, speed)
    policy = make_policy("fluid", budget_ms=budget_ms, **options)
    schedule, prof, calls = policy.schedule, cProfile.Profile(), []

    def second_profiled(state, events):
        calls.append(1)
        if len(calls) != 2:
            return schedule(state, events)
        return prof.runcall(schedule, state, events)

    policy.schedule = second_profiled
    out = one_decision(policy, trace, cluster, speed, caches_of=donor)
    print(f"{mix} {n} jobs, {budget_ms:g} ms: wall {1e3 * out['seconds']:.1f} ms (with the profiler), "
          f"CPU {1e3 * out['cpu_seconds']:.1f} ms, answer {out['answer']}, gap {out['gap']}")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the rows here as well")
    ap.add_argument("--shares", action="store_true",
                    help="instead: the cut LP's sizes beside srpt-greedy's at each busy decision of " + " ".join(SHARES_RUN))
    ap.add_argument("--profile", nargs=3, metavar=("MIX", "N", "BUDGET_MS"), help="instead: profile one decision")
    ap.add_argument("--lp-jobs", type=int, help="with --profile: fluid's lp_jobs (default: none)")
    args = ap.parse_args()
    if args.profile:
        profile(args.profile[0], int(args.profile[1]), float(args.profile[2]), args.lp_jobs)
        return
    if args.shares:
        done = subprocess.run([sys.executable, "-c", SHARES, *SHARES_RUN], capture_output=True, text=True)
        if done.returncode:
            sys.exit(done.stderr[-2000:])
        print(done.stdout.strip())
        return
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    runs = []
    for run, row_args in RUNS:
        rows = {}
        for name, extra in row_args.items():
            load = open("/proc/loadavg").read().split()[:3]
            done = subprocess.run([*TIMED, *run, *extra], capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{name}: exit {done.returncode}\n{done.stderr[-2000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            del row["answers"]        # fluid keeps no last_answer
            environment = row.pop("environment")       # versions, machine and git revision: the same for every row
            rows[name] = {"load_before": load, **row}
            print(" ".join(run[1:]), name, json.dumps(rows[name]), flush=True)
        runs.append({"run": run, "rows": rows})
    out = {"finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "uptime_before": uptime,
           "environment": environment, "runs": runs}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

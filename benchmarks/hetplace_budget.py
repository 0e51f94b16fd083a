"""``hetplace`` under decision budgets that bind for whole runs, the code of two trees side by side
(docs/hetplace.md, "Decisions within a budget").

    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data python benchmarks/hetplace_budget.py --base OLD_TREE [--json OUT]
        [--only NAME ...]

For each run below, ``dlsched simulate ... --policy hetplace --json`` of the tree ``--base`` (another checkout,
e.g. ``git archive`` of main) and then of this tree, each in its own process, one after the other (so both meet
about the same load): Gavel's ``msr_seed0_0e4a51`` on ``36:36:36`` at ``--decision-budget`` 10 and 100 ms, ITP
cluster 04 rigid on ``80x8`` and ``dl2:60:1`` at 10 ms. Per row: average JCT, p95, decision latency (wall: the
run's ``decision_latency_ms``; CPU: ``time.process_time`` around each ``changes`` call, measured here), the
decisions by the answer the policy gave (``last_answer``: ``full``, ``srpt``, ``srpt kept``, ``kept``), the
run's wall and CPU seconds and the load average before it. The unbudgeted averages are the policy's own
(deterministic; docs/hetplace.md), not rerun here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from dlsched.data import data_dir

#: the child that runs each row: the CLI in-process, each ``HetPlace.changes`` call timed in CPU and its answer counted
TIMED = [sys.executable, str(Path(__file__).with_name("timed_run.py")), "dlsched.policies.hetplace:HetPlace.changes"]

#: the reference data as the package finds it ($DLSCHED_DATA, else ../shared/data), passed on to each child
DATA = str(data_dir())
GAVEL = [f"{DATA}/gavel/msr_seed0_0e4a51.trace", "--cluster", "36:36:36"]
#: name -> the simulate arguments (hetplace's default order, srpt)
RUNS = {"gavel 0e4a51, 10 ms": GAVEL + ["--decision-budget", "10"],
        "gavel 0e4a51, 100 ms": GAVEL + ["--decision-budget", "100"],
        "dl2:60:1, 10 ms": ["dl2:60:1", "--decision-budget", "10"],
        "itp 04 (80x8), 10 ms": [f"{DATA}/microsoft-itp/cluster04.csv", "--cluster", "80x8", "--decision-budget", "10"]}


def row(tree: str, args: list[str]) -> dict:
    load = open("/proc/loadavg").read().split()[:3]
    cmd = [*TIMED, "simulate", *args, "--policy", "hetplace", "--json", "--bound", "none"]
    done = subprocess.run(cmd, cwd=tree, env={**os.environ, "PYTHONPATH": tree, "DLSCHED_DATA": DATA},
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{tree} {' '.join(args)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    del out["environment"]       # versions, machine and revision: a tree's, long, the same in each of its rows
    return {"load_before": load, **out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the other tree (its code first in each pair)")
    ap.add_argument("--json", help="write the rows here as well")
    ap.add_argument("--only", nargs="*", choices=list(RUNS), help="these runs only")
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for name in args.only or RUNS:
        for label, tree in (("base", args.base), ("this", here)):
            r = {"run": name, "code": label, **row(tree, RUNS[name])}
            rows.append(r)
            print(json.dumps(r), flush=True)
    out = {"finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "uptime_before": uptime, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

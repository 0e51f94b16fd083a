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

from dlsched.data import data_dir

#: the run in the child: the CLI in-process, each ``HetPlace.changes`` call timed in CPU and its answer counted
CHILD = r"""
import collections, contextlib, io, json, sys, time
import numpy as np
from dlsched.cli import main
from dlsched.policies.hetplace import HetPlace

cpu, answers, changes = [], collections.Counter(), HetPlace.changes

def timed(self, *args, **kw):
    c0 = time.process_time()
    out = changes(self, *args, **kw)
    cpu.append(time.process_time() - c0)
    answers[str(self.last_answer)] += 1
    return out

HetPlace.changes = timed
buf = io.StringIO()
t0, c0 = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(buf):
    main(sys.argv[1:])
wall, run_cpu = time.perf_counter() - t0, time.process_time() - c0
doc = json.loads(buf.getvalue().strip().splitlines()[-1])
print(json.dumps({"status": doc["status"], "avg_jct": doc["avg_jct"], "p95_jct": doc["p95_jct"],
                  "decisions": doc["decision_calls"], "latency_ms": doc["decision_latency_ms"],
                  "cpu_ms": {q: 1e3 * float(np.percentile(cpu, p)) for q, p in (("median", 50), ("p99", 99), ("max", 100))},
                  "answers": dict(answers), "gap": doc["decision_gap"], "wall_s": wall, "cpu_s": run_cpu}))
"""

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
    cmd = [sys.executable, "-c", CHILD, "simulate", *args, "--policy", "hetplace", "--json", "--bound", "none"]
    done = subprocess.run(cmd, cwd=tree, env={**os.environ, "PYTHONPATH": tree, "DLSCHED_DATA": DATA},
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{tree} {' '.join(args)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return {"load_before": load, **json.loads(done.stdout.strip().splitlines()[-1])}


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

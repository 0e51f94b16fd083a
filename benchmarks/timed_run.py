"""One ``dlsched`` command run in this process with the CPU time of every call of one policy method taken
around it: the child of the budget benchmarks (``fluid_budget.py``, ``hetplace_budget.py``), which run it in
the tree under test (that tree on ``PYTHONPATH``; this file's folder holds no ``dlsched``):

    python benchmarks/timed_run.py MODULE:CLASS.METHOD simulate ... --json

prints one JSON object: the run's status, completed jobs, average and p95 JCT, decisions, wall latency and
gap (from its ``--json``), the decisions with an objective, the CPU time of the timed calls
(``time.process_time``: median, p99 and largest, ms), the answers the policy gave (its ``last_answer`` after
each call, where it keeps one), the run's wall and CPU seconds and its environment (versions, machine, git
revision)."""

from __future__ import annotations

import collections
import contextlib
import importlib
import io
import json
import sys
import time

import numpy as np


def main(target: str, argv: list[str]) -> dict:
    module, _, attr = target.partition(":")
    cls_name, _, method = attr.partition(".")
    cls = getattr(importlib.import_module(module), cls_name)
    cpu, answers, original = [], collections.Counter(), getattr(cls, method)

    def timed(self, *args, **kw):
        c0 = time.process_time()
        out = original(self, *args, **kw)
        cpu.append(time.process_time() - c0)
        if hasattr(self, "last_answer"):
            answers[str(self.last_answer)] += 1
        return out

    setattr(cls, method, timed)
    from dlsched.cli import main as cli

    buf = io.StringIO()
    t0, c0 = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(buf):
        cli(argv)
    wall, run_cpu = time.perf_counter() - t0, time.process_time() - c0
    doc = json.loads(buf.getvalue().strip().splitlines()[-1])
    return {"status": doc["status"], "completed": doc["completed"], "avg_jct": doc["avg_jct"],
            "p95_jct": doc["p95_jct"], "decisions": doc["decision_calls"], "latency_ms": doc["decision_latency_ms"],
            "cpu_ms": {q: 1e3 * float(np.percentile(cpu, p)) for q, p in (("median", 50), ("p99", 99), ("max", 100))},
            "with_objective": (doc["decision_gap"] or {}).get("decisions", 0), "gap": doc["decision_gap"],
            "answers": dict(answers), "wall_s": wall, "cpu_s": run_cpu, "environment": doc["environment"]}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2:])))

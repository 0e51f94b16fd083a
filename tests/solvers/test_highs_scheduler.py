"""HiGHS's task scheduler is one per process: another user of highspy (CVXPY's HiGHS here) may
start it with any thread count, and a solve asking for another count then fails with "Not Set"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import cvxpy as cp
import dlsched
from dlsched.instance.generate import random_mcmdk

def outside():
    x = cp.Variable(3)
    cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1]).solve(solver=cp.HIGHS)

inst = random_mcmdk(20, 3, 2, seed=1)
outside()
for threads in (1, 1, None, 2, 1):
    print(dlsched.solve(inst, "exact", threads=threads).status.value)
    outside()
"""


def test_solves_after_cvxpy_started_the_scheduler_with_another_thread_count():
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=root, timeout=300,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[-5:] == ["optimal"] * 5     # after the banner CVXPY's HiGHS prints

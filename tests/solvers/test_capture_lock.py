"""Pyomo's output-capture lock after a guarded child is killed at its deadline (solvers/highs.py).

Pyomo's ``capture_output_lock`` is a ``multiprocessing.Lock`` (a semaphore shared with forked
children). A child killed while holding it used to leave every later Pyomo capture in the
parent, and every later Pyomo solve, waiting for good. The scenario runs in a subprocess with a
timeout, so a regression fails the test instead of hanging the session.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import time
    import pyomo.environ  # noqa: F401
    import dlsched
    from pyomo.common import dependencies
    from pyomo.common.tee import capture_output
    from dlsched.data import project_root
    from dlsched.solvers.highs import in_child
    from dlsched.solvers.options import SolveOptions

    def hold_the_lock(report):        # a child stopped at its deadline inside a capture
        dependencies.capture_output_lock.acquire()
        time.sleep(120)

    assert in_child(hold_the_lock, SolveOptions(time_limit=1.0).clock) == (False, None)
    assert dependencies.capture_output_lock.acquire(timeout=5), "the parent's capture lock is held for good"
    dependencies.capture_output_lock.release()
    with capture_output():
        pass
    inst = dlsched.load(project_root() / "instances" / "mknap1-0.json")
    for solver in SOLVERS:
        res = dlsched.solve(inst, "exact", backend="pyomo", solver=solver, threads=1, time_limit=30)
        assert res.status.value == "optimal" and res.objective == inst.reference.objective, (solver, res.summary())
    print("ok")
""")


def solvers() -> list[str]:
    out = ["highs"]
    if importlib.util.find_spec("pyscipopt") is not None:
        out.append("scip_direct")
    if importlib.util.find_spec("gurobipy") is not None:
        out.append("gurobi_direct")
    return out


@pytest.mark.skipif(importlib.util.find_spec("pyomo") is None, reason="pyomo is not installed")
def test_a_child_killed_inside_a_capture_does_not_block_later_solves():
    code = f"SOLVERS = {solvers()!r}\n" + SCRIPT
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        pytest.fail("Pyomo's capture lock stayed held after the guarded child was killed (hang)")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]

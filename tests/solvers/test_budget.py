"""The whole-call budget (docs/contract.md §5): its arithmetic, and the guarded HiGHS path.

No wall-clock assertions (the suite timelimits measures wall/limit): these tests check what
a stopped or guarded solve returns."""

import math

import numpy as np
import pytest

import dlsched
from dlsched.errors import InputError
from dlsched.instance.generate import random_mcmdk
from dlsched.models.mcmdk import build_matrix
from dlsched.result import Status
from dlsched.solvers import highs
from dlsched.solvers.options import Budget, SolveOptions


def test_budget_arithmetic():
    free = Budget()
    assert free.remaining() == math.inf and not free.expired() and free.seconds_for_solver() is None
    b = Budget(10.0, start=0.0)           # started long ago: spent
    assert b.expired() and b.remaining() == 0.0 and b.seconds_for_solver() == pytest.approx(1e-3)
    fresh = Budget(10.0)
    part = fresh.share(0.3, at_most=2.0)
    assert part.limit == pytest.approx(2.0) and fresh.share(0.1).limit <= 1.0
    assert Budget().share(0.5, at_most=3.0).limit == 3.0 and Budget().share(0.5).limit is None


def test_options_carry_one_budget_through_sub_steps():
    opts = SolveOptions(time_limit=5.0).started()
    assert opts.started() is opts                     # started once
    sub = opts.within(opts.clock.share(0.5))
    assert sub.time_limit == pytest.approx(sub.budget.limit) and sub.budget.limit <= 2.5


def test_guarded_solve_answers_like_the_direct_one():
    # above GUARD_NONZEROS with a limit: HiGHS runs in a forked child; given ample time it returns
    # the same optimum, and a starved one returns a consistent answer (a checked incumbent or none)
    inst = random_mcmdk(2000, 10, 2, seed=4)
    mf = build_matrix(inst)
    assert mf.M.nnz >= highs.GUARD_NONZEROS
    seen = []
    res = dlsched.solve(inst, threads=1, time_limit=120, gap=1e-3, on_incumbent=seen.append)
    assert res.stats.get("guarded") and res.status.has_solution() and dlsched.check(inst, res).feasible
    assert seen and seen[-1].objective == pytest.approx(res.objective)
    direct = dlsched.solve(inst, threads=1, gap=1e-3)
    assert res.bound == pytest.approx(direct.bound, rel=1e-3)
    starved = dlsched.solve(inst, threads=1, time_limit=0.02)
    assert starved.inconsistency() is None and starved.termination == "time_limit"
    if starved.status.has_solution():
        assert dlsched.check(inst, starved).feasible


def test_errors_in_the_guarded_child_reach_the_caller():
    with pytest.raises(ZeroDivisionError):
        highs.in_child(lambda report: 1 / 0, Budget(30.0))
    done, value = highs.in_child(lambda report: (report("hello"), 42)[1], Budget(30.0), on_progress=print)
    assert done and value == 42


def test_pyomo_and_cvxpy_refuse_a_warm_start():
    inst = random_mcmdk(5, 3, 2, seed=0)
    for backend in ("pyomo", "cvxpy"):
        with pytest.raises(InputError):
            dlsched.solve(inst, backend=backend, warm_start=np.zeros(5, dtype=int))


def test_a_bad_warm_start_is_an_input_error():
    inst = random_mcmdk(5, 3, 2, seed=0)
    for bad in (np.zeros(4, dtype=int), np.full(5, 7), np.full(5, 0.5), "abc"):
        with pytest.raises(InputError):
            dlsched.solve(inst, warm_start=bad)
    assert dlsched.solve(inst, warm_start=np.zeros(5, dtype=int)).status == Status.OPTIMAL


@pytest.mark.parametrize("backend", ["pyomo", "cvxpy"])
def test_a_slow_first_import_of_the_front_end_leaves_the_solver_its_time(backend, monkeypatch):
    """Pyomo's or CVXPY's first import in a process counts in the budget but not in the reserve for
    translating and reading (1.5 x the build): a Dask worker under load took 26 s to import Pyomo
    for a ten-column model, and a reserve of 1.5 x 26 s left HiGHS nothing of a 60-s limit."""
    import importlib
    import time

    from dlsched.solvers import backends

    real = importlib.import_module

    def slow(name, *args):
        if name == backends.FRONT_END_MODULE[backend]:
            time.sleep(4.0)
        return real(name, *args)

    monkeypatch.setattr(backends.importlib, "import_module", slow)
    inst = random_mcmdk(8, 2, 2, seed=1)
    # 5 s left after the import: a reserve of 1.5 x 4 s would leave HiGHS none of it; the front
    # end's build and a solve of this size take well under that even on a loaded machine
    res = dlsched.solve(inst, "exact", backend=backend, time_limit=9.0, threads=1)
    assert res.status == Status.OPTIMAL and res.build_seconds >= 4.0
    assert res.objective == pytest.approx(dlsched.solve(inst, "exact").objective)


def test_a_stop_during_the_guarded_fork_is_raised_after_it_not_lost():
    """Ctrl-C (or the SIGINT a stopped sweep sends its workers) landing inside os.fork's hooks was
    printed as "Exception ignored" and lost; now it is held across the fork and raised after it."""
    import subprocess
    import sys
    from pathlib import Path

    script = """
import os, signal
from dlsched.solvers.highs import in_child
from dlsched.solvers.options import Budget
# Python's own Ctrl-C handler, whatever was inherited: a shell ignores SIGINT in what it starts
# in the background (CI started so ignored the stop, and rightly printed "no interrupt")
signal.signal(signal.SIGINT, signal.default_int_handler)
fired = []
def stop_once():
    if not fired:
        fired.append(1)
        os.kill(os.getpid(), signal.SIGINT)
os.register_at_fork(before=stop_once)
try:
    in_child(lambda report: 1, Budget(limit=30.0))
    print("no interrupt")
except KeyboardInterrupt:
    print("interrupted after the fork")
"""
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert run.stdout.strip() == "interrupted after the fork" and "Exception ignored" not in run.stderr, run.stderr


@pytest.mark.parametrize("backend", ["pyomo", "cvxpy"])
def test_an_unlimited_front_end_solve_imports_its_package_once_for_every_child(backend):
    """Without a limit the caller imports Pyomo or CVXPY before forking its guarded child, so that the next solves'
    children have it (each imported it afresh: 3.45 s for five tiny Pyomo solves, 0.94 s after); the first call's build
    still counts the import. With a limit the import stays in the child, where the deadline can stop it."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys, dlsched
        from dlsched.instance.generate import random_mcmdk
        from dlsched.solvers.backends import FRONT_END_MODULE
        inst, module = random_mcmdk(6, 2, 2, seed=1), FRONT_END_MODULE[{backend!r}]
        limited = dlsched.solve(inst, "exact", backend={backend!r}, time_limit=60.0)
        after_limited = module in sys.modules
        first = dlsched.solve(inst, "exact", backend={backend!r})
        second = dlsched.solve(inst, "exact", backend={backend!r})
        print(after_limited, module in sys.modules, first.build_seconds > second.build_seconds,
              limited.objective == first.objective == second.objective)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "True", "True", "True"]

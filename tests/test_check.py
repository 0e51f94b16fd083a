"""The independent checker rejects every kind of broken solution."""

import ast
import importlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.check import check, check_mcmdk
from dlsched.errors import InputError
from dlsched.instance.core import from_dense


@pytest.fixture
def inst():
    return from_dense([[3, 5], [4]], [[[1, 2], [2, 4]], [[2, 5]]], [4, 10], row_names=("gpu", "cpu"),
                      job_names=("a", "b"))


def test_accepts_and_recomputes(inst):
    r = check_mcmdk(inst, np.array([1, 0]))
    assert r.feasible and r.objective == 9


def test_rejects_over_capacity(inst):
    inst.b[1] = 8  # configurations (a, 1) and (b, 0) use 4 + 5 = 9 CPUs
    r = check_mcmdk(inst, np.array([1, 0]))
    assert not r.feasible and r.violations == ["capacity row 'cpu' uses 9 > 8"]


@pytest.mark.parametrize("choice, fragment", [
    ([0], "2 jobs"),
    ([2, 0], "job 'a' chose configuration 2, it has 2"),
    ([0, 1], "job 'b' chose configuration 1, it has 1"),
    ([0.5, 0], "integers"),
])
def test_rejects(inst, choice, fragment):
    r = check_mcmdk(inst, np.array(choice))
    assert not r.feasible and any(fragment in v for v in r.violations), r.violations


def test_exactly_one_requires_every_job(inst):
    inst.choose = "exactly_one"
    r = check_mcmdk(inst, np.array([1, -1]))
    assert not r.feasible and "job 'b' has no configuration" in r.violations[0]


def test_wrong_claimed_objective(inst):
    r = check_mcmdk(inst, np.array([1, 0]), claimed_objective=10)
    assert not r.feasible and "claimed objective 10" in r.violations[0]


def test_check_shares_no_code_with_builders():
    tree = ast.parse(Path(importlib.import_module("dlsched.check").__file__).read_text())
    mods = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
           [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in mods if m and (m.startswith("dlsched.models") or m.startswith("dlsched.solvers"))]
    # of dlsched, only the errors and the registry of names (which itself imports only the errors)
    assert {m for m in mods if m and m.startswith("dlsched")} <= {"dlsched.errors", "dlsched.registry"}


# ------------------------------------------------------------------------------ malformed answers are rejections

@pytest.mark.parametrize("claimed", [float("nan"), float("inf"), "9", True, [9]])
def test_claimed_objective_must_be_a_finite_number(inst, claimed):
    r = check_mcmdk(inst, np.array([1, 0]), claimed_objective=claimed)
    assert not r.feasible and "claimed objective" in r.violations[0]


@pytest.mark.parametrize("choice", [[1e30, 0], ["1", 0], [np.nan, 0], [[1], 0], None, "10"])
def test_junk_choices_are_rejected_not_raised(inst, choice):
    r = check_mcmdk(inst, choice)
    assert not r.feasible and r.violations


def _oasis_solution(instances_dir):
    inst = dlsched.load(instances_dir / "oasis-tiny.json")
    return inst, dlsched.solve(inst, "oasis").solution


@pytest.mark.parametrize("field, value", [("completion", 2.5), ("completion", "2"), ("completion", 1e30),
                                          ("admitted", "yes"), ("workers", [[0, 1, 0, 1.5]]), ("ps", "x")])
def test_oasis_malformed_schedule_is_rejected(instances_dir, field, value):
    inst, sched = _oasis_solution(instances_dir)
    assert check(inst, sched).feasible
    if field in ("completion", "admitted"):
        arr = np.asarray(getattr(sched, field), dtype=object)
        arr[0] = value
        value = arr.tolist()
    setattr(sched, field, value)
    r = check(inst, sched)
    assert not r.feasible and r.violations


@pytest.mark.parametrize("samples", [np.nan, np.inf, -1.0])
def test_placement_bad_samples_rejected(instances_dir, samples):
    inst = dlsched.load(instances_dir / "placement-small.json")
    placement = dlsched.solve(inst, "greedy").solution
    assert check(inst, placement).feasible
    k = int(np.flatnonzero(placement.gpu_job >= 0)[0])
    placement.workload[k] = samples
    r = check(inst, placement)
    assert not r.feasible and r.violations


def test_smd_float_or_huge_allocation_rejected(instances_dir):
    inst = dlsched.load(instances_dir / "smd-small.json")
    alloc = dlsched.solve(inst, "exact", threads=1).solution["allocation"].astype(float)
    for bad in (2.5, 1e30, np.nan):
        a = alloc.copy()
        a[0, 0] = bad
        r = check(inst, {"allocation": a})
        assert not r.feasible and ("integers" in r.violations[0] or "2^53" in r.violations[0]), r.violations


def test_unknown_family_is_an_input_error():
    class Thing:
        family = "nope"

    with pytest.raises(InputError, match="family 'nope'"):
        check(Thing(), [])


JUNK = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["allocation", "schedule", "x"]), inner, max_size=2),
                    max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(junk=JUNK, claimed=st.none() | st.floats() | st.text(max_size=2))
@pytest.mark.parametrize("path", ["dl-small.json", "smd-small.json", "oasis-tiny.json", "placement-small.json"])
def test_checker_never_raises_on_junk(instances_dir, path, junk, claimed):
    """Whatever it is handed, the library checker answers with a report (never an exception)."""
    inst = dlsched.load(instances_dir / path)
    report = check(inst, junk, claimed)
    assert isinstance(report.feasible, bool)

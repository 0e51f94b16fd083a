"""The independent checker rejects every kind of broken solution."""

import ast
import importlib
from pathlib import Path

import numpy as np
import pytest

from dlsched.check import check_mcmdk
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

import math

import highspy
import numpy as np
import pytest

from dlsched.result import TERMINATIONS, Result, Status, gap_to_reference, make_result, relative_gap
from dlsched.solvers.highs import STATUS_TABLE, translate
from dlsched.solvers.options import SolveOptions

MS = highspy.HighsModelStatus
#: HiGHS model statuses that mean the load or the solve itself failed (no answer about the model)
HIGHS_ERRORS = {MS.kNotset, MS.kLoadError, MS.kModelError, MS.kPresolveError, MS.kSolveError, MS.kPostsolveError,
                MS.kUnknown}


def test_gap_formula_respects_the_sense():
    # HiGHS's definition: (bound - objective)/|objective| for max, (objective - bound)/|objective| for min
    assert relative_gap(90, 100, "max") == pytest.approx(10 / 90)
    assert relative_gap(-100, -90, "max") == pytest.approx(10 / 100)
    assert relative_gap(110, 100, "min") == pytest.approx(10 / 110)
    assert relative_gap(-90, -100, "min") == pytest.approx(10 / 90)
    assert relative_gap(0, 0, "max") == 0 and relative_gap(7, 7 + 1e-7, "max") == 0
    assert relative_gap(None, 5) is None and relative_gap(5, None) is None
    assert relative_gap(5, math.inf, "max") == math.inf and relative_gap(5, -math.inf, "min") == math.inf


def test_gap_is_infinite_where_undefined_and_negative_on_the_wrong_side():
    assert relative_gap(0, 3, "max") == math.inf        # objective 0, nonzero difference
    assert relative_gap(0, -3, "min") == math.inf
    # a bound on the wrong side is not hidden by abs(): the gap is negative
    assert relative_gap(100, 90, "max") == pytest.approx(-0.1)
    assert relative_gap(90, 100, "min") == pytest.approx(-10 / 90)
    assert relative_gap(5, -math.inf, "max") == -math.inf


def test_gap_to_reference_sign():
    assert gap_to_reference(99, 100, "max") == pytest.approx(0.01)
    assert gap_to_reference(101, 100, "min") == pytest.approx(0.01)
    assert gap_to_reference(100, 100, "min") == 0


def test_status_table_covers_every_highs_status():
    # every status HiGHS can report about a model is translated explicitly; only genuine failures
    # fall through to the unknown row
    assert set(MS.__members__.values()) == set(STATUS_TABLE) | HIGHS_ERRORS
    for s in HIGHS_ERRORS:
        assert translate(s, False) == ("unknown", Status.ERROR)
    for s, (term, _, _) in STATUS_TABLE.items():
        assert term in TERMINATIONS
        # a status without a solution never claims one, a solution is never called a proof of its absence
        assert not translate(s, False)[1].has_solution() or s == MS.kModelEmpty
        assert translate(s, True)[1] not in (Status.INFEASIBLE, Status.NO_SOLUTION)
    assert translate(MS.kTimeLimit, True) == ("time_limit", Status.FEASIBLE)
    assert translate(MS.kTimeLimit, False) == ("time_limit", Status.NO_SOLUTION)
    # HiGHS's presolve cannot tell which: not a proof of infeasibility
    assert translate(MS.kUnboundedOrInfeasible, False) == ("infeasible_or_unbounded", Status.NO_SOLUTION)


def test_factory_derives_status_from_termination_and_solution():
    opts = SolveOptions().started()
    sol = np.array([0])
    assert make_result("m", opts, sense="max", termination="optimal", solution=sol, objective=3, bound=3).status == Status.OPTIMAL
    assert make_result("m", opts, sense="max", termination="time_limit", solution=sol, objective=3, bound=4).status == Status.FEASIBLE
    assert make_result("m", opts, sense="max", termination="time_limit", bound=4).status == Status.NO_SOLUTION
    assert make_result("m", opts, sense="max", termination="infeasible").status == Status.INFEASIBLE
    assert make_result("m", opts, sense="max", termination="infeasible_or_unbounded").status == Status.NO_SOLUTION
    with pytest.raises(ValueError):
        make_result("m", opts, sense="max", termination="optimal")                  # optimal needs a solution
    with pytest.raises(ValueError):
        make_result("m", opts, sense="max", termination="completed", objective=3)  # objective without a solution
    with pytest.raises(ValueError):
        make_result("m", opts, sense="max", termination="finished")                # not in the vocabulary


def test_factory_reports_a_bound_on_the_wrong_side_without_repairing_it():
    opts = SolveOptions().started()
    res = make_result("m", opts, sense="max", termination="time_limit", solution=np.array([0]), objective=10, bound=9)
    assert res.bound == 9 and res.gap < 0
    assert "wrong side" in res.stats["inconsistency"] and "inconsistent" in res.message
    ok = make_result("m", opts, sense="min", termination="time_limit", solution=np.array([0]), objective=10, bound=9)
    assert ok.inconsistency() is None and "inconsistency" not in ok.stats


def test_inconsistency_catches_each_broken_invariant():
    base = dict(method="m", sense="max", solution=np.array([0]), objective=1.0, bound=1.0)
    assert Result(status=Status.OPTIMAL, termination="optimal", **base).inconsistency() is None
    assert Result(status=Status.NO_SOLUTION, termination="time_limit", **base).inconsistency()   # solution present
    assert Result(status=Status.FEASIBLE, termination="optimal", **base).inconsistency()        # optimal not claimed
    assert Result(status=Status.OPTIMAL, termination="finished", **base).inconsistency()        # unknown termination
    assert Result("m", Status.INFEASIBLE, termination="time_limit").inconsistency()              # proof without termination


def test_contract_documents_every_termination():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "contract.md").read_text()
    for term in TERMINATIONS:
        assert f"`{term}`" in doc, term

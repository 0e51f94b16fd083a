import math

import highspy
import pytest

from dlsched.result import Status, gap_to_reference, relative_gap
from dlsched.solvers.highs import STATUS_TABLE, translate


def test_gap_formula():
    # gap = |bound - objective| / max(|objective|, 1e-9), as HiGHS reports mip_gap
    assert relative_gap(90, 100) == pytest.approx(10 / 90)
    assert relative_gap(-90, -100) == pytest.approx(10 / 90)
    assert relative_gap(0, 0) == 0
    assert relative_gap(None, 5) is None and relative_gap(5, None) is None
    assert relative_gap(5, math.inf) == math.inf


def test_gap_to_reference_sign():
    assert gap_to_reference(99, 100, "max") == pytest.approx(0.01)
    assert gap_to_reference(101, 100, "min") == pytest.approx(0.01)
    assert gap_to_reference(100, 100, "min") == 0


def test_status_table_covers_every_highs_status():
    named = {s for s in highspy.HighsModelStatus.__members__.values()}
    unmapped = {s for s in named if s not in STATUS_TABLE}
    # the rest are load/solve errors, which must map to ERROR when no solution exists
    for s in unmapped:
        assert translate(s, False)[1] == Status.ERROR
    for s in STATUS_TABLE:
        term, status = translate(s, True)
        assert isinstance(term, str) and isinstance(status, Status)
    assert translate(highspy.HighsModelStatus.kTimeLimit, True) == ("time_limit", Status.FEASIBLE)
    assert translate(highspy.HighsModelStatus.kTimeLimit, False) == ("time_limit", Status.NO_SOLUTION)

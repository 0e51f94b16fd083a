"""Jain's fairness index: the one definition and its edges (dlsched/sim/metrics.py)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.sim.metrics import jain


def test_values_and_edges():
    assert jain([1.0, 0.5]) == pytest.approx(1.5 ** 2 / (2 * 1.25))
    assert jain([3.0]) == 1.0 and jain([2.0, 2.0, 2.0]) == 1.0
    assert jain([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)          # one job gets everything: 1/n
    assert jain([]) is None and jain([0.0, 0.0]) is None                # undefined (0/0): None, not a number
    assert jain([np.nan, math.inf]) is None
    assert jain([1.0, np.nan, 0.5, -math.inf]) == jain([1.0, 0.5])       # non-finite values are left out


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.0, 1e6), min_size=1, max_size=30))
def test_bounds_and_scale_invariance(x):
    j = jain(x)
    if not any(x):
        assert j is None
        return
    assert 1 / len(x) - 1e-12 <= j <= 1 + 1e-12
    assert jain([3.5 * v for v in x]) == pytest.approx(j)


def test_infinite_decision_gaps_are_counted_apart_and_the_json_keeps_the_finite_figures():
    """JSON has no infinity: an infinite gap in the mean or max was written as null, which reads as "no gap"."""
    import dataclasses
    import json

    from dlsched.policies.fifo import FIFO
    from dlsched.sim.engine import simulate

    from tests.sim.helpers import LinearSpeed, cluster, job, trace

    res = simulate(trace(job("a", 0.0, 10.0)), cluster(2, gpus=4), FIFO(), LinearSpeed())
    assert res.summary()["decision_gap"] is None
    mixed = dataclasses.replace(res, decision_gaps=np.array([0.1, math.inf, 0.3]))
    assert json.loads(mixed.to_json())["decision_gap"] == {"mean": pytest.approx(0.2), "max": 0.3, "decisions": 3,
                                                          "infinite": 1}
    only = dataclasses.replace(res, decision_gaps=np.array([math.inf]))
    assert json.loads(only.to_json())["decision_gap"] == {"mean": None, "max": None, "decisions": 1, "infinite": 1}

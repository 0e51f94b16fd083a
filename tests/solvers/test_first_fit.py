"""First fit in order in numpy passes decides exactly as the loop it replaces (bit for bit)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.solvers.first_fit import take_in_order


def _loop(need, avail, eps):
    avail = avail.copy()
    out = []
    for k in range(need.shape[0]):
        if (need[k] <= avail + eps).all():
            avail -= need[k]
            out.append(k)
    return out


amounts = st.one_of(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.44, 0.46, 1.0, 2.0]), st.floats(0, 3))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(amounts, amounts, amounts), max_size=60),
       avail=st.tuples(st.floats(0, 10), st.floats(0, 10), st.floats(0, 10)), eps=st.sampled_from([0.0, 1e-9]))
def test_take_in_order_is_the_greedy_loop(rows, avail, eps):
    need = np.array(rows, dtype=float).reshape(-1, 3)
    a = np.array(avail)
    assert np.flatnonzero(take_in_order(need, a, eps)).tolist() == _loop(need, a, eps)


def test_take_in_order_subtracts_in_turn():
    # 1 - 0.1 - 0.46 leaves exactly 0.44, and 1 - (0.1 + 0.46) a little less: the last row fits
    # only when the rows are subtracted in turn, as the loop does
    need = np.array([[0.1], [0.46], [0.44]])
    assert _loop(need, np.array([1.0]), 0.0) == [0, 1, 2]
    assert take_in_order(need, np.array([1.0])).tolist() == [True, True, True]

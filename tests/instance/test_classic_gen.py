"""The published Chu-Beasley MKP and GAP c/d/e generators: shapes, seeds and the recipes' ranges."""

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.instance.classic_gen import chu_beasley_mkp, gap_instance


def test_chu_beasley_recipe():
    inst = chu_beasley_mkp(50, 5, 0.25, seed=3)
    a = inst.A.toarray()
    assert a.shape == (5, 50) and inst.sense == "max" and (inst.n_configs == 1).all()
    assert a.min() >= 0 and a.max() <= 1000
    assert np.array_equal(inst.b, np.floor(0.25 * a.sum(axis=1)))
    extra = inst.value - a.sum(axis=0) / 5          # c_j - sum_i a_ij / m = floor(500 q) + fraction
    assert (extra > -1).all() and (extra < 500).all()
    again = chu_beasley_mkp(50, 5, 0.25, seed=3)
    assert np.array_equal(inst.value, again.value) and not np.array_equal(inst.value, chu_beasley_mkp(50, 5, 0.25, 4).value)


@pytest.mark.parametrize("kind", ["c", "d", "e"])
def test_gap_types(kind):
    m, n = 4, 30
    inst = gap_instance(kind, m, n, seed=1)
    assert inst.sense == "min" and inst.choose == "exactly_one" and inst.n_jobs == n and (inst.n_configs == m).all()
    A = inst.A.toarray()
    use = A.sum(axis=0).reshape(n, m).T            # a_ij, column j*m + i holds only row i
    assert (np.count_nonzero(A, axis=0) == 1).all()
    assert np.array_equal(inst.b, np.floor(0.8 * use.sum(axis=1) / m))
    cost = inst.value.reshape(n, m).T
    if kind == "c":
        assert use.min() >= 5 and use.max() <= 25 and cost.min() >= 10 and cost.max() <= 50
    elif kind == "d":
        assert use.min() >= 1 and use.max() <= 100 and (np.abs(cost - (111 - use)) <= 10).all()
    else:
        assert use.min() >= 1 and (cost <= 1000 / use).all()


def test_bad_arguments():
    with pytest.raises(InputError):
        gap_instance("x", 2, 3)
    with pytest.raises(InputError):
        chu_beasley_mkp(10, 0)
    with pytest.raises(InputError):
        chu_beasley_mkp(10, 2, alpha=1.5)

"""MODELS.md §2.1: the layered iteration time, both overlap variants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.perf.layered import LayerProfile, iteration_time, iteration_time_recursive, throughput
from dlsched.perf.profiles import MODELS, builtin


def prof(phi, psi, m, bw=1e9, bp=1e9, **kw):
    return LayerProfile("t", np.array(phi, float), np.array(psi, float), np.array(m, float), bw, bp, **kw)


def test_single_layer_reduces_to_compute_plus_transfer():
    p = prof([0.01], [0.02], [4e8], bw=2e9, bp=1e9)
    B, w, ps = 64, 4, 2
    compute = (B / w) * (0.01 + 0.02)
    transfer = 2 * 4e8 * max(1 / 2e9, w / (ps * 1e9))
    for mode in ("layerwise", "none"):
        assert iteration_time(p, B, w, ps, mode) == pytest.approx(compute + transfer)


def test_vectorised_equals_recursion_on_builtin_profiles():
    w, p = np.meshgrid(np.arange(1, 9), np.arange(1, 9))
    for name in MODELS:
        pr = builtin(name)
        tau = iteration_time(pr, 32, w, p)
        for i, j in [(0, 0), (3, 5), (7, 7), (2, 6)]:
            assert tau[i, j] == pytest.approx(iteration_time_recursive(pr, 32, w[i, j], p[i, j]), rel=1e-12)


def test_overlap_never_slower_than_no_overlap_and_not_faster_than_its_parts():
    for name in MODELS:
        pr = builtin(name)
        w, p = np.meshgrid(np.arange(1, 13), np.arange(1, 13))
        lw = iteration_time(pr, 32, w, p, "layerwise")
        no = iteration_time(pr, 32, w, p, "none")
        assert np.all(lw <= no * (1 + 1e-12))
        comm = pr.m.sum() * 2 * np.maximum(1 / pr.beta_w, w / (p * pr.beta_p))
        assert np.all(lw >= comm)


layer_lists = st.lists(st.tuples(st.floats(0, 1e-2), st.floats(0, 1e-2), st.floats(0, 1e8)), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(layer_lists, st.floats(1e7, 1e10), st.floats(1e7, 1e10), st.integers(1, 16), st.integers(1, 16),
       st.sampled_from(["layerwise", "none"]))
def test_more_bandwidth_or_more_ps_never_slows_a_job(layers, bw, bp, w, p, mode):
    phi, psi, m = map(list, zip(*layers))
    if sum(phi) + sum(psi) + sum(m) == 0:
        m[0] = 1.0
    base = iteration_time(prof(phi, psi, m, bw, bp), 32, w, p, mode)
    assert iteration_time(prof(phi, psi, m, 2 * bw, bp), 32, w, p, mode) <= base * (1 + 1e-12)
    assert iteration_time(prof(phi, psi, m, bw, 2 * bp), 32, w, p, mode) <= base * (1 + 1e-12)
    assert iteration_time(prof(phi, psi, m, bw, bp), 32, w, p + 1, mode) <= base * (1 + 1e-12)
    # recursion and closed form agree
    if mode == "layerwise":
        assert base == pytest.approx(iteration_time_recursive(prof(phi, psi, m, bw, bp), 32, w, p), rel=1e-9)


def test_compute_only_job_speeds_up_with_workers():
    p = prof([0.01, 0.02], [0.02, 0.04], [0, 0])
    tau = iteration_time(p, 64, np.arange(1, 9), 1)
    assert np.all(np.diff(tau) < 0)
    assert tau[0] == pytest.approx(64 * 0.09)


def test_not_running_is_infinite_time_zero_throughput():
    p = prof([0.01], [0.02], [1e6])
    assert math.isinf(iteration_time(p, 32, 0, 1))
    assert throughput(p, 32, 1, 0) == 0


@pytest.mark.parametrize("kw, where", [
    (dict(phi=[], psi=[], m=[]), "layers"),
    (dict(phi=[0.1], psi=[0.1], m=[-5.0]), "layers[0].m"),
    (dict(phi=[0.1], psi=[-0.1], m=[5.0]), "layers[0].psi"),
    (dict(phi=[0.1], psi=[0.1], m=[5.0], bw=0.0), "beta_w"),
    (dict(phi=[0.1], psi=[0.1], m=[5.0], bp=0.0), "beta_p"),
    (dict(phi=[0.0], psi=[0.0], m=[0.0]), "layers"),
])
def test_bad_profiles_name_the_place(kw, where):
    with pytest.raises(InputError) as e:
        prof(**kw)
    assert f"at {where}:" in str(e.value)


def test_bad_batch_and_mode():
    p = prof([0.01], [0.02], [1e6])
    with pytest.raises(InputError, match="batch"):
        iteration_time(p, 0, 1, 1)
    with pytest.raises(InputError, match="overlap"):
        iteration_time(p, 32, 1, 1, "magic")

"""The authors' Optimus speed estimator (MODELS.md §5): the measured speed at a measured (p, w),
a bounded least-squares fit of the sync form elsewhere (dlsched.perf.optimus_fit)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.perf.optimus_fit import MeasuredSpeed, OptimusModel, fit_sync_curve
from dlsched.perf.speeds import read_config_speed

GRID = np.array([(p, w) for p in range(1, 9) for w in range(1, 9)], dtype=float)


def _sync(theta, batch):
    return OptimusModel(np.asarray(theta, dtype=float), float(batch), "sync")


@settings(max_examples=30, deadline=None)
@given(theta=st.lists(st.floats(1e-3, 1.0), min_size=5, max_size=5), batch=st.sampled_from([16.0, 64.0, 256.0]))
def test_fit_recovers_noise_free_sync_speeds(theta, batch):
    # θ_0 multiplies M/w: scaled so that no term dwarfs the others
    theta = np.array(theta) * np.array([1.0 / batch, 1, 1, 1, 1])
    truth = _sync(theta, batch)
    f = truth.speed(GRID[:, 0], GRID[:, 1])
    model = fit_sync_curve(GRID[:, 0], GRID[:, 1], f, batch)
    assert np.all(model.theta >= 0)
    # a grid wider than the one fitted: the form itself is recovered, not only the points
    P, W = np.meshgrid(np.arange(1, 17.0), np.arange(1, 17.0), indexing="ij")
    t, e = truth.speed(P.ravel(), W.ravel()), model.speed(P.ravel(), W.ravel())
    assert np.max(np.abs(e - t) / t) < 1e-3


def test_fit_with_noise_stays_close():
    rng = np.random.default_rng(0)
    truth = _sync([0.002, 0.05, 0.03, 0.01, 0.004], 64)
    f = truth.speed(GRID[:, 0], GRID[:, 1])
    model = fit_sync_curve(GRID[:, 0], GRID[:, 1], f * (1 + 0.02 * rng.standard_normal(f.size)), 64)
    assert np.median(np.abs(model.speed(GRID[:, 0], GRID[:, 1]) - f) / f) < 0.02


def test_fit_ignores_bad_samples_and_rejects_none_left():
    truth = _sync([0.002, 0.05, 0.03, 0.01, 0.004], 64)
    f = truth.speed(GRID[:, 0], GRID[:, 1])
    p = np.r_[GRID[:, 0], 0.0, 3.0]
    w = np.r_[GRID[:, 1], 2.0, 3.0]
    r = np.r_[f, 5.0, -1.0]                     # p = 0 and a negative speed: both ignored
    model = fit_sync_curve(p, w, r, 64)
    assert np.allclose(model.speed(GRID[:, 0], GRID[:, 1]), f, rtol=1e-4)
    with pytest.raises(ValueError):
        fit_sync_curve([0, 1], [1, 0], [1.0, 1.0], 64)


def test_estimator_returns_the_measured_value_at_a_measured_size():
    # measurements that the sync form cannot match exactly (a bump at (2, 3)): kept as measured
    truth = _sync([0.002, 0.05, 0.03, 0.01, 0.004], 64)
    pts = {(int(p), int(w)): float(truth.speed(p, w)[0]) for p, w in GRID[:20]}
    pts[(2, 3)] *= 1.7
    est = MeasuredSpeed(pts, 64)
    keys = np.array(list(pts), dtype=float)
    assert np.array_equal(est(keys[:, 0], keys[:, 1]), np.array(list(pts.values())))
    assert est(2, 3) == pts[(2, 3)]
    # elsewhere: the fit, which the bump pulls away from the truth but not to the bump
    fitted = est.fit.speed(7.0, 7.0)[0]
    assert est(7, 7) == pytest.approx(fitted)
    assert est(7, 7) != pytest.approx(truth.speed(7, 7)[0], rel=1e-6)
    assert est(np.array([[2.0, 7.0]]), np.array([[3.0, 7.0]])).shape == (1, 2)


def test_estimator_below_min_points_knows_only_the_measured_sizes():
    est = MeasuredSpeed({(1, 1): 2.0, (2, 2): 3.0}, 64, min_points=5)
    assert est.fit is None
    out = est(np.array([1, 2, 3, 1]), np.array([1, 2, 3, 40]))
    assert out[0] == 2.0 and out[1] == 3.0 and math.isnan(out[2]) and math.isnan(out[3])
    empty = MeasuredSpeed({(1, 1): 0.0, (0, 2): 1.0}, 64)   # no valid point
    assert not empty.points and empty.fit is None and math.isnan(float(empty(1, 1)))


def test_estimator_on_the_authors_profiling_sizes_of_a_measured_table():
    # p = w sizes of DL2's measured vgg-16 grid: exact there, finite and positive everywhere else
    tb = read_config_speed()[0]["vgg-16"]
    diag = tb.p == tb.w
    est = MeasuredSpeed({(int(p), int(w)): g for p, w, g in zip(tb.p[diag], tb.w[diag], tb.g[diag])}, tb.batch)
    assert np.array_equal(est(tb.p[diag], tb.w[diag]), tb.g[diag])
    off = est(tb.p[~diag], tb.w[~diag])
    assert np.all(np.isfinite(off) & (off > 0))

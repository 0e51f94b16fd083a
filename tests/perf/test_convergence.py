"""Optimus's online convergence fit (MODELS.md §5): ℓ(k) = 1/(β0 k + β1) + β2, β ≥ 0."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.instance.synthetic import convergence_curve, converged_step as synthetic_converged_step
from dlsched.perf.convergence import Criterion, LossFit, converged_step, fit_loss_curve


def _curve(beta, k):
    return 1.0 / (beta[0] * k + beta[1]) + beta[2]


def curve_at(steps, l0, floor, remaining=0.05, window_fraction=0.02):
    """A true curve that converges at ``steps`` (as the DL2 trace builds it) and its criterion."""
    window = window_fraction * steps
    curve, delta = convergence_curve(steps, window, remaining, l0, floor)
    return np.array([curve.beta0, curve.beta1, curve.beta2]), Criterion(delta, window)


def test_converged_step_is_where_the_window_improvement_drops_below_delta():
    beta, crit = curve_at(40_000, 2.5, 0.3)
    k = converged_step(beta, crit)
    assert k == pytest.approx(40_000, rel=1e-9)
    drop = lambda s: _curve(beta, s - crit.window) - _curve(beta, s)  # noqa: E731
    assert drop(k) == pytest.approx(crit.delta, rel=1e-6)
    assert drop(0.99 * k) > crit.delta > drop(1.01 * k)


@settings(max_examples=30, deadline=None)
@given(steps=st.floats(100, 1e6), l0=st.floats(0.5, 8.0), floor=st.floats(0.0, 0.4), r=st.floats(0.01, 0.5))
def test_same_criterion_as_the_trace_generator(steps, l0, floor, r):
    beta, crit = curve_at(steps, l0 + floor, floor, r)
    from dlsched.instance.workload import Convergence

    assert converged_step(beta, crit) == pytest.approx(
        synthetic_converged_step(Convergence(*beta), crit.delta, crit.window), rel=1e-9)
    assert converged_step(beta, crit) == pytest.approx(steps, rel=1e-6)


def test_flat_and_degenerate_curves():
    crit = Criterion(delta=1e-3, window=1000.0)
    assert converged_step((0.0, 2.0, 0.1), crit) == 0.0          # never improves: converged now
    assert converged_step((1e-12, 2.0, 0.1), crit) == 0.0
    assert LossFit(np.array([1e-3, 0.5, 0.1]), 3).remaining_steps(1e9, crit) == 0.0
    with pytest.raises(ValueError):
        Criterion(delta=0.0)


@settings(max_examples=30, deadline=None)
@given(steps=st.floats(2_000, 200_000), l0=st.floats(2.0, 8.0), floor=st.floats(0.0, 0.5))
def test_recovers_beta_on_noiseless_points(steps, l0, floor):
    beta, crit = curve_at(steps, l0, floor)
    k = np.linspace(0, 0.5 * steps, 12)
    fit = fit_loss_curve(k, _curve(beta, k))
    assert np.all(fit.beta >= 0)
    assert fit.beta == pytest.approx(beta, rel=1e-3, abs=1e-6)
    assert fit.converged_step(crit) == pytest.approx(steps, rel=0.02)


def test_robust_under_seeded_noise():
    beta, crit = curve_at(60_000, 3.0, 0.2)
    errs = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        k = np.sort(rng.uniform(0, 30_000, 40))
        loss = _curve(beta, k) * (1 + 0.02 * rng.standard_normal(k.size))
        fit = fit_loss_curve(k, loss)
        assert np.all(fit.beta >= 0)
        errs.append(abs(fit.converged_step(crit) - 60_000) / 60_000)
    assert np.median(errs) < 0.1
    assert max(errs) < 0.5


def test_estimate_improves_as_points_accumulate():
    beta, crit = curve_at(80_000, 4.0, 0.5)
    medians = []
    for frac in (0.05, 0.25, 0.6):
        errs = []
        for seed in range(15):
            rng = np.random.default_rng(100 + seed)
            k = np.linspace(0, frac * 80_000, max(int(frac * 100), 4))
            loss = _curve(beta, k) * (1 + 0.03 * rng.standard_normal(k.size))
            errs.append(abs(fit_loss_curve(k, loss).converged_step(crit) - 80_000) / 80_000)
        medians.append(float(np.median(errs)))
    assert medians[0] > medians[1] > medians[2], medians


def test_later_points_weigh_more():
    # the early part follows one curve, the recent part another: weighting recent points fits them better
    old, _ = curve_at(20_000, 3.0, 0.2)
    new, _ = curve_at(50_000, 3.0, 0.2)
    k = np.linspace(0, 30_000, 31)
    loss = np.where(k < 15_000, _curve(old, k), _curve(new, k))
    recent = k >= 15_000

    def recent_error(gamma):
        return float(np.sum((fit_loss_curve(k, loss, gamma=gamma).loss(k[recent]) - loss[recent]) ** 2))

    assert recent_error(0.01) < recent_error(1.0)


def test_bad_points_are_rejected():
    with pytest.raises(ValueError):
        fit_loss_curve([1.0], [2.0])
    with pytest.raises(ValueError):
        fit_loss_curve([0.0, 1.0], [1.0, -1.0])
    with pytest.raises(ValueError):
        fit_loss_curve([0.0, math.nan], [1.0, 0.5])


def test_constant_losses_do_not_crash():
    fit = fit_loss_curve([0, 10, 20], [0.7, 0.7, 0.7])
    assert np.all(np.isfinite(fit.beta)) and fit.loss(100) == pytest.approx(0.7, rel=1e-3)

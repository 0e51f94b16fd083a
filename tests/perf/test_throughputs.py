"""Gavel throughput loader and the §4.1 calibration (MODELS.md §4.1)."""

import json

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.perf.throughputs import batch_size, calibrate, load_gavel, ring_factor


@pytest.fixture(scope="module")
def table():
    return load_gavel()


def test_table_has_26_job_types_on_three_gpu_types(table):
    assert len(table.job_types) == 26
    assert table.gpu_types == ("k80", "p100", "v100")


def test_rho_is_batch_times_isolated_steps(table):
    # MODELS.md §4.1 quotes ResNet-50, batch 64, on V100: 4.39 steps/s alone
    assert table.steps[("ResNet-50 (batch size 64)", "v100", 1)] == pytest.approx(4.39, abs=0.01)
    assert table.rho("ResNet-50 (batch size 64)", "v100") == pytest.approx(64 * 4.39, abs=1)
    assert batch_size("A3C") == 1 and batch_size("LM (batch size 20)") == 20


def test_scale_factors_and_failed_measurements(table):
    assert table.scale_factors("A3C") == (1,)
    assert table.scale_factors("CycleGAN") == (1,)
    assert table.scale_factors("ResNet-50 (batch size 64)") == (1, 2, 4, 8)
    # zero entries are failed measurements, dropped
    assert ("ResNet-50 (batch size 128)", "k80", 2) not in table.steps


def test_unknown_job_type_and_gpu_type_are_named(table):
    with pytest.raises(InputError, match="NoSuchNet"):
        table.rho("NoSuchNet (batch size 3)", "v100")
    with pytest.raises(InputError, match="A3C.*t4"):
        table.rho("A3C", "t4")


def test_zero_throughput_is_named(tmp_path):
    p = tmp_path / "thr.json"
    p.write_text(json.dumps({"v100": {"('Net (batch size 4)', 1)": {"null": 2.0}}, "k80": {"('Net (batch size 4)', 2)": {"null": 1.0}}}))
    t = load_gavel(p)
    with pytest.raises(InputError, match="Net.*k80"):
        t.rho("Net (batch size 4)", "k80")


def test_calibration_fits_nonnegative_terms_and_reports_errors(table):
    cal = calibrate(table)
    assert set(cal.comm_seconds) == set(table.job_types)
    assert all(c >= 0 for c in cal.comm_seconds.values())
    assert cal.comm_seconds["A3C"] == 0 and cal.comm_seconds["CycleGAN"] == 0  # scale factor 1 only
    err = cal.error_by_scale()
    assert set(err) == {2, 4, 8} and all(np.isfinite(v) and v >= 0 for v in err.values())
    # ResNet-50 batch 64: sub-linear scaling -> a positive term that fits within 25% at every scale
    assert cal.comm_seconds["ResNet-50 (batch size 64)"] > 0
    assert max(cal.rel_error[("ResNet-50 (batch size 64)", s)] for s in (2, 4, 8)) < 0.25


def test_calibration_recovers_a_synthetic_term():
    from dlsched.perf.throughputs import ThroughputTable

    c, t1 = 0.05, 0.1
    steps = {("X (batch size 8)", g, n): n / (t1 * (1 + k) + c * float(ring_factor(n)))
             for k, g in enumerate(("k80", "v100")) for n in (1, 2, 4, 8)}
    cal = calibrate(ThroughputTable(steps))
    assert cal.comm_seconds["X (batch size 8)"] == pytest.approx(c, rel=1e-9)
    assert max(cal.rel_error.values()) < 1e-9

"""Calibration of the layered model and Optimus's fit on DL2's measured speeds (MODELS.md §2.1, §5)."""

import csv

import numpy as np
import pytest

from dlsched.data import data_dir
from dlsched.perf.architectures import ARCHITECTURES, BYTES_PER_PARAM
from dlsched.perf.calibrate import relative_errors
from dlsched.perf.optimus_fit import fit_sync, relative_errors as optimus_errors
from dlsched.perf.profiles import MEASURED_BATCH, MODELS, builtin
from dlsched.perf.speeds import read_config_speed


@pytest.fixture(scope="module")
def tables():
    return read_config_speed()


def test_reader_drops_exactly_the_zero_rows(tables):
    t, dropped = tables
    assert dropped == 9
    assert set(t) == set(MODELS)
    assert all(np.all(tb.speed > 0) for tb in t.values())
    assert {m: tb.batch for m, tb in t.items()} == MEASURED_BATCH


def test_architecture_sizes_match_dl2_model_sizes():
    with open(data_dir() / "dl2" / "job_types.csv") as f:
        sizes = {r["model"]: float(r["model_size_mb"]) for r in csv.DictReader(f)}
    for m, build in ARCHITECTURES.items():
        mb = BYTES_PER_PARAM * build()[1].sum() / 1e6
        assert abs(mb - sizes[m]) / sizes[m] < 0.08, (m, mb, sizes[m])


def test_stored_constants_meet_the_target(tables):
    t, _ = tables
    medians = {}
    for m in MODELS:
        err = relative_errors(builtin(m), t[m])
        medians[m] = np.median(err)
        assert np.median(err) <= 0.15, (m, np.median(err))
        assert np.quantile(err, 0.9) <= 0.45
    assert np.mean(list(medians.values())) < 0.10


def test_optimus_fit_is_nonnegative_and_reasonable(tables):
    t, _ = tables
    for m in MODELS:
        model = fit_sync(t[m])
        assert np.all(model.theta >= 0)
        assert np.median(optimus_errors(model, t[m])) < 0.15


def test_refit_reproduces_stored_constants_quality(tables):
    from dlsched.perf.calibrate import fit_model

    t, _ = tables
    fit = fit_model(t["wlm"], starts=2)
    stored = np.median(relative_errors(builtin("wlm"), t["wlm"]))
    assert fit.median_error <= stored + 0.01

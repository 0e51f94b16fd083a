"""Probes of a job-level policy's search space (dlsched/rl/probes.py), on one tuning trace."""

import math

import numpy as np
import pytest

from dlsched.rl.policy import DL2Policy, Model, load_checkpoint, save_checkpoint
from dlsched.rl.probes import basis_jct, logit_margins, member_spread, prior_jct, scale_agreement
from dlsched.rl.slot import Spec
from dlsched.rl.train import TrainConfig, mean_jct, setting

SEEDS = (2000,)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("probe") / "m.pt"
    save_checkpoint(Model.new(Spec(J=8, rows="remaining", actions="jobs"), (16,), seed=3), path)
    return path


def test_the_margins_are_over_rows_with_a_choice(checkpoint):
    out = logit_margins(checkpoint, SEEDS)
    p = out["percentiles_10_25_50_75_90"]
    assert out["rows"] > 0 and p == sorted(p) and p[0] >= 0
    assert sum(out["chosen"].values()) == out["rows"]
    shares = list(out["share_below"].values())
    assert shares == sorted(shares) and 0 <= shares[0] and shares[-1] <= 1


def test_a_prior_on_one_level_decides_every_row(checkpoint):
    assert math.isinf(prior_jct(checkpoint, 0, seeds=SEEDS))          # every job left out: the run stalls
    one = prior_jct(checkpoint, 1, seeds=SEEDS)
    assert np.isfinite(one) and one != prior_jct(checkpoint, 3, seeds=SEEDS)
    assert one == prior_jct(checkpoint, [1] * 4, seeds=SEEDS)         # J = 8: rank groups 0 | 1-2 | 3-6 | 7


def test_the_basis_origin_is_the_checkpoint(checkpoint):
    traces, cluster, speed = setting(TrainConfig(), SEEDS)
    plain = mean_jct(lambda: DL2Policy(load_checkpoint(checkpoint)), traces, cluster, speed)
    assert basis_jct(checkpoint, np.zeros(1 + 4 * 4), seeds=SEEDS) == plain


def test_the_feature_fit_follows_the_teacher_better_than_uniform(checkpoint):
    from dlsched.rl.probes import feature_fit, teacher_states

    X, M, A, N = teacher_states(checkpoint, "srpt-greedy", SEEDS)
    rows = M.sum(axis=2) > 1
    assert np.array_equal(rows, np.arange(8)[None, :] < N[:, None])     # a window job has a choice, an empty row none
    uniform = float(np.mean(np.log(M.sum(axis=2)[rows])))      # the loss of Θ = 0: every valid level alike
    out = feature_fit(checkpoint, "srpt-greedy", SEEDS, steps=50, gains=(1.0,), scales=(0.01,))
    assert out["rows"] == int(rows.sum()) and out["nll"] < uniform - 0.1
    assert list(out["tune_jct"]) == ["s=0.01, gain=1"] and not np.isnan(out["tune_jct"]["s=0.01, gain=1"])   # inf: stalled


def test_the_scale_agreement_is_total_at_its_own_scale_and_names_the_margins_where_not(checkpoint):
    out = scale_agreement(checkpoint, (1.0, 0.001), SEEDS)
    assert out["s=1"]["same"] == 1.0 and out["s=1"]["margin_where_not_p50_p90"] == []
    small = out["s=0.001"]
    assert small["rows"] == out["s=1"]["rows"] > 0 and small["same"] < 1.0     # an untrained bias outweighs 0.001 · W h
    assert 0 <= small["margin_where_not_p50_p90"][0] <= small["margin_where_not_p50_p90"][1]


def test_a_member_at_sigma_zero_plays_the_warm_up_and_work_conserving_members_are_never_cut(tmp_path):
    path = tmp_path / "wc.pt"
    save_checkpoint(Model.new(Spec(J=8, rows="remaining", actions="jobs", leave_out=False), (16,), seed=3), path)
    same = member_spread(path, sigma=1e-12, members=1, seeds=SEEDS)
    assert same["members"] == [{"return_over_warm_up": 1.0, "episodes_cut": 0}] and not same["leave_out"]
    wide = member_spread(path, sigma=5.0, members=3, seed=1, seeds=SEEDS)
    assert all(m["episodes_cut"] == 0 for m in wide["members"])
    assert any(m["return_over_warm_up"] != 1.0 for m in wide["members"])      # σ = 5 changes decisions

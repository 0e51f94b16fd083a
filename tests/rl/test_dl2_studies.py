"""DL2's design studies as study tasks (dlsched/bench/dl2_studies.py), on a tiny setting."""

from dataclasses import replace

import numpy as np
import pytest

import dlsched.bench.dl2_studies as studies
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.errors import InputError
from dlsched.policies.drf import DRF
from dlsched.rl.env import DL2Env
from dlsched.rl.forks import fork_episode
from dlsched.rl.policy import Model, save_checkpoint
from dlsched.rl.slot import Spec
from dlsched.rl.train import TrainConfig, setting
from dlsched.sim.engine import simulate
from dlsched.sim.speed import TableSpeed


@pytest.fixture
def tiny(monkeypatch):
    cfg = replace(TrainConfig(), n_jobs=8, n_servers=3)
    monkeypatch.setattr(studies, "TrainConfig", lambda: cfg)
    return cfg


def test_teachers_are_parsed_with_json_options():
    assert studies.parse_teacher("drf") == ("drf", {})
    assert studies.parse_teacher('optimus:gain="relative",pairs=true') == ("optimus", {"gain": "relative", "pairs": True})


def test_the_teacher_task_simulates_the_teacher_event_driven_and_in_dl2s_slots(tiny):
    row = studies.teacher_task("drf", tune="1000-1001", events=True)
    direct = [np.mean(simulate(dl2_trace(8, seed=s), dl2_cluster(3), DRF(), TableSpeed()).jct) for s in (1000, 1001)]
    assert row["event_driven"] == pytest.approx(np.mean(direct), rel=1e-12)
    assert row["in_dl2_slots"] > 0 and row["in_dl2_slots_and_events"] > 0


def test_the_warmup_task_reports_agreement_and_ties(tiny):
    row = studies.warmup_task("drf", traces="1000-1001", held_out="1002-1002", epochs=1, jct=True)
    assert 0 <= row["agreement_held_out"] <= 1 and 0 <= row["agreement_train"] <= 1
    assert 0 <= row["of_which_ties_in_dominant_share"] <= row["held_out_disagreements"] <= row["samples"]["held_out"]
    assert set(row["mean_jct_held_out"]) == {"teacher", "teacher_in_dl2_slots", "warmup_network"}


JOBS = Spec(J=6, actions="jobs", configs=((0, 0), (1, 1), (2, 2), (4, 4), (1, 3)))


def test_the_horizon_study_plays_the_forks_of_fork_episode_and_cuts_their_returns(tiny):
    """The truncated advantages are exactly ``fork_episode``'s at that horizon (same forks, same
    draws), and a cut-off beyond every episode's end agrees with the end in everything."""
    traces, cluster, speed = setting(tiny, (1000,))
    model = Model.new(JOBS, (16,), seed=3)
    env = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
    H, C = 3, 3
    played = studies.fork_continuations(env, model, np.random.default_rng(5), 3, p_fork=1.0, candidates=C,
                                        temperature=1.0, cutoffs=(H,))
    assert len(played) == 3 and all(len(f["levels"]) == C == len(f["rewards"]) for f in played)
    R_H = [np.array([r[:H].sum() for r in f["rewards"]]) for f in played]
    kept = [(f["levels"], R) for f, R in zip(played, R_H) if np.ptp(R) > 0]
    X, M, I, K, LP, ADV, _, _ = fork_episode(env, model, np.random.default_rng(5), trace=0, p_fork=1.0, candidates=C,
                                          temperature=1.0, horizon=H)
    assert len(kept) and len(K) >= C * len(kept)
    for n, (levels, R) in enumerate(kept):
        assert list(K[n * C:(n + 1) * C]) == list(levels)
        assert ADV[n * C:(n + 1) * C] == pytest.approx(studies.leave_one_out(R), rel=1e-9, abs=1e-9)


def test_a_horizon_beyond_the_episode_agrees_with_the_end(tiny, tmp_path):
    save_checkpoint(Model.new(JOBS, (16,), seed=3), tmp_path / "j.pt")
    row = studies.horizon_task(str(tmp_path / "j.pt"), traces="1000-1001", forks=6, candidates=3, p_fork=0.5,
                               cutoffs="1,100000")
    assert row["forks"] == 6 and row["forks_kept"] >= 2
    far = row["H100000"]["truncated"]
    assert far["correlation"] == pytest.approx(1.0) and far["sign_agreement"] == 1.0 and far["same_best"] == 1.0
    assert row["H1"]["bootstrapped"]["tail_r2"] <= 1.0 and -1 <= row["H1"]["truncated"]["correlation"] <= 1
    with pytest.raises(InputError):
        studies.horizon_task(None, forks=1)     # the shipped model sizes tasks, not jobs

"""DL2's design studies as study tasks (dlsched/bench/dl2_studies.py), on a tiny setting."""

from dataclasses import replace

import numpy as np
import pytest

import dlsched.bench.dl2_studies as studies
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.policies.drf import DRF
from dlsched.rl.train import TrainConfig
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

"""Work-conserving rows (``Spec.leave_out = False``, ``train dl2 --work-conserving``; docs/dl2.md round 16)."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.rl.es import es_features, set_theta, theta, with_prior
from dlsched.rl.networks import prior_shape
from dlsched.rl.policy import DL2Policy, Model, load_checkpoint, save_checkpoint
from dlsched.rl.slot import Spec
from dlsched.rl.train import TrainConfig, teacher_levels
from dlsched.sim.engine import simulate

from .helpers import small
from .test_es import tiny_es_run
from .test_slot import new_slot, state_at

CONFIGS = ((0, 0), (1, 1), (2, 2), (4, 4), (1, 3))


def slots(seed=3):
    sim, _ = state_at(n_jobs=10, servers=3, seed=seed)
    base = Spec(J=6, actions="jobs", configs=CONFIGS)
    return new_slot(sim, base), new_slot(sim, dataclasses.replace(base, leave_out=False))


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_level_zero_is_valid_only_where_no_size_is(seed):
    free, kept = slots(seed)
    a, b = free.level_mask(), kept.level_mask()
    n = len(kept.jobs)
    assert n > 0 and a[:n, 0].all()                                  # leaving out is always allowed by default
    assert np.array_equal(a[:, 1:], b[:, 1:])                         # the sizes are the same
    assert np.array_equal(b[:n, 0], ~a[:n, 1:].any(axis=1))           # 0 only for a job no size fits
    assert b[n:, 0].all() and not b[n:, 1:].any()                     # an empty row: level 0 alone


def test_a_job_the_teacher_leaves_out_gets_the_smallest_size():
    free, kept = slots()
    j0 = int(kept.jobs[0])
    target = {j0: (2, 2)}                                             # j1 and the rest left out
    a, b = teacher_levels(free, target), teacher_levels(kept, target)
    assert a[0] == b[0] == 2
    assert a[1] == 0 and CONFIGS[b[1]] == (1, 1)


def test_the_spec_round_trips_and_an_old_spec_reads_as_leave_out():
    spec = Spec(J=6, actions="jobs", configs=CONFIGS, leave_out=False)
    assert Spec.from_dict(spec.to_dict()) == spec
    old = Spec(J=6, actions="jobs", configs=CONFIGS)
    assert "leave_out" not in old.to_dict() and Spec.from_dict(old.to_dict()).leave_out
    for bad in ({"leave_out": False}, {"actions": "jobs", "leave_out": "x"}):     # task actions; not a bool
        with pytest.raises(InputError) as e:
            Spec(J=6, **bad)
        assert e.value.where == "leave_out"


def test_a_checkpoint_plays_work_conserving_and_no_row_that_fits_is_left_out(tmp_path):
    spec = Spec(J=6, actions="jobs", configs=CONFIGS, leave_out=False)
    model = Model.new(spec, (16,), seed=4)
    with torch.no_grad():                                             # a network that would leave every job out
        model.policy.body[-1].bias.view(6, len(CONFIGS))[:, 0] += 100.0
    save_checkpoint(model, tmp_path / "k.pt")
    loaded = load_checkpoint(tmp_path / "k.pt")
    assert loaded.spec == spec
    traces, cluster, speed = small(8, (2,), 3)
    res = simulate(traces[0], cluster, DL2Policy(loaded), speed, stall_calls=300)
    assert res.status == "completed"                                  # a leave-out bias cannot stall it
    free = Model.new(dataclasses.replace(spec, leave_out=True), (16,), seed=4)
    free.policy.load_state_dict(model.policy.state_dict())
    stalled = simulate(traces[0], cluster, DL2Policy(free), speed, stall_calls=300)
    assert stalled.status != "completed"                              # the same network with leaving out allowed


def test_es_features_drop_the_leave_out_column_and_train():
    spec = Spec(J=6, actions="jobs", configs=CONFIGS, leave_out=False)
    P, Q = prior_shape(spec)
    E, E_free = es_features(spec), es_features(dataclasses.replace(spec, leave_out=True))
    assert E_free.shape[1] == 1 + P * Q and E.shape[1] == 1 + P * (Q - 1)
    model = with_prior(Model.new(spec, (16,), seed=1))
    start = theta(model)
    set_theta(model, start + torch.from_numpy(E @ np.ones(E.shape[1])).to(start.dtype))
    prior = model.policy.prior.numpy()
    assert (prior[:, 0] == 0).all() and (prior[:, 1:] == 1).all()


def test_a_work_conserving_es_run_keeps_the_spec(tmp_path):
    prov, out, jct = tiny_es_run(tmp_path, es_features=True, leave_out=False)
    assert out.spec.leave_out is False
    assert jct == pytest.approx(prov["best_tune_jct"], rel=1e-12)


def test_the_command_line_refuses_work_conserving_task_actions(tmp_path):
    with pytest.raises(InputError) as e:
        TrainConfig(leave_out=False)
    assert e.value.where == "leave_out"
    run = subprocess.run([sys.executable, "-m", "dlsched", "train", "dl2", "--work-conserving", "--episodes", "0",
                          "--out", str(tmp_path / "x.pt")], capture_output=True, text=True)
    assert run.returncode == 2 and "--work-conserving" in run.stderr and "--actions tasks" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "x.pt").exists()

"""The row prior reading the window's load (``Spec.prior_load``, ``train dl2 --prior-load``; docs/dl2.md round 17)."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.rl.es import es_features, with_prior
from dlsched.rl.networks import prior_shape, row_features
from dlsched.rl.policy import Model, load_checkpoint, save_checkpoint
from dlsched.rl.slot import Spec

from .test_es import tiny_es_run
from .test_work_conserving import CONFIGS, slots

SPEC = Spec(J=6, actions="jobs", configs=CONFIGS, leave_out=False, prior_load=True)


def test_the_load_column_is_the_windows_jobs_in_every_row_and_the_others_are_unchanged():
    _, slot = slots(seed=3)
    full = slot.observation()
    part = full.copy()
    part[2:] = 0                                                                  # two jobs, the other rows empty
    x = torch.from_numpy(np.stack([full, part, np.zeros_like(full)])).float()
    with_load = row_features(x, SPEC)
    without = row_features(x, dataclasses.replace(SPEC, prior_load=False))
    assert len(slot.jobs) == SPEC.J and with_load.shape[-1] == without.shape[-1] + 1 == prior_shape(SPEC)[0]
    assert torch.equal(with_load[..., :-1], without)
    for k, n in enumerate((SPEC.J, 2, 0)):                                        # the last: an empty window
        assert torch.allclose(with_load[k, :, -1], torch.full((SPEC.J,), (np.log2(1 + n) - 4) / 1.5))


def test_a_weight_on_the_load_row_moves_the_preferred_size_with_the_load():
    model = with_prior(Model.new(SPEC, (16,), seed=2))
    _, slot = slots(seed=3)
    x = torch.from_numpy(slot.observation()).float()[None]
    light, busy = x.clone(), x.clone()
    light[0, 1:] = 0                                                              # one job; busy: six
    mask = torch.ones(1, SPEC.J * SPEC.n_levels)
    base = [model.policy.levels(s, mask)[0, 0] for s in (light, busy)]
    with torch.no_grad():
        model.policy.prior[-1, 1] = -2.0                                          # more jobs: fewer workers
    moved = [model.policy.levels(s, mask)[0, 0] - b for s, b in zip((light, busy), base)]
    u = torch.log2(1 + torch.tensor([c[0] for c in CONFIGS], dtype=torch.float32))
    for m, s in zip(moved, (light, busy)):
        assert torch.allclose(m, row_features(s, SPEC)[0, 0, -1] * -2.0 * u, atol=1e-5)
    assert (moved[1] - moved[0])[1:].lt(0).all()                                  # the busy state prefers smaller sizes


def test_the_spec_round_trips_and_searches_one_row_more(tmp_path):
    assert Spec.from_dict(SPEC.to_dict()) == SPEC
    assert "prior_load" not in dataclasses.replace(SPEC, prior_load=False).to_dict()
    E, E0 = es_features(SPEC), es_features(dataclasses.replace(SPEC, prior_load=False))
    assert E.shape[1] == E0.shape[1] + prior_shape(SPEC)[1] - 1                   # Θ's new row, less its leave-out
    model = with_prior(Model.new(SPEC, (16,), seed=1))
    save_checkpoint(model, tmp_path / "m.pt")
    assert load_checkpoint(tmp_path / "m.pt").policy.prior.shape == prior_shape(SPEC)
    old = with_prior(Model.new(dataclasses.replace(SPEC, prior_load=False), (16,), seed=1))
    doc = torch.load(tmp_path / "m.pt", weights_only=False)
    doc["row_prior"] = old.policy.prior                                           # a Θ without the load row
    del doc["digest"]
    torch.save(doc, tmp_path / "bad.pt")
    with pytest.raises(InputError) as e:
        load_checkpoint(tmp_path / "bad.pt")
    assert e.value.where == "row_prior"


def test_an_es_run_with_the_load_row_keeps_the_spec_and_plays_its_tuning_jct(tmp_path):
    prov, out, jct = tiny_es_run(tmp_path, es_features=True, leave_out=False, prior_load=True)
    assert out.spec.prior_load is True and out.policy.prior.shape == prior_shape(out.spec)
    assert jct == pytest.approx(prov["best_tune_jct"], rel=1e-12)


def test_the_load_row_needs_job_level_actions(tmp_path):
    for bad in (lambda: Spec(J=6, prior_load=True), lambda: Spec(J=6, actions="jobs", prior_load=1)):
        with pytest.raises(InputError) as e:
            bad()
        assert e.value.where == "prior_load"
    run = subprocess.run([sys.executable, "-m", "dlsched", "train", "dl2", "--prior-load", "--episodes", "0",
                          "--out", str(tmp_path / "x.pt")], capture_output=True, text=True)
    assert run.returncode == 2 and "--prior-load" in run.stderr and "--actions tasks" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "x.pt").exists()

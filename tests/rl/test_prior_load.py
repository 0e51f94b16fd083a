"""The row prior reading the window's load (``Spec.prior_load``, ``train dl2 --prior-load``; docs/dl2.md round 17)."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.rl.es import es_features, theta, with_prior
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


def test_a_search_without_the_load_row_goes_on_with_it_from_the_same_decisions(tmp_path):
    """``--init`` of a checkpoint without the load row and ``--prior-load``: Θ gains a zero row (the same
    greedy decisions: the first tuning evaluation equals the checkpoint's own), the carried CMA state is
    dropped and a new search runs over the 33-direction Θ."""
    from dlsched.rl.train import TrainConfig, train

    base = dict(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3, warmup_epochs=2,
                eval_every=1, batch=16, actions="jobs", baseline="es", es_pairs=2, es_traces=1, es_sigma=1.0,
                max_slots=60, es_features=True, leave_out=False, es_optimizer="cma")
    first = train(TrainConfig(rl_episodes=2, **base), tmp_path / "a.pt", command="test", progress=False)
    model = load_checkpoint(tmp_path / "a.pt")
    assert not model.spec.prior_load and model.es_optimizer is not None
    prov = train(TrainConfig(rl_episodes=2, init=str(tmp_path / "a.pt"), prior_load=True, **base), tmp_path / "b.pt",
                 command="test", progress=False)
    out = load_checkpoint(tmp_path / "b.pt")
    assert out.spec.prior_load and out.policy.prior.shape == prior_shape(out.spec)
    assert prov["curve"][0]["tune_jct"] == pytest.approx(first["best_tune_jct"], rel=1e-12)
    search = out.es_optimizer                            # a new search over Θ with its load row (3 level features searched)
    assert len(search["mean"]) == es_features(out.spec).shape[1] == es_features(model.spec).shape[1] + 3
    assert len(search["origin"]) == len(theta(out)) == len(theta(model)) + prior_shape(out.spec)[1]
    # any other difference of the spec is still refused
    with pytest.raises(InputError) as e:
        train(TrainConfig(rl_episodes=1, init=str(tmp_path / "a.pt"), **{**base, "leave_out": True}), tmp_path / "c.pt",
              command="test", progress=False)
    assert e.value.where == "spec"

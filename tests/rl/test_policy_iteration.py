"""Approximate policy iteration by exact forks (``--baseline api``, :mod:`dlsched.rl.policy_iteration`), each tiny."""

import json

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.rl.policy_iteration import Labels, api_update, fork_targets
from dlsched.rl.env import DL2Env
from dlsched.rl.forks import fork_episode
from dlsched.rl.policy import DL2Policy, Model, choose, load_checkpoint
from dlsched.rl.train import TrainConfig, train

from .helpers import JOBS, greedy_state, small


def leave_one_out(R):
    R = np.asarray(R, float)
    return R - (R.sum() - R) / (len(R) - 1)


def test_a_forks_label_is_its_best_level_where_it_beats_the_greedy_one_by_the_margin():
    # three forks: the greedy level (first) loses by 3 job-slots; wins; loses by 0.5 (under the margin of 1)
    forks = [([2, 1, 4], [-10.0, -7.0, -12.0]), ([3, 0, 1, 2], [-5.0, -6.0, -9.0, -5.5]), ([1, 2], [-4.0, -3.5])]
    K = np.concatenate([k for k, _ in forks])
    ADV = np.concatenate([leave_one_out(r) for _, r in forks])
    F = np.repeat(np.arange(3), [len(k) for k, _ in forks])
    first, labels, gains = fork_targets(K, ADV, F, margin=1.0)
    assert first.tolist() == [0, 3, 7]
    assert labels.tolist() == [1, 3, 1]
    assert np.allclose(gains, [3.0, 0.0, 0.0])
    # no margin: the half job-slot relabels the third fork too
    _, labels, gains = fork_targets(K, ADV, F, margin=0.0)
    assert labels.tolist() == [1, 3, 2] and np.allclose(gains, [3.0, 0.0, 0.5])


def test_the_labels_of_a_forked_episode_are_its_candidates_best_returns():
    """End to end on one episode: every fork's label is the level whose continuation returned the most
    (the returns recomputed from the candidates' advantages match ``fork_episode``'s own forks)."""
    traces, cluster, speed = small(8, (1,), 3)
    env = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
    model = Model.new(JOBS, (16,))
    X, M, I, K, LP, ADV, F, _ = fork_episode(env, model, np.random.default_rng(3), trace=0, p_fork=1.0,
                                             candidates=3, temperature=1.0, horizon=0, hold=2)
    first, labels, gains = fork_targets(K, ADV, F, margin=0.0)
    assert len(first) == F.max() + 1 > 0
    for n, a in enumerate(first):
        b = a + 3
        assert labels[n] == K[a + int(np.argmax(ADV[a:b]))] or gains[n] == 0
        assert M[a][I[a], labels[n]]        # a valid level of its row


def test_the_memory_keeps_the_most_recent_labels():
    mem = Labels(5)
    for n in range(3):
        mem.add(np.full((3, 2, 2), n, np.float32), np.ones((3, 2, 2), np.int8), np.arange(3), np.full(3, n))
    assert len(mem) == 5 and mem.K.tolist() == [1, 1, 2, 2, 2] and mem.X[0, 0, 0] == 1


def one_state():
    model = Model.new(JOBS, (16,), seed=1)
    _, obs, info = greedy_state(10, 5, model)
    return model, obs, info["action_mask"]


def test_an_update_makes_the_label_the_greedy_level_and_the_trust_region_holds_the_other_rows():
    model, obs, mask = one_state()
    greedy = choose(model, obs, mask)
    row = int(np.flatnonzero(mask[:, 1:].sum(axis=1) > 1)[0])
    target = int(next(k for k in np.flatnonzero(mask[row]) if k != greedy[row]))
    mem = Labels(10)
    mem.add(obs[None], mask[None].astype(np.int8), np.array([row]), np.array([target]))
    x, m = torch.from_numpy(obs[None]), torch.from_numpy(mask[None])

    def probs(mdl):
        with torch.inference_mode():
            return torch.softmax(mdl.policy.levels(x, m)[0], dim=1).numpy()

    before = probs(model)
    moved = {}
    for kl in (0.0, 10.0):
        mdl = Model(model.shape, *(type(n)(model.shape) for n in (model.policy, model.value)))
        mdl.policy.load_state_dict(model.policy.state_dict())
        opt = torch.optim.Adam(mdl.policy.parameters(), lr=0.01)
        stats = api_update(mdl, opt, mem, kl=kl, steps=60, batch=8, rng=np.random.default_rng(0))
        after = probs(mdl)
        assert choose(mdl, obs, mask)[row] == target and stats["label_agreement"] == 1.0
        assert stats["ce_last"] < stats["ce_first"] and stats["kl_first"] == 0.0
        others = [i for i in range(JOBS.J) if i != row and mask[i].sum() > 1]
        moved[kl] = np.abs(after[others] - before[others]).sum()
    # the unlabelled rows' distributions move less with the trust region than without it
    assert moved[10.0] < moved[0.0]


def test_an_update_leaves_the_row_prior_and_the_logit_scale_as_they_are():
    model, obs, mask = one_state()
    model.policy.prior = torch.ones(10, 4) * 0.1
    model.policy.logit_scale = 0.1
    mem = Labels(10)
    mem.add(obs[None], mask[None].astype(np.int8), np.array([0]), np.array([int(np.flatnonzero(mask[0])[-1])]))
    opt = torch.optim.Adam(model.policy.parameters(), lr=0.01)
    w = model.policy.body[-1].weight.detach().clone()
    api_update(model, opt, mem, kl=1.0, steps=3, batch=4, rng=np.random.default_rng(0))
    assert torch.equal(model.policy.prior, torch.ones(10, 4) * 0.1) and model.policy.logit_scale == 0.1
    assert not torch.equal(model.policy.body[-1].weight, w)


def test_the_api_baseline_trains_with_two_workers_and_records_its_labels(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=2, rl_episodes=2, eval_every=1, batch=16, actions="jobs", baseline="api",
                      p_branch=0.5, candidates=3, hold=2, max_slots=60, workers=2, kl=1.0, rl_lr=1e-3,
                      updates_per_episode=4, api_margin=0.0)
    prov = train(cfg, tmp_path / "a.pt", command="test", progress=False)
    assert prov["episodes_run"] == 4 and len(prov["curve"]) == 3 and prov["cpu_seconds"] > 0
    api = prov["api"]
    assert [a["iteration"] for a in api] == [1, 2]
    assert api[1]["labels"] == api[0]["forks"] + api[1]["forks"] > 0
    assert all(0 <= a["improved"] <= a["forks"] for a in api)
    assert DL2Policy(str(tmp_path / "a.pt")).spec.actions == "jobs"
    assert json.loads((tmp_path / "a.json").read_text())["config"]["baseline"] == "api"


def test_the_api_baseline_continues_a_checkpoint_with_its_row_prior(tmp_path):
    """From a Θ checkpoint (``--es-features``) the prior and the logit scale stay as the checkpoint has them."""
    base = dict(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3, warmup_epochs=2,
                eval_every=1, batch=16, actions="jobs", max_slots=60, leave_out=False)
    train(TrainConfig(**base, rl_episodes=1, baseline="es", es_features=True, es_scale=False, es_held_scale=0.1, es_pairs=1,
                      es_traces=1), tmp_path / "es.pt", command="es", progress=False)
    start = load_checkpoint(tmp_path / "es.pt")
    train(TrainConfig(**base, rl_episodes=2, baseline="api", init=str(tmp_path / "es.pt"), p_branch=1.0,
                      candidates=3, hold=2, kl=0.1, rl_lr=0.01, updates_per_episode=8, api_margin=0.0),
          tmp_path / "api.pt", command="api", progress=False)
    end = load_checkpoint(tmp_path / "api.pt")
    assert end.policy.logit_scale == start.policy.logit_scale == pytest.approx(0.1)
    assert torch.equal(end.policy.prior, start.policy.prior)


@pytest.mark.parametrize("settings", [dict(baseline="api"), dict(actions="jobs", baseline="api", candidates=1),
                                      dict(actions="jobs", baseline="api", api_margin=-1.0),
                                      dict(actions="jobs", baseline="api", api_margin=float("nan")),
                                      dict(actions="jobs", baseline="api", api_memory=0)])
def test_api_settings_out_of_range_are_refused(settings):
    with pytest.raises(InputError):
        TrainConfig(**settings)


@pytest.mark.parametrize("flag, value", [("--api-margin", "-1"), ("--api-memory", "0")])
def test_api_flags_out_of_range_are_refused_by_name(capsys, flag, value):
    from dlsched.cli import main

    argv = ["train", "dl2", "--traces", "1000", "--tune", "2000", "--jobs", "6", "--servers", "4", "--episodes", "0",
            "--warmup-epochs", "1", "--hidden", "16,16", "--quiet", "--actions", "jobs", "--baseline", "api",
            "--out", "/nonexistent/x.pt", flag, value]
    assert main(argv) == 2
    assert f"at {flag}" in capsys.readouterr().err

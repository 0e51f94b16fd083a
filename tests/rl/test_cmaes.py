"""``--es-optimizer cma``: CMA-ES over the coordinates ES searches (dlsched/rl/cmaes.py), each tiny."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.rl.es import es_features, greedy_return, set_theta, theta, with_prior
from dlsched.rl.policy import Model, load_checkpoint, save_checkpoint
from dlsched.rl.train import TrainConfig, main, train

from .test_es import JOBS, setting

cmaes = pytest.importorskip("dlsched.rl.cmaes", reason="--es-optimizer cma needs pycma (the rl extra)")
CmaSearch = cmaes.CmaSearch

TARGET = np.array([6.0, -4.0, 9.0, 3.0, -7.0])      # ‖TARGET‖ ≈ 14: a hundred σ₀ away


def quadratic(search, rng, generations, target=TARGET):
    """``generations`` of the search on F(x) = −‖x − target‖² (returns: higher is better); σ after each."""
    sigmas = []
    for _ in range(generations):
        X = search.ask(rng)
        search.tell(X, np.array([-np.sum((x - target) ** 2) for x in X]))
        sigmas.append(search.sigma)
    return np.array(sigmas)


def test_cma_approaches_a_quadratics_minimum_far_away_by_growing_its_step():
    search = CmaSearch(np.zeros(1 + len(TARGET)), None, 0.1, pairs=4)
    sigmas = quadratic(search, np.random.default_rng(0), 150)
    # the step grows while the path is consistent (the distance is a hundred σ₀), then shrinks at the minimum
    assert sigmas.max() > 10 * 0.1
    assert np.linalg.norm(search.mean - TARGET) < 1e-3 and sigmas[-1] < 1e-3
    assert np.allclose(search.theta(search.mean)[1:], search.mean) and search.theta(search.mean)[0] == 0.0


def test_under_pure_noise_the_step_does_not_collapse():
    # pairwise selection: ranking both points of a mirrored pair lets them cancel in the mean's shift, and σ
    # fell to 0.12-0.18 in 100 generations of noise (docs/dl2.md round 15); a random walk of log σ instead
    for seed in range(3):
        search, rng = CmaSearch(np.zeros(41), None, 1.0, pairs=8), np.random.default_rng(seed)
        for _ in range(100):
            X = search.ask(rng)
            search.tell(X, rng.standard_normal(len(X)))
        assert 0.4 < search.sigma < 2.5


def test_the_points_come_in_mirrored_pairs_from_the_given_stream():
    search = CmaSearch(np.zeros(6), None, 0.5, pairs=3)
    quadratic(search, np.random.default_rng(1), 2)           # a mean away from 0
    X = np.array(search.ask(np.random.default_rng(2)))
    assert X.shape == (6, 5) and np.allclose(X[0::2] + X[1::2], 2 * search.mean)
    again = CmaSearch(np.zeros(6), None, 0.5, pairs=3)
    quadratic(again, np.random.default_rng(1), 2)
    assert np.array_equal(np.array(again.ask(np.random.default_rng(2))), X)     # seeded: the same points
    with pytest.raises(RuntimeError):
        search.es.ask()                                      # no draw outside the run's stream


def test_a_generation_ranks_its_members_on_common_traces_and_leaves_the_policy_at_the_mean():
    env, *_ = setting()
    model = with_prior(Model.new(JOBS, (16,), seed=2))
    E = es_features(JOBS, scale=False)
    search = CmaSearch(theta(model).numpy(), E, 2.0, pairs=3)
    probe = CmaSearch(theta(model).numpy(), E, 2.0, pairs=3)
    d, mean, cpu = search.generation(env, model, np.random.default_rng(7), traces=2)
    rng = np.random.default_rng(7)                           # the same draws, replayed by hand
    ks = rng.choice(3, size=2, replace=False)
    X = probe.ask(rng)
    F = []
    for x in X:
        replay = with_prior(Model.new(JOBS, (16,), seed=2))
        set_theta(replay, torch.from_numpy(probe.theta(x)))
        F.append(np.mean([greedy_return(env, replay, k) for k in ks]))
    F = np.array(F)
    assert cpu == 0.0 and np.any(d != 0)                     # σ 2 changes decisions
    assert d == pytest.approx(F[0::2] - F[1::2], rel=1e-12) and mean == pytest.approx(F.mean(), rel=1e-12)
    probe.tell(X, F)
    assert np.array_equal(search.mean, probe.mean) and not np.allclose(search.mean, 0)
    assert torch.allclose(theta(model).double(), torch.from_numpy(search.theta(search.mean)), atol=1e-6)


def test_the_state_round_trips_through_a_checkpoint_and_continues_the_same_search(tmp_path):
    search = CmaSearch(np.arange(6.0), None, 0.2, pairs=4)
    quadratic(search, np.random.default_rng(3), 12)
    model = Model.new(JOBS, (16,), seed=2)
    model.es_optimizer = search.state()
    save_checkpoint(model, tmp_path / "m.pt")
    state = load_checkpoint(tmp_path / "m.pt").es_optimizer
    assert state["kind"] == "cma" and state["countiter"] == 12
    again = CmaSearch.from_state(state, None, pairs=4)
    assert np.array_equal(again.origin, np.arange(6.0)) and again.sigma == search.sigma
    a, b = quadratic(search, np.random.default_rng(9), 6), quadratic(again, np.random.default_rng(9), 6)
    assert np.array_equal(a, b) and np.array_equal(search.mean, again.mean)
    assert np.array_equal(search.es.sm.C, again.es.sm.C)
    fresh = CmaSearch(np.arange(6.0), None, 0.2, pairs=4)     # what a restart would do instead
    assert not np.allclose(quadratic(fresh, np.random.default_rng(9), 6), a)


def tiny(**kw):
    return TrainConfig(**{**dict(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                                 warmup_epochs=2, rl_episodes=3, eval_every=1, batch=16, actions="jobs", baseline="es",
                                 es_features=True, es_scale=False, es_optimizer="cma", es_pairs=2, es_traces=1,
                                 es_sigma=0.3, max_slots=60), **kw})


def test_a_run_writes_its_search_and_init_continues_it(tmp_path):
    prov = train(tiny(), tmp_path / "a.pt", command="test", progress=False)
    first = load_checkpoint(tmp_path / "a.pt")
    state, best = first.es_optimizer, prov["best_episode"]
    assert [c["iteration"] for c in prov["cma"]] == [1, 2, 3]
    # the checkpoint is the best model, with the search as it stood there: its mean is the policy
    E = es_features(first.spec, scale=False)
    assert state["countiter"] == best
    search = CmaSearch.from_state(state, E, 2)
    assert torch.allclose(theta(first).double(), torch.from_numpy(search.theta(search.mean)), atol=1e-6)
    # a search 4 iterations on (σ, C, the paths moved), its mean the policy: what --init must continue
    quadratic(search, np.random.default_rng(0), 4, target=np.full(search.dim, 0.5))
    set_theta(first, torch.from_numpy(search.theta(search.mean)))
    first.es_optimizer = search.state()
    save_checkpoint(first, tmp_path / "c.pt")
    prov2 = train(tiny(init=str(tmp_path / "c.pt"), es_sigma=5.0), tmp_path / "b.pt", command="test", progress=False)
    its = state["countiter"] + 4
    assert [c["iteration"] for c in prov2["cma"]] == [its + 1, its + 2, its + 3]     # continued, not restarted
    assert prov2["cma"][0]["sigma"] < 2 * search.sigma                                 # its σ, not --es-sigma 5
    second = load_checkpoint(tmp_path / "b.pt").es_optimizer
    assert torch.equal(second["origin"], state["origin"]) and second["countiter"] == its + prov2["best_episode"]
    with pytest.raises(InputError) as e:                  # a continued search must search the same coordinates
        train(tiny(init=str(tmp_path / "c.pt"), es_scale=True), tmp_path / "d.pt", command="test", progress=False)
    assert e.value.where == "es_optimizer"


@pytest.mark.parametrize("settings", [dict(es_optimizer="cmaes"), dict(es_optimizer="cma", baseline="forks"),
                                      dict(es_optimizer=None)])
def test_a_bad_optimizer_is_refused_by_name(settings):
    with pytest.raises(InputError) as e:
        TrainConfig(**{"actions": "jobs", "baseline": "es", **settings})
    assert e.value.where == "es_optimizer"
    with pytest.raises(InputError) as e:
        main(["--actions", "jobs", "--baseline", "forks", "--es-optimizer", "cma"])
    assert e.value.where == "--es-optimizer"


def test_the_command_line_names_the_option_and_exits_2(capsys):
    from dlsched.cli import main as cli

    # one true process (its exit status and stderr), the other case through the same entry point
    # in this process: each start of `dlsched train` loads torch (seconds)
    run = subprocess.run([sys.executable, "-m", "dlsched", "train", "dl2", "--es-optimizer", "sgd"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--es-optimizer" in run.stderr and "Traceback" not in run.stderr
    assert cli(["train", "dl2", "--actions", "jobs", "--baseline", "forks", "--es-optimizer", "cma"]) == 2
    err = capsys.readouterr().err
    assert "--es-optimizer" in err and "Traceback" not in err

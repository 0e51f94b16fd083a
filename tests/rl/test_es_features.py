"""``--es-features``: the row prior z_ik = s · (W h)_ik + b_ik + φ(row i)ᵀ Θ ψ(level k), each tiny."""

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.registry import make_policy
from dlsched.rl.es import Adam, es_features, es_gradient, lift, set_theta, theta, with_prior
from dlsched.rl.networks import level_features, prior_shape, row_features
from dlsched.rl.policy import DEFAULT_CHECKPOINT, Model, load_checkpoint, save_checkpoint
from dlsched.rl.train import TrainConfig
from dlsched.sim.engine import simulate

from .test_es import JOBS, logits, played, setting, states, tiny_es_run

P, Q = prior_shape(JOBS)        # 8 job types + log remaining epochs + log rank, × leave-out, u, v, curvature


def test_theta_zero_is_the_warm_up_bit_for_bit():
    env, traces, cluster, speed = setting(2)
    model = Model.new(JOBS, (16,), seed=2)
    x, m = states()
    before, jct = logits(model, x, m), played(model, traces, cluster, speed)
    with_prior(model)
    assert model.policy.prior.shape == (P, Q) == (10, 4) and not model.policy.prior.any()
    assert torch.equal(logits(model, x, m), before)
    assert all(np.array_equal(a, b) for a, b in zip(played(model, traces, cluster, speed), jct))
    v = theta(model)
    assert v.numel() == 1 + JOBS.J * JOBS.n_levels + P * Q
    set_theta(model, v)                     # the round trip through θ's layout changes nothing
    assert torch.equal(logits(model, x, m), before)


def test_row_features_read_the_type_remaining_epochs_and_rank():
    x, _ = states(3)
    phi = row_features(x, JOBS)
    L = JOBS.n_types
    assert phi.shape == (3, JOBS.J, P)
    assert torch.equal(phi[..., :L], x[..., :L])
    rem = x[..., L + 1].double().numpy() * JOBS.epochs_norm
    assert np.allclose(phi[..., L], (np.log2(1 + rem / 1000) - 3) / 1.5, atol=1e-5)
    assert np.allclose(phi[0, :, L + 1], (np.log2(1 + np.arange(JOBS.J)) - 2.5) / 1.5, atol=1e-6)
    u, v = np.log2(1 + np.array(JOBS.configs, dtype=float)).T
    assert np.allclose(level_features(JOBS), np.stack([np.arange(5) == 0, u, v, -(u ** 2 + v ** 2) / 4], axis=1))


def test_each_direction_changes_the_logits_as_stated():
    model = with_prior(Model.new(JOBS, (16,), seed=2))
    x, m = states()
    z0 = logits(model, x, m).double()
    phi = row_features(x, JOBS).double().numpy()       # (n, J, P)
    psi = level_features(JOBS)                            # (C, Q)
    E = es_features(JOBS)
    assert E.shape == (1 + JOBS.J * JOBS.n_levels + P * Q, 1 + P * Q)
    start = theta(model)
    for p, q in ((0, 1), (3, 0), (P - 2, 2), (P - 1, 3), (P - 2, 3)):
        e = np.zeros(E.shape[1])
        e[1 + p * Q + q] = 0.75
        set_theta(model, start + torch.from_numpy(lift(e, E, start.numel())).float())
        change = (logits(model, x, m).double() - z0).numpy()
        want = 0.75 * phi[:, :, p, None] * psi[None, None, :, q]
        assert np.allclose(change, want, atol=1e-4), (p, q)
        assert torch.equal(model.policy.body[-1].bias, Model.new(JOBS, (16,), seed=2).policy.body[-1].bias)


def test_a_checkpoint_round_trips_the_prior_and_old_ones_load_without(tmp_path):
    env, traces, cluster, speed = setting(2)
    model = with_prior(Model.new(JOBS, (16,), seed=2))
    plain = played(model, traces, cluster, speed)
    E = es_features(JOBS)
    e = np.zeros(E.shape[1])
    e[1 + np.arange(JOBS.n_types) * Q] = -10.0      # never leave a job out (a job left for ever stalls the run)
    e[1 + (P - 1) * Q + 1] = 2.0                    # later ranks: more workers
    e[1 + (P - 2) * Q + 2] = 2.0                    # longer remaining work: more PSs
    set_theta(model, theta(model) + torch.from_numpy(lift(e, E, theta(model).numel())).float())
    path = tmp_path / "f.pt"
    save_checkpoint(model, path)
    back = load_checkpoint(path)
    assert torch.equal(back.policy.prior, model.policy.prior)
    x, m = states()
    assert torch.equal(logits(back, x, m), logits(model, x, m))
    moved = played(model, traces, cluster, speed)
    assert all(np.isfinite(j).all() for j in moved + plain)
    assert any(not np.array_equal(a, b) for a, b in zip(moved, plain))     # the prior changes decisions here
    from_file = [simulate(tr, cluster, make_policy("dl2", checkpoint=str(path)), speed, stall_calls=300).jct
                 for tr in traces]
    assert all(np.array_equal(a, b) for a, b in zip(from_file, moved))
    doc = torch.load(path, weights_only=True)
    for bad, where in (({"row_prior": doc["row_prior"] + 1}, "digest"),
                       ({"row_prior": torch.zeros(P, Q + 1)}, "row_prior"),
                       ({"row_prior": torch.full((P, Q), float("nan"))}, "row_prior"),
                       ({"row_prior": [[0.0] * Q] * P}, "row_prior")):
        torch.save({**doc, **bad}, path)
        with pytest.raises(InputError) as err:
            load_checkpoint(path)
        assert err.value.where == where
    # a checkpoint without one (every one before it, the shipped ones) has no prior and its digest holds
    model.policy.prior = None
    save_checkpoint(model, path)
    assert "row_prior" not in torch.load(path, weights_only=True) and load_checkpoint(path).policy.prior is None
    assert load_checkpoint(DEFAULT_CHECKPOINT).policy.prior is None


@pytest.mark.parametrize("scale", [True, False])
def test_a_generation_steps_within_the_prior_and_the_scale(scale):
    env, *_ = setting()
    model = with_prior(Model.new(JOBS, (16,), seed=2))
    E = es_features(JOBS, scale)
    g, d, *_ = es_gradient(env, model, np.random.default_rng(1), pairs=3, traces=1, sigma=1.0, basis=E)
    assert np.any(d != 0) and g.shape == (P * Q + scale,)
    before = theta(model).double()
    Adam(0.2).step(model, g, E)
    moved = (theta(model).double() - before).numpy()
    n_bias = JOBS.J * JOBS.n_levels
    assert not moved[1:1 + n_bias].any()                                   # the bias is not searched
    assert moved[1 + n_bias:] == pytest.approx(0.2 * np.sign(g[int(scale):]), abs=1e-5)   # Adam's first step
    assert (model.policy.logit_scale != 1.0) == scale


def test_es_on_the_features_trains_and_its_checkpoint_plays_its_tuning_jct(tmp_path):
    prov, out, jct = tiny_es_run(tmp_path, es_features=True)
    assert out.policy.prior is not None and out.policy.prior.shape == prior_shape(out.spec)
    assert jct == pytest.approx(prov["best_tune_jct"], rel=1e-12)
    with pytest.raises(InputError) as e:
        TrainConfig(actions="jobs", baseline="es", es_basis=True, es_features=True)
    assert e.value.where == "es_features"

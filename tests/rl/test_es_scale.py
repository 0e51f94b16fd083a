"""``--es-scale S``: ES played and searched at a held logit scale s (z = s · W h + b + φᵀ Θ ψ), each tiny."""

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.registry import make_policy
from dlsched.rl.es import Adam, at_scale, es_features, es_gradient, with_prior
from dlsched.rl.policy import Model
from dlsched.rl.train import TrainConfig, main
from dlsched.sim.engine import simulate

from .helpers import small
from .test_es import JOBS, logits, played, setting, states, tiny_es_run


def test_theta_zero_at_a_small_scale_is_the_warm_ups_argmax_with_the_bias_scaled_and_not_without():
    env, traces, cluster, speed = setting(2)
    model = with_prior(Model.new(JOBS, (16,), seed=2))
    last = model.policy.body[-1]
    with torch.no_grad():
        last.bias.uniform_(-0.06, 0.06)      # the DRF warm-up's output bias is within ±0.06
    x, m = states(200)
    z1, jct = logits(model, x, m).double(), played(model, traces, cluster, speed)
    b = last.bias.detach().view(JOBS.J, JOBS.n_levels).double().clone()
    model.policy.logit_scale = 0.01          # W h scaled alone: the bias outweighs the margins in some rows
    assert torch.allclose(logits(model, x, m).double(), 0.01 * (z1 - b) + b, atol=1e-6)
    assert (logits(model, x, m).argmax(-1) != z1.argmax(-1)).any()
    model.policy.logit_scale = 1.0
    for s in (0.1, 0.01):
        at_scale(model, s)
        z = logits(model, x, m).double()
        assert model.policy.logit_scale == s and torch.allclose(z, s * z1, atol=1e-6)
        assert torch.equal(z.argmax(-1), z1.argmax(-1))
        assert all(np.array_equal(a, c) for a, c in zip(played(model, traces, cluster, speed), jct))


def test_a_held_scale_is_searched_at_saved_and_played_by_the_checkpoint(tmp_path):
    prov, out, jct = tiny_es_run(tmp_path, es_features=True, es_scale=False, es_held_scale=0.01)
    assert out.policy.logit_scale == pytest.approx(0.01, rel=1e-6)   # held (θ keeps log s in float32)
    assert out.policy.prior is not None
    assert prov["config"]["es_held_scale"] == 0.01
    assert jct == pytest.approx(prov["best_tune_jct"], rel=1e-12)
    traces, cluster, speed = small(5, (2,), 3)
    played = simulate(traces[0], cluster, make_policy("dl2", checkpoint=str(tmp_path / "e.pt")), speed, seed=0,
                      stall_calls=200)
    assert np.mean(played.jct) == pytest.approx(prov["best_tune_jct"], rel=1e-12)


@pytest.mark.parametrize("bad", [dict(es_held_scale=0.0, es_scale=False), dict(es_held_scale=float("nan"), es_scale=False),
                                 dict(es_held_scale=0.1), dict(es_held_scale=0.1, es_scale=False, baseline="forks")])
def test_a_held_scale_out_of_range_or_searched_is_refused(bad):
    with pytest.raises(InputError) as e:
        TrainConfig(**{"actions": "jobs", "baseline": "es", "es_features": True, **bad})
    assert e.value.where == "es_held_scale"


def test_the_flag_names_itself_when_refused():
    with pytest.raises(InputError) as e:
        main(["--actions", "jobs", "--baseline", "es", "--es-features", "--es-scale", "-1"])
    assert e.value.where == "--es-scale"


def test_a_held_scale_is_round_13s_search_with_sigma_and_lr_divided_by_it():
    # z = s (W h + b) + φᵀ Θ ψ has the argmax of W h + b + φᵀ (Θ / s) ψ, and the step is Adam's (scale-free
    # in g): ES at (s, σ, lr) plays the decisions of ES at (1, σ / s, lr / s), generation by generation
    env, *_ = setting()
    runs = []
    for s, sigma, lr in ((1.0, 2.0, 0.5), (0.1, 0.2, 0.05)):
        model = at_scale(with_prior(Model.new(JOBS, (16,), seed=2)), s)
        E, rng, opt, ds = es_features(JOBS, scale=False), np.random.default_rng(4), Adam(lr), []
        for _ in range(3):
            g, d, *_ = es_gradient(env, model, rng, pairs=3, traces=1, sigma=sigma, basis=E)
            opt.step(model, g, E)
            ds.append(d)
        runs.append((np.concatenate(ds), model.policy.prior / s))
    assert np.any(runs[0][0] != 0) and np.array_equal(runs[0][0], runs[1][0])     # the same returns, pair by pair
    assert torch.allclose(runs[0][1], runs[1][1], atol=1e-4)

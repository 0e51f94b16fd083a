"""``--es-scale S``: ES played and searched at a held logit scale s (z = s · W h + b + φᵀ Θ ψ), each tiny."""

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.registry import make_policy
from dlsched.rl.es import with_prior
from dlsched.rl.policy import Model
from dlsched.rl.train import TrainConfig, main
from dlsched.sim.engine import simulate

from .helpers import small
from .test_es import JOBS, logits, states, tiny_es_run


def test_theta_zero_at_a_small_scale_keeps_the_argmax_except_where_the_bias_outweighs_the_margin():
    model = with_prior(Model.new(JOBS, (16,), seed=2))
    last = model.policy.body[-1]
    with torch.no_grad():
        last.bias.uniform_(-0.06, 0.06)      # the DRF warm-up's output bias is within ±0.06
    x, m = states(200)
    with torch.no_grad():
        h = model.policy.body[:-1](x.flatten(1))
        wh = (h @ last.weight.t()).view(len(x), JOBS.J, JOBS.n_levels).double()
    b = last.bias.detach().view(JOBS.J, JOBS.n_levels).double()
    at_one = logits(model, x, m).argmax(-1)
    for s in (0.1, 0.01):
        model.policy.logit_scale = s
        z = logits(model, x, m).double()
        assert torch.allclose(z, s * wh + b, atol=1e-6)                   # the scale multiplies W h, not b
        differ = z.argmax(-1) != at_one
        # a row's choice can change only where the bias spread outweighs s times the network's margin
        top2 = wh.topk(2, dim=-1).values
        spread = b.max(-1).values - b.min(-1).values
        assert not (differ & (s * (top2[..., 0] - top2[..., 1]) > spread)).any()
        if s == 0.01:
            assert differ.any()                                              # and here some do
    with torch.no_grad():
        last.bias.zero_()                   # without a bias every s > 0 plays the same argmax
    for s in (1.0, 0.01):
        model.policy.logit_scale = s
        assert torch.equal(logits(model, x, m).argmax(-1), wh.argmax(-1))


def test_a_held_scale_is_searched_at_saved_and_played_by_the_checkpoint(tmp_path):
    prov, out, jct = tiny_es_run(tmp_path, es_features=True, es_scale=False, es_held_scale=0.01)
    assert out.policy.logit_scale == 0.01                      # held: every generation, the best model
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

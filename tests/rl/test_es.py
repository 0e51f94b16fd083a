"""Evolution strategies on the output bias (``--baseline es``, dlsched/rl/es.py), each tiny."""

import numpy as np
import pytest
import torch

from dlsched.errors import InputError
from dlsched.rl.env import DL2Env
from dlsched.rl.es import Adam, es_basis, es_gradient, greedy_return, lift, rank_groups, searched, set_theta, theta
from dlsched.rl.forks import ForkPool
from dlsched.registry import make_policy
from dlsched.rl.policy import DEFAULT_CHECKPOINT, DL2Policy, Model, load_checkpoint, save_checkpoint
from dlsched.rl.slot import Spec
from dlsched.rl.train import TrainConfig, train
from dlsched.sim.engine import simulate

from .helpers import small

JOBS = Spec(J=6, actions="jobs", configs=((0, 0), (1, 1), (2, 2), (4, 4), (1, 3)))


def setting(n_traces=3):
    traces, cluster, speed = small(8, tuple(range(1, n_traces + 1)), 3)
    return DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=300), traces, cluster, speed


def test_the_greedy_return_is_minus_the_total_jct_in_slots():
    env, traces, cluster, speed = setting()
    model = Model.new(JOBS, (16,), seed=2)
    R = greedy_return(env, model, 1)
    res = simulate(traces[1], cluster, DL2Policy(model), speed, stall_calls=300)
    assert res.status == "completed"
    assert R == pytest.approx(-np.sum(res.jct) / JOBS.slot_seconds, rel=1e-9)


def test_each_pairs_difference_is_the_two_policies_returns_on_common_traces():
    env, *_ = setting()
    model = Model.new(JOBS, (16,), seed=2)
    theta = searched(model).detach().clone()
    sigma, pairs = 3.0, 3
    g, d, mean, cpu = es_gradient(env, model, np.random.default_rng(7), pairs=pairs, traces=2, sigma=sigma)
    assert cpu == 0.0                                   # no worker processes
    assert torch.equal(searched(model), theta)       # θ restored
    rng = np.random.default_rng(7)                      # the same draws, replayed by hand
    ks = rng.choice(3, size=2, replace=False)
    eps = rng.standard_normal((pairs, theta.numel()))
    F = []
    for e in eps:
        for sign in (1, -1):
            with torch.no_grad():
                searched(model).copy_(theta + sign * sigma * torch.from_numpy(e).float())
            F.append(np.mean([greedy_return(env, model, k) for k in ks]))
    with torch.no_grad():
        searched(model).copy_(theta)
    F = np.array(F).reshape(pairs, 2)
    assert d == pytest.approx(F[:, 0] - F[:, 1], rel=1e-9) and mean == pytest.approx(F.mean(), rel=1e-9)
    assert np.any(d != 0)                              # σ = 3 changes decisions
    assert g == pytest.approx((d / np.sqrt(np.mean(d ** 2))) @ eps / pairs, rel=1e-9)


def test_adam_ascends_a_known_gradient():
    model = Model.new(JOBS, (16,), seed=2)
    start = searched(model).detach().clone()
    g = np.zeros(start.numel())
    g[:4] = [1.0, -2.0, 0.0, 0.5]
    opt = Adam(0.1)
    for _ in range(3):
        opt.step(model, g)
    q = (searched(model).detach() - start)[:4]
    assert (q[[0, 3]] > 0).all() and q[1] < 0 and q[2] == 0
    assert float(q[0]) == pytest.approx(0.3, rel=1e-3)   # Adam's first steps are lr × sign
    assert model.policy.logit_scale == 1.0               # a bias-only search leaves s


def test_es_trains_from_a_drf_warm_up_and_records_its_curve(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=2, rl_episodes=2, eval_every=1, batch=16, actions="jobs",
                      baseline="es", es_pairs=2, es_traces=1, es_sigma=2.0, max_slots=60)
    prov = train(cfg, tmp_path / "e.pt", command="test", progress=False)
    assert prov["episodes_run"] == 2 and len(prov["curve"]) == 3
    with pytest.raises(InputError):
        TrainConfig(baseline="es")                       # task-level actions have no per-row levels
    with pytest.raises(InputError):
        TrainConfig(actions="jobs", baseline="es", es_sigma=0.0)


def test_with_rank_groups_the_tied_rows_move_together():
    env, *_ = setting()
    model = Model.new(JOBS, (16,), seed=2)
    E = rank_groups(JOBS.J, JOBS.n_levels)
    assert E.shape == (6 * 5, 3 * 5) and (E.sum(axis=1) == 1).all()   # rows 0 | 1-2 | 3-5
    before = searched(model).detach().clone().view(6, 5)
    g, d, *_ = es_gradient(env, model, np.random.default_rng(1), pairs=2, traces=1, sigma=3.0, basis=E)
    assert g.shape == (15,)
    Adam(0.5).step(model, g, E)
    step = (searched(model).detach().view(6, 5) - before).numpy()
    assert np.abs(step).max() > 0
    assert np.allclose(step[1], step[2]) and np.allclose(step[3], step[4]) and np.allclose(step[3], step[5])


def generations(env, model, k, pool, basis=None):
    """θ after ``k`` generations of ES (σ 3, Adam 0.5), and the workers' CPU seconds."""
    rng, opt, cpu = np.random.default_rng(5), Adam(0.5), 0.0
    for _ in range(k):
        g, d, _, c = es_gradient(env, model, rng, pairs=2, traces=2, sigma=3.0, basis=basis, pool=pool)
        assert np.any(d != 0)                            # the generations change decisions
        opt.step(model, g, basis)
        cpu += c
    return searched(model).detach().clone(), cpu


def test_two_workers_give_exactly_one_workers_theta():
    env, *_ = setting()
    basis = rank_groups(JOBS.J, JOBS.n_levels)
    one = Model.new(JOBS, (16,), seed=4)
    two = Model.new(JOBS, (16,), seed=4)
    with ForkPool(1, env, one) as pool:
        theta1, cpu1 = generations(env, one, 2, pool, basis)
    with ForkPool(2, env, two) as pool:
        # the workers' copies are made here: θ moves only in the parent and travels with each episode
        theta2, cpu2 = generations(env, two, 2, pool, basis)
    assert not torch.equal(theta1, Model.new(JOBS, (16,), seed=4).policy.body[-1].bias.detach())
    assert torch.equal(theta1, theta2)                  # bit for bit
    assert cpu1 == 0.0 and cpu2 > 0                      # the workers' CPU is counted


def test_es_with_two_workers_writes_the_snapshots_a_shorter_budget_would_have_written(tmp_path):
    kw = dict(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3, warmup_epochs=2,
              rl_episodes=4, eval_every=4, batch=16, actions="jobs", baseline="es", es_pairs=2, es_traces=1,
              es_sigma=2.0, max_slots=60)
    prov = train(TrainConfig(**kw, workers=2, snapshots_cpu_min=(1e-9, 1e3)), tmp_path / "e.pt", command="test",
                 progress=False)
    # the first mark passes before the first generation ends: evaluated there, not only at the 4th
    assert [p["episode"] for p in prov["curve"]] == [0, 1, 4]
    shot = load_checkpoint(tmp_path / "e-1e-09min.pt")
    assert shot.provenance["snapshot_cpu_min"] == 1e-9 and len(shot.provenance["curve"]) == 2
    assert (tmp_path / "e-1e-09min.json").exists() and not list(tmp_path.glob("e-1000min*"))
    best = min(shot.provenance["curve"], key=lambda p: p["tune_jct"])
    assert shot.provenance["best_tune_jct"] == best["tune_jct"]
    assert prov["episodes_run"] == 4 and prov["cpu_seconds"] > 0


@pytest.mark.parametrize("settings, flag", [(dict(workers=2, actions="tasks", baseline="critic"), "workers"),
                                            (dict(es_groups=True, es_basis=True), "es_basis"),
                                            (dict(snapshots_cpu_min=(30.0, -1.0)), "snapshots_cpu_min"),
                                            (dict(snapshots_cpu_min=(float("nan"),)), "snapshots_cpu_min")])
def test_workers_and_snapshots_are_checked(settings, flag):
    with pytest.raises(InputError) as e:
        TrainConfig(**{"actions": "jobs", "baseline": "es", **settings})
    assert e.value.where == flag


# -- --es-basis: z = s · W h + b + E θ ------------------------------------------------------------

def states(n=40, seed=0):
    """Random states (n, J, F) and the level masks of JOBS (every level valid)."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand((n, JOBS.J, JOBS.n_features), generator=g), torch.ones((n, JOBS.J, JOBS.n_levels), dtype=torch.int8)


def logits(model, x, m):
    with torch.no_grad():
        return model.policy.levels(x, m)


def played(model, traces, cluster, speed):
    return [simulate(tr, cluster, DL2Policy(model), speed, stall_calls=300).jct for tr in traces]


def test_at_theta_zero_the_basis_is_the_warm_up_exactly():
    env, traces, cluster, speed = setting(2)
    model = Model.new(JOBS, (16,), seed=2)
    x, m = states()
    before, jct = logits(model, x, m), played(model, traces, cluster, speed)
    E = es_basis(JOBS)
    v = theta(model)
    set_theta(model, v + torch.from_numpy(lift(np.zeros(E.shape[1]), E, v.numel())).float())
    assert model.policy.logit_scale == 1.0
    assert torch.equal(logits(model, x, m), before)          # the same logits, bit for bit
    assert all(np.array_equal(a, b) for a, b in zip(played(model, traces, cluster, speed), jct))


def test_each_basis_direction_changes_the_logits_as_stated():
    model = Model.new(JOBS, (16,), seed=2)
    x, m = states()
    z0 = logits(model, x, m).double()
    E = es_basis(JOBS)
    assert E.shape == (1 + 6 * 5, 1 + 4 * 3)                         # log s; (a, b, c, d) for rows 0 | 1-2 | 3-5
    u, v = np.log2(1 + np.array(JOBS.configs, dtype=float)).T
    feats = {0: (np.arange(5) == 0).astype(float), 1: u, 2: v, 3: -(u ** 2 + v ** 2) / 4}
    start = theta(model)
    for g, rows in ((0, [0]), (1, [1, 2]), (2, [3, 4, 5])):
        for j, f in feats.items():
            e = np.zeros(E.shape[1])
            e[1 + 4 * g + j] = 0.75
            set_theta(model, start + torch.from_numpy(lift(e, E, start.numel())).float())
            change = (logits(model, x, m).double() - z0).numpy()
            want = np.zeros((6, 5))
            want[rows] = 0.75 * f
            assert np.allclose(change, want[None], atol=1e-5), (g, j)
    e = np.zeros(E.shape[1])
    e[0] = np.log(0.25)                                              # s = 1/4: W h shrinks, b stays
    set_theta(model, start + torch.from_numpy(lift(e, E, start.numel())).float())
    last = model.policy.body[-1]
    with torch.no_grad():
        h = model.policy.body[:-1](x.flatten(1))
        want = (0.25 * (h @ last.weight.T) + last.bias).view(len(x), 6, 5)
    assert model.policy.logit_scale == pytest.approx(0.25, rel=1e-6)
    assert torch.allclose(logits(model, x, m), want, atol=1e-5)


def test_a_checkpoint_keeps_the_logit_scale_and_the_policy_decides_with_it(tmp_path):
    env, traces, cluster, speed = setting(2)
    model = Model.new(JOBS, (16,), seed=2)
    plain = played(model, traces, cluster, speed)
    E = es_basis(JOBS)
    e = np.zeros(E.shape[1])
    e[0], e[1 + 4 * 0 + 2] = np.log(0.2), 1.5                       # s 0.2, the first row's PS slope 1.5
    set_theta(model, theta(model) + torch.from_numpy(lift(e, E, theta(model).numel())).float())
    path = tmp_path / "s.pt"
    save_checkpoint(model, path)
    back = load_checkpoint(path)
    assert back.policy.logit_scale == model.policy.logit_scale != 1.0
    x, m = states()
    assert torch.equal(logits(back, x, m), logits(model, x, m))
    scaled = played(model, traces, cluster, speed)
    assert any(not np.array_equal(a, b) for a, b in zip(scaled, plain))    # s and θ change decisions here
    from_file = [simulate(tr, cluster, make_policy("dl2", checkpoint=str(path)), speed, stall_calls=300).jct
                 for tr in traces]
    assert all(np.array_equal(a, b) for a, b in zip(from_file, scaled))
    # the scale is part of the digest; a file without one (every checkpoint before it) is s = 1
    doc = torch.load(path, weights_only=True)
    torch.save({**doc, "logit_scale": 0.5}, path)
    with pytest.raises(InputError) as err:
        load_checkpoint(path)
    assert err.value.where == "digest"
    torch.save({**doc, "logit_scale": -1.0}, path)
    with pytest.raises(InputError) as err:
        load_checkpoint(path)
    assert err.value.where == "logit_scale"
    model.policy.logit_scale = 1.0
    save_checkpoint(model, path)
    assert "logit_scale" not in torch.load(path, weights_only=True) and load_checkpoint(path).policy.logit_scale == 1.0
    assert load_checkpoint(DEFAULT_CHECKPOINT).policy.logit_scale == 1.0


def tiny_es_run(tmp_path, **basis):
    """A 3-generation ES run on tiny traces with ``basis`` (es_basis=True, ...): its provenance, its
    checkpoint, and that checkpoint's JCT replayed on the tuning trace."""
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=2, rl_episodes=3, eval_every=1, batch=16, actions="jobs", baseline="es",
                      es_pairs=2, es_traces=1, es_sigma=1.0, rl_lr=0.3, max_slots=60, **basis)
    prov = train(cfg, tmp_path / "e.pt", command="test", progress=False)
    out = load_checkpoint(tmp_path / "e.pt")
    traces, cluster, speed = small(5, (2,), 3)
    return prov, out, np.mean(simulate(traces[0], cluster, DL2Policy(out), speed, seed=cfg.seed, stall_calls=200).jct)


def test_es_on_the_basis_moves_the_scale_and_its_checkpoint_plays_its_tuning_jct(tmp_path):
    prov, _, jct = tiny_es_run(tmp_path, es_basis=True)
    assert jct == pytest.approx(prov["best_tune_jct"], rel=1e-12)


@pytest.mark.parametrize("scale", [True, False])
def test_a_generation_on_the_basis_steps_within_its_span(scale):
    env, *_ = setting()
    model = Model.new(JOBS, (16,), seed=2)
    E = es_basis(JOBS, scale)
    assert E.shape[1] == (13 if scale else 12)
    g, d, *_ = es_gradient(env, model, np.random.default_rng(1), pairs=3, traces=1, sigma=1.0, basis=E)
    assert np.any(d != 0) and np.all(g != 0)
    before = theta(model).double()
    Adam(0.2).step(model, g, E)
    moved = (theta(model).double() - before).numpy()
    # Adam's first step is lr × sign(g) in the basis's coordinates
    assert moved == pytest.approx(E @ (0.2 * np.sign(g)) if scale else np.concatenate([[0.0], E[1:] @ (0.2 * np.sign(g))]),
                                  abs=1e-5)
    assert (model.policy.logit_scale != 1.0) == scale               # held: s stays the checkpoint's

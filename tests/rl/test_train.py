"""Warm-up and actor-critic pieces (MODELS.md §6), each tiny."""

import json

import numpy as np
import pytest
import torch

import dlsched.rl.train as train_module
from dlsched.rl.env import DL2Env
from dlsched.rl.policy import Model, choose, load_checkpoint
from dlsched.errors import InputError
from dlsched.rl.slot import Slot, Spec
from dlsched.rl.train import (Replay, TrainConfig, actor_critic_update, advantage_update, agreement, branch_episode,
                              chain_curve, finish_greedy, fork, gae, gain_action, ppo_episode_update, remaining_times, rollout,
                              sampler, smoothed_cross_entropy, teacher_action, teacher_samples, targets, train, warmup)
from dlsched.sim.engine import Simulation
from dlsched.registry import make_policy
from dlsched.sim.policy import PolicyContext

from .helpers import small


def teacher_slot(teacher: str):
    """A slot at 8,000 s of a 10-job trace on 6 nodes, the teacher's targets there, and the speeds."""
    traces, cluster, speed = small(10, (5,), 6)
    sim = Simulation(traces[0], cluster, speed)
    while sim.time < 8000:
        sim.advance(8000)
    st = sim.state()
    pol = make_policy(teacher)
    pol.reset(PolicyContext(cluster, speed))
    goal = targets(pol.schedule(st, []))
    spec = Spec(J=10)
    return Slot(spec, st, spec.type_index(st.jobs), np.zeros(len(st.jobs), np.int64)), goal, speed


def test_teacher_actions_rebuild_drfs_allocation_in_its_own_order():
    slot, goal, _ = teacher_slot("drf")
    spec, st = slot.spec, slot.state
    assert len(slot.jobs) == len(st.active) <= spec.J
    n = 0
    while (a := teacher_action(slot, goal)) != spec.stop:
        share = slot.dominant_share()
        assert share[a % spec.J] == min(share[i] for i, j in enumerate(slot.jobs)
                                        if (slot.w[i], slot.p[i]) != goal.get(int(j), (0, 0)))
        assert slot.apply(a)
        n += 1
    assert n > 0
    assert {int(j): (int(slot.w[i]), int(slot.p[i])) for i, j in enumerate(slot.jobs) if slot.w[i]} == goal


def test_job_order_rebuilds_the_teachers_allocation_one_job_after_another():
    slot, goal, _ = teacher_slot("srpt-greedy")
    spec = slot.spec
    rows = []
    while (a := teacher_action(slot, goal, by="job")) != spec.stop:
        i = a % spec.J
        # the first row still below its target is served
        assert all((slot.w[k], slot.p[k]) == goal.get(int(slot.jobs[k]), (0, 0)) for k in range(i))
        rows.append(i)
        assert slot.apply(a)
    assert rows == sorted(rows) and len(set(rows)) > 1
    assert {int(j): (int(slot.w[i]), int(slot.p[i])) for i, j in enumerate(slot.jobs) if slot.w[i]} == goal


def test_gain_order_rebuilds_the_teachers_allocation_starting_every_job_first():
    slot, goal, speed = teacher_slot("optimus-greedy")
    spec, st = slot.spec, slot.state
    T = remaining_times(slot, speed)
    j0 = int(slot.jobs[0])
    assert np.isclose(T[0, 2, 3], st.remaining[j0] / speed.speed(st.jobs[j0].job_type, 2, 3))
    kinds = []
    while (a := gain_action(slot, goal, T)) != spec.stop:
        kinds.append(a // spec.J)
        assert slot.apply(a)
    # every started job got its first worker + PS before any job grew
    n_start = sum(1 for i, j in enumerate(slot.jobs) if goal.get(int(j), (0, 0))[0])
    assert kinds[:n_start] == [2] * n_start and 2 not in kinds[n_start:]
    assert {int(j): (int(slot.w[i]), int(slot.p[i])) for i, j in enumerate(slot.jobs) if slot.w[i]} == goal


def test_a_forked_episode_evolves_like_the_original():
    traces, cluster, speed = small(6, (4,), 3)
    env = DL2Env(traces, cluster, speed, Spec(J=6), reward="jct", max_slots=60)
    model = Model.new(env.dl2_spec, (16,), seed=2)
    obs, info = env.reset(options={"trace": 0})
    for _ in range(5):
        obs, *_, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    twin = fork(env)
    assert twin.sim is not env.sim and twin.speed is env.speed
    assert finish_greedy(twin, model) == finish_greedy(env, model)
    assert np.array_equal(twin.result().jct, env.result().jct, equal_nan=True)


def test_branch_advantages_are_the_return_differences_of_forked_slots():
    traces, cluster, speed = small(6, (4,), 3)
    env = DL2Env(traces, cluster, speed, Spec(J=6), reward="jct", max_slots=60)
    model = Model.new(env.dl2_spec, (16,), seed=2)
    X, M, A, ADV, greedy, n_forks = branch_episode(env, model, np.random.default_rng(0), trace=0, p_branch=1.0,
                                                   epsilon=0.0, temperature=3.0)
    env.reset(options={"trace": 0})
    assert greedy == finish_greedy(env, model)
    assert n_forks > 0 and len(A) == len(ADV) == len(X) and all(M[k][A[k]] for k in range(len(A)))
    # near-zero temperature: the sampled slot is the greedy one, so no fork is kept
    assert len(branch_episode(env, model, np.random.default_rng(0), trace=0, p_branch=1.0, epsilon=0.0,
                              temperature=1e-4)[2]) == 0
    # a zero advantage and no entropy weight leave the policy as it was; a nonzero one moves it
    replay = Replay(1000)
    replay.add(X, M, A, np.zeros(len(A), np.float32), None, np.zeros(len(A), np.float32))
    p0 = [p.detach().clone() for p in model.policy.parameters()]
    opt = torch.optim.Adam(model.policy.parameters(), lr=1e-3)
    advantage_update(model, replay.sample(32, np.random.default_rng(1)), opt, beta=0.0)
    assert all(torch.equal(a, b) for a, b in zip(p0, model.policy.parameters()))
    replay.add(X, M, A, np.zeros(len(A), np.float32), None, np.ones(len(A), np.float32))
    advantage_update(model, replay.sample(len(replay.data), np.random.default_rng(1)), opt, beta=0.0)
    assert not all(torch.equal(a, b) for a, b in zip(p0, model.policy.parameters()))


def test_rollout_targets_are_whole_sampled_slots_that_beat_the_greedy_one():
    traces, cluster, speed = small(6, (4,), 3)
    env = DL2Env(traces, cluster, speed, Spec(J=6), reward="jct", max_slots=60)
    model = Model.new(env.dl2_spec, (16,), seed=2)
    X, M, A, ADV, greedy, n_forks = branch_episode(env, model, np.random.default_rng(0), trace=0, p_branch=1.0,
                                                   epsilon=0.0, temperature=3.0, candidates=3)
    assert n_forks > 0 and len(A) > 0 and (ADV == 1.0).all() and all(M[k][A[k]] for k in range(len(A)))
    # whole slots are kept, greedy choices included (the branch baseline keeps only the deviations)
    greedy_too = [choose(model, X[k], M[k]) == A[k] for k in range(len(A))]
    assert any(greedy_too) and not all(greedy_too)
    Xb, Mb, Ab = branch_episode(env, model, np.random.default_rng(0), trace=0, p_branch=1.0, epsilon=0.0,
                                temperature=3.0)[:3]
    assert not any(choose(model, Xb[k], Mb[k]) == Ab[k] for k in range(len(Ab)))
    assert len(branch_episode(env, model, np.random.default_rng(0), trace=0, p_branch=1.0, epsilon=0.0,
                              temperature=1e-4, candidates=3)[2]) == 0


def test_returns_are_discounted_per_slot():
    traces, cluster, speed = small(4, (2,), 2)
    env = DL2Env(traces, cluster, speed, Spec(J=4))
    stop = env.dl2_spec.stop

    def act(obs, info, slot_start):
        return 2 * env.dl2_spec.J if info["action_mask"][2 * env.dl2_spec.J] else stop

    X, M, A, G, total, _ = rollout(env, act, 0.5)
    assert len(X) == len(M) == len(A) == len(G) and total > 0
    # replay the same episode by hand
    obs, info = env.reset(options=None)
    slot_rewards, per_action_slot, acc = [0.0], [], 0.0
    done = False
    while not done:
        per_action_slot.append(len(slot_rewards) - 1)
        obs, r, term, trunc, info = env.step(act(obs, info, False))
        done = term or trunc
        if info["slot_end"]:
            slot_rewards[-1] += r
            slot_rewards.append(0.0)
    back = np.zeros(len(slot_rewards))
    for t in range(len(slot_rewards) - 1, -1, -1):
        acc = slot_rewards[t] + 0.5 * acc
        back[t] = acc
    assert np.allclose(G, back[per_action_slot])


def test_gae_with_lambda_one_is_the_slot_return_less_the_decisions_own_value():
    """λ = 1: A_i = G_t(i) − V(s_i) (the discounted return of decision i's slot); λ = 0: the slot's TD
    residual r_t + γ V(first state of the next slot) − V(s_i), whatever the later slots bring."""
    rng = np.random.default_rng(3)
    slot_of = np.array([0, 0, 0, 1, 2, 2, 3])
    rewards = np.array([-3.0, -2.0, -4.0, -1.0, 0.0])      # the trailing 0 of rollout's list
    v = rng.normal(size=len(slot_of))
    G = np.zeros(4)
    acc = 0.0
    for t in range(3, -1, -1):
        acc = rewards[t] + 0.9 * acc
        G[t] = acc
    assert np.allclose(gae(v, slot_of, rewards, 0.9, 1.0), G[slot_of] - v)
    first = {t: int(np.argmax(slot_of == t)) for t in range(4)}
    td = [rewards[t] + 0.9 * (v[first[t + 1]] if t + 1 in first else 0.0) - v[i] for i, t in enumerate(slot_of)]
    assert np.allclose(gae(v, slot_of, rewards, 0.9, 0.0), td)


def test_rollout_reports_each_decisions_slot_and_the_slot_rewards():
    traces, cluster, speed = small(4, (2,), 2)
    env = DL2Env(traces, cluster, speed, Spec(J=4), reward="jct")
    model = Model.new(env.dl2_spec, (16,), seed=1)
    X, M, A, G, total, LP, slot_of, r = rollout(env, sampler(env, model, np.random.default_rng(0), 0.0), 0.9, slots=True)
    assert len(slot_of) == len(A) and np.all(np.diff(slot_of) >= 0) and r.sum() == pytest.approx(total)
    v = np.zeros(len(A))
    assert np.allclose(gae(v, slot_of, r, 0.9, 1.0), G)


def test_label_smoothing_keeps_probability_on_every_valid_action_and_none_on_masked_ones():
    logits = torch.zeros(1, 4, requires_grad=True)
    mask = torch.tensor([[1, 1, 0, 1]], dtype=torch.int8)
    from dlsched.rl.networks import masked_logits

    loss = smoothed_cross_entropy(masked_logits(logits, mask), mask, torch.tensor([0]), 0.3)
    assert torch.isfinite(loss)
    loss.backward()
    # the minimum of the smoothed loss puts 1 − s + s/3 on the teacher's action, s/3 on the other valid ones
    target = torch.tensor([0.8, 0.1, 0.0, 0.1])
    p = torch.softmax(masked_logits(logits, mask), 1)[0].detach()
    assert torch.allclose(logits.grad[0], (p - target) * mask[0], atol=1e-6)
    assert float(smoothed_cross_entropy(masked_logits(logits, mask), mask, torch.tensor([0]), 0.0).detach()) == pytest.approx(np.log(3))


def test_the_kl_penalty_pulls_the_policy_back_towards_the_warm_up():
    """Zero advantages and no entropy: only the KL term moves the actor, and towards the reference."""
    import copy

    traces, cluster, speed = small(4, (3,), 2)
    env = DL2Env(traces, cluster, speed, Spec(J=4))
    ref = Model.new(env.dl2_spec, (16,), seed=1)
    model = Model.new(env.dl2_spec, (16,), seed=2)
    rng = np.random.default_rng(0)
    X, M, A, G, _, LP = rollout(env, sampler(env, model, rng, epsilon=0.0), 0.9)
    x, m = torch.from_numpy(X), torch.from_numpy(M)

    def divergence():
        with torch.no_grad():
            q, p = torch.log_softmax(ref.policy(x, m), 1), torch.log_softmax(model.policy(x, m), 1)
            return float(torch.where(m.bool(), q.exp() * (q - p), torch.zeros_like(p)).sum(1).mean())

    kw = dict(beta=0.0, clip=0.2, epochs=3, batch=16, rng=rng)
    zero = np.zeros(len(A))
    opt_pi, opt_v = (torch.optim.Adam(n.parameters(), lr=1e-2) for n in (model.policy, model.value))
    still = copy.deepcopy(model.policy.state_dict())
    ppo_episode_update(model, ref.policy, X, M, A, LP, zero, G, opt_pi, opt_v, kl=0.0, **kw)
    assert all(torch.equal(still[k], v) for k, v in model.policy.state_dict().items())
    before = divergence()
    ppo_episode_update(model, ref.policy, X, M, A, LP, zero, G, opt_pi, opt_v, kl=1.0, **kw)
    assert divergence() < 0.5 * before


def test_the_gae_baseline_runs_from_a_smoothed_warm_up_within_a_cpu_budget(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=2, warmup_smoothing=0.1, rl_episodes=50, eval_every=1, batch=64,
                      baseline="gae", ppo_epochs=2, kl=0.1, max_slots=60, cpu_budget_s=1e-9)
    prov = train(cfg, tmp_path / "a.pt", command="test", progress=False)
    # the CPU budget is spent before the first episode: none runs, and the warm-up is the model kept
    assert prov["episodes_run"] == 0 and prov["best_episode"] == 0
    cfg = TrainConfig(**{**cfg.__dict__, "rl_episodes": 2, "cpu_budget_s": None})
    prov = train(cfg, tmp_path / "b.pt", command="test", progress=False)
    assert prov["episodes_run"] == 2 and len(prov["curve"]) == 3 and prov["config"]["baseline"] == "gae"


def test_warmup_learns_the_teacher_on_its_own_data():
    traces, cluster, speed = small(8, (1,), 3)
    env = DL2Env(traces, cluster, speed, Spec(J=6))
    X, M, A, G = teacher_samples(env, lambda: make_policy("drf"), [0], 0.9)
    model = Model.new(env.dl2_spec, (64, 64), seed=0)
    before = agreement(model, X, M, A)
    losses = warmup(model, X, M, A, epochs=40, lr=0.005, batch=64, seed=0)
    assert losses[-1] < losses[0]
    assert agreement(model, X, M, A) > max(before, 0.8)


def test_actor_critic_step_moves_both_networks_and_sampling_respects_the_mask():
    traces, cluster, speed = small(4, (3,), 2)
    env = DL2Env(traces, cluster, speed, Spec(J=4))
    model = Model.new(env.dl2_spec, (16,), seed=1)
    rng = np.random.default_rng(0)
    X, M, A, G, _, LP = rollout(env, sampler(env, model, rng, epsilon=0.5), 0.9)
    assert all(M[k][A[k]] for k in range(len(A)))
    replay = Replay(50)
    replay.add(X, M, A, G, LP)
    assert len(replay.data) == min(50, len(A))
    p0 = [p.detach().clone() for p in (*model.policy.parameters(), *model.value.parameters())]
    opt_pi = torch.optim.Adam(model.policy.parameters(), lr=1e-3)
    opt_v = torch.optim.Adam(model.value.parameters(), lr=1e-3)
    actor_critic_update(model, replay.sample(32, rng), opt_pi, opt_v, beta=0.1)
    p1 = [*model.policy.parameters(), *model.value.parameters()]
    assert all(not torch.equal(a, b) for a, b in zip(p0, p1))


def test_a_tiny_training_run_writes_checkpoint_provenance_and_curves(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1,), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=2, rl_episodes=2, eval_every=1, batch=64, updates_per_episode=2, max_slots=60)
    out = tmp_path / "m.pt"
    prov = train(cfg, out, command="test", progress=False)
    assert out.is_file() and out.with_suffix(".png").is_file()
    assert json.loads(out.with_suffix(".json").read_text())["seed"] == 0
    assert prov["episodes_run"] == 2 and len(prov["curve"]) == 3
    finite = [p["tune_jct"] for p in prov["curve"] if p["tune_jct"] is not None]   # None: a run stalled
    assert prov["best_tune_jct"] == (min(finite) if finite else None)
    model = load_checkpoint(out)
    assert model.spec.J == 5 and model.provenance["command"] == "test"
    # fine-tuning resumed from it keeps its warm-up figures and records where it started
    again = train(TrainConfig(**{**cfg.__dict__, "init": str(out), "rl_episodes": 1}), tmp_path / "n.pt",
                  command="test2", progress=False)
    assert again["agreement"] == prov["agreement"] and again["init"]["command"] == "test"
    assert again["curve"][0]["tune_jct"] == prov["best_tune_jct"]
    # its times count the warm-up of the run it started from, not that run's fine-tuning
    assert again["warmup_seconds"] == pytest.approx(prov["warmup_seconds"], abs=again["curve"][0]["seconds"])
    assert again["total_training_seconds"] == pytest.approx(prov["training_seconds"] + again["training_seconds"])


def test_a_chain_of_init_runs_loads_the_warm_up_once_and_adds_up_its_times(tmp_path, monkeypatch):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1,), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=2, rl_episodes=1, eval_every=1, batch=64, updates_per_episode=2, max_slots=60)
    a = train(cfg, tmp_path / "a.pt", command="a", progress=False)

    def no_warm_up(*args, **kw):
        raise AssertionError("--init redid the warm-up")
    monkeypatch.setattr(train_module, "teacher_samples", no_warm_up)
    monkeypatch.setattr(train_module, "warmup", no_warm_up)
    monkeypatch.setattr(train_module, "value_warmup", no_warm_up)
    b = train(TrainConfig(**{**cfg.__dict__, "init": str(tmp_path / "a.pt")}), tmp_path / "b.pt", command="b",
              progress=False)
    c = train(TrainConfig(**{**cfg.__dict__, "init": str(tmp_path / "b.pt")}), tmp_path / "c.pt", command="c",
              progress=False)
    # each link's warm-up time is the last link's plus its own load (before its first evaluation),
    # not the last link's whole run: the third's is the first's plus two loads
    for prev, run in ((a, b), (b, c)):
        assert prev["warmup_seconds"] <= run["warmup_seconds"] <= prev["warmup_seconds"] + run["curve"][0]["seconds"]
    assert c["init"]["warmup_seconds"] == b["warmup_seconds"]
    assert c["total_training_seconds"] == pytest.approx(a["training_seconds"] + b["training_seconds"]
                                                        + c["training_seconds"])
    # the whole chain travels in the provenance: the third names the second, which names the first
    assert c["init"]["command"] == "b" and c["init"]["init"]["command"] == "a"


def test_the_chain_curve_counts_each_leg_up_to_the_model_it_handed_on():
    def leg(cpu_jct, best, init=None):
        return {"curve": [{"episode": 4 * i, "cpu_seconds": c, "tune_jct": j} for i, (c, j) in enumerate(cpu_jct)],
                "best_episode": best, "init": init}
    first = leg([(1.0, 50.0), (1801.0, 40.0), (3601.0, 45.0)], best=4)       # its best at 1,800 CPU-s of RL
    second = leg([(0.5, 40.0), (3600.5, 38.0)], best=4, init=first)          # starts from that model
    pts = chain_curve(second)
    # the first leg's evaluation after its best (3,600 s) led to no model in the chain: left out
    assert pts == [(0.0, 50.0, 0), (0.5, 40.0, 0), (1.5, 38.0, 1)]
    assert chain_curve(first) == [(0.0, 50.0, 0), (0.5, 40.0, 0), (1.0, 45.0, 0)]   # a run alone: all of it


def test_the_self_critical_baseline_runs_and_scales_advantages(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=1, rl_episodes=2, eval_every=2, batch=64, updates_per_episode=1, baseline="greedy",
                      max_slots=60)
    prov = train(cfg, tmp_path / "g.pt", command="test", progress=False)
    assert prov["episodes_run"] == 2 and prov["config"]["baseline"] == "greedy"


def test_the_branch_baseline_runs_and_records_cpu_time(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=1, rl_episodes=2, eval_every=2, batch=64, updates_per_episode=1, baseline="branch",
                      p_branch=0.5, temperature=2.0, max_slots=40)
    prov = train(cfg, tmp_path / "b.pt", command="test", progress=False)
    assert prov["episodes_run"] == 2 and prov["cpu_seconds"] > 0
    assert all(p["cpu_seconds"] >= 0 for p in prov["curve"])


def test_the_rollouts_baseline_runs(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=1, rl_episodes=2, eval_every=2, batch=64, updates_per_episode=1,
                      baseline="rollouts", candidates=2, p_branch=0.5, temperature=2.0, max_slots=40)
    prov = train(cfg, tmp_path / "r.pt", command="test", progress=False)
    assert prov["episodes_run"] == 2 and prov["config"]["candidates"] == 2


def test_a_given_advantage_replaces_the_critics():
    traces, cluster, speed = small(4, (3,), 2)
    env = DL2Env(traces, cluster, speed, Spec(J=4))
    model = Model.new(env.dl2_spec, (16,), seed=1)
    X, M, A, G, _, LP = rollout(env, sampler(env, model, np.random.default_rng(0), epsilon=0.0), 0.9)
    replay = Replay(1000)
    replay.add(X, M, A, G, LP, np.zeros(len(A), np.float32))
    p0 = [p.detach().clone() for p in model.policy.parameters()]
    opt_pi = torch.optim.Adam(model.policy.parameters(), lr=1e-3)
    opt_v = torch.optim.Adam(model.value.parameters(), lr=1e-3)
    # zero advantage and no entropy weight: the actor has no gradient, whatever the critic says
    actor_critic_update(model, replay.sample(32, np.random.default_rng(1)), opt_pi, opt_v, beta=0.0, clip=0.2)
    assert all(torch.equal(a, b) for a, b in zip(p0, model.policy.parameters()))


def test_dagger_rounds_add_the_networks_own_states_labelled_by_the_teacher(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1,), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=1, rl_episodes=0, batch=64, dagger_rounds=1, dagger_epochs=1, max_slots=60)
    prov = train(cfg, tmp_path / "d.pt", command="test", progress=False)
    (r,) = prov["dagger"]
    assert r["samples"] > prov["warmup_samples"] and 0 <= r["held_out"] <= 1


@pytest.mark.parametrize("flag, value", [("--window", "0"), ("--hidden", "0"), ("--gamma", "nan"), ("--jobs", "0"),
                                         ("--episodes", "-1"), ("--beta", "inf"), ("--servers", "100000000"),
                                         ("--warmup-smoothing", "1.5"), ("--gae-lambda", "-0.1"), ("--kl", "-1"),
                                         ("--ppo-epochs", "0"), ("--budget-cpu-min", "0"), ("--threads", "0")])
def test_training_settings_out_of_range_are_refused_before_any_work(capsys, flag, value):
    """`--window 0` looped for ever in the environment; `--hidden 0` and `--gamma nan` were accepted."""
    from dlsched.cli import main

    argv = ["train", "dl2", "--traces", "1000", "--tune", "2000", "--jobs", "6", "--servers", "4", "--episodes", "0",
            "--warmup-epochs", "1", "--hidden", "16,16", "--quiet", "--out", "/nonexistent/x.pt", flag, value]
    assert main(argv) == 2
    assert f"at {flag}" in capsys.readouterr().err


def test_the_provenance_names_checkpoints_without_the_folders_they_lay_in(capsys, tmp_path):
    """A shipped model's record holds no path of the machine it was trained on (issue: "provenance without temporary
    paths"): ``--out`` and ``--init`` by file name in the command, the config and the chain's link."""
    from dlsched.cli import main

    tiny = ["--traces", "1000", "--tune", "2000", "--jobs", "6", "--servers", "4", "--warmup-epochs", "1",
            "--hidden", "16,16", "--quiet", "--seed", "3"]
    assert main(["train", "dl2", *tiny, "--episodes", "0", "--out", str(tmp_path / "warm.pt")]) == 0
    assert main(["train", "dl2", *tiny, "--episodes", "1", "--init", str(tmp_path / "warm.pt"),
                 f"--out={tmp_path / 'rl.pt'}"]) == 0
    capsys.readouterr()
    prov = json.loads((tmp_path / "rl.json").read_text())
    assert str(tmp_path) not in json.dumps(prov)
    assert "--init warm.pt" in prov["command"] and "--out=rl.pt" in prov["command"]
    assert prov["config"]["init"] == prov["init"]["path"] == "warm.pt"
    assert prov["init"]["command"].endswith("--out warm.pt")


def test_a_model_trained_at_the_slots_goes_on_training_at_events_and_nothing_else_changes(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1,), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=1, rl_episodes=1, eval_every=1, batch=64, updates_per_episode=1, max_slots=60)
    train(cfg, tmp_path / "a.pt", command="a", progress=False)
    train(TrainConfig(**{**cfg.__dict__, "init": str(tmp_path / "a.pt"), "decide_at": "events"}), tmp_path / "b.pt",
          command="b", progress=False)
    slots, events = load_checkpoint(tmp_path / "a.pt"), load_checkpoint(tmp_path / "b.pt")
    assert (slots.spec.decide_at, events.spec.decide_at) == ("slots", "events")
    assert events.policy.shape.spec == events.value.shape.spec == events.spec
    # any other difference of the spec is still refused: the network's input would not match
    with pytest.raises(InputError, match="spec"):
        train(TrainConfig(**{**cfg.__dict__, "init": str(tmp_path / "b.pt"), "rows": "remaining"}), tmp_path / "c.pt",
              command="c", progress=False)

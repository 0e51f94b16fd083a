"""Job-level size actions (``Spec.actions = "jobs"``) and their forked rollouts (MODELS.md §6), each tiny."""

import numpy as np
import pytest
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.forks import (ForkPool, candidate_levels, continue_greedy, decisive_rows, fork, fork_episode,
                              fork_update, row_probabilities)
from dlsched.rl.policy import DL2Policy, Model, choose
from dlsched.rl.slot import Slot, Spec
from dlsched.rl.train import TrainConfig, agreement, teacher_levels, teacher_samples, train, warmup
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation, simulate

from .helpers import JOBS, greedy_state, small


def busy_slot(spec: Spec = JOBS) -> Slot:
    traces, cluster, speed = small(10, (5,), 3)
    sim = Simulation(traces[0], cluster, speed)
    while sim.time < 8000:
        sim.advance(8000)
    st = sim.state()
    return Slot(spec, st, spec.type_index(st.jobs), np.zeros(len(st.jobs)))


def test_levels_fill_the_window_in_row_order_while_tasks_fit():
    slot = busy_slot()
    n = len(slot.jobs)
    assert n >= 3
    mask = slot.level_mask()
    assert mask.shape == (6, 5) and mask[:, 0].all() and not mask[n:, 1:].any() and mask[:n].all()
    slot.fill(np.full(6, 3))
    # rows are served first come first: a row gets its config (4 workers, 4 PSs), or what fits, and
    # once a row falls short no row after it gets anything
    got = slot.w[:n]
    assert (slot.p[:n] == got).all() and got[0] == 4
    short = np.flatnonzero(got < 4)
    assert len(short) and (got[short[0] + 1:] == 0).all()
    assert (slot.free >= -1e-9).all()
    # level 0 leaves a row out and lets the next one in; a config with more PSs than workers
    other = busy_slot()
    other.fill(np.array([0, 4, 3, 0, 0, 0]))
    assert (other.w[:3] == [0, 1, 4]).all() and (other.p[:3] == [0, 3, 4]).all()


def test_the_teachers_allocation_becomes_the_nearest_config():
    slot = busy_slot()
    j = [int(x) for x in slot.jobs[:3]]
    levels = teacher_levels(slot, {j[0]: (1, 3), j[1]: (3, 3), j[2]: (1, 4)})
    assert list(levels[:4]) == [4, 3, 4, 0]      # (3, 3) is nearer (4, 4) than (2, 2): |log 4/5| < |log 4/3|


def test_a_jobs_episode_is_one_step_a_slot_and_completes():
    traces, cluster, speed = small(6, (1,), 3)
    env = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
    obs, info = env.reset(options={"trace": 0})
    assert env.action_space.shape == (6,) and info["action_mask"].shape == (6, 5)
    steps, done = 0, False
    while not done:
        obs, r, term, trunc, info = env.step(np.minimum(2, info["action_mask"].sum(axis=1) - 1))
        assert info["slot_end"] and not info["invalid_action"]
        steps += 1
        done = term or trunc
    assert term and 0 < steps <= env.n_slots
    # a level outside the mask is flagged and taken as the nearest valid one
    env.reset(options={"trace": 0})
    assert env.step(np.full(6, 9))[4]["invalid_action"]
    env.reset(options={"trace": 0})
    assert env.step(np.zeros(3, np.int64))[4]["invalid_action"]


def test_the_dl2_policy_with_job_levels_decides_once_a_slot_and_completes():
    traces, cluster, speed = small(8, (2,), 3)
    model = Model.new(JOBS, (16,))
    pol = DL2Policy(model)
    res = simulate(traces[0], cluster, pol, speed, stall_calls=200)
    assert res.status == "completed"      # the engine refuses an allocation that over-commits a server
    slots = int(np.ceil(max(res.completion) / JOBS.slot_seconds))
    assert 0 < pol.inferences <= slots


def test_the_drf_warm_up_learns_levels_on_its_own_data():
    traces, cluster, speed = small(8, (1,), 3)
    env = DL2Env(traces, cluster, speed, JOBS)
    X, M, A, G = teacher_samples(env, lambda: make_policy("drf"), [0], 0.9)
    assert A.shape == (len(X), 6) and (A < 5).all()
    assert (M[np.arange(len(A))[:, None], np.arange(6)[None, :], A] == 1).all()
    model = Model.new(JOBS, (64,))
    before = agreement(model, X, M, A)
    warmup(model, X, M, A, epochs=30, lr=0.01, batch=64, seed=0)
    assert agreement(model, X, M, A) > max(before, 0.9)


def test_forked_candidates_differ_only_in_one_rows_level_and_their_advantages_are_exact():
    traces, cluster, speed = small(8, (1,), 3)
    env = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
    model = Model.new(JOBS, (16,))
    obs, info = env.reset(options={"trace": 0})
    for _ in range(3):
        obs, *_, info = env.step(choose(model, obs, info["action_mask"]))
    levels = choose(model, obs, info["action_mask"])
    # the simulator is deterministic: the greedy continuation of a copy is the original's
    assert continue_greedy(fork(env), model, levels, 0) == continue_greedy(fork(env), model, levels, 0)
    rows = decisive_rows(env, levels)
    assert len(rows) and rows[0] == 0
    rng = np.random.default_rng(0)
    X, M, I, K, LP, ADV, F, greedy = fork_episode(env, model, rng, trace=0, p_fork=1.0, candidates=3,
                                               temperature=1.0, horizon=4)
    assert len(K) and len(K) % 3 == 0 and np.isfinite(greedy)
    assert np.array_equal(F, np.repeat(np.arange(len(K) // 3), 3))      # each fork's samples, numbered in order
    # leave-one-out advantages of each fork sum to zero; the first candidate is the greedy level
    assert np.allclose(ADV.reshape(-1, 3).sum(axis=1), 0.0, atol=1e-6)
    for x, m, i in zip(X[::3], M[::3], I[::3]):
        assert m[i, 1:].any()
    assert np.allclose(LP, np.log(np.maximum([row_probabilities(model, x, m)[i, k] for x, m, i, k in zip(X, M, I, K)], 1e-12)),
                       atol=1e-5)


def test_candidate_levels_are_distinct_valid_and_start_with_the_greedy_one():
    rng = np.random.default_rng(1)
    p = np.array([0.7, 0.2, 0.1, 0.0, 0.0])
    for _ in range(20):
        ks = candidate_levels(p, np.arange(4), 0, 3, 1.0, rng)
        assert ks[0] == 0 and len(set(ks)) == 3 and set(ks) <= {0, 1, 2, 3}


def test_a_fork_update_moves_probability_towards_the_better_level():
    model = Model.new(JOBS, (16,))
    slot = busy_slot()
    x, m = slot.observation(), slot.level_mask()
    before = row_probabilities(model, x, m)[0]
    X, M = np.stack([x, x]), np.stack([m, m])
    I, K = np.array([0, 0]), np.array([1, 3])
    LP = np.log(before[K]).astype(np.float32)
    opt = torch.optim.Adam(model.policy.parameters(), lr=1e-2)
    for _ in range(5):
        fork_update(model, opt, X, M, I, K, LP, np.array([-1.0, 1.0]), clip=10.0, epochs=1, batch=2,
                    rng=np.random.default_rng(0))
    after = row_probabilities(model, x, m)[0]
    assert after[3] > before[3] and after[1] < before[1]


def test_the_forks_baseline_trains_from_a_drf_warm_up_with_two_workers(tmp_path):
    cfg = TrainConfig(J=5, hidden=(16,), train_seeds=(1, 3), tune_seeds=(2,), n_jobs=5, n_servers=3,
                      warmup_epochs=2, rl_episodes=2, eval_every=1, batch=16, actions="jobs",
                      baseline="forks", p_branch=0.5, candidates=2, horizon=3, max_slots=60, workers=2)
    prov = train(cfg, tmp_path / "f.pt", command="test", progress=False)
    assert prov["episodes_run"] == 4 and len(prov["curve"]) == 3 and prov["cpu_seconds"] > 0
    assert prov["config"]["actions"] == "jobs"
    assert DL2Policy(str(tmp_path / "f.pt")).spec.actions == "jobs"


@pytest.mark.parametrize("settings", [dict(actions="jobs"), dict(baseline="forks"),
                                      dict(actions="jobs", baseline="forks", candidates=1),
                                      dict(workers=2)])
def test_job_levels_go_with_the_forks_baseline_only(settings):
    from dlsched.errors import InputError
    with pytest.raises(InputError):
        TrainConfig(**settings)


def test_a_pool_of_one_plays_in_this_process():
    traces, cluster, speed = small(5, (1,), 3)
    env = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=60)
    model = Model.new(JOBS, (16,))
    with ForkPool(1, env, model) as pool:
        assert pool.pool is None
        done, cpu = pool.episodes(model, np.random.default_rng(0), [0], p_fork=0.5, candidates=2,
                                  temperature=1.0, horizon=2)
    assert len(done) == 1 and cpu == 0.0


def test_each_candidates_return_is_its_own_replay_and_the_advantages_are_leave_one_out(monkeypatch):
    """The values, against an independent replay: a fresh environment played greedily to the fork's
    slot, the candidate's level stepped, then the greedy policy with the held job's level by hand."""
    import dlsched.rl.forks as forks
    traces, cluster, speed = small(8, (1,), 3)
    env = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
    model = Model.new(JOBS, (16,), seed=3)
    calls = []
    real = forks.continue_greedy

    def recorded(e, m, levels, horizon, hold=None, **kw):
        slot = e.n_slots
        r = real(e, m, levels, horizon, hold, **kw)
        calls.append((slot, levels.copy(), hold, r))
        return r
    monkeypatch.setattr(forks, "continue_greedy", recorded)
    H, C = 3, 3
    X, M, I, K, LP, ADV, F, greedy = fork_episode(env, model, np.random.default_rng(5), trace=0, p_fork=1.0,
                                               candidates=C, temperature=1.0, horizon=H)
    assert len(calls) >= 2 * C
    # leave-one-out: A_c = R_c − mean of the other candidates' returns, for every fork kept
    R = np.array([r for *_, r in calls]).reshape(-1, C)
    kept = R[R.max(axis=1) > R.min(axis=1)]
    assert np.allclose(ADV.reshape(-1, C), kept - (kept.sum(axis=1, keepdims=True) - kept) / (C - 1))
    assert np.allclose(K.reshape(-1, C), [[h[1] for _, _, h, _ in calls[s:s + C]] for s in range(0, len(calls), C)
                                          if R[s // C].max() > R[s // C].min()])

    def replay(slot, levels, hold):
        e = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
        obs, info = e.reset(options={"trace": 0})
        while e.n_slots < slot:
            obs, *_, info = e.step(choose(model, obs, info["action_mask"]))
        total, action = 0.0, levels
        for n in range(H):
            obs, r, term, trunc, info = e.step(action)
            total += r
            if term or trunc:
                break
            action = choose(model, obs, info["action_mask"])
            rows = np.flatnonzero(e.slot.jobs == hold[0])
            if len(rows):
                action[rows] = hold[1] if info["action_mask"][rows[0], hold[1]] else 0
        return total
    for slot, levels, hold, r in calls[:C] + calls[-C:]:
        assert replay(slot, levels, hold) == pytest.approx(r, rel=1e-12, abs=1e-12)
    # the greedy episode's return is the greedy policy's own, unchanged by the forks
    e = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
    obs, info = e.reset(options={"trace": 0})
    total, done = 0.0, False
    while not done:
        obs, r, term, trunc, info = e.step(choose(model, obs, info["action_mask"]))
        total += r
        done = term or trunc
    assert greedy == pytest.approx(total, rel=1e-12)


def test_runs_from_different_checkpoints_draw_different_streams_with_one_seed():
    from dlsched.rl.train import rl_stream
    a, b = Model.new(JOBS, (16,), seed=0), Model.new(JOBS, (16,), seed=1)
    draw = lambda g: list(g.integers(1 << 30, size=4))  # noqa: E731
    assert draw(rl_stream(0)) == draw(np.random.default_rng(0))
    assert draw(rl_stream(0, a)) == draw(rl_stream(0, a)) != draw(rl_stream(0, b))
    assert draw(rl_stream(0, a)) != draw(rl_stream(1, a))


def test_a_hold_of_one_slot_is_the_forked_slot_alone_and_a_long_hold_the_whole_continuation():
    model = Model.new(JOBS, (16,), seed=3)
    env, obs, info = greedy_state(8, 1, model)
    levels = choose(model, obs, info["action_mask"])
    job = int(env.slot.jobs[0])
    for k in range(JOBS.n_levels):
        alt = levels.copy()
        alt[0] = k
        free = continue_greedy(fork(env), model, alt, 0)
        held = continue_greedy(fork(env), model, alt, 0, (job, k))
        assert continue_greedy(fork(env), model, alt, 0, (job, k), hold_slots=1) == free
        assert continue_greedy(fork(env), model, alt, 0, (job, k), hold_slots=10 ** 6) == held
    # level 0 held for the whole continuation never runs the job: the episode is cut at max_slots
    alt = levels.copy()
    alt[0] = 0
    e = fork(env)
    continue_greedy(e, model, alt, 0, (job, 0))
    assert e.n_slots == 200 and np.isnan(e.sim.completion[job])

"""DL2Env follows gymnasium's contract and rewards Σ epochs trained / total epochs per slot (MODELS.md §6)."""

import numpy as np
from gymnasium.utils.env_checker import check_env

import pytest

from dlsched.errors import InputError
from dlsched.rl.env import DL2Env
from dlsched.rl.slot import DECIDE_AT, Spec

from .helpers import small


def make_env(decide_at="slots", **kw):
    traces, cluster, speed = small(6, (1, 2), 3)
    return DL2Env(traces, cluster, speed, Spec(J=5, decide_at=decide_at), **kw)


@pytest.mark.parametrize("decide_at", DECIDE_AT)
def test_check_env_passes(decide_at):
    check_env(make_env(decide_at), skip_render_check=True)


def test_masked_random_episode_finishes_every_job_and_rewards_sum_to_the_job_count():
    env = make_env()
    obs, info = env.reset(seed=4, options={"trace": 1})
    rng = np.random.default_rng(4)
    total, done, slots = 0.0, False, 0
    while not done:
        assert env.observation_space.contains(obs)
        valid = np.flatnonzero(info["action_mask"])
        assert info["action_mask"][env.dl2_spec.stop] == 1
        obs, r, term, trunc, info = env.step(int(rng.choice(valid)))
        assert r >= 0 and (r == 0 or info["slot_end"])
        slots += info["slot_end"]
        total += r
        done = term or trunc
    assert term and not trunc
    res = env.result()
    assert res.completed.all()
    # each job contributes the fractions of its epochs trained in each slot: 1 in total
    assert np.isclose(total, len(env.trace))


def test_an_invalid_action_closes_the_slot_and_is_flagged():
    env = make_env()
    obs, info = env.reset(seed=0, options={"trace": 0})
    bad = int(np.flatnonzero(info["action_mask"] == 0)[0])
    _, _, _, _, info = env.step(bad)
    assert info["invalid_action"] and info["slot_end"]


def test_episodes_are_cut_after_max_slots():
    env = make_env(max_slots=2)
    env.reset(seed=0, options={"trace": 0})
    stop = env.dl2_spec.stop
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(stop)
        done = term or trunc
    assert trunc and not term and env.n_slots == 2    # idle slots before the first arrival count too


@pytest.mark.parametrize("decide_at", DECIDE_AT)
def test_jct_reward_sums_to_minus_the_total_jct_in_slots(decide_at):
    env = make_env(decide_at, reward="jct")
    obs, info = env.reset(seed=3, options={"trace": 0})
    rng = np.random.default_rng(3)
    total, done = 0.0, False
    while not done:
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        assert r <= 0 and (r == 0 or info["slot_end"])
        total += r
        done = term or trunc
    res = env.result()
    assert term and res.completed.all()
    # every job is counted from its arrival to its completion, waiting slots included
    assert np.isclose(total, -np.sum(res.jct) / env.dl2_spec.slot_seconds)


def test_an_unknown_reward_or_decision_timing_is_input_error():
    with pytest.raises(InputError):
        make_env(reward="speed")
    with pytest.raises(InputError):
        make_env("hourly")


def test_deciding_at_events_stops_at_every_arrival_and_completion_and_slots_only_at_boundaries():
    for decide_at in DECIDE_AT:
        env = make_env(decide_at)
        obs, info = env.reset(seed=0, options={"trace": 0})
        times, done = [env.t], False
        while not done:
            obs, r, term, trunc, info = env.step(env.dl2_spec.stop if not info["action_mask"][2 * 5] else 2 * 5)
            done = term or trunc
            if info["slot_end"]:
                times.append(env.t)
        res = env.result()
        events = set(np.round(np.concatenate([res.arrival, res.completion]), 6))
        on_grid = {t for t in times if np.isclose(t / 1200.0, round(t / 1200.0))}
        if decide_at == "slots":
            assert set(times) == on_grid
        else:
            # every decision off the grid is at an arrival or a completion, and every arrival is one
            assert {round(t, 6) for t in times} - {round(t, 6) for t in on_grid} <= events
            assert set(np.round(res.arrival, 6)) <= {round(t, 6) for t in times}


def test_drf_replayed_at_every_event_is_drf():
    """Issued through the environment at every arrival and completion, DRF's allocations give DRF's own JCTs."""
    from dlsched.rl.train import rollout, teacher_picker
    from dlsched.sim.engine import simulate
    from dlsched.registry import make_policy

    traces, cluster, speed = small(8, (3, 4), 3)
    env = DL2Env(traces, cluster, speed, Spec(J=8, decide_at="events"))
    for k, tr in enumerate(traces):
        rollout(env, teacher_picker(env, lambda: make_policy("drf")), 0.9, trace=k)
        assert np.allclose(env.result().jct, simulate(tr, cluster, make_policy("drf"), speed).jct)

"""DL2Env follows gymnasium's contract and rewards Σ epochs trained / total epochs per slot (MODELS.md §6)."""

import numpy as np
from gymnasium.utils.env_checker import check_env

from dlsched.rl.env import DL2Env
from dlsched.rl.slot import Spec

from .helpers import small


def make_env(**kw):
    traces, cluster, speed = small(6, (1, 2), 3)
    return DL2Env(traces, cluster, speed, Spec(J=5), **kw)


def test_check_env_passes():
    check_env(make_env(), skip_render_check=True)


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


def test_jct_reward_sums_to_minus_the_total_jct_in_slots():
    env = make_env(reward="jct")
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


def test_an_unknown_reward_is_input_error():
    import pytest

    from dlsched.errors import InputError

    with pytest.raises(InputError):
        make_env(reward="speed")

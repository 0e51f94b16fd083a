"""Small DL2-mix settings for the rl tests (seconds, not minutes)."""

from __future__ import annotations

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.rl.env import DL2Env
from dlsched.rl.policy import choose
from dlsched.rl.slot import Spec
from dlsched.sim.speed import TableSpeed

#: job-level actions of five sizes on a window of six rows: forks and labels small enough for a test
JOBS = Spec(J=6, actions="jobs", configs=((0, 0), (1, 1), (2, 2), (4, 4), (1, 3)))


def small(n_jobs: int = 8, seeds=(1,), servers: int = 4):
    return [dl2_trace(n_jobs, seed=s) for s in seeds], dl2_cluster(servers), TableSpeed()


def greedy_state(n_jobs: int, seed: int, model):
    """A :data:`JOBS` environment on one small trace (``n_jobs`` of seed ``seed``, 3 servers, at most 200 slots)
    after two slots of ``model``'s greedy levels: the environment, its observation and info."""
    traces, cluster, speed = small(n_jobs, (seed,), 3)
    env = DL2Env(traces, cluster, speed, JOBS, reward="jct", max_slots=200)
    obs, info = env.reset(options={"trace": 0})
    for _ in range(2):
        obs, *_, info = env.step(choose(model, obs, info["action_mask"]))
    return env, obs, info

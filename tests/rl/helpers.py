"""Small DL2-mix settings for the rl tests (seconds, not minutes)."""

from __future__ import annotations

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.sim.speed import TableSpeed


def small(n_jobs: int = 8, seeds=(1,), servers: int = 4):
    return [dl2_trace(n_jobs, seed=s) for s in seeds], dl2_cluster(servers), TableSpeed()

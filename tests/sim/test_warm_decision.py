"""A budgeted policy's warm decision (issue 27, "a warm decision within 10 ms"): the greedy family's view reads
each kind of job's τ grid once and the times only where the fill steps (``GreedyView``, ``ScaledTimes``), with
the same answers as from every job's own grid. Values compared; no timings."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.policies.greedy import GreedyView, ScaledTimes, greedy_allocation, greedy_view
from dlsched.policies.view import instance_view
from dlsched.sim.speed import TableSpeed


@pytest.fixture(scope="module")
def view():
    """The SMD view of 80 of DL2's jobs on 60 servers, each with its own remaining iterations."""
    jobs = tuple(replace(j, arrival=0.0) for j in dl2_trace(80, seed=5).jobs)
    inst = instance_view(jobs, dl2_cluster(60), TableSpeed())
    rng = np.random.default_rng(5)
    return inst.with_remaining(inst.iterations * rng.uniform(0.05, 1.0, inst.n_jobs))


def per_job(v: GreedyView) -> GreedyView:
    """The same view with every job's own grid (no kinds): what the kinds must agree with."""
    return replace(v, tau_kinds=v.tau_kinds[v.of].copy(), kind=None)


def test_the_kinds_stack_gives_every_job_its_own_grid_and_least_tau(view):
    active = np.arange(3, 80, 2)
    v = greedy_view(view, active)
    assert np.unique(v.kind).size < active.size                      # jobs share grids
    dense = v.tau
    for i in range(active.size):
        P, W = v.grid[i]
        assert np.array_equal(v.remaining[i] * dense[i, :P, :W], v.times(i))
        assert np.array_equal(dense[i, P:], np.full_like(dense[i, P:], np.inf))
    flat = dense.reshape(active.size, -1)
    assert np.array_equal(v.least, flat.min(axis=1))
    assert np.array_equal(v.least_at, flat.argmin(axis=1))
    assert np.array_equal(v.sizes, np.isfinite(flat).sum(axis=1))


@pytest.mark.parametrize("scaled", [False, True])
def test_scaled_times_are_the_stacks_products_and_quotients(view, scaled):
    v = greedy_view(view, np.arange(80))
    scale = np.linspace(0.5, 3.0, 80) if scaled else None
    dense = v.remaining[:, None, None] * v.tau
    if scaled:
        dense /= scale[:, None, None]
    times = ScaledTimes(v, scale)
    rng = np.random.default_rng(1)
    i, p, w = rng.integers(0, 80, 500), rng.integers(0, dense.shape[1], 500), rng.integers(0, dense.shape[2], 500)
    assert np.array_equal(times[i, p, w], dense[i, p, w], equal_nan=True)
    rows = np.array([4, 0, 77, 4])
    assert np.array_equal(times.rows(rows), dense[rows], equal_nan=True)
    assert times.shape == dense.shape


@pytest.mark.parametrize("options", [{}, {"alpha": 2.0, "start": "shortest", "pairs": True}, {"shares": 0.6, "alpha": 2.0},
                                     {"alpha": 1.0, "start": "shortest"}])
def test_the_greedy_on_shared_grids_answers_as_on_every_jobs_own(view, options):
    """optimus-greedy's, srpt-greedy's and hesrpt's options, and a callable θ as fluid's: the same sizes."""
    for active in (np.arange(80), np.arange(0, 80, 3)):
        v = greedy_view(view, active)
        a, b = greedy_allocation(v, **options), greedy_allocation(per_job(v), **options)
        assert np.array_equal(a, b) and (a[:, 0] > 0).any()
    theta = lambda w, order: np.linspace(0.0, 0.3, w.jobs.size)[np.argsort(order)]
    v = greedy_view(view, np.arange(80))
    a = greedy_allocation(v, alpha=2.0, start="shortest", pairs=True, shares=theta)
    assert np.array_equal(a, greedy_allocation(per_job(v), alpha=2.0, start="shortest", pairs=True, shares=theta))
    # and the θ moved some first sizes: the shares are read
    assert not np.array_equal(a, greedy_allocation(v, alpha=2.0, start="shortest", pairs=True))

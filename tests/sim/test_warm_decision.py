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


def test_the_floor_binds_only_past_the_budget_and_decays_when_it_does():
    from dlsched.policies.budget import FLOOR_DECAY, Floor
    from dlsched.solvers.options import Budget

    floor, clock = Floor(), Budget(0.010, margin=0.001)
    assert not floor.binds(clock, 10**6)                       # nothing measured: the view is built
    floor.measured(0.0095, 0.0005, 0.010, 1000)                # within its budget: 9 ms less its steps, 9 µs a job
    assert not floor.binds(clock, 1000) and floor.rate == pytest.approx(9e-6)     # 9 ms <= 10 - 1
    assert floor.binds(clock, 1001) and floor.rate == pytest.approx(9e-6 * FLOOR_DECAY)
    floor.measured(0.012, 0.002, 0.010, 1000)                  # over its budget: the whole of it
    assert floor.rate == pytest.approx(1.2e-5)
    floor.measured(0.012, 0.002, None, 1000)                   # no budget (smd's POP alone): less its steps
    assert floor.rate == pytest.approx(1e-5)
    assert not floor.binds(Budget(None), 10**6)                 # no budget: never


@pytest.fixture()
def busy():
    """60 of DL2's jobs on 4 servers: 59 at 0, one at 1 s; a state after a first decision that started some."""
    from dlsched.sim.engine import Simulation
    from dlsched.sim.policy import PolicyContext
    from dlsched.instance.workload import Trace

    jobs = dl2_trace(60, seed=3).jobs
    jobs = tuple(replace(j, arrival=0.0 if k < 59 else 1.0) for k, j in enumerate(jobs))
    return Trace(jobs, "dl2:60:3, one arrival at 1 s"), dl2_cluster(4), TableSpeed(), Simulation, PolicyContext


@pytest.mark.parametrize("name", ["fluid", "smd"])
def test_a_floor_past_the_budget_answers_the_kept_start_from_the_state(busy, name):
    """A decision whose floor is predicted past its budget keeps every running job where it is and starts waiting
    jobs at their first size, shortest first at that size, while they fit what is free (fake rates: no timing); the
    engine accepts it; the next decision with the floor's rate decayed below the budget builds its view again."""
    from dlsched.policies.budget import FLOOR_DECAY
    from dlsched.registry import make_policy

    trace, cluster, speed, Simulation, PolicyContext = busy
    sim = Simulation(trace, cluster, speed, seed=0)
    policy = make_policy(name, budget_ms=1e6)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    policy.place.rate = 300.0                                  # 1,000 s at 300 s a job: the first answer starts 1 to 3
    events = sim.advance(None)
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    before = dict(sim.state().allocation)
    assert 1 <= len(before) <= 3
    policy.floor.rate = 1e3                                    # a floor of 10^3 s a job: past any budget here
    policy.place.rate = 1e-9
    events = sim.advance(1.0)
    state = sim.state()
    decision = policy.schedule(state, events)
    sim.apply(decision, policy.name)
    assert all(decision[j] == pl for j, pl in before.items() if j in decision)
    assert set(before) <= set(decision)                           # nothing completed in 1 s: every job kept
    new = [j for j in decision if j not in before]
    assert new
    waiting = [j for j in state.active.tolist() if j not in before]
    assert policy.last_answer == "kept start, no view"
    # the jobs started: first sizes, and every waiting job shorter at its first size that was left out did not fit
    view = policy.view
    first = {j: state.remaining[j] * view.tau_least(int(policy.index[j])) for j in waiting}
    for j in new:
        assert decision[j].n_workers == trace.jobs[j].min_workers and decision[j].n_ps == (1 if trace.jobs[j].uses_ps else 0)
    free = state.free.sum(axis=0)
    for j in sorted(waiting, key=lambda j: (first[j], j)):
        need = trace.jobs[j].min_workers * state.demand_w[j] + (1 if trace.jobs[j].uses_ps else 0) * state.demand_p[j]
        if np.all(need <= free + 1e-9):
            free = free - need
            assert j in decision                              # admitted, and placed (first fit packs these)
    assert policy.floor.rate == pytest.approx(1e3 * FLOOR_DECAY)
    # a floor far below the budget: the view again
    policy.floor.rate = 1e-12
    events = sim.advance(2.0)
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    assert policy.last_answer != "kept start, no view"

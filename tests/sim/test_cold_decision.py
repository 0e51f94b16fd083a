"""A budgeted policy's first decision (issue 27, "a cold decision within its budget"): nothing kept to fall
back on, thousands of jobs to start. The τ of each kind of job read once (``SpeedView.kinds``), and the answer cut
to the jobs its placement can place in what is left (``placeable_prefix``): budgets on fake clocks, no timings."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.instance.workload import Trace
from dlsched.policies.greedy import _tau_stack
from dlsched.policies.view import instance_view
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.policy import PolicyContext
from dlsched.sim.speed import Noisy, TableSpeed, rate_key
from dlsched.solvers.anytime import placeable_prefix
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.smd import TIE_BREAK, decide, decide_anytime, epoch_core, select_jobs

from tests.sim.test_decision_budget import FrozenBudget


def test_placeable_prefix_is_the_most_jobs_placed_in_time():
    assert placeable_prefix(lambda k: 0.3 * k, 100, 1.0) == 3
    assert placeable_prefix(lambda k: 0.3 * k, 2, 1.0) == 2                 # no more than there are
    assert placeable_prefix(lambda k: 0.3 * k, 100, 0.0) == 0
    assert placeable_prefix(lambda k: [0, 1, 1, 1, 5, 9][k], 5, 1.0) == 3    # a step: the last before it
    assert placeable_prefix(lambda k: 0.0, 7, 0.0) == 7


@pytest.fixture(scope="module")
def scene():
    """60 of DL2's jobs, all waiting at 0 (a backlog), on 4 servers."""
    jobs = tuple(replace(j, arrival=0.0) for j in dl2_trace(60, seed=3).jobs)
    return Trace(jobs, "dl2:60:3 at 0"), dl2_cluster(4)


def test_jobs_of_one_kind_share_their_tau_and_the_stack_is_read_per_job(scene):
    trace, cluster = scene
    view = instance_view(trace.jobs, cluster, TableSpeed())
    kinds = view.kinds
    assert kinds.shape == (60,) and 1 < np.unique(kinds).size < 60
    for a in range(60):
        for b in range(a):
            same = (rate_key(view.speed, trace.jobs[a]) == rate_key(view.speed, trace.jobs[b])
                    and np.array_equal(view.d[a], view.d[b]) and np.array_equal(view.e[a], view.e[b])
                    and view.max_workers[a] == view.max_workers[b] and view.max_ps[a] == view.max_ps[b]
                    and view.min_workers[a] == view.min_workers[b])
            assert (kinds[a] == kinds[b]) == same
    # the stack read per kind is each job's own τ (read here job by job from the speed source)
    stack, shape = _tau_stack(view, np.arange(60))
    for j in range(60):
        P, W = shape[j]
        assert (P, W) == (view.max_ps[j] + 1, view.max_workers[j] + 1)
        p, w = np.meshgrid(np.arange(1, P), np.arange(view.min_workers[j], W), indexing="ij")
        assert np.array_equal(stack[j, 1:P, view.min_workers[j]:W], view.tau(j, w, p))
        assert np.isinf(stack[j, 0]).all() and np.isinf(stack[j, :, :view.min_workers[j]]).all()
    # configurations per kind are each job's own
    count, w, p, tau = view.configurations_of(np.arange(60))
    at = np.concatenate([[0], np.cumsum(count)])
    for j in range(60):
        assert np.array_equal(tau[at[j]:at[j + 1]], view._enumerate(j).tau)


def test_a_job_whose_rate_is_its_own_is_a_kind_of_its_own(scene):
    trace, cluster = scene
    view = instance_view(trace.jobs, cluster, Noisy(TableSpeed(), 0.1, seed=1))
    assert np.unique(view.kinds).size == 60


def _first_call(policy, trace, cluster, speed):
    sim = Simulation(trace, cluster, speed, seed=0)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    return sim, sim.advance(None)


@pytest.mark.parametrize("name", ["fluid", "smd"])
def test_a_first_decision_places_the_jobs_its_budget_can_place(scene, name):
    """A budget of 1,000 s with a placement predicted at 300 s a job: the first answer starts at most 3 jobs (those
    of them the placer fits), the others wait (the real time of the call, far below 300 s, does not change it);
    at 1 ns a job every job it sizes (more than 3 on these 4 servers)."""
    trace, cluster = scene
    speed = TableSpeed()
    sizes = {}
    for rate in (300.0, 1e-9):
        policy = make_policy(name, budget_ms=1e6)
        sim, events = _first_call(policy, trace, cluster, speed)
        policy.place.rate = rate
        decision = policy.schedule(sim.state(), events)
        sim.apply(decision, policy.name)              # the engine checks capacity and sizes
        sizes[rate] = decision
        if name == "fluid":
            assert policy.last_answer == ("kept start" if rate == 300.0 else "lp")
        rec = policy.decision_record
        assert rec.gaps and 0 <= rec.gaps[-1] <= 1 and rec.objectives
    assert 1 <= len(sizes[300.0]) <= 3 < len(sizes[1e-9])
    if name == "fluid":
        # the kept start: the shortest jobs at their first size (one PS, the fewest workers)
        assert all(pl.n_ps == 1 and pl.n_workers == trace.jobs[j].min_workers for j, pl in sizes[300.0].items())


def test_smds_cold_answer_is_the_iterations_cut_with_its_value(scene):
    """With nothing kept and 3.5 s left at 1 s a job, the answer runs the 3 jobs of most saving per share of the
    unbudgeted answer, the others deferred; its objective is its value in the decision's own core."""
    trace, cluster = scene
    view = instance_view(trace.jobs, cluster, TableSpeed())
    active = np.arange(60)
    kw = {"slot_aware": True, "wait_slots": 1.0, "tie_break": TIE_BREAK}

    def place_seconds(alloc):
        return float(np.count_nonzero(alloc[:, 0]))

    dec = decide_anytime(view, active, SolveOptions(threads=1, budget=FrozenBudget(3.5)), place_seconds=place_seconds,
                         costs={}, **kw)
    run = np.flatnonzero(dec.alloc[:, 0] > 0)
    assert run.size == 3
    core = epoch_core(view, select_jobs(view, active), **kw)
    cfg = core.meta["configs"]
    value = 0.0
    for a, j in enumerate(core.meta["jobs"].tolist()):
        cols = np.arange(core.job_ptr[a], core.job_ptr[a + 1])
        at = cols[(cfg[cols, 1] == dec.alloc[j, 0]) & (cfg[cols, 2] == dec.alloc[j, 1])] if dec.alloc[j, 0] else cols[:1]
        assert at.size == 1
        value += float(core.value[at[0]])
    assert dec.objective == pytest.approx(value, rel=1e-9) and dec.bound <= dec.objective
    # nothing left: one job still runs (an empty answer would stall a run with no event to come)
    none = decide_anytime(view, active, SolveOptions(threads=1, budget=FrozenBudget(0.0)), place_seconds=place_seconds,
                          costs={}, **kw)
    assert np.count_nonzero(none.alloc[:, 0]) == 1
    # where the budget does not bind: the unbudgeted decision
    exact, _, _ = decide(view, active, SolveOptions(threads=1), **kw)
    free = decide_anytime(view, active, SolveOptions(threads=1), place_seconds=place_seconds, costs={}, **kw)
    assert np.array_equal(free.alloc, exact)


def test_hetplaces_first_placement_stops_at_the_budget(scene):
    """hetplace's first (full) decision places its answer while the whole call's budget lasts: at 1 µs (spent
    before the placement starts, whatever the machine) one job runs; without a budget every job it admits."""
    trace, cluster = scene
    speed = TableSpeed()
    placed = {}
    for budget in (None, 1e-3):
        policy = make_policy("hetplace", **({} if budget is None else {"budget_ms": budget}))
        sim, events = _first_call(policy, trace, cluster, speed)
        decision = policy.schedule(sim.state(), events)
        sim.apply(decision, policy.name)
        placed[budget] = len(sim.state().allocation)
    assert placed[1e-3] == 1 and placed[None] > 1

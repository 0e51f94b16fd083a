"""hetplace's budgeted decisions over DL2's mix, whose GPU-less PS jobs are outside the §4 model (docs/hetplace.md,
"Decisions within a budget"): a full decision whose placement stops at its clock still places every GPU-less job
that fits; srpt's kept answer stops at its clock though it has started nothing; a budget set after unbudgeted
decisions predicts its first decision from them. No timing: budgets of a nanosecond stand for a spent clock, and
measured times are set by hand."""

import functools

import numpy as np
import pytest

from dlsched.bench.decision import scene
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.placement import consolidated, hold
from dlsched.sim.policy import PolicyContext


@functools.lru_cache(maxsize=None)
def _scene(n):
    return scene("dl2", n, 0)


def _started(n: int, **params):
    """(policy, simulation) after the policy's first decision over the DL2 scene of n jobs."""
    trace, cluster, speed = _scene(n)
    pol = make_policy("hetplace", **params)
    sim = Simulation(trace, cluster, speed, seed=0)
    pol.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    sim.apply(pol.schedule(sim.state(), events), pol.name)
    return pol, sim


def _gpuless(state):
    g = state.cluster.index("gpu")
    active = np.asarray(state.active, dtype=np.int64)
    return active[np.rint(state.demand_w[active, g]) < 1]


@pytest.mark.parametrize("order", ["srpt", "arrival"])
def test_a_placement_past_its_clock_still_places_the_gpuless_jobs_that_fit(order):
    """The placement clock of a budget of a nanosecond is spent before the first job: the GPU jobs' placement stops
    after one (under arrival order too since 2026-11-28: it used to place every GPU job of the answer, past the
    clock), and every GPU-less job that fits the room left runs (they used to wait, all of them)."""
    pol, sim = _started(200, budget_ms=1e-6, order=order)
    state = sim.state()
    assert pol.last_answer == "full"
    other = _gpuless(state)
    g = state.cluster.index("gpu")
    on_gpus = [j for j in state.allocation if state.demand_w[j, g] >= 1]
    assert pol._placement_cut and len(on_gpus) == 1          # the GPU placement was cut
    running = [j for j in other.tolist() if j in state.allocation]
    assert other.size > 20 and len(running) > 20
    for j in other.tolist():
        if j not in state.allocation:                     # it waits: it does not fit the room left at its size
            job = state.jobs[j]
            size = pol._empty.largest(state.demand_w[j], state.demand_p[j], job.min_workers, job.max_workers, 1)[0]
            assert consolidated(state.free, state.demand_w[j], state.demand_p[j], size, 1) is None


def test_the_gpuless_pass_places_as_the_placer_one_job_after_another():
    """:meth:`HetPlace._place_rest` skips a job whose request exceeds the free room summed over the servers: on a
    room filled at random (seeded) until most such jobs do not fit, it places exactly what the placer places job by
    job (``consolidated`` and ``hold``)."""
    pol, sim = _started(400)
    state = sim.state()
    g = state.cluster.index("gpu")
    other = _gpuless(state)
    gpu_job = next(j for j in state.active if state.demand_w[j, g] >= 1 and state.jobs[j].uses_ps)

    def placed_one_by_one(free, jobs):
        want, room = {}, free.copy()
        for j in jobs:
            job = state.jobs[j]
            size = pol._empty.largest(state.demand_w[j], state.demand_p[j], job.min_workers, job.max_workers, 1)[0]
            pl = consolidated(room, state.demand_w[j], state.demand_p[j], size, 1)
            if pl is not None:
                hold(room, pl, state.demand_w[j], state.demand_p[j])
                want[j] = pl
        return want, room

    rng = np.random.default_rng(3)
    free = state.cluster.capacity.astype(float)
    free[:, 0] = rng.choice([0.0, 2.0, 4.0, 6.0, 8.0], size=free.shape[0], p=[0.9, 0.04, 0.03, 0.02, 0.01])
    # and at the edge: a job that does not fit (no free GPU), then one whose request (16 workers and a PS of 2 CPUs)
    # is exactly the free CPUs, which it fits
    edge = state.cluster.capacity.astype(float)
    edge[:, g], edge[:, 1 - g] = 0.0, 0.0
    edge[rng.choice(edge.shape[0], size=17, replace=False), 1 - g] = 2.0
    for room0, jobs in ((free, other.tolist()), (edge, [gpu_job, int(other[0])])):
        want, room = placed_one_by_one(room0, jobs)
        got_free = room0.copy()
        got = pol._place_rest(state, got_free, np.array(jobs))
        assert got == want and np.array_equal(got_free, room)
        assert 0 < len(want) < len(jobs) / 2 + 1
    assert list(want) == [int(other[0])]


def test_the_kept_srpt_answer_stops_at_its_clock_before_starting_a_job():
    """``srpt kept``: the admitted running jobs keep their placements, so a spent placement clock stops the pass
    over the waiting ones at once (it used to try them until one started: 364 waiting DL2 jobs that no longer fit,
    each priced and placed on 3,250 servers, 0.9-1.2 s of CPU under a 10-ms budget)."""
    pol, sim = _started(2000, budget_ms=1e5)
    pol._full_whole = (1e3, 1)                    # a full decision "costs" far more than any budget
    pol._srpt_cost.extend([1e3] * 8)              # and so does placing every admitted job anew
    pol.decision_record.seconds = 1e-9
    before = dict(sim.state().allocation)
    tried = []
    place_one = pol._place_one
    pol._place_one = lambda *a, **k: tried.append(a[2]) or place_one(*a, **k)
    events = sim.advance(1.0)
    decision = pol.schedule(sim.state(), events)
    assert pol.last_answer == "srpt kept"
    assert tried == []
    sim.apply(decision, pol.name)
    g = sim.state().cluster.index("gpu")
    kept = [j for j, pl in before.items() if sim.state().demand_w[j, g] >= 1]
    assert kept and all(sim.state().allocation.get(j) == before[j] for j in kept)


def test_a_budget_set_after_unbudgeted_decisions_is_predicted_from_them():
    """A budget set during a run (as ``dlsched.bench.decision`` sets one after the reference's decision): the last
    unbudgeted full decision measured its least work and kept its prices, so a budget it exceeds gets the anytime
    answer at once, certified over every running GPU job (their paces from the allocation), rather than a full
    decision with nothing measured."""
    pol, sim = _started(2000, order="arrival")
    assert pol._full_cost is not None and pol._prices is None
    pol._full_cost = (1e3, 0.0, 1)               # its least work "took" 1,000 s a job
    pol.decision_record.seconds = 0.1
    before = dict(sim.state().allocation)
    state_events = sim.advance(1.0)
    state = sim.state()
    decision = pol.schedule(state, state_events)
    assert pol.last_answer == "kept"
    assert all(decision[j] == pl for j, pl in before.items())
    g = state.cluster.index("gpu")
    on_gpus = np.array([j for j in decision if state.demand_w[j, g] >= 1])
    assert (pol._pace[on_gpus] > 0).all()
    obj, bound = pol._linear_jct(state, np.fromiter(decision, dtype=np.int64))
    assert pol.decision_record.objectives[-1] == pytest.approx(obj) and 0 < bound < obj

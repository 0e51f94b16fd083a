"""The change-only answer (``Changes``): the engine carries it out as it carries out the whole
allocation it stands for (tests/sim/test_running_sizes.py: FIFO and DRF decide the same by
changes as through their whole ``schedule``)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.policies.drf import DRF
from dlsched.policies.fifo import FIFO
from dlsched.policies.oasis_baselines import FifoPolicy
from dlsched.policies.slotted import Slotted
from dlsched.sim.engine import PolicyError, Simulation, simulate
from dlsched.sim.placement import first_fit
from dlsched.sim.policy import Changes, Decision, Placement, PolicyContext, answers_changes
from tests.sim.helpers import LinearSpeed, cluster, job, trace
from tests.sim.test_baselines import _trace, jobs_st

def test_the_engine_asks_for_changes_only_where_schedule_is_derived_from_them():
    class Whole(FIFO):
        def schedule(self, state, events):
            return super().schedule(state, events)

    assert answers_changes(FIFO()) and answers_changes(DRF())
    assert not answers_changes(Whole())
    assert not answers_changes(FifoPolicy())      # overrides schedule (its admission): called through it


def _view(sim):
    st_ = sim.state()
    return (list(st_.allocation.items()), st_.free.tolist(), st_.running.tolist(), dict(st_.sizes))


@settings(max_examples=60, deadline=None)
@given(rows=jobs_st, servers=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_changes_carry_out_as_the_whole_allocation_they_stand_for(rows, servers, seed):
    """Random starts, moves and stops, given as Changes to one engine and as the whole allocation
    (Changes.applied) to another: the same allocation (in the same order), free capacity, running
    jobs and sizes after every decision, and the same run."""
    tr, cl = _trace(rows), Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8})
    a, b = Simulation(tr, cl, LinearSpeed()), Simulation(tr, cl, LinearSpeed())
    rng = np.random.default_rng(seed)
    a.advance(None)
    b.advance(None)
    while not a.done:
        st_ = a.state()
        alloc = dict(st_.allocation)
        stop = [j for j in alloc if rng.random() < 0.3]
        free = st_.free.copy()
        for j in stop:
            for s, k in alloc[j].workers.items():
                free[s] += k * st_.demand_w[j]
            for s, k in alloc[j].ps.items():
                free[s] += k * st_.demand_p[j]
        place = {}
        for j in rng.permutation(st_.active.tolist()).tolist():
            if j in stop or (j in alloc and rng.random() < 0.7):
                continue                            # kept as it is
            jb = st_.jobs[j]
            if j in alloc:                          # a move: its old placement is released first
                for s, k in alloc[j].workers.items():
                    free[s] += k * st_.demand_w[j]
                for s, k in alloc[j].ps.items():
                    free[s] += k * st_.demand_p[j]
            pl = first_fit(free, st_.demand_w[j], st_.demand_p[j], int(rng.integers(jb.min_workers, jb.max_workers + 1)),
                           1 if jb.uses_ps else 0)
            if pl is None:
                if j in alloc:
                    stop.append(j)                  # its old placement is gone from free: it stops
                continue
            for s, k in pl.workers.items():
                free[s] -= k * st_.demand_w[j]
            for s, k in pl.ps.items():
                free[s] -= k * st_.demand_p[j]
            place[j] = pl
        ch = Changes(place, tuple(stop))
        whole = ch.applied(st_.allocation)
        a.apply(ch)
        b.apply(whole)
        assert _view(a) == _view(b)
        assert list(a.state().allocation) == list(whole)
        ea, eb = a.advance(None), b.advance(None)
        assert ea == eb
        if not ea:
            break
    assert np.array_equal(a.completion, b.completion, equal_nan=True)
    assert np.array_equal(a.first_start, b.first_start, equal_nan=True)


def _started(gpus=4):
    sim = Simulation(trace(job("a", gpus=2), job("b", gpus=2), job("c", gpus=2, arrival=5.0)), cluster(1, gpus), LinearSpeed())
    sim.advance(None)
    sim.apply(Changes({0: _pl(0, 1)}))
    return sim


def _pl(s, k):
    return Placement({s: k})


@pytest.mark.parametrize("changes, message", [
    (Changes({}, (1,)), r"job 1 \(b\) is stopped but does not run"),
    (Changes({0: _pl(0, 1)}, (0,)), r"job 0 \(a\) is both stopped and placed"),
    (Changes({2: _pl(0, 1)}), r"job 2 \(c\) has not arrived"),
    (Changes({1: _pl(0, 2)}), r"job 1 \(b\): 2 workers, outside \[1, 1\]"),
    (Changes({1: _pl(0, 1)}, ()), None),
    (Changes({1: _pl(1, 1)}), r"job 1 \(b\): workers on server 1, which does not exist"),
])
def test_changes_are_checked_job_by_job(changes, message):
    sim = _started()
    if message is None:
        sim.apply(changes, "p")
        assert sorted(sim.state().allocation) == [0, 1]
        return
    before = _view(sim)
    with pytest.raises(PolicyError, match=rf"policy 'p' at t=0s: {message}"):
        sim.apply(changes, "p")
    assert _view(sim) == before


def test_an_over_commit_by_changes_is_refused_and_leaves_the_allocation_as_it_was():
    sim = Simulation(trace(job("a", gpus=3), job("b", gpus=2)), cluster(1, 4), LinearSpeed())
    sim.advance(None)
    sim.apply(Changes({0: _pl(0, 1)}))
    before = _view(sim)
    with pytest.raises(PolicyError, match=r"over-commits server .* in gpu: 5 > capacity 4 \(jobs \[0, 1\]\)"):
        sim.apply(Changes({1: _pl(0, 1)}), "p")
    assert _view(sim) == before
    sim.apply(Changes({1: _pl(0, 1)}, (0,)))        # stopping a makes room for b
    assert list(sim.state().allocation) == [1] and sim.state().free[0, 0] == 2


def test_a_moved_job_restarts_and_keeps_its_place_in_the_allocation():
    sim = Simulation(trace(job("a", gpus=1), job("b", gpus=1)), cluster(2, 4), LinearSpeed(), restart_seconds=2.0)
    sim.advance(None)
    sim.apply(Changes({0: _pl(0, 1), 1: _pl(0, 1)}))
    sim.advance(1.0)
    sim.apply(Changes({0: _pl(1, 1)}))
    assert list(sim.state().allocation) == [0, 1]
    assert sim.state().allocation[0].workers == {1: 1}
    assert sim._resume_of[0] == 3.0 and sim._resume_of[1] == 2.0


def test_changes_with_next_call_wake_the_policy():
    class Timer(FIFO):
        def changes(self, state, events):
            ch = super().changes(state, events)
            return Changes(ch.place, ch.stop, next_call=state.time + 1.0)

    res = simulate(trace(job("a", iterations=3.5)), cluster(1, 4), Timer(), LinearSpeed())
    assert res.completion[0] == 3.5 and len(res.decision_seconds) == 4    # at 0, 1, 2 and 3 s
    # its derived schedule answers the whole allocation with the same next call
    pol = Timer()
    sim = Simulation(trace(job("a")), cluster(1, 4), LinearSpeed())
    pol.reset(PolicyContext(cluster=sim.cluster, speed=sim.speed))
    events = sim.advance(None)
    out = pol.schedule(sim.state(), events)
    assert isinstance(out, Decision) and list(out.placements) == [0] and out.next_call == 1.0


def test_a_slot_grid_over_a_policy_answering_changes_holds_whole_allocations():
    # Slotted reads the inner policy's schedule as the whole allocation of the slot: FIFO's derived
    # schedule keeps job a running when b starts at the boundary (an answer of b alone would stop a)
    pol = Slotted(FIFO(), slot_seconds=1.0)
    res = simulate(trace(job("a", 0.0, 2.5), job("b", 0.5, 1.0)), cluster(1, 4), pol, LinearSpeed())
    assert sorted(pol.history[1]) == [0, 1]
    assert res.completion.tolist() == [2.5, 2.0]

"""The engine's ``running`` and ``sizes`` restate its allocation, and the policies that read them
(the placers' :meth:`add`, DRF's rigid path, FIFO's queue) decide as they do from the allocation
alone; those that answer with :class:`Changes` (FIFO, DRF) decide as through their whole ``schedule``."""

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.policies.drf import DRF
from dlsched.policies.fifo import FIFO
from dlsched.policies.srtf import SRTF
from dlsched.policies.tetris import Tetris
from dlsched.sim.engine import Simulation, simulate
from dlsched.sim.policy import PolicyContext
from tests.sim.helpers import LinearSpeed
from tests.sim.test_baselines import _trace, jobs_st
from tests.sim.test_fast_baselines import _unit_trace, unit_jobs

POLICIES = {"fifo": FIFO, "drf": DRF, "srtf": SRTF, "tetris": Tetris}


def _blind(cls):
    """The policy given states without ``running`` and ``sizes`` (as one built by hand): its general path."""

    class Blind(cls):
        def schedule(self, state, events):
            return super().schedule(dataclasses.replace(state, running=None, sizes=None), events)

    return Blind


def _whole(cls):
    """The policy answering through its whole ``schedule``: the engine gets whole allocations, not Changes."""

    class Whole(cls):
        def schedule(self, state, events):
            return super().schedule(state, events)

    return Whole


OTHERS = {"blind": _blind, "whole": _whole}


def _same(tr, cl, name, placer, other):
    a = simulate(tr, cl, POLICIES[name](placer), LinearSpeed())
    b = simulate(tr, cl, OTHERS[other](POLICIES[name])(placer), LinearSpeed())
    assert np.array_equal(a.first_start, b.first_start, equal_nan=True)
    assert np.array_equal(a.completion, b.completion, equal_nan=True)
    assert a.n_events == b.n_events


@settings(max_examples=60, deadline=None)
@given(rows=jobs_st, servers=st.integers(1, 3), name=st.sampled_from(sorted(POLICIES)),
       placer=st.sampled_from(["consolidated", "first_fit"]), other=st.sampled_from(sorted(OTHERS)))
def test_policies_decide_as_from_the_allocation_alone(rows, servers, name, placer, other):
    _same(_trace(rows), Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8}), name, placer, other)


@settings(max_examples=60, deadline=None)
@given(rows=unit_jobs, rigid=st.booleans(), servers=st.integers(1, 3), gpus=st.sampled_from([2, 3, 4]),
       name=st.sampled_from(sorted(POLICIES)), placer=st.sampled_from(["consolidated", "first_fit"]),
       other=st.sampled_from(sorted(OTHERS)))
def test_policies_decide_as_from_the_allocation_alone_on_unit_tasks(rows, rigid, servers, gpus, name, placer, other):
    # rigid unit tasks: DRF's path that places only the jobs it starts (of one size each: only
    # those after the running ones are passed over)
    _same(_unit_trace(rows, rigid), Cluster.homogeneous(servers, {"gpu": gpus, "cpu": 2}), name, placer, other)


@settings(max_examples=30, deadline=None)
@given(rows=jobs_st, servers=st.integers(1, 3), name=st.sampled_from(sorted(POLICIES)))
def test_running_and_sizes_restate_the_allocation(rows, servers, name):
    sim = Simulation(_trace(rows), Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8}), LinearSpeed())
    pol = POLICIES[name]()
    pol.reset(PolicyContext(cluster=sim.cluster, speed=sim.speed))
    events = sim.advance(None)
    while not sim.done:
        st_ = sim.state()
        assert st_.running.tolist() == sorted(st_.allocation)
        assert dict(st_.sizes) == {j: (pl.n_workers, pl.n_ps) for j, pl in st_.allocation.items()}
        sim.apply(pol.schedule(st_, events))
        events = sim.advance(None)
        if not events:
            break

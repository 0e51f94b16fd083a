"""The simple policies' vectorised steps decide exactly as their definitions' loops (bit for bit)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.policies.bundles import take_in_order
from dlsched.policies.drf import DRF, drf_fill, packed, unit_tasks
from dlsched.policies.srtf import SRTF
from dlsched.sim.engine import Simulation, simulate
from dlsched.sim.placement import EPS
from tests.sim.helpers import LinearSpeed
from tests.sim.test_baselines import _trace, jobs_st


def _loop(need, avail):
    avail = avail.copy()
    out = []
    for k in range(need.shape[0]):
        if (need[k] <= avail + EPS).all():
            avail -= need[k]
            out.append(k)
    return out


amounts = st.one_of(st.sampled_from([0.0, 0.1, 0.2, 0.3, 1.0, 2.0, 0.5 + EPS / 2]), st.floats(0, 3))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(amounts, amounts), max_size=40), avail=st.tuples(st.floats(0, 10), st.floats(0, 10)))
def test_take_in_order_is_the_greedy_loop(rows, avail):
    # fractional amounts (0.1 + 0.2 ...) make a sum of the rows round differently from subtracting them in turn
    need = np.array(rows, dtype=float).reshape(-1, 2)
    a = np.array(avail)
    assert np.flatnonzero(take_in_order(need, a)).tolist() == _loop(need, a)


def test_take_in_order_subtracts_in_turn():
    # 1 - 0.1 - 0.3 leaves 0.6 - 1e-16 less than 1 - (0.1 + 0.3): a last row of exactly what the loop
    # leaves + EPS fits there and not with a sum of the rows
    need = np.array([[0.1], [0.3], [0.6000000010000001]])
    assert _loop(need, np.array([1.0])) == [0, 1, 2]
    assert take_in_order(need, np.array([1.0])).tolist() == [True, True, True]


class _LoopSRTF(SRTF):
    """SRTF as MODELS.md §7 states it: one job at a time in order of remaining time."""

    def schedule(self, state, events):
        cand = state.active
        if not cand.size:
            return {}
        T = self.remaining_time(state, cand)
        avail = self.total.astype(float).copy()
        sizes = {}
        for j in cand[np.argsort(T, kind="stable")].tolist():
            w, p, _ = self.full(state, j)
            need = w * state.demand_w[j] + p * state.demand_p[j]
            if (need <= avail + EPS).all():
                avail -= need
                sizes[j] = (w, p)
        return self.placer.place(state, sizes)


@settings(max_examples=30, deadline=None)
@given(rows=jobs_st, servers=st.integers(1, 3), placer=st.sampled_from(["consolidated", "first_fit"]))
def test_srtf_decides_as_its_loop(rows, servers, placer):
    tr = _trace(rows)
    cl = Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8})
    a = simulate(tr, cl, SRTF(placer), LinearSpeed())
    b = simulate(tr, cl, _LoopSRTF(placer), LinearSpeed())
    assert np.array_equal(a.first_start, b.first_start, equal_nan=True)
    assert np.array_equal(a.completion, b.completion, equal_nan=True)


class _PoolDRF(DRF):
    """DRF with every grant placed on a tentative copy of the servers, whatever the tasks."""

    def schedule(self, state, events):
        sizes, tentative = drf_fill(state, self.candidates(state, events), self.total, state.cluster.capacity, self._memo)
        return packed(self.placer.place(state, sizes), sizes, tentative)


unit_jobs = st.lists(st.tuples(st.floats(0, 20), st.floats(0.5, 30), st.integers(1, 3), st.integers(0, 3),
                               st.sampled_from(["gpu", "cpu"]), st.integers(0, 2)), min_size=1, max_size=10)


def _unit_trace(rows, rigid):
    out = []
    for i, (a, k, lo, extra, ps_res, ps) in enumerate(sorted(rows, key=lambda r: r[0])):
        out.append(Job(f"j{i}", a, "toy", k, {"gpu": 1}, {ps_res: 1} if ps else {},
                       min_workers=lo, max_workers=lo if rigid else lo + extra, max_ps=ps))
    return Trace(tuple(out), "<unit>")


@settings(max_examples=40, deadline=None)
@given(rows=unit_jobs, rigid=st.booleans(), servers=st.integers(1, 3), gpus=st.sampled_from([2, 3, 4]),
       placer=st.sampled_from(["consolidated", "first_fit"]), incremental=st.booleans())
def test_drf_on_unit_tasks_decides_as_with_the_servers(rows, rigid, servers, gpus, placer, incremental):
    tr = _unit_trace(rows, rigid)
    cl = Cluster.homogeneous(servers, {"gpu": gpus, "cpu": 2})
    fast = DRF(placer, incremental)
    res = [simulate(tr, cl, pol, LinearSpeed()) for pol in (fast, _PoolDRF(placer, incremental))]
    if fast._shape is not None:          # None: no job fits the cluster, DRF was never asked
        assert fast._shape[1:3] == (True, rigid or all(r[3] == 0 for r in rows))
    assert np.array_equal(res[0].first_start, res[1].first_start, equal_nan=True)
    assert np.array_equal(res[0].completion, res[1].completion, equal_nan=True)


def test_unit_tasks_are_one_unit_of_one_resource_on_whole_servers():
    def state(worker, servers):
        tr = Trace((Job("a", 0.0, "toy", 1.0, worker),), "<t>")
        sim = Simulation(tr, servers, LinearSpeed())
        return sim.state()
    whole = Cluster.homogeneous(2, {"gpu": 4, "cpu": 8})
    assert unit_tasks(state({"gpu": 1}, whole))
    assert not unit_tasks(state({"gpu": 1, "cpu": 1}, whole))       # two resources: a server may have one and not the other
    assert not unit_tasks(state({"gpu": 2}, whole))                 # two units: 3 free on each of 2 servers hold 2 tasks, not 3
    assert not unit_tasks(state({"gpu": 1}, Cluster.homogeneous(2, {"gpu": 2.5, "cpu": 8})))

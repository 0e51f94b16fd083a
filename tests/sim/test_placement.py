"""The shared placers: first fit, fewest servers, PS/worker packing, keep-or-shrink."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.sim.engine import Simulation, simulate
from dlsched.sim.placement import Consolidated, ConsolidatedPool, consolidated, first_fit, fit, hold, task_slots
from dlsched.registry import make_policy
from dlsched.sim.policy import Placement
from tests.sim.helpers import LinearSpeed, cluster, job, trace

W = np.array([1.0, 2.0])       # a worker: 1 GPU, 2 CPUs
P = np.array([0.0, 2.0])       # a PS: 2 CPUs


def test_task_slots():
    free = np.array([[2.0, 8.0], [0.0, 8.0], [4.0, 3.0]])
    assert task_slots(free, W).tolist() == [2, 0, 1]
    assert task_slots(free, P).tolist() == [4, 4, 1]


def test_first_fit_and_fewest_servers():
    free = np.array([[1.0, 8.0], [2.0, 8.0], [4.0, 8.0]])
    assert first_fit(free, W, P, 3, 0) == Placement({0: 1, 1: 2})
    assert consolidated(free, W, P, 3, 0) == Placement({2: 3})
    assert first_fit(free, W, P, 8, 0) is None


@settings(max_examples=200, deadline=None)
@given(free=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 8)), min_size=1, max_size=6),
       worker=st.sampled_from([(1.0, 2.0), (1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (0.5, 1.5)]),
       n_workers=st.integers(0, 6), n_ps=st.integers(0, 2))
def test_fewest_servers_is_the_fit_over_the_servers_sorted_by_slots(free, worker, n_workers, n_ps):
    # consolidated answers the one-server case without sorting: the same as the fit in sorted order
    free, dw = np.array(free, dtype=float), np.array(worker)
    order = np.argsort(-task_slots(free, dw), kind="stable")
    assert consolidated(free, dw, P, n_workers, n_ps) == fit(free, dw, P, n_workers, n_ps, order)


def test_workers_first_when_pss_crowd_them_out():
    # 4 servers of 2 GPUs and 8 CPUs; 8 workers + 8 PSs fit only as 2 + 2 per server
    free = np.tile([2.0, 8.0], (4, 1))
    pl = consolidated(free, W, P, 8, 8)
    assert pl is not None and pl.n_workers == 8 and pl.n_ps == 8
    assert all(pl.workers[s] == 2 and pl.ps[s] == 2 for s in range(4))


def test_placer_keeps_unchanged_sizes_and_shrinks_what_does_not_pack():
    tr = trace(job("a", 0.0, 10.0, max_workers=4), job("b", 0.0, 10.0, min_workers=1, max_workers=6))
    sim = Simulation(tr, cluster(servers=2, gpus=4, cpus=8), LinearSpeed())
    sim.advance()
    sim.apply({0: Placement({0: 2})}, "t")
    st = sim.state()
    out = Consolidated().place(st, {0: (2, 0), 1: (6, 0)})
    assert out[0] is st.allocation[0]                     # same size: the same object, no restart
    assert out[1].n_workers == 6 and out[1].servers == frozenset({0, 1})
    out = Consolidated().place(st, {0: (3, 0), 1: (6, 0)})   # a grows to 3: 5 GPUs left, b shrunk to 5
    assert out[0].n_workers == 3 and out[0] is not st.allocation[0] and out[1].n_workers == 5


def test_a_task_that_needs_nothing_fits_on_any_number_of_servers():
    # the "fits any number of times" count once overflowed int64 when summed over 5+ servers: such a
    # job was reported unschedulable ("its PS fits on no server") and a zero-demand PS never placed
    free = np.tile([4.0, 8.0], (7, 1))
    assert first_fit(free, np.zeros(2), np.zeros(2), 3, 0) == Placement({0: 3})
    assert first_fit(free, W, np.zeros(2), 6, 2) == Placement({0: 4, 1: 2}, {0: 2})
    tr = Trace((Job("none", 0.0, "toy", 10.0, {}), Job("ps0", 0.0, "toy", 10.0, {"gpu": 1}, {}, max_ps=1)), "<test>")
    for name in ("fifo", "srtf", "drf", "tetris"):
        res = simulate(tr, Cluster.homogeneous(6, {"gpu": 4, "cpu": 8}), make_policy(name), LinearSpeed())
        assert res.status == "completed" and not res.unschedulable and res.completion.tolist() == [10.0, 10.0], name


class _FewClasses(ConsolidatedPool):
    CLASSES = 3                 # falls back to consolidated itself once the rows fragment


AMOUNTS = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]
ROWS = [0.0, 0.5, 1.0, 2.0, 2.5, 4.0, 8.0]
vec3 = st.lists(st.sampled_from(AMOUNTS), min_size=3, max_size=3)


@settings(max_examples=200, deadline=None)
@given(S=st.integers(1, 30), R=st.integers(1, 3), rows=st.lists(st.lists(st.sampled_from(ROWS), min_size=3, max_size=3), min_size=1, max_size=3),
       kinds=st.lists(st.integers(0, 2), min_size=30, max_size=30), demands=st.lists(st.tuples(vec3, vec3), min_size=1, max_size=3),
       requests=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 7), st.integers(0, 2), st.integers(-1, 29)), min_size=1, max_size=40),
       few=st.booleans())
def test_consolidated_pool_places_and_holds_as_consolidated(S, R, rows, kinds, demands, requests, few):
    """A sequence of requests on servers of a few kinds (the classes), some rows changed by the caller in
    between (``refresh``): every answer is consolidated's on the same free capacity, its servers in the
    same order, and the free capacity after each hold the same bit for bit."""
    free = np.array([rows[kinds[s] % len(rows)][:R] for s in range(S)], dtype=float)
    ref = free.copy()
    pool = (_FewClasses if few else ConsolidatedPool)(free)
    for u, k, q, touch in requests:
        dw, dp = (np.array(x[:R]) for x in demands[u % len(demands)])
        want = consolidated(ref, dw, dp, k, q)
        got = pool.fit(dw, dp, k, q)
        assert got == want
        if want is not None:
            assert list(got.workers) == list(want.workers) and list(got.ps) == list(want.ps)
            hold(ref, want, dw, dp)
            pool.hold(got, dw, dp)
        if 0 <= touch < S:               # the caller takes a worker's room on one server itself
            ref[touch] -= dw
            free[touch] -= dw
            pool.refresh([touch])
        assert pool.free is free and np.array_equal(free, ref)


def test_consolidated_pool_places_workers_first_when_the_ps_crowds_them_out():
    free = np.array([[1.0, 2.0], [0.0, 1.0], [0.0, 1.0]])   # the PS would take the worker's server first
    dw, dp = np.array([1.0, 2.0]), np.array([0.0, 1.0])
    want = consolidated(free.copy(), dw, dp, 1, 1)
    assert want == Placement({0: 1}, {1: 1})
    assert ConsolidatedPool(free).fit(dw, dp, 1, 1) == want

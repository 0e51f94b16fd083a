"""FIFO, SRTF, DRF and Tetris: hand-computed schedules, and capacity never exceeded on random traces."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job, Trace
from dlsched.sim.engine import simulate
from dlsched.registry import describe_policy, make_policy, POLICIES, policy_names
from dlsched.policies.drf import drf_fill
from tests.sim.helpers import Audit, LinearSpeed, cluster, job, trace

BASELINES = ("fifo", "srtf", "drf", "tetris")


jobs_st = st.lists(st.tuples(st.floats(0, 20), st.floats(0.5, 30), st.sampled_from([1, 2, 4]), st.integers(1, 3),
                             st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=8)


def _trace(rows):
    out = []
    for i, (a, k, g, lo, extra, ps) in enumerate(sorted(rows, key=lambda r: r[0])):
        out.append(Job(f"j{i}", a, "toy", k, {"gpu": g, "cpu": 1}, {"cpu": 2} if ps else {},
                       min_workers=lo, max_workers=lo + extra, max_ps=ps))
    return Trace(tuple(out), "<random>")


@pytest.mark.parametrize("name", BASELINES)
@settings(max_examples=25, deadline=None)
@given(rows=jobs_st, servers=st.integers(1, 3))
def test_baselines_never_exceed_capacity_and_finish_every_job(name, rows, servers):
    tr = _trace(rows)
    cl = Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8})
    audit = Audit(make_policy(name))
    res = simulate(tr, cl, audit, LinearSpeed())
    assert not audit.problems, audit.problems[:3]
    assert res.status == "completed"
    done = res.completed
    assert done.sum() + len(res.unschedulable) == len(tr)
    assert (res.jct[done] >= res.isolated_jct[done] * (1 - 1e-9)).all()   # no run beats running alone at full size


def test_drf_equalises_dominant_shares():
    # 4 GPUs, 8 cpus; a: workers of (1 gpu, 1 cpu) -> gpu-dominant; b: workers of (0.5 gpu, 4 cpu) -> cpu-dominant
    tr = Trace((Job("a", 0, "t", 10, {"gpu": 1, "cpu": 1}, max_workers=8),
                Job("b", 0, "t", 10, {"gpu": 0.5, "cpu": 4}, max_workers=8)), "<t>")
    sim_cluster = Cluster.homogeneous(1, {"gpu": 4, "cpu": 8})
    from dlsched.sim.engine import Simulation

    sim = Simulation(tr, sim_cluster, LinearSpeed())
    sim.advance()
    sizes = drf_fill(sim.state(), sim.active, sim_cluster.total())[0]
    # grants alternate while shares tie: a 1/4 gpu per worker, b 1/2 cpu per worker -> a 2 (share 1/2), b 1 (1/2);
    # a's third worker (3/4 gpu) fits, b's second (cpu 8/8 with a's 3 cpus) does not
    assert sizes == {0: (3, 0), 1: (1, 0)}


def test_drf_gives_ps_jobs_worker_plus_ps_bundles():
    tr = trace(job("a", 0.0, 10.0, max_workers=4, max_ps=2))
    from dlsched.sim.engine import Simulation

    sim = Simulation(tr, cluster(gpus=4, cpus=8), LinearSpeed())
    sim.advance()
    # each worker 1 gpu + 1 cpu, each PS 1 cpu: bundles (1 w + 1 PS), (1 w + 1 PS), then workers only up to 4
    assert drf_fill(sim.state(), sim.active, sim.cluster.total())[0] == {0: (4, 2)}


def test_drf_backfills_what_aggregate_filling_could_not_pack():
    # two 4-GPU servers; a and b hold 3 GPUs each; c (one 2-GPU worker) fits the aggregate 2 free GPUs
    # but no server; d (1 GPU) would wait behind c's aggregate claim without the backfill
    tr = trace(job("a", 0.0, 100.0, gpus=3), job("b", 0.0, 100.0, gpus=3), job("c", 1.0, 5.0, gpus=2),
               job("d", 2.0, 5.0, gpus=1))
    res = simulate(tr, cluster(servers=2, gpus=4), make_policy("drf"), LinearSpeed())
    assert res.first_start.tolist() == [0.0, 0.0, 100.0, 2.0]
    assert res.completion.tolist() == [100.0, 100.0, 105.0, 7.0]


def test_srtf_preempts_for_the_shortest_job():
    tr = trace(job("long", 0.0, 100.0, gpus=4), job("short", 10.0, 5.0, gpus=4))
    res = simulate(tr, cluster(gpus=4), make_policy("srtf"), LinearSpeed())
    assert res.completion.tolist() == [105.0, 15.0]


def test_elastic_jobs_grow_under_drf_and_tetris_but_fixed_ones_keep_their_size():
    tr = trace(job("e", 0.0, 12.0, max_workers=4), job("f", 0.0, 12.0, min_workers=2))
    for name in ("drf", "tetris"):
        res = simulate(tr, cluster(gpus=8), make_policy(name), LinearSpeed())
        # e grows to 4 workers (3 s), f runs its fixed 2 (6 s)
        assert res.completion.tolist() == [3.0, 6.0], name


def test_table_lists_every_policy_and_each_runs():
    """Every policy of the table runs on a small generic trace, or refuses it with an InputError
    naming the policy (policies for one family's traces, e.g. OASiS's, test on their own)."""
    from dlsched.errors import InputError

    assert set(BASELINES) <= set(policy_names())
    tr = trace(job("a", 0.0, 5.0), job("b", 1.0, 3.0, max_workers=2, max_ps=1), job("c", 2.0, 2.0, gpus=2))
    ran = []
    for name in policy_names():
        assert describe_policy(name), name
        assert POLICIES[name].count(":") == 1
        if name == "dl2":   # a trained network knows only DL2's job types: tests/rl/ runs it on DL2's mix
            continue
        try:
            res = simulate(tr, cluster(servers=2), make_policy(name), LinearSpeed(), deadline=60)
        except InputError as exc:
            assert name in str(exc) or make_policy(name).name in str(exc), (name, str(exc))
            continue
        assert res.status == "completed" and res.completed.all(), name
        assert res.policy == make_policy(name).name
        ran.append(name)
    assert set(BASELINES) <= set(ran)


def test_unknown_policy_and_bad_parameters_are_input_errors():
    from dlsched.errors import InputError

    with pytest.raises(InputError, match="one of fifo"):
        make_policy("nope")
    with pytest.raises(InputError, match="an option of policy 'drf'"):
        make_policy("drf", bogus=1)
    with pytest.raises(InputError, match="first_fit"):
        make_policy("drf", placer="random")


def _fifo_reference(jobs, gpus, restart):
    """Strict non-preemptive FIFO on one server of ``gpus`` GPUs, computed without the engine:
    job j starts at the first time >= its arrival and >= the previous job's start at which its
    GPUs are free; it runs ``restart`` seconds idle, then K_j / w_j seconds (1 it/s per worker)."""
    import heapq

    running, free, prev_start, done = [], gpus, 0.0, []
    for arrival, k, g in jobs:
        t = max(arrival, prev_start)
        while True:
            while running and running[0][0] <= t:
                free += heapq.heappop(running)[1]
            if free >= g:
                break
            t = max(t, running[0][0])
        free -= g
        end = t + restart + k / g
        heapq.heappush(running, (end, g))
        prev_start = t
        done.append(end)
    return done


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 30), st.integers(1, 40), st.integers(1, 4)), min_size=1, max_size=10),
       restart=st.sampled_from([0.0, 2.5]))
def test_engine_fifo_matches_an_independent_reference(rows, restart):
    rows = sorted(rows)
    # each job: g workers of 1 GPU (fixed size), K iterations at 1 it/s per worker
    tr = Trace(tuple(Job(f"j{i}", float(a), "toy", float(k), {"gpu": 1}, min_workers=g, max_workers=g)
                     for i, (a, k, g) in enumerate(rows)), "<ref>")
    res = simulate(tr, Cluster.homogeneous(1, {"gpu": 4}), make_policy("fifo"), LinearSpeed(), restart_seconds=restart)
    assert res.completion.tolist() == pytest.approx(_fifo_reference(rows, 4, restart))

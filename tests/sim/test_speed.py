"""Speed sources: each reproduces the data it is built on, and none progresses a job that cannot run."""

import math
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.instance.workload import Job
from dlsched.perf.speeds import read_config_speed
from dlsched.sim.policy import Placement
from dlsched.sim.speed import (SPEEDS, DurationSpeed, LayeredSpeed, Noisy, OptimusSpeed, TableSpeed, ThroughputSpeed,
                               make_speed)

CLUSTER = dl2_cluster(8)


def ps_job(model="resnet-50", **kw):
    return Job("j", 0.0, model, 1000.0, {"cpu": 2, "gpu": 1}, {"cpu": 2}, max_workers=16, max_ps=16, **kw)


def place(p, w):
    return Placement({0: w}, {0: p} if p else {})


@lru_cache(maxsize=1)
def _table() -> TableSpeed:
    return TableSpeed()


@pytest.fixture
def table():
    return _table()


def test_table_reproduces_every_measured_point(table):
    tables, _ = read_config_speed()
    for model, t in tables.items():
        got = np.array([table.rate(ps_job(model), place(int(p), int(w)), CLUSTER) for p, w in zip(t.p, t.w)])
        np.testing.assert_allclose(got, t.g, rtol=1e-9)


def test_table_interpolates_between_neighbours(table):
    # resnext-110 was measured on odd counts only: (2, 2) lies inside the measured square
    t = read_config_speed()[0]["resnext-110"]
    corners = [t.g[(t.p == p) & (t.w == w)][0] for p in (1, 3) for w in (1, 3)]
    r = table.rate(ps_job("resnext-110"), place(2, 2), CLUSTER)
    assert min(corners) <= r <= max(corners)


def test_table_clamps_outside_the_grid(table):
    t = read_config_speed()[0]["resnet-50"]
    far = table.rate(ps_job(), place(100, 200), CLUSTER)
    edge = table.rate(ps_job(), place(int(t.p.max()), int(t.w.max())), CLUSTER)
    assert far == edge


def test_no_worker_or_no_ps_is_rate_zero(table):
    for source in (table, OptimusSpeed(), LayeredSpeed()):
        assert source.rate(ps_job(), place(3, 0), CLUSTER) == 0.0
        assert source.rate(ps_job(), place(0, 3), CLUSTER) == 0.0
        assert source.rate(ps_job(), place(3, 3), CLUSTER) > 0.0


def test_unknown_model_is_an_input_error(table):
    with pytest.raises(InputError, match="alexnet"):
        table.rate(ps_job("alexnet"), place(1, 1), CLUSTER)


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 30), w=st.integers(1, 30), model=st.sampled_from(["resnet-50", "vgg-16", "resnext-110", "inception-bn", "seq2seq",
                                                                               "cnn-text-classification", "dssm", "wlm"]))
def test_table_rate_is_within_the_measured_range(p, w, model):
    t = read_config_speed()[0][model]
    r = _table().rate(ps_job(model), place(p, w), CLUSTER)
    assert t.g.min() - 1e-9 <= r <= t.g.max() + 1e-9


def test_every_dl2_job_type_has_a_table_rate(table):
    for job in dl2_trace(100, seed=0).jobs:
        assert table.rate(job, place(1, 1), CLUSTER) > 0


def test_optimus_speed_is_the_fitted_model():
    from dlsched.perf.optimus_fit import fit_sync

    model = fit_sync(read_config_speed()[0]["vgg-16"])
    got = OptimusSpeed().rate(ps_job("vgg-16"), Placement({0: 2, 1: 3}, {2: 4}), CLUSTER)
    assert got == pytest.approx(float(model.speed(4, 5)[0]))


def test_layered_speed_uses_the_builtin_profile_or_the_jobs_own():
    from dlsched.perf.layered import throughput
    from dlsched.perf.profiles import builtin

    src = LayeredSpeed()
    assert src.rate(ps_job("wlm"), place(2, 5), CLUSTER) == pytest.approx(float(throughput(builtin("wlm"), 160, 5, 2)))
    own = ps_job("mine", meta={"profile": builtin("dssm"), "batch": 64})
    assert src.rate(own, place(3, 2), CLUSTER) == pytest.approx(float(throughput(builtin("dssm"), 64, 2, 3)))
    with pytest.raises(InputError, match="batch"):
        src.rate(ps_job("mine", meta={"profile": builtin("dssm")}), place(1, 1), CLUSTER)


GAVEL_TYPE = "ResNet-50 (batch size 64)"
HET = Cluster.from_groups([(1, {"gpu": 8}, "v100"), (1, {"gpu": 8}, "K80")])


def gavel_job(n):
    return Job("g", 0.0, GAVEL_TYPE, 1e4, {"gpu": 1}, min_workers=n, max_workers=n)


def test_throughput_on_one_gpu_type_is_gavels_measurement():
    from dlsched.perf.throughputs import load_gavel

    steps = load_gavel().steps
    src = ThroughputSpeed()
    for n in (1, 2, 4, 8):
        assert src.rate(gavel_job(n), Placement({0: n}), HET) == pytest.approx(steps[(GAVEL_TYPE, "v100", n)])


def test_heterogeneous_placement_sums_per_worker_throughputs():
    from dlsched.perf.throughputs import calibrate, load_gavel

    steps = load_gavel().steps
    src = ThroughputSpeed()
    r = src.rate(gavel_job(4), Placement({0: 3, 1: 1}), HET)
    assert r == pytest.approx(3 * steps[(GAVEL_TYPE, "v100", 4)] / 4 + steps[(GAVEL_TYPE, "k80", 4)] / 4)
    # a scale factor Gavel did not measure uses the calibrated model n / (t(1) + c f(n)) (§4.1)
    r3 = src.rate(gavel_job(3), Placement({0: 3}), HET)
    c = calibrate(load_gavel()).comm_seconds[GAVEL_TYPE]
    assert r3 == pytest.approx(3 / (1 / steps[(GAVEL_TYPE, "v100", 1)] + c * 2 * 2 / 3))
    assert steps[(GAVEL_TYPE, "v100", 1)] < r3 < 3 * steps[(GAVEL_TYPE, "v100", 1)]


def test_mixed_types_run_at_the_slowest_workers_pace_when_asked():
    from dlsched.perf.throughputs import load_gavel

    steps = load_gavel().steps
    avg, slow = ThroughputSpeed(), ThroughputSpeed(mixed="slowest")
    mixed = Placement({0: 3, 1: 1})
    assert slow.rate(gavel_job(4), mixed, HET) == pytest.approx(4 * steps[(GAVEL_TYPE, "k80", 4)] / 4)
    assert slow.rate(gavel_job(4), mixed, HET) < avg.rate(gavel_job(4), mixed, HET)
    for n in (1, 2, 4, 8):  # on one GPU type the two rules agree
        assert slow.rate(gavel_job(n), Placement({0: n}), HET) == avg.rate(gavel_job(n), Placement({0: n}), HET)


def test_a_failed_measurement_cannot_run_when_asked():
    table = ThroughputSpeed().table
    resnet128 = "ResNet-50 (batch size 128)"
    assert (resnet128, "k80", 2) in table.failed and (resnet128, "k80", 1) in table.steps
    job = Job("r", 0.0, resnet128, 1000.0, {"gpu": 1}, max_workers=8)
    on_k80 = Placement({1: 2})
    assert ThroughputSpeed().rate(job, on_k80, HET) > 0                            # the calibrated model
    assert ThroughputSpeed(failed="cannot-run").rate(job, on_k80, HET) == 0.0      # as Gavel's file says
    assert ThroughputSpeed(failed="cannot-run").rate(job, Placement({1: 1}), HET) == pytest.approx(table.steps[(resnet128, "k80", 1)])
    # a worker that cannot run stalls the whole synchronous job, a share of the average otherwise
    both = Placement({0: 2, 1: 2})
    assert ThroughputSpeed(mixed="slowest", failed="cannot-run").rate(job, both, HET) == 0.0
    assert ThroughputSpeed(failed="cannot-run").rate(job, both, HET) == pytest.approx(2 * table.steps[(resnet128, "v100", 4)] / 4)


@pytest.mark.parametrize("kw, field", [({"mixed": "fastest"}, "mixed"), ({"failed": "skip"}, "failed")])
def test_throughput_options_are_checked(kw, field):
    with pytest.raises(InputError, match=field):
        ThroughputSpeed(**kw)


def test_throughput_unknown_gpu_type_is_an_input_error():
    c = Cluster.homogeneous(1, {"gpu": 8}, gpu_type="A10")
    with pytest.raises(InputError, match="A10"):
        ThroughputSpeed().rate(gavel_job(1), Placement({0: 1}), c)


def test_duration_speed_reproduces_the_recorded_duration():
    job = Job("t", 0.0, "x", 500.0, {"gpu": 1}, min_workers=4, max_workers=4, meta={"duration": 250.0})
    c = Cluster.homogeneous(1, {"gpu": 8})
    assert DurationSpeed().rate(job, Placement({0: 4}), c) * 250.0 == pytest.approx(500.0)
    assert DurationSpeed().rate(job, Placement({0: 2}), c) == pytest.approx(1.0)
    with pytest.raises(InputError, match="duration"):
        DurationSpeed().rate(Job("u", 0.0, "x", 5.0, {"gpu": 1}), Placement({0: 1}), c)


def test_noise_is_seeded_per_job_and_allocation(table):
    jobs = dl2_trace(300, seed=0).jobs
    a, b, c = Noisy(table, 0.2, seed=1), Noisy(table, 0.2, seed=1), Noisy(table, 0.2, seed=2)
    ra = [a.rate(j, place(1, 2), CLUSTER) for j in jobs]
    assert ra == [b.rate(j, place(1, 2), CLUSTER) for j in jobs]
    assert ra != [c.rate(j, place(1, 2), CLUSTER) for j in jobs]
    assert a.rate(jobs[0], place(1, 2), CLUSTER) == ra[0]          # asked again: same draw
    assert a.factor(jobs[0], place(1, 2)) != a.factor(jobs[0], place(2, 2))
    factors = np.array([a.factor(j, place(1, 2)) for j in jobs])
    assert np.mean(factors) == pytest.approx(1.0, abs=0.05)        # mean-one lognormal
    assert np.std(np.log(factors)) == pytest.approx(0.2, rel=0.15)
    assert a.rate(jobs[0], place(0, 2), CLUSTER) == 0.0


def test_make_speed_names_and_errors():
    assert set(SPEEDS) >= {"table", "layered", "optimus", "throughput"}
    assert isinstance(make_speed("table"), TableSpeed)
    noisy = make_speed("optimus", noise=0.1, seed=3)
    assert isinstance(noisy, Noisy) and isinstance(noisy.source, OptimusSpeed) and noisy.seed == 3
    with pytest.raises(InputError, match="--speed"):
        make_speed("magic")
    assert make_speed("throughput", mixed="slowest").mixed == "slowest"
    with pytest.raises(InputError, match="--speed-param overlap"):
        make_speed("throughput", overlap="none")
    with pytest.raises(InputError):
        Noisy(make_speed("table"), math.nan)


def test_vectorised_table_speeds_match_single_rates(table):
    P, W = np.meshgrid(np.arange(0, 20), np.arange(0, 14), indexing="ij")
    grid = table.speeds("seq2seq", P, W)
    assert grid.shape == P.shape and (grid[0] == 0).all() and (grid[:, 0] == 0).all()
    for p, w in [(1, 1), (4, 7), (19, 13)]:
        assert grid[p, w] == pytest.approx(table.rate(ps_job("seq2seq"), place(p, w), CLUSTER))


def test_every_gavel_trace_job_has_a_throughput_on_each_gpu_type():
    from dlsched.instance.cluster_spec import gavel_cluster
    from dlsched.instance.traces import gavel_traces, load_gavel_trace

    src, cluster = ThroughputSpeed(), gavel_cluster("8:8:8", gpus_per_server=8)
    kinds = {(j.job_type, j.max_workers) for p in gavel_traces() for j in load_gavel_trace(p).jobs}
    for job_type, n in kinds:
        for s in range(3):     # one server per GPU type: a job of n workers all on it
            job = Job("g", 0.0, job_type, 1.0, {"gpu": 1}, min_workers=n, max_workers=n)
            assert src.rate(job, Placement({s: n}), cluster) > 0


def test_dl2_jobs_take_as_long_as_in_dl2s_simulator(table):
    # DL2 advances a job by S(p, w) * dt / epoch_size epochs (S = measured samples/s), so a job of
    # E epochs at a measured (p, w) takes E * epoch_size / S(p, w) seconds
    from dlsched.instance.synthetic import read_dl2_job_types

    epoch_size = {t.model: t.epoch_size for t in read_dl2_job_types()}
    tables = read_config_speed()[0]
    for job in dl2_trace(40, seed=9).jobs:
        t = tables[job.job_type]
        p, w, S = int(t.p[3]), int(t.w[3]), t.speed[3]
        seconds = job.iterations / table.rate(job, place(p, w), CLUSTER)
        assert seconds == pytest.approx(job.meta["epochs"] * epoch_size[job.job_type] / S, rel=1e-9)

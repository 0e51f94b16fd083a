"""Seeded synthetic traces: DL2's job mix and the generic Poisson trace."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.instance.synthetic import (_JOB_TYPE_COLUMNS, DL2_MAX_EPOCHS, converged_step, convergence_curve, dl2_cluster, dl2_trace,
                                        poisson_trace, read_dl2_job_types)
from dlsched.perf.speeds import read_config_speed


def test_dl2_trace_is_seeded():
    a, b, c = dl2_trace(50, seed=3), dl2_trace(50, seed=3), dl2_trace(50, seed=4)
    key = lambda t: [(j.arrival, j.job_type, j.iterations) for j in t.jobs]
    assert key(a) == key(b)
    assert key(a) != key(c)


def test_dl2_trace_follows_the_job_type_table(data):
    types = {t.model: t for t in read_dl2_job_types()}
    tables, _ = read_config_speed()
    trace = dl2_trace(400, seed=0)
    assert len(trace) == 400 and {j.job_type for j in trace.jobs} == set(types)
    for job in trace.jobs:
        t = types[job.job_type]
        # K = E * epoch_size / B, E within ±10% of the type's fraction of 30,000 epochs
        assert job.iterations_per_epoch == pytest.approx(t.epoch_size / tables[job.job_type].batch)
        assert job.epochs == pytest.approx(job.meta["epochs"])
        assert 0.9 * t.epochs_fraction_of_max * DL2_MAX_EPOCHS <= job.epochs <= 1.1 * t.epochs_fraction_of_max * DL2_MAX_EPOCHS
        assert job.uses_ps and job.max_ps == 16 and job.max_workers == 16 and job.min_workers == 1
        assert job.worker_demand == {"cpu": t.worker_cpu_slots, "gpu": t.worker_gpu_slots / 4}
        assert job.ps_demand == {"cpu": t.ps_cpu_slots}


def test_cpu_only_types_need_no_gpu():
    trace = dl2_trace(200, seed=1)
    cpu = {j.job_type for j in trace.jobs if j.worker_demand["gpu"] == 0}
    assert cpu == {"cnn-text-classification", "dssm"}


def test_poisson_arrivals_have_the_requested_rate():
    trace = dl2_trace(4000, seed=2, arrival_rate=0.01)
    gaps = np.diff([0.0] + [j.arrival for j in trace.jobs])
    assert gaps.mean() == pytest.approx(100.0, rel=0.06)
    # exponential gaps: standard deviation equals the mean
    assert gaps.std() == pytest.approx(100.0, rel=0.08)


def test_slotted_arrivals_fall_on_slot_starts():
    trace = dl2_trace(3000, seed=0, slot_seconds=1200.0)
    assert all(j.arrival % 1200.0 == 0 for j in trace.jobs)
    # a Poisson number per slot, mean 3 (DL2's default): the variance equals the mean
    slots = np.array([j.arrival for j in trace.jobs]) // 1200.0
    counts = np.bincount(slots.astype(int))[:-1]          # the last slot may be cut short
    assert counts.mean() == pytest.approx(3.0, rel=0.06) and counts.var() == pytest.approx(3.0, rel=0.15)
    with pytest.raises(InputError, match="slot_seconds"):
        dl2_trace(5, seed=0, slot_seconds=0.0)


def test_each_job_converges_at_its_iterations():
    for job in dl2_trace(40, seed=5).jobs:
        k = converged_step(job.convergence, job.meta["convergence_delta"], job.meta["convergence_window"])
        assert k == pytest.approx(job.iterations, rel=1e-9)
        # the loss still improves by more than delta over a window just before, by less just after
        W = job.meta["convergence_window"]
        gain = lambda k: job.convergence.loss(k - W) - job.convergence.loss(k)
        assert gain(0.99 * job.iterations) > job.meta["convergence_delta"] > gain(1.01 * job.iterations)


@settings(max_examples=60, deadline=None)
@given(K=st.floats(10, 1e7), wf=st.floats(1e-3, 0.5), r=st.floats(1e-3, 0.9), l0=st.floats(0.2, 20), fl=st.floats(0, 0.19))
def test_convergence_curve_inverse(K, wf, r, l0, fl):
    curve, delta = convergence_curve(K, wf * K, r, l0, fl)
    assert curve.loss(0) == pytest.approx(l0)
    assert (curve.loss(K) - fl) / (l0 - fl) == pytest.approx(r)
    assert converged_step(curve, delta, wf * K) == pytest.approx(K, rel=1e-6)


def test_dl2_cluster_matches_dl2_nodes():
    c = dl2_cluster(500)
    assert c.n_servers == 500
    assert c.capacity[0, c.index("cpu")] == 8 and c.capacity[0, c.index("gpu")] == 2
    assert c.total()[c.index("gpu")] == 1000


def test_poisson_trace_fixed_sizes_and_durations():
    t = poisson_trace(500, seed=7, gpus=(1, 4), mean_duration=100.0, sigma=0.5)
    sizes = {j.max_workers for j in t.jobs}
    assert sizes == {1, 4} and all(j.min_workers == j.max_workers for j in t.jobs)
    assert all(j.iterations == j.meta["duration"] for j in t.jobs)
    assert np.mean([j.meta["duration"] for j in t.jobs]) == pytest.approx(100.0, rel=0.1)
    assert [j.arrival for j in t.jobs] == [j.arrival for j in poisson_trace(500, seed=7, gpus=(1, 4)).jobs]


@pytest.mark.parametrize("kw", [dict(n_jobs=0), dict(arrival_rate=0.0), dict(arrival_rate=math.inf),
                                dict(types=("alexnet",)), dict(length_jitter=1.5)])
def test_bad_arguments_are_input_errors(kw):
    args = dict(n_jobs=5, seed=0) | kw
    with pytest.raises(InputError):
        dl2_trace(**args)


def test_bad_job_type_file(tmp_path):
    p = tmp_path / "jt.csv"
    p.write_text("model,local_comp_time_s\nresnet-50,0.4\n")
    with pytest.raises(InputError, match="line 1"):
        read_dl2_job_types(p)
    p.write_text(",".join(_JOB_TYPE_COLUMNS) + "\nresnet-50," + ",".join(["1"] * 9) + ",nan\n")
    with pytest.raises(InputError, match="line 2"):
        read_dl2_job_types(p)

"""Tiresias's 2D-LAS (dlsched/policies/tiresias.py): hand-computed schedules on one GPU, where the
queues, the timers between events and the starvation rule each decide who runs."""

import pytest

from dlsched.errors import InputError
from dlsched.policies.tiresias import Tiresias
from dlsched.sim.engine import simulate
from tests.sim.helpers import LinearSpeed, cluster, job, trace

ONE_GPU = cluster(1, gpus=1)


def completions(policy, *jobs):
    res = simulate(trace(*jobs), ONE_GPU, policy, LinearSpeed())
    assert res.status == "completed"
    return dict(zip(res.names, res.completion.tolist())), dict(zip(res.names, res.first_start.tolist()))


def test_a_newcomer_preempts_a_job_that_left_the_first_queue():
    # A: queue 0 until 50 GPU-s, then queue 1; B arrives at 100 in queue 0 and preempts it
    done, _ = completions(Tiresias(queue_limits=(50,)), job("A", 0, 200), job("B", 100, 10))
    assert done == pytest.approx({"A": 210, "B": 110})


def test_demotion_happens_between_events():
    # no arrival or completion at 30: only the policy's timer demotes A and lets C start then;
    # at 60 C joins queue 1 behind A, which runs to its end
    done, start = completions(Tiresias(queue_limits=(30,)), job("A", 0, 100), job("C", 0, 100))
    assert start["C"] == pytest.approx(30)
    assert done == pytest.approx({"A": 130, "C": 200})


def test_attained_service_counts_gpus():
    # a 2-GPU job reaches 40 GPU-s after 20 s, a 1-GPU job after 40 s
    two = cluster(1, gpus=2)
    res = simulate(trace(job("wide", 0, 100, gpus=2), job("narrow", 5, 100)), two, Tiresias(queue_limits=(40,)), LinearSpeed())
    start = dict(zip(res.names, res.first_start.tolist()))
    assert start["narrow"] == pytest.approx(20)


def test_starvation_sends_a_waiting_job_back_to_the_first_queue():
    jobs = (job("A", 0, 100), job("B", 5, 100))
    done, _ = completions(Tiresias(queue_limits=(10,)), *jobs)
    assert done == pytest.approx({"A": 110, "B": 200})
    # with the knob at 1 a job that waited as long as it ran is promoted: A and B take turns of 10 s
    done, _ = completions(Tiresias(queue_limits=(10,), starvation=1.0), *jobs)
    assert done == pytest.approx({"A": 190, "B": 200})


@pytest.mark.parametrize("kw, field", [({"queue_limits": (0,)}, "queue_limits"), ({"queue_limits": (5, "x")}, "queue_limits"),
                                       ({"starvation": -1}, "starvation"), ({"starvation": float("nan")}, "starvation")])
def test_bad_parameters_name_the_field(kw, field):
    with pytest.raises(InputError, match=field):
        Tiresias(**kw)


def test_thresholds_are_taken_in_increasing_order():
    assert Tiresias(queue_limits=(7200, 3250, 7200)).limits.tolist() == [3250, 7200, float("inf")]


def test_jobs_left_waiting_move_behind_the_running_ones():
    # W (2 GPUs) cannot start while R1 runs; R2 behind it can, and W moves behind R2, so when R1
    # ends W waits for R2 instead of preempting it
    res = simulate(trace(job("R1", 0, 10), job("W", 1, 20, gpus=2), job("R2", 2, 100)), cluster(1, gpus=2),
                   Tiresias(queue_limits=(1e9,)), LinearSpeed())
    assert dict(zip(res.names, res.completion.tolist())) == pytest.approx({"R1": 10, "R2": 102, "W": 122})

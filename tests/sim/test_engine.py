"""The engine's semantics on cases computed by hand (docs/simulator.md)."""

import math

import numpy as np
import pytest

from dlsched.instance.workload import Convergence, Job
from dlsched.sim.engine import PolicyError, Simulation, simulate
from dlsched.registry import make_policy
from dlsched.sim.metrics import jain
from dlsched.sim.placement import EmptyCluster
from dlsched.sim.policy import Decision, Placement
from tests.sim.helpers import LinearSpeed, TypedSpeed, cluster, job, trace, typed_cluster


class Fixed:
    """Runs every active job on server 0 with ``sizes[name]`` workers (default its min) and its PSs."""

    name = "fixed"
    slot_seconds = None

    def __init__(self, sizes=None, next_call=None):
        self.sizes, self.next_call, self.calls = sizes or {}, next_call, []

    def reset(self, ctx):
        self.ctx = ctx

    def schedule(self, state, events):
        self.calls.append((state.time, [(e.kind, e.job) for e in events]))
        out = {}
        for j in state.active.tolist():
            jb = state.jobs[j]
            w = self.sizes.get(jb.name, jb.min_workers)
            w = w(state.time) if callable(w) else w
            out[j] = Placement({0: w}, {0: 1} if jb.uses_ps else {})
        return Decision(out, self.next_call(state.time) if self.next_call else None)


def test_exact_completion_at_the_rate():
    # 10 iterations at 2 workers x 1 it/s: done 5 s after its arrival at 1
    res = simulate(trace(job("a", 1.0, 10.0, max_workers=2)), cluster(), Fixed({"a": 2}), LinearSpeed())
    assert res.status == "completed"
    assert res.completion[0] == pytest.approx(6.0)
    assert res.jct[0] == pytest.approx(5.0)
    assert res.queueing_delay[0] == 0.0


def test_restart_cost_on_start_and_on_rescale():
    # restart 1 s: [0,1] nothing, [1,2] 1 it at 1 worker; rescale at 2 to 2 workers:
    # [2,3] nothing, then 9 its at 2 it/s -> 3 + 4.5 = 7.5
    pol = Fixed({"a": lambda t: 1 if t < 2 else 2}, next_call=lambda t: 2.0 if t < 2 else None)
    res = simulate(trace(job("a", 0.0, 10.0, max_workers=2)), cluster(), pol, LinearSpeed(), restart_seconds=1.0)
    assert res.completion[0] == pytest.approx(7.5)
    assert [t for t, _ in pol.calls] == [0.0, 2.0]


def test_unchanged_placement_pays_no_restart():
    pol = Fixed(next_call=lambda t: t + 1.0)       # re-decides every second with the same placement
    res = simulate(trace(job("a", 0.0, 10.0)), cluster(), pol, LinearSpeed(), restart_seconds=2.0)
    assert res.completion[0] == pytest.approx(12.0)


def test_queueing_under_fifo():
    from dlsched.registry import make_policy

    tr = trace(job("a", 0.0, 10.0, gpus=4), job("b", 1.0, 5.0, gpus=4), job("c", 2.0, 1.0, gpus=1))
    res = simulate(tr, cluster(gpus=4), make_policy("fifo"), LinearSpeed())
    # b waits for a; strict FIFO: c waits behind b although a GPU... none is free while b runs (4 GPUs)
    assert res.first_start.tolist() == [0.0, 10.0, 15.0]
    assert res.completion.tolist() == [10.0, 15.0, 16.0]
    assert res.queueing_delay.tolist() == [0.0, 9.0, 13.0]
    s = res.summary()
    assert s["avg_jct"] == pytest.approx((10 + 14 + 14) / 3)
    assert s["makespan"] == 16.0


def test_completion_inside_a_slot_and_slot_calls():
    class Slotted(Fixed):
        slot_seconds = 4.0

    pol = Slotted()
    res = simulate(trace(job("a", 0.0, 6.0), job("b", 5.0, 2.0)), cluster(), pol, LinearSpeed())
    # a ends at 6 (inside slot [4, 8)), b at 7; calls: arrival 0, boundary 4, arrival 5, completion 6, completion 7
    assert res.completion.tolist() == [6.0, 7.0]
    assert [t for t, _ in pol.calls] == [0.0, 4.0, 5.0, 6.0]
    assert pol.calls[1][1] == [("timer", None)]


def test_stepwise_api():
    sim = Simulation(trace(job("a", 2.0, 4.0)), cluster(), LinearSpeed())
    assert [(e.kind, e.job, e.time) for e in sim.advance()] == [("arrival", 0, 2.0)]
    assert sim.time == 2.0 and sim.active.tolist() == [0]
    st = sim.state()
    assert st.remaining.tolist() == [4.0] and st.free[0].tolist() == [4.0, 8.0]
    with pytest.raises(ValueError):
        st.remaining[0] = 1.0                 # read-only view
    sim.apply({0: Placement({0: 1})}, "manual")
    ev = sim.advance(until=3.0)
    assert [e.kind for e in ev] == ["timer"] and sim.time == 3.0 and sim.remaining[0] == 3.0
    ev = sim.advance()
    assert [(e.kind, e.job, e.time) for e in ev] == [("completion", 0, 6.0)]
    assert sim.done and sim.result().status == "completed"


@pytest.mark.parametrize("decision, message", [
    ({0: Placement({0: 5})}, "workers, outside"),
    ({0: Placement({0: 4}), 1: Placement({0: 1}, {0: 1})}, r"over-commits server s0 \(index 0\) in gpu: 5 > capacity 4"),
    ({7: Placement({0: 1})}, "unknown job 7"),
    ({"a": Placement({0: 1})}, "unknown job 'a'"),
    ({2: Placement({0: 1})}, "has not arrived"),
    ({0: Placement({3: 1})}, "does not exist"),
    ({1: Placement({0: 1})}, "a PS job needs 1..1"),
    ({0: Placement({0: 1}, {0: 1})}, "for a job without PSs"),
    ({0: "anywhere"}, "expected a Placement"),
])
def test_rejections_name_the_policy_and_the_time(decision, message):
    tr = trace(job("a", 0.0, 10.0, max_workers=4), job("b", 0.0, 10.0, max_ps=1), job("c", 50.0))
    sim = Simulation(tr, cluster(), LinearSpeed())
    sim.advance()
    with pytest.raises(PolicyError, match=rf"policy 'bad' at t=0s: .*{message}"):
        sim.apply(decision, "bad")


def test_finished_job_is_rejected():
    sim = Simulation(trace(job("a", 0.0, 1.0), job("b", 0.0, 5.0)), cluster(), LinearSpeed())
    sim.advance()
    sim.apply({0: Placement({0: 1}), 1: Placement({0: 1})}, "p")
    sim.advance()
    with pytest.raises(PolicyError, match=r"at t=1s: job 0 \(a\) has finished"):
        sim.apply({0: Placement({0: 1})}, "p")


def test_a_policy_that_raises_is_named():
    class Boom(Fixed):
        name = "boom"

        def schedule(self, state, events):
            raise KeyError("oops")

    with pytest.raises(PolicyError, match=r"policy 'boom' at t=3s: raised KeyError"):
        simulate(trace(job("a", 3.0)), cluster(), Boom(), LinearSpeed())


def test_max_time_stops_the_run():
    res = simulate(trace(job("a", 0.0, 100.0)), cluster(), Fixed(), LinearSpeed(), max_time=30.0)
    assert res.status == "max_time" and res.sim_time == 30.0 and np.isnan(res.completion[0])
    assert "max_time=30" in res.message


def test_idle_policy_is_a_stall_not_a_hang():
    class Idle(Fixed):
        name = "idle"

        def schedule(self, state, events):
            return {}

    res = simulate(trace(job("a", 0.0)), cluster(), Idle(), LinearSpeed())
    assert res.status == "stalled" and "policy 'idle' runs no job" in res.message

    class IdleSlotted(Idle):
        slot_seconds = 1.0

    res = simulate(trace(job("a", 0.0)), cluster(), IdleSlotted(), LinearSpeed(), stall_calls=50)
    assert res.status == "stalled" and res.sim_time == pytest.approx(51.0)


def test_wall_clock_deadline_returns_the_partial_result():
    res = simulate(trace(job("a", 0.0), job("b", 1.0)), cluster(), Fixed(), LinearSpeed(), deadline=0.0)
    assert res.status == "time_limit" and "deadline" in res.message


def test_jobs_larger_than_the_cluster_are_unschedulable():
    two = cluster(servers=2, gpus=4)
    tr = trace(job("big", 0.0, gpus=8), job("wide", 0.0, min_workers=3, gpus=2), job("huge", 0.0, min_workers=5, gpus=2),
               job("ps", 0.0, gpus=4, max_ps=1))
    why = Simulation(tr, cluster(servers=2, gpus=4, cpus=2), LinearSpeed()).unschedulable
    # 8 GPUs in all but 4 per server; 3 x 2 GPUs fit as 2 + 1; the PS job fits
    assert why == {0: "at most 0 of its 1 workers fit on the empty cluster",
                   2: "needs 10 gpu (5 workers) but the whole cluster has 8"}
    # 2 workers of 3 GPUs and a PS of 2 GPUs: 8 GPUs as the cluster has, but no packing on 2 x 4 GPUs
    ps = Job("ps", 0.0, "toy", 1.0, {"gpu": 3}, {"gpu": 2}, min_workers=2, max_workers=2, max_ps=1)
    why = Simulation(trace(ps), cluster(servers=2, gpus=4), LinearSpeed()).unschedulable
    assert why == {0: "at most 1 of its 2 workers (with its PS) fit on the empty cluster"}
    res = simulate(trace(job("huge", 0.0, min_workers=5, gpus=2), job("ok", 0.0, 2.0)), two, Fixed(), LinearSpeed())
    assert res.status == "completed"
    assert res.unschedulable == {"huge": "needs 10 gpu (5 workers) but the whole cluster has 8"}
    assert res.completion[1] == 2.0 and res.summary()["unschedulable"] == 1 and "1 jobs unschedulable" in res.message


def test_observations_losses_and_speed_samples():
    curve = Convergence(0.5, 1.0, 0.1, noise=0.0)

    class Watch(Fixed):
        def schedule(self, state, events):
            self.obs = {j: (list(o.loss), list(o.speed)) for j, o in state.observations.items()}
            return super().schedule(state, events)

    pol = Watch({"a": 2}, next_call=lambda t: t + 1.0)
    simulate(trace(job("a", 0.0, 10.0, max_workers=2, max_ps=1, convergence=curve)), cluster(), pol, LinearSpeed())
    loss, speed = pol.obs[0]
    assert [s for s, _ in loss] == [2.0, 4.0, 6.0, 8.0]
    assert [v for _, v in loss] == pytest.approx([curve.loss(k) for k in (2.0, 4.0, 6.0, 8.0)])
    assert speed == [(1, 2, 2.0)]                # one sample for the one placement


def test_observed_loss_noise_is_seeded():
    curve = Convergence(0.5, 1.0, 0.1, noise=0.05)

    def run(seed):
        class Watch(Fixed):
            def schedule(self, state, events):
                self.obs = [v for _, v in state.observations[0].loss] if 0 in state.observations else []
                return super().schedule(state, events)

        pol = Watch(next_call=lambda t: t + 1.0)
        simulate(trace(job("a", 0.0, 5.0, convergence=curve)), cluster(), pol, LinearSpeed(), seed=seed)
        return pol.obs

    assert run(1) == run(1) and run(1) != run(2)
    assert np.allclose(run(1), [curve.loss(k) for k in (1, 2, 3, 4)], rtol=0.3)


def test_time_alone_is_on_the_fastest_gpu_type():
    # the first server's type (k80) is the slowest: alone, a 1-worker job of 12 iterations runs on
    # v100 at 3/s (4 s), a 3-worker job on the two v100 servers at 3 x 3/s; a 5-worker job fits no
    # single type's GPUs (v100 has 4), only the whole cluster
    cl = typed_cluster({"k80": 1, "p100": 1, "v100": 2}, gpus=2)
    speed = TypedSpeed({"k80": 1.0, "p100": 2.0, "v100": 3.0})
    tr = trace(job("a", 0.0, 12.0), job("b", 0.0, 36.0, max_workers=3), job("c", 0.0, 20.0, max_workers=5))
    iso = Simulation(tr, cl, speed).isolated_jct()
    assert iso[0] == pytest.approx(4.0) and iso[1] == pytest.approx(36.0 / 9.0)
    c = Simulation(tr, cl, speed)._placed_alone(EmptyCluster(cl.capacity), 2, 5, 0)      # the whole cluster's placement
    assert iso[2] == pytest.approx(20.0 / speed.rate(tr.jobs[2], c, cl))
    # and so no job of a run beats its time alone (with the first server's type as the reference a
    # would, at 4 s against 12): the type-aware FIFO puts a on v100
    res = simulate(tr, cl, make_policy("gavel-fifo-perf"), speed)
    assert (res.jct >= res.isolated_jct * (1 - 1e-9)).all() and res.jct[0] == pytest.approx(4.0)


def test_metrics_by_hand():
    tr = trace(job("a", 0.0, 10.0), job("b", 0.0, 10.0, max_workers=2))
    res = simulate(tr, cluster(gpus=4, cpus=8), Fixed({"b": 2}), LinearSpeed())
    s = res.summary()
    assert res.completion.tolist() == [10.0, 5.0]
    # [0,5] 3 GPUs, [5,10] 1 GPU over 10 s of 4 GPUs
    assert s["utilisation"]["gpu"] == pytest.approx((3 * 5 + 1 * 5) / 40)
    assert s["makespan"] == 10.0 and s["median_jct"] == 7.5
    # isolated: a alone 10 s, b alone at 2 workers 5 s: both ran as if alone
    assert s["jain_fairness"] == pytest.approx(1.0)
    assert jain(np.array([1.0, 0.5])) == pytest.approx(1.5 ** 2 / (2 * 1.25))
    assert s["decision_calls"] == len(res.decision_seconds) > 0
    assert s["engine_per_event_s"] > 0 and s["events"] == res.n_events


def test_total_utility_and_json():
    import json

    tr = trace(job("a", 0.0, 4.0, utility=lambda jct: 10.0 - jct), job("b", 0.0, 2.0))
    res = simulate(tr, cluster(), Fixed(), LinearSpeed())
    doc = json.loads(res.to_json())
    assert doc["total_utility"] == 6.0
    assert doc["environment"]["numpy"] == np.__version__
    assert [r["jct"] for r in doc["job_results"]] == [4.0, 2.0]
    assert math.isclose(doc["avg_jct"], 3.0)


def test_unschedulable_arrivals_are_no_events():
    tr = trace(job("x", 0.0, gpus=8), job("a", 0.0, 2.0), job("y", 1.0, gpus=8), job("b", 5.0, 1.0))
    pol = Fixed()
    res = simulate(tr, cluster(gpus=4), pol, LinearSpeed())
    assert res.status == "completed" and set(res.unschedulable) == {"x", "y"}
    assert res.completion[[1, 3]].tolist() == [2.0, 6.0]
    assert [ev for _, ev in pol.calls] == [[("arrival", 1)], [("completion", 1)], [("arrival", 3)]]


def test_progress_bar_run_gives_the_same_result():
    tr = trace(job("a", 0.0, 3.0), job("b", 1.0, 2.0))
    quiet = simulate(tr, cluster(), Fixed(), LinearSpeed())
    shown = simulate(tr, cluster(), Fixed(), LinearSpeed(), progress=True)
    assert shown.completion.tolist() == quiet.completion.tolist() == [3.0, 3.0]


def test_a_policy_refusing_the_trace_raises_its_input_error():
    from dlsched.errors import InputError

    class Picky(Fixed):
        name = "picky"

        def reset(self, ctx):
            raise InputError("<trace>", "jobs", "a trace for policy 'picky'", "another")

    with pytest.raises(InputError, match="policy 'picky'"):
        simulate(trace(job("a", 0.0)), cluster(), Picky(), LinearSpeed())


def test_jobs_held_at_rate_zero_by_a_slotted_policy_are_a_stall():
    class Zero:
        def rate(self, job, placement, cluster):
            return 0.0

    class Slotted(Fixed):
        slot_seconds = 2.0

    res = simulate(trace(job("a", 0.0)), cluster(), Slotted(), Zero(), stall_calls=10)
    assert res.status == "stalled" and res.sim_time == pytest.approx(22.0)
    res = simulate(trace(job("a", 0.0)), cluster(), Fixed(), Zero())
    assert res.status == "stalled" and res.sim_time == 0.0


def test_next_call_must_be_in_the_future():
    with pytest.raises(PolicyError, match="next_call 0 is not a time later than now"):
        simulate(trace(job("a", 0.0)), cluster(), Fixed(next_call=lambda t: t), LinearSpeed())
    with pytest.raises(PolicyError, match="next_call 'soon' is not a time"):
        simulate(trace(job("a", 0.0)), cluster(), Fixed(next_call=lambda t: "soon"), LinearSpeed())

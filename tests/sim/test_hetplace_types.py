"""hetplace with order="srpt" on clusters of several GPU types: the types of the admitted jobs (`HetPlace._by_type`)."""

import pytest

from dlsched.instance.cluster import Cluster
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from tests.sim.helpers import Audit, job, trace


class PerWorkerSpeed:
    """Each job's rate per worker on each GPU type (``rates[name][type]``), summed over its workers."""

    def __init__(self, rates):
        self.rates = rates

    def rate(self, job, placement, cluster):
        return sum(k * self.rates[job.name][cluster.gpu_type[s]] for s, k in placement.workers.items())


def completions(tr, cl, speed):
    audit = Audit(make_policy("hetplace", order="srpt"))
    res = simulate(tr, cl, audit, speed)
    assert not audit.problems and res.status == "completed"
    return dict(zip(res.names, res.completion.tolist()))


def test_a_large_job_takes_its_fast_type_ahead_of_longer_small_jobs():
    # 8 V100s and 8 K80s. The 8-worker job L needs 1 s on the V100s and 10 s on the K80s; eight 1-GPU jobs
    # need 8 s on a V100 and 32 s on a K80. Summed as if every job held its GPUs to its end, L on the K80s
    # (10 + 8 x 8 = 74 s) beats L on the V100s (1 + 8 x 32 = 257 s), and the pipeline's types put it there.
    # But the V100s are free again after 1 s: Smith's order (kappa: L 8 / 0.9, the others 8 / 0.75) gives L
    # the V100s, the others run on the K80s at a quarter of the pace meanwhile and move to the V100s at 1 s
    # with 7.75 s left: 1 + 8 x 8.75 = 71 s in all.
    cl = Cluster.from_groups([(1, {"gpu": 8, "cpu": 16}, "k80"), (1, {"gpu": 8, "cpu": 16}, "v100")])
    small = [f"s{i}" for i in range(8)]
    speed = PerWorkerSpeed({"L": {"v100": 1.0, "k80": 0.1}, **{s: {"v100": 1.0, "k80": 0.25} for s in small}})
    tr = trace(job("L", 0.0, 8.0, min_workers=8), *(job(s, 0.0, 8.0) for s in small))
    assert completions(tr, cl, speed) == pytest.approx({"L": 1.0, **{s: 8.75 for s in small}})


def test_a_job_nearly_as_fast_on_every_type_leaves_the_fast_type_to_one_that_is_not():
    # one V100 and one K80. "flat" is the shorter (2 s on the V100) and nearly as fast on the K80 (w = 0.02);
    # "steep" needs 4 s on the V100 and 16 s on the K80 (w = 0.75). By remaining time alone flat takes the
    # V100 (steep ends at 2 + 3.5 = 5.5); by kappa (2 / 0.02 = 100 against 4 / 0.75 = 5.3) steep does and ends at 4, flat on the
    # K80 at 2 / 0.98
    cl = Cluster.from_groups([(1, {"gpu": 1, "cpu": 4}, "k80"), (1, {"gpu": 1, "cpu": 4}, "v100")])
    speed = PerWorkerSpeed({"flat": {"v100": 1.0, "k80": 0.98}, "steep": {"v100": 1.0, "k80": 0.25}})
    tr = trace(job("flat", 0.0, 2.0), job("steep", 0.0, 4.0))
    assert completions(tr, cl, speed) == pytest.approx({"flat": 2.0 / 0.98, "steep": 4.0})


def test_a_type_goes_first_to_the_jobs_it_is_fastest_for():
    # one GPU of each of three types. In round 1, by kappa: a (1 / 0.5 = 2), b (2 / 0.2 = 10), c (4 / 0.1 = 40).
    # a takes the V100; b (fastest on the V100 too) must not take the P100, c's fastest: b tries its second
    # fastest only in round 2, after c has the P100, so b runs on the K80 until a ends and then moves to the
    # V100 with 1.9 left. Job by job, b would take the P100 and c the K80: b would end at 1 + 1.2 = 2.2 and
    # c at 1 + 3.9 = 4.9 (8.1 s in all, not 7.9).
    cl = Cluster.from_groups([(1, {"gpu": 1, "cpu": 4}, "k80"), (1, {"gpu": 1, "cpu": 4}, "p100"),
                              (1, {"gpu": 1, "cpu": 4}, "v100")])
    speed = PerWorkerSpeed({"a": {"v100": 1.0, "p100": 0.5, "k80": 0.1},
                            "b": {"v100": 1.0, "p100": 0.8, "k80": 0.1},
                            "c": {"v100": 0.9, "p100": 1.0, "k80": 0.1}})
    tr = trace(job("a", 0.0, 1.0), job("b", 0.0, 2.0), job("c", 0.0, 4.0))
    assert completions(tr, cl, speed) == pytest.approx({"a": 1.0, "b": 2.9, "c": 4.0})


def test_a_job_that_loses_little_on_its_second_type_leaves_its_fastest_to_one_that_loses_much():
    # one GPU of each of three types; both jobs run at 0.1 on the K80. "near" runs at 0.9 of its V100 pace
    # on the P100, "far" at 0.2. Weighed by the pace lost down to the slowest type (0.9 for both), near
    # (p = 1) would take the V100 from far (p = 2), and far would end at 1 + 1.8 = 2.8 (3.8 s in all). The
    # round-1 weight is what losing the V100 costs, the fall to the second type: kappa 1 / 0.1 = 10 for near,
    # 2 / 0.8 = 2.5 for far. So far takes the V100 and ends at 2, near the P100 and ends at 1 / 0.9
    cl = Cluster.from_groups([(1, {"gpu": 1, "cpu": 4}, "k80"), (1, {"gpu": 1, "cpu": 4}, "p100"),
                              (1, {"gpu": 1, "cpu": 4}, "v100")])
    speed = PerWorkerSpeed({"near": {"v100": 1.0, "p100": 0.9, "k80": 0.1}, "far": {"v100": 1.0, "p100": 0.2, "k80": 0.1}})
    tr = trace(job("near", 0.0, 1.0), job("far", 0.0, 2.0))
    assert completions(tr, cl, speed) == pytest.approx({"near": 1.0 / 0.9, "far": 2.0})

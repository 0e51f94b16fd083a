"""The simulator's data layer: clusters and traces reject what could never be simulated."""

import math

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Convergence, Job, Trace


def job(name="a", arrival=0.0, **kw):
    return Job(name, arrival, "resnet50", kw.pop("iterations", 100.0), {"gpu": 1, "cpu": 2}, **kw)


def test_homogeneous_cluster_totals():
    c = Cluster.homogeneous(4, {"gpu": 8, "cpu": 32}, gpu_type="V100", servers_per_rack=2)
    assert c.total().tolist() == [32.0, 128.0]
    assert c.rack.tolist() == [0, 0, 1, 1]
    assert c.vector({"cpu": 3}).tolist() == [0.0, 3.0]


def test_heterogeneous_groups_keep_types_and_union_of_resources():
    c = Cluster.from_groups([(2, {"gpu": 4}, "K80"), (1, {"gpu": 8, "cpu": 16}, "V100")])
    assert c.gpu_type == ("K80", "K80", "V100")
    assert c.resources == ("gpu", "cpu")
    assert c.capacity[:, 1].tolist() == [0.0, 0.0, 16.0]


@pytest.mark.parametrize("cap, where", [([[-1.0, 2.0]], "servers[0].gpu"), ([[1.0, math.nan]], "servers[0].cpu")])
def test_cluster_rejects_bad_capacity(cap, where):
    with pytest.raises(InputError) as e:
        Cluster(("gpu", "cpu"), np.array(cap), ("",), [0], ("s0",))
    assert e.value.where == where


def test_cluster_without_gpus_is_an_error():
    with pytest.raises(InputError, match="at least one GPU"):
        Cluster.homogeneous(3, {"gpu": 0, "cpu": 8})


def test_unknown_resource_in_a_demand_is_an_error():
    c = Cluster.homogeneous(1, {"gpu": 8})
    with pytest.raises(InputError, match="mem"):
        c.vector({"mem": 1})


def test_trace_validation_names_the_job():
    with pytest.raises(InputError) as e:
        Trace((job("a", 5.0), job("b", 1.0)), "t.csv")
    assert (e.value.source, e.value.where) == ("t.csv", "jobs[1].arrival")
    with pytest.raises(InputError, match="unique"):
        Trace((job("a"), job("a")))
    with pytest.raises(InputError, match="empty"):
        Trace(())
    with pytest.raises(InputError) as e:
        Trace((job("a", iterations=-3.0),))
    assert e.value.where == "jobs[0].iterations"
    with pytest.raises(InputError):
        Trace((job("a", min_workers=3, max_workers=2),))


def test_sorted_trace_is_stable_and_convergence_curve_decreases():
    t = Trace.sorted([job("b", 2.0), job("a", 1.0), job("c", 1.0)])
    assert [j.name for j in t.jobs] == ["a", "c", "b"]
    c = Convergence(0.01, 1.0, 0.1)
    assert c.loss(0) == pytest.approx(1.1) and c.loss(1000) < c.loss(10)

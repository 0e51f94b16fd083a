"""The placement family: instance, file format, generator, checker, exact MCMDK (MODELS.md §4)."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dlsched
from dlsched.check import check_placement
from dlsched.errors import InputError
from dlsched.instance import jsonio
from dlsched.instance.placement import GpuAssignment, PlacementInstance
from dlsched.instance.placement_gen import generate, openb_servers
from dlsched.instance.traces import read_gavel_trace, read_openb_nodes, gavel_traces
from dlsched.models.placement import alone_jct, brute_force, core_model, decode, evaluate, jct_counts, workloads
from dlsched.solvers.milp import solve_core


def tiny(seed=0, n=3, types=None, per_server=2, **kw):
    return generate(n, types or {"k80": 2, "p100": 1, "v100": 2}, seed=seed, gpus_per_server=per_server, max_workers=4, **kw)


def hand_instance(**kw):
    """2 jobs; server a: 2 V100, server b: 2 K80; intra 10 Gbps, inter 5 Gbps."""
    args = dict(gpu_types=("v100", "k80"), server_names=("a", "b"), server_type=[0, 1], server_gpus=[2, 2],
                job_names=("x", "y"), job_types=("t", "t"), rho=[[100.0, 25.0], [50.0, 50.0]],
                global_batch=[100.0, 100.0], iterations=[10.0, 10.0], model_size_mb=[125.0, 0.0],
                max_workers=[2, 2], intra_gbps=10.0, inter_gbps=5.0)
    args.update(kw)
    return PlacementInstance(**args)


# -------------------------------------------------------------------------- the JCT model

def test_jct_by_hand():
    inst = hand_instance()
    # job x on both V100 (one server): compute 100/200 = 0.5 s, ring comm 2*(1/2)*125MB*8/1000/10 = 0.1 s
    assert jct_counts(inst, 0, [2, 0], False) == pytest.approx(10 * (0.5 + 0.1))
    # one V100 + one K80 spans servers: 100/125 = 0.8 s + 0.2 s at 5 Gbps
    assert jct_counts(inst, 0, [1, 1], True) == pytest.approx(10 * (0.8 + 0.2))
    # equal split: 50 samples on the K80 at 25/s = 2 s (straggler)
    assert jct_counts(inst, 0, [1, 1], True, "equal") == pytest.approx(10 * (2.0 + 0.2))
    ps = hand_instance(communication="ps")
    assert jct_counts(ps, 0, [2, 0], False) == pytest.approx(10 * (0.5 + 0.2))


def test_evaluate_and_workloads_and_checker_agree():
    inst = hand_instance()
    gpu_job = np.array([0, 1, 0, 1])     # x on a/0 + b/0, y on a/1 + b/1
    p = GpuAssignment(gpu_job, workloads(inst, gpu_job))
    assert p.workload[[0, 2]] == pytest.approx([80.0, 20.0])
    jct = evaluate(inst, p)
    rep = check_placement(inst, p, jct.mean())
    assert rep.feasible, rep.violations
    assert rep.objective == pytest.approx(jct.mean())


def test_checker_rejects_bad_placements():
    inst = hand_instance()
    assert not check_placement(inst, GpuAssignment([0, 0, -1, -1], [50, 50, 0, 0]))  # job y has no GPU
    p = GpuAssignment([0, 0, 1, 1], workloads(inst, np.array([0, 0, 1, 1])))
    assert check_placement(inst, p).feasible
    rep = check_placement(inst, p, claimed_objective=1.0)
    assert not rep.feasible and "claimed" in rep.violations[0]
    wrong = GpuAssignment([0, 0, 1, 1], [90, 10, 50, 50])  # x's split is not proportional
    assert any("split" in v or "proportional" in v for v in check_placement(inst, wrong).violations)
    small = hand_instance(max_workers=[1, 2])
    assert any("maximum" in v for v in check_placement(small, p).violations)
    assert not check_placement(inst, GpuAssignment([0, 0, 1], [1, 1, 1]))


def test_alone_jct_is_the_least_configuration_value():
    for seed in range(4):
        inst = tiny(seed)
        m = core_model(inst)
        least = np.minimum.reduceat(m.core.value, m.core.job_ptr[:-1]) * inst.n_jobs
        assert alone_jct(inst) == pytest.approx(least)


# -------------------------------------------------------------------------- exact MCMDK

@pytest.mark.parametrize("seed", range(6))
def test_exact_mcmdk_equals_brute_force(seed):
    inst = tiny(seed, n=2 + seed % 2, types={"k80": 2, "p100": 2, "v100": 2} if seed % 2 == 0 else None)
    m = core_model(inst)
    res = solve_core(m.core)
    p = decode(inst, m, res.solution)
    rep = check_placement(inst, p)
    assert rep.feasible, rep.violations
    bf, _ = brute_force(inst)
    assert rep.objective == pytest.approx(bf, rel=1e-9)
    assert res.objective == pytest.approx(bf, rel=1e-9)


def test_exact_encodes_server_spanning():
    # x wants 2 V100: on one server that is intra; split V100 across two servers it is not
    inst = hand_instance(server_names=("a", "b", "c"), server_type=[0, 0, 1], server_gpus=[1, 2, 2])
    bf, _ = brute_force(inst)
    res = solve_core(core_model(inst).core)
    assert res.objective == pytest.approx(bf)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), comm=st.sampled_from(["ring", "ps"]), wl=st.sampled_from(["proportional", "equal"]))
def test_exact_equals_brute_force_random(seed, comm, wl):
    inst = tiny(seed, n=2, types={"k80": 1, "p100": 2, "v100": 2}, communication=comm, workload=wl)
    m = core_model(inst)
    res = solve_core(m.core)
    p = decode(inst, m, res.solution)
    rep = check_placement(inst, p, evaluate(inst, p).mean())
    assert rep.feasible, rep.violations
    assert rep.objective == pytest.approx(brute_force(inst)[0], rel=1e-9)


# -------------------------------------------------------------------------- file format

def test_json_roundtrip_and_solution(tmp_path):
    inst = tiny(3)
    path = tmp_path / "p.json"
    dlsched.save(inst, path)
    back = dlsched.load(path)
    assert back.family == "placement"
    assert np.allclose(back.rho, inst.rho) and back.gpu_names() == inst.gpu_names()
    assert np.allclose(back.model_size_mb, inst.model_size_mb)
    m = core_model(back)
    p = decode(back, m, solve_core(m.core).solution)
    p.job_names, p.gpu_names = back.job_names, tuple(back.gpu_names())
    doc = jsonio.FAMILIES["placement"].dump_solution(p)
    assert set(doc) == {"jobs"} and doc["jobs"][0]["name"] == "j0"
    again = jsonio.FAMILIES["placement"].parse_solution(back, json.loads(json.dumps(doc)), "sol.json")
    assert np.array_equal(again.gpu_job, p.gpu_job) and np.allclose(again.workload, p.workload)


def _doc(**job):
    base = {"name": "a", "type": "ResNet-50 (batch size 64)", "global_batch": 128, "iterations": 100, "max_workers": 2}
    base.update(job)
    return {"format": "dlsched/1", "family": "placement",
            "cluster": {"resources": ["gpu"], "intra_server_gbps": 10, "inter_server_gbps": 5,
                        "servers": [{"name": "s", "capacity": {"gpu": 2}, "gpu_type": "v100"},
                                    {"name": "t", "capacity": {"gpu": 2}, "gpu_type": "k80"}]},
            "jobs": [base]}


def test_throughput_from_gavel_when_absent():
    inst = jsonio.parse_document(_doc())
    assert inst.rho[0, 0] == pytest.approx(64 * 4.39, abs=1) and inst.model_size_mb[0] > 0


@pytest.mark.parametrize("job, where, words", [
    ({"type": "NoSuchNet"}, "$.jobs[0].throughput", ["'a'", "NoSuchNet"]),
    ({"throughput": {"v100": 10.0, "k80": 0.0}}, "$.jobs[0].throughput.k80", ["'a'", "k80"]),
    ({"max_workers": 9}, "max_workers", ["'a'", "4 GPUs"]),
])
def test_bad_input_names_job_and_type(job, where, words):
    with pytest.raises(InputError) as err:
        jsonio.parse_document(_doc(**job), "f.json")
    assert where in err.value.where
    for w in words:
        assert w in str(err.value)


def test_gpu_type_without_measurement_is_named():
    doc = _doc()
    doc["cluster"]["servers"][1]["gpu_type"] = "t4"
    with pytest.raises(InputError, match="'a'.*'t4'"):
        jsonio.parse_document(doc, "f.json")


def test_more_jobs_than_gpus():
    with pytest.raises(InputError, match="at most 2 jobs"):
        hand_instance(server_names=("a",), server_type=[0], server_gpus=[2], job_names=("x", "y", "z"),
                      job_types=("t",) * 3, rho=[[1.0, 1.0]] * 3, global_batch=[1.0] * 3, iterations=[1.0] * 3,
                      model_size_mb=[0.0] * 3, max_workers=[1] * 3)


def test_schema_rejects_missing_field():
    doc = _doc()
    del doc["jobs"][0]["global_batch"]
    with pytest.raises(InputError, match=r"\$\.jobs\[0\]"):
        jsonio.parse_document(doc, "f.json")


# -------------------------------------------------------------------------- traces and generator

def test_gavel_traces_and_openb_nodes():
    jobs = [j for p in gavel_traces() for j in read_gavel_trace(p)]
    assert len(jobs) > 2000 and {1, 2, 4, 8} <= {j.scale_factor for j in jobs}
    nodes = read_openb_nodes()
    assert {n.gpu_model for n in nodes} == {"G2", "T4", "P100", "V100M16", "V100M32", "G3", "A10"}
    names, stype, sgpus, types = openb_servers([n for n in nodes if n.gpu_model in ("P100", "V100M32")])
    assert set(types) == {"p100", "v100"} and sum(sgpus) > 0
    with pytest.raises(InputError, match="T4"):
        openb_servers([n for n in nodes if n.gpu_model == "T4"][:1])
    # an OpenB cluster (some P100 and V100M32 nodes) with Gavel jobs, solved exactly and checked
    few = [n for n in nodes if n.gpu_model == "P100"][:2] + [n for n in nodes if n.gpu_model == "V100M32"][:1]
    inst = generate(4, cluster=openb_servers(few), seed=2)
    assert inst.n_gpus == sum(n.gpus for n in few)
    res = dlsched.solve(inst, method="exact", threads=1)
    assert dlsched.check(inst, res).feasible


def test_generator_is_seeded():
    a, b, c = generate(5, seed=7), generate(5, seed=7), generate(5, seed=8)
    assert a.job_types == b.job_types and np.array_equal(a.iterations, b.iterations)
    assert (a.job_types, a.iterations.tolist()) != (c.job_types, c.iterations.tolist())
    assert a.n_gpus == 12 and a.n_types == 3

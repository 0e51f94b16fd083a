"""The smd family (MODELS.md §2.2): instance, JSON, generator, to_core, checker."""

import itertools
import json

import numpy as np
import pytest

import dlsched
from dlsched.check import check_smd
from dlsched.errors import InputError
from dlsched.instance import jsonio
from dlsched.instance.smd import SMDOptions, pareto_mask
from dlsched.instance.smd_gen import generate
from dlsched.solvers.milp import solve_core


def tiny_doc(**over):
    doc = {
        "format": "dlsched/1", "family": "smd", "name": "tiny",
        "cluster": {"resources": ["gpu", "cpu"], "servers": [{"name": "n", "capacity": {"gpu": 8, "cpu": 8}, "count": 2}],
                    "slot_seconds": 600},
        "options": {"max_workers": 4, "max_ps": 4},
        "profiles": {"toy": {"layers": [{"name": "a", "forward_s": 0.001, "backward_s": 0.002, "bytes": 4e7},
                                        {"name": "b", "forward_s": 0.002, "backward_s": 0.004, "bytes": 1e7}],
                             "worker_bandwidth": 1e9, "ps_bandwidth": 5e8}},
        "jobs": [{"name": "a", "type": "toy", "batch": 64, "iterations": 2000, "worker_demand": {"gpu": 4, "cpu": 2},
                  "ps_demand": {"cpu": 2}},
                 {"name": "b", "type": "resnet-50", "iterations": 500, "worker_demand": {"gpu": 4, "cpu": 2},
                  "ps_demand": {"cpu": 2}, "weight": 2},
                 {"name": "c", "type": "dssm", "iterations": 900, "worker_demand": {"cpu": 2}, "ps_demand": {"cpu": 2}}],
    }
    doc.update(over)
    return doc


def load(doc):
    return jsonio.parse_document(json.loads(json.dumps(doc)), "tiny.json")


def brute_force(inst):
    """Minimum of §2.2 over every (w, p) (no pruning) of every job, defer included."""
    jobs = range(inst.n_jobs)
    choices = [[(0, 0)] + [(w, p) for w in range(1, inst.max_workers[j] + 1) for p in range(1, inst.max_ps[j] + 1)]
               for j in jobs]
    best = np.inf
    for combo in itertools.product(*choices):
        use = sum(w * inst.d[j] + p * inst.e[j] for j, (w, p) in enumerate(combo))
        if np.all(use <= inst.capacity + 1e-9):
            best = min(best, inst.epoch_objective(np.array(combo)))
    return best


def test_exact_on_pruned_core_equals_brute_force_and_checks():
    inst = load(tiny_doc())
    core = inst.to_core()
    res = solve_core(core)
    assert res.objective == pytest.approx(brute_force(inst), rel=1e-9)
    assert not dlsched.check(inst, res.solution, res.objective).feasible      # a bare core choice is not an SMD solution
    assert dlsched.check(inst, inst.solution_from_core(res.solution), res.objective).feasible
    alloc = inst.allocation_from_core(core, res.solution)[:, :2]
    assert check_smd(inst, {"allocation": alloc}, res.objective).feasible


@pytest.mark.parametrize("seed", range(3))
def test_generated_instances_brute_force(seed):
    inst = generate(3, 1, seed=seed, max_workers=3, max_ps=3)
    res = dlsched.solve(inst, "exact")
    assert res.objective == pytest.approx(brute_force(inst), rel=1e-9)
    assert dlsched.check(inst, res).feasible


def test_pareto_mask_keeps_only_undominated():
    tau = np.array([1.0, 2.0, 0.5, 0.5, 3.0])
    use = np.array([[1, 1], [1, 1], [2, 1], [2, 1], [0, 1]])
    keep = pareto_mask(tau, use)
    assert keep.tolist() == [True, False, True, False, True]


def test_json_round_trip_keeps_the_core(tmp_path):
    inst = generate(12, 3, seed=4, mix="optimus")
    path = tmp_path / "i.json"
    dlsched.save(inst, path)
    back = dlsched.load(path)
    a, b = inst.to_core(), back.to_core()
    assert np.allclose(a.value, b.value) and (a.A != b.A).nnz == 0 and np.array_equal(a.job_ptr, b.job_ptr)
    assert np.array_equal(back.arrival, inst.arrival)


def test_per_server_capacity_is_never_better_than_aggregate():
    doc = tiny_doc()
    agg_inst = load(doc)
    agg = solve_core(agg_inst.to_core())
    assert dlsched.check(agg_inst, agg_inst.solution_from_core(agg.solution), agg.objective).feasible
    doc["options"] = {"max_workers": 4, "max_ps": 4, "capacity": "per_server"}
    inst = load(doc)
    res = dlsched.solve(inst, "exact")
    assert res.objective >= agg.objective - 1e-9
    assert dlsched.check(inst, res).feasible
    assert inst.to_core().n_rows == 2 * 2


def test_generator_is_seeded_and_follows_dl2_demands():
    a, b = generate(30, 5, seed=7), generate(30, 5, seed=7)
    assert a.job_type == b.job_type and np.array_equal(a.iterations, b.iterations)
    assert a.job_type != generate(30, 5, seed=8).job_type
    for j, t in enumerate(a.job_type):
        assert a.d[j].tolist() == ([0, 2] if t in ("cnn-text-classification", "dssm") else [4, 2])
        assert a.e[j].tolist() == [0, 2]
    assert np.all(np.diff(a.arrival) >= 0) and a.arrival[0] == 0


def test_job_that_cannot_fit_alone_is_flagged_not_dropped():
    doc = tiny_doc()
    doc["jobs"][0]["worker_demand"] = {"gpu": 100}
    inst = load(doc)
    assert inst.unschedulable == [0]
    core = inst.to_core()
    assert core.n_configs[0] == 1 and core.config_labels[0] == "defer"
    res = dlsched.solve(inst, "exact")
    assert res.solution["allocation"][0].tolist() == [0, 0] and "cannot be scheduled" in res.message
    assert dlsched.check(inst, res).feasible


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["profiles"]["toy"].update(layers=[]), "$.profiles.toy.layers"),
    (lambda d: d["profiles"]["toy"]["layers"][1].update(bytes=-1), "$.profiles.toy.layers[1].bytes"),
    (lambda d: d["profiles"]["toy"].update(ps_bandwidth=0), "$.profiles.toy.ps_bandwidth"),
    (lambda d: d["profiles"]["toy"].update(worker_bandwidth=-3), "$.profiles.toy.worker_bandwidth"),
    (lambda d: d["jobs"][1].update(type="alexnet"), "$.jobs[1].type"),
    (lambda d: d["jobs"][2].update(batch=0), "$.jobs[2].batch"),
    (lambda d: d["jobs"][2].update(iterations=-5), "$.jobs[2].iterations"),
    (lambda d: d["jobs"][0]["worker_demand"].update(tpu=1), "$.jobs[0].worker_demand.tpu"),
    (lambda d: d["jobs"][0].update(worker_demand={}, ps_demand={}), "$.jobs[0]"),
    (lambda d: d.update(options={"overlap": "magic"}), "$.options.overlap"),
    (lambda d: d["profiles"].update(x={"builtin": "alexnet"}), "$.profiles.x.builtin"),
])
def test_bad_input_names_the_place(mutate, where):
    doc = tiny_doc()
    mutate(doc)
    with pytest.raises(InputError) as e:
        load(doc)
    assert "tiny.json" in str(e.value) and f"at {where}:" in str(e.value), str(e.value)


def test_checker_rejects_overuse_and_wrong_objective():
    inst = load(tiny_doc())
    bad = np.array([[4, 4], [4, 4], [0, 0]])
    rep = check_smd(inst, {"allocation": bad})
    assert not rep.feasible and any("capacity" in v for v in rep.violations)
    ok = np.array([[1, 1], [0, 0], [1, 1]])
    rep = check_smd(inst, {"allocation": ok}, claimed_objective=1.0)
    assert not rep.feasible and "claimed objective" in rep.violations[-1]
    assert check_smd(inst, {"allocation": np.array([[1, 0], [0, 0], [0, 0]])}).violations


def test_checker_tau_agrees_with_perf_model():
    from dlsched.check import _smd_tau

    inst = generate(16, 2, seed=3)
    for opts in (SMDOptions(), SMDOptions(overlap="none")):
        inst.options = opts
        for j in range(inst.n_jobs):
            for w, p in [(1, 1), (3, 2), (5, 7)]:
                assert _smd_tau(inst, j, w, p) == pytest.approx(float(inst.tau(j, w, p)), rel=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_core_without_labels_is_the_same_model(seed):
    # the decisions' cores (labels=False) differ from to_core() in their display labels only
    inst = generate(12, 2, seed=seed, max_workers=4, max_ps=3)
    jobs = np.random.default_rng(seed).permutation(inst.n_jobs)[:7]
    full, bare = inst.to_core(jobs), inst.to_core(jobs, labels=False)
    assert bare.config_labels is None and len(full.config_labels) == full.n_cols
    assert full.job_names == bare.job_names == tuple(inst.job_names[j] for j in jobs.tolist())
    assert np.array_equal(full.value, bare.value) and (full.A != bare.A).nnz == 0
    assert np.array_equal(full.job_ptr, bare.job_ptr) and np.array_equal(full.meta["configs"], bare.meta["configs"])

"""The three front ends of the core model agree, with each other, brute force and known optima."""

import highspy
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

import dlsched
from dlsched.instance.core import MCMDK, from_dense
from dlsched.export import write_model
from dlsched.models.mcmdk import build_matrix
from dlsched.result import Status
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import SolveOptions
from tests.helpers import brute_force, tiny_mcmdk

BACKENDS = ["highs", "pyomo", "cvxpy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_bundled_instances_reach_reference(instances_dir, backend):
    files = sorted(instances_dir.glob("*.json"))
    assert files
    for path in files:
        inst = dlsched.load(path)
        res = dlsched.solve(inst, "exact", backend=backend)   # each family's own exact method
        assert res.status == Status.OPTIMAL, path
        if getattr(inst, "reference", None) is not None:
            assert res.objective == pytest.approx(inst.reference.objective, abs=1e-6), path
        assert dlsched.check(inst, res).feasible


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_result_field_filled(backend):
    inst = from_dense([[3, 5], [4]], [[[1, 2], [2, 4]], [[2, 5]]], [4, 10], name="f")
    res = solve_core(inst, SolveOptions(seed=3), backend)
    assert res.status == Status.OPTIMAL and res.termination == "optimal"
    assert res.objective == 9 and res.bound == pytest.approx(9) and res.gap == 0
    assert res.backend == backend and res.method == "exact" and res.sense == "max"
    assert res.build_seconds >= 0 and res.solve_seconds > 0
    assert "compile_seconds" not in res.stats      # front-end translation is folded into build seconds
    assert res.solver_version.startswith("highs ")
    assert res.options["seed"] == 3 and res.options["mip_rel_gap"] == 0
    assert res.solution.tolist() == [1, 0]
    summary = res.summary()
    for key in ("status", "objective", "bound", "gap", "build_seconds", "solve_seconds", "method", "backend"):
        assert summary[key] is not None


@settings(max_examples=60, deadline=None)
@given(tiny_mcmdk())
def test_matrix_path_equals_brute_force(inst):
    best = brute_force(inst)
    res = solve_core(inst, SolveOptions(threads=1))
    if best is None:
        assert res.status == Status.INFEASIBLE
    else:
        assert res.status == Status.OPTIMAL
        assert res.objective == pytest.approx(best)
        assert dlsched.check(inst, res).feasible
        lp = solve_core(inst, SolveOptions(), relax=True)
        # the LP relaxation bounds the integer optimum
        assert (lp.objective >= best - 1e-7) if inst.sense == "max" else (lp.objective <= best + 1e-7)


@settings(max_examples=15, deadline=None)
@given(tiny_mcmdk())
def test_three_backends_agree_on_random_instances(inst):
    results = [solve_core(inst, SolveOptions(), b) for b in BACKENDS]
    statuses = {r.status for r in results}
    assert len(statuses) == 1, [(r.backend, r.status) for r in results]
    if Status.OPTIMAL in statuses:
        vals = [r.objective for r in results]
        assert max(vals) - min(vals) < 1e-6
        for r in results:
            assert dlsched.check(inst, r.solution, r.objective).feasible


def infeasible_instance():
    # two jobs must both run; each needs at least 3 GPUs of 4
    return from_dense([[1, 2], [1]], [[[3, 1], [4, 0]], [[3, 0]]], [4, 5], choose="exactly_one",
                      row_names=("gpu", "cpu"), name="inf")


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeasible_is_a_status_with_conflicting_rows(backend):
    res = solve_core(infeasible_instance(), SolveOptions(), backend)
    assert res.status == Status.INFEASIBLE
    assert res.solution is None and res.objective is None
    assert res.stats["conflicting_rows"] == ["gpu"]
    assert "gpu" in res.message


def test_time_limit_returns_incumbent_and_bound(data):
    inst = dlsched.load(data / "orlib/mkp/mknapcb4.txt", problem=0)
    seen = []
    res = dlsched.solve(inst, time_limit=0.5, threads=1, on_incumbent=seen.append)
    assert res.status == Status.FEASIBLE and res.termination == "time_limit"
    assert res.bound >= res.objective and res.gap > 0
    assert dlsched.check(inst, res).feasible
    assert seen and seen[-1].objective == pytest.approx(res.objective)
    assert all(a.objective <= b.objective for a, b in zip(seen, seen[1:]))


def test_warm_start_is_used():
    # HiGHS told to stop before it can find a solution of its own (no presolve, no node): the
    # cold run has none, the warm run returns exactly the (poor) warm start
    from dlsched.instance.generate import random_mcmdk

    inst = random_mcmdk(30, 4, 3, 1)
    start = np.full(inst.n_jobs, -1)
    start[0] = 0
    stop = {"mip_max_nodes": 0, "presolve": "off"}
    cold = dlsched.solve(inst, threads=1, raw=stop)
    warm = dlsched.solve(inst, threads=1, raw=stop, warm_start=start)
    assert cold.status == Status.NO_SOLUTION
    assert warm.status == Status.FEASIBLE and warm.solution.tolist() == start.tolist()
    assert warm.objective == inst.value[inst.columns_of(start)].sum()


def test_matrix_form_rows():
    inst = from_dense([[3, 5], [4]], [[[1, 2], [2, 4]], [[2, 5]]], [4, 10], choose="exactly_one")
    mf = build_matrix(inst)
    assert mf.M.toarray().tolist() == [[1, 2, 2], [2, 4, 5], [1, 1, 0], [0, 0, 1]]
    assert mf.row_lower.tolist()[2:] == [1, 1] and mf.row_upper.tolist() == [4, 10, 1, 1]


def test_empty_instance():
    inst = MCMDK(np.zeros(0), sp.csr_matrix((1, 0)), np.ones(1), np.array([0]))
    res = solve_core(inst)
    assert res.status == Status.OPTIMAL and res.objective == 0


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_export_round_trip(tmp_path, data, suffix):
    inst = dlsched.load(data / "orlib/gap/c0515_1", sense="min")
    path = tmp_path / f"m{suffix}"
    write_model(inst, path)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    assert h.getNumCol() == inst.n_cols and h.getNumRow() == inst.n_rows + inst.n_jobs
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(261)


def test_export_rejects_unknown_suffix(tmp_path):
    with pytest.raises(dlsched.InputError, match="ending in .mps or .lp"):
        write_model(infeasible_instance(), tmp_path / "m.txt")


def test_bundled_references_equal_brute_force_where_enumerable(instances_dir):
    """Recorded optima of bundled instances whose core has at most 10^5 choices, by enumeration."""
    checked = 0
    for path in sorted(instances_dir.glob("*.json")):
        inst = dlsched.load(path)
        if not hasattr(inst, "to_core") or getattr(inst, "reference", None) is None:
            continue
        core = inst.to_core()
        if np.prod((core.n_configs + 1).astype(float)) > 1e5:
            continue
        assert brute_force(core) == pytest.approx(inst.reference.objective), path
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_positive_gap_tolerance_is_not_called_optimal(data, backend):
    """HiGHS says "optimal" when it stops at a requested gap; dlsched says feasible / gap_limit."""
    inst = dlsched.load(data / "orlib/mkp/mknap1.txt", problem=6)
    res = dlsched.solve(inst, backend=backend, gap=0.2, threads=1)
    assert res.status == Status.FEASIBLE and res.termination == "gap_limit"
    assert res.objective < inst.reference.objective <= res.bound
    assert dlsched.check(inst, res).feasible

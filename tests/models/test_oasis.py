"""oasis family: instance, utilities, file format, generator, checker (MODELS.md §3.1)."""

import copy
import json

import numpy as np
import pytest

from dlsched.check import check_oasis
from dlsched.errors import InputError
from dlsched.instance import jsonio
from dlsched.instance.oasis import Utility, schedule_from_dense, schedule_utility
from dlsched.instance.oasis_gen import generate, small


def tiny_doc():
    return {
        "format": "dlsched/1", "family": "oasis", "name": "tiny", "horizon": 4, "slot_seconds": 60,
        "resources": ["gpu", "cpu"],
        "worker_servers": [{"name": "w", "capacity": {"gpu": 2, "cpu": 8}, "count": 2}],
        "ps_servers": [{"name": "p", "capacity": {"cpu": 4}}],
        "jobs": [
            {"name": "a", "arrival": 1, "chunks": 2, "minibatches": 1, "epochs": 2, "tau": 0.5, "grad_mb": 0,
             "worker_gbps": 1, "ps_gbps": 2, "worker_demand": {"gpu": 1, "cpu": 2}, "ps_demand": {"cpu": 1},
             "utility": {"kind": "sigmoid", "gamma1": 10, "gamma2": 1, "gamma3": 2}},
            {"name": "b", "arrival": 2, "chunks": 1, "minibatches": 2, "epochs": 1, "tau": 1.0, "grad_mb": 0,
             "worker_gbps": 1, "ps_gbps": 1, "worker_demand": {"gpu": 2}, "ps_demand": {"cpu": 2},
             "utility": {"kind": "step", "value": 5, "deadline": 2}},
        ],
    }


def test_parse_and_derived_quantities():
    inst = jsonio.parse_document(tiny_doc())
    assert inst.n_worker_servers == 2 and inst.n_ps_servers == 1
    # R = E N M (tau + 2e/b): job a 2*2*1*0.5 = 2, job b 1*1*2*1 = 2 worker-slots
    assert inst.work().tolist() == [2, 2]
    assert inst.min_duration().tolist() == [1, 2]
    assert inst.ps_needed(0, np.array([0, 1, 2, 3])).tolist() == [0, 1, 1, 2]
    assert inst.worker_fit().tolist() == [[2, 2], [1, 1]]
    assert float(inst.utility_of(1, 2)) == 5 and float(inst.utility_of(1, 3)) == 0


def test_roundtrip(tmp_path):
    inst = generate(20, horizon=50, worker_servers=4, ps_servers=3, seed=3)
    path = tmp_path / "x.json"
    jsonio.save_json(inst, path)
    back = jsonio.load_json(path)
    for f in ("arrival", "chunks", "tau", "worker_demand", "ps_cap", "worker_cap"):
        assert np.array_equal(getattr(back, f), getattr(inst, f)), f
    assert [u.to_dict() for u in back.utilities] == [u.to_dict() for u in inst.utilities]
    assert back.job_classes == inst.job_classes


def test_utilities():
    sig = Utility("sigmoid", {"gamma1": 10, "gamma2": 0, "gamma3": 3})
    assert float(sig(100)) == 5.0  # time-insensitive: constant gamma1 / 2
    lin = Utility("linear", {"value": 10, "slope": 3})
    assert lin(np.array([1, 2, 4, 5])).tolist() == [10, 7, 1, 0]
    d = np.arange(1, 50)
    for u in (Utility("sigmoid", {"gamma1": 50, "gamma2": 5, "gamma3": 4}), lin,
              Utility("step", {"value": 3, "deadline": 7, "after": 1})):
        assert np.all(np.diff(u(d)) <= 0)


@pytest.mark.parametrize("edit, where, text", [
    (lambda d: d["jobs"][0]["utility"].update(gamma2=-1), "$.jobs[0].utility.gamma2", "does not increase"),
    (lambda d: d["jobs"][1]["utility"].update(after=9), "$.jobs[1].utility.after", "does not increase"),
    (lambda d: d["jobs"][0].update(utility={"kind": "linear", "value": 1, "slope": -2}), "$.jobs[0].utility.slope", "does not increase"),
    (lambda d: d["jobs"][1].update(arrival=5), "$.jobs[1].arrival", "horizon"),
    (lambda d: [s["capacity"].update(gpu=0) for s in d["worker_servers"]], "$.resources[0]", "zero everywhere"),
    (lambda d: d["jobs"][0]["worker_demand"].update(tpu=1), "$.jobs[0].worker_demand.tpu", "listed resource"),
    (lambda d: d["jobs"][0].update(chunks=0), "$.jobs[0].chunks", ">= 1"),
])
def test_bad_input_names_the_place(edit, where, text):
    doc = copy.deepcopy(tiny_doc())
    edit(doc)
    with pytest.raises(InputError) as err:
        jsonio.parse_document(doc, "f.json")
    assert err.value.where == where
    assert "f.json" in str(err.value) and text in str(err.value)


def test_job_too_big_for_every_server_has_a_reason():
    doc = tiny_doc()
    doc["jobs"][1]["worker_demand"]["gpu"] = 3
    inst = jsonio.parse_document(doc)
    assert "exceeds every worker server" in inst.infeasible_reason(1)
    assert inst.infeasible_reason(0) is None


def test_generator_seeded_and_mix():
    a, b = generate(400, seed=5), generate(400, seed=5)
    assert np.array_equal(a.arrival, b.arrival) and a.job_classes == b.job_classes
    assert not np.array_equal(a.arrival, generate(400, seed=6).arrival)
    frac = {c: a.job_classes.count(c) / 400 for c in set(a.job_classes)}
    assert abs(frac["time-insensitive"] - 0.10) < 0.05 and abs(frac["time-critical"] - 0.35) < 0.07
    assert a.arrival.min() >= 1 and a.arrival.max() <= 300
    assert a.epochs.min() >= 50 and a.epochs.max() <= 200 and a.chunks.max() <= 100
    g2 = np.array([u.params["gamma2"] for u in a.utilities])
    crit = np.array([c == "time-critical" for c in a.job_classes])
    assert g2[crit].min() >= 4 and g2[crit].max() <= 6
    s = small(0)
    assert s.n_jobs == 10 and s.horizon == 10 and 3 <= s.n_worker_servers + s.n_ps_servers <= 12


def test_trace_arrivals():
    inst = generate(80, horizon=100, seed=1, arrivals="trace")
    assert inst.arrival.min() == 1 and inst.arrival.max() <= 100
    assert np.all(np.diff(inst.arrival) >= 0)


def _valid_tiny():
    inst = jsonio.parse_document(tiny_doc())
    y = np.zeros((2, 4, 2))
    z = np.zeros((2, 4, 1))
    y[0, 0, 0] = 2          # job a: 2 workers in slot 1 on server 0 -> done in slot 1
    z[0, 0, 0] = 1          # b*2 = 2 <= B*1 = 2
    y[1, 1, 1] = 1          # job b: one worker in slots 2 and 3 on server 1
    y[1, 2, 1] = 1
    z[1, 1, 0] = 1
    z[1, 2, 0] = 1
    return inst, schedule_from_dense(inst, y, z)


def test_checker_accepts_and_recomputes():
    inst, sched = _valid_tiny()
    assert sched.completion.tolist() == [1, 3]
    rep = check_oasis(inst, sched, 10 / (1 + np.exp(-1)) + 5.0)
    assert rep.feasible, rep.violations
    assert rep.objective == pytest.approx(schedule_utility(inst, sched))


@pytest.mark.parametrize("mutate, text", [
    (lambda s: s.workers.__setitem__((0, 3), 3), "gpu used"),
    (lambda s: s.ps.__setitem__(slice(None), s.ps[s.ps[:, 0] != 0][0]), "PS bandwidth"),
    (lambda s: s.completion.__setitem__(1, 2), "last slot with workers"),
    (lambda s: s.admitted.__setitem__(1, False), "not admitted"),
])
def test_checker_rejects(mutate, text):
    inst, sched = _valid_tiny()
    mutate(sched)
    rep = check_oasis(inst, sched)
    assert not rep.feasible and any(text in v for v in rep.violations), rep.violations


def test_checker_work_and_arrival():
    inst, sched = _valid_tiny()
    sched.workers = sched.workers[:-1]   # job b loses a worker-slot
    rep = check_oasis(inst, sched)
    assert any("needs 2" in v for v in rep.violations)
    inst, sched = _valid_tiny()
    sched.workers[sched.workers[:, 0] == 1, 1] -= 1   # job b runs in slot 1, before arrival 2
    sched.ps[sched.ps[:, 0] == 1, 1] -= 1
    sched.completion[1] = 2
    assert any("before its arrival" in v for v in check_oasis(inst, sched).violations)
    rep = check_oasis(*_valid_tiny(), claimed_objective=1.0)
    assert any("claimed total utility" in v for v in rep.violations)


def test_solution_json_roundtrip():
    from dlsched.instance.oasis_json import dump_solution, parse_solution

    inst, sched = _valid_tiny()
    sched.reasons[5] = "x"
    doc = json.loads(json.dumps(dump_solution(sched)))
    back = parse_solution(inst, doc, "s.json")
    assert check_oasis(inst, back).feasible
    assert back.completion.tolist() == [1, 3]
    with pytest.raises(InputError) as err:
        parse_solution(inst, {"jobs": [{"job": 0, "admitted": True, "workers": [[1, 0]]}]}, "s.json")
    assert err.value.where == "$.solution.jobs[0].workers[0]"


# ----------------------------------------------------------------------------- offline MILP

from dlsched.models.oasis import build_matrix  # noqa: E402
from dlsched.solvers.oasis_offline import solve_offline  # noqa: E402
from dlsched.solvers.options import SolveOptions  # noqa: E402


@pytest.mark.parametrize("seed", range(3))
def test_three_front_ends_agree(seed):
    inst = small(seed, n_jobs=5, horizon=6)
    vals = {}
    for backend in ("highs", "pyomo", "cvxpy"):
        res = solve_offline(inst, SolveOptions(threads=1), backend)
        assert res.status.value == "optimal"
        rep = check_oasis(inst, res.solution, res.objective)
        assert rep.feasible, (backend, rep.violations)
        vals[backend] = res.objective
    assert vals["pyomo"] == pytest.approx(vals["highs"], rel=1e-6)
    assert vals["cvxpy"] == pytest.approx(vals["highs"], rel=1e-6)


def test_tightening_keeps_the_optimum_and_lp_bounds_it():
    from dlsched.solvers.highs import solve_matrix

    inst = small(4, n_jobs=6, horizon=8)
    base = solve_offline(inst, SolveOptions(threads=1), warm=False)
    assert check_oasis(inst, base.solution, base.objective).feasible
    opt = base.objective
    for kw in ({"symmetry": True}, {"server_link": True}, {"cumulative_work": True}):
        tight = solve_offline(inst, SolveOptions(threads=1), warm=False, **kw)
        assert tight.objective == pytest.approx(opt, rel=1e-7), kw
        assert check_oasis(inst, tight.solution, tight.objective).feasible
    lp = solve_matrix(build_matrix(inst, relax=True)[0])
    lp_tight = solve_matrix(build_matrix(inst, relax=True, server_link=True, cumulative_work=True, symmetry=True)[0])
    assert lp.objective >= lp_tight.objective - 1e-6 >= opt - 2e-6   # valid rows only cut the LP


def test_offline_on_a_hand_solved_instance():
    # one worker server with 2 GPUs; job a needs 2 worker-slots (N=2), job b 2 worker-slots (N=1)
    # and a deadline of 2 slots: the optimum runs b in slots 2-3 and a beside it -> 10/(1+e^-1) + 5.
    inst = jsonio.parse_document(tiny_doc())
    res = solve_offline(inst, SolveOptions(threads=1))
    assert res.objective == pytest.approx(10 / (1 + np.exp(-1)) + 5.0, rel=1e-9)
    assert check_oasis(inst, res.solution, res.objective).feasible


def test_offline_rejects_a_job_that_fits_nowhere():
    doc = tiny_doc()
    doc["jobs"][1]["worker_demand"]["gpu"] = 3
    inst = jsonio.parse_document(doc)
    res = solve_offline(inst, SolveOptions(threads=1))
    assert not res.solution.admitted[1] and "exceeds every worker server" in res.solution.reasons[1]
    assert check_oasis(inst, res.solution, res.objective).feasible


def test_bundled_instance_reaches_its_reference():
    from pathlib import Path

    import dlsched

    path = Path(__file__).resolve().parents[2] / "instances" / "oasis-tiny.json"
    inst = dlsched.api.load(path)
    assert inst.family == "oasis" and inst.reference is not None
    for backend in ("highs", "pyomo", "cvxpy"):
        res = dlsched.solve(inst, "offline", backend=backend, threads=1)
        assert res.objective == pytest.approx(inst.reference.objective, rel=1e-9), backend
        assert dlsched.check(inst, res).feasible
    online = dlsched.solve(inst, "oasis")
    assert online.objective <= inst.reference.objective + 1e-9 and dlsched.check(inst, online).feasible


def test_solution_file_roundtrip(tmp_path):
    import dlsched

    inst = small(2)
    res = dlsched.solve(inst, "oasis")
    doc = jsonio.solution_document(inst, res)
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(doc))
    sched, claimed = jsonio.load_solution(inst, path)
    rep = check_oasis(inst, sched, claimed)
    assert rep.feasible and rep.objective == pytest.approx(res.objective)

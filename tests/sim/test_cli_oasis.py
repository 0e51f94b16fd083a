"""``dlsched simulate`` on an OASiS instance (a dlsched/1 file of family oasis): the run is the library's engine run
on :func:`dlsched.policies.oasis.to_trace` (slots of 1 s, ``max_time`` = T), ``--decision-budget`` reaches the
OASiS-family policies, and the options the instance brings itself are refused."""

import json

import numpy as np
import pytest

import dlsched
from dlsched import cli_simulate
from dlsched.cli import main
from dlsched.instance.oasis_gen import small
from dlsched.policies.oasis import to_trace
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def instance_file(tmp_path):
    inst = small(5)
    path = tmp_path / "small5.json"
    dlsched.save(inst, path)
    return inst, str(path)


@pytest.mark.parametrize("policy", ["oasis", "dorm", "risk_reward"])
def test_the_cli_run_of_an_oasis_instance_is_the_library_run(capsys, instance_file, policy):
    inst, path = instance_file
    code, out, _ = run(capsys, "simulate", path, "--policy", policy, "--json", "--jobs")
    assert code == 0
    doc = json.loads(out)
    trace, cluster, speed = to_trace(inst, slot_seconds=1.0)
    lib = simulate(trace, cluster, make_policy(policy), speed, max_time=float(inst.horizon))
    assert doc["max_time"] == inst.horizon and doc["speed"] == "OasisSpeed" and doc["jobs"] == inst.n_jobs
    assert [(j["name"], j["first_start"], j["completion"]) for j in doc["job_results"]] == \
        [(j["name"], j["first_start"], j["completion"]) for j in json.loads(lib.to_json(jobs=True))["job_results"]]
    # the utility of the jobs finished by T is the family method's objective (dlsched solve --method POLICY)
    assert doc["total_utility"] == pytest.approx(dlsched.solve(inst, policy).objective)
    assert doc["completed"] == int(np.sum(np.isfinite(lib.completion)))


@pytest.mark.parametrize("policy", ["oasis", "dorm"])
def test_the_decision_budget_reaches_an_oasis_policy(capsys, monkeypatch, instance_file, policy):
    _, path = instance_file
    seen = []
    monkeypatch.setattr(cli_simulate, "simulate", lambda tr, cl, pol, *a, **k: seen.append(pol) or simulate(tr, cl, pol, *a, **k))
    code, out, err = run(capsys, "simulate", path, "--policy", policy, "--decision-budget", "250", "--json")
    assert code == 0 and "takes no decision budget" not in err
    assert [p.decision_record.seconds for p in seen] == [0.25]
    doc = json.loads(out)
    assert doc["decision_gap"]["decisions"] >= 1 and doc["decisions_uncertified"] == 0


def test_the_bundled_tiny_instance_reaches_its_optimum_under_oasis(capsys, instances_dir):
    code, out, _ = run(capsys, "simulate", str(instances_dir / "oasis-tiny.json"), "--policy", "oasis", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["completed"] == 2 and doc["total_utility"] == pytest.approx(12.310585786300049)


def test_an_oasis_run_reads_its_simulated_times_in_slots(capsys, instances_dir):
    """Time in an OASiS run is slots (Δ = 1 s in the engine): the summary, the table and the JSON say so; the wall
    time and the decision latency stay seconds. A trace's run keeps seconds."""
    path = str(instances_dir / "oasis-tiny.json")
    code, out, _ = run(capsys, "simulate", path, "--policy", "oasis")
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.splitlines() if line.count("│") == 3}
    assert code == 0 and rows["JCT avg / median"] == "1.5 slots / 1.5 slots" and rows["makespan"] == "3 slots"
    assert rows["lower bound on avg JCT"].startswith("1.5 slots") and rows["wall"].endswith(" ms")
    code, out, _ = run(capsys, "simulate", path, "--policy", "oasis,dorm")
    assert code == 0 and "(slots)" in out and "wall (s)" in out and "JCT\n(s)" not in out
    code, out, _ = run(capsys, "simulate", path, "--policy", "oasis", "--json")
    assert code == 0 and json.loads(out)["time_unit"] == "slot"
    assert dlsched.simulate(path, policy="oasis").extra["time_unit"] == "slot"
    code, out, _ = run(capsys, "simulate", "dl2:3:1", "--policy", "fifo", "--bound", "none")
    assert code == 0 and "slots" not in out
    assert "time_unit" not in dlsched.simulate("dl2:3:1", policy="fifo").extra


@pytest.mark.parametrize("extra,flag", [(["--cluster", "dl2:4"], "--cluster"), (["--speed", "table"], "--speed"),
                                        (["--max-time", "100"], "--max-time"), (["--inflate", "2"], "--inflate"),
                                        (["--target-load", "0.5"], "--target-load")])
def test_options_an_oasis_instance_brings_itself_are_refused(capsys, instances_dir, extra, flag):
    code, out, err = run(capsys, "simulate", str(instances_dir / "oasis-tiny.json"), "--policy", "oasis", *extra)
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"at {flag}: expected none with an OASiS instance" in err


def test_an_oasis_policy_on_a_trace_and_a_non_oasis_instance_are_refused(capsys, instances_dir):
    code, _, err = run(capsys, "simulate", "dl2:5", "--policy", "fifo,dorm")
    assert code == 2 and "at --policy: expected an OASiS instance" in err and "'dorm'" in err and "dl2:5" in err
    smd = str(instances_dir / "smd-small.json")
    code, _, err = run(capsys, "simulate", smd, "--policy", "oasis")
    assert code == 2 and smd in err and "family oasis" in err and "found smd" in err and "Traceback" not in err


@pytest.mark.parametrize("policy", ["oasis", "dorm"])
def test_the_library_call_on_an_oasis_instance_file_is_the_cli_run(capsys, instance_file, policy):
    """``dlsched.simulate(PATH, policy=...)`` takes an OASiS instance file as ``dlsched simulate PATH`` does."""
    _, path = instance_file
    code, out, _ = run(capsys, "simulate", path, "--policy", policy, "--json", "--jobs")
    res = dlsched.simulate(path, policy=policy, params={"budget_ms": 100000.0})
    assert code == 0 and res.max_time == json.loads(out)["max_time"]
    assert [(j["name"], j["first_start"], j["completion"]) for j in json.loads(out)["job_results"]] == \
        [(j["name"], j["first_start"], j["completion"]) for j in json.loads(res.to_json(jobs=True))["job_results"]]


def test_the_library_call_refuses_what_an_oasis_instance_brings_and_an_oasis_policy_elsewhere(instance_file):
    _, path = instance_file
    for kw, where in (({"cluster": "dl2:4"}, "cluster"), ({"speed": "table"}, "speed"), ({"max_time": 10.0}, "max_time")):
        with pytest.raises(dlsched.InputError) as e:
            dlsched.simulate(path, policy="oasis", **kw)
        assert e.value.where == where and "OASiS instance" in e.value.expected
    with pytest.raises(dlsched.InputError) as e:
        dlsched.simulate("dl2:5", policy="dorm")
    assert e.value.where == "policy" and "OASiS instance" in e.value.expected

"""The CLI contract: one JSON object with --json, one clear line and exit 2 on bad input."""

import json
import subprocess
import sys

import pytest

from dlsched.cli import main

CONTRACT = ("status", "objective", "bound", "gap", "build_seconds", "solve_seconds", "method", "backend")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("backend", ["highs", "pyomo", "cvxpy"])
def test_solve_json_contract(capsys, data, backend):
    code, out, err = run(capsys, "solve", str(data / "orlib/mkp/mknap1.txt"), "--problem", "2",
                         "--backend", backend, "--gap", "0", "--json")
    assert code == 0
    doc = json.loads(out)  # exactly one JSON object
    for key in CONTRACT:
        assert key in doc
    assert doc["status"] == "optimal" and doc["objective"] == 4015 and doc["backend"] == backend
    assert doc["checked"] is True


def test_solve_table(capsys, instances_dir):
    code, out, _ = run(capsys, "solve", str(instances_dir / "dl-small.json"))
    assert code == 0 and "713.3" in out and "feasible" in out


def test_solve_out_then_check(capsys, tmp_path, data):
    sol = tmp_path / "sol.json"
    gap = str(data / "orlib/gap/c0515_1")
    assert run(capsys, "solve", gap, "--sense", "max", "--out", str(sol), "--json")[0] == 0
    code, out, _ = run(capsys, "check", gap, str(sol), "--sense", "max", "--json")
    assert code == 0 and json.loads(out) == {"feasible": True, "objective": 336.0, "violations": []}
    # a corrupted solution is rejected with the reason
    doc = json.loads(sol.read_text())
    doc["solution"][0] = (doc["solution"][0] + 1) % 5
    doc["solution"][1] = (doc["solution"][1] + 1) % 5
    sol.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", gap, str(sol), "--sense", "max")
    assert code == 1 and "INFEASIBLE" in out


def test_convert_and_export(capsys, tmp_path, data):
    js = tmp_path / "p.json"
    assert run(capsys, "convert", str(data / "orlib/mkp/mknap1.txt"), "--problem", "4", str(js))[0] == 0
    code, out, _ = run(capsys, "solve", str(js), "--json")
    assert json.loads(out)["objective"] == json.loads(js.read_text())["reference"]["objective"]
    assert run(capsys, "export", str(js), str(tmp_path / "p.lp"))[0] == 0
    assert (tmp_path / "p.lp").read_text().strip()


@pytest.mark.parametrize("argv, fragment", [
    (["solve", "{data}/orlib/mkp/mknap1.txt", "--problem", "9"], "at --problem: expected a problem index in 0..6, found 9"),
    (["solve", "{data}/orlib/mkp/mknap1.txt", "--method", "magic"], "at method: expected one of"),
    (["solve", "{data}/orlib/mkp/mknap1.txt", "--time-limit", "-1"], "at time_limit: expected a positive number"),
    (["solve", "{data}/orlib/mkp/mknap1.txt", "--samples", "5"], "at --samples: expected a flag method 'exact' takes"),
    (["solve", "{data}/orlib/mkp/mknap1.txt", "--method", "sample", "-P", "seed=3"], "at -P seed: expected --seed S"),
    (["solve", "/no/such/file.json"], "/no/such/file.json: at file: expected an existing file"),
    (["export", "{data}/orlib/mkp/mknap1.txt", "out.xyz"], "expected a name ending in .mps or .lp"),
])
def test_bad_input_exits_2_with_one_line(capsys, data, argv, fragment):
    argv = [a.format(data=data) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("dlsched: error: ") and fragment in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_backend_choice_is_usage_error(data):
    proc = subprocess.run([sys.executable, "-m", "dlsched", "solve", str(data / "orlib/mkp/mknap1.txt"), "--backend", "gurobi"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice: 'gurobi'" in proc.stderr


def test_infeasible_is_reported_not_an_error(capsys, tmp_path):
    doc = {"format": "dlsched/1", "family": "mcmdk", "name": "inf", "choose": "exactly_one",
           "rows": [{"name": "gpu", "capacity": 2}],
           "jobs": [{"configurations": [{"value": 1, "use": [2]}]}, {"configurations": [{"value": 1, "use": [1]}]}]}
    p = tmp_path / "inf.json"
    p.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "solve", str(p), "--json")
    res = json.loads(out)
    assert code == 0 and res["status"] == "infeasible" and "gpu" in res["message"]


def test_debug_shows_traceback(data):
    proc = subprocess.run([sys.executable, "-m", "dlsched", "--debug", "solve", str(data / "orlib/mkp/mknap1.txt"),
                           "--problem", "9"], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_bench_quick_json(capsys):
    code, out, _ = run(capsys, "bench", "quick", "--json", "--backends", "highs")
    doc = json.loads(out)
    assert code == 0 and not doc["problems"] and len(doc["rows"]) >= 6
    assert doc["environment"]["highs"] and doc["environment"]["threads"] == 1


def test_methods_lists_exact(capsys):
    code, out, _ = run(capsys, "methods")
    assert code == 0 and "exact" in out


def test_c_level_writes_to_fd1_do_not_reach_stdout():
    """HiGHS's C++ code can write to fd 1; under the CLI it goes to stderr, Python's prints stay."""
    code = ("import os\nfrom dlsched.console import python_stdout_only\n"
            "with python_stdout_only():\n    os.write(1, b'noise from C\\n')\n    print('{\"a\": 1}')\n"
            "print('after')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout == '{"a": 1}\nafter\n' and "noise from C" in proc.stderr


def test_generic_layers_only_where_the_checker_takes_core_solutions(capsys, instances_dir):
    code, _, err = run(capsys, "solve", str(instances_dir / "oasis-tiny.json"), "--method", "core")
    assert code == 2 and "for family 'oasis'" in err and "core" not in err.split("expected")[1].split("found")[0]
    code, _, err = run(capsys, "solve", str(instances_dir / "placement-small.json"), "--method", "lp-round")
    assert code == 2 and "for family 'placement'" in err

"""The CLI contract: one JSON object with --json, one clear line and exit 2 on bad input."""

import importlib
import json
import os
import subprocess
import sys

import pytest

import dlsched
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


def table_rows(out: str) -> dict[str, str]:
    """The ``key | value`` rows of a printed result table."""
    cells = [[c.strip() for c in line.split("\u2502")] for line in out.splitlines() if line.count("\u2502") == 3]
    return {c[1]: c[2] for c in cells}


def test_solve_table(capsys, instances_dir):
    code, out, _ = run(capsys, "solve", str(instances_dir / "dl-small.json"))
    rows = table_rows(out)
    # the solve's own rows (not the reference row, which also shows 713.3), and the checker's verdict
    assert code == 0 and rows["status"] == "optimal (optimal)" and float(rows["objective"]) == pytest.approx(713.3)
    assert float(rows["bound"]) == pytest.approx(713.3) and rows["checker"] == "feasible"


def test_solve_table_shows_a_rejection(capsys, instances_dir, monkeypatch):
    """The table's checker row can say something else than 'feasible' (and the exit code is 1)."""
    checker = importlib.import_module("dlsched.check")
    monkeypatch.setattr(checker, "check_mcmdk", lambda inst, sol, claimed=None: checker.CheckReport(False, None, ["made up"]))
    code, out, _ = run(capsys, "solve", str(instances_dir / "dl-small.json"))
    assert code == 1 and table_rows(out)["checker"] == "REJECTED: made up"


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


def test_check_finds_the_problem_a_solution_records(capsys, tmp_path, data):
    """A solution of problem 3 of mknap1 is checked against problem 3 without --problem (it
    records the instance mknap1-3); given another problem it is refused, not found infeasible."""
    sol, mkp = tmp_path / "p3.json", str(data / "orlib/mkp/mknap1.txt")
    code, _, err = run(capsys, "solve", mkp, "--problem", "3", "--out", str(sol))
    assert code == 0 and f"wrote {sol}" in err          # issue 24: --out said nothing of what it wrote
    code, out, _ = run(capsys, "check", mkp, str(sol), "--json")
    assert code == 0 and json.loads(out)["feasible"] is True
    code, _, err = run(capsys, "check", mkp, str(sol), "--problem", "2")
    assert code == 2 and "$.instance" in err and "'mknap1-3'" in err and "--problem" in err


def test_a_reference_of_another_objective_is_not_shown_as_the_methods(capsys, instances_dir):
    """smd-small.json's reference is its §2.2 epoch optimum; the `smd` method returns a schedule's
    Σ ω_j C_j: the JSON gives no reference for it and says what its objective is; `exact` keeps it."""
    inst = str(instances_dir / "smd-small.json")
    _, out, _ = run(capsys, "solve", inst, "--method", "smd", "--json")
    doc = json.loads(out)
    assert doc["reference"] is None and "Σ ω_j C_j" in doc["objective_of"]
    _, out, _ = run(capsys, "solve", inst, "--method", "exact", "--json")
    doc = json.loads(out)
    assert doc["reference"] == pytest.approx(doc["objective"]) and doc["objective_of"] == ""


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
    (["export", "{instances}/oasis-tiny.json", "{tmp}/o.lp"], "expected a family that reduces to the core MCMDK"),
    (["solve", "{instances}/dl-small.json", "--sense", "max"], "--sense is for GAP files"),
    (["solve", "{instances}/dl-small.json", "--out", "{instances}/dl-small.json"], "expected a path other than the input files"),
    (["solve", "{instances}/dl-small.json", "--out", "{tmp}/no/such/dir/s.json"], "expected a path in an existing folder"),
    (["solve", "{instances}/dl-small.json", "--out", "{tmp}"], "is a directory"),
    (["convert", "{instances}/dl-small.json", "{instances}/dl-small.json"], "expected a path other than the input files"),
    (["export", "{instances}/dl-small.json", "{tmp}/missing/x.lp"], "expected a path in an existing folder"),
    (["check", "{instances}/dl-small.json", "{tmp}"], "found a directory"),
    (["check", "{instances}/dl-small.json", "{instances}/dl-small.json"], "expected 'solution'"),
])
def test_bad_input_exits_2_with_one_line(capsys, data, instances_dir, tmp_path, argv, fragment):
    argv = [a.format(data=data, instances=instances_dir, tmp=tmp_path) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("dlsched: error: ") and fragment in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_out_into_a_read_only_folder_is_refused_before_solving(capsys, instances_dir, tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    solved = []
    monkeypatch.setattr("dlsched.solve", lambda *a, **k: solved.append(1))
    try:
        code, _, err = run(capsys, "solve", str(instances_dir / "dl-small.json"), "--out", str(ro / "s.json"))
    finally:
        ro.chmod(0o700)
    if os.geteuid() == 0:  # root writes anywhere: then the file is simply written
        return
    assert code == 2 and "not writable" in err and not solved


@pytest.mark.parametrize("edit, code, fragment", [
    (lambda d: d.update(objective=float("nan")), 2, "at $.objective: expected a finite number"),
    (lambda d: d.update(objective="713.3"), 2, "at $.objective: expected a number or null"),
    (lambda d: d.update(objective=d["objective"] + 1), 1, "claimed objective"),
    (lambda d: d["solution"].__setitem__(0, 1e30), 2, "below 1e15"),
    (lambda d: d["solution"].__setitem__(0, 0.5), 2, "expected an integer"),
    (lambda d: d["solution"].__setitem__(0, 99), 1, "chose configuration 99"),
])
def test_check_exit_codes(capsys, instances_dir, tmp_path, edit, code, fragment):
    """1 only for a rejection, 2 for a file that is not a solution, never a traceback."""
    sol = tmp_path / "s.json"
    assert run(capsys, "solve", str(instances_dir / "dl-small.json"), "--out", str(sol), "--json")[0] == 0
    doc = json.loads(sol.read_text())
    edit(doc)
    sol.write_text(json.dumps(doc))
    got, out, err = run(capsys, "check", str(instances_dir / "dl-small.json"), str(sol))
    assert got == code and fragment in (out + err) and "Traceback" not in err


def test_internal_error_exits_3_without_traceback(capsys, instances_dir, monkeypatch):
    def boom(*a, **k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("dlsched.solve", boom)
    code, _, err = run(capsys, "solve", str(instances_dir / "dl-small.json"))
    assert code == 3 and "internal error: ZeroDivisionError: boom" in err and "Traceback" not in err


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


def test_version_and_did_you_mean(capsys, instances_dir):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"dlsched {dlsched.__version__}"
    code, _, err = run(capsys, "simulate", "dl2:3", "--policy", "DRF")
    assert code == 2 and "did you mean 'drf'?" in err
    code, _, err = run(capsys, "solve", str(instances_dir / "dl-small.json"), "--method", "exact-")
    assert code == 2 and "did you mean 'exact'?" in err


def test_listing_the_policies_loads_no_policy_module():
    """`dlsched policies` reads each class's first docstring line from its source: no policy module
    and no torch is imported (it took 6.4 s, most of it importing torch for dl2's line)."""
    code = ("import sys\nfrom dlsched.cli import main\nmain(['policies'])\n"
            "loaded = [m for m in sys.modules if m.startswith('dlsched.policies.') or m == 'torch' or m == 'dlsched.rl.policy']\n"
            "assert not loaded, loaded")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1].startswith("dl2 ")


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_exported_models_carry_the_instance_names(capsys, instances_dir, tmp_path, suffix):
    """Rows and columns are named after the instance's jobs, configurations and resources (they were
    c0.../r0...), and HiGHS reading the file back finds the recorded optimum."""
    import highspy

    inst = dlsched.load(instances_dir / "dl-small.json")
    out = tmp_path / f"m{suffix}"
    assert run(capsys, "export", str(instances_dir / "dl-small.json"), str(out))[0] == 0
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(out))
    names = [h.getColName(k)[1] for k in range(h.getNumCol())]
    assert names[0] == f"x_{inst.job_names[0]}_{inst.config_labels[0]}" and len(set(names)) == len(names)
    assert h.getRowName(0)[1] == f"cap_{inst.row_names[0]}"
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(inst.reference.objective)


def test_a_reader_that_leaves_early_ends_the_command_quietly():
    """`dlsched policies | head -1`: the pipe closes before dlsched writes; exit 0, nothing on stderr
    (it was exit 120 with "Exception ignored ... BrokenPipeError")."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "dlsched", "policies"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=120) == 0 and err == b"", err

"""The simulator's and the harness's inputs hold the contract (issue 25): a suite file's values are
checked before anything runs, sizes have limits, CSV rows with a field more or less are errors
naming the line, and speed detection judges a type by a job that fits the cluster. Each bad
input gives one line naming the file and the field, and exit 2."""

from __future__ import annotations

import csv
import json

import pytest

from dlsched.bench.results import read_results
from dlsched.cli import main
from dlsched.data import data_dir
from dlsched.errors import InputError

TIRESIAS = str(data_dir() / "tiresias" / "60_job.csv")
N32G4 = str(data_dir() / "tiresias" / "n32g4.csv")

SUITE = """kind = "simulate"
restart_seconds = {restart}
[cluster]
generator = "dl2"
params = {{ n_servers = {servers} }}
[[traces]]
generator = "dl2"
seeds = [1]
params = {{ n_jobs = {jobs} }}
[[policies]]
name = "drf"
params = {params}
"""


def _refused(capsys, argv, *parts):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error" not in err, err
    for part in parts:
        assert part in err, err
    return err


@pytest.mark.parametrize("values, field", [
    ({"servers": 0}, "cluster.params.n_servers"),
    ({"servers": 100_000_000}, "cluster.params.n_servers"),
    ({"jobs": 0}, "traces[0].params.n_jobs"),
    ({"jobs": '"x"'}, "traces[0].params.n_jobs"),
    ({"params": '{ placer = "nonsense" }'}, "policies[0].params.placer"),
    ({"params": "{ bogus = 1 }"}, "policies[0].params.bogus"),
    ({"restart": "inf"}, "restart_seconds"),
])
def test_suite_values_are_checked_before_any_run(tmp_path, capsys, values, field):
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE.format(**{"restart": 0.0, "servers": 2, "jobs": 4, "params": "{}", **values}))
    out = tmp_path / "r.jsonl"
    _refused(capsys, ["bench", "run", str(suite), "--out", str(out), "--no-progress"], str(suite), f"at {field}:")
    assert not out.exists()


def test_a_suite_of_random_bytes_and_bad_flags_are_refused(tmp_path, capsys):
    suite = tmp_path / "s.toml"
    suite.write_bytes(bytes(range(256)) * 4)
    _refused(capsys, ["bench", "run", str(suite), "--out", str(tmp_path / "r.jsonl")], str(suite), "UTF-8")
    suite.write_text(SUITE.format(restart=0.0, servers=2, jobs=4, params="{}"))
    _refused(capsys, ["bench", "run", str(suite), "--max-cells", "-1"], "--max-cells")
    assert not (tmp_path / "r.jsonl").exists()


def test_method_parameters_of_a_solve_suite_are_typed(tmp_path, capsys):
    suite = tmp_path / "s.toml"
    suite.write_text('[[instances]]\nkind = "generated"\ngenerator = "mcmdk"\nparams = { n_jobs = 4, n_configs = 2, '
                     'n_rows = 2 }\n[[methods]]\nname = "sample"\nparams = { samples = "x" }\n')
    _refused(capsys, ["bench", "run", str(suite), "--out", str(tmp_path / "r.jsonl")], "methods[0].params.samples",
             "an integer for method 'sample'")


def test_sizes_have_limits(tmp_path, capsys):
    spec = tmp_path / "big.json"
    spec.write_text(json.dumps({"groups": [{"count": 10**9, "capacity": {"gpu": 4}}]}))
    _refused(capsys, ["simulate", TIRESIAS, "--policy", "fifo", "--cluster", str(spec)], "at most 100,000 servers")
    gavel = tmp_path / "cluster_specs.json"
    gavel.write_text(json.dumps({"philly": ["999999999:0:0"]}))
    _refused(capsys, ["simulate", TIRESIAS, "--policy", "fifo", "--cluster", str(gavel)], "at most 100,000 servers")
    for flag, value, what in (("--inflate", "100000000", "1,000,000 jobs"), ("--arrival-scale", "1e300", "below 1e+15 s"),
                              ("--speed-noise", "-1", "--speed-noise"), ("--speed-noise", "nan", "--speed-noise")):
        _refused(capsys, ["simulate", TIRESIAS, "--policy", "fifo", "--cluster", N32G4, flag, value], what)
    _refused(capsys, ["simulate", "poisson:99999999999", "--policy", "fifo", "--cluster", "2x2"], "1,000,000 jobs")
    _refused(capsys, ["simulate", "poisson:4", "--policy", "fifo", "--cluster", "1" + "0" * 400 + "x4"], "'SxG' servers x GPUs")


def test_a_field_longer_than_csv_allows_names_its_line(tmp_path, capsys):
    rows = list(csv.reader(open(TIRESIAS)))
    rows[3][4] = "x" * 200_000
    path = tmp_path / "long.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    _refused(capsys, ["simulate", str(path), "--policy", "fifo", "--cluster", N32G4], f"{path}: at line 4")


@pytest.mark.parametrize("row, where", [("openb-node-x,64000,262144,2,P100,extra", "line 4"),
                                        ("openb-node-x,64000,262144", "line 4")])
def test_openb_node_rows_with_a_field_more_or_less_are_errors(tmp_path, capsys, row, where):
    nodes = tmp_path / "nodes.csv"
    head = (data_dir() / "alibaba-openb" / "openb_node_list_gpu_node.csv").read_text().splitlines()[:3]
    nodes.write_text("\n".join([*head, row]) + "\n")
    _refused(capsys, ["simulate", "poisson:4", "--policy", "fifo", "--cluster", str(nodes)], f"{nodes}: at {where}:")


def test_speed_detection_judges_a_type_by_a_job_that_fits(tmp_path, capsys):
    """A first vgg19 job of 256 GPUs fits nowhere on 32 x 4: it is unschedulable, the rest run
    (the same as --speed duration gives), not a refused trace."""
    rows = list(csv.reader(open(TIRESIAS)))
    rows[1][1] = "256"
    path = tmp_path / "big_job.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    runs = []
    for extra in ([], ["--speed", "duration"]):
        assert main(["simulate", str(path), "--policy", "fifo", "--cluster", N32G4, "--json", *extra]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0]["unschedulable"] == 1 and runs[0]["completed"] == 59
    assert runs[0]["avg_jct"] == runs[1]["avg_jct"]


def test_results_rows_with_fields_of_the_wrong_type_are_errors(tmp_path):
    path = tmp_path / "r.jsonl"
    head = {"format": "dlsched-bench/1", "version": 1, "suite": "s"}
    for row, field in (({"cell": "a", "method": 100}, "method"), ({"cell": "a", "jct": 100}, "jct"),
                       ({"cell": "a", "avg_jct": "x"}, "avg_jct")):
        path.write_text(json.dumps(head) + "\n" + json.dumps(row) + "\n" + json.dumps({"cell": "b"}) + "\n")
        with pytest.raises(InputError, match=f"line 2 .{field}"):
            read_results(path)
    path.write_text(json.dumps({**head, "suite": 1e-300}) + "\n")
    with pytest.raises(InputError, match="line 1 .suite"):
        read_results(path)

"""Peers as suite methods, per-method limits, data globs and GAP senses, trace scaling, comparing runs,
and the time-limit study: every bundled suite loads."""

from __future__ import annotations

import json

import pytest

from dlsched.bench.results import compare
from dlsched.bench.runner import cells_of, run_suite
from dlsched.bench.suite import load_suite
from dlsched.bench.suitefile import bundled_suites
from dlsched.bench.tasks import run_task_cell
from dlsched.cli import main as cli
from dlsched.errors import InputError

PEER_SUITE = """name = "peer-test"
time_limit = 5.0
[[instances]]
kind = "generated"
name = "cb"
generator = "chu-beasley"
seeds = [3]
params = { m = 3, n = 20, alpha = 0.5 }
[[methods]]
name = "exact"
[[methods]]
name = "lp-round"
time_limit = 0.5
[[methods]]
name = "scip"
"""


def test_every_bundled_suite_loads():
    for name in bundled_suites():
        suite = load_suite(name)
        assert cells_of(suite)[1], name


def test_a_peer_runs_beside_the_methods_and_is_checked(tmp_path):
    pytest.importorskip("pyscipopt")
    (tmp_path / "s.toml").write_text(PEER_SUITE)
    suite = load_suite(tmp_path / "s.toml")
    assert [m.time_limit for m in suite.methods] == [None, 0.5, None]
    rows = {r["method"]: r for r in run_suite(suite, tmp_path / "r.jsonl", progress=False)}
    exact, scip = rows["exact"], rows["scip"]
    assert exact["status"] == scip["status"] == "optimal"
    assert scip["objective"] == pytest.approx(exact["objective"]) and scip["checked"] is True
    assert scip["result_method"] == "scip" and scip["trace"] and scip["bound_valid"] is not False


def test_a_missing_peer_gives_skipped_rows_not_failures(tmp_path, monkeypatch):
    import dlsched.bench.peers as peers

    monkeypatch.setattr(peers, "available", lambda p: False)
    (tmp_path / "s.toml").write_text(PEER_SUITE)
    row = [r for r in run_suite(load_suite(tmp_path / "s.toml"), None, progress=False) if r["method"] == "scip"][0]
    assert row["status"] == "skipped" and "pip install" in row["message"] and "exception" not in row


@pytest.mark.parametrize("edit, where", [
    ('name = "scip"', 'name = "scip"\nparams = { x = 1 }'),
    ("time_limit = 0.5", "time_limit = -1"),
])
def test_bad_peer_or_method_limit_names_the_key(tmp_path, edit, where):
    (tmp_path / "s.toml").write_text(PEER_SUITE.replace(edit, where))
    with pytest.raises(InputError) as e:
        load_suite(tmp_path / "s.toml")
    assert "methods[" in str(e.value)


def test_data_globs_and_gap_senses_make_distinct_instances(tmp_path):
    (tmp_path / "s.toml").write_text('''name = "g"
[[instances]]
kind = "data"
name = "max"
files = ["orlib/gap/c0515_[12]"]
sense = "max"
[[instances]]
kind = "data"
name = "min"
files = ["orlib/gap/c0515_[12]"]
sense = "min"
[[methods]]
name = "exact"
''')
    suite = load_suite(tmp_path / "s.toml")
    assert [r.key for r in suite.instances] == ["c0515_1:max", "c0515_2:max", "c0515_1:min", "c0515_2:min"]
    rows = run_suite(suite, None, progress=False)
    # the recorded optima of bounds.txt: c0515_1 max 336, min 261
    assert [r["objective"] for r in rows if r["instance"].startswith("c0515_1")] == [336, 261]
    assert all(r["gap"] == 0 and r["checked"] for r in rows)


SIM = """name = "scaled"
kind = "simulate"
speed = "duration"
[cluster]
generator = "gpu"
params = { n_servers = 4, gpus_per_server = 4 }
[[traces]]
name = "p"
generator = "poisson"
seeds = [0]
params = { n_jobs = 30 }
inflate = 2.0
target_load = 0.8
[[policies]]
name = "fifo"
"""


def test_trace_scaling_is_applied_and_recorded(tmp_path):
    (tmp_path / "s.toml").write_text(SIM)
    row = run_suite(load_suite(tmp_path / "s.toml"), None, progress=False)[0]
    assert row["status"] == "completed" and row["jobs"] == 60
    assert row["scaling"]["inflation"] == 2.0 and row["scaling"]["offered_load"]["gpu"] == pytest.approx(0.8)
    assert len(row["digest"]) == 16


@pytest.mark.parametrize("extra, key", [("target_peak = 1.0", "target_peak"), ("inflate_seed = -1", "inflate_seed")])
def test_bad_trace_scaling_names_the_key(tmp_path, extra, key):
    (tmp_path / "s.toml").write_text(SIM.replace("target_load = 0.8", f"target_load = 0.8\n{extra}"))
    with pytest.raises(InputError) as e:
        load_suite(tmp_path / "s.toml")
    assert f"traces[0].{key}" in str(e.value)


def test_compare_finds_the_cells_that_differ(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(SIM)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run_suite(load_suite(tmp_path / "s.toml"), a, progress=False)
    b.write_text(a.read_text())
    assert compare(a, b)["identical"] == 1 and cli(["report", "--compare", str(a), str(b)]) == 0
    head, row = a.read_text().splitlines()
    b.write_text(head + "\n" + json.dumps({**json.loads(row), "digest": "0" * 16}) + "\n")
    out = compare(a, b)
    assert out["identical"] == 0 and list(out["differ"].values())[0] == {"digest": [json.loads(row)["digest"], "0" * 16]}
    capsys.readouterr()
    assert cli(["report", "--compare", str(a), str(b)]) == 1


def test_the_time_limit_task_times_one_limited_call():
    suite = load_suite("timelimits-quick")
    cell = next(c for c in suite.tasks if c.kwargs() == {"method": "core", "instance": "mcmdk-500", "limit": 1.0})
    row = run_task_cell(cell, suite.limits())
    r = row["result"]
    # a loaded machine may end the 1 s call before any solution: a status, not an error
    assert row["status"] == "done" and r["status"] in ("optimal", "feasible", "no_solution")
    assert r["wall"] >= 0 and r["ratio"] == pytest.approx(r["wall"]) and r["over"] == max(0.0, r["wall"] - 1.1)


def test_the_capacity_task_scales_every_server(monkeypatch):
    import dlsched.bench.oasis as oasis
    from dlsched.instance.oasis_gen import PAPER

    seen = {}

    def fake(jobs, seed, **kw):
        seen.update(kw)
        return {"jobs": jobs}

    monkeypatch.setattr(oasis, "paper_setting", fake)
    row = oasis.capacity_task(10, 1, 0.5, arrivals="trace")
    preset = seen["preset"]
    assert row == {"jobs": 10, "scale": 0.5, "arrivals": "trace"} and seen["arrivals"] == "trace"
    assert preset.worker_server == {k: v / 2 for k, v in PAPER.worker_server.items()}
    assert preset.ps_server == {k: v / 2 for k, v in PAPER.ps_server.items()}


def test_the_time_limit_summary_lists_every_cell_and_judges_the_target():
    from dlsched.bench.timelimits import summarise_suite

    def cell(method, instance, limit, wall):
        return {"task": "timelimit", "result": {"method": method, "instance": instance, "limit": limit, "wall": wall,
                                                "ratio": wall / limit, "over": max(0.0, wall - 1.1 * limit),
                                                "status": "feasible", "termination": "time_limit"}}

    fixed = {"task": "timelimit.fixed_cost", "result": {"import_seconds": {"dlsched": 2.0, "pyomo": 1.5, "cvxpy": 1.0},
                                                        "load_seconds": 0.1}}
    rows = [cell("drf", "smd-500", 1.0, 1.05), cell("drf", "oasis-500", 1.0, 1.3), fixed]
    out = summarise_suite(rows, load_suite("timelimits-quick"))
    assert out["drf (smd) worst wall/limit"] == "1.050 at smd-500 @ 1 s"
    assert out["drf on oasis-500 @ 1 s"] == "1.300 (feasible, time_limit)"
    assert out["cells over 1.1 x limit"] == 1 and out["max over 1.1 x limit (s)"] == pytest.approx(0.2)
    assert out["fixed_cost_seconds"] == pytest.approx(2.1) and out["target_met"]
    assert not summarise_suite([cell("core", "mcmdk-500", 1.0, 3.5), fixed], load_suite("timelimits-quick"))["target_met"]

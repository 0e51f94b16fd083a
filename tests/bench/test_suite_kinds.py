"""Simulation and study suites (dlsched/bench/simcells.py, tasks.py) in the one runner:
same header, resume, executors, report, family summaries and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dlsched.bench import report
from dlsched.bench.executors import DaskExecutor, LocalExecutor
from dlsched.bench.results import read_results
from dlsched.bench.runner import cells_of, run_suite
from dlsched.bench.suite import load_suite
from dlsched.bench.suitefile import bundled_suites
from dlsched.cli import main as cli
from dlsched.errors import InputError

from .test_runner import Counting

SIM = """
name = "tiny-sim"
kind = "simulate"
family = "sim"
time_limit = 60.0
speed = "table"

[cluster]
generator = "dl2"
params = { n_servers = 4 }

[[traces]]
name = "mix"
generator = "dl2"
seeds = [1, 2]
params = { n_jobs = 8 }

[[policies]]
name = "drf"

[[policies]]
name = "optimus"

[[policies]]
name = "fifo"
label = "first-in"
"""

STUDY = """
name = "tiny-study"
kind = "study"
time_limit = 60.0
threads = 1
seed = 0

[[tasks]]
name = "smd.gap"
grid = { k = [0, 1, 2] }

[[tasks]]
name = "oasis.ratio"
grid = { s = { start = 0, count = 2 } }
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def sim_values(rows):
    return {r["cell"]: (r["status"], r["avg_jct"], r["makespan"], tuple(r["jct"])) for r in rows}


def test_family_suites_are_bundled_and_load():
    assert {"sim", "dl2", "smd", "smd-quick", "oasis", "oasis-quick", "hetplace", "hetplace-quick"} <= set(bundled_suites())
    for name in ("sim", "dl2", "smd", "smd-quick", "oasis", "oasis-quick", "hetplace", "hetplace-quick"):
        s = load_suite(name)
        assert s.family and cells_of(s)[1] and not s.cells()
    assert len(cells_of(load_suite("sim"))[1]) == 10 * len(load_suite("sim").simulation["policies"])
    assert len(cells_of(load_suite("smd"))[1]) == 1 + 40 + 7 * 3 + 1 + 2 * 3


def test_simulation_cells_are_the_simulator_runs(tmp_path):
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.sim.engine import simulate
    from dlsched.registry import make_policy
    from dlsched.sim.speed import make_speed

    s = load_suite(write(tmp_path, SIM))
    rows = run_suite(s, tmp_path / "r.jsonl", progress=False)
    assert [r["cell"] for r in rows] == [f"mix/dl2-seed{t}|{p}|0" for t in (1, 2) for p in ("drf", "optimus", "first-in")]
    for r in rows:
        res = simulate(dl2_trace(8, seed=r["trace_seed"]), dl2_cluster(4), make_policy(r["policy_name"]), make_speed("table"),
                       seed=r["seed"], deadline=60.0)
        assert r["kind"] == "simulate" and r["status"] == res.status == "completed"
        assert r["avg_jct"] == pytest.approx(res.summary()["avg_jct"]) and r["seed"] == r["trace_seed"]
        assert r["jct"] == sorted(r["jct"]) and len(r["jct"]) == r["completed"] == 8
        assert np.mean(r["jct"]) == pytest.approx(r["avg_jct"])
    head, _ = read_results(tmp_path / "r.jsonl")
    assert head["suite"] == "tiny-sim" and head["environment"]["highs"] and head["definition"]["kind"] == "simulate"


def test_interrupted_simulation_sweep_resumes_only_missing_cells(tmp_path):
    s = load_suite(write(tmp_path, SIM))
    out = tmp_path / "r.jsonl"
    first = Counting(stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        run_suite(s, out, executor=first, progress=False)
    second = Counting()
    rows = run_suite(s, out, executor=second, progress=False)
    assert len(first.ran) == 2 and len(second.ran) == 4 and not set(first.ran) & set(second.ran)
    assert sim_values(rows) == sim_values(run_suite(s, None, progress=False))


def test_simulation_cells_on_local_processes_and_dask_give_the_same_values(tmp_path):
    distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'dlsched[dist]')")
    s = load_suite(write(tmp_path, SIM))
    serial = run_suite(s, None, progress=False)
    assert sim_values(run_suite(s, None, executor=LocalExecutor(2), progress=False)) == sim_values(serial)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            rows = run_suite(s, tmp_path / "d.jsonl", executor=DaskExecutor(client=client), progress=False)
    assert sim_values(rows) == sim_values(serial)


def test_study_cells_resume_and_keep_the_suite_order(tmp_path):
    from dlsched.bench.smd import gap_task
    from dlsched.bench.tasks import results_of

    s = load_suite(write(tmp_path, STUDY))
    out = tmp_path / "r.jsonl"
    run_suite(s, out, progress=False, max_cells=2)
    again = Counting()
    rows = run_suite(s, out, executor=again, progress=False)
    assert again.ran == ["smd.gap|k=2", "oasis.ratio|s=0", "oasis.ratio|s=1"]
    assert [r["cell"] for r in rows] == ["smd.gap|k=0", "smd.gap|k=1", "smd.gap|k=2", "oasis.ratio|s=0", "oasis.ratio|s=1"]
    gaps = results_of(rows, "smd.gap")
    assert [g["instance"] for g in gaps] == [gap_task(k, 0, 60.0, 1)["instance"] for k in range(3)]
    assert gaps[1]["smd"] == pytest.approx(gap_task(1, 0, 60.0, 1)["smd"])
    assert all(g["ti_checked"] and g["smd_checked"] for g in gaps)


def test_study_cells_in_worker_processes_give_the_same_results(tmp_path):
    s = load_suite(write(tmp_path, STUDY))
    strip = lambda rows: [(r["cell"], {k: v for k, v in r["result"].items() if "seconds" not in k}) for r in rows]
    assert strip(run_suite(s, None, executor=LocalExecutor(2), progress=False)) == strip(run_suite(s, None, progress=False))


def test_report_of_a_simulation_suite_has_jct_table_cdf_and_family_summary(tmp_path, capsys):
    p = write(tmp_path, SIM)
    out = tmp_path / "r.jsonl"
    assert cli(["bench", "run", str(p), "--out", str(out), "--no-progress", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cells"] == 6 and doc["failures"] == 0
    assert doc["summary"]["table"]["drf"]["completed_runs"] == 2 and doc["summary"]["jct_ratio_drf_over_optimus"] > 0
    assert cli(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.md").read_text()
    assert (tmp_path / "rep" / "jct_cdf.png").stat().st_size > 0 and "](jct_cdf.png)" in page
    assert "## Simulations: JCT per policy" in page and "| first-in | 2/2 | 16 |" in page
    assert "## Family summary: tiny-sim" in page and "| jct_ratio_drf_over_optimus |" in page
    _, rows = report.load([out])
    table = report.sim_summary(rows)
    drf = [r for r in rows if r["policy"] == "drf"]
    assert table["drf"]["mean_avg_jct"] == pytest.approx(np.mean([r["avg_jct"] for r in drf]))
    assert table["drf"]["median_jct"] == pytest.approx(np.median([x for r in drf for x in r["jct"]]))


def test_bench_run_of_a_family_suite_prints_the_family_summary(tmp_path, capsys):
    p = write(tmp_path, STUDY.replace('name = "tiny-study"', 'name = "tiny-oasis"\nfamily = "oasis"')
              .replace('[[tasks]]\nname = "smd.gap"\ngrid = { k = [0, 1, 2] }\n', ""))
    assert cli(["bench", "run", str(p), "--out", str(tmp_path / "r.jsonl"), "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["ratio_instances"] == 2 and summary["alpha_bound_violations"] == 0 and summary["parts"] == ["ratio"]


@pytest.mark.parametrize("text, edit, where", [
    (SIM, ('speed = "table"', 'speed = "table"\npolices = 3'), "polices"),
    (SIM, ('name = "optimus"', 'name = "optimist"'), "policies[1].name"),
    (SIM, ('label = "first-in"', 'label = "first-in"\nparams = { bogus = 1 }'), "policies[2].params.bogus"),
    (SIM, ('label = "first-in"', 'label = "first-in"\nsets = ["nope"]'), "policies[2].sets"),
    (SIM, ('label = "first-in"', 'label = "drf"'), "policies"),
    (SIM, ('generator = "dl2"\nseeds', 'generator = "alibaba"\nseeds'), "traces[0].generator"),
    (SIM, ("params = { n_jobs = 8 }", "params = { n_jobs = 8, jobs = 3 }"), "traces[0].params.jobs"),
    (SIM, ("params = { n_jobs = 8 }", "params = {}"), "traces[0].params.n_jobs"),
    (SIM, ("seeds = [1, 2]", 'seeds = "1-2"'), "traces[0].seeds"),
    (SIM, ('name = "mix"', 'name = "mix"\nfiles = ["no-such-trace.csv"]'), "traces[0].files"),
    (SIM, ('speed = "table"', 'speed = "warp"'), "speed"),
    (SIM, ('[cluster]\ngenerator = "dl2"', '[cluster]\ngenerator = "gavel"'), "cluster.generator"),
    (SIM, ("params = { n_servers = 4 }", "params = { n_servers = 4 }\nnodes = 3"), "cluster.nodes"),
    (SIM, ('kind = "simulate"', 'kind = "simulation"'), "kind"),
    (SIM, ('family = "sim"', 'family = "simulator"'), "family"),
    (STUDY, ('name = "smd.gap"', 'name = "smd.gaps"'), "tasks[0].name"),
    (STUDY, ("grid = { k = [0, 1, 2] }", "grid = { kk = [0, 1, 2] }"), "tasks[0].grid.kk"),
    (STUDY, ("grid = { k = [0, 1, 2] }", "grid = { k = [0] }\nparams = { bogus = 2 }"), "tasks[0].params.bogus"),
    (STUDY, ("grid = { k = [0, 1, 2] }", "grid = { k = [] }"), "tasks[0].grid.k"),
    (STUDY, ("threads = 1", "threads = 1\nmethods = []"), "methods"),
])
def test_bad_simulation_and_study_suites_name_file_and_key(tmp_path, text, edit, where):
    assert edit[0] in text
    p = write(tmp_path, text.replace(*edit, 1))
    with pytest.raises(InputError) as e:
        load_suite(p)
    assert e.value.source == str(p) and e.value.where == where


def test_results_of_another_kind_or_a_newer_format_are_refused_untouched(tmp_path):
    sim, study = load_suite(write(tmp_path, SIM)), load_suite(write(tmp_path, STUDY, "t.toml"))
    out = tmp_path / "r.jsonl"
    run_suite(sim, out, progress=False, max_cells=1)
    before = out.read_bytes()
    with pytest.raises(InputError, match="suite 'tiny-study'"):
        run_suite(study, out, progress=False)
    assert out.read_bytes() == before
    newer = tmp_path / "n.jsonl"
    newer.write_text(json.dumps({"format": "dlsched-bench/2", "version": 2, "suite": "tiny-sim"}) + "\n")
    with pytest.raises(InputError, match="version"):
        run_suite(sim, newer, progress=False)
    assert json.loads(newer.read_text())["version"] == 2


def test_bad_family_suite_from_the_cli_is_one_line(tmp_path, capsys):
    p = write(tmp_path, SIM.replace('name = "optimus"', 'name = "optimist"'))
    assert cli(["bench", "run", str(p), "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "policies[1].name" in err and not (tmp_path / "r.jsonl").exists()


def test_the_git_revision_is_read_when_the_suite_is_looked_up(monkeypatch):
    """A long bench records the commit its code was loaded from, not one committed while it ran."""
    import subprocess

    from dlsched.bench import get_suite
    from dlsched.provenance import git_revision

    git_revision.cache_clear()
    try:
        get_suite("quick")
        monkeypatch.setattr(subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read late")))
        git_revision()                   # from the cache: the lookup already read it
    finally:
        git_revision.cache_clear()


ITP = """
name = "tiny-itp"
kind = "simulate"
family = "sim"
time_limit = 120.0
speed = "duration"
target_load = 0.9
lower_bound = true

[cluster]
file = "10x8"

[[traces]]
name = "itp"
files = ["microsoft-itp/195job.csv"]

[[policies]]
name = "fifo"

[[policies]]
name = "srtf"
"""


def test_itp_and_scale_suites_load():
    for name, cluster, n_cells in (("itp", "80x8", 8), ("itp-07", "48x8", 8), ("itp-02", "12x8", 8), ("scale", "6500:0:0", 4)):
        s = load_suite(name)
        assert s.simulation["settings"].cluster == ("file", cluster) and len(cells_of(s)[1]) == n_cells
    assert load_suite("itp").simulation["settings"].lower_bound and load_suite("scale").simulation["settings"].target_load == 0.9


def test_a_suite_scales_arrivals_and_reports_the_lower_bound(tmp_path, data):
    """Trace files resolve in the reference data; every row carries the offered load it ran at and the
    trace's average-JCT lower bound, which no policy beats."""
    rows = run_suite(load_suite(write(tmp_path, ITP)), tmp_path / "r.jsonl", progress=False)
    assert [r["cell"] for r in rows] == ["itp/195job.csv|fifo|0", "itp/195job.csv|srtf|0"]
    for r in rows:
        assert r["status"] == "completed" and r["completed"] == 195 and r["offered_load"]["gpu"] == pytest.approx(0.9)
        assert 0 < r["lower_bound_avg_jct"] <= r["avg_jct"] and r["peak_memory_mib"] > 0
    assert rows[0]["lower_bound_avg_jct"] == rows[1]["lower_bound_avg_jct"]


@pytest.mark.parametrize("edit, where", [(("target_load = 0.9", "target_load = 0"), "target_load"),
                                         (("lower_bound = true", "lower_bound = 1"), "lower_bound")])
def test_bad_scaling_keys(tmp_path, edit, where):
    with pytest.raises(InputError) as e:
        load_suite(write(tmp_path, ITP.replace(*edit)))
    assert e.value.where == where

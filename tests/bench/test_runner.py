"""Suites as data, the resumable runner, its executors and the report (dlsched/bench/)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from dlsched.bench import report
from dlsched.bench.executors import DaskExecutor, LocalExecutor
from dlsched.bench.results import read_results
from dlsched.bench.runner import cells_of, run_cell, run_suite
from dlsched.bench.suite import load_suite
from dlsched.bench.suitefile import bundled_suites
from dlsched.cli import main as cli
from dlsched.errors import InputError

SUITE = """
name = "tiny"
time_limit = 30.0
threads = 1
seed = 3

[[instances]]
kind = "data"
name = "mknap1"
files = ["orlib/mkp/mknap1.txt"]
problems = "0-2"

[[instances]]
kind = "generated"
name = "gen"
generator = "mcmdk"
seeds = { start = 5, count = 2 }
params = { n_jobs = 8, n_configs = 2, n_rows = 2 }

[[methods]]
name = "exact"

[[methods]]
name = "lp-round"
label = "rounding"
"""


def write(tmp_path: Path, text: str = SUITE, name: str = "tiny.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def values(rows: list[dict]) -> dict[str, tuple]:
    return {r["cell"]: (r["status"], r["objective"], r["bound"]) for r in rows}


class Counting(LocalExecutor):
    """Counts the cells it runs; ``stop_after`` raises KeyboardInterrupt there (a Ctrl-C mid-sweep)."""

    def __init__(self, stop_after: int | None = None):
        super().__init__(1)
        self.ran: list[str] = []
        self.stop_after = stop_after

    def map_cells(self, fn, args):
        for a in args:
            if self.stop_after is not None and len(self.ran) == self.stop_after:
                raise KeyboardInterrupt
            row = fn(*a)
            self.ran.append(row["cell"])
            yield row


def test_bundled_suites_load():
    assert {"quick", "mkp"} <= set(bundled_suites())
    mkp = load_suite("mkp")
    assert len(mkp.instances) == 60 and [m.label for m in mkp.methods] == ["exact", "lp-round", "core", "sample"]
    assert all(r.best_known and r.best_known.endswith("mkcbres.txt") for r in mkp.instances)
    assert mkp.time_limit == 10.0 and mkp.threads == 1
    assert len(load_suite("quick").cells()) == 3 * len(load_suite("quick").instances)


def test_suite_from_file(tmp_path, data):
    s = load_suite(write(tmp_path))
    assert [r.key for r in s.instances] == ["mknap1.txt#0", "mknap1.txt#1", "mknap1.txt#2",
                                            "gen/mcmdk-seed5", "gen/mcmdk-seed6"]
    assert len(s.cells()) == 10 and s.limits()["seed"] == 3
    inst = s.instances[3].load()
    assert inst.family == "mcmdk" and inst.n_jobs == 8
    assert s.digest() == load_suite(write(tmp_path, "# a comment changes nothing\n" + SUITE)).digest()


@pytest.mark.parametrize("edit, where", [
    (("time_limit = 30.0", "time_limt = 30.0"), "time_limt"),
    (('name = "lp-round"', 'name = "lp-rounding"'), "methods[1].name"),
    (('kind = "generated"', 'kind = "made-up"'), "instances[1].kind"),
    (('generator = "mcmdk"', 'generator = "nope"'), "instances[1].generator"),
    (("n_rows = 2 }", "n_rows = 2, rows = 3 }"), "instances[1].params.rows"),
    (("n_jobs = 8, ", ""), "instances[1].params.n_jobs"),
    (('label = "rounding"', 'label = "rounding"\nparams = { bogus = 1 }'), "methods[1].params.bogus"),
    (('problems = "0-2"', 'problems = "zero"'), "instances[0].problems"),
    (('files = ["orlib/mkp/mknap1.txt"]', 'files = ["orlib/mkp/missing.txt"]'), "instances[0].files"),
    (('label = "rounding"', 'label = "exact"'), "methods"),
    (('label = "rounding"', 'label = "rounding"\nsets = ["gen", "nope"]'), "methods[1].sets"),
])
def test_bad_suite_names_file_and_key(tmp_path, edit, where):
    p = write(tmp_path, SUITE.replace(*edit))
    with pytest.raises(InputError) as e:
        load_suite(p)
    assert e.value.source == str(p) and e.value.where == where


def test_bad_suite_from_the_cli_is_one_line(tmp_path, capsys):
    p = write(tmp_path, SUITE.replace('name = "lp-round"', 'name = "lp-rounding"'))
    assert cli(["bench", "run", str(p), "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(p) in err and "methods[1].name" in err
    assert not (tmp_path / "r.jsonl").exists()


def test_every_cell_checked_against_the_optimum(tmp_path):
    s = load_suite(write(tmp_path))
    rows = run_suite(s, tmp_path / "r.jsonl", progress=False)
    assert len(rows) == 10
    for r in rows:
        assert "exception" not in r and r["checked"] is True and r["seed"] == 3
        assert r["build_seconds"] >= 0 and r["solve_seconds"] >= 0 and isinstance(r["stats"], dict)
        if r["instance"].startswith("mknap1"):
            assert r["reference"] is not None and r["bound_valid"] is True
            if r["method"] == "exact":
                assert r["status"] == "optimal" and r["gap"] == 0 and r["time_to_target"] is not None
            else:
                assert r["gap"] >= 0          # a heuristic is never better than the optimum
        else:
            assert r["reference"] is None and r["gap"] is None
    head, _ = read_results(tmp_path / "r.jsonl")
    assert head["suite"] == "tiny" and head["limits"]["time_limit"] == 30.0 and head["environment"]["highs"]
    assert head["environment"]["seed"] == 3 and "git" in head and head["definition"]["name"] == "tiny"


def test_interrupted_sweep_resumes_only_missing_cells(tmp_path):
    s = load_suite(write(tmp_path))
    out = tmp_path / "r.jsonl"
    first = Counting(stop_after=4)
    with pytest.raises(KeyboardInterrupt):
        run_suite(s, out, executor=first, progress=False)
    assert len(first.ran) == 4 and len(read_results(out)[1]) == 4
    # a kill while a row was being written leaves a cut last line: that cell runs again
    with out.open("a") as f:
        f.write('{"cell": "gen/mcmdk-seed6|exact|0", "status": "opti')
    second = Counting()
    rows = run_suite(s, out, executor=second, progress=False)
    assert len(second.ran) == 6 and not set(second.ran) & set(first.ran)
    assert sorted(first.ran + second.ran) == sorted(r["cell"] for r in rows)
    third = Counting()
    assert len(run_suite(s, out, executor=third, progress=False)) == 10 and third.ran == []
    assert len(read_results(out)[1]) == 10
    full = run_suite(s, None, progress=False)
    assert values(rows) == values(full)


def test_failed_cell_is_retried_on_resume(tmp_path):
    s = load_suite(write(tmp_path))
    out = tmp_path / "r.jsonl"
    run_suite(s, out, progress=False, max_cells=2)
    head, rows = read_results(out)
    rows[0] = {**rows[0], "exception": "RuntimeError: boom", "status": "error"}
    out.write_text("\n".join(json.dumps(x) for x in [head, *rows]) + "\n")
    ex = Counting()
    final = run_suite(s, out, executor=ex, progress=False)
    assert rows[0]["cell"] in ex.ran and rows[1]["cell"] not in ex.ran and len(final) == 10
    assert all("exception" not in r for r in final)


def test_wrong_results_file_is_an_error_and_untouched(tmp_path):
    s = load_suite(write(tmp_path))
    other = tmp_path / "other.jsonl"
    run_suite(load_suite(write(tmp_path, SUITE.replace('name = "tiny"', 'name = "other"'), "o.toml")), other,
              progress=False, max_cells=1)
    before = other.read_bytes()
    with pytest.raises(InputError, match="suite 'tiny'"):
        run_suite(s, other, progress=False)
    assert other.read_bytes() == before
    changed = load_suite(write(tmp_path, SUITE.replace("time_limit = 30.0", "time_limit = 20.0"), "tiny.toml"))
    mine = tmp_path / "mine.jsonl"
    run_suite(s, mine, progress=False, max_cells=1)
    before = mine.read_bytes()
    with pytest.raises(InputError, match="changed"):
        run_suite(changed, mine, progress=False)
    assert mine.read_bytes() == before
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"format": "dlsched-bench/9", "version": 9, "suite": "tiny"}) + "\n")
    before = newer.read_bytes()
    with pytest.raises(InputError, match="version"):
        run_suite(s, newer, progress=False)
    assert newer.read_bytes() == before
    alien = tmp_path / "alien.jsonl"
    alien.write_text('{"instance": "x"}\n')
    with pytest.raises(InputError, match="results file"):
        run_suite(s, alien, progress=False)
    assert alien.read_text() == '{"instance": "x"}\n'


def test_an_exception_in_a_cell_is_a_row_not_a_crash(tmp_path):
    s = load_suite(write(tmp_path, SUITE.replace('name = "lp-round"\nlabel = "rounding"',
                                                 'name = "sample"\nlabel = "rounding"\nparams = { samples = -4 }')))
    ref, method = s.instances[0], s.methods[1]
    row = run_cell(ref, method, 0, s.limits())
    assert row["status"] == "error" and "exception" in row and row["cell"] == "mknap1.txt#0|rounding|0"


def test_local_processes_give_the_same_values(tmp_path):
    s = load_suite(write(tmp_path))
    serial = run_suite(s, None, progress=False)
    parallel = run_suite(s, None, executor=LocalExecutor(2), progress=False)
    assert values(serial) == values(parallel)


def test_dask_local_cluster_gives_the_same_values(tmp_path):
    distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'dlsched[dist]')")
    s = load_suite(write(tmp_path))
    serial = run_suite(s, None, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        ex = DaskExecutor(cluster.scheduler_address)          # as --scheduler ADDRESS does
        try:
            rows = run_suite(s, tmp_path / "d.jsonl", executor=ex, progress=False)
            assert "dask, 1 workers" in ex.description
        finally:
            ex.close()
        with distributed.Client(cluster) as client:          # or an existing client
            again = run_suite(s, None, executor=DaskExecutor(client=client), progress=False)
    assert values(rows) == values(serial) == values(again)


FRONT_ENDS = """
name = "front-ends"
time_limit = 60.0
threads = 1

[[instances]]
kind = "bundled"
name = "bundled"
pattern = "mknap1-*.json"
""" + "".join(f"""
[[methods]]
name = "exact"
label = "{b}"
params = {{ backend = "{b}" }}
""" for b in ("highs", "pyomo", "cvxpy"))


def test_dask_worker_processes_run_every_front_end(tmp_path):
    """Dask's worker processes are daemonic, and a daemonic process may not start a
    multiprocessing child: the Pyomo and CVXPY cells (their time limit is a forked child) failed
    there with 'daemonic processes are not allowed to have children'. On a LocalCluster of 2
    worker processes every cell of every front end succeeds, with the local executor's values."""
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'dlsched[dist]')")
    s = load_suite(write(tmp_path, FRONT_ENDS))
    local = run_suite(s, None, progress=False)
    ex = DaskExecutor("local", jobs=2)
    try:
        rows = run_suite(s, tmp_path / "d.jsonl", executor=ex, progress=False)
    finally:
        ex.close()
    assert {r["method"] for r in rows} == {"highs", "pyomo", "cvxpy"}
    assert [r["exception"] for r in rows if r.get("exception")] == []
    assert values(rows) == values(local)


def test_unreachable_scheduler_is_one_clear_error(monkeypatch):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'dlsched[dist]')")
    monkeypatch.setattr("dlsched.bench.executors.CONNECT_TIMEOUT", "1s")
    with pytest.raises(InputError) as e:
        DaskExecutor("tcp://127.0.0.1:9")
    assert e.value.where == "--scheduler" and "127.0.0.1:9" in str(e.value.found)


def test_report_references_tables_figures_and_page(tmp_path, capsys):
    s = load_suite(write(tmp_path))
    out = tmp_path / "r.jsonl"
    run_suite(s, out, progress=False)
    heads, rows = report.load([out])
    rows = report.with_references(rows)
    gen = [r for r in rows if r["instance"].startswith("gen/")]
    assert all(r["ref_kind"] == "best bound" for r in gen)
    # the best bound is the exact method's proven optimum here, so its gap is 0 and the heuristic's >= 0
    assert all(r["ref_gap"] == 0 for r in gen if r["method"] == "exact")
    assert all(r["ref_gap"] >= 0 for r in gen)
    summary = report.summarise(rows)
    assert summary["exact"]["cells"] == 5 and summary["exact"]["optimal"] == 5 and summary["exact"]["failures"] == 0
    assert summary["exact"]["max_gap"] == 0 and summary["exact"]["reached_target"] == 5
    assert cli(["report", str(out), "--out", str(tmp_path / "rep"), "--title", "Tiny suite"]) == 0
    text = capsys.readouterr().out
    assert "rounding" in text and "exact" in text
    page = (tmp_path / "rep" / "report.md").read_text()
    for fig in ("profile.png", "gap_vs_time.png", "families.png"):
        assert (tmp_path / "rep" / fig).stat().st_size > 0 and f"]({fig})" in page
    assert page.count("Figure made by `dlsched report ") == 3 and "| exact | 5 | 5 | 5 | 0 |" in page
    assert page.startswith("# Tiny suite\n") and "--title 'Tiny suite'` from:" in page
    # two instance sets: the mean gap and seconds of each method on each
    assert "| method | mknap1: mean gap % / s | gen: mean gap % / s |" in page
    assert re.search(r"\| exact \| 0\.0000 / \d+\.\d\d \| 0\.0000 / \d+\.\d\d \|", page)
    assert report.per_set([r for r in rows if r["set"] == "gen"]) is None


def test_mkp_summary_reads_runner_results(tmp_path, capsys):
    from dlsched.bench import get_suite

    out = tmp_path / "r.jsonl"
    run_suite(load_suite(write(tmp_path)), out, progress=False)
    assert get_suite("mkp")(["--from-runs", str(out), "--out", str(tmp_path / "m"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["methods"]["exact"]["runs"] == 5 and doc["methods"]["rounding"]["all_checked"]


def test_example_suites_in_docs_load():
    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "docs" / "suites").glob("*.toml"))
    assert files
    for f in files:
        assert cells_of(load_suite(f))[1]


def test_bench_run_cli_records_its_command_and_resumes(tmp_path, capsys):
    p = write(tmp_path)
    out = tmp_path / "r.jsonl"
    assert cli(["bench", "run", str(p), "--out", str(out), "--max-cells", "3", "--no-progress"]) == 0
    head, rows = read_results(out)
    assert head["command"] == f"dlsched bench run {p} --out {out} --max-cells 3 --no-progress" and len(rows) == 3
    assert cli(["bench", "run", str(p), "--out", str(out), "--no-progress"]) == 0
    assert "10/10 cells" in capsys.readouterr().out and len(read_results(out)[1]) == 10
    assert read_results(out)[0]["command"] == head["command"]      # the header is never rewritten


def test_families_suite_runs_each_method_on_its_sets(tmp_path):
    s = load_suite("families")
    assert {r.set_name for r in s.instances} == {"smd", "placement", "oasis"}
    assert len(s.cells()) == 9 + 2 * 3 + 2 * 3 + 4 * 3          # exact everywhere, the rest on their own set
    rows = report.with_references([{**r, "suite": "families"} for r in run_suite(s, tmp_path / "f.jsonl", progress=False)])
    assert len(rows) == 33 and not [r for r in rows if "exception" in r]
    for r in rows:
        assert r["checked"] is True and r["family"] == {"smd": "smd", "placement": "placement", "oasis": "oasis"}[r["set"]]
        # the reference is the exact method's proven optimum (its bound): no method beats it
        assert r["ref_kind"] == "best bound" and r["ref_gap"] >= -1e-9
        if r["method"] == "exact":
            assert r["status"] == "optimal" and r["ref_gap"] == 0


KILL_SUITE = """
name = "kill"
time_limit = 1.0
instances = [{ kind = "data", name = "cb4", files = ["orlib/mkp/mknapcb4.txt"], problems = "0-5" }]
methods = [{ name = "exact" }]
"""


def test_killed_sweep_reruns_only_the_missing_cells(tmp_path):
    """SIGKILL a `dlsched bench run` process after two of its six cells (1 s each) are written."""
    import os
    import signal
    import subprocess
    import sys
    import time as _time

    p = write(tmp_path, KILL_SUITE, "kill.toml")
    out = tmp_path / "k.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "dlsched", "bench", "run", str(p), "--out", str(out), "--no-progress"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while proc.poll() is None and not (out.exists() and out.read_text().count("\n") >= 3):
            _time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    done = {r["cell"] for r in read_results(out)[1]}
    assert 2 <= len(done) < 6, "the run ended before it was killed"
    again = Counting()
    rows = run_suite(load_suite(p), out, executor=again, progress=False)
    assert sorted(again.ran) == sorted({r["cell"] for r in rows} - done) and len(rows) == 6
    assert all(r["checked"] is True for r in rows)


def test_executor_arguments(tmp_path, capsys):
    from dlsched.bench.executors import make_executor

    with pytest.raises(InputError, match="--executor dask"):
        make_executor("local", 2, "tcp://somewhere:8786")
    with pytest.raises(InputError, match="--jobs"):
        make_executor("local", 0, None)
    assert make_executor("local", 3, None).jobs == 3
    p = write(tmp_path)
    assert cli(["bench", "run", str(p), "--out", str(tmp_path / "r.jsonl"), "--scheduler", "tcp://x:1"]) == 2
    assert "--scheduler" in capsys.readouterr().err


class Slow(Counting):
    """Counting, with ``seconds`` of wall time per cell (a cell that takes a while)."""

    def __init__(self, stop_after: int | None = None, seconds: float = 0.15):
        super().__init__(stop_after)
        self.seconds = seconds

    def map_cells(self, fn, args):
        import time

        for row in super().map_cells(fn, args):
            time.sleep(self.seconds)
            yield row


def test_a_sweep_off_a_terminal_prints_lines_and_says_where_it_stopped(tmp_path, capsys, monkeypatch):
    """Issue 24: `bench run` printed nothing when output was not a terminal, and a stop said nothing."""
    from dlsched import console

    monkeypatch.setattr(console.Reporter, "LINE_SECONDS", 0.05)
    s = load_suite(write(tmp_path))
    out = tmp_path / "r.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_suite(s, out, executor=Slow(stop_after=3), progress=True)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("tiny: ")]
    assert lines and all(re.fullmatch(r"tiny: \d+/10 done, 0:00:0\d elapsed, ETA (\?|0:00:0\d)(; 0 failed)?", ln)
                         for ln in lines), lines
    assert any(ln.startswith("tiny: 2/10 done") and "ETA 0:00:0" in ln for ln in lines)
    assert f"stopped: 3 cells of this run written to {out} (3 of 10); the same command goes on from there" in err
    run_suite(s, out, executor=Slow(), progress=True)
    err = capsys.readouterr().err
    assert any(ln.startswith("tiny (resuming: 3 cells done): ") for ln in err.splitlines())


PYOMO_SUITE = SUITE.replace('name = "exact"\n', 'name = "exact"\nparams = { backend = "pyomo" }\n')
#: the sweep a signal stops: PYOMO_SUITE six times over (60 cells, half of them Pyomo's exact path at 1-2 s each).
#: With the tiny suite's 10 cells the sweep ended within 2 s of its second row, so a test process slowed that much
#: by the machine's load signalled a finished sweep (all 10 rows, or exit 0); now the test would have to be slowed
#: for the time of about 55 cells (tens of seconds on 2 workers, and they slow down with the same load).
STOPPED_SUITE = PYOMO_SUITE.replace("seed = 3\n", "seed = 3\nrepetitions = 6\n")


@pytest.mark.parametrize("executor", [[], pytest.param(["--executor", "dask", "--scheduler", "local"], id="dask",
                                                       marks=pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                                                                reason="needs the [dist] extra"))])
def test_sigterm_stops_a_parallel_sweep_cleanly(tmp_path, executor):
    """Issue 24: a stopped `bench run --jobs 2` left multiprocessing semaphores behind (Pyomo's lock
    made in each guarded child). SIGTERM now ends the workers (local processes, or a Dask
    LocalCluster's), keeps every finished row, exits 130, and the resource tracker has nothing to report."""
    import os
    import signal
    import subprocess
    import sys
    import time

    suite, out = write(tmp_path, STOPPED_SUITE), tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "dlsched", "bench", "run", str(suite), "--jobs", "2", "--out", str(out),
                             *executor],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and \
            (not out.exists() or len(out.read_text().splitlines()) < 3):       # the header and two rows
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    head, rows = read_results(out)
    assert proc.returncode == 130 and "leaked" not in err and "Traceback" not in err, err
    assert len(cells_of(load_suite(suite))[1]) == 60
    assert 2 <= len(rows) < 60 and f"stopped: {len(rows)} cells of this run written to {out} ({len(rows)} of 60)" in err

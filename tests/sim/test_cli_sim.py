"""``dlsched simulate``, ``dlsched policies`` and ``dlsched bench sim`` from the command line."""

import json

import pytest

from dlsched.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_policies_lists_the_table(capsys):
    from dlsched.registry import policy_names

    code, out, _ = run(capsys, "policies")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == policy_names()


def test_simulate_json_and_plots(capsys, tmp_path):
    code, out, _ = run(capsys, "simulate", "dl2:12:3", "--cluster", "dl2:4", "--policy", "drf", "--speed", "table",
                       "--restart-seconds", "5", "--json", "--jobs", "--plot", str(tmp_path))
    assert code == 0
    doc = json.loads(out)                              # exactly one JSON object
    assert doc["status"] == "completed" and doc["completed"] == 12 and len(doc["job_results"]) == 12
    assert doc["restart_seconds"] == 5.0 and doc["speed"] == "TableSpeed" and "environment" in doc
    assert 0 < doc["lower_bound"] <= doc["avg_jct"] and doc["ratio_to_bound"] == doc["avg_jct"] / doc["lower_bound"]
    assert (tmp_path / "jct_cdf.png").stat().st_size > 0 and (tmp_path / "utilisation.png").stat().st_size > 0


def test_the_lp_bound_takes_its_slots_and_window(capsys):
    """The LP's slot length and window reach the bound: a window relaxes the LP (never above the
    LP without it), and both are recorded beside it."""
    def bound(*extra):
        code, out, _ = run(capsys, "simulate", "dl2:16:2", "--cluster", "dl2:2", "--policy", "srtf", "--json",
                           "--bound", "lp", *extra)
        assert code == 0
        doc = json.loads(out)
        assert doc["lower_bound"] <= doc["avg_jct"]
        return doc["lower_bound_parts"]
    full, windowed = bound("--bound-slot", "600"), bound("--bound-slot", "600", "--bound-window", "1.5")
    assert full["lp_slot_seconds"] == 600 and windowed["lp_window"] == 1.5 and full["lp_window"] is None
    assert windowed["lp"] < full["lp"]                  # the window binds on this trace, and relaxes


def test_simulate_a_real_trace_with_detected_speed(capsys, data):
    code, out, _ = run(capsys, "simulate", str(data / "tiresias/60_job.csv"), "--cluster", str(data / "tiresias/n32g4.csv"),
                       "--policy", "srtf", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["jobs"] == 60 and doc["completed"] + doc["unschedulable"] == 60
    assert doc["speed"] == "DurationSpeed"


def test_simulate_table_output(capsys):
    code, out, _ = run(capsys, "simulate", "dl2:5", "--policy", "fifo", "--max-time", "100")
    assert code == 0 and "max_time" in out and "JCT avg" in out


@pytest.mark.parametrize("argv, message", [
    (("simulate", "dl2:5", "--policy", "nope"), "expected one of fifo"),
    (("simulate", "/no/such/trace.csv", "--policy", "drf"), "trace.csv"),
    (("simulate", "dl2:5", "--policy", "drf", "--speed", "magic"), "--speed"),
    (("simulate", "dl2:5", "--policy", "drf", "-P", "bogus=1"), "an option of policy 'drf'"),
    (("simulate", "dl2:5", "--policy", "drf", "--restart-seconds", "-1"), "restart_seconds"),
    (("simulate", "dl2:5", "--policy", "drf", "--speed-param", "mixed=slowest"), "--speed-param mixed"),
    (("simulate", "dl2:5", "--policy", "drf", "--speed", "throughput", "--speed-param", "mixed"), "key=value"),
    (("simulate", "dl2:5", "--policy", "drf", "--bound-window", "4"), "--bound lp beside it"),
    (("simulate", "dl2:5", "--policy", "drf", "--bound", "lp", "--bound-slot", "0"), "--bound-slot"),
    (("simulate", "dl2:5", "--policy", "drf", "--bound", "lp", "--bound-window", "nan"), "--bound-window"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("dlsched: error:") and message in err and "Traceback" not in err


def test_policy_error_exits_2_naming_the_policy(capsys, monkeypatch):
    from dlsched import registry

    monkeypatch.setitem(registry.POLICIES, "broken", "tests.sim.test_cli_sim:Broken")
    code, _, err = run(capsys, "simulate", "dl2:3", "--policy", "broken")
    assert code == 2 and "policy 'broken' at t=" in err and "over-commits" in err


class Broken:
    """Puts every job's 16 workers on server 0 (over-commits)."""

    name = "broken"
    slot_seconds = None

    def reset(self, ctx):
        pass

    def schedule(self, state, events):
        from dlsched.sim.policy import Placement

        return {j: Placement({0: 16}, {0: 1}) for j in state.active.tolist()}


def test_bench_sim_quick_json(capsys):
    from dlsched.bench import get_suite

    # 4 jobs a trace, not 8: every policy still runs both traces to the end (17 to 6.5 CPU s)
    rc = get_suite("sim")(["--quick", "--seeds", "2", "--jobs", "4", "--nodes", "4", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    for key in ("jct_ratio_drf_over_optimus", "makespan_ratio_drf_over_optimus", "policies", "traces"):
        assert key in doc
    assert len(doc["traces"]) == 2 and len(doc["runs"]) == 2 * len(doc["policies"])
    assert {"fifo", "srtf", "drf", "tetris"} <= set(doc["policies"])
    if "optimus" not in doc["policies"]:
        assert doc["jct_ratio_drf_over_optimus"] is None
    assert doc["table"]["drf"]["completed_runs"] == 2
    # Optimus's model errors: medians at 25/50/75 % of progress, over the jobs of its completed runs
    errors = doc["optimus_model_errors"]
    assert doc["table"]["optimus"]["completed_runs"] == 2 and errors["jobs"] == 8
    for key in ("remaining", "speed", "n"):
        assert set(errors[key]) == {"25%", "50%", "75%"}
    assert 0 < errors["n"]["25%"] <= 8
    assert all(0 <= v < 1 for v in errors["remaining"].values() if v is not None)


def test_bench_sim_without_optimus_has_no_model_errors(capsys):
    from dlsched.bench import get_suite

    get_suite("sim")(["--quick", "--seeds", "1", "--jobs", "4", "--nodes", "4", "--policies", "drf,fifo", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["optimus_model_errors"] is None and doc["jct_ratio_drf_over_optimus"] is None


def test_simulate_json_is_strict_with_infinite_settings(capsys):
    """`--max-time inf --json` wrote "max_time": Infinity, which is not JSON."""
    code, out, _ = run(capsys, "simulate", "dl2:4:1", "--policy", "fifo", "--max-time", "inf", "--json")
    assert code == 0
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert doc["completed"] == 4


def test_a_trace_that_does_not_contend_says_so(capsys, data):
    """Issue 24: the Tiresias trace on its own 32 x 4 cluster offers a GPU load of 0.117; the run
    warns once on stderr with the load and the options that make it contend, and --json carries both."""
    trace, cluster = str(data / "tiresias/60_job.csv"), str(data / "tiresias/n32g4.csv")
    code, out, err = run(capsys, "simulate", trace, "--cluster", cluster, "--policy", "fifo", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["offered_load"]["gpu"] == pytest.approx(0.1169, abs=1e-4)
    lines = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(lines) == 1 and "offered gpu load 0.117 < 0.3" in lines[0] and "--target-load 0.9" in lines[0]
    assert "--cluster" in lines[0] and doc["warnings"] == [lines[0].removeprefix("warning: ")]
    assert doc["peak_memory_mib"] > 0
    code, out, err = run(capsys, "simulate", trace, "--cluster", cluster, "--policy", "fifo", "--json", "--target-load", "0.9")
    doc = json.loads(out)
    assert code == 0 and "warning" not in err and doc["warnings"] == [] and doc["offered_load"]["gpu"] == pytest.approx(0.9)
    code, out, err = run(capsys, "simulate", trace, "--cluster", "4x4", "--policy", "fifo")
    assert code == 0 and "warning" not in err and "offered load" in out and "gpu 0.93" in out


def test_itp_trace_rigid_and_elastic_on_a_servers_by_gpus_cluster(capsys, data):
    trace = str(data / "microsoft-itp/195job.csv")
    code, out, _ = run(capsys, "simulate", trace, "--cluster", "10x8", "--policy", "fifo", "--json", "--jobs")
    doc = json.loads(out)
    assert code == 0 and doc["completed"] == 195 and doc["speed"] == "DurationSpeed" and doc["cluster"] == "10x8"
    code, out, _ = run(capsys, "simulate", trace, "--trace-format", "itp-elastic", "--cluster", "10x8", "--policy", "drf",
                       "--json")
    assert code == 0 and json.loads(out)["completed"] == 195
    code, out, err = run(capsys, "simulate", trace, "--trace-format", "philly", "--cluster", "10x8", "--policy", "fifo")
    assert code == 2 and "itp-elastic" in err and "Traceback" not in err


def test_progress_off_a_terminal_is_a_plain_line_a_minute(capsys, monkeypatch):
    """Not on a terminal (stderr captured here), progress is one plain line per LINE_SECONDS with the
    jobs finished, the simulated time, the events and an ETA; the result carries the peak memory."""
    from dlsched.sim import engine

    monkeypatch.setattr(engine._progress_bar, "LINE_SECONDS", 0.0)
    code, out, err = run(capsys, "simulate", "dl2:6:1", "--policy", "fifo", "--json")
    lines = [ln for ln in err.splitlines() if ln.startswith("simulating fifo:")]
    assert code == 0 and len(lines) == json.loads(out)["decision_calls"]      # one per call (each a tick)
    assert "/6 jobs finished, t=" in lines[-1] and " events, " in lines[-1] and "ETA" in lines[-1]
    assert json.loads(out)["peak_memory_mib"] > 0
    # several policies: each line names the policy whose run it reports
    code, out, err = run(capsys, "simulate", "dl2:6:1", "--policy", "fifo,drf", "--json")
    runs = {r["policy"]: r["decision_calls"] for r in json.loads(out)["runs"]}
    for name in ("fifo", "drf"):
        assert len([ln for ln in err.splitlines() if ln.startswith(f"simulating {name}:")]) == runs[name]
    monkeypatch.setattr(engine._progress_bar, "LINE_SECONDS", 3600.0)
    code, out, err = run(capsys, "simulate", "dl2:6:1", "--policy", "fifo", "--json")
    assert code == 0 and "simulating" not in err


def test_the_table_gives_hours_or_days_and_plot_names_its_files(capsys, tmp_path):
    """Durations of hours read as 1.2903e+07 s alone; --plot wrote its figures without a word."""
    code, out, err = run(capsys, "simulate", "dl2:20:1", "--policy", "drf", "--plot", str(tmp_path / "figs"))
    assert code == 0
    assert " d)" in next(ln for ln in out.splitlines() if "makespan" in ln)
    assert f"wrote {tmp_path / 'figs' / 'jct_cdf.png'}, {tmp_path / 'figs' / 'utilisation.png'}" in err


def test_bench_sim_table_says_why_and_prints_names_whole(capsys, monkeypatch):
    """Issue 24: `oasis` read 0/3 with no reason, `time-indexed` was missing without a word, long
    names were cut ("gavel-max-min-fai…") and columns mixed 1.2903e+07 with plain numbers."""
    from dlsched.bench import get_suite
    from dlsched.bench import sim as bench_sim

    names = ["drf", "oasis", "gavel-max-min-fairness-perf", "time-indexed"]
    monkeypatch.setattr(bench_sim, "policy_names", lambda: names)
    rc = get_suite("sim")(["--quick", "--seeds", "1", "--jobs", "6", "--nodes", "4"])
    out = capsys.readouterr().out
    assert rc == 0 and "…" not in out and "e+" not in out
    row = {ln.split()[1]: ln for ln in out.splitlines() if ln.startswith("│")}
    assert "0/1 [1]" in row["oasis"] and "1/1" in row["gavel-max-min-fairness-perf"] and "time-indexed" not in row
    assert "[1] oasis: 1 of 1 runs refused: " in out and "expected the OASiS speed source" in out
    assert "not run: time-indexed: offline reference" in out
    jct = row["drf"].split("│")[3].strip()               # avg JCT (s): a plain number with thousands separators
    assert jct.replace(",", "").isdigit() and float(jct.replace(",", "")) >= 1000 and "," in jct
    rc = get_suite("sim")(["--quick", "--seeds", "1", "--jobs", "6", "--nodes", "4", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["policies"] == names[:3] and list(doc["skipped"]) == ["time-indexed"]
    assert list(doc["table"]["oasis"]["not_completed"].values()) == [1]
    assert doc["table"]["drf"]["not_completed"] == {}


def test_simulate_several_policies_compares_them(capsys, tmp_path, monkeypatch):
    """Issue 24: `--policy fifo,drf,srtf` runs each policy on the same trace and cluster; the table
    has one row per policy, --json one object with a `runs` list whose entries are each policy's
    one-policy --json (less the environment), --plot one JCT CDF with every policy."""
    from dlsched import cli_simulate

    base = ("simulate", "dl2:12:3", "--cluster", "dl2:4", "--speed", "table", "--restart-seconds", "5")
    alone = {}
    for name in ("fifo", "drf", "srtf"):
        code, out, _ = run(capsys, *base, "--policy", name, "--json")
        alone[name] = json.loads(out)
    code, out, err = run(capsys, *base, "--policy", "fifo,drf,srtf", "--json", "--jobs")
    doc = json.loads(out)                              # exactly one JSON object
    assert code == 0 and doc["policies"] == ["fifo", "drf", "srtf"] and len(doc["runs"]) == 3
    assert doc["speed"] == "TableSpeed" and doc["restart_seconds"] == 5.0 and "environment" in doc
    for r in doc["runs"]:
        a = alone[r["policy"]]
        assert "environment" not in r and len(r["job_results"]) == 12
        for key in ("avg_jct", "median_jct", "p95_jct", "makespan", "avg_queueing_delay", "utilisation", "lower_bound",
                    "ratio_to_bound", "completed", "events"):
            assert r[key] == a[key], (r["policy"], key)
    drawn = []
    monkeypatch.setattr(cli_simulate, "write_figures", lambda results, d: drawn.append([r.policy for r in results]) or
                        [tmp_path / "jct_cdf.png"])
    code, out, err = run(capsys, *base, "--policy", "fifo,drf,srtf", "--plot", str(tmp_path))
    assert code == 0 and drawn == [["fifo", "drf", "srtf"]] and f"wrote {tmp_path / 'jct_cdf.png'}" in err
    rows = {ln.split("│")[1].strip(): [c.strip() for c in ln.split("│")[2:-1]] for ln in out.splitlines() if ln.startswith("│")}
    assert list(rows) == ["fifo", "drf", "srtf"] and "avg JCT" in out and "/ bound" in out
    for name, cells in rows.items():
        a = alone[name]
        assert cells[0] == "12/12" and cells[1] == f"{a['avg_jct']:,.0f}" and cells[4] == f"{a['makespan']:,.0f}"
        assert cells[-2] == f"{a['lower_bound']:,.0f}" and cells[-1] == f"{a['ratio_to_bound']:.3f}"


@pytest.mark.parametrize("policies, message", [("fifo,,drf", "policy names separated by commas"),
                                               ("fifo,drf,fifo", "fifo more than once"),
                                               ("fifo,DRF", "drf")])
def test_simulate_several_policies_bad_names_exit_2_before_any_run(capsys, policies, message):
    code, out, err = run(capsys, "simulate", "dl2:5", "--policy", policies)
    assert code == 2 and out == "" and message in err and "simulating" not in err and "Traceback" not in err


class SelfStopping:
    """FIFO that sends this process SIGTERM at its 4th call (a user stopping the run)."""

    name = "self-stopping"

    def __init__(self):
        from dlsched.policies.fifo import FIFO

        self.inner, self.calls = FIFO(), 0
        self.slot_seconds = self.inner.slot_seconds

    def reset(self, ctx):
        self.inner.reset(ctx)

    def schedule(self, state, events):
        import os
        import signal

        self.calls += 1
        if self.calls == 4:
            os.kill(os.getpid(), signal.SIGTERM)
        return self.inner.schedule(state, events)


def test_a_stopped_simulation_prints_what_it_has(capsys, monkeypatch):
    """Issue 24: Ctrl-C or SIGTERM lost a long run. The run now ends after the current call with
    status `stopped` and its figures so far, the policies not yet run are named, and it exits 130."""
    import signal

    from dlsched import registry

    def unhandled(signum, frame):       # without the command's own handler: a failure, not a dead test run
        raise RuntimeError("SIGTERM reached the default handler")

    old = signal.signal(signal.SIGTERM, unhandled)
    monkeypatch.setitem(registry.POLICIES, "self-stopping", "tests.sim.test_cli_sim:SelfStopping")
    try:
        _stopped_runs(capsys)
    finally:
        signal.signal(signal.SIGTERM, old)


def _stopped_runs(capsys):
    code, out, err = run(capsys, "simulate", "dl2:40:2", "--policy", "self-stopping,drf", "--json")
    doc = json.loads(out)
    assert code == 130 and doc["policies"] == ["self-stopping"] and len(doc["runs"]) == 1
    r = doc["runs"][0]
    assert r["status"] == "stopped" and r["decision_calls"] == 4 and r["completed"] < 40 and "stopped by a signal" in r["message"]
    assert "stopped: self-stopping ended early; not run: drf" in err
    code, out, err = run(capsys, "simulate", "dl2:40:2", "--policy", "self-stopping")
    assert code == 130 and "stopped (stopped by a signal at t=" in out

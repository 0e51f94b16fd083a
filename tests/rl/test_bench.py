"""``dlsched bench dl2 --json`` prints one object with the acceptance keys (a tiny run)."""

import json
import time

import pytest

from dlsched.bench import get_suite
from dlsched.bench.dl2 import pooled_latency
from dlsched.rl.policy import save_checkpoint
from dlsched.rl.slot import Spec

from .test_policy import bundles_in_arrival_order


@pytest.mark.parametrize("decide_at, teacher", [("slots", "drf"), ("events", "srpt-greedy")])
def test_bench_dl2_json_has_the_acceptance_keys(tmp_path, capsys, decide_at, teacher):
    ck = tmp_path / "m.pt"
    model = bundles_in_arrival_order(Spec(J=6, decide_at=decide_at))
    model.provenance = {"command": "test", "agreement": {"held_out": 0.5},
                        "config": {"teacher": teacher, "teacher_params": {"alpha": 1.0} if teacher != "drf" else {}}}
    save_checkpoint(model, ck)
    assert get_suite("dl2")(["--traces", "1", "--jobs", "5", "--servers", "3", "--small", "0",
                             "--checkpoint", str(ck), "--json", "--out", str(tmp_path / "r")]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("jct_reduction_vs_drf", "jct_reduction_vs_optimus", "traces", "inference_ms_p50"):
        assert key in out
    assert out["traces"] == 1 and 0 < out["inference_ms_p50"] <= out["inference_ms_p95"] <= out["inference_ms_max"]
    assert 0 <= out["inference_cpu_ms_p50"] <= out["inference_cpu_ms_p95"] <= out["inference_cpu_ms_max"]
    assert out["inferences"] > 0
    d, b = out["per_trace_jct"]["dl2"][0], out["per_trace_jct"]["drf"][0]
    assert abs(out["jct_reduction_vs_drf"] - (1 - d / b)) < 1e-12
    assert 0 <= out["agreement_with_teacher"] <= 1
    sl = out["slotted"]
    # at the same decision interval: DL2 deciding at the slots only against DRF deciding there
    ds = sl["dl2"]["per_trace_jct"][0] if decide_at == "events" else d
    assert sl["drf"]["mean_jct"] > 0 and abs(sl["jct_reduction_vs_drf"] - (1 - ds / sl["drf"]["per_trace_jct"][0])) < 1e-12
    # the teacher is simulated beside the baselines; a checkpoint deciding at events is also run at slots only
    assert out["teacher"] == teacher and out["mean_jct"][teacher] > 0 and out["decide_at"] == decide_at
    assert ("dl2" in sl) == (decide_at == "events") and (decide_at == "slots" or sl["dl2"]["mean_jct"] > 0)
    lb = out["lower_bound"]
    assert lb["mean"] <= min(v for v in out["mean_jct"].values() if v is not None) + 1e-6
    assert abs(lb["max_reduction_vs_drf"] - (1 - lb["mean"] / out["mean_jct"]["drf"])) < 1e-12


def test_a_stopped_bench_keeps_what_it_computed_and_a_rerun_resumes(tmp_path, capsys, monkeypatch):
    """A `timeout` (SIGTERM) or Ctrl-C after the simulations: their rows and the summary so far are
    on disk, one JSON object is printed, exit 130; the rerun does not simulate them again."""
    import signal

    import dlsched.bench.dl2 as bench

    ck = tmp_path / "m.pt"
    model = bundles_in_arrival_order(Spec(J=6))
    model.provenance = {"command": "test", "config": {"teacher": "drf"}}
    save_checkpoint(model, ck)
    argv = ["--traces", "2", "--jobs", "5", "--servers", "3", "--small", "0", "--checkpoint", str(ck), "--json",
            "--out", str(tmp_path / "r")]

    def timeout(*a, **k):
        try:        # inside code that catches errors, as policies and cells do
            signal.raise_signal(signal.SIGTERM)
        except Exception:
            pass

    monkeypatch.setattr(bench, "bound_study", timeout)
    assert bench.main(argv) == 130
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "estimate" in captured.err and "stopped (Stopped SIGTERM) after simulations" in captured.err
    assert out["complete"] is False and out["phases_done"] == ["simulations"] and out["mean_jct"]["drf"] > 0
    assert json.loads((tmp_path / "r" / "summary.json").read_text()) == out
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL      # the handler is put back
    monkeypatch.undo()
    from dlsched.bench import simcells

    ran = []
    monkeypatch.setattr(simcells, "run_sim_cell", lambda *a: ran.append(a))
    assert bench.main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    # the simulations were read back from the results file, not run again
    assert again["complete"] and again["per_trace_jct"] == out["per_trace_jct"] and ran == []


def test_the_heartbeat_prints_a_line_while_a_phase_runs(capsys):
    from dlsched.bench.dl2 import Heartbeat

    with Heartbeat(120.0, every=0.05) as beat:
        beat.phase, beat.count = "simulations", lambda: 7
        time.sleep(0.3)
    err = capsys.readouterr().err.splitlines()
    assert len(err) >= 2 and err[-1].startswith("bench dl2: simulations, 7 cells written;") and "min elapsed" in err[-1]


def test_the_heartbeat_estimates_the_time_left_from_the_cpu_share_the_run_has_had():
    from dlsched.bench.dl2 import Heartbeat

    clock = [100.0]
    beat = Heartbeat(600.0, enabled=False, clock=lambda: clock[0])
    beat.t0 -= 400.0                             # 400 s elapsed, 100 CPU-s used: a quarter of a core
    clock[0] = 200.0
    assert beat.line().endswith("estimate 33.3 min left at the 0.25 of a core it has had")   # 500 CPU-s / 0.25
    clock[0] = 800.0                             # more CPU than estimated: never "0 min left" while it runs
    assert beat.line().endswith("past its estimate of 10.0 CPU-min (11.7 used)")
    clock[0] = 100.0
    assert "no CPU time yet" in beat.line()


def test_latency_is_pooled_from_per_run_summaries():
    runs = [{"count": 10, "p50": 1.0, "p95": 2.0, "max": 5.0, "cpu_p50": 0.5, "cpu_p95": 0.9, "cpu_max": 3.0},
            {"count": 4, "p50": 3.0, "p95": 4.0, "max": 4.5, "cpu_p50": 0.7, "cpu_p95": 1.1, "cpu_max": 1.2},
            {"count": 1, "p50": 2.0, "p95": 2.5, "max": 2.5}]     # a row written before CPU time was recorded
    assert pooled_latency(runs) == {"inference_ms_p50": 2.0, "inference_ms_p95": 2.5, "inference_ms_max": 5.0,
                                    "inference_cpu_ms_p50": 0.6, "inference_cpu_ms_p95": 1.0,
                                    "inference_cpu_ms_max": 3.0, "inferences": 15}
    assert pooled_latency([])["inference_ms_p50"] is None and "inference_cpu_ms_p50" not in pooled_latency([])
    assert "inference_cpu_ms_p50" not in pooled_latency(runs[2:])                    # only rows without CPU time


def test_studies_run_as_suite_cells_and_pool_the_agreement(tmp_path):
    from dlsched.bench.dl2 import studies
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.rl.env import DL2Env
    from dlsched.rl.train import agreement, teacher_samples
    from dlsched.registry import make_policy
    from dlsched.sim.speed import TableSpeed

    ck = tmp_path / "m.pt"
    model = bundles_in_arrival_order(Spec(J=6))
    save_checkpoint(model, ck)
    out = studies([1, 2], [102], 5, 3, ck, {"name": "drf", "params": {}}, 2.0)
    assert out["errors"] == {}
    # the per-trace cells pool to the agreement of one environment over both traces
    env = DL2Env([dl2_trace(5, seed=s) for s in (1, 2)], dl2_cluster(3), TableSpeed(), model.spec)
    X, M, A, _ = teacher_samples(env, lambda: make_policy("drf"), range(2), 0.9)
    assert abs(out["agreement_with_teacher"] - agreement(model, X, M, A)) < 1e-12
    small = out["small"]
    assert [r["seed"] for r in small["traces"]] == [102]
    r = small["traces"][0]
    # the time-indexed LP bound is below every schedule's average JCT, the (time-limited) optimum's too
    assert r["bound"] <= min(r["opt"], r["dl2"], r["drf"]) + 1e-6
    assert abs(small["gap_to_optimum"] - (r["dl2"] / r["opt"] - 1)) < 1e-12
    assert abs(small["drf_gap_to_optimum"] - (r["drf"] / r["opt"] - 1)) < 1e-12
    assert studies([1], [], 5, 3, ck, {"name": "drf", "params": {}}, 2.0)["small"] is None

"""``dlsched bench dl2 --json`` prints one object with the acceptance keys (a tiny run)."""

import json

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
                             "--checkpoint", str(ck), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("jct_reduction_vs_drf", "jct_reduction_vs_optimus", "traces", "inference_ms_p50"):
        assert key in out
    assert out["traces"] == 1 and 0 < out["inference_ms_p50"] <= out["inference_ms_p95"] <= out["inference_ms_max"]
    assert out["inferences"] > 0
    d, b = out["per_trace_jct"]["dl2"][0], out["per_trace_jct"]["drf"][0]
    assert abs(out["jct_reduction_vs_drf"] - (1 - d / b)) < 1e-12
    assert 0 <= out["agreement_with_teacher"] <= 1
    sl = out["slotted"]
    assert sl["drf"]["mean_jct"] > 0 and abs(sl["jct_reduction_vs_drf"] - (1 - d / sl["drf"]["per_trace_jct"][0])) < 1e-12
    # the teacher is simulated beside the baselines; a checkpoint deciding at events is also run at slots only
    assert out["teacher"] == teacher and out["mean_jct"][teacher] > 0 and out["decide_at"] == decide_at
    assert ("dl2" in sl) == (decide_at == "events") and (decide_at == "slots" or sl["dl2"]["mean_jct"] > 0)
    lb = out["lower_bound"]
    assert lb["mean"] <= min(v for v in out["mean_jct"].values() if v is not None) + 1e-6
    assert abs(lb["max_reduction_vs_drf"] - (1 - lb["mean"] / out["mean_jct"]["drf"])) < 1e-12


def test_latency_is_pooled_from_per_run_summaries():
    runs = [{"count": 10, "p50": 1.0, "p95": 2.0, "max": 5.0}, {"count": 4, "p50": 3.0, "p95": 4.0, "max": 4.5},
            {"count": 1, "p50": 2.0, "p95": 2.5, "max": 2.5}]
    assert pooled_latency(runs) == {"inference_ms_p50": 2.0, "inference_ms_p95": 2.5, "inference_ms_max": 5.0,
                                    "inferences": 15}
    assert pooled_latency([])["inference_ms_p50"] is None

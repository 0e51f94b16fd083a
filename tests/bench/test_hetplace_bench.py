"""`dlsched bench hetplace --quick --json` prints one object with the acceptance keys."""

import json

from dlsched.bench import get_suite


def test_quick_json_has_the_acceptance_keys(capsys, tmp_path):
    rc = get_suite("hetplace")(["--quick", "--json", "--no-scale", "--seeds", "1", "--sizes", "5", "6", "--samples", "1", "8",
                                "--out", str(tmp_path)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("mean_gap", "max_gap", "speedup_vs_exact", "jain_fairness_mean", "samples", "curve", "environment"):
        assert key in out
    assert out["samples"] == 8 and out["instances"] == 2
    assert 0 <= out["mean_gap"] <= out["max_gap"] < 0.05
    assert 0 < out["jain_fairness_mean"] <= 1
    assert out["proportional_vs_equal"]["optimum_never_worse"]
    assert (tmp_path / "hetplace_curve.png").is_file()

"""``dlsched bench smd --quick --json`` prints one object with the acceptance keys."""

import json

from dlsched.bench import get_suite


def test_bench_smd_quick_json(capsys, tmp_path):
    rc = get_suite("smd")(["--quick", "--json", "--instances", "3", "--out", str(tmp_path)])
    doc = json.loads(capsys.readouterr().out)
    for key in ("mean_gap_smd", "mean_gap_optimus", "mean_gap_drf", "instances", "decision_seconds_p50", "environment"):
        assert key in doc
    assert doc["instances"] == 3 and rc == 0
    assert doc["all_checked"] and doc["exact_small_agree"] == "8/8" and doc["lp_round_guarantee_holds"]
    for r in doc["gap_rows"]:          # the time-indexed optimum is a lower bound of every schedule
        assert min(r["gap_smd"], r["gap_optimus"], r["gap_drf"]) >= -1e-9
    assert (tmp_path / "smd-quick.json").is_file()


def test_cli_solves_the_bundled_smd_instance(tmp_path):
    from dlsched.cli import main
    from dlsched.data import project_root

    path = project_root() / "instances" / "smd-small.json"
    for method in ("smd", "exact", "time-indexed", "optimus", "drf"):
        out = tmp_path / f"{method}.json"
        assert main(["solve", str(path), "--method", method, "--threads", "1", "--json", "--out", str(out)]) == 0
        assert main(["check", str(path), str(out)]) == 0

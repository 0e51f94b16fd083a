"""``dlsched bench mkp``: reference table parsing, one tiny run end to end (JSON contract)."""

from __future__ import annotations

import json

from dlsched.bench import get_suite
from dlsched.bench.mkp import summarise
from dlsched.instance.orlib import best_known, reference_of
from dlsched.instance.orlib import read_mkp


def test_best_known_table(data):
    table = best_known(data / "orlib/mkp/mkcbres.txt")
    assert len(table) == 270                       # 9 sizes x 30, the LP table is not mixed in
    assert table["5.100-00"] == 24381 and table["10.100-01"] == 22801
    inst = read_mkp(data / "orlib/mkp/mknapcb4.txt", 1)
    assert reference_of(inst, table) == (22801, "mkcbres.txt 10.100-01")
    inst = read_mkp(data / "orlib/mkp/mknap1.txt", 2)
    assert reference_of(inst, table)[0] == inst.reference.objective


def test_bench_mkp_json(data, tmp_path, capsys):
    main = get_suite("mkp")
    rc = main(["--files", str(data / "orlib/mkp/mknapcb1.txt"), "--problems", "0", "--time-limit", "0.5",
               "--methods", "exact,lp-round,core", "--out", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert set(out["methods"]) == {"exact", "lp-round", "core"}
    assert out["environment"]["time_limit"] == 0.5
    for s in out["methods"].values():
        assert s["runs"] == 1 and s["all_checked"] and s["all_bounds_valid"] and s["bounds_reported"] == 1
    assert (tmp_path / "gap_vs_time.png").is_file() and (tmp_path / "profile.png").is_file()
    (results,) = tmp_path.glob("results-*.jsonl")
    rows = [json.loads(l) for l in results.read_text().splitlines()][1:]      # after the header line
    assert [r["method"] for r in rows] == ["exact", "lp-round", "core"]
    assert summarise(rows) == out["methods"]
    # the same command again resumes: nothing left to run, the same summary from the file
    assert main(["--files", str(data / "orlib/mkp/mknapcb1.txt"), "--problems", "0", "--time-limit", "0.5",
                 "--methods", "exact,lp-round,core", "--out", str(tmp_path), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["methods"] == out["methods"] and len(results.read_text().splitlines()) == 4
    assert main(["--from-runs", str(results), "--out", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["methods"] == out["methods"]


def test_wins_ties_losses():
    rows = [{"instance": "a", "method": "exact", "objective": 10, "gap": 0.1, "bound": 12, "checked": True,
             "bound_valid": True, "seconds": 1, "time_to_target": None},
            {"instance": "a", "method": "core", "objective": 11, "gap": 0.0, "bound": 12, "checked": True,
             "bound_valid": True, "seconds": 1, "time_to_target": 0.5},
            {"instance": "b", "method": "exact", "objective": 10, "gap": 0.0, "bound": 10, "checked": True,
             "bound_valid": True, "seconds": 1, "time_to_target": 0.1},
            {"instance": "b", "method": "core", "objective": 10, "gap": 0.0, "bound": 10, "checked": True,
             "bound_valid": True, "seconds": 1, "time_to_target": 0.2}]
    s = summarise(rows)
    assert (s["core"]["wins"], s["core"]["ties"], s["core"]["losses"]) == (1, 1, 0)
    assert s["core"]["reached_target"] == 2 and abs(s["core"]["mean_time_to_target"] - 0.35) < 1e-12

"""The results-file reader is as strict as the instance reader: every malformed file is one
InputError naming the line (issue 25's cases), and a mutation fuzz finds no other exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.bench.results import read_results
from dlsched.errors import InputError

HEAD = json.dumps({"format": "dlsched-bench/1", "version": 1, "suite": "t"})
ROW = json.dumps({"cell": "a/exact/0", "status": "optimal", "objective": 1.0})


@pytest.mark.parametrize("text, where", [
    (HEAD + "\nnull\n" + ROW + "\n", "line 2"),
    (HEAD + '\n{"status": "optimal"}\n' + ROW + "\n", "line 2 .cell"),
    ('{"format": "dlsched-bench/1", "version": "x"}\n', "line 1 .version"),
    ('{"format": "dlsched-bench/1", "version": true}\n', "line 1 .version"),
    ("[]\n", "line 1 .format"),
    (HEAD + "\n" + "[" * 100000 + "]" * 100000 + "\n" + ROW + "\n", "line 2"),
    # a solve row's anytime curve is [seconds, objective] pairs (the report unpacks them), a simulate row's trace a name
    (HEAD + '\n{"cell": "a", "trace": [[0.1, 2.0], [0.5]]}\n', "line 2 .trace"),
    (HEAD + '\n{"cell": "a", "trace": "dl2-seed1"}\n', "line 2 .trace"),
    (HEAD + '\n{"cell": "a", "kind": "simulate", "trace": [[0.1, 2.0]]}\n', "line 2 .trace"),
])
def test_malformed_results_files_are_input_errors(tmp_path, text, where):
    p = tmp_path / "r.jsonl"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        read_results(p)
    assert e.value.where == where


def test_a_results_file_in_utf16_is_an_input_error(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes((HEAD + "\n").encode("utf-16"))
    with pytest.raises(InputError, match="UTF-8"):
        read_results(p)


def test_the_trace_field_of_each_kind_reads(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(HEAD + '\n{"cell": "a", "trace": [[0.1, 2.0], [0.5, 1]]}\n{"cell": "b", "kind": "simulate", "trace": "dl2"}\n')
    assert [r["trace"] for r in read_results(p)[1]] == [[[0.1, 2.0], [0.5, 1]], "dl2"]


def test_a_line_cut_by_a_kill_is_skipped(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(HEAD + "\n" + ROW + "\n" + ROW[:10])
    assert [r["cell"] for r in read_results(p)[1]] == ["a/exact/0"]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_mutated_results_files_read_or_refuse_cleanly(tmp_path_factory, data):
    raw = bytearray((HEAD + "\n" + ROW + "\n" + ROW + "\n").encode())
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if op == "flip" and raw:
            raw[at] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[at:at + data.draw(st.integers(1, 20))]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    p = tmp_path_factory.mktemp("fuzz") / "r.jsonl"
    p.write_bytes(bytes(raw))
    try:
        head, rows = read_results(p)
    except InputError:
        return
    assert isinstance(head, dict) and all(isinstance(r, dict) and isinstance(r["cell"], str) for r in rows)

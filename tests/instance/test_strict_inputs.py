"""Every number read from a file is finite and in range, and every malformed file is an InputError
naming the place (issue 10): JSON families, OR-Library MKP and GAP, and the file system."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

import dlsched
from dlsched.errors import InputError
from dlsched.instance import jsonio, oasis_gen, placement_gen, smd_gen
from dlsched.instance.core import MCMDK, from_dense
from dlsched.instance.generate import random_mcmdk

GOOD = {"format": "dlsched/1", "family": "mcmdk", "name": "t",
        "rows": [{"name": "gpu", "capacity": 4}],
        "jobs": [{"name": "a", "configurations": [{"value": 3, "use": [1]}]}]}


def load_text(tmp_path, text, name="f.json", **kw):
    p = tmp_path / name
    p.write_text(text)
    return dlsched.load(p, **kw)


@pytest.mark.parametrize("text, where, expected", [
    ('{"format": "dlsched/1", "family": "mcmdk", "rows": [], "jobs": [], "jobs": []}', "$.jobs", "each key once"),
    (json.dumps(GOOD).replace('"capacity": 4', '"capacity": NaN'), "$.rows[0].capacity", "a finite number"),
    (json.dumps(GOOD).replace('"capacity": 4', '"capacity": -Infinity'), "$.rows[0].capacity", "a finite number"),
    (json.dumps(GOOD).replace('"value": 3', '"value": 1e30'), "$.jobs[0].configurations[0].value", "below 1e15"),
    (json.dumps(GOOD).replace('"use": [1]', f'"use": [{2**63}]'), "$.jobs[0].configurations[0].use[0]", "below 1e15"),
    (json.dumps(GOOD).replace('"value": 3', '"value": 1' + "0" * 5000), "$.jobs[0].configurations[0].value", "below 1e15"),
    (json.dumps(GOOD).replace('"use": [1]', '"use": [-1]'), "$.jobs[0].configurations[0].use[0]", "a number >= 0"),
    (json.dumps(GOOD).replace('"name": "t"', '"name": ' + "[" * 50 + "1" + "]" * 50), "$.name", "nested at most"),
    ("[" * 100000 + "]" * 100000, "$", "nested at most"),
    (json.dumps(GOOD).replace('"capacity": 4', '"capacity": \u0664'), "line 1", "valid JSON"),
])
def test_json_numbers_and_structure(tmp_path, text, where, expected):
    with pytest.raises(InputError) as err:
        load_text(tmp_path, text)
    assert err.value.where.startswith(where) and expected in err.value.expected, str(err.value)


def test_smd_needs_a_job(tmp_path, instances_dir):
    doc = json.loads((instances_dir / "smd-small.json").read_text())
    doc["jobs"] = []
    with pytest.raises(InputError, match=r"\$\.jobs"):
        load_text(tmp_path, json.dumps(doc))


@pytest.mark.parametrize("path", ["smd-small.json", "dl-small.json"])
def test_sense_only_for_gap(instances_dir, data, path):
    with pytest.raises(InputError, match="--sense is for GAP files"):
        dlsched.load(instances_dir / path, sense="max")
    with pytest.raises(InputError, match="--sense is for GAP files"):
        dlsched.load(data / "orlib/mkp/mknap1.txt", sense="min")


def test_sense_in_a_family_file_that_has_none(tmp_path, instances_dir):
    doc = json.loads((instances_dir / "oasis-tiny.json").read_text())
    doc["sense"] = "max"
    with pytest.raises(InputError, match=r"\$: expected only the documented fields.*sense"):
        load_text(tmp_path, json.dumps(doc))


MKP = "1\n2 1 0\n5 7\n1 1\n3\n"


@pytest.mark.parametrize("old, new, expected", [
    ("5 7", "5 1_000", "a plain decimal number"),
    ("5 7", "5 \u0661\u0662", "a plain decimal number"),
    ("2 1 0", "2 1 inf", "a plain decimal number"),
    ("2 1 0", "2 1 nan", "a plain decimal number"),
    ("5 7", "5 1e300", "below 1e15"),
    ("5 7", "5 99999999999999999999", "below 1e15"),
    ("2 1 0", "2.5 1 0", "an integer"),
])
def test_orlib_numbers(tmp_path, old, new, expected):
    with pytest.raises(InputError) as err:
        load_text(tmp_path, MKP.replace(old, new), "p.txt")
    assert err.value.where.startswith("line ") and expected in err.value.expected, str(err.value)


def test_gap_negative_use(tmp_path):
    with pytest.raises(InputError, match=r"line 3, token 6: expected numbers >= 0 for the 1 x 2 resource matrix, found -1"):
        load_text(tmp_path, "1 2\n3 4\n1 -1\n5\n", "g", format="gap")


def test_directory_and_symlink_loop(tmp_path):
    (tmp_path / "d.json").mkdir()
    with pytest.raises(InputError, match="found a directory"):
        dlsched.load(tmp_path / "d.json")
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(InputError, match="symbolic link loop"):
        dlsched.load(tmp_path / "loop")


def test_binary_file(tmp_path):
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="a UTF-8 text file"):
        dlsched.load(tmp_path / "b.json")


@pytest.mark.parametrize("kwargs, where", [
    ({"path": 3}, "path"), ({"path": "x.json", "format": 2}, "format"),
    ({"path": "x.json", "problem": "1"}, "problem"), ({"path": "x.json", "problem": -1}, "problem"),
    ({"path": "x.json", "sense": "up"}, "sense"),
])
def test_library_load_arguments(kwargs, where):
    with pytest.raises(InputError) as err:
        dlsched.load(**kwargs)
    assert err.value.where == where


def test_library_save_and_check_arguments(tmp_path):
    with pytest.raises(InputError, match="an instance of a family"):
        dlsched.save(object(), tmp_path / "x.json")
    with pytest.raises(InputError, match="an instance of a family with a checker"):
        dlsched.check("not an instance", [0])
    with pytest.raises(InputError, match="a file path"):
        dlsched.save(jsonio.parse_document(GOOD), None)


@pytest.mark.parametrize("make, where", [
    (lambda: MCMDK("abc", np.zeros((1, 1)), [1], [0, 1]), "value"),
    (lambda: MCMDK([1, 2], [[1], [2, 3]], [1], [0, 2]), "A"),
    (lambda: MCMDK([1], None, [1], [0, 1]), "A"),
    (lambda: MCMDK([1], np.ones((1, 1)), [1], [0, 1], job_names=5), "job_names"),
    (lambda: MCMDK([1], -np.ones((1, 1)), [1], [0, 1]), "A"),
    (lambda: from_dense([[1]], [[[1]]], [1, 2]), "uses"),
    (lambda: from_dense("x", "y", "z"), "capacity"),
    (lambda: random_mcmdk("x", 2, 2), "n_jobs"),
    (lambda: random_mcmdk(3, 2, 2.5), "n_rows"),
    (lambda: oasis_gen.generate(0), "n_jobs"),
    (lambda: smd_gen.generate(-1, 2), "n_jobs"),
    (lambda: placement_gen.generate("x"), "n_jobs"),
    (lambda: dlsched.methods(5), "family"),
    (lambda: dlsched.methods("nope"), "family"),
])
def test_library_arguments_are_input_errors(make, where):
    with pytest.raises(InputError) as err:
        make()
    assert err.value.where == where


@pytest.mark.parametrize("path", ["smd-small.json", "oasis-tiny.json", "placement-small.json", "dl-small.json"])
def test_instance_constructors_raise_input_errors(instances_dir, path):
    """Every constructor field given a string, None, a negative, a ragged list or a fraction: an
    InputError naming the field, or an instance (never a bare TypeError/ValueError/IndexError)."""
    inst = dlsched.load(instances_dir / path)
    cls = type(inst)
    fields = [f.name for f in dataclasses.fields(cls) if f.init]
    for name in fields:
        for bad in ("abc", None, -1, [[1, 2], [3]], 1.5, [1.5]):
            kw = {g: getattr(inst, g) for g in fields}
            kw[name] = bad
            try:
                cls(**kw)
            except InputError:
                pass

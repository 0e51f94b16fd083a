"""dlsched/1 JSON files: lossless round trip and clear errors for bad input."""

import json

import numpy as np
import pytest
from hypothesis import given, settings

import dlsched
from dlsched.errors import InputError
from dlsched.instance import jsonio
from tests.helpers import tiny_mcmdk

GOOD = {
    "format": "dlsched/1", "family": "mcmdk", "name": "t", "sense": "max",
    "rows": [{"name": "gpu", "capacity": 4}, {"name": "cpu", "capacity": 10}],
    "jobs": [{"name": "a", "configurations": [{"value": 3, "use": [1, 2]}, {"value": 5, "use": {"gpu": 2, "cpu": 4}}]},
             {"name": "b", "configurations": [{"label": "w1", "value": 4, "use": [2, 5]}]}],
}


def same(a, b) -> bool:
    """Equal data (default names such as 'row0' are written out, so compare the names in effect)."""
    return (np.array_equal(a.value, b.value) and (a.A != b.A).nnz == 0 and np.array_equal(a.b, b.b)
            and np.array_equal(a.job_ptr, b.job_ptr) and a.sense == b.sense and a.choose == b.choose
            and a.name == b.name
            and [a.job_name(j) for j in range(a.n_jobs)] == [b.job_name(j) for j in range(b.n_jobs)]
            and [a.row_name(k) for k in range(a.n_rows)] == [b.row_name(k) for k in range(b.n_rows)]
            and a.config_labels == b.config_labels and a.reference == b.reference and a.description == b.description)


@settings(max_examples=40, deadline=None)
@given(tiny_mcmdk(max_jobs=5, max_configs=4, max_rows=4))
def test_round_trip_lossless(tmp_path_factory, inst):
    path = tmp_path_factory.mktemp("rt") / "i.json"
    dlsched.save(inst, path)
    back = dlsched.load(path)
    assert same(inst, back)
    dlsched.save(back, path)
    assert same(dlsched.load(path), back)


def test_round_trip_of_bundled_instances(instances_dir, tmp_path):
    """Every family: load -> save -> load gives the same document."""
    for path in sorted(instances_dir.glob("*.json")):
        inst = dlsched.load(path)
        dlsched.save(inst, tmp_path / path.name)
        assert jsonio.to_document(dlsched.load(tmp_path / path.name)) == jsonio.to_document(inst), path


def test_sparse_and_dense_use_agree():
    inst = jsonio.parse_document(GOOD, "good.json")
    assert inst.A.toarray().tolist() == [[1, 2, 2], [2, 4, 5]]
    assert inst.config_labels == ("", "", "w1")


def write(tmp_path, doc, name="bad.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def edit(path_keys, value):
    doc = json.loads(json.dumps(GOOD))
    target = doc
    for k in path_keys[:-1]:
        target = target[k]
    if value is KeyError:
        del target[path_keys[-1]]
    else:
        target[path_keys[-1]] = value
    return doc


@pytest.mark.parametrize("doc, where, expected, found", [
    (edit(["family"], "nope"), "$.family", "one of", "nope"),
    (edit(["format"], "dlsched/0"), "$.format", "'dlsched/1'", "dlsched/0"),
    (edit(["rows"], KeyError), "$", "the required field 'rows'", "no such field"),
    (edit(["rows", 1, "capacity"], -3), "$.rows[1].capacity", "a number >= 0", "-3"),
    (edit(["rows", 1, "capacity"], "ten"), "$.rows[1].capacity", "type number", "ten"),
    (edit(["jobs", 0, "configurations", 1, "value"], None), "$.jobs[0].configurations[1].value", "type number", "None"),
    (edit(["jobs", 1, "configurations", 0, "use"], [1]), "$.jobs[1].configurations[0].use", "2 numbers", "1"),
    (edit(["jobs", 0, "configurations", 1, "use"], {"tpu": 1}), "$.jobs[0].configurations[1].use.tpu", "a row name", "tpu"),
    (edit(["jobs", 0, "colour"], "red"), "$.jobs[0]", "only the documented fields", "unknown field 'colour'"),
    (edit(["sense"], "maximise"), "$.sense", "one of", "maximise"),
])
def test_bad_field_names_place(tmp_path, doc, where, expected, found):
    path = write(tmp_path, doc)
    with pytest.raises(InputError) as err:
        dlsched.load(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: at {where}: expected"), msg
    assert expected in msg and found in msg


def test_nan_capacity(tmp_path):
    text = json.dumps(GOOD).replace('"capacity": 10', '"capacity": NaN')
    with pytest.raises(InputError, match=r"at \$\.rows\[1\]\.capacity: expected a finite number, found nan"):
        dlsched.load(write(tmp_path, text))


def test_malformed_json(tmp_path):
    with pytest.raises(InputError, match=r"bad.json: at line 1 column \d+: expected valid JSON"):
        dlsched.load(write(tmp_path, '{"format": "dlsched/1", '))


def test_not_an_object(tmp_path):
    with pytest.raises(InputError, match=r"at \$: expected a JSON object, found list"):
        dlsched.load(write(tmp_path, "[1, 2]"))


def test_save_is_atomic(tmp_path, monkeypatch):
    inst = jsonio.parse_document(GOOD, "good.json")
    path = tmp_path / "out.json"
    path.write_text("old")

    def boom(doc):
        raise RuntimeError("disk full")

    monkeypatch.setattr(jsonio, "dumps", boom)
    with pytest.raises(RuntimeError):
        dlsched.save(inst, path)
    assert path.read_text() == "old"
    assert list(tmp_path.iterdir()) == [path]


def test_schema_files_are_valid_json_schema():
    import jsonschema

    for name in ("dlsched-1.schema.json", "mcmdk.schema.json"):
        jsonschema.Draft202012Validator.check_schema(jsonio.schema_text(name))

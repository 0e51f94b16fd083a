"""Reading and writing dlsched/1 JSON files (instances and solutions), validated by JSON Schema.

Errors name the file, the JSON path, what was expected and what was found. Files are written
atomically (a temporary file renamed into place), so nothing is half-written on failure.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

from dlsched.errors import InputError
from dlsched.instance.families import FAMILIES

FORMAT = "dlsched/1"


@lru_cache(maxsize=None)
def schema_text(name: str) -> dict:
    return json.loads(resources.files("dlsched.instance").joinpath("schema", name).read_text())


@lru_cache(maxsize=None)
def _validator(name: str):
    docs = {n: schema_text(n) for n in ["dlsched-1.schema.json"] + [f.schema for f in FAMILIES.values()]}
    docs.setdefault(name, schema_text(name))  # a stand-alone schema (cluster.schema.json)
    registry = Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc)) for doc in docs.values())
    return jsonschema.Draft202012Validator(docs[name], registry=registry)


def json_path(parts) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _nonfinite(doc: Any, path: list) -> tuple[list, float] | None:
    """The first NaN or infinity in a parsed document (JSON Schema cannot see them)."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return path, doc
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        hit = _nonfinite(v, path + [k])
        if hit:
            return hit
    return None


def _expected(err: jsonschema.ValidationError) -> str:
    v, s = err.validator, err.validator_value
    if v == "type":
        return f"a value of type {s}"
    if v == "required":
        missing = [k for k in s if isinstance(err.instance, dict) and k not in err.instance]
        return f"the required field '{missing[0] if missing else s}'"
    if v in ("minimum", "exclusiveMinimum"):
        return f"a number {'>=' if v == 'minimum' else '>'} {s}"
    if v in ("enum", "const"):
        return f"one of {s!r}" if v == "enum" else repr(s)
    if v == "additionalProperties":
        return "only the documented fields (see docs/file-format.md)"
    return err.message


def validate(doc: Any, schema: str, source: str) -> None:
    """Validate ``doc`` against a shipped schema; raise :class:`InputError` on the first problem."""
    bad = _nonfinite(doc, [])
    if bad:
        raise InputError(source, json_path(bad[0]), "a finite number", bad[1])
    errors = list(_validator(schema).iter_errors(doc))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        where = json_path(err.absolute_path)
        found: Any = err.instance
        if err.validator == "required":
            found = "no such field"
        elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            found = f"unknown field '{extra[0]}'" if extra else err.instance
        raise InputError(source, where, _expected(err), found)


def parse_document(doc: Any, source: str = "<memory>"):
    """Turn a parsed dlsched/1 document into an instance of its family."""
    if not isinstance(doc, dict):
        raise InputError(source, "$", "a JSON object", type(doc).__name__)
    if doc.get("format") != FORMAT:
        raise InputError(source, "$.format", f"'{FORMAT}'", doc.get("format", "no such field"))
    family = doc.get("family")
    if family not in FAMILIES:
        raise InputError(source, "$.family", f"one of {', '.join(sorted(FAMILIES))}", family if family is not None else "no such field")
    fam = FAMILIES[family]
    validate(doc, fam.schema, source)
    _unique_job_names(doc, source)
    return fam.parse(doc, source)


def _unique_job_names(doc: dict, source: str) -> None:
    """Every family names its jobs in ``$.jobs[*].name``; results and checkers refer to them by name."""
    first: dict[str, int] = {}
    for i, job in enumerate(doc.get("jobs") or []):
        name = job.get("name") if isinstance(job, dict) else None
        if name is None:
            continue
        if name in first:
            raise InputError(source, f"$.jobs[{i}].name", "unique job names", f"'{name}' again (first at $.jobs[{first[name]}])")
        first[name] = i


def read_json(path: str | os.PathLike) -> Any:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(str(path), "file", "an existing file", "no such file") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "file", "a UTF-8 JSON file", type(exc).__name__) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"line {exc.lineno} column {exc.colno}", "valid JSON", exc.msg) from None


def load_json(path: str | os.PathLike):
    """Load an instance file in the dlsched/1 format."""
    return parse_document(read_json(path), str(path))


def to_document(instance) -> dict:
    fam = FAMILIES[instance.family]
    doc = fam.dump(instance)
    return {"format": FORMAT, "family": instance.family, **doc}


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_FLAT_LIST = re.compile(r"\[([^\[\]{}\"]*)\]")


def dumps(doc: dict) -> str:
    """Indented JSON with lists of plain numbers kept on one line (files stay readable and small)."""
    text = json.dumps(doc, indent=1)
    return _FLAT_LIST.sub(lambda m: "[" + ", ".join(t.strip() for t in m.group(1).split(",") if t.strip()) + "]", text)


def save_json(instance, path: str | os.PathLike) -> None:
    write_atomic(path, dumps(to_document(instance)) + "\n")


# ------------------------------------------------------------------------------ solutions

def solution_document(instance, result) -> dict:
    fam = FAMILIES[instance.family]
    return {"format": FORMAT, "kind": "solution", "family": instance.family, "instance": instance.name,
            **result.summary(), "solution": fam.dump_solution(result.solution)}


def load_solution(instance, path: str | os.PathLike):
    """Read a solution file written by ``dlsched solve --out``; returns (solution, claimed objective)."""
    doc = read_json(path)
    source = str(path)
    if not isinstance(doc, dict) or doc.get("kind") != "solution":
        raise InputError(source, "$.kind", "'solution'", doc.get("kind") if isinstance(doc, dict) else type(doc).__name__)
    if doc.get("family") != instance.family:
        raise InputError(source, "$.family", f"'{instance.family}' (the instance's family)", doc.get("family"))
    if "solution" not in doc:
        raise InputError(source, "$.solution", "a solution", "no such field")
    if doc["solution"] is None:
        raise InputError(source, "$.solution", "a solution",
                         f"null (the run that wrote this file found none: status {doc.get('status', 'unknown')})")
    fam = FAMILIES[instance.family]
    return fam.parse_solution(instance, doc["solution"], source), doc.get("objective")

"""Reading and writing dlsched/1 JSON files (instances and solutions), validated by JSON Schema.

Errors name the file, the JSON path, what was expected and what was found. Files are written
atomically (a temporary file renamed into place), so nothing is half-written on failure.
"""

from __future__ import annotations

import json
import math
import os
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema
from referencing import Registry, Resource

from dlsched.errors import InputError
from dlsched.instance.families import FAMILIES, Family
from dlsched.instance.files import read_text, write_atomic

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


#: every number in a dlsched/1 (or OR-Library) file has a magnitude below 10^15: HiGHS treats a
#: matrix entry of 1e15 or more as infinite (its ``large_matrix_value``), float64 holds every
#: integer below it exactly, and every integer field fits int64
MAX_MAGNITUDE = 1e15
MAGNITUDE_RULE = "a number of magnitude below 1e15"
#: nesting depth of a document (the deepest in the format is a schedule: 5 levels)
MAX_DEPTH = 32
_INT_DIGITS = 18  # longer integer literals are not converted (Python refuses 4300+ digits; 10^15 has 16)


class _LongInteger(str):
    """An integer literal too long to convert; reported with its JSON path by :func:`scan`."""


class _DuplicateKeys(dict):
    """An object in which a key appeared twice; ``duplicate`` is the key."""

    duplicate: str = ""


def _pairs(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set = set()
    dup = next(k for k, _ in pairs if k in seen or seen.add(k))
    out = _DuplicateKeys(out)
    out.duplicate = dup
    return out


def _parse_int(text: str):
    return int(text) if len(text.lstrip("-")) <= _INT_DIGITS else _LongInteger(text)


def scan(doc: Any, source: str) -> None:
    """Raise :class:`InputError` at the JSON path of the first duplicate key, NaN or infinity,
    number of magnitude 10^15 or more (:data:`MAX_MAGNITUDE`), or nesting deeper than :data:`MAX_DEPTH`
    (JSON Schema cannot see any of them)."""
    stack: list[tuple[Any, list]] = [(doc, [])]
    while stack:
        node, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise InputError(source, json_path(path), f"a document nested at most {MAX_DEPTH} deep", f"depth {len(path)}")
        if isinstance(node, _LongInteger):
            raise InputError(source, json_path(path), MAGNITUDE_RULE, f"an integer of {len(node.lstrip('-'))} digits")
        if isinstance(node, bool) or not isinstance(node, (int, float, dict, list)):
            continue
        if isinstance(node, float) and not math.isfinite(node):
            raise InputError(source, json_path(path), "a finite number", node)
        if isinstance(node, (int, float)):
            if not abs(node) < MAX_MAGNITUDE:
                raise InputError(source, json_path(path), MAGNITUDE_RULE, node)
            continue
        if isinstance(node, _DuplicateKeys):
            raise InputError(source, json_path(path + [node.duplicate]), "each key once in an object", f"'{node.duplicate}' twice")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((v, path + [k]) for k, v in reversed(list(items)))


def loads(text: str, source: str) -> Any:
    """Parse JSON text strictly (see :func:`scan`); errors name the line and column."""
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno} column {exc.colno}", "valid JSON", exc.msg) from None
    except RecursionError:
        raise InputError(source, "$", f"a document nested at most {MAX_DEPTH} deep", "deeper nesting") from None
    scan(doc, source)
    return doc


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
    scan(doc, source)
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
    if not isinstance(family, str) or family not in FAMILIES:
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
    return loads(read_text(path), str(path))


def load_json(path: str | os.PathLike):
    """Load an instance file in the dlsched/1 format."""
    return parse_document(read_json(path), str(path))


def family_of(instance) -> Family:
    """The family table entry of an instance object (an :class:`InputError` for anything else)."""
    family = getattr(instance, "family", None)
    if not isinstance(family, str) or family not in FAMILIES:
        raise InputError("<argument>", "instance", f"an instance of a family ({', '.join(sorted(FAMILIES))})",
                         type(instance).__name__)
    return FAMILIES[family]


def to_document(instance) -> dict:
    doc = family_of(instance).dump(instance)
    return {"format": FORMAT, "family": instance.family, **doc}


_FLAT_LIST = re.compile(r"\[([^\[\]{}\"]*)\]")


def dumps(doc: dict) -> str:
    """Indented JSON with lists of plain numbers kept on one line (files stay readable and small)."""
    text = json.dumps(doc, indent=1)
    return _FLAT_LIST.sub(lambda m: "[" + ", ".join(t.strip() for t in m.group(1).split(",") if t.strip()) + "]", text)


def save_json(instance, path: str | os.PathLike) -> None:
    write_atomic(path, dumps(to_document(instance)) + "\n")


# ------------------------------------------------------------------------------ solutions

def solution_document(instance, result) -> dict:
    fam = family_of(instance)
    return {"format": FORMAT, "kind": "solution", "family": instance.family, "instance": instance.name,
            **result.summary(), "solution": fam.dump_solution(result.solution)}


def recorded_instance(path: str | os.PathLike) -> str | None:
    """The name of the instance a solution file records (``$.instance``), if it records one."""
    doc = _solution_doc(path)
    name = doc.get("instance")
    return name if isinstance(name, str) else None


def _solution_doc(path) -> dict:
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("kind") != "solution":
        raise InputError(str(path), "$.kind", "'solution'", doc.get("kind") if isinstance(doc, dict) else type(doc).__name__)
    return doc


def load_solution(instance, path: str | os.PathLike):
    """Read a solution file written by ``dlsched solve --out``; returns (solution, claimed objective).
    A file that records another instance's name (``$.instance``) is refused: its numbers would be
    checked against the wrong data."""
    doc = _solution_doc(path)
    source = str(path)
    recorded = doc.get("instance")
    if isinstance(recorded, str) and recorded and instance.name and recorded != instance.name:
        raise InputError(source, "$.instance", f"a solution of '{instance.name}' (the instance given)",
                         f"'{recorded}'" + (" (pick its problem with --problem)" if recorded.rpartition("-")[2].isdigit() else ""))
    if doc.get("family") != instance.family:
        raise InputError(source, "$.family", f"'{instance.family}' (the instance's family)", doc.get("family"))
    if "solution" not in doc:
        raise InputError(source, "$.solution", "a solution", "no such field")
    if doc["solution"] is None:
        raise InputError(source, "$.solution", "a solution",
                         f"null (the run that wrote this file found none: status {doc.get('status', 'unknown')})")
    claimed = doc.get("objective")
    if claimed is not None and (isinstance(claimed, bool) or not isinstance(claimed, (int, float))):
        raise InputError(source, "$.objective", "a number or null", claimed)
    return family_of(instance).parse_solution(instance, doc["solution"], source), claimed

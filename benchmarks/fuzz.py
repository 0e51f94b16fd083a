"""Fuzz every reader and the checker through the CLI: mutated instance files, tampered solutions.

    PYTHONPATH=$PWD python benchmarks/fuzz.py [--inputs 1000] [--solutions 300] [--surfaces 500] [--seed 0] [--timeout 20] [--json]

Seeds: every bundled instance (``instances/*.json``: all four families) and three OR-Library
files (a one-problem cut of ``mknap1.txt`` in the multi-problem layout, ``sac94/weing/weing1.dat``
in the one-problem layout, GAP ``c0515_1``), each read to its last token so that a bad token is
always seen. A *mutated input* is a seed with one to three random edits (numbers swapped for
odd ones, NaN, 1e30, 2^63, 5000-digit integers, duplicate keys, deep nesting, deleted or
retyped fields, non-ASCII digits, ``1_000``, ``inf``, truncation, ...), a directory or a symlink
loop instead of a file, or odd arguments (``--sense`` on JSON/MKP, ``--problem``, a wrong
``--format``); it runs through ``dlsched convert`` and, when that succeeds, ``dlsched check``
against the seed's own solution, ``dlsched solve`` with the seed's method (2 s limit) and
``dlsched export``. A *tampered solution* is the seed's solution file (written by
``dlsched solve --out``) with one edit (objective NaN/inf/string/off by 1 %, indices 1e30 or 2.5
or out of range, completion 2.5 or a string, NaN or doubled samples, unknown GPUs, ...) run
through ``dlsched check``.

A *surface trial* (``--surfaces``) mutates one input of the simulator and the harness (issue
25): a trace of every format (Tiresias, Gavel, OpenB, Microsoft ITP, Pollux; a field made odd,
dropped or added, a row duplicated, the file cut, bytes that are not UTF-8) run by ``dlsched
simulate`` on a cluster it fits, or a generated Gavel trace spec (``gavel:N:SEED:KEY=VALUE,...``
with odd fields, keys and values); a cluster (a JSON spec, Gavel's ``cluster_specs.json``, a
Tiresias cluster CSV, an OpenB node list, an ``SxG`` / ``V:P:K`` spec with odd numbers); a policy
option (``-P key=value`` of a random policy, an odd value or a misspelt name); the scaling flags
(``--arrival-scale``, ``--inflate``, ``--speed-noise``, ...); a suite file (a value replaced by
an odd TOML value, a key misspelt, the file cut or random bytes: a refusal must come before any
results file is written, and an accepted suite must run without failed cells); a results file
(a line's field odd or deleted, a ``null`` line, deep nesting, UTF-16) through ``dlsched
report``; the shipped DL2 checkpoint (flipped bytes, a NaN weight, a cut tensor, an odd spec or
hidden size; needs the rl extra). The surfaces take turns.

Solves use one thread: HiGHS keeps one global thread pool per process, and a later solve asking
for another thread count than the first fails (a known HiGHS behaviour). Every run is in-process (``dlsched.cli.main`` with ``--debug``, so that an unexpected exception
surfaces) under a per-run alarm. Outcomes: *clean error* (an ``InputError``, exit 2 without
``--debug``), *rejected* (exit 1), *accepted* (exit 0), *traceback* (any other exception, incl.
``SolverError``), *hang* (the alarm fired). An edit that makes a file certainly invalid is
marked ``must_reject``; *wrongly accepted* counts those that were accepted. Targets: 0
tracebacks, 0 hangs, 0 wrongly accepted. Every random choice comes from ``--seed``.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import math
import os
import random
import re
import signal
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from dlsched.cli import main as cli_main
from dlsched.data import data_dir, project_root
from dlsched.errors import InputError
from dlsched.instance.gavel_gen import OPTIONS as GAVEL_OPTIONS
from dlsched.registry import FAMILIES

OUTCOMES = ("clean error", "rejected", "accepted", "traceback", "hang")


# ------------------------------------------------------------------------------ seeds

@dataclass
class Seed:
    name: str
    family: str                 # mcmdk, smd, oasis, placement, mkp, gap
    path: Path
    args: tuple[str, ...] = ()  # extra arguments the file needs (e.g. --sense for GAP)
    solution: Path | None = None
    method: str = "exact"


def make_seeds(work: Path) -> list[Seed]:
    """The seed files (OR-Library ones cut so that every token is read) and their solutions."""
    seeds = []
    for p in sorted((project_root() / "instances").glob("*.json")):
        seeds.append(Seed(p.stem, json.loads(p.read_text())["family"], p))
    orlib = data_dir() / "orlib"
    toks = (orlib / "mkp" / "mknap1.txt").read_text().split()
    n, m = int(toks[1]), int(toks[2])
    cut = work / "mknap1-first.txt"
    cut.write_text("1\n" + " ".join(toks[1:1 + 3 + n + n * m + m]) + "\n")
    seeds.append(Seed("mknap1-first", "mkp", cut))
    seeds.append(Seed("weing1", "mkp", orlib / "mkp" / "sac94" / "weing" / "weing1.dat"))
    gap = work / "gap"
    gap.mkdir(exist_ok=True)
    (gap / "c0515_1").write_text((orlib / "gap" / "c0515_1").read_text())
    seeds.append(Seed("c0515_1", "gap", gap / "c0515_1", ("--sense", "max")))
    for s in seeds:
        # OR-Library seeds ("mkp", "gap") are core instances
        s.method = FAMILIES[s.family if s.family in FAMILIES else "mcmdk"].example_method
        sol = work / f"{s.name}.solution.json"
        out = run(["solve", str(s.path), *s.args, "--method", s.method, "--time-limit", "20", "--threads", "1", "--out", str(sol), "--json"], 120)
        if out.kind != "accepted" or not sol.exists():
            raise RuntimeError(f"seed {s.name}: solving it gave {out.kind}: {out.detail}")
        s.solution = sol
    return seeds


# ------------------------------------------------------------------------------ running one trial

@dataclass
class Outcome:
    kind: str
    detail: str = ""


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def run(argv: list[str], timeout: float) -> Outcome:
    """``dlsched --debug ARGV`` in-process, output captured, under an alarm of ``timeout`` s."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(["--debug", *argv])
        return Outcome({0: "accepted", 1: "rejected"}.get(code, "traceback"), f"exit {code}: {err.getvalue()[-300:]}")
    except _Hang:
        return Outcome("hang", f"over {timeout:g} s")
    except InputError as exc:
        return Outcome("clean error", str(exc)[:300])
    except SystemExit as exc:  # argparse usage errors: exit 2 with a usage line
        return Outcome("clean error" if exc.code == 2 else "traceback", f"SystemExit {exc.code}: {err.getvalue()[-200:]}")
    except BaseException as exc:  # noqa: BLE001  (the fuzzer's whole point is to see these)
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc.__cause__ or exc.__context__, _Hang):     # the alarm fired inside a policy (PolicyError)
            return Outcome("hang", f"over {timeout:g} s: {type(exc).__name__}")
        return Outcome("traceback", "".join(traceback.format_exception(exc)[-3:])[-600:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Trial:
    kind: str                   # "input" or "solution"
    seed: str
    edits: list[str]
    argv: list[str]
    must_reject: bool
    then: list[list[str]] = field(default_factory=list)   # further runs when the first is accepted


def run_trial(trial: Trial, timeout: float) -> Outcome:
    out = run(trial.argv, timeout)
    if out.kind == "accepted":
        for argv in trial.then:
            more = run(argv, timeout)
            if more.kind in ("traceback", "hang"):
                return Outcome(more.kind, f"{' '.join(argv)}: {more.detail}")
    return out


# ------------------------------------------------------------------------------ JSON edits

BAD_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e30", str(2**63), "1" + "0" * 5000, "-1e400"]
ODD_VALUES = [0, -1, 1, 2.5, 1e-300, 1e15, 7, 100, 3.0, "1", "", True, False, None, [], {}, [1, 2], {"a": 1}]


def _paths(doc, path=()):
    yield path, doc
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from _paths(v, path + (k,))


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def _set(doc, path, value):
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _pick(rng, doc, want):
    cands = [p for p, v in _paths(doc) if want(v)]
    return rng.choice(cands) if cands else None


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


MARK = "\u0000MARK\u0000"


def edit_json(rng: random.Random, doc, family: str) -> tuple[object, str, bool]:
    """One random edit of a parsed document: (new doc, or raw text when the edit is textual; label; must_reject)."""
    op = rng.choice(["bad_number", "odd_value", "odd_value", "delete_key", "empty_list", "duplicate_key",
                     "deep_nesting", "extra_field", "duplicate_item", "negative", "huge_count", "scale", "scale", "drop_item"])
    if op == "bad_number":
        p = _pick(rng, doc, _is_num)
        if p is not None:
            token = rng.choice(BAD_NUMBERS)
            text = json.dumps(_set(doc, p, MARK)).replace(json.dumps(MARK), token)
            return text, f"{op} {token[:12]} at {list(p)}", True
    if op == "odd_value":
        p = _pick(rng, doc, lambda v: True)
        if p:
            v = rng.choice(ODD_VALUES)
            return _set(doc, p, v), f"{op} {v!r} at {list(p)}", False
    if op == "delete_key":
        p = _pick(rng, doc, lambda v: isinstance(v, dict) and v)
        if p is not None:
            k = rng.choice(sorted(_get(doc, p)))
            del _get(doc, p)[k]
            return doc, f"{op} {list(p) + [k]}", False
    if op == "empty_list":
        p = _pick(rng, doc, lambda v: isinstance(v, list) and v)
        if p is not None:
            _set(doc, p, [])
            # an smd file needs at least one job (and the format one row use per row, one server, ...)
            return doc, f"{op} at {list(p)}", family == "smd" and p == ("jobs",)
    if op == "duplicate_key":
        p = _pick(rng, doc, lambda v: isinstance(v, dict) and v)
        if p is not None:
            obj = _get(doc, p)
            k = rng.choice(sorted(obj))
            obj[MARK] = obj[k]
            return json.dumps(doc).replace(json.dumps(MARK), json.dumps(k)), f"{op} {k!r} at {list(p)}", True
    if op == "deep_nesting":
        p = _pick(rng, doc, lambda v: not isinstance(v, (dict, list)))
        if p is not None:
            depth = rng.choice([40, 200, 3000])
            text = json.dumps(_set(doc, p, MARK)).replace(json.dumps(MARK), "[" * depth + "1" + "]" * depth)
            return text, f"{op} {depth} at {list(p)}", True
    if op == "extra_field":
        # 'sense' where the format has none (every family but mcmdk), or an unknown field anywhere
        if family not in ("mcmdk", "solution") and isinstance(doc, dict) and rng.random() < 0.5:
            doc["sense"] = rng.choice(["max", "min"])
            return doc, f"{op} sense", True
        p = _pick(rng, doc, lambda v: isinstance(v, dict))
        if p is None:
            return json.dumps(doc)[:-1], "truncate", True
        _get(doc, p)["zz_unknown"] = 1
        in_free = any(k in ("meta", "capacity", "worker_demand", "ps_demand", "use", "throughput", "profiles") for k in p)
        return doc, f"{op} zz_unknown at {list(p)}", not in_free
    if op == "duplicate_item":
        jobs = doc.get("jobs") if isinstance(doc, dict) else None
        named = [j for j in jobs if isinstance(j, dict) and "name" in j] if isinstance(jobs, list) else []
        if named:
            jobs.append(json.loads(json.dumps(rng.choice(named))))
            return doc, f"{op} job (duplicate name)", True
    if op == "negative":
        p = _pick(rng, doc, lambda v: _is_num(v) and v > 0)
        if p is not None:
            _set(doc, p, -_get(doc, p))
            certain = family == "mcmdk" and "use" in p
            return doc, f"{op} at {list(p)}", certain
    if op == "scale":   # a plausible variant: the file usually stays valid, so the methods and the checker run
        p = _pick(rng, doc, lambda v: _is_num(v) and v > 0)
        if p is not None:
            v = _get(doc, p)
            f = rng.choice([0.5, 2, 3, 10])
            new = int(v * f) if isinstance(v, int) and float(v * f).is_integer() else v * f
            return _set(doc, p, new), f"{op} x{f} at {list(p)}", False
    if op == "drop_item":
        p = _pick(rng, doc, lambda v: isinstance(v, list) and len(v) >= 2)
        if p is not None:
            del _get(doc, p)[rng.randrange(len(_get(doc, p)))]
            return doc, f"{op} at {list(p)}", False
    if op == "huge_count":
        p = _pick(rng, doc, lambda v: _is_num(v) and float(v).is_integer() and v > 0)
        if p is not None:
            v = rng.choice([10**6, 10**9, 2**40, 10**15 - 1])
            return _set(doc, p, v), f"{op} {v} at {list(p)}", False
    return json.dumps(doc)[:-1], "truncate", True


def edit_text(rng: random.Random, doc) -> tuple[str, str, bool]:
    """A textual edit of a JSON document (its text, label, must_reject)."""
    op = rng.choice(["truncate", "non_ascii_digit", "bom_garbage"])
    text = json.dumps(doc)
    if op == "non_ascii_digit":
        p = _pick(rng, doc, _is_num)
        if p is not None:
            num = json.dumps(_get(doc, p))
            i = rng.choice([k for k, c in enumerate(num) if c.isdigit()])
            num = num[:i] + chr(0x0660 + int(num[i])) + num[i + 1:]
            return json.dumps(_set(doc, p, MARK)).replace(json.dumps(MARK), num), op, True
    if op == "bom_garbage":
        return "\x00\xff" + text, op, True
    i = rng.randrange(1, max(2, len(text.rstrip()) - 1))
    return text[:i], f"truncate at {i}", True


# ------------------------------------------------------------------------------ OR-Library edits

BAD_TOKENS = ["nan", "inf", "-inf", "1_000", "\u0661\u0662\u0663", "0x10", "1e999", "99999999999999999999", "abc", "1e30", "--1", "1.2.3"]
ODD_TOKENS = ["0", "-1", "2.5", "7", "1e15", "+5", ".5", "1e3", "100000"]


def edit_orlib(rng: random.Random, text: str) -> tuple[str, str, bool]:
    lines = [ln.split() for ln in text.splitlines()]
    spots = [(i, j) for i, ln in enumerate(lines) for j in range(len(ln))]
    op = rng.choice(["bad_token", "odd_token", "odd_token", "delete_token", "insert_token", "duplicate_line", "truncate"])
    i, j = rng.choice(spots)
    if op == "bad_token":
        t = rng.choice(BAD_TOKENS)
        lines[i][j] = t
        label, certain = f"{op} {t} at line {i + 1}", True
    elif op == "odd_token":
        t = rng.choice(ODD_TOKENS)
        lines[i][j] = t
        label, certain = f"{op} {t} at line {i + 1}", False
    elif op == "delete_token":
        del lines[i][j]
        label, certain = f"{op} line {i + 1}", False
    elif op == "insert_token":
        lines[i].insert(j, rng.choice(ODD_TOKENS))
        label, certain = f"{op} line {i + 1}", False
    elif op == "duplicate_line":
        lines.insert(i, list(lines[i]))
        label, certain = f"{op} {i + 1}", False
    else:
        lines = lines[:i] + [lines[i][:j]]
        label, certain = f"truncate at line {i + 1}", True
    return "\n".join(" ".join(ln) for ln in lines) + "\n", label, certain


# ------------------------------------------------------------------------------ trials

def _pick_seed(rng: random.Random, seeds: list[Seed]) -> Seed:
    """A family uniformly, then one of its seeds (the bundled files are mostly mcmdk)."""
    family = rng.choice(sorted({s.family for s in seeds}))
    return rng.choice([s for s in seeds if s.family == family])


def input_trial(rng: random.Random, seeds: list[Seed], work: Path, k: int) -> Trial:
    seed = _pick_seed(rng, seeds)
    ext = ".json" if seed.path.suffix == ".json" else ""
    folder = work / f"in{k}"
    folder.mkdir(exist_ok=True)
    target = folder / (seed.path.name if seed.family == "gap" else f"mutant{ext}")
    out = folder / "out.json"
    args = list(seed.args)
    edits, must = [], False
    r = rng.random()
    if r < 0.04:
        target.mkdir()
        edits, must = ["a directory"], True
    elif r < 0.08:
        target.symlink_to(target.name)   # a loop: the link points at itself
        edits, must = ["symlink loop"], True
    elif r < 0.16:
        target.write_text(seed.path.read_text())
        choice = rng.choice(["sense", "problem", "format"])
        if choice == "sense" and seed.family != "gap":
            args += ["--sense", "max"]
            edits, must = [f"argument {choice}"], True
        elif choice == "problem" and seed.family != "mkp":
            args += ["--problem", "1"]
            edits, must = [f"argument {choice}"], True
        else:
            native = "json" if seed.path.suffix == ".json" else seed.family
            fmt = rng.choice([f for f in ("json", "mkp", "gap") if f != native])
            args += ["--format", fmt]
            # JSON read as numbers, or numbers read as JSON, cannot parse; MKP read as GAP may
            edits, must = [f"argument --format {fmt}"], (native == "json") != (fmt == "json")
    elif seed.path.suffix == ".json":
        doc: object = json.loads(seed.path.read_text())
        text = None
        for _ in range(rng.randint(1, 3)):
            if text is not None or must:
                break   # a textual edit ends the series; so does an invalidating one (a later edit could undo it)
            if rng.random() < 0.12:
                text, label, certain = edit_text(rng, doc)
            else:
                res, label, certain = edit_json(rng, doc, seed.family)
                if isinstance(res, str):
                    text = res
                else:
                    doc = res
            edits.append(label)
            must = must or certain
        target.write_text(text if text is not None else json.dumps(doc))
    else:
        text = seed.path.read_text()
        shifted = False
        for _ in range(rng.randint(1, 2)):
            if must:
                break   # an invalidating edit is the last (a later one could undo it)
            text, label, certain = edit_orlib(rng, text)
            edits.append(label)
            # a seed is read to its last token; once tokens were added or removed, a bad one may lie
            # beyond what the reader reads, so only an edit of the unshifted file is certain
            must = certain and not shifted
            shifted = shifted or label.startswith(("delete_token", "insert_token", "duplicate_line"))
        target.write_text(text)
    then = [["check", str(target), *args, str(seed.solution)],
            ["solve", str(target), *args, "--method", seed.method, "--time-limit", "2", "--threads", "1", "--json"],
            ["export", str(target), *args, str(folder / "model.lp")]]
    return Trial("input", seed.name, edits, ["convert", str(target), *args, str(out)], must, then)


def _solution_edit(rng: random.Random, doc: dict, family: str) -> tuple:
    """One edit of a solution document in place (family-specific or generic): (label, must_reject),
    plus the file's whole text when the edit is textual."""
    sol = doc["solution"]
    op = rng.choice(["objective", "objective", "envelope", "family", "family", "family", "generic"])
    if op == "objective":
        v = rng.choice(["nan", "inf", "string", "bool", "list", "off", "off", "big"])
        obj = doc.get("objective")
        new = {"nan": math.nan, "inf": -math.inf, "string": "12", "bool": True, "list": [1], "big": 1e30,
               "off": (obj * 1.01 + 1) if isinstance(obj, (int, float)) else 1.5}[v]
        doc["objective"] = new
        return f"objective {v}", True
    if op == "envelope":
        k = rng.choice(["kind", "family", "solution-null", "solution-missing"])
        if k == "kind":
            doc["kind"] = "instance"
        elif k == "family":
            doc["family"] = rng.choice(["oasis", "nope", 3])
        elif k == "solution-null":
            doc["solution"] = None
        else:
            del doc["solution"]
        return f"envelope {k}", not (k == "family" and doc["family"] == family)
    if op == "generic":
        res, label, _ = edit_json(rng, sol, "solution")
        if isinstance(res, str):   # a textual edit: the solution's text inside the file's text
            doc["solution"] = MARK
            return f"generic {label}", False, json.dumps(doc).replace(json.dumps(MARK), res)
        doc["solution"] = res
        return f"generic {label}", False
    if family in ("mcmdk", "mkp", "gap"):
        j = rng.randrange(len(sol))
        v = rng.choice(["1e30", "2.5", "string", "range", "minus2", "drop", "add"])
        if v == "drop":
            sol.pop()
        elif v == "add":
            sol.append(0)
        else:
            sol[j] = {"1e30": 1e30, "2.5": 2.5, "string": "0", "range": 10**6, "minus2": -2}[v]
        return f"choice {v}", True
    if family == "smd":
        key = "allocation" if "allocation" in sol else "schedule"
        rows = sol[key] if key == "allocation" else rng.choice(sol[key])
        j = rng.randrange(len(rows))
        v = rng.choice(["2.5", "string", "1e30", "mismatch", "over"])
        if v == "mismatch":
            rows[j][0], rows[j][1] = 0, 1
        elif v == "over":
            rows[j][0] = rows[j][1] = 10**6
        else:
            rows[j][0] = {"2.5": 2.5, "string": "1", "1e30": 1e30}[v]
        return f"{key} {v}", True
    if family == "oasis":
        admitted = [e for e in sol["jobs"] if e.get("admitted")]
        e = rng.choice(admitted or sol["jobs"])
        v = rng.choice(["completion2.5", "completion-string", "completion+1", "count2.5", "slot", "server", "admitted", "job1e30"])
        if v.startswith("completion") and e.get("admitted"):
            e["completion"] = {"completion2.5": 2.5, "completion-string": "3", "completion+1": e.get("completion", 0) + 1}[v]
        elif v in ("count2.5", "slot", "server") and e.get("workers"):
            row = rng.choice(e["workers"])
            k = {"count2.5": 2, "slot": 0, "server": 1}[v]
            row[k] = {"count2.5": 2.5, "slot": 10**6, "server": 10**6}[v]
        elif v == "admitted":
            e["admitted"] = "yes"
        else:
            e["job"] = 1e30
            v = "job1e30"
        return f"schedule {v}", True
    # placement
    jobs = sol["jobs"]
    e = rng.choice([x for x in jobs if x.get("gpus")] or jobs)
    v = rng.choice(["nan", "string", "double", "gpu", "name", "steal"])
    if v in ("nan", "string", "double") and e.get("samples"):
        q = rng.randrange(len(e["samples"]))
        e["samples"][q] = {"nan": math.nan, "string": "x", "double": e["samples"][q] * 2 + 1}[v]
    elif v == "gpu" and e.get("gpus"):
        e["gpus"][0] = "nope/0"
    elif v == "steal" and len(jobs) > 1 and e.get("gpus"):
        other = rng.choice([x for x in jobs if x is not e])
        other.setdefault("gpus", []).append(e["gpus"][0])
        other.setdefault("samples", []).append(1.0)
    else:
        e["name"] = "nobody"
        v = "name"
    return f"placement {v}", True


def solution_trial(rng: random.Random, seeds: list[Seed], work: Path, k: int) -> Trial:
    seed = _pick_seed(rng, seeds)
    doc = json.loads(seed.solution.read_text())
    label, must, *text = _solution_edit(rng, doc, seed.family)
    path = work / f"sol{k}.json"
    path.write_text(text[0] if text else json.dumps(doc))
    return Trial("solution", seed.name, [label], ["check", str(seed.path), *seed.args, str(path)], must)


# ------------------------------------------------------------------------------ the campaign

# ------------------------------------------------------------------------------ simulator surfaces

#: the surfaces of the simulator and the harness a surface trial mutates (issue 25)
SURFACES = ("trace", "cluster", "option", "scaling", "suite", "results", "checkpoint")
ODD_FIELDS = ["", "nan", "inf", "-inf", "-1", "0", "1e300", "-1e300", "2.5", "x", "1" + "0" * 400, "\u0663", " 7 ",
              "1_000", "x" * 200_000, '"', "1e-300", "100000000"]
ODD_OPTIONS = ['"abc"', "NaN", "Infinity", "-1", "0", "1", "2.5", "1e300", "1e-300", "100000000", "true", "null",
               "[]", "{}", "[[1, 2], [3]]", '"first_fit"', '"inf"', "abc", ""]
ODD_FLAGS = ["-1", "0", "nan", "inf", "-inf", "1e300", "1e-300", "x", "2.5", "100000000", "1"]
ODD_TOML = ["0", "-1", "inf", "nan", '"x"', "1e300", "100000000", "true", "[]", "{}", '"nonsense"', "2.5", "{ bogus = 1 }"]
SCALING = ("--arrival-scale", "--target-load", "--target-peak", "--inflate", "--speed-noise", "--restart-seconds",
           "--max-time", "--deadline", "--seed")
SIM = ["--bound", "none", "--json"]

SIM_SUITE = """name = "fuzz-sim"
kind = "simulate"
speed = "table"
restart_seconds = 0.0
seed = 0

[cluster]
generator = "dl2"
params = { n_servers = 2 }

[[traces]]
name = "v"
generator = "dl2"
seeds = [1]
params = { n_jobs = 6 }

[[policies]]
name = "fifo"
[[policies]]
name = "tetris"
params = { placer = "first_fit", remaining_weight = 0.5 }
"""
SOLVE_SUITE = """name = "fuzz-solve"
time_limit = 5.0
threads = 1

[[instances]]
kind = "generated"
name = "g"
generator = "mcmdk"
seeds = [0]
params = { n_jobs = 6, n_configs = 3, n_rows = 2 }

[[methods]]
name = "lp-round"
[[methods]]
name = "sample"
params = { samples = 2 }
"""


@dataclass
class SurfaceSeeds:
    """The files surface trials start from: a small trace of every format with a cluster it runs
    on, cluster specs, suite files, a results file and the shipped DL2 checkpoint."""

    traces: dict            # format -> (path, cluster argument)
    clusters: dict          # name -> path of a cluster file
    suites: dict            # name -> TOML text
    results: Path | None
    checkpoint: Path | None


def _head(src: Path, dst: Path, rows: int) -> Path:
    dst.write_text("\n".join(src.read_text().splitlines()[:rows + 1]) + "\n")
    return dst


def make_surface_seeds(work: Path) -> SurfaceSeeds:
    data = data_dir()
    work.mkdir(parents=True, exist_ok=True)
    pollux = work / "pollux.csv"
    pollux.write_text("name,time,application,num_replicas,batch_size,duration\n"
                      + "".join(f"job{k},{60 * k},cifar10,{1 + k % 4},128,{300 + 50 * k}\n" for k in range(8)))
    gavel = work / "gavel.trace"
    gavel.write_text("\n".join((data / "gavel" / "msr_seed0_0e4a51.trace").read_text().splitlines()[:8]) + "\n")
    traces = {
        "tiresias": (_head(data / "tiresias" / "60_job.csv", work / "tiresias.csv", 10), str(data / "tiresias" / "n32g4.csv")),
        "gavel": (gavel, "8:8:8"),
        "openb": (_head(data / "alibaba-openb" / "openb_pod_list_default.csv", work / "openb.csv", 10), "4x8"),
        "itp": (_head(data / "microsoft-itp" / "cluster01.csv", work / "itp.csv", 10), "16x8"),
        "pollux": (pollux, "4x4"),
    }
    spec = work / "cluster.json"
    spec.write_text(json.dumps({"groups": [{"count": 2, "capacity": {"gpu": 4, "cpu": 32}, "gpu_type": "v100"},
                                           {"count": 1, "capacity": {"gpu": 8, "cpu": 64}}]}))
    gspecs = work / "cluster_specs.json"
    gspecs.write_text(json.dumps({"philly": ["4:4:4"]}))
    clusters = {"json": spec, "gavel-specs": gspecs,
                "tiresias": _head(data / "tiresias" / "n32g4.csv", work / "tiresias-cluster.csv", 1),
                "openb-nodes": _head(data / "alibaba-openb" / "openb_node_list_gpu_node.csv", work / "nodes.csv", 6)}
    suite = work / "seed-suite.toml"
    suite.write_text(SIM_SUITE)
    results = work / "seed-results.jsonl"
    out = run(["bench", "run", str(suite), "--out", str(results), "--no-progress", "--json"], 120)
    if out.kind != "accepted":
        raise RuntimeError(f"the seed suite gave {out.kind}: {out.detail}")
    try:
        from dlsched.rl.policy import DEFAULT_CHECKPOINT
        checkpoint = Path(DEFAULT_CHECKPOINT)
    except ImportError:          # no torch (the rl extra): no checkpoint trials
        checkpoint = None
    return SurfaceSeeds(traces, clusters, {"simulate": SIM_SUITE, "solve": SOLVE_SUITE}, results, checkpoint)


def edit_csv(rng: random.Random, text: str, csv_like: bool = True) -> tuple[bytes, str, bool]:
    """One edit of a delimited text file: a field made odd, a field dropped or added, a row
    duplicated, the file cut, bytes that are not UTF-8. ``must_reject``: a row with a field more
    or less than a CSV header (``csv_like``), or bytes that are not UTF-8."""
    lines = text.splitlines()
    k = rng.randrange(1, len(lines)) if len(lines) > 1 else 0
    sep = "\t" if "\t" in lines[k] else ","
    fields = lines[k].split(sep)
    i = rng.randrange(len(fields))
    op = rng.choice(["field", "field", "field", "drop", "extra", "dup", "cut", "bytes", "header", "blank"])
    must = False
    if op == "field":
        fields[i] = rng.choice(ODD_FIELDS)
        lines[k] = sep.join(fields)
    elif op == "drop":
        del fields[i]
        lines[k] = sep.join(fields)
        must = csv_like and k > 0
    elif op == "extra":
        lines[k] = lines[k] + sep + rng.choice(["1", "x", ""])
        must = csv_like and k > 0
    elif op == "dup":
        lines.insert(k, lines[k])
    elif op == "header":
        lines[0] = lines[0].replace(rng.choice(lines[0].split(sep) or ["x"]), rng.choice(["", "x", "num_gpu"]), 1)
    elif op == "blank":
        lines.insert(k, "")
    body = ("\n".join(lines) + "\n").encode()
    if op == "cut":
        body = body[:rng.randrange(len(body) + 1)]
    elif op == "bytes":
        at = rng.randrange(len(body) + 1)
        body, must = body[:at] + b"\xff\xfe\x80" + body[at:], True
    return body, f"{op} line {k + 1} field {i}", must


def _json_edit(rng: random.Random, doc) -> tuple[object, str]:
    """``doc`` with one value set to an odd one, or one key deleted."""
    paths = [p for p, _ in _paths(doc) if p]
    if not paths:
        return rng.choice(ODD_VALUES), "whole document"
    path = rng.choice(paths)
    parent = _get(doc, path[:-1])
    if rng.random() < 0.2 and isinstance(parent, dict):
        del parent[path[-1]]
        return doc, f"delete {'/'.join(map(str, path))}"
    value = rng.choice(ODD_VALUES + [10**9, -5, 1e300, float("nan"), float("inf"), "nonsense", 2**63])
    _set(doc, path, value)
    return doc, f"{'/'.join(map(str, path))} = {value!r}"[:120]


def surface_trial(rng: random.Random, seeds: SurfaceSeeds, work: Path, k: int, surface: str | None = None) -> Trial:
    """One mutated input to one surface (:data:`SURFACES`; a random one when None)."""
    from dlsched.registry import policy_class, policy_names

    surfaces = [s for s in SURFACES if s != "checkpoint" or seeds.checkpoint is not None]
    surface = surface or rng.choice(surfaces)
    folder = work / f"s{k}"
    folder.mkdir(parents=True, exist_ok=True)
    if surface == "trace":
        if rng.random() < 0.2:
            # a generated Gavel trace (dlsched/instance/gavel_gen.py): ``gavel:N:SEED[:KEY=VALUE,...]`` with odd fields
            def field(sound: str) -> str:             # half of the fields sound, so that some specs run
                return sound if rng.random() < 0.5 else rng.choice(ODD_FIELDS[:14])

            fields = [field("6"), field("1")]
            if rng.random() < 0.7:
                keys = rng.sample(sorted(GAVEL_OPTIONS) + ["burst", "x"], rng.choice([1, 2]))
                fields.append(",".join(f"{key}={field(rng.choice(['1', '0.5']))}" for key in keys))
            spec = "gavel:" + ":".join(fields)
            return Trial("trace", "gavel-spec", [spec], ["simulate", spec, "--cluster", "4:4:4", "--policy",
                                                        rng.choice(["fifo", "hetplace", "gavel-fifo-perf"]), *SIM], False)
        fmt = rng.choice(sorted(seeds.traces))
        path, cluster = seeds.traces[fmt]
        body, edit, must = edit_csv(rng, path.read_text(), csv_like=fmt != "gavel")
        target = folder / path.name
        target.write_bytes(body)
        return Trial("trace", fmt, [edit], ["simulate", str(target), "--trace-format", fmt, "--cluster", cluster,
                                            "--policy", rng.choice(["fifo", "drf", "srtf"]), *SIM], must)
    if surface == "cluster":
        name = rng.choice(sorted(seeds.clusters) + ["spec"])
        if name == "spec":
            spec = rng.choice(["{}x{}", "{}:{}:{}", "{}x{}", "dl2:{}"]).format(*(rng.choice(ODD_FIELDS[:14] + ["4", "2"])
                                                                              for _ in range(3)))
            return Trial("cluster", "spec", [spec], ["simulate", "poisson:6", "--cluster", spec, "--policy", "fifo", *SIM], False)
        src = seeds.clusters[name]
        target = folder / src.name
        if src.suffix == ".json":
            doc, edit = _json_edit(rng, json.loads(src.read_text()))
            target.write_text(json.dumps(doc))
            must = False
        else:
            body, edit, must = edit_csv(rng, src.read_text())
            target.write_bytes(body)
        return Trial("cluster", name, [edit], ["simulate", "poisson:6", "--cluster", str(target), "--policy", "fifo", *SIM],
                     must)
    if surface == "option":
        name = rng.choice(policy_names())
        try:
            init = inspect.unwrap(policy_class(name).__init__)
            options = [p for p in inspect.signature(init).parameters if p != "self"] or ["x"]
        except ImportError:
            options = ["x"]
        key = rng.choice(options)
        if rng.random() < 0.15:
            key = key[:-1] + "z"                   # a misspelt option
        value = rng.choice(ODD_OPTIONS)
        # an offline policy solves once before the first event (the engine's deadline is checked between calls)
        budget = ["-P", "time_limit=5"] if name == "time-indexed" and key != "time_limit" else []
        return Trial("option", name, [f"{key}={value}"], ["simulate", "poisson:6", "--cluster", "2x8", "--policy", name,
                                                            "-P", f"{key}={value}", *budget, "--deadline", "10", *SIM], False)
    if surface == "scaling":
        flags = rng.sample(SCALING, rng.choice([1, 1, 2]))
        argv = [a for f in flags for a in (f, rng.choice(ODD_FLAGS))]
        return Trial("scaling", "poisson:6", argv, ["simulate", "poisson:6", "--cluster", "2x8", "--policy", "fifo", *argv,
                                                     *SIM], False)
    if surface == "suite":
        kind = rng.choice(sorted(seeds.suites))
        text = seeds.suites[kind]
        values = list(re.finditer(r"(?m)(= )([^\n]+)$|(\w+ = )(\w+|\"\w*\")", text))
        op = rng.choice(["value", "value", "value", "key", "bytes", "cut"])
        must = False
        if op == "value":
            m = rng.choice(values)
            g = 2 if m.group(2) is not None else 4
            new = rng.choice(ODD_TOML)
            text, edit = text[:m.start(g)] + new + text[m.end(g):], f"{text[m.start():m.end(g)]} -> {new}"
        elif op == "key":
            keys = re.findall(r"(?m)^(\w+) =", text)
            key = rng.choice(keys)
            text, edit = text.replace(f"\n{key} =", f"\n{key}x =", 1), f"key {key} -> {key}x"
            must = True
        elif op == "cut":
            at = rng.randrange(len(text))
            text, edit = text[:at], f"cut at {at}"
        target = folder / "suite.toml"
        if op == "bytes":
            target.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
            edit, must = "random bytes", False
        else:
            target.write_text(text)
        out = folder / "results.jsonl"
        return Trial("suite", kind, [edit], ["bench", "run", str(target), "--out", str(out), "--no-progress", "--json"], must)
    if surface == "results":
        lines = seeds.results.read_text().splitlines()
        k_line = rng.randrange(len(lines))
        op = rng.choice(["json", "json", "json", "null", "garbage", "deep", "utf16", "drop-header"])
        if op == "json":
            doc, edit = _json_edit(rng, json.loads(lines[k_line]))
            lines[k_line] = json.dumps(doc)
        elif op == "null":
            lines[k_line], edit = "null", "null line"
        elif op == "garbage":
            lines[k_line], edit = lines[k_line][: rng.randrange(len(lines[k_line]) + 1)], "cut line"
        elif op == "deep":
            lines[k_line], edit = "[" * 100_000 + "]" * 100_000, "deep nesting"
        elif op == "drop-header":
            lines, edit = lines[1:], "no header"
        target = folder / "results.jsonl"
        text = "\n".join(lines) + "\n"
        if op == "utf16":
            target.write_bytes(text.encode("utf-16"))
            edit = "UTF-16"
        else:
            target.write_text(text)
        return Trial("results", "seed-results", [f"line {k_line + 1}: {edit}"],
                     ["report", str(target), "--no-figures", "--out", str(folder / "report.md")], False)
    # checkpoint: flipped bytes, or a weight set to NaN / a shape changed / a huge spec, re-saved
    import torch

    target = folder / "model.pt"
    if rng.random() < 0.5:
        body = bytearray(seeds.checkpoint.read_bytes())
        for _ in range(rng.choice([1, 8, 64])):
            body[rng.randrange(len(body))] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(body))
        edit = "flipped bytes"
    else:
        doc = torch.load(seeds.checkpoint, map_location="cpu", weights_only=True)
        op = rng.choice(["nan", "shape", "spec", "hidden"])
        if op in ("nan", "shape"):
            net = rng.choice(["policy", "value"])
            key = rng.choice(sorted(doc[net]))
            doc[net][key] = doc[net][key] * float("nan") if op == "nan" else doc[net][key][..., :1]
            edit = f"{op} {net}.{key}"
        elif op == "spec":
            key = rng.choice(sorted(doc["spec"]))
            doc["spec"][key] = rng.choice(ODD_VALUES + [10**7, -1, float("nan")])
            edit = f"spec.{key} = {doc['spec'][key]!r}"[:120]
        else:
            doc["hidden"] = rng.choice([[0], [10**6], [], ["x"], [16] * 50])
            edit = f"hidden = {doc['hidden']}"[:80]
        torch.save(doc, target)
    return Trial("checkpoint", "dl2-default", [edit], ["simulate", "dl2:6", "--policy", "dl2", "-P",
                                                       f"checkpoint={json.dumps(str(target))}", "--max-time", "1e7", *SIM],
                 edit.startswith(("nan", "shape")))


def judge_surface(trial: Trial, timeout: float) -> Outcome:
    """A surface trial's outcome; a suite refused although its results file was written counts as a
    traceback (the refusal came after the run started)."""
    out = run(trial.argv, timeout)
    if trial.kind == "suite" and out.kind == "clean error":
        results = Path(trial.argv[trial.argv.index("--out") + 1])
        if results.exists() and results.stat().st_size:
            return Outcome("traceback", f"refused after writing {results}: {out.detail}")
    if trial.kind == "suite" and out.kind == "rejected":
        return Outcome("traceback", f"cells failed (a value the suite reader let through): {out.detail}")
    return out


def surface_campaign(n: int, seed: int, timeout: float, work: Path, log=None) -> dict:
    """``n`` surface trials, the surfaces in turn; counts of outcomes per surface and the failures."""
    rng = random.Random(seed)
    seeds = make_surface_seeds(work / "seeds")
    surfaces = [s for s in SURFACES if s != "checkpoint" or seeds.checkpoint is not None]
    counts = {s: Counter() for s in surfaces}
    failures = []
    for k in range(n):
        trial = surface_trial(rng, seeds, work, k, surfaces[k % len(surfaces)])
        out = judge_surface(trial, timeout)
        counts[trial.kind][out.kind] += 1
        counts[trial.kind]["tried"] += 1
        wrong = trial.must_reject and out.kind == "accepted"
        if wrong:
            counts[trial.kind]["wrongly accepted"] += 1
        if wrong or out.kind in ("traceback", "hang"):
            failures.append({"trial": trial.kind, "seed": trial.seed, "edits": trial.edits, "argv": trial.argv,
                             "outcome": "wrongly accepted" if wrong else out.kind, "detail": out.detail})
            if log:
                log(f"{failures[-1]['outcome']}: {trial.kind} {trial.seed} {trial.edits}: {out.detail[-300:]}")
    return {"seed": seed, "timeout": timeout, "counts": {k: dict(v) for k, v in counts.items()}, "failures": failures}


def campaign(n_inputs: int, n_solutions: int, seed: int, timeout: float, work: Path, log=None) -> dict:
    rng = random.Random(seed)
    seeds = make_seeds(work)
    counts = {kind: Counter() for kind in ("input", "solution")}
    families = Counter()
    failures = []
    trials = [("input", k) for k in range(n_inputs)] + [("solution", k) for k in range(n_solutions)]
    for kind, k in trials:
        trial = (input_trial if kind == "input" else solution_trial)(rng, seeds, work, k)
        out = run_trial(trial, timeout)
        counts[kind][out.kind] += 1
        counts[kind]["tried"] += 1
        families[next(s.family for s in seeds if s.name == trial.seed)] += 1
        wrong = trial.must_reject and out.kind == "accepted"
        if wrong:
            counts[kind]["wrongly accepted"] += 1
        if wrong or out.kind in ("traceback", "hang"):
            failures.append({"trial": kind, "seed": trial.seed, "edits": trial.edits, "argv": trial.argv,
                             "outcome": "wrongly accepted" if wrong else out.kind, "detail": out.detail})
            if log:
                log(f"{failures[-1]['outcome']}: {trial.seed} {trial.edits}: {out.detail[-200:]}")
    return {"seed": seed, "timeout": timeout, "seeds": [s.name for s in seeds], "families": dict(families),
            "counts": {k: dict(v) for k, v in counts.items()}, "failures": failures}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=1000, help="mutated inputs (default 1000)")
    ap.add_argument("--solutions", type=int, default=300, help="tampered solutions (default 300)")
    ap.add_argument("--surfaces", type=int, default=500,
                    help="mutated inputs to the simulator's surfaces: traces, clusters, policy options, scaling flags, "
                         "suite files, results files, checkpoints (default 500)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per run before it counts as a hang")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dlsched-fuzz-") as tmp:
        log = None if args.json else lambda s: print(s, file=sys.stderr)
        rep = campaign(args.inputs, args.solutions, args.seed, args.timeout, Path(tmp), log=log)
        rep["surfaces"] = surface_campaign(args.surfaces, args.seed, args.timeout, Path(tmp) / "surfaces", log=log)
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        cols = ("tried", *OUTCOMES, "wrongly accepted")
        print(f"{'':10s}" + "".join(f"{c:>18s}" for c in cols))
        for kind, c in [*rep["counts"].items(), *rep["surfaces"]["counts"].items()]:
            print(f"{kind:10s}" + "".join(f"{c.get(col, 0):>18d}" for col in cols))
        print(f"seeds: {', '.join(rep['seeds'])}; trials (inputs + solutions) per seed family: {rep['families']}; seed {args.seed}")
    bad = sum(c.get("traceback", 0) + c.get("hang", 0) + c.get("wrongly accepted", 0)
              for c in [*rep["counts"].values(), *rep["surfaces"]["counts"].values()])
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())

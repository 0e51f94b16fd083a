"""Fuzz every reader and the checker through the CLI: mutated instance files, tampered solutions.

    PYTHONPATH=$PWD python benchmarks/fuzz.py [--inputs 1000] [--solutions 300] [--seed 0] [--timeout 20] [--json]

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
import io
import json
import math
import os
import random
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
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per run before it counts as a hang")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dlsched-fuzz-") as tmp:
        rep = campaign(args.inputs, args.solutions, args.seed, args.timeout, Path(tmp),
                       log=None if args.json else lambda s: print(s, file=sys.stderr))
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        cols = ("tried", *OUTCOMES, "wrongly accepted")
        print(f"{'':10s}" + "".join(f"{c:>18s}" for c in cols))
        for kind, c in rep["counts"].items():
            print(f"{kind:10s}" + "".join(f"{c.get(col, 0):>18d}" for col in cols))
        print(f"seeds: {', '.join(rep['seeds'])}; trials (inputs + solutions) per seed family: {rep['families']}; seed {args.seed}")
    bad = sum(c.get("traceback", 0) + c.get("hang", 0) + c.get("wrongly accepted", 0) for c in rep["counts"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())

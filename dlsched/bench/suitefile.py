"""Reading suite files: where they are, their TOML, and the checks every kind of suite shares.

Every check raises one :class:`~dlsched.errors.InputError` naming the file and the key. The suite
kinds (``dlsched.bench.suite``: solve; ``simcells``: simulate; ``tasks``: study) build on these.
"""

from __future__ import annotations

import inspect
import json
import tomllib
from pathlib import Path
from typing import Any

from dlsched.arguments import check_arguments
from dlsched.errors import InputError
from dlsched.registry import load_target


def suites_dir() -> Path:
    return Path(__file__).resolve().parent / "suites"


def bundled_suites() -> list[str]:
    return sorted(p.stem for p in suites_dir().glob("*.toml"))


def resolve(name_or_path: str | Path) -> Path:
    """A bundled suite name (``mkp``) or a path to a suite file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        if not p.is_file():
            raise InputError(str(p), "suite", "a suite file (TOML)", "no such file")
        return p
    cand = suites_dir() / f"{name_or_path}.toml"
    if not cand.is_file():
        raise InputError("<argument>", "suite", f"a suite file or one of {', '.join(bundled_suites())}", str(name_or_path))
    return cand


def tables(src: str, doc: dict, key: str) -> list:
    """The ``[[key]]`` tables of a suite file (at least one)."""
    items = doc.get(key)
    if not isinstance(items, list) or not items:
        raise InputError(src, key, f"at least one [[{key}]] table", items)
    return items


def once(src: str, where: str, keys: list, expected: str) -> None:
    """An error naming the first key that occurs twice."""
    dup = next((x for x in keys if keys.count(x) > 1), None)
    if dup is not None:
        raise InputError(src, where, expected, dup)


def seed_list(src: str, where: str, value: Any, integers: bool = True) -> list:
    """A list of seeds (or, with ``integers=False``, of any JSON values), or ``{start, count}``."""
    if isinstance(value, dict):
        unknown(src, where, value, {"start", "count"})
        start, count = value.get("start", 0), value.get("count", 1)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, count)) or count < 1:
            raise InputError(src, where, "{start, count} with integers, count >= 1", value)
        value = list(range(start, start + count))
    ok = isinstance(value, list) and value and (not integers or all(isinstance(x, int) and not isinstance(x, bool)
                                                                     for x in value))
    if not ok:
        raise InputError(src, where, "a list of integer seeds or {start, count}" if integers
                         else "a list of values or {start, count}", value)
    return value


def unknown(src: str, where: str, table: Any, allowed: set[str]) -> None:
    if not isinstance(table, dict):
        raise InputError(src, where or "top level", "a table", table)
    for key in table:
        if key not in allowed:
            at = f"{where}.{key}" if where else key
            raise InputError(src, at, f"one of the keys {', '.join(sorted(allowed))}", key)


def typed(src: str, where: str, value: Any, typ: type, expected: str, lo: int | None = None):
    if not isinstance(value, typ) or isinstance(value, bool) or (lo is not None and value < lo):
        raise InputError(src, where, expected, value)
    return value


def generator_call(src: str, where: str, s: dict, table: dict, other: str = "") -> tuple[str, list[int], tuple]:
    """A generated set's generator (a key of ``table``: name -> "module:function"), its seeds and
    its keyword arguments as sorted (key, json) pairs, each checked against the function."""
    gen = s.get("generator")
    if not isinstance(gen, str) or gen not in table:
        raise InputError(src, f"{where}.generator", f"one of {', '.join(table)}{other}", gen)
    seeds = seed_list(src, f"{where}.seeds", s.get("seeds", [0]))
    params = s.get("params", {})
    fn = load_target(table[gen], f"{where}.generator")
    sig = inspect.signature(fn)
    unknown(src, f"{where}.params", params, set(sig.parameters) - {"seed"})
    check_arguments(fn, params, f"generator '{gen}'", source=src, where=f"{where}.params")
    missing = [p.name for p in sig.parameters.values()
               if p.default is inspect.Parameter.empty and p.name not in params and p.name != "seed"]
    if missing:
        raise InputError(src, f"{where}.params.{missing[0]}", f"a value (generator '{gen}' needs it)", "nothing")
    return gen, seeds, tuple(sorted((k, json.dumps(v)) for k, v in params.items()))


def read_suite_file(name_or_path: str | Path) -> tuple[dict, Path]:
    """A suite file's parsed TOML and its path (a bundled name or a path)."""
    path = resolve(name_or_path)
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8")), path
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"byte {exc.start}", "a TOML suite file (UTF-8 text)", "bytes that are not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), "TOML", "a valid TOML document", str(exc)) from None

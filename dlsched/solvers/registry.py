"""Method registry: names map to functions, never parsed from strings (STYLE.md practice 1).

A method is ``fn(instance, opts: SolveOptions, **params) -> Result``. ``families`` is the set of
instance families it accepts (``None``: any instance that offers ``to_core()``). A family may
register its own method under a generic name (e.g. its own ``exact``); lookup prefers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dlsched.errors import InputError
from dlsched.instance.families import FAMILIES
from dlsched.result import Result


@dataclass(frozen=True)
class Method:
    name: str
    fn: Callable[..., Result]
    families: frozenset[str] | None
    description: str
    params: tuple[str, ...] = ()


_METHODS: dict[tuple[str | None, str], Method] = {}


def register(name: str, *, families: tuple[str, ...] | None = None, description: str = "",
             params: tuple[str, ...] = ()):
    """Decorator adding ``fn`` to the registry under ``name`` (for each family, or generically)."""

    def deco(fn):
        fams = frozenset(families) if families else None
        method = Method(name, fn, fams, description or (fn.__doc__ or "").strip().split("\n")[0], params)
        for fam in (families or (None,)):
            _METHODS[(fam, name)] = method
        return fn

    return deco


def _generic_ok(family: str | None) -> bool:
    """Generic (core) methods return a core solution: only families whose checker takes one."""

    return family is None or (family in FAMILIES and FAMILIES[family].core_solutions)


def lookup(name: str, family: str) -> Method:
    method = _METHODS.get((family, name)) or (_METHODS.get((None, name)) if _generic_ok(family) else None)
    if method is None:
        raise InputError("<argument>", "method", f"one of {', '.join(available(family))} for family '{family}'", name)
    return method


def available(family: str | None = None) -> list[str]:
    """Method names usable on ``family`` (all names if ``family`` is None)."""
    return sorted({n for (f, n) in _METHODS if family is None or f == family or (f is None and _generic_ok(family))})


def describe() -> list[Method]:
    seen: dict[str, Method] = {}
    for (_, n), m in sorted(_METHODS.items(), key=lambda kv: kv[0][1]):
        seen.setdefault(f"{n}:{sorted(m.families or [])}", m)
    return list(seen.values())


def params_of(name: str, family: str) -> tuple[str, ...]:
    return lookup(name, family).params


def call(instance: Any, name: str, opts, **params) -> Result:
    method = lookup(name, instance.family)
    unknown = set(params) - set(method.params)
    if unknown:
        raise InputError("<argument>", sorted(unknown)[0], f"a parameter of method '{name}' ({', '.join(method.params) or 'none'})",
                         params[sorted(unknown)[0]])
    res = method.fn(instance, opts, **params)
    if method.families is None and res.solution is not None and hasattr(instance, "solution_from_core"):
        # a generic layer answered in core columns: give the family its own solution form
        res.solution = instance.solution_from_core(res.solution)
    return res


def flag(value: Any, name: str) -> bool:
    """A boolean method parameter: a bool, 0/1, or true/false, yes/no, on/off (``-P key=value``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise InputError("<argument>", name, "true or false", value)

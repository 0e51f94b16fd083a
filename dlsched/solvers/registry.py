"""Method registry: names map to functions, never parsed from strings (STYLE.md practice 1).

Which module defines a name is in :data:`dlsched.registry.METHODS` (and the ``dlsched.methods``
entry points); a module is imported when one of its names is looked up, and every method module
when the whole table is listed (:func:`available`, :func:`describe`, :func:`cases`).

A method is ``fn(instance, opts: SolveOptions, **params) -> Result``. ``families`` is the set of
instance families it accepts (``None``: any instance that offers ``to_core()``). A family may
register its own method under a generic name (e.g. its own ``exact``); lookup prefers it.

A method declares which optional options it honours (``supports``, a subset of
:data:`OPTIONAL`) and the values of its ``backend`` parameter (``backends``); :func:`call`
refuses every other use with an :class:`InputError` before the method runs (docs/contract.md:
honour or refuse, never ignore). Registering a method puts it under tests/test_conformance.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import importlib

from dlsched import registry as names
from dlsched.arguments import check_arguments
from dlsched.errors import InputError
from dlsched.instance.families import FAMILIES
from dlsched.result import Result
from dlsched.solvers.highs import check_raw


@dataclass(frozen=True)
class Method:
    name: str
    fn: Callable[..., Result]
    families: frozenset[str] | None
    description: str
    params: tuple[str, ...] = ()
    supports: frozenset[str] = frozenset()
    backends: tuple[str, ...] = ()


#: options a method may honour or refuse (``time_limit``, ``threads``, ``seed`` and ``log`` are
#: honoured by every method: docs/contract.md)
OPTIONAL = ("gap", "raw", "warm_start")


_METHODS: dict[tuple[str | None, str], Method] = {}


def register(name: str, *, families: tuple[str, ...] | None = None, description: str = "",
             params: tuple[str, ...] = (), supports: tuple[str, ...] = (), backends: tuple[str, ...] = ()):
    """Decorator adding ``fn`` to the registry under ``name`` (for each family, or generically).

    ``supports``: the optional options (:data:`OPTIONAL`) the method honours; ``backends``: the
    values its ``backend`` parameter takes (the first is the default), empty if it has none."""
    unknown = set(supports) - set(OPTIONAL)
    if unknown:
        raise ValueError(f"method {name}: unknown optional options {sorted(unknown)} (known: {OPTIONAL})")
    if backends and "backend" not in params:
        raise ValueError(f"method {name}: backends given but no 'backend' parameter")

    def deco(fn):
        fams = frozenset(families) if families else None
        method = Method(name, fn, fams, description or (fn.__doc__ or "").strip().split("\n")[0], params,
                        frozenset(supports), tuple(backends))
        for fam in (families or (None,)):
            _METHODS[(fam, name)] = method
        return fn

    return deco


def _generic_ok(family: str | None) -> bool:
    """Generic (core) methods return a core solution: only families whose checker takes one."""

    return family is None or (family in FAMILIES and FAMILIES[family].core_solutions)


def _load(name: str | None = None) -> None:
    """Import the modules that define method ``name`` (every method module when None): their
    ``@register`` decorators fill the table."""
    for module in names.method_modules(name):
        importlib.import_module(module)


def lookup(name: str, family: str) -> Method:
    _load(name)
    method = _METHODS.get((family, name)) or (_METHODS.get((None, name)) if _generic_ok(family) else None)
    if method is None:
        known = available(family)
        raise InputError("<argument>", "method", f"one of {', '.join(known)} for family '{family}'{names.close_names(name, known)}", name)
    return method


def available(family: str | None = None) -> list[str]:
    """Method names usable on ``family`` (all names if ``family`` is None)."""
    _load()
    return sorted({n for (f, n) in _METHODS if family is None or f == family or (f is None and _generic_ok(family))})


def describe() -> list[Method]:
    _load()
    seen: dict[str, Method] = {}
    for (_, n), m in sorted(_METHODS.items(), key=lambda kv: kv[0][1]):
        seen.setdefault(f"{n}:{sorted(m.families or [])}", m)
    return list(seen.values())


def cases() -> list[tuple[str, str, str | None]]:
    """Every (family, method, backend) a user can run: the grid tests/test_conformance.py covers
    (``backend`` is None for methods without one). Generic methods appear under every family
    that offers them and does not override them."""
    out = []
    for family in sorted(FAMILIES):
        for name in available(family):
            method = lookup(name, family)
            out.extend((family, name, b) for b in (method.backends or (None,)))
    return out


def params_of(name: str, family: str) -> tuple[str, ...]:
    return lookup(name, family).params


def refused(method: Method, opts, params: dict[str, Any]) -> None:
    """Raise :class:`InputError` for an option the method does not honour (docs/contract.md)."""
    backend = params.get("backend", method.backends[0] if method.backends else None)
    if method.backends and backend not in method.backends:
        raise InputError("<argument>", "backend", f"one of {', '.join(method.backends)} for method '{method.name}'", backend)
    if opts.mip_rel_gap > 0 and "gap" not in method.supports:
        raise InputError("<argument>", "gap", f"gap 0: method '{method.name}' has no bound to stop on "
                         "(docs/contract.md lists the methods that honour a gap)", opts.mip_rel_gap)
    if opts.raw and "raw" not in method.supports:
        raise InputError("<argument>", "raw", f"no raw HiGHS options: method '{method.name}' does not run HiGHS "
                         "with options it can pass them to", sorted(opts.raw))
    if opts.warm_start is not None:
        if "warm_start" not in method.supports:
            raise InputError("<argument>", "warm_start", f"no warm start: method '{method.name}' cannot use one",
                             "a warm start")
        if backend not in (None, "highs"):
            raise no_warm_start(backend)


def no_warm_start(backend: str) -> InputError:
    """The refusal of a warm start through a front end that cannot pass one to HiGHS."""
    return InputError("<argument>", "warm_start", f"no warm start with the {backend} backend (it passes no MIP "
                      "start to HiGHS); use backend=highs", "a warm start")


def call(instance: Any, name: str, opts, **params) -> Result:
    method = lookup(name, instance.family)
    unknown = set(params) - set(method.params)
    if unknown:
        raise InputError("<argument>", sorted(unknown)[0], f"a parameter of method '{name}' ({', '.join(method.params) or 'none'})",
                         params[sorted(unknown)[0]])
    refused(method, opts, params)
    params = typed_params(method, params)
    if opts.raw:
        opts = replace(opts, raw=check_raw(opts.raw))
    opts = opts.started()     # the whole call's budget starts here unless the caller started it earlier
    res = method.fn(instance, opts, **params)
    res.options = opts.as_dict()     # the options of the call, recorded in one place for every method
    if method.families is None and res.solution is not None and hasattr(instance, "solution_from_core"):
        # a generic layer answered in core columns: give the family its own solution form
        res.solution = instance.solution_from_core(res.solution)
    return res


def typed_params(method: Method, params: dict[str, Any]) -> dict[str, Any]:
    """The method's parameters checked against its function's annotations before it runs
    (:func:`dlsched.arguments.check_arguments`): a value of another type is an :class:`InputError`
    naming the parameter, not a Python error from inside the method."""
    return check_arguments(method.fn, params, f"method '{method.name}'")

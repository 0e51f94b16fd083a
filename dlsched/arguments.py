"""Arguments checked against the function they are for: one step for every method parameter and
every policy option (docs/contract.md: bad input is one :class:`InputError` naming what was
expected and what was found, raised before anything runs).

A function declares what it accepts in its signature: the annotation gives the type (``bool``,
``int``, ``float``, ``str``, ``Literal[...]``, ``Sequence[...]``, ``tuple[...]``, a class, each
possibly ``| None``) and ``Annotated[float, Range(gt=0)]`` a range. :func:`check_arguments`
refuses a name the signature does not have (with a did-you-mean), a value of another type and
a value out of range, and returns the values converted (``"inf"`` to ``inf``, ``"yes"`` to
``True``: ``-P key=value`` writes numbers JSON cannot, and flags, as words). :func:`checked`
applies it to a constructor, so a policy made in Python, by ``simulate -P``, by a suite file or
by ``dlsched.simulate(..., params)`` meets the same check.

This module imports nothing of dlsched's but the bottom floor (:mod:`dlsched.errors`,
:mod:`dlsched.registry`).
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import math
import numbers
import os
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

from dlsched.errors import InputError
from dlsched.registry import close_names, make_policy, policy_class


#: the shortest slot or round a policy may ask for (a slotted policy is called at every boundary:
#: a shorter one makes a replay of hours millions of calls)
MIN_SLOT_SECONDS = 1.0


@dataclass(frozen=True)
class Range:
    """A number's bounds, as ``Annotated[float, Range(gt=0)]``; ``finite``: refuse ±inf too."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    finite: bool = False

    def holds(self, x: float) -> bool:
        return ((self.gt is None or x > self.gt) and (self.ge is None or x >= self.ge)
                and (self.lt is None or x < self.lt) and (self.le is None or x <= self.le)
                and (not self.finite or math.isfinite(x)))

    def text(self, base: str) -> str:
        """``base`` ("a number") with the bounds: "a finite number > 0"."""
        parts = [f"{op} {b:g}" for op, b in ((">", self.gt), (">=", self.ge), ("<", self.lt), ("<=", self.le))
                 if b is not None]
        if self.finite:
            base = base.replace("a number", "a finite number").replace("an integer", "a finite integer")
        return base + (" " + " and ".join(parts) if parts else "")


class _Mismatch(Exception):
    """``expected``: what the annotation accepts, in words."""


def flag(value: Any, name: str, source: str = "<argument>") -> bool:
    """A boolean parameter: a bool, 0/1, or true/false, yes/no, on/off (``-P key=value``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise InputError(source, name, "true or false", value)


def shown(value: Any) -> Any:
    """A value as an error message shows it: a string quoted, so that '10' is not read as 10."""
    return repr(value) if isinstance(value, str) else value


def _number(value: Any, kind: type) -> Any:
    if isinstance(value, str):          # -P eps=inf: a number JSON cannot write
        try:
            value = kind(value.strip())
        except ValueError:
            raise _Mismatch() from None
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise _Mismatch()
        return int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise _Mismatch()
    return value


def _conform(value: Any, hint: Any) -> Any:
    """``value`` as ``hint`` takes it, else :class:`_Mismatch` with what was expected."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is None and value is None:
        return value
    if origin is typing.Annotated:
        try:
            out = _conform(value, args[0])
        except _Mismatch:
            raise _Mismatch(_words(hint)) from None
        for meta in args[1:]:
            if isinstance(meta, Range) and isinstance(out, numbers.Real) and not meta.holds(out):
                raise _Mismatch(_words(hint))
        return out
    if origin is typing.Union or isinstance(hint, types.UnionType):
        if value is None and type(None) in args:
            return None
        for alt in args:
            if alt is not type(None):
                try:
                    return _conform(value, alt)
                except _Mismatch:
                    pass
        raise _Mismatch(_words(hint))
    if origin is typing.Literal:
        if value in args and all(type(value) is type(a) for a in args if a == value):
            return value
        raise _Mismatch(_words(hint))
    if hint is bool:
        try:
            return flag(value, "")
        except InputError:
            raise _Mismatch("true or false") from None
    if hint in (int, float):
        try:
            return _number(value, hint)
        except _Mismatch:
            raise _Mismatch(_words(hint)) from None
    if hint is str:
        if not isinstance(value, str):
            raise _Mismatch(_words(hint))
        return value
    if origin in (collections.abc.Sequence, list, tuple):
        if isinstance(value, (str, bytes)) or not isinstance(value, collections.abc.Sequence):
            raise _Mismatch(_words(hint))
        try:
            if origin is tuple and args and args[-1] is not Ellipsis:
                if len(value) != len(args):
                    raise _Mismatch()
                return tuple(_conform(v, a) for v, a in zip(value, args))
            return type(value)(_conform(v, args[0]) for v in value) if args else value
        except _Mismatch:
            raise _Mismatch(_words(hint)) from None
    if hint is os.PathLike or origin is os.PathLike:
        if not isinstance(value, (str, os.PathLike)):
            raise _Mismatch(_words(hint))
        return value
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        if not callable(value):
            raise _Mismatch("a function")
        return value
    if isinstance(hint, type):
        if not isinstance(value, hint):
            raise _Mismatch(_words(hint))
        return value
    return value          # an annotation this module does not read: the function's to check


def _words(hint: Any) -> str:
    """What ``hint`` accepts, in words."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        words = _words(args[0])
        for meta in args[1:]:
            if isinstance(meta, Range):
                words = meta.text(words)
        return words
    if origin is typing.Union or isinstance(hint, types.UnionType):
        alts = [_words(a) for a in args if a is not type(None)]
        return " or ".join(alts) + (" or none" if type(None) in args else "")
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (collections.abc.Sequence, list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return f"a pair ({', '.join(_words(a) for a in args)})" if len(args) == 2 else \
                f"a list of {len(args)} ({', '.join(_words(a) for a in args)})"
        return f"a list of ({_words(args[0])})" if args else "a list"
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
             os.PathLike: "a path"}
    if hint in names:
        return names[hint]
    return f"a {getattr(hint, '__name__', str(hint))}"


def _hints(fn: Callable) -> dict[str, Any]:
    """``fn``'s annotations, resolved one by one (a name imported only for type checkers is skipped)."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:     # noqa: BLE001 - one unresolvable annotation: resolve the others
        pass
    glb = getattr(inspect.unwrap(fn), "__globals__", {})
    out = {}
    for name, ann in getattr(inspect.unwrap(fn), "__annotations__", {}).items():
        try:
            out[name] = eval(ann, glb) if isinstance(ann, str) else ann      # noqa: S307 - the module's own annotation
        except Exception:     # noqa: BLE001
            pass
    return out


def check_arguments(fn: Callable, params: dict[str, Any], owner: str, *, source: str = "<argument>",
                    where: str = "", skip: int = 0, extra: Callable | None = None) -> dict[str, Any]:
    """``params`` (keyword arguments of ``fn``) checked and converted (module docstring).

    ``owner`` names whose they are in the message ("policy 'optimus'"); ``source`` and ``where``
    place them (a suite file and ``policies[0].params``); ``skip``: leading parameters that are
    not the caller's (``self``). Keyword arguments a ``**kw`` of ``fn`` takes are checked against
    the keyword parameters of ``extra`` (the function they are passed on to), if given."""
    sig = inspect.signature(fn)
    accepted = list(sig.parameters.values())[skip:]
    hints = _hints(fn)
    named = {p.name for p in accepted if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    open_kw = any(p.kind is p.VAR_KEYWORD for p in accepted)
    if extra is not None:
        extra_sig = inspect.signature(extra)
        extra_names = {p.name for p in extra_sig.parameters.values() if p.kind is p.KEYWORD_ONLY}
        hints = {**_hints(extra), **hints}
        named |= extra_names
        open_kw = False
    if not isinstance(params, dict) or any(not isinstance(k, str) for k in params):
        raise InputError(source, where or "options", f"options of {owner} as name = value", shown(params))
    prefix = f"{where}." if where else ""
    out = {}
    for key, value in params.items():
        if key not in named and not open_kw:
            raise InputError(source, f"{prefix}{key}", f"an option of {owner} ({', '.join(sorted(named)) or 'none'})"
                             f"{close_names(key, sorted(named))}", key)
        hint = hints.get(key)
        if hint is None:
            out[key] = value
            continue
        try:
            out[key] = _conform(value, hint)
        except _Mismatch as exc:
            raise InputError(source, f"{prefix}{key}", f"{exc.args[0] if exc.args else _words(hint)} for {owner}",
                             shown(value)) from None
    return out


def checked(init: Callable | None = None, *, extra: Callable | None = None):
    """Decorator of a policy's ``__init__``: its keyword arguments pass :func:`check_arguments`
    (owner: the class's ``name``) before the constructor body runs."""

    def deco(fn):
        params = list(inspect.signature(fn).parameters.values())[1:]
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            if len(args) > len(positional) and not any(p.kind is p.VAR_POSITIONAL for p in params):
                raise InputError("<argument>", "options", f"at most {len(positional)} positional options of "
                                 f"{_owner(self)}", len(args))
            given = {**dict(zip(positional, args)), **kwargs}
            return fn(self, **check_arguments(fn, given, _owner(self), skip=1, extra=extra))

        wrapper.options_extra = extra
        return wrapper

    return deco(init) if init is not None else deco


def _owner(obj: Any) -> str:
    return f"policy '{getattr(obj, 'name', None) or type(obj).__name__}'"


def policy_options(cls: type, params: Any, *, source: str = "<argument>", where: str = "") -> dict[str, Any]:
    """The options ``params`` of policy class ``cls`` checked as its constructor checks them
    (:func:`checked`; a class without it: its signature's names), placed in ``source`` at ``where``."""
    init = cls.__init__
    return check_arguments(inspect.unwrap(init), params, _owner(cls), source=source, where=where, skip=1,
                           extra=getattr(init, "options_extra", None))


def checked_policy(name: str, params: dict[str, Any]) -> Any:
    """:func:`dlsched.registry.make_policy` for options a user gave (``-P``, ``simulate(params=)``):
    a class whose constructor is not :func:`checked` (a plug-in's) has them checked first as
    :func:`policy_options` checks them (its signature's names and annotations), so a bad option is
    an :class:`InputError` naming it, not an error from inside the run."""
    cls = policy_class(name)
    if not hasattr(cls.__init__, "options_extra"):
        params = policy_options(cls, params)
    return make_policy(name, **params)

"""Typed reads of parsed JSON values and of library arguments: each returns the value or raises
:class:`InputError` at its JSON path (or argument name).

JSON has one number type; a field documented as an integer must hold an integer literal (``2``,
not ``2.5`` nor ``"2"`` nor ``true``), a boolean field ``true`` or ``false``. Magnitudes are bounded
by the document scan (``jsonio.scan``) before any family code runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlsched.errors import InputError


def is_integer(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)) and bool(np.isfinite(x))


def integer(x: Any, source: str, where: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer in ``lo..hi`` (inclusive; ``None``: unbounded)."""
    if not is_integer(x) or (lo is not None and x < lo) or (hi is not None and x > hi):
        span = (f" in {lo}..{hi}" if lo is not None and hi is not None else f" >= {lo}" if lo is not None
                else f" <= {hi}" if hi is not None else "")
        raise InputError(source, where, f"an integer{span}", x)
    return int(x)


def boolean(x: Any, source: str, where: str) -> bool:
    if not isinstance(x, bool):
        raise InputError(source, where, "true or false", x)
    return x


def int_list(x: Any, source: str, where: str, length: int | None = None) -> list[int]:
    """A list of integers (of ``length`` entries when given)."""
    if not isinstance(x, list) or (length is not None and len(x) != length):
        raise InputError(source, where, f"a list of {'' if length is None else f'{length} '}integers", x)
    for q, v in enumerate(x):
        integer(v, source, f"{where}[{q}]")
    return x


def int_array(x: Any, source: str, where: str, shape: tuple[int | None, ...], expected: str) -> np.ndarray:
    """Nested lists of integers with the given shape (``None``: any length) as an int64 array."""
    def walk(v, depth: int, path: str) -> None:
        if depth == len(shape):
            integer(v, source, path)
            return
        if not isinstance(v, list) or (shape[depth] is not None and len(v) != shape[depth]):
            raise InputError(source, path, expected, f"{type(v).__name__} of {len(v)}" if isinstance(v, list) else v)
        for q, item in enumerate(v):
            walk(item, depth + 1, f"{path}[{q}]")

    walk(x, 0, where)
    try:
        arr = np.array(x, dtype=np.int64)
    except ValueError:  # ragged: rows of different lengths
        raise InputError(source, where, expected, "rows of different lengths") from None
    return arr if arr.ndim == len(shape) else arr.reshape([0] * len(shape))


def number_list(x: Any, source: str, where: str, length: int | None = None) -> list[float]:
    """A list of finite numbers."""
    if not isinstance(x, list) or (length is not None and len(x) != length):
        raise InputError(source, where, f"a list of {'' if length is None else f'{length} '}numbers", x)
    for q, v in enumerate(x):
        if not is_number(v):
            raise InputError(source, f"{where}[{q}]", "a finite number", v)
    return [float(v) for v in x]


def count_argument(name: str, value: Any, lo: int = 0) -> int:
    """A library argument that is a count: an integer >= ``lo`` (``"<argument>"`` in the error)."""
    return integer(value, "<argument>", name, lo)


def array_argument(source: str, name: str, value: Any, dtype=float, shape: tuple[int | None, ...] | None = None) -> np.ndarray:
    """``value`` (a constructor argument) as a numpy array of ``dtype``: flat, or of ``shape`` (one
    entry may be ``None``: whatever fits). Integers must be integral (``1.5`` is not truncated).
    Anything else is an :class:`InputError` naming the argument."""
    if value is None or isinstance(value, (str, bytes, dict)):
        raise InputError(source, name, "an array of numbers", type(value).__name__)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InputError(source, name, "a (rectangular) array of numbers", value) from None
    if np.dtype(dtype).kind in "iu":
        if not np.all(np.isfinite(arr) & (arr == np.round(arr))):
            raise InputError(source, name, "an array of integers", value)
        arr = arr.astype(dtype)
    if shape is None:
        return arr.ravel()
    known = int(np.prod([s for s in shape if s is not None]))
    fits = arr.size == known if None not in shape else (known > 0 and arr.size % known == 0) or (known == 0 and arr.size == 0)
    if not fits:
        want = " x ".join("any" if s is None else str(s) for s in shape)
        raise InputError(source, name, f"an array of shape {want}", f"{arr.size} numbers (shape {arr.shape})")
    return arr.reshape([-1 if s is None else s for s in shape]) if known or None not in shape else arr.reshape([0 if s is None else s for s in shape])


def names_argument(source: str, name: str, value: Any, size: int | None = None) -> tuple[str, ...]:
    """A sequence of names (strings), of ``size`` entries when given."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)) or \
            not all(isinstance(s, (str, np.str_)) for s in value) or (size is not None and len(value) != size):
        raise InputError(source, name, f"a sequence of {'' if size is None else f'{size} '}names (strings)", value)
    return tuple(str(s) for s in value)


def number_argument(source: str, name: str, value: Any) -> float:
    """A finite real number."""
    if not is_number(value):
        raise InputError(source, name, "a finite number", value)
    return float(value)

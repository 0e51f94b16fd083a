"""Where the reference data lives: ``$DLSCHED_DATA``, else ``../shared/data`` beside the project."""

from __future__ import annotations

import ast
import os
import threading
from pathlib import Path

from dlsched.errors import InputError

ENV = "DLSCHED_DATA"


def data_dir(required: bool = True) -> Path | None:
    """The reference-data folder (shared/data/README.md). Searched: $DLSCHED_DATA, then
    ``../shared/data`` from the working directory and from the package's checkout upwards."""
    env = os.environ.get(ENV)
    if env:
        p = Path(env)
        if p.is_dir():
            return p
        if required:
            raise InputError(ENV, "environment", "a folder with the reference data", env)
        return None
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for base in (start, *start.parents):
            cand = base / "shared" / "data"
            if cand.is_dir() and base != Path("/"):
                return cand
            cand = base.parent / "shared" / "data"
            if cand.is_dir():
                return cand
    if required:
        raise InputError(ENV, "environment", "the reference data at ../shared/data or $DLSCHED_DATA", "neither")
    return None


def project_root() -> Path:
    """The source checkout (holds ``instances/``), found from the package location."""
    return Path(__file__).resolve().parent.parent


_PARSING = threading.Lock()


def literal(text: str):
    """``ast.literal_eval(text)``, one thread at a time: CPython 3.11's compiler is not safe to call
    from two threads at once (two suite cells reading a data file in one Dask worker's threads raised
    "SystemError: AST constructor recursion depth mismatch")."""
    with _PARSING:
        return ast.literal_eval(text)

"""The three tiers of failure (STYLE.md practice 8).

* bad input -> :class:`InputError`, naming the file, the place in it, what was
  expected and what was found;
* infeasible, unbounded, time limit -> a :class:`~dlsched.result.Status`, never an
  exception;
* a backend that fails -> :class:`SolverError`, saying how to fix it.
"""

from __future__ import annotations


class DlschedError(Exception):
    """Base class of every error dlsched raises on purpose."""


class InputError(DlschedError, ValueError):
    """A file, field or argument that is not what dlsched expects.

    ``source`` is the file (or ``"<argument>"``), ``where`` the JSON path, line or
    token position inside it.
    """

    def __init__(self, source: str, where: str, expected: str, found: object):
        self.source = str(source)
        self.where = where
        self.expected = expected
        self.found = found
        found_text = found if isinstance(found, str) else repr(found)
        if len(found_text) > 120:
            found_text = found_text[:117] + "..."
        super().__init__(f"{self.source}: at {where}: expected {expected}, found {found_text}")

    def __reduce__(self):
        # rebuilt from its four fields, not from the message: an error raised in a worker process
        # (multiprocessing pickles it back) would otherwise fail to unpickle and hang the pool
        return type(self), (self.source, self.where, self.expected, self.found)


class SolverError(DlschedError, RuntimeError):
    """A solver backend failed (not: the model is infeasible)."""


class MissingExtra(DlschedError, ImportError):
    """An optional dependency (an extra such as ``dlsched[rl]``) is not installed; the message says
    what to install. A setup error, like bad input: the CLI exits 2."""

"""Terminal plumbing for the CLI."""

from __future__ import annotations

import contextlib
import io
import os
import sys

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextlib.contextmanager
def python_stdout_only():
    """Keep stdout for what Python prints; send what C libraries write to fd 1 to stderr.

    HiGHS's C++ code can print to file descriptor 1 even with its output switched off, which
    would break the ``--json`` contract ("exactly one JSON object on stdout"). Meanwhile fd 1
    points at stderr and ``sys.stdout`` writes to a duplicate of the real stdout. When
    ``sys.stdout`` is not the process's fd 1 (e.g. captured by a test), nothing is changed.
    """
    try:
        is_fd1 = sys.stdout.fileno() == 1
    except (AttributeError, ValueError, io.UnsupportedOperation):
        is_fd1 = False
    if not is_fd1:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    real = os.fdopen(saved, "w", buffering=1, closefd=False)
    old = sys.stdout
    os.dup2(2, 1)
    sys.stdout = real
    try:
        yield
    finally:
        real.flush()
        sys.stdout = old
        os.dup2(saved, 1)
        real.close()
        os.close(saved)


def number(x, decimals: int = 0) -> str:
    """``x`` in plain notation with thousands separators and ``decimals`` decimals (``1,234,567.8``),
    so that a column reads in one notation; "-" for None or NaN."""

    if x is None or x != x:
        return "-"
    return f"{x:,.{decimals}f}"


def table_console(table=None):
    """A rich console for result tables: at least 140 columns wide, so that a table printed to a
    pipe or a file (where rich assumes 80) is not truncated into ellipses, and with ``table`` at
    least as wide as that table unshrunk: a long name or a large number is printed whole (a table
    narrower to print wraps long headers itself, with a newline in the header)."""

    width = max(Console().width, 140)
    if table is not None:
        probe = Console(width=10_000)
        width = max(width, Measurement.get(probe, probe.options, table).maximum)
    return Console(width=width)


@contextlib.contextmanager
def progress(description: str, total: int, enabled: bool = True):
    """A transient progress bar on stderr for a long loop (stdout stays free for ``--json``).

    Yields ``tick(label)``: call it at the start of each item; the previous item counts as done.
    Nothing is drawn when ``enabled`` is false or stderr is not a terminal.
    """

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True, disable=not enabled) as bar:
        task = bar.add_task(description, total=total)
        started = False

        def tick(label: str = "") -> None:
            nonlocal started
            bar.update(task, advance=1 if started else 0, description=f"{description}  {label}".rstrip())
            started = True

        yield tick

"""Terminal plumbing for the CLI."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
import time

from rich.console import Console
from rich.measure import Measurement
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn,
                           TimeElapsedColumn)
from rich.table import Column
from rich.text import Text


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
        sys.stdout = old
        os.dup2(saved, 1)
        try:
            real.close()            # flushes what is left
        except BrokenPipeError:     # the reader left (`| head`): what is left has nowhere to go
            pass
        os.close(saved)


def number(x, decimals: int = 0) -> str:
    """``x`` in plain notation with thousands separators and ``decimals`` decimals (``1,234,567.8``),
    so that a column reads in one notation; "-" for None or NaN."""

    if x is None or x != x:
        return "-"
    return f"{x:,.{decimals}f}"


def seconds(x) -> str:
    """Seconds as a person reads them: plain notation (``1,290,300 s``), hours or days beside from two
    hours up (``(14.9 d)``), milliseconds below a second (``0.067 ms``); "-" for None or NaN."""

    if x is None or x != x:
        return "-"
    if x == 0:
        return "0 s"
    if abs(x) < 1:
        return f"{number(1e3 * x, 3)} ms"
    text = f"{number(x, 1 if abs(x) < 100 else 0)} s"
    if abs(x) >= 2 * 86400:
        return f"{text} ({x / 86400:.1f} d)"
    return f"{text} ({x / 3600:.1f} h)" if abs(x) >= 7200 else text


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


#: the exit status of a run stopped by Ctrl-C or SIGTERM (the shell's code for SIGINT)
EXIT_STOPPED = 130


@contextlib.contextmanager
def stop_signals():
    """SIGTERM raises KeyboardInterrupt in the main thread, as Ctrl-C does, so that a stopped run
    goes through its ``finally`` blocks (results files closed, worker processes ended: no
    multiprocessing semaphore left behind) instead of dying where it stands. Outside the main
    thread nothing changes (Python sets handlers there only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def stop_requests():
    """Yields an event that the first Ctrl-C or SIGTERM sets instead of interrupting, for a loop
    that checks it between steps and ends with what it has (the simulator); a second signal
    interrupts as usual (KeyboardInterrupt). Outside the main thread the event is never set."""
    requested = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield requested
        return

    def handler(signum, frame):
        if requested.is_set():
            raise KeyboardInterrupt(f"signal {signum}")
        requested.set()
        print("stopping after the current step (again to stop at once)", file=sys.stderr, flush=True)

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def clock(seconds: float) -> str:
    """Seconds as h:mm:ss (d and h:mm:ss past a day)."""
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    text = f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{d}d {text}" if d else text


def eta(elapsed: float, done: float, left: float, ends_in: float | None = None) -> str:
    """The time left at the rate so far, elapsed / done x left ("?" before anything is done): a
    guess from this run's own pace, not a promise; no later than ``ends_in`` seconds, where a budget
    ends the run first."""
    guess = elapsed * left / done if done > 0 else None
    if ends_in is not None:
        guess = max(ends_in, 0.0) if guess is None else min(guess, max(ends_in, 0.0))
    return "?" if guess is None else clock(guess)


class EtaColumn(ProgressColumn):
    """``ETA h:mm:ss`` from the items done in this run (task field ``base``: those done before it)."""

    def render(self, task) -> Text:
        if task.total is None:
            return Text("")
        ends = task.fields["ends"]
        return Text("ETA " + eta(task.elapsed or 0.0, task.completed - task.fields["base"], task.total - task.completed,
                                 None if ends is None else ends - time.monotonic()))


class Reporter:
    """Progress of a long run on stderr (stdout stays free for ``--json``): the one helper of
    ``solve``, ``bench run`` and the ``bench`` studies (``simulate`` has the engine's own line,
    :mod:`dlsched.sim.engine`, with the simulated clock).

    On a terminal: a rich line redrawn four times a second by rich's own thread, so that the
    elapsed clock ticks while a solver works without reporting: a spinner, the description, with a
    ``total`` a bar, done/total and an ETA (:func:`eta`: this run's pace), and a ``note`` (an
    incumbent, the failures). Not on a terminal: one plain line every ``LINE_SECONDS`` with the
    same facts, from a timer thread (HiGHS releases the GIL while it solves), so a run in the
    background says where it is. Nothing when ``enabled`` is false. ``done`` items finished before
    this run (a resumed sweep) count towards the bar, not towards the pace.
    """

    LINE_SECONDS = 60.0

    def __init__(self, description: str, total: int | None = None, *, enabled: bool = True, done: int = 0,
                 transient: bool = True):
        self.description, self.total, self.enabled, self.transient = description, total, enabled, transient
        self.done, self.base, self.text = done, done, ""
        self.ends = None    # time.monotonic() at which a budget ends the run, where one will (:meth:`ends_in`)
        self.bar = self.thread = None
        self.stop = threading.Event()

    def __enter__(self) -> "Reporter":
        self.start = time.monotonic()
        if not self.enabled:
            return self
        if sys.stderr.isatty():
            columns = [SpinnerColumn(), TextColumn("{task.description}")]
            if self.total is not None:
                columns += [BarColumn(), MofNCompleteColumn()]
            # the note alone may wrap: on a narrow terminal the counts and clocks stay whole
            columns += [TimeElapsedColumn(), EtaColumn(), TextColumn("{task.fields[note]}", table_column=Column(no_wrap=False))]
            self.bar = Progress(*columns, console=Console(stderr=True), transient=self.transient, refresh_per_second=4)
            self.bar.start()
            self.task = self.bar.add_task(self.description, total=self.total, completed=self.done, base=self.base, note="", ends=None)
        else:
            self.thread = threading.Thread(target=self._lines, name="dlsched-progress", daemon=True)
            self.thread.start()
        return self

    def line(self) -> str:
        """The plain line: description, done/total, elapsed, ETA, note."""
        elapsed = time.monotonic() - self.start
        parts = [f"{self.done:,}/{self.total:,} done"] if self.total is not None else []
        parts.append(f"{clock(elapsed)} elapsed")
        if self.total is not None:
            parts.append("ETA " + eta(elapsed, self.done - self.base, self.total - self.done,
                                      None if self.ends is None else self.ends - time.monotonic()))
        return f"{self.description}: " + ", ".join(parts) + (f"; {self.text}" if self.text else "")

    def _lines(self) -> None:
        while not self.stop.wait(self.LINE_SECONDS):
            print(self.line(), file=sys.stderr, flush=True)

    def advance(self, n: int = 1) -> None:
        """``n`` more items done."""
        self.done += n
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)

    def ends_in(self, seconds: float | None) -> None:
        """A budget will end the run ``seconds`` from now (None: none will): the ETA shows no more."""
        self.ends = None if seconds is None else time.monotonic() + seconds
        if self.bar is not None:
            self.bar.update(self.task, ends=self.ends)

    def note(self, text: str) -> None:
        """What the run has to say beside the counts (shown on the next redraw or line)."""
        self.text = text
        if self.bar is not None:
            self.bar.update(self.task, note=text)

    def __exit__(self, *exc) -> bool:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        if self.bar is not None:
            self.bar.stop()
        return False


@contextlib.contextmanager
def progress(description: str, total: int, enabled: bool = True):
    """:class:`Reporter` for a loop: yields ``tick(label, ends_in)``; call it at the start of each item (the
    previous item counts as done); ``label`` is the note, ``ends_in`` the seconds before a budget ends the loop
    (:meth:`Reporter.ends_in`)."""

    with Reporter(description, total, enabled=enabled) as rep:
        started = False

        def tick(label: str = "", ends_in: float | None = None) -> None:
            nonlocal started
            if started:
                rep.advance()
            rep.ends_in(ends_in)
            rep.note(label)
            started = True

        yield tick

"""Where suite cells run: this process, local worker processes, or a Dask distributed cluster.

Every executor offers ``map_cells(fn, args) -> iterator of rows`` in completion order; the
runner writes each row as it arrives. The Dask executor needs the ``[dist]`` extra
(``pip install 'dlsched[dist]'``) and is imported only when asked for, so the toolkit works
without it. On a real cluster every worker needs the same dlsched (and data folder,
``$DLSCHED_DATA``) as the client: cells load their instances on the worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterable, Iterator

from dlsched.errors import InputError

CONNECT_TIMEOUT = "10s"


class LocalExecutor:
    """``jobs`` worker processes (``jobs == 1``: in this process, no start-up cost)."""

    def __init__(self, jobs: int = 1):
        if jobs < 1:
            raise InputError("<argument>", "--jobs", "a positive number of processes", jobs)
        self.jobs = jobs
        self.description = f"local, {jobs} process{'es' if jobs > 1 else ''}"

    def map_cells(self, fn: Callable, args: Iterable[tuple]) -> Iterator[dict]:
        args = list(args)
        if self.jobs == 1 or len(args) <= 1:
            for a in args:
                yield fn(*a)
            return
        import multiprocessing

        # spawn, not fork: a forked child of a process that already ran HiGHS threads can hang
        pool = ProcessPoolExecutor(max_workers=min(self.jobs, len(args)), mp_context=multiprocessing.get_context("spawn"))
        futures = [pool.submit(fn, *a) for a in args]
        finished = False
        try:
            for f in as_completed(futures):
                yield f.result()
            finished = True
        finally:
            # stopped (Ctrl-C, SIGTERM, an error): interrupt the running cells now instead of waiting
            # for them; SIGINT, not SIGTERM, so that a worker ends its cell's child and exits cleanly
            if not finished:
                for p in list(getattr(pool, "_processes", {}).values()):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p.pid, signal.SIGINT)
            pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """Cells as tasks on a Dask distributed scheduler at ``address`` (``"local"``: a
    ``LocalCluster`` with ``jobs`` single-threaded worker processes, closed afterwards), or on
    an existing ``distributed.Client``."""

    def __init__(self, address: str | None = None, jobs: int = 1, client=None):
        try:
            import distributed
        except ImportError:
            raise InputError("<argument>", "--executor dask", "Dask distributed installed (pip install 'dlsched[dist]')",
                             "no module 'distributed'") from None
        self._own_cluster = None
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif address in (None, "", "local"):
            # the workers' own logs stay quiet: a cell's error reaches the user through its future,
            # and a stopped run's workers, whose scheduler closes first, log heartbeat tracebacks
            self._own_cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                                         dashboard_address=None, silence_logs=logging.CRITICAL)
            self.client = distributed.Client(self._own_cluster)
        else:
            try:
                self.client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as exc:
                raise InputError("<argument>", "--scheduler", "a reachable Dask scheduler (e.g. tcp://HOST:8786)",
                                 f"{address}: {exc}") from None
        self.description = f"dask, {len(self.client.scheduler_info().get('workers', {}))} workers at {self.client.scheduler.address}"

    def map_cells(self, fn: Callable, args: Iterable[tuple]) -> Iterator[dict]:
        import distributed

        futures = [self.client.submit(fn, *a, pure=False) for a in args]
        try:
            for f in distributed.as_completed(futures):
                yield f.result()
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        if self._own_client:
            self.client.close()
        if self._own_cluster is not None:
            self._own_cluster.close()


def make_executor(kind: str, jobs: int, scheduler: str | None):
    if kind == "local":
        if scheduler:
            raise InputError("<argument>", "--scheduler", "--executor dask with a scheduler address", scheduler)
        return LocalExecutor(jobs)
    if kind == "dask":
        return DaskExecutor(scheduler, jobs)
    raise InputError("<argument>", "--executor", "local or dask", kind)

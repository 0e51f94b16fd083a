"""The matrix front end loaded into highspy in a handful of array calls (STYLE.md practice 3).

:func:`solve_matrix` solves a :class:`~dlsched.models.mcmdk.MatrixForm` and translates the
HiGHS model status through one table (:data:`STATUS_TABLE`, practice 6).
"""

from __future__ import annotations

import functools
import math
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import highspy
import numpy as np

from dlsched.errors import InputError, SolverError
from dlsched.models.mcmdk import MatrixForm
from dlsched.provenance import highs_version
from dlsched.result import Status
from dlsched.solvers.options import Incumbent, SolveOptions

MS = highspy.HighsModelStatus


def _swallow_banner() -> None:
    """Create the process's first Highs object with file descriptor 1 pointing at the null device.

    HiGHS writes its two-line banner to fd 1 when the first Highs object of a process is made,
    whatever ``output_flag`` says (later objects print nothing). A program that calls dlsched as a
    library and writes its own output (JSON, CSV) to stdout would find those two lines in it, and
    every CLI command printed them on stderr. HiGHS's version is in every result (``solver_version``)
    and in every benchmark's environment record.
    """
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):   # no fd 1 to protect (closed, or stdout replaced)
        return
    try:
        os.dup2(null, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


_swallow_banner()

#: HiGHS model status -> (termination, status when a solution exists, status when none does)
STATUS_TABLE: dict[Any, tuple[str, Status, Status]] = {
    MS.kOptimal: ("optimal", Status.OPTIMAL, Status.ERROR),
    MS.kInfeasible: ("infeasible", Status.ERROR, Status.INFEASIBLE),      # "infeasible" with a point: a fault
    # not a proof of either (HiGHS's presolve stops there): no solution, and the termination says so
    MS.kUnboundedOrInfeasible: ("infeasible_or_unbounded", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kUnbounded: ("unbounded", Status.UNBOUNDED, Status.UNBOUNDED),
    MS.kTimeLimit: ("time_limit", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kIterationLimit: ("iteration_limit", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kSolutionLimit: ("solution_limit", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kObjectiveBound: ("objective_bound", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kObjectiveTarget: ("objective_target", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kInterrupt: ("interrupted", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kHighsInterrupt: ("interrupted", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kMemoryLimit: ("memory_limit", Status.FEASIBLE, Status.NO_SOLUTION),
    MS.kModelEmpty: ("optimal", Status.OPTIMAL, Status.OPTIMAL),
}
UNKNOWN = ("unknown", Status.FEASIBLE, Status.ERROR)

#: HiGHS options that have a typed counterpart in SolveOptions: refused in ``raw`` (one way to say each)
TYPED = {"time_limit": "time_limit", "mip_rel_gap": "gap", "threads": "threads", "random_seed": "seed",
         "output_flag": "log", "log_to_console": "log"}


def check_raw(raw: dict[str, Any]) -> dict[str, Any]:
    """Validate ``raw`` HiGHS options up front (docs/contract.md, "raw"): every key must be a HiGHS
    option HiGHS accepts with that value, and none may duplicate a typed option. The same
    dictionary is then passed last, unchanged, to every HiGHS run of the method, through every
    front end (highspy, Pyomo, CVXPY) and to the LP relaxations of the layers."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise InputError("<argument>", "raw", "a dict of HiGHS options", type(raw).__name__)
    h = highspy.Highs()
    h.silent()
    for key, val in raw.items():
        if key in TYPED:
            raise InputError("<argument>", f"raw[{key!r}]", f"the typed option `{TYPED[key]}` instead", val)
        try:
            known = h.getOptionType(str(key))[0] == highspy.HighsStatus.kOk
        except Exception:     # older highspy raise on unknown names
            known = False
        if not known:
            raise InputError("<argument>", f"raw[{key!r}]", "a HiGHS option name (https://ergo-code.github.io/HiGHS/stable/options/definitions/)", key)
        v = val.item() if isinstance(val, np.generic) else val
        if h.setOptionValue(str(key), v) != highspy.HighsStatus.kOk:
            raise InputError("<argument>", f"raw[{key!r}]", "a value HiGHS accepts for this option", val)
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in raw.items()}


@functools.cache
def version() -> str:
    return f"highs {highs_version()}"


def translate(model_status, has_solution: bool) -> tuple[str, Status]:
    termination, with_sol, without = STATUS_TABLE.get(model_status, UNKNOWN)
    return termination, (with_sol if has_solution else without)


@dataclass
class MatrixOutcome:
    """What HiGHS said about one matrix solve (objective and bound in the model's own sense)."""

    status: Status
    termination: str
    x: np.ndarray | None
    objective: float | None
    bound: float | None
    seconds: float
    row_dual: np.ndarray | None = None
    col_dual: np.ndarray | None = None
    col_basis: np.ndarray | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    highs: Any = None

    def settle(self) -> "MatrixOutcome":
        """A MIP stopped by a positive gap tolerance has not proven its incumbent optimal: call it
        feasible, termination ``gap_limit`` (HiGHS says "optimal" either way). Differences within
        HiGHS's own absolute tolerance (1e-6) still count as proven. "Optimal" without a
        solution (a solver fault) is an ``error``."""
        if self.termination == "optimal" and not self.status.has_solution():
            self.status, self.termination = Status.ERROR, "error"
        if self.status == Status.OPTIMAL and self.objective is not None and self.bound is not None:
            diff = abs(self.bound - self.objective)
            if diff > 1e-6 and diff > 1e-9 * max(1.0, abs(self.objective)):
                self.status, self.termination = Status.FEASIBLE, "gap_limit"
        return self


def load(mf: MatrixForm, opts: SolveOptions | None = None) -> highspy.Highs:
    """A Highs object holding ``mf`` with the typed options applied (raw options last)."""
    opts = opts or SolveOptions()
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(opts.log))
    M = mf.M.tocsc()
    sense = highspy.ObjSense.kMaximize if mf.sense == "max" else highspy.ObjSense.kMinimize
    # passModel(num_col, num_row, num_nz, a_format, sense, offset, c, lb, ub, row_lb, row_ub, start, index, value, integrality)
    status = h.passModel(int(mf.n_cols), int(mf.n_rows), int(M.nnz), int(highspy.MatrixFormat.kColwise),
                         int(sense), 0.0, mf.c.astype(np.float64), mf.col_lower.astype(np.float64),
                         mf.col_upper.astype(np.float64), mf.row_lower.astype(np.float64),
                         mf.row_upper.astype(np.float64), M.indptr.astype(np.int32), M.indices.astype(np.int32),
                         M.data.astype(np.float64), mf.integrality.astype(np.int32))
    if status == highspy.HighsStatus.kError:
        raise SolverError("highspy rejected the model (passModel returned kError); run with log on to see why")
    for key, val in typed_options(opts).items():
        h.setOptionValue(key, val)
    for key, val in opts.raw.items():     # validated by check_raw when the call started
        h.setOptionValue(key, val.item() if isinstance(val, np.generic) else val)
    return h


#: the ``threads`` value HiGHS's process-wide task scheduler was started with (0: HiGHS's default)
_scheduler_threads: list[int] = []


def use_threads(threads: int | None) -> None:
    """Make HiGHS's process-wide scheduler match ``threads``: HiGHS refuses to run (status "Not
    Set") when a solve asks for another thread count than the first solve of the process did."""
    want = int(threads or 0)
    # before this module's first solve another user of highspy (CVXPY's or Pyomo's HiGHS) may have
    # started the scheduler with any count: "Not Set" after `cvxpy ... solve(solver=cp.HIGHS)`
    if not _scheduler_threads or _scheduler_threads[0] != want:
        highspy.Highs.resetGlobalScheduler(False)
    _scheduler_threads[:] = [want]


def typed_options(opts: SolveOptions) -> dict[str, Any]:
    """The typed options as HiGHS options, for every front end alike (called just before HiGHS
    runs). The time limit is what remains of the call's budget (less its resolution), read now."""
    use_threads(opts.threads)
    out: dict[str, Any] = {"mip_rel_gap": float(opts.mip_rel_gap), "random_seed": int(opts.seed)}
    limit = opts.clock.seconds_for_solver()
    if limit is not None:
        out["time_limit"] = float(limit)
    if opts.threads is not None:
        out["threads"] = int(opts.threads)
    return out


def solve_matrix(mf: MatrixForm, opts: SolveOptions | None = None, *, warm_x: np.ndarray | None = None,
                 want_duals: bool = False, warm_basis: highspy.HighsBasis | None = None) -> MatrixOutcome:
    """Solve ``mf`` with HiGHS; ``warm_x`` (column values) is passed through ``setSolution``,
    ``warm_basis`` (an LP's basis of the same rows and columns, e.g. ``outcome.highs.getBasis()`` of a
    solve stopped by its time limit, which goes on from it) through ``setBasis``.

    With a time limit, models of :data:`GUARD_NONZEROS` or more nonzeros are solved by
    :func:`solve_guarded` (a forked child stopped at the deadline), because HiGHS does not read
    its clock inside presolve's probing or before the root LP's first iteration (measured:
    11.8 s for a 1 s limit on 100k columns, docs/contract.md "Time limit").
    """
    opts = (opts or SolveOptions()).started()
    if opts.clock.limited and int(mf.M.nnz) >= GUARD_NONZEROS and can_fork():
        return solve_guarded(mf, opts, warm_x=warm_x, want_duals=want_duals, warm_basis=warm_basis)
    return solve_here(mf, opts, warm_x=warm_x, want_duals=want_duals, warm_basis=warm_basis)


#: with a time limit, HiGHS runs in a forked child for models with at least this many nonzeros
#: (below it the overrun of HiGHS's unchecked steps was under 0.05 s in the suite timelimits,
#: less than the cost of forking)
GUARD_NONZEROS = 50_000


def solve_here(mf: MatrixForm, opts: SolveOptions, *, warm_x: np.ndarray | None = None, want_duals: bool = False,
               improving: Callable[[float, float, float, np.ndarray], None] | None = None,
               warm_basis: highspy.HighsBasis | None = None) -> MatrixOutcome:
    """Solve ``mf`` with HiGHS in this process. ``improving(seconds, objective, bound, x)`` (or else
    ``opts.on_incumbent``) hears every improving MIP solution."""
    h = load(mf, opts)
    is_mip = bool(mf.integrality.any())
    if warm_x is not None:
        h.setSolution(int(mf.n_cols), np.arange(mf.n_cols, dtype=np.int32), np.asarray(warm_x, dtype=np.float64))
    if warm_basis is not None:
        h.setBasis(warm_basis)
    t0 = time.perf_counter()
    if improving is None and opts.on_incumbent is not None:
        cb = opts.on_incumbent

        def improving(sec, obj, bnd, x):
            cb(Incumbent(sec, obj, bnd))

    if improving is not None and is_mip:
        def on_improving(e):
            d = e.data_out
            improving(time.perf_counter() - t0, float(d.objective_function_value), float(d.mip_dual_bound),
                      np.asarray(d.mip_solution, dtype=float))

        h.cbMipImprovingSolution.subscribe(on_improving)
    run = h.run()
    seconds = time.perf_counter() - t0
    if run == highspy.HighsStatus.kError:
        raise SolverError(f"HiGHS failed while solving ({h.modelStatusToString(h.getModelStatus())})")
    info = h.getInfo()
    model_status = h.getModelStatus()
    has_solution = info.primal_solution_status == 2 or (model_status == MS.kModelEmpty)
    termination, status = translate(model_status, has_solution)
    out = MatrixOutcome(status, termination, None, None, None, seconds, highs=h)
    if has_solution:
        sol = h.getSolution()
        out.x = np.asarray(sol.col_value, dtype=float) if mf.n_cols else np.zeros(0)
        out.objective = float(info.objective_function_value) if mf.n_cols else 0.0
        if want_duals and not is_mip:
            out.row_dual = np.asarray(sol.row_dual, dtype=float)
            out.col_dual = np.asarray(sol.col_dual, dtype=float)
            basis = h.getBasis()
            out.col_basis = np.array([int(s) for s in basis.col_status], dtype=np.int8)
    if warm_x is not None and is_mip and out.x is not None and not _objective_matches(mf, out):
        # HiGHS 1.16 can map a MIP start into presolve's reduced space, value it there above its
        # true objective, stop "optimal" and hand back the unchanged start with the reduced-space
        # objective (seen on a 20-column OASiS offline MILP: start 52.84 reported as 80.07, the
        # optimum). The columns are the truth; solve again without the start in what is left of
        # the budget, and keep the start's columns if that run finds nothing better.
        again = solve_here(mf, opts, want_duals=want_duals, improving=improving)
        again.stats["warm_start_discarded"] = True
        start_value = float(mf.c @ out.x)
        worse = again.x is None or (again.objective < start_value if mf.sense == "max" else again.objective > start_value)
        if worse:    # a time limit stopped the second run short of the start: the start stands
            again.x, again.objective = out.x, start_value
            again.status = Status.FEASIBLE
        return again
    if is_mip:
        bound = float(info.mip_dual_bound)
        out.bound = bound if math.isfinite(bound) else None
        out.stats = {"nodes": int(info.mip_node_count), "simplex_iterations": int(info.simplex_iteration_count)}
    elif status == Status.OPTIMAL:
        out.bound = out.objective
        out.stats = {"simplex_iterations": int(info.simplex_iteration_count)}
    if status == Status.OPTIMAL and out.bound is None:
        out.bound = out.objective
    return out.settle()


def _objective_matches(mf: MatrixForm, out: MatrixOutcome) -> bool:
    """Whether HiGHS's reported objective is the value of the columns it returned (c x)."""
    value = float(mf.c @ out.x)
    return abs(value - out.objective) <= 1e-6 * max(1.0, abs(value))


def can_fork() -> bool:
    """The guards need ``fork`` (Linux; not Windows, not macOS by default): without it the
    solve runs in this process and a time limit is only as good as HiGHS's own checks."""
    return "fork" in mp.get_all_start_methods()


def _private_capture_lock() -> None:
    """Give this (forked) process its own Pyomo output-capture lock.

    Once ``multiprocessing`` is imported, Pyomo's ``capture_output_lock`` is a
    ``multiprocessing.Lock``: a semaphore shared with every process forked afterwards. A child
    killed at its deadline while inside ``capture_output`` (its enter or exit, which joins
    Pyomo's reader threads) never releases it, and every later capture in the parent and in
    every later child then waits for good ("Deadlock starting capture_output" after Pyomo's
    200 s). A child's captures concern only its own output, so a lock of its own is enough.
    """
    import sys
    import threading

    deps = sys.modules.get("pyomo.common.dependencies")
    if deps is not None:
        deps.capture_output_lock = threading.Lock()


def _hold_stops() -> tuple[list[int], dict]:
    """Record SIGINT and SIGTERM instead of acting on them until :func:`_release_stops`: a stop
    landing inside ``os.fork``'s own hooks (logging's lock release) was "ignored" with a traceback
    on stderr and lost. A blocked signal mask cannot hold it: a process-directed signal goes to
    any thread that does not block it (OpenBLAS's), and Python still runs its handler in the main
    thread. Only the main thread can set handlers, and only it runs them, so elsewhere nothing is
    held."""
    caught: list[int] = []
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for stop in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(stop)
            if handler is not None:         # None: set outside Python, left alone
                handlers[stop] = signal.signal(stop, lambda signum, frame: caught.append(signum))
    return caught, handlers


def _release_stops(handlers: dict, caught: list[int]) -> None:
    """Put back the handlers :func:`_hold_stops` replaced, then raise the stops it caught."""
    for stop, handler in handlers.items():
        signal.signal(stop, handler)
    for stop in dict.fromkeys(caught):
        signal.raise_signal(stop)


def in_child(work: Callable[[Callable[[Any], None]], Any], budget, on_progress: Callable[[Any], None] | None = None
             ) -> tuple[bool, Any]:
    """Run ``work(report)`` in a forked child until ``budget`` is spent: ``(True, its value)``, or
    ``(False, None)`` when the child had to be killed at the deadline.

    The child starts a fresh HiGHS scheduler (the parent's worker threads do not survive a fork);
    every ``report(message)`` reaches ``on_progress(message)`` in the parent as it happens. An
    exception in the child is raised again in the parent.
    """
    if budget.expired():        # nothing to wait for: no fork (tens of ms for a large process)
        return False, None
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child():
        # a semaphore made here (Pyomo's capture lock when Pyomo is first imported in the child) is
        # unlinked at once, as under fork, instead of registered with the resource tracker of a
        # spawned parent (a process-pool worker), which os._exit below would leave to report it as
        # leaked when the run ends or is stopped
        mp.set_start_method("fork", force=True)
        highspy.Highs.resetGlobalScheduler(False)
        _scheduler_threads.clear()
        # Pyomo asks highspy to run HiGHS in a helper thread (HandleKeyboardInterrupt), which never
        # starts in a forked process; the parent handles interrupts here, so run in this thread
        highspy.Highs.HandleKeyboardInterrupt = property(lambda self: False, lambda self, value: None)
        _private_capture_lock()
        try:
            send.send(("done", work(lambda msg: send.send(("progress", msg)))))
        except Exception as exc:      # handed to the parent, which raises it
            try:
                pickle.loads(pickle.dumps(exc))
            except Exception:         # an exception that does not survive pickling: its text
                exc = SolverError(f"{type(exc).__name__}: {exc}")
            send.send(("error", exc))
        finally:
            send.close()

    # a bare fork, not multiprocessing.Process: a daemonic process (a Dask worker, a process
    # pool's worker) may not start a multiprocessing child, but must still be able to stop HiGHS
    caught, handlers = _hold_stops()
    pid = os.fork()
    if pid == 0:
        _release_stops(handlers, [])    # a stop caught during the fork was the parent's
        try:
            child()
        finally:
            os._exit(0)
    send.close()
    try:
        _release_stops(handlers, caught)
        while True:
            left = budget.remaining()
            if left <= 0 or not recv.poll(left if math.isfinite(left) else None):
                return False, None
            try:
                kind, value = recv.recv()
            except EOFError:
                raise SolverError("the guarded HiGHS process ended without an answer (out of memory?)") from None
            if kind == "progress":
                if on_progress is not None:
                    on_progress(value)
            elif kind == "done":
                return True, value
            else:
                raise value
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        recv.close()


def solve_guarded(mf: MatrixForm, opts: SolveOptions, *, warm_x: np.ndarray | None = None,
                  want_duals: bool = False, warm_basis: highspy.HighsBasis | None = None) -> MatrixOutcome:
    """HiGHS in a forked child (:func:`in_child`) that is stopped when the call's budget runs out.

    The child gives HiGHS the remaining budget as usual; the parent keeps every improving
    solution the child reports (and its dual bound, valid whenever it is reported) and forwards it
    to ``opts.on_incumbent``. If the child has not answered when the budget is spent (HiGHS is in
    a step that does not read its clock), it is killed and the best solution so far is returned
    with termination ``time_limit``.
    """
    t0 = time.perf_counter()
    best: list[tuple] = []

    def progress(msg):
        sec, obj, bnd, x = msg
        best[:] = [(obj, bnd, x)]
        if opts.on_incumbent is not None:
            opts.on_incumbent(Incumbent(sec, obj, bnd))

    def work(report):
        out = solve_here(mf, replace(opts, on_incumbent=None), warm_x=warm_x, want_duals=want_duals,
                         improving=lambda sec, obj, bnd, x: report((sec, obj, bnd, x)), warm_basis=warm_basis)
        out.highs = None
        return out

    done, outcome = in_child(work, opts.clock, progress)
    if done:
        outcome.stats["guarded"] = True
        return outcome
    out = MatrixOutcome(Status.NO_SOLUTION, "time_limit", None, None, None, time.perf_counter() - t0,
                        stats={"guarded": True, "stopped_at_deadline": True})
    if best:
        obj, bnd, x = best[0]
        out.status, out.x, out.objective = Status.FEASIBLE, x, obj
        out.bound = bnd if math.isfinite(bnd) else None
    return out

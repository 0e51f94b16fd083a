"""The matrix front end loaded into highspy in a handful of array calls (STYLE.md practice 3).

:func:`solve_matrix` solves a :class:`~dlsched.models.mcmdk.MatrixForm` and translates the
HiGHS model status through one table (:data:`STATUS_TABLE`, practice 6).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np

from dlsched.errors import SolverError
from dlsched.models.mcmdk import MatrixForm
from dlsched.result import Status
from dlsched.solvers.options import Incumbent, SolveOptions, warn_unknown

MS = highspy.HighsModelStatus

#: HiGHS model status -> (termination, status when a solution exists, status when none does)
STATUS_TABLE: dict[Any, tuple[str, Status, Status]] = {
    MS.kOptimal: ("optimal", Status.OPTIMAL, Status.ERROR),
    MS.kInfeasible: ("infeasible", Status.INFEASIBLE, Status.INFEASIBLE),
    MS.kUnboundedOrInfeasible: ("infeasible_or_unbounded", Status.INFEASIBLE, Status.INFEASIBLE),
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

RAW_OPTIONS = {"presolve", "mip_heuristic_effort", "mip_feasibility_tolerance", "primal_feasibility_tolerance",
               "dual_feasibility_tolerance", "mip_abs_gap", "mip_max_nodes", "simplex_strategy", "solver",
               "parallel", "mip_detect_symmetry", "mip_lp_age_limit", "log_file", "run_crossover"}


def version() -> str:
    return f"highs {highspy.Highs().version()}"


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
        HiGHS's own absolute tolerance (1e-6) still count as proven."""
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
    if opts.time_limit is not None:
        h.setOptionValue("time_limit", float(opts.time_limit))
    h.setOptionValue("mip_rel_gap", float(opts.mip_rel_gap))
    h.setOptionValue("random_seed", int(opts.seed))
    if opts.threads is not None:
        h.setOptionValue("threads", int(opts.threads))
    for key, val in warn_unknown(opts.raw, RAW_OPTIONS, "highs").items():
        h.setOptionValue(key, val.item() if isinstance(val, np.generic) else val)
    return h


def solve_matrix(mf: MatrixForm, opts: SolveOptions | None = None, *, warm_x: np.ndarray | None = None,
                 want_duals: bool = False) -> MatrixOutcome:
    """Solve ``mf`` with HiGHS; ``warm_x`` (column values) is passed through ``setSolution``."""
    opts = opts or SolveOptions()
    h = load(mf, opts)
    is_mip = bool(mf.integrality.any())
    if warm_x is not None:
        h.setSolution(int(mf.n_cols), np.arange(mf.n_cols, dtype=np.int32), np.asarray(warm_x, dtype=np.float64))
    t0 = time.perf_counter()
    if opts.on_incumbent is not None and is_mip:
        cb = opts.on_incumbent

        def improving(e):
            d = e.data_out
            cb(Incumbent(time.perf_counter() - t0, float(d.objective_function_value), float(d.mip_dual_bound)))

        h.cbMipImprovingSolution.subscribe(improving)
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

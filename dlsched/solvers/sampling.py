r"""Column sampling of the MCMDK (MODELS.md §1, "column sparsification": a random/importance sample).

Method ``sample``: keep at most N configurations per job and solve the reduced MILP with HiGHS.

* always kept: the LP support (:math:`x^*_{j,o} > 0`) and the ``lp-round`` incumbent's columns,
  so the reduced problem is at least as good as LP rounding and its LP is the full LP;
* the rest of the N per job: drawn without replacement with weight
  :math:`w_{j,o} \propto \exp(-r_{j,o} / \bar r)` (:math:`r` the LP regret of
  :mod:`dlsched.solvers.lp`, :math:`\bar r` its mean over the job's columns) — importance by
  LP value: columns the LP prices near the best one are likely, hopeless ones rare. The draw is
  a seeded Gumbel top-k, whole-array: key :math:`\log w - \log(-\log U)`, keep the N largest
  keys per job (one ``lexsort``).

N is the knob that trades gap for time: the reduced MILP has about N x jobs columns. The
reported bound is certified for the *whole* problem as in :mod:`dlsched.solvers.core`:
:math:`\max(\beta, L(u) - r^{\rm out})`, :math:`\beta` the reduced MILP's bound and
:math:`r^{\rm out}` the smallest regret of a column left out.
"""

from __future__ import annotations


import numpy as np

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK
from dlsched.models.mcmdk import build_matrix
from dlsched.result import Result, Status
from dlsched.solvers.core import finish, solve_restricted, start
from dlsched.solvers.lp import LPInfo
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.registry import register


def sample_columns(inst: MCMDK, lp: LPInfo, samples: int, seed: int) -> np.ndarray:
    """Mask of the N-per-job importance sample (without the always-kept columns)."""
    rng = np.random.default_rng(seed)
    cj = inst.col_job
    counts = np.maximum(inst.n_configs, 1)
    mean = np.bincount(cj, weights=lp.regret, minlength=inst.n_jobs) / counts
    scale = np.where(mean > 0, mean, 1.0)[cj]
    key = -lp.regret / scale - np.log(-np.log(rng.random(inst.n_cols)))
    order = np.lexsort((-key, cj))                 # by job, then best key first
    rank = np.arange(inst.n_cols) - inst.job_ptr[cj[order]]
    keep = np.zeros(inst.n_cols, dtype=bool)
    keep[order[rank < samples]] = True
    return keep


@register("sample", description="importance-sampled columns (N per job) + LP support, reduced MILP with HiGHS",
          params=("samples", "seed"), supports=("gap", "raw"))
def sample(instance, opts: SolveOptions, samples: int = 10, seed: int | None = None) -> Result:
    """Column sampling (module docstring: the sample, the certified bound)."""
    if int(samples) != samples or samples < 1:
        raise InputError("<argument>", "samples", "a positive integer (configurations kept per job)", samples)
    seed = opts.seed if seed is None else int(seed)
    opts = opts.started()
    inst, tr, stats = start(instance, opts)
    if tr.lp.status != Status.OPTIMAL:
        return finish("sample", inst, opts, tr, stats, tr.lp.termination)
    lp = tr.lp
    keep = sample_columns(inst, lp, int(samples), seed) | (lp.x > 1e-9)
    allow_none = inst.choose == "at_most_one"
    none_ok = np.full(inst.n_jobs, allow_none)
    if tr.choice is not None:
        keep[inst.columns_of(tr.choice)] = True
    stats.update(samples=int(samples), seed=seed, kept_columns=int(keep.sum()))
    left = tr.remaining()
    termination = "time_limit"
    if left > 0 and not tr.done:
        termination, _ = solve_restricted(inst, build_matrix(inst), lp, keep, none_ok, tr, left, stats)
    if tr.proven:
        termination = "optimal"
    elif termination in ("optimal", "gap_limit", "infeasible"):
        # the sample is solved (or has no solution): that proves nothing for the whole problem,
        # whose gap is in the certified bound
        termination = "sample_optimal"
    return finish("sample", inst, opts, tr, stats, termination)

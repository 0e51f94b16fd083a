r"""SMD's tie rule: which of several optimal choices of an MCMDK a decision takes (docs/smd.md, "Ties").

A decision's subproblem (MODELS.md §1, minimisation, ``exactly_one``) often has many optima:
copies of one pod wait alike, and when capacity lets only some of them run any of them may. The
decision is then the **canonical optimum**: among the choices x whose cost is within the
tolerance :math:`\varepsilon` (:func:`tolerance`) of the optimum,

.. math::

    \mathcal{S} = \{x \text{ feasible} : v(x) \le \mathrm{OPT} + \varepsilon\},

the first in the order that compares the jobs in the core's order (candidates by index: by
arrival) and, for one job, prefers its **later column** (running before waiting; among an SMD
job's configurations, the later in :meth:`~dlsched.instance.smd.SMDInstance.configurations`'
order: more workers, then more PSs). So the earliest-arrived job gets the most preferred column
any near-optimal choice gives it, then the next job, and so on; in particular, of identical
jobs the ones that arrived first run first (FIFO).

The one-row dynamic programme (:mod:`dlsched.solvers.knapsack_dp`) returns this choice exactly.
An answer found otherwise (HiGHS, on a core of several binding rows) is made canonical
within its **exchange classes** (:func:`canonical`): jobs with the same uses in every row and
costs that differ by one constant per job can swap their columns without changing feasibility or
cost, and the canonical optimum orders each class by preference; the lexicographic order between
classes is then the solver's (it would take a solve per job to impose).
"""

from __future__ import annotations

import numpy as np

from dlsched.instance.core import MCMDK

#: the absolute part of the tolerance: HiGHS's ``mip_abs_gap`` (1e-6), within which an exact solve
#: may return any of several choices
TIE = 1e-6
#: the relative part, per unit of the costs' scale: a total over thousands of jobs of 1e8 (inflated
#: OpenB's seconds) is rounded differently by a few ulps (1e-8 each) in different orders of summation
TIE_RELATIVE = 1e-12


def tolerance(cost: np.ndarray, ptr: np.ndarray) -> float:
    r""":math:`\varepsilon = 10^{-6} + 10^{-12} \sum_j \max_{o \in O_j} |v_{jo}|`: two choices whose
    costs differ by less are a tie (the scale term bounds every choice's cost, so it is fixed
    before any solve)."""
    if ptr.size < 2:
        return TIE
    return TIE + TIE_RELATIVE * float(np.maximum.reduceat(np.abs(cost), ptr[:-1]).sum())


def exchange_classes(core: MCMDK, cost: np.ndarray) -> np.ndarray:
    """The exchange class of each job of ``core`` (module docstring): jobs with the same number of
    columns, the same uses of every row column for column, and the same costs less their first
    column's cost. Classes are numbered by their first job."""
    ptr = core.job_ptr
    n, width = core.n_jobs, np.diff(ptr)
    W = int(width.max(initial=0))
    job = np.repeat(np.arange(n), width)
    at = np.arange(ptr[-1]) - ptr[job]
    dense = core.A.toarray()                                  # (rows, columns): a few rows
    sig = np.full((n, 1 + W * (1 + dense.shape[0])), np.inf)  # (columns, costs, uses per row), padded alike
    sig[:, 0] = width
    sig[job, 1 + at] = cost - cost[ptr[job]]
    for r in range(dense.shape[0]):
        sig[job, 1 + W * (1 + r) + at] = dense[r]
    _, first, cls = np.unique(sig, axis=0, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[cls.reshape(-1)]


def canonical(core: MCMDK, cost: np.ndarray, choice: np.ndarray) -> np.ndarray:
    """``choice`` with each exchange class's chosen columns dealt out again in preference order: the
    class's jobs, in the core's order, take its chosen columns from the latest to the earliest.
    Feasibility and cost are unchanged; the canonical optimum is left as it is."""
    choice = np.asarray(choice, dtype=np.int64)
    if core.n_jobs < 2:
        return choice.copy()
    cls = exchange_classes(core, cost)
    jobs = np.lexsort((np.arange(core.n_jobs), cls))          # by class, in core order within one
    cols = np.lexsort((-choice, cls))                         # by class, the latest column first
    out = np.empty_like(choice)
    out[jobs] = choice[cols]
    return out

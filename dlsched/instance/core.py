r"""The core multiple-choice multi-dimensional knapsack (MCMDK), MODELS.md §1.

.. math::

    \max / \min \; \sum_j \sum_{o \in O_j} v_{j,o} x_{j,o}
    \quad\text{s.t.}\quad \sum_{j,o} a^k_{j,o} x_{j,o} \le b^k \;\forall k,
    \quad \sum_{o} x_{j,o} \le 1 \;(\text{or} = 1) \;\forall j,
    \quad x_{j,o} \in \{0, 1\}

=================  ======================================================
symbol             field
=================  ======================================================
:math:`v_{j,o}`    ``value[col]``
:math:`a^k_{j,o}`  ``A[k, col]`` (scipy CSR, rows = capacity rows k)
:math:`b^k`        ``b[k]``
:math:`O_j`        columns ``job_ptr[j] : job_ptr[j + 1]``
=================  ======================================================

A column is one configuration o of one job j; the columns of a job are contiguous.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from dlsched.errors import InputError
from dlsched.instance.fields import array_argument

SENSES = ("max", "min")
CHOOSE = ("at_most_one", "exactly_one")


@dataclass(frozen=True)
class Reference:
    """A known objective value of an instance (optimum or best known) and where it comes from."""

    objective: float
    optimal: bool = True
    source: str = ""


@dataclass(eq=False)
class MCMDK:
    """An MCMDK instance (MODELS.md §1); see the module docstring for the symbols."""

    value: np.ndarray
    A: sp.csr_matrix
    b: np.ndarray
    job_ptr: np.ndarray
    sense: str = "max"
    choose: str = "at_most_one"
    name: str = ""
    job_names: tuple[str, ...] | None = None
    row_names: tuple[str, ...] | None = None
    config_labels: tuple[str, ...] | None = None
    reference: Reference | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = "<memory>"
    description: str = ""

    family = "mcmdk"

    def __post_init__(self) -> None:
        src = self.source
        self.value = array_argument(src, "value", self.value)
        self.b = array_argument(src, "b", self.b)
        self.job_ptr = array_argument(src, "job_ptr", self.job_ptr, np.int64)
        if self.A is None or isinstance(self.A, (str, bytes, dict)):
            raise InputError(src, "A", "a matrix (scipy.sparse or a 2-D array of numbers)", type(self.A).__name__)
        try:
            A = sp.csr_matrix(self.A, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(src, "A", "a matrix (scipy.sparse or a 2-D array of numbers)", str(exc)) from None
        A.eliminate_zeros()
        A.sort_indices()
        self.A = A
        if self.sense not in SENSES:
            raise InputError(src, "sense", "'max' or 'min'", self.sense)
        if self.choose not in CHOOSE:
            raise InputError(src, "choose", "'at_most_one' or 'exactly_one'", self.choose)
        n = self.value.size
        if self.job_ptr.size < 1 or self.job_ptr[0] != 0 or self.job_ptr[-1] != n or np.any(np.diff(self.job_ptr) < 0):
            raise InputError(src, "job_ptr", f"non-decreasing offsets from 0 to {n}", self.job_ptr.tolist()[:8])
        if A.shape != (self.b.size, n):
            raise InputError(src, "A", f"a {self.b.size} x {n} matrix", f"shape {A.shape}")
        _finite(src, "value", self.value)
        _finite(src, "A", A.data)
        _finite(src, "capacity", self.b)
        if A.nnz and A.data.min() < 0:
            raise InputError(src, "A", "resource use a >= 0", float(A.data.min()))
        neg = np.flatnonzero(self.b < 0)
        if neg.size:
            raise InputError(src, f"capacity[{neg[0]}]", "a capacity >= 0", float(self.b[neg[0]]))
        for attr, size in (("job_names", self.n_jobs), ("row_names", self.n_rows), ("config_labels", n)):
            names = getattr(self, attr)
            if names is not None:
                if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
                    raise InputError(src, attr, f"a sequence of {size} names", type(names).__name__)
                names = tuple(map(str, names))
                if len(names) != size:
                    raise InputError(src, attr, f"{size} names", f"{len(names)} names")
                setattr(self, attr, names)

    # -- sizes and the job <-> column map -------------------------------------------------
    @property
    def n_jobs(self) -> int:
        return self.job_ptr.size - 1

    @property
    def n_cols(self) -> int:
        return self.value.size

    @property
    def n_rows(self) -> int:
        return self.b.size

    @property
    def n_configs(self) -> np.ndarray:
        """|O_j| for every job."""
        return np.diff(self.job_ptr)

    @property
    def col_job(self) -> np.ndarray:
        """The job j of every column."""
        return np.repeat(np.arange(self.n_jobs), self.n_configs)

    def columns_of(self, choice: np.ndarray) -> np.ndarray:
        """Column indices of the chosen configurations (jobs with ``choice == -1`` skipped)."""
        choice = np.asarray(choice, dtype=np.int64)
        chosen = np.flatnonzero(choice >= 0)
        return self.job_ptr[chosen] + choice[chosen]

    def choice_from_columns(self, x: np.ndarray, tol: float = 0.5) -> np.ndarray:
        """Per job, the configuration whose column value exceeds ``tol`` (``-1`` if none)."""
        x = np.asarray(x, dtype=float)
        cols = np.flatnonzero(x > tol)
        choice = np.full(self.n_jobs, -1, dtype=np.int64)
        jobs = self.col_job[cols]
        choice[jobs] = cols - self.job_ptr[jobs]
        return choice

    def job_name(self, j: int) -> str:
        return self.job_names[j] if self.job_names else f"job{j}"

    def row_name(self, k: int) -> str:
        return self.row_names[k] if self.row_names else f"row{k}"

    def to_core(self) -> "MCMDK":
        return self

    def restrict(self, keep: np.ndarray) -> tuple["MCMDK", np.ndarray]:
        """The sub-instance on the columns where ``keep`` is true, and the map new col -> old col.

        Jobs keep their index (a job may end with no configuration at all).
        """
        keep = np.asarray(keep, dtype=bool)
        old_cols = np.flatnonzero(keep)
        counts = np.bincount(self.col_job[old_cols], minlength=self.n_jobs)
        job_ptr = np.concatenate([[0], np.cumsum(counts)])
        labels = tuple(np.asarray(self.config_labels, dtype=object)[old_cols]) if self.config_labels else None
        sub = MCMDK(self.value[old_cols], self.A[:, old_cols], self.b, job_ptr, self.sense, self.choose,
                    self.name, self.job_names, self.row_names, labels, None, dict(self.meta), self.source,
                    self.description)
        return sub, old_cols


def _finite(source: str, where: str, arr: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise InputError(source, f"{where}[{bad[0]}]", "a finite number", float(arr[bad[0]]))


def from_dense(values: list[list[float]], uses: list[list[list[float]]], capacity: list[float], **kw) -> MCMDK:
    """Build an MCMDK from per-job lists: ``values[j][o]`` and ``uses[j][o][k]`` (small cases, tests)."""
    b = array_argument("<argument>", "capacity", capacity)
    if not isinstance(values, (list, tuple)) or not isinstance(uses, (list, tuple)) or len(values) != len(uses) \
            or not all(isinstance(vj, (list, tuple)) and isinstance(uj, (list, tuple)) and len(vj) == len(uj)
                       for vj, uj in zip(values, uses)):
        raise InputError("<argument>", "values/uses", "per-job lists of equal lengths (values[j][o], uses[j][o][k])",
                         f"{type(values).__name__}/{type(uses).__name__}")
    job_ptr = np.concatenate([[0], np.cumsum([len(v) for v in values])])
    value = array_argument("<argument>", "values", [v for vj in values for v in vj])
    cols = [array_argument("<argument>", f"uses[{j}][{o}]", u) for j, uj in enumerate(uses) for o, u in enumerate(uj)]
    bad = next((k for k, u in enumerate(cols) if u.size != b.size), None)
    if bad is not None:
        raise InputError("<argument>", "uses", f"{b.size} numbers per configuration (one per capacity)", f"{cols[bad].size}")
    A = np.array(cols).reshape(len(cols), b.size).T if cols else np.zeros((b.size, 0))
    return MCMDK(value, sp.csr_matrix(A), b, job_ptr, **kw)

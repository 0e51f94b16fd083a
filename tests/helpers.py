"""Shared test helpers: brute force and a tiny random MCMDK strategy."""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

from dlsched.instance.core import MCMDK


def brute_force(inst: MCMDK) -> float | None:
    """Optimum by enumerating every choice (tiny instances only); None if infeasible."""
    A = inst.A.toarray()
    best = None
    options = [range(-1 if inst.choose == "at_most_one" else 0, int(n)) for n in inst.n_configs]
    for combo in itertools.product(*options):
        cols = [inst.job_ptr[j] + o for j, o in enumerate(combo) if o >= 0]
        if np.all(A[:, cols].sum(axis=1) <= inst.b + 1e-9):
            val = float(inst.value[cols].sum())
            if best is None or (val > best if inst.sense == "max" else val < best):
                best = val
    return best


@st.composite
def tiny_mcmdk(draw, max_jobs: int = 4, max_configs: int = 3, max_rows: int = 3) -> MCMDK:
    n_jobs = draw(st.integers(1, max_jobs))
    counts = draw(st.lists(st.integers(1, max_configs), min_size=n_jobs, max_size=n_jobs))
    n_rows = draw(st.integers(1, max_rows))
    n = sum(counts)
    ints = st.integers(0, 9)
    value = draw(st.lists(st.integers(-5, 20), min_size=n, max_size=n))
    use = draw(st.lists(ints, min_size=n * n_rows, max_size=n * n_rows))
    cap = draw(st.lists(st.integers(0, 15), min_size=n_rows, max_size=n_rows))
    sense = draw(st.sampled_from(["max", "min"]))
    choose = draw(st.sampled_from(["at_most_one", "exactly_one"]))
    A = sp.csr_matrix(np.array(use, dtype=float).reshape(n_rows, n))
    return MCMDK(np.array(value, float), A, np.array(cap, float), np.concatenate([[0], np.cumsum(counts)]),
                 sense, choose, name="tiny")

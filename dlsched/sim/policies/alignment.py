"""Some rows of a matrix-vector product, each rounded exactly as the product of the whole matrix rounds it.

Tetris (policies/baselines.Tetris, MODELS.md §7) scores every candidate by the alignment
⟨b_j / C, free / C⟩, taken as one product ``A @ v`` over all n candidates. The BLAS behind numpy
computes that product in blocks of four rows and the last ``n mod 4`` rows apart, with different
roundings (a row's value can differ in its last bit between the two), so the value of a row depends
on where it sits in the whole matrix; a product over a subset of the rows may round a row
differently, and a decision between near-equal scores may change with it. :func:`rows_of_product`
gives the rows asked for by multiplying only the blocks of four that hold them, and the last rows,
laid out so that each keeps its place (inside a block, or among the last rows): the same values,
bit for bit, at the cost of the rows asked for. :func:`exact` says whether a probe (once per
number of columns) confirms this on the machine's BLAS; where it does not, callers take the whole
product.
"""

from __future__ import annotations

import numpy as np


def rows_of_product(A: np.ndarray, v: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(A @ v)[rows]`` as the product over the whole of ``A`` (n, R) rounds it; ``rows`` ascending, distinct."""
    n = A.shape[0]
    main = n & -4
    rows = np.asarray(rows, dtype=np.int64)
    inside = rows < main
    b = rows[inside] >> 2                 # ascending, as rows are
    blocks = b[np.flatnonzero(np.diff(b, prepend=-1))] if b.size else b
    take = (blocks[:, None] * 4 + np.arange(4)).ravel()
    tail = rows.size and rows[-1] >= main
    if tail:
        take = np.concatenate([take, np.arange(main, n)])
    got = A[take] @ v
    pos = np.empty(rows.size, dtype=np.int64)
    pos[inside] = np.searchsorted(blocks, rows[inside] >> 2) * 4 + (rows[inside] & 3)
    pos[~inside] = blocks.size * 4 + (rows[~inside] - main)
    return got[pos]


_EXACT: dict[int, bool] = {}


def exact(R: int) -> bool:
    """Whether :func:`rows_of_product` reproduces the whole product here for ``R`` columns, on random
    rows of matrices of random sizes (probed once per R)."""
    if R not in _EXACT:
        rng = np.random.default_rng(0)
        ok = True
        for n in (1, 3, 4, 7, 64, 1001, 4003, 9002, 20001):
            A = rng.random((n, R)) * rng.choice([0.0, 1e-3, 1.0, 2.5, 8.0], (n, R))
            v = rng.random(R) * rng.choice([1.0, 1e3, 7.0], R)
            rows = np.flatnonzero(rng.random(n) < 0.3)
            ok = ok and np.array_equal(rows_of_product(A, v, rows), (A @ v)[rows])
        _EXACT[R] = bool(ok)
    return _EXACT[R]

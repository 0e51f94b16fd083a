"""The alignments of groups of equal rows, each rounded exactly as the product of the whole matrix rounds it.

Tetris (policies/tetris.Tetris, MODELS.md §7) scores every candidate by the alignment
⟨b_j / C, free / C⟩, taken as one product ``A @ v`` over all n candidates. The BLAS behind numpy
computes that product in blocks of four rows and the last ``n mod 4`` rows apart, with different
roundings (a row's value can differ in its last bit between the two, and a product of one row alone
rounds otherwise again), so the value of a row depends on where it sits in the whole matrix, and a
decision between near-equal scores may change with it. Inside the blocks of four a row's value
depends on the row alone (not on its place, its block's other rows or the number of rows), and each
of the last rows on the row and its place among them. :func:`layout` stacks a few distinct rows, in
whole blocks of four, and the last rows after them: one product over it gives every distinct row the
value of its copies inside the blocks of the whole product, and each last row its own, at the cost of
the distinct rows. :func:`rows_alike` says whether a probe (once per number of columns) confirms this
on the machine's BLAS; where it does not, callers take the whole product.
"""

from __future__ import annotations

import numpy as np


def layout(inside: np.ndarray, last: np.ndarray) -> np.ndarray:
    """The distinct rows ``inside`` (k, R), zero rows up to whole blocks of four, then the ``last`` rows
    (the whole matrix's last n mod 4; with no rows inside the blocks, the whole matrix is its last rows)."""
    R = last.shape[1]
    return np.vstack([inside, np.zeros((-inside.shape[0] % 4, R)), last])


_ALIKE: dict[int, bool] = {}


def rows_alike(R: int) -> bool:
    """Whether here, for ``R`` columns, a product over :func:`layout` gives the rows of the whole
    product ``A @ v`` inside the blocks of four and the last rows bit for bit: matrices of random
    sizes whose rows are drawn from a few distinct ones, in any order (probed once per R)."""
    if R not in _ALIKE:
        rng = np.random.default_rng(1)
        ok = True
        for n in (1, 2, 3, 4, 5, 6, 7, 9, 13, 64, 1001, 1002, 4003, 9002, 20001) * 3:
            k = int(rng.integers(1, 12))
            pool = rng.random((k, R)) * rng.choice([0.0, 1e-3, 1.0, 2.5, 8.0, 1 / 3], (k, R))
            at = rng.integers(0, k, n)
            A = pool[at] * np.where(np.arange(n) < n & -4, 1.0, rng.random(n))[:, None]   # the last rows: any
            v = rng.random(R) * rng.choice([1.0, 1e3, 7.0, 1 / 7], R)
            main = n & -4
            used, where = np.unique(at[:main], return_inverse=True)
            got = layout(pool[used], A[main:]) @ v
            whole = A @ v
            ok = ok and np.array_equal(whole[:main], got[where.reshape(-1)]) \
                and np.array_equal(whole[main:], got[got.size - (n - main):])
        _ALIKE[R] = bool(ok)
    return _ALIKE[R]

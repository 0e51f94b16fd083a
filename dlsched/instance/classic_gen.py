r"""The published generators of the classic OR-Library classes, at any size (MODELS.md §1).

Defaults of the decomposition layers are tuned on instances drawn here, never on the OR-Library
files a benchmark reports (those come from the same recipes, with other seeds).

**Multidimensional knapsack** (Chu & Beasley, J. Heuristics 4, 1998, the ``mknapcb`` recipe):

.. math::

    a_{ij} \sim U\{0, \dots, 1000\},\qquad b_i = \alpha \sum_j a_{ij},\qquad
    c_j = \sum_i a_{ij} / m + \lfloor 500\, q_j \rfloor,\ q_j \sim U(0, 1),

with tightness :math:`\alpha \in \{0.25, 0.5, 0.75\}` in the published sets.

**Generalized assignment** (types C, D, E of Chu & Beasley 1997 / Laguna et al. 1995, as in
OR-Library's ``gap`` and the large ``c/d/e`` sets), m agents, n jobs, costs minimised:

* C: :math:`a_{ij} \sim U\{5..25\}`, :math:`c_{ij} \sim U\{10..50\}`;
* D: :math:`a_{ij} \sim U\{1..100\}`, :math:`c_{ij} = 111 - a_{ij} + e_{ij}`, :math:`e_{ij} \sim U\{-10..10\}`;
* E: :math:`a_{ij} = 1 - \lfloor 10 \ln u_{ij} \rfloor`, :math:`c_{ij} = \lfloor 1000 / a_{ij} - 10 u'_{ij} \rfloor`,
  :math:`u, u' \sim U(0, 1]`;

and in all three :math:`b_i = \lfloor 0.8 \sum_j a_{ij} / m \rfloor`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK

GAP_TYPES = ("c", "d", "e")


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise InputError("<argument>", name, "an integer >= 1", value)
    return int(value)


def chu_beasley_mkp(n: int, m: int, alpha: float = 0.5, seed: int = 0) -> MCMDK:
    """A 0-1 MDK with ``n`` items and ``m`` constraints by Chu & Beasley's recipe (max sense)."""
    n, m = _positive_int("n", n), _positive_int("m", m)
    if not 0 < alpha < 1:
        raise InputError("<argument>", "alpha", "a tightness in (0, 1)", alpha)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1001, size=(m, n)).astype(float)
    b = np.floor(alpha * a.sum(axis=1))
    c = np.floor(a.sum(axis=0) / m + 500.0 * rng.random(n))
    return MCMDK(c, sp.csr_matrix(a), b, np.arange(n + 1), "max", "at_most_one",
                 f"cb-{m}x{n}-a{alpha:g}-s{seed}", None, None, None, None,
                 {"origin": "chu_beasley_mkp", "seed": seed, "alpha": alpha})


def gap_instance(kind: str, m: int, n: int, seed: int = 0) -> MCMDK:
    """A generalized assignment problem of type ``kind`` (c, d or e): column j*m + i is job j on agent i."""
    if kind not in GAP_TYPES:
        raise InputError("<argument>", "kind", f"one of {', '.join(GAP_TYPES)}", kind)
    m, n = _positive_int("m", m), _positive_int("n", n)
    rng = np.random.default_rng(seed)
    if kind == "c":
        a = rng.integers(5, 26, size=(m, n)).astype(float)
        cost = rng.integers(10, 51, size=(m, n)).astype(float)
    elif kind == "d":
        a = rng.integers(1, 101, size=(m, n)).astype(float)
        cost = 111.0 - a + rng.integers(-10, 11, size=(m, n))
    else:
        u = 1.0 - rng.random((m, n))                      # in (0, 1]: log is finite
        a = 1.0 - np.floor(10.0 * np.log(u))
        cost = np.floor(1000.0 / a - 10.0 * (1.0 - rng.random((m, n))))
    b = np.floor(0.8 * a.sum(axis=1) / m)
    cols = np.arange(n * m)
    A = sp.csr_matrix((a.T.ravel(), (np.tile(np.arange(m), n), cols)), shape=(m, n * m))
    return MCMDK(cost.T.ravel(), A, b, np.arange(0, n * m + 1, m), "min", "exactly_one",
                 f"gap-{kind}-{m}x{n}-s{seed}", None, None, None, None,
                 {"origin": "gap_instance", "kind": kind, "seed": seed})

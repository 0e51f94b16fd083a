r"""Seeded random core instances (MODELS.md §1), built with whole-array numpy.

:func:`random_mcmdk` draws an MCMDK shaped like a cluster allocation: job j has a base demand
vector :math:`d_j \in [1, 100]^K` (each resource used with probability ``density``) and a weight
:math:`\omega_j`; configuration o scales it by a size :math:`s_{j,o} \in [0.1, 1]` with per-resource
jitter, and its value grows concavely with the resources it takes (diminishing returns, as for
data-parallel speed-ups):

.. math::

    a^k_{j,o} = \lceil d_j^k \, s_{j,o} \, \epsilon^k_{j,o} \rceil,\qquad
    v_{j,o} = \omega_j \Bigl(\sum_k a^k_{j,o}\Bigr)^{\alpha} (1 + \sigma \eta_{j,o}),

with :math:`\epsilon \sim U[0.7, 1.3]`, :math:`\eta \sim N(0, 1)` clipped to :math:`\pm 2`,
:math:`\omega_j \sim U[0.5, 1.5]`. Values correlated with resource use make the instance hard
(the LP ranks options by efficiency only approximately). Capacities are
:math:`b^k = \text{tightness} \cdot \sum_j \operatorname{mean}_o a^k_{j,o}`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK
from dlsched.instance.fields import count_argument


def random_mcmdk(n_jobs: int, n_configs: int, n_rows: int, seed: int = 0, *, tightness: float = 0.5,
                 alpha: float = 0.8, noise: float = 0.1, density: float = 1.0, choose: str = "at_most_one",
                 integer: bool = True) -> MCMDK:
    """A random MCMDK with ``n_jobs`` x ``n_configs`` columns and ``n_rows`` capacity rows (max sense).

    Same arguments, same instance (``numpy.random.default_rng(seed)``). ``density`` is the chance
    that a job uses a resource at all (each job uses at least one).
    """
    for name, val in (("n_jobs", n_jobs), ("n_configs", n_configs), ("n_rows", n_rows)):
        count_argument(name, val, 1)
    if not 0 < tightness <= 1:
        raise InputError("<argument>", "tightness", "a fraction in (0, 1]", tightness)
    if not 0 < density <= 1:
        raise InputError("<argument>", "density", "a fraction in (0, 1]", density)
    rng = np.random.default_rng(seed)
    J, O, K = int(n_jobs), int(n_configs), int(n_rows)
    demand = rng.uniform(1.0, 100.0, size=(J, K))
    uses = rng.random((J, K)) < density
    uses[np.arange(J), rng.integers(0, K, size=J)] = True
    demand *= uses
    size = rng.uniform(0.1, 1.0, size=(J, O))
    jitter = rng.uniform(0.7, 1.3, size=(J, O, K))
    a = demand[:, None, :] * size[:, :, None] * jitter           # (J, O, K)
    if integer:
        a = np.ceil(a) * (a > 0)
    weight = rng.uniform(0.5, 1.5, size=J)
    eta = np.clip(rng.standard_normal((J, O)), -2.0, 2.0)
    value = weight[:, None] * a.sum(axis=2) ** alpha * (1.0 + noise * eta)
    if integer:
        value = np.round(value)
    b = tightness * a.mean(axis=1).sum(axis=0)
    if integer:
        b = np.floor(b)
    A = sp.csr_matrix(a.reshape(J * O, K).T)
    return MCMDK(value.ravel(), A, b, np.arange(0, J * O + 1, O), "max", choose,
                 f"random-{J}x{O}x{K}-s{seed}", None, tuple(f"r{k}" for k in range(K)), None, None,
                 {"origin": "random_mcmdk", "seed": seed, "tightness": tightness, "alpha": alpha,
                  "noise": noise, "density": density})

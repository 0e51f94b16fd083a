"""CMA-ES over the coordinates that ``--baseline es`` searches, ``--es-optimizer cma`` (Hansen 2016,
"The CMA Evolution Strategy: A Tutorial"; the library ``cma``, pycma).

Why: ES with a fixed step (Adam, :class:`dlsched.rl.es.Adam`) moves the row prior Θ by about one unit
RMS in 30 CPU-minutes, while the priors that hold −20 % on the tuning traces lie tens of units from
Θ = 0, and a larger fixed step leaves the warm-up's basin at once (docs/dl2.md, rounds 13 and 14).
CMA-ES adapts its step to the distance: the step size σ follows the evolution path p_σ (cumulative
step-size adaptation),

    p_σ ← (1 − c_σ) p_σ + √(c_σ (2 − c_σ) μ_eff) C^(−1/2) (m' − m) / σ,
    σ ← σ · exp((c_σ / d_σ) (‖p_σ‖ / E‖N(0, I)‖ − 1)),

so σ grows while successive mean shifts point the same way and shrinks while they cancel, and the
covariance C learns which directions pay. A generation (:meth:`CmaSearch.generation`) asks λ = 2 ·
``pairs`` points x = m ± σ C^(1/2) z (mirrored pairs: pycma's ``CMA_mirrors`` unconditionally, so each
pair shares z as an antithetic pair of :func:`dlsched.rl.es.es_gradient` does), plays the greedy policy
at θ = θ₀ + E x (θ₀ the start, E the search basis, :func:`dlsched.rl.es.lift`) on ``traces`` common
training traces, and tells CMA the mean JCT in slots, −F (CMA minimises), so that the ranking inside a
generation is by the same traces for every member. The policy is the mean m, θ₀ + E m.

Selection is pairwise (Auger, Jebalia and Teytaud 2011; Brockhoff et al. 2010): only the better point of
each mirrored pair can be selected. With every point ranked, a pair whose points both rank among the μ best
cancels in the mean's shift m' − m, so the path is shorter than the random one that CSA compares it with
and σ shrinks under noise alone (round 15's pilot A: σ from 1 to 0.6 in 12 generations while the tuning
JCT did not improve). With pairwise selection the shift under pure noise is a random walk, as CSA assumes,
and a consistent ranking lengthens the path.

Every draw comes from the run's random stream (``randn``, not numpy's global state), and the search's
state (m, σ, C, the paths, the iteration) is a dictionary of tensors (:meth:`CmaSearch.state`) that the
checkpoint carries, so that ``--init`` continues the search where it stopped.
"""

from __future__ import annotations

import cma
from cma.utilities.utils import ElapsedWCTime
import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.es import lift, member_returns, set_theta
from dlsched.rl.policy import Model

#: the checkpoint's ``es_optimizer["kind"]`` of a CMA search
KIND = "cma"


class CmaSearch:
    """pycma's CMA-ES in ``dim`` searched coordinates around θ₀ (``origin``, :func:`dlsched.rl.es.theta`'s
    layout; module docstring): the mean starts at 0 (θ₀ itself) with step ``sigma``, λ = 2 · ``pairs``."""

    def __init__(self, origin: np.ndarray, basis: np.ndarray | None, sigma: float, pairs: int):
        self.origin = np.asarray(origin, dtype=float)
        self.basis = basis
        self.dim = len(self.origin) - 1 if basis is None else basis.shape[1]
        self.pairs = pairs
        self.stream: np.random.Generator | None = None
        self.es = cma.CMAEvolutionStrategy(np.zeros(self.dim), float(sigma), {
            "popsize": 2 * pairs, "CMA_mirrors": pairs, "CMA_mirrormethod": 0,   # antithetic pairs, all kept
            "randn": self._randn, "seed": np.nan, "verbose": -9,
            # pairwise selection: a pair's worse point would enter active CMA's negative weights as −y of the better
            # one, shrinking C along the direction that paid
            "CMA_active": False,
            # no stopping rule: the run's CPU budget ends the search, not a flat fitness on a few traces
            "tolfun": 0, "tolfunhist": 0, "tolflatfitness": np.inf, "tolx": 0, "tolstagnation": np.inf,
            "tolfunrel": 0, "tolconditioncov": np.inf})

    def _randn(self, *shape) -> np.ndarray:
        if self.stream is None:
            raise RuntimeError("CmaSearch draws only inside generation(), from the run's stream")
        return self.stream.standard_normal(shape)

    def theta(self, x: np.ndarray) -> np.ndarray:
        """θ = θ₀ + E x."""
        return self.origin + lift(np.asarray(x, dtype=float), self.basis, len(self.origin))

    @property
    def mean(self) -> np.ndarray:
        return np.asarray(self.es.mean, dtype=float)

    @property
    def sigma(self) -> float:
        return float(self.es.sigma)

    def generation(self, env: DL2Env, model: Model, rng: np.random.Generator, *, traces: int,
                   pool=None) -> tuple[np.ndarray, float, float]:
        """One generation (module docstring); ``model`` is left at the new mean. Returns the mirrored pairs'
        differences d_j = F(m + σy_j) − F(m − σy_j), the generation's mean return, and the CPU seconds of
        worker processes."""
        ks = rng.choice(len(env.traces), size=min(traces, len(env.traces)), replace=False)
        X = self.ask(rng)
        members = [(self.theta(x), int(k)) for x in X for k in ks]
        if pool is None:
            R, cpu = member_returns(env, model, members), 0.0
        else:
            R, cpu = pool.greedy_returns(model, members)
        F = np.asarray(R, dtype=float).reshape(len(X), len(ks)).mean(axis=1)
        self.tell(X, F)
        set_theta(model, torch.from_numpy(self.theta(self.mean)))
        return F[0::2] - F[1::2], float(F.mean()), cpu

    def ask(self, rng: np.random.Generator) -> list[np.ndarray]:
        """λ points in the searched coordinates, drawn from ``rng``, in mirrored pairs: point 2j + 1 is
        2m − point 2j."""
        self.stream = rng
        try:
            return [np.asarray(x, dtype=float) for x in self.es.ask()]
        finally:
            self.stream = None

    def tell(self, X: list[np.ndarray], F: np.ndarray) -> None:
        """Update m, σ, C from the points ``X`` of :meth:`ask` and their returns ``F`` (higher is better), by
        pairwise selection (module docstring): the better point of each mirrored pair ranked by its return,
        every other point below all of them (weight 0, active CMA off)."""
        F = np.asarray(F, dtype=float)
        loser = np.zeros(len(F), dtype=bool)
        loser[0::2], loser[1::2] = F[0::2] < F[1::2], F[0::2] >= F[1::2]
        cost = -F                                   # CMA minimises
        cost[loser] = cost[~loser].max() + 1.0 + (cost[loser] - cost[loser].min())
        self.es.tell(X, list(cost))

    def state(self) -> dict:
        """What continues the search (module docstring): θ₀, m, σ, C with its eigen decomposition, the
        evolution paths, the iteration and evaluation counts; tensors and numbers, as a checkpoint stores."""
        es, sm = self.es, self.es.sm

        def t(a) -> torch.Tensor:
            return torch.as_tensor(np.asarray(a, dtype=float))
        return {"kind": KIND, "origin": t(self.origin), "mean": t(es.mean), "sigma": float(es.sigma),
                "C": t(sm.C), "B": t(sm.B), "D": t(sm.D), "pc": t(es.pc), "ps": t(es.adapt_sigma.ps),
                "countiter": int(es.countiter), "countevals": int(es.countevals),
                "count_eigen": int(sm.count_eigen), "count_tell": int(sm.count_tell), "last_update": int(sm.last_update)}

    @classmethod
    def from_state(cls, state: dict, basis: np.ndarray | None, pairs: int) -> "CmaSearch":
        """The search :meth:`state` recorded, continued with ``pairs`` pairs a generation."""
        search = cls(state["origin"].numpy(), basis, state["sigma"], pairs)
        es, sm = search.es, search.es.sm
        if len(state["mean"]) != search.dim:
            raise ValueError(f"a CMA state of {len(state['mean'])} coordinates for a search of {search.dim}")
        es.mean = state["mean"].numpy().copy()
        es.mean_old = es.mean.copy()
        es.sigma = float(state["sigma"])
        sm.C, sm.B, sm.D = (state[k].numpy().copy() for k in ("C", "B", "D"))
        sm._inverse_root_C = None
        es.pc, es.adapt_sigma.ps = state["pc"].numpy().copy(), state["ps"].numpy().copy()
        es.countiter, es.countevals = int(state["countiter"]), int(state["countevals"])
        es.timer = ElapsedWCTime()      # pycma makes it at its first ask, which a continued search has had
        sm.count_eigen, sm.count_tell, sm.last_update = (int(state[k]) for k in ("count_eigen", "count_tell", "last_update"))
        return search


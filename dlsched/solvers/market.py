r"""Ascending-price matching market with constricted sets (MODELS.md §4.3, step 2).

Buyers i need :math:`d_i` units; sellers are groups g of identical workers (one GPU type) with
:math:`s_g` units; a unit of g is worth :math:`v_{i,g}` to buyer i (additive valuation). Prices
:math:`p_g` start at 0; at prices p buyer i demands the groups of largest surplus
:math:`u_i = \max_g (v_{i,g} - p_g)`. Each round:

1. the demand graph (buyer i -- group g when g is in i's demand set) is tested for a
   *perfect matching* of buyer units to worker units, a bipartite b-matching computed as a
   maximum flow with networkx (source -> i: :math:`d_i`, i -> g: unbounded, g -> sink: :math:`s_g`);
2. if every buyer unit is matched the market clears; otherwise the buyers reachable from the
   source in the residual graph form a **constricted set** S: their demand-set neighbours
   N(S) are saturated and :math:`\sum_{i \in S} d_i > \sum_{g \in N(S)} s_g` (Hall's condition fails);
3. the prices of N(S) rise by the least amount that adds a new group to some demand set in S,
   :math:`\delta = \min_{i \in S} (u_i - \max_{g \notin N(S)} (v_{i,g} - p_g))` (exact, not a tick).

When :math:`\sum_i d_i < \sum_g s_g` a zero-valued *idle* buyer takes the spare units, so the
market clears with every worker sold. At clearing, every unit goes to a buyer who demands it:
:math:`(u, p)` is dual feasible and complementary to the allocation, so the allocation is a
maximum-weight assignment (Demange-Gale-Sotomayor / LP duality); tests compare it with the
Hungarian method. One price per group is the same as one price per worker: the workers of a
group are identical to every buyer.

**Round cap.** Where many buyers' values differ by little, each round may add only one buyer to a
demand set, and the market can run tens of thousands of tie-sized rounds (inflated OpenB where
capacity binds: 26,914 rounds in one call, issue 27). After ``ROUND_CAP`` rounds the market is
finished exactly by its LP instead: the max-weight b-matching (transportation problem)

.. math:: \max \sum_{i,g} v_{i,g} x_{i,g} \ \text{s.t.}\ \sum_g x_{i,g} = d_i,\
          \sum_i x_{i,g} \le s_g,\ x \ge 0,

idle buyer included, whose constraint matrix is totally unimodular, so a vertex (dual simplex) is
integral. Its group-row duals are the prices: :math:`p_g \ge 0` and :math:`u_i + p_g \ge v_{i,g}`
with equality where :math:`x_{i,g} > 0` (complementary slackness), the same dual feasibility as at
the market's clearing. Ties may be broken differently from the market's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import networkx as nx
from networkx.algorithms.flow import edmonds_karp
import numpy as np
from scipy import sparse

from dlsched.models.mcmdk import MatrixForm
from dlsched.result import Status
from dlsched.solvers.highs import solve_matrix

TIE = 1e-9
# rounds before the LP finish: the quick traces' markets (Gavel, OpenB 1,500 pods; full and incremental)
# clear in at most 48 rounds, so their decisions are the market's (more than 10x headroom)
ROUND_CAP = 500


@dataclass
class MarketOutcome:
    alloc: np.ndarray        # (n, G) units of group g bought by buyer i
    prices: np.ndarray       # (G,)
    rounds: int
    welfare: float           # sum of v_{i,g} over the units sold to the real buyers


class MarketError(RuntimeError):
    pass


def _demand_sets(values: np.ndarray, prices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    surplus = values - prices
    best = surplus.max(axis=1)
    scale = TIE * np.maximum(1.0, np.abs(values).max(axis=1))
    return surplus >= (best - scale)[:, None], best


def clear(values: np.ndarray, demand: np.ndarray, supply: np.ndarray, *, prices: np.ndarray | None = None,
          max_rounds: int = ROUND_CAP, stop: Callable[[], bool] | None = None) -> MarketOutcome | None:
    """Run the ascending-price market to clearing (see the module docstring).

    ``prices`` warm-starts the market (e.g. with the prices of a similar market): the clearing
    argument needs no particular start, because every buyer's surplus is measured from the
    current prices and a clearing allocation is optimal whatever prices support it.
    If it has not cleared after ``max_rounds`` rounds, the allocation and prices come from the
    LP (:func:`_lp_finish`, the module docstring's round cap); ``rounds`` is then ``max_rounds``.
    ``stop()`` true before a round ends the market without an allocation: None (a decision's budget
    spent; until it clears the market has no allocation to give).
    """
    values = np.asarray(values, dtype=float)
    demand = np.asarray(demand, dtype=np.int64)
    supply = np.asarray(supply, dtype=np.int64)
    n, G = values.shape
    if demand.sum() > supply.sum():
        raise MarketError(f"buyers need {int(demand.sum())} units, sellers have {int(supply.sum())}")
    spare = int(supply.sum() - demand.sum())
    if spare:  # the idle buyer: worth 0 everywhere
        values = np.vstack([values, np.zeros((1, G))])
        demand = np.concatenate([demand, [spare]])
    prices = np.zeros(G) if prices is None else np.array(prices, dtype=float)
    total = int(demand.sum())
    for rounds in range(1, max_rounds + 1):
        if stop is not None and stop():
            return None
        dset, best = _demand_sets(values, prices)
        # buyers with the same demand set are interchangeable in the matching: one node per
        # pattern (at most 2^G - 1) keeps the flow network tiny however many jobs there are
        code = dset.astype(np.int64) @ (1 << np.arange(G))
        patterns, inverse = np.unique(code, return_inverse=True)
        need = np.bincount(inverse, weights=demand).astype(np.int64)
        flow_value, S_pat, N = _min_cut(need.tolist(), patterns.tolist(), supply.tolist())
        if flow_value < total:
            # the market does not clear: the constricted set is the same for every maximum flow
            rows = np.flatnonzero(np.isin(inverse, list(S_pat)) & (demand > 0))
            outside = np.setdiff1d(np.arange(G), N)
            surplus = values[np.ix_(rows, outside)] - prices[outside]
            delta = float((best[rows] - surplus.max(axis=1)).min())
            prices[N] += max(delta, TIE * max(1.0, float(np.abs(values).max())))
            continue
        g = nx.DiGraph()
        g.add_nodes_from(["s", "t"])
        for q, pat in enumerate(patterns.tolist()):
            if need[q]:
                g.add_edge("s", q, capacity=int(need[q]))
                for k in range(G):
                    if pat >> k & 1:
                        g.add_edge(q, ("g", k))  # unbounded
        for k in range(G):
            if supply[k]:
                g.add_edge(("g", k), "t", capacity=int(supply[k]))
        # it clears: the allocation is this flow's, split among each pattern's buyers
        flow_value, flow = nx.maximum_flow(g, "s", "t", flow_func=edmonds_karp)
        alloc = _split(flow, patterns, inverse, demand, G)
        welfare = float((alloc[:n] * values[:n]).sum())
        return MarketOutcome(alloc[:n], prices, rounds, welfare)
    alloc, prices = _lp_finish(values, demand, supply)
    welfare = float((alloc[:n] * values[:n]).sum())
    return MarketOutcome(alloc[:n], prices, max_rounds, welfare)


def _lp_finish(values: np.ndarray, demand: np.ndarray, supply: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The market's LP (module docstring, round cap) by HiGHS (:func:`dlsched.solvers.highs.solve_matrix`,
    its dual simplex): the integral allocation (rounded, then checked) and the group-row duals as prices."""
    m, G = values.shape
    # x_{i,g} at column i*G + g: buyer rows sum a row's G columns (= d_i), group rows every G-th column (<= s_g)
    cols = np.arange(m * G)
    M = sparse.csr_matrix((np.ones(2 * m * G), (np.concatenate([cols // G, m + cols % G]), np.concatenate([cols, cols]))),
                          shape=(m + G, m * G))
    inf = np.full(G, np.inf)
    mf = MatrixForm(values.ravel().astype(float), M, np.concatenate([demand, -inf]).astype(float),
                    np.concatenate([demand, supply]).astype(float), np.zeros(m * G), np.full(m * G, np.inf),
                    np.zeros(m * G, dtype=np.int32), "max", G)
    res = solve_matrix(mf, want_duals=True)
    if res.status != Status.OPTIMAL:
        raise MarketError(f"the market's LP did not solve: {res.termination}")
    x = res.x.reshape(m, G)
    alloc = np.rint(x).astype(np.int64)
    if (np.abs(x - alloc).max(initial=0.0) > 1e-6 or not np.array_equal(alloc.sum(axis=1), demand)
            or np.any(alloc.sum(axis=0) > supply) or np.any(alloc < 0)):
        raise MarketError("the market's LP answer is not an integral allocation")
    # a maximisation's dual of a binding <= row is >= 0 in HiGHS's convention: p_g
    prices = np.maximum(res.row_dual[m:], 0.0)
    return alloc, prices


def _split(flow: dict, patterns: np.ndarray, inverse: np.ndarray, demand: np.ndarray, G: int) -> np.ndarray:
    """Hand each pattern's units of every group to its buyers (all of them demand those groups): the
    buyers in order, each filled from the groups in order (the flow's, ascending), one group used up
    before the next. Buyer i's units of group k are the overlap of its interval of the cumulated
    demands with group k's of the cumulated flows (a loop per buyer was 30 % of a hetplace decision
    over 1,450 OpenB pods)."""
    alloc = np.zeros((inverse.size, G), dtype=np.int64)
    for q in range(patterns.size):
        rows = np.flatnonzero(inverse == q)
        f = np.zeros(G, dtype=np.int64)
        for node, units in flow.get(q, {}).items():
            if units > 0:
                f[node[1]] = units
        d = demand[rows].astype(np.int64)
        D, F = np.cumsum(d), np.cumsum(f)
        lo = np.maximum((D - d)[:, None], (F - f)[None, :])
        alloc[rows] = np.maximum(np.minimum(D[:, None], F[None, :]) - lo, 0)
    return alloc


def _min_cut(need: list, patterns: list, supply: list) -> tuple[int, set[int], np.ndarray]:
    """The maximum flow's value of a round's network (source -> pattern q: ``need[q]``, q -> group k
    where bit k of ``patterns[q]`` is set: unbounded, k -> sink: ``supply[k]``), and the patterns and
    groups reachable from the source in its residual graph: the least source side of a minimum cut,
    the same for every maximum flow (so a round that does not clear needs no particular flow). Augmenting
    paths by breadth-first search (Edmonds-Karp) on at most 2^G - 1 + G nodes, in integers: a round of
    networkx's graph and flow cost a market of 2,000 jobs half its time."""
    G = len(supply)
    Q = len(patterns)
    src = list(need)                                  # residual source -> q
    back = [[0] * G for _ in range(Q)]                # flow q -> k (its reverse residual)
    sink = list(supply)                               # residual k -> sink
    links = [[k for k in range(G) if p >> k & 1] for p in patterns]
    value = 0
    while True:
        # breadth-first search from the source: patterns 0..Q-1, groups Q..Q+G-1
        came = {}
        queue = [q for q in range(Q) if src[q] > 0]
        for q in queue:
            came[q] = None
        found = None
        i = 0
        while i < len(queue) and found is None:
            u = queue[i]
            i += 1
            if u < Q:
                for k in links[u]:
                    if Q + k not in came:
                        came[Q + k] = u
                        if sink[k] > 0:
                            found = Q + k
                            break
                        queue.append(Q + k)
            else:
                k = u - Q
                for q in range(Q):
                    if back[q][k] > 0 and q not in came:
                        came[q] = u
                        queue.append(q)
        if found is None:
            S = {u for u in came if u < Q}
            return value, S, np.array(sorted(u - Q for u in came if u >= Q), dtype=np.int64)
        path = [found]
        while came[path[-1]] is not None:
            path.append(came[path[-1]])
        path.reverse()                                # q0, g, q, g, ..., found
        amount = min(src[path[0]], sink[found - Q])
        for a, b in zip(path[1:-1:2], path[2::2]):    # each group -> pattern step undoes flow
            amount = min(amount, back[b][a - Q])
        src[path[0]] -= amount
        sink[found - Q] -= amount
        for a, b in zip(path[0::2], path[1::2]):      # pattern -> group: more flow
            back[a][b - Q] += amount
        for a, b in zip(path[1:-1:2], path[2::2]):    # group -> pattern: less flow
            back[b][a - Q] -= amount
        value += amount

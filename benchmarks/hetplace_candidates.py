"""Candidate changes to hetplace's exchange between GPU types, on generated traces, beside the shipped rule.

    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data python benchmarks/hetplace_candidates.py \\
        --spec 'gavel:14:{seed}:bursts=1,burst_jobs=14' --seeds 1-20 --variants shipped,incumbent,held
    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data python benchmarks/hetplace_candidates.py --lists --seeds 1-20

Each variant is ``hetplace`` (order srpt, exchange on) with one part of its decision changed (a subclass here,
none of them shipped; docs/hetplace.md, "What is left of the gap"):

* ``shipped``: the policy as it is;
* ``incumbent``: the previous decision's types (each admitted job that runs on one type pinned there, the rounds
  deciding the others) kept where their projected F is below the exchange's answer's;
* ``incsearch``: the exchange started from the lower-F of the rounds' types and the incumbent's, a promotion
  placed before the incumbent's pins (which the rounds then re-decide where it displaces them);
* ``held``: the exchange whose projection keeps its promotions on their types at every completion while they
  live (the shipped projection lets the rounds re-decide them);
* ``waiting``: the jobs srpt's admission leaves waiting go through the rounds (and the exchange) too, each at
  its smallest size, so that a type may go to a waiting job before an admitted one falls to it (an admitted job
  that no single type then holds spans types as before, a waiting one waits); ``waitrounds``: the same, the
  exchange over the admitted jobs alone;
* ``slotS``: the policy re-decided every S seconds as well as at arrivals and completions (Gavel's rounds);
* ``threshD`` / ``hystD``: the exchange's answer kept only where it lowers F by a share D / the incumbent kept
  unless the new types lower F by a share D (migrations held).

Every variant of a seed runs on the same trace in one process, side by side (``--speed throughput``,
``36:36:36``); the table gives each variant's mean average JCT over the seeds, its change against ``shipped``,
the seeds better and worse, and CPU seconds (``time.process_time``). ``--lists``: per burst seed, the best
*static priority list* found offline (each job in the list's order on its fastest type with room, GPUs of a
type pooled, re-decided at every completion, migrations free; insertion local search from srpt's order and
19 seeded random orders) beside ``shipped``'s simulated average JCT and the LP bound by type: whether the
policy's gap to the bound is a gap to what a clairvoyant list schedule reaches.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from dlsched.instance.traces import load_trace
from dlsched.policies import type_exchange as tx
from dlsched.policies.hetplace import NEGLIGIBLE, HetPlace
from dlsched.sim.bounds import lp_lower_bound
from dlsched.sim.engine import simulate
from dlsched.sim.policy import Placement
from dlsched.sim.run import load_cluster
from dlsched.sim.speed import make_speed


def seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def replay(m: tx.TypeModel, t: np.ndarray, assign) -> float:
    """F of the replay from types ``t`` that ``assign(rem, alive)`` decides again at every completion (as
    :func:`type_exchange.projected` before its spans, one replay at a time: a job without a type waits, as these
    variants were measured); inf if the jobs left cannot run."""
    n = m.rem.size
    rem, alive, now, total = m.rem.copy(), np.ones(n, dtype=bool), 0.0, 0.0
    while alive.any():
        on = alive & (t >= 0)
        if not on.any():
            return np.inf
        pace = np.where(on, m.pace[np.arange(n), np.maximum(t, 0)], 0.0)
        left = np.full(n, np.inf)
        np.divide(rem, pace, out=left, where=on)
        f = int(np.argmin(left))
        now += left[f]
        rem = rem - pace * left[f]
        done = on & (rem <= tx._DONE * m.rem)
        done[f] = True
        total += now * done.sum()
        alive &= ~done
        rem[done] = 0.0
        t = assign(rem, alive)
    return total


def projected_held(m: tx.TypeModel, t: np.ndarray, held: list[tuple[int, int]]) -> float:
    """F of ``t`` where the rounds at each completion place ``held`` (job, type) first while they live."""
    return replay(m, t, lambda rem, alive: tx.rounds(m, rem, alive, held))


def exchange_from(m: tx.TypeModel, pins: list[tuple[int, int]], held: bool) -> list[tuple[int, int]]:
    """:func:`~dlsched.policies.type_exchange.exchange`'s search (each job promoted at most once, the try of least
    F kept while it lowers F) from the rounds after ``pins``, each try's promotions placed before the pins;
    ``held``: F by :func:`projected_held` with the promotions held. The promotions, then the pins."""
    everyone = np.ones(m.rem.size, dtype=bool)

    def assign(prom):
        moved = {a for a, _ in prom}
        return tx.rounds(m, m.rem, everyone, prom + [p for p in pins if p[0] not in moved])

    def value(t, prom):
        return projected_held(m, t, prom) if held else tx.projected(m, t)
    prom: list[tuple[int, int]] = []
    cur = assign(prom)
    f_cur = value(cur, prom)
    while True:
        best = None
        for a in np.flatnonzero(cur >= 0).tolist():
            if a in {b for b, _ in prom}:
                continue
            pos = int(np.flatnonzero(m.rank[a] == cur[a])[0])
            for g in m.rank[a, :pos].tolist():
                if not m.ok[a, g]:
                    continue
                p2 = prom + [(a, int(g))]
                t = assign(p2)
                if t[a] != g or (t == cur).all():
                    continue
                f = value(t, p2)
                if f < (f_cur if best is None else best[0]) * (1 - 1e-12):
                    best = (f, p2, t)
        if best is None:
            moved = {a for a, _ in prom}
            return prom + [p for p in pins if p[0] not in moved]
        f_cur, prom, cur = best


class Candidate(HetPlace):
    """``hetplace`` with the exchange's search replaced by the variant ``mode`` (module docstring)."""

    mode = "shipped"

    def _incumbent(self, state, take: np.ndarray) -> list[tuple[int, int]]:
        pins = []
        for a, j in enumerate(take.tolist()):
            pl = state.allocation.get(j)
            kinds = {int(self.server_type[s]) for s in pl.workers} if pl is not None and pl.workers else set()
            if len(kinds) == 1 and -1 not in kinds:
                pins.append((a, kinds.pop()))
        return pins

    def _admitted(self, state, jobs, gpw, k):
        take, per = super()._admitted(state, jobs, gpw, k)
        if self.mode in ("waiting", "waitrounds"):
            rest = ~np.isin(jobs, take)
            best = self._rho_rows(state, jobs[rest], gpw[rest]).max(axis=1) * gpw[rest]
            order = np.argsort(np.asarray(state.remaining)[jobs[rest]] / best, kind="stable")
            self._waiting = (jobs[rest][order], gpw[rest][order])
            self._took = set(take.tolist())
        return take, per

    def _by_type(self, state, free, take, per, chosen):
        if self.mode not in ("waiting", "waitrounds"):
            return super()._by_type(state, free, take, per, chosen)
        extra, gpw = self._waiting
        return super()._by_type(state, free, np.r_[take, extra], np.r_[per, gpw],
                                chosen + [Placement({}, {})] * extra.size)

    def _place_one(self, state, free, j, pl, spans, pool=None):
        if self.mode in ("waiting", "waitrounds") and spans and j not in self._took:
            return None                             # a waiting job no single type holds waits
        return super()._place_one(state, free, j, pl, spans, pool)

    def _search(self, state, free, take, per, rho, sizes, clock):
        mode = self.mode.rstrip("0123456789.")
        if mode == "waitrounds":                    # the exchange over the admitted jobs alone
            n = len(self._took)
            return super()._search(state, free, take[:n], per[:n], rho[:n], sizes[:n], clock)
        if mode in ("shipped", "slot", "waiting"):
            return super()._search(state, free, take, per, rho, sizes, clock)
        cap = np.array([free[srv, self.g].sum() for srv in self.type_servers])
        m = tx.TypeModel(np.asarray(state.remaining)[take], np.array(sizes) * per, rho, per, cap, NEGLIGIBLE,
                         mixed=self._mixed, movable=self._movable(state, take))
        everyone = np.ones(take.size, dtype=bool)
        t0 = tx.rounds(m, m.rem, everyone)
        calm = bool((t0 == m.rank[:, 0]).all())
        first, f0, f = ([], *[tx.projected(m, t0)] * 2) if calm else tx.exchange(m, base=t0)
        if mode == "held":
            return ([] if calm else exchange_from(m, [], True)), not calm
        if mode == "thresh":
            return (first if f < f0 * (1 - float(self.mode[6:])) else []), not calm
        pins = self._incumbent(state, take)
        if not pins:
            return first, not calm
        f_inc = tx.projected(m, tx.rounds(m, m.rem, everyone, pins))
        if mode == "incumbent":
            return (pins if f_inc < f * (1 - 1e-12) else first), True
        if mode == "hyst":
            return (pins if f_inc <= f * (1 + float(self.mode[4:])) else first), True
        if mode == "incsearch":
            return exchange_from(m, pins if f_inc < f0 * (1 - 1e-12) else [], False), True
        raise ValueError(self.mode)

    def changes(self, state, events):
        if self.slot_seconds is not None and state.allocation and not any(e.kind != "timer" for e in events):
            self.last_answer = "full"
            return self._timed_full(state)          # the shipped policy does nothing at a timer
        return super().changes(state, events)


def make(mode: str) -> Candidate:
    slot = float(mode[4:]) if mode.startswith("slot") else None
    return type(f"Candidate_{mode}", (Candidate,), {"mode": mode, "slot_seconds": slot})()


def pooled_model(trace, cluster, speed) -> tx.TypeModel:
    """Every job of ``trace`` at its smallest size in the pooled model, its rate on each type from ``speed``
    (its workers on the fewest servers of the type)."""
    types = sorted(set(cluster.gpu_type))
    g = cluster.index("gpu")
    n = len(trace.jobs)
    rate, need = np.zeros((n, len(types))), np.zeros(n)
    for a, job in enumerate(trace.jobs):
        gpw = job.worker_demand.get("gpu", 1.0)
        need[a] = job.min_workers * gpw
        for k, kind in enumerate(types):
            workers, left = {}, job.min_workers
            for s in np.flatnonzero(np.array(cluster.gpu_type) == kind).tolist():
                workers[s] = min(int(cluster.capacity[s, g] // gpw), left)
                left -= workers[s]
                if not left:
                    break
            rate[a, k] = speed.rate(job, Placement(workers, {}), cluster)
    cap = np.array([cluster.capacity[np.array(cluster.gpu_type) == kind, g].sum() for kind in types])
    rho = np.where(rate > 0, rate / need[:, None], NEGLIGIBLE)
    return tx.TypeModel([j.iterations for j in trace.jobs], need, rho, np.ones(n), cap, NEGLIGIBLE)


def list_sum(m: tx.TypeModel, order: list[int]) -> float:
    """The sum of completion times of the static list ``order`` (module docstring); inf if jobs left cannot run."""

    def by_list(rem, alive):
        cap, t = m.cap.copy(), np.full(m.rem.size, -1)
        for a in order:
            g = next((g for g in m.rank[a].tolist() if alive[a] and m.ok[a, g] and m.need[a] <= cap[g] + 1e-9), None)
            if g is not None:
                t[a], cap[g] = g, cap[g] - m.need[a]
        return t

    return replay(m, by_list(m.rem, np.ones(m.rem.size, dtype=bool)), by_list)


def best_list(m: tx.TypeModel, rng: np.random.Generator, starts: int = 20) -> float:
    """The least :func:`list_sum` by insertion local search from srpt's order and ``starts`` - 1 random orders."""
    n, best = m.rem.size, np.inf
    for r in range(starts):
        order = rng.permutation(n).tolist() if r else np.argsort(m.rem / m.pace.max(axis=1), kind="stable").tolist()
        f, better = list_sum(m, order), True
        while better:
            better = False
            for i in range(n):
                for k in range(n):
                    trial = order[:i] + order[i + 1:]
                    trial.insert(k, order[i])
                    if i != k and (ft := list_sum(m, trial)) < f * (1 - 1e-12):
                        order, f, better = trial, ft, True
        best = min(best, f)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="gavel:14:{seed}:bursts=1,burst_jobs=14")
    ap.add_argument("--seeds", default="1-20", help="first-last (inclusive)")
    ap.add_argument("--variants", default="shipped,incumbent,incsearch,held")
    ap.add_argument("--lists", action="store_true", help="the best static list offline beside shipped and the bound")
    ap.add_argument("--cluster", default="36:36:36")
    args = ap.parse_args(argv)
    speed = make_speed("throughput")
    if args.lists:
        rows = []
        for seed in seeds(args.seeds):
            trace = load_trace(args.spec.format(seed=seed))
            cluster = load_cluster(args.cluster, trace)
            n = len(trace.jobs)
            sim = simulate(trace, cluster, make("shipped"), speed, seed=0).summary()["avg_jct"] / 3600
            bound = lp_lower_bound(trace, cluster, speed, slot_seconds=600.0)["bound"] / 3600
            arrival = np.mean([j.arrival for j in trace.jobs]) / 3600
            lst = best_list(pooled_model(trace, cluster, speed), np.random.default_rng(seed)) / n / 3600 - arrival
            rows.append((sim, lst, bound))
            print(f"seed {seed}: shipped {sim:.3f} h, best static list {lst:.3f} h, bound by type {bound:.3f} h", flush=True)
        sim, lst, bound = np.array(rows).T
        print(f"mean: shipped {sim.mean():.4f} h, best static list {lst.mean():.4f} h (below shipped on {int((lst < sim).sum())} "
              f"seeds), the lower of the two {np.minimum(sim, lst).mean():.4f} h, bound by type {bound.mean():.4f} h")
        return 0
    names = args.variants.split(",")
    jct, cpu = {v: [] for v in names}, dict.fromkeys(names, 0.0)
    for seed in seeds(args.seeds):
        trace = load_trace(args.spec.format(seed=seed))
        cluster = load_cluster(args.cluster, trace)
        for v in names:
            t = time.process_time()
            jct[v].append(simulate(trace, cluster, make(v), speed, seed=0).summary()["avg_jct"] / 3600)
            cpu[v] += time.process_time() - t
        print(f"seed {seed}: " + ", ".join(f"{v} {jct[v][-1]:.4f} h" for v in names), flush=True)
    base = np.array(jct[names[0]])
    for v in names:
        a = np.array(jct[v])
        se = (a - base).std(ddof=1) / np.sqrt(a.size) if a.size > 1 else np.nan    # paired, over the seeds
        print(f"{v:12s} mean {a.mean():.4f} h  {100 * (a.mean() / base.mean() - 1):+.3f} %  (paired s.e. {100 * se / base.mean():.3f} %)"
              f"  better {int((a < base * (1 - 1e-9)).sum())}  worse {int((a > base * (1 + 1e-9)).sum())}  CPU {cpu[v]:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Optimus's per-call shortcuts (stacked times, one-size jobs together, checkpoints only when
reached, kept placements' holdings remembered) decide exactly as the policy written one job at a
time: the reference below is Optimus with ``schedule`` and ``_place`` as they read before the
shortcuts (every ready job's :meth:`Optimus._times` and ``_record``, each kept job's holding
subtracted on its own). Whole runs on random traces mixing one-size jobs (every OpenB pod: a fixed
worker count, no PS or one PS, no loss curve) with elastic ones, with and without loss curves,
must give every job's start and completion time bit for bit, and the same estimation errors.
"""

import dataclasses
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.instance.workload import Trace
from dlsched.sim.engine import simulate
from dlsched.policies.optimus import Optimus, _fastest, marginal_gain_allocation, place_job, task_shares
from dlsched.sim.placement import usage
from dlsched.sim.policy import Decision


class Sublinear:
    """A speed with diminishing returns in workers and PSs (so that Optimus's fits have something to learn)."""

    def rate(self, job, placement, cluster) -> float:
        w, p = placement.n_workers, placement.n_ps
        base = 1.0 + (sum(map(ord, job.job_type)) % 7) / 3.0
        return base * w ** 0.8 * (p / (p + 0.5 * w) if job.uses_ps else 1.0) if w else 0.0


class Reference(Optimus):
    """Optimus one job at a time (the code before the shortcuts)."""

    def schedule(self, state, events):
        self._completed(state, events)
        self._index(state)
        active = [int(j) for j in state.active]
        for j in active:
            self._learn(j, state)
        ready = sorted((j for j in active if self._models[j].ready <= state.time + 1e-9), key=lambda j: (state.arrival[j], j))
        later = [self._models[j].ready for j in active if self._models[j].ready > state.time + 1e-9]
        times = [self._times(j, state) for j in ready]
        for j in ready:
            self._record(j, state)
        start = [(1 if state.jobs[j].uses_ps else 0, state.jobs[j].min_workers) for j in ready]
        idx = np.asarray(ready, dtype=np.int64)
        dw, dp = state.demand_w[idx], state.demand_p[idx]
        bottleneck = None
        if self.normalise == "cluster" and idx.size:
            asked = np.asarray(start, dtype=float).reshape(-1, 2)[:, :1] * dp + np.asarray(start, dtype=float).reshape(-1, 2)[:, 1:] * dw
            bottleneck = int(np.argmax(asked.sum(axis=0) / np.where(self._capacity > 0, self._capacity, np.inf)))
        scaled = times if self.gain == "absolute" else [T / _fastest(T) for T in times]
        divisor = self.normalise if self.normalise in ("amount", "none") else "share"
        shares = task_shares(dw, dp, self._capacity, bottleneck, divisor)
        sizes = marginal_gain_allocation(scaled, dw, dp, self._capacity, self._capacity, start, shares, pairs=self.pairs)
        return Decision(self._reference_place(state, {ready[i]: pw for i, pw in sizes.items()}, dict(zip(ready, times)),
                                              dict(zip(ready, start))),
                        next_call=min(later) if later else None)

    def _reference_place(self, state, sizes, times, start):
        free = state.cluster.capacity.astype(float).copy()
        out, moved = {}, []
        for j, (p, w) in sizes.items():
            old = state.allocation.get(j)
            if old is not None and (old.n_ps, old.n_workers) == (p, w):
                srv, rows = usage(old, state.demand_w[j], state.demand_p[j])
                free[srv] -= rows
                out[j] = old
            else:
                moved.append(j)
        cap = np.where(self._capacity > 0, self._capacity, 1.0)
        share = {j: float(np.max((sizes[j][0] * state.demand_p[j] + sizes[j][1] * state.demand_w[j]) / cap)) for j in moved}
        for j in sorted(moved, key=lambda j: (-share[j], j)):
            (p, w), (p0, w0), T = sizes[j], start[j], times[j]
            pl = place_job(free, state.demand_w[j], state.demand_p[j], w, p, state.cluster.capacity.max(axis=0))
            while pl is None and (w > w0 or p > p0):
                # shrink by the task that costs the least time: a worker (1) before a PS (0) only on a strictly smaller loss
                lose_w = T[p, w - 1] - T[p, w] if w > w0 else math.inf
                lose_p = T[p - 1, w] - T[p, w] if p > p0 else math.inf
                if w > w0 and (p <= p0 or (lose_w, 1) < (lose_p, 0)):
                    w -= 1
                else:
                    p -= 1
                pl = place_job(free, state.demand_w[j], state.demand_p[j], w, p, state.cluster.capacity.max(axis=0))
            if pl is not None:
                srv, rows = usage(pl, state.demand_w[j], state.demand_p[j])
                free[srv] -= rows
                out[j] = pl
        return out


def _mixed_trace(n, seed):
    """DL2 jobs (elastic PS jobs with loss curves), some made one-size (with one PS or none), some without curves."""
    rng = np.random.default_rng(seed)
    jobs = []
    for j in dl2_trace(n, seed=seed, max_epochs=60, types=("resnet-50", "vgg-16", "seq2seq")).jobs:
        kind = rng.integers(0, 4)
        k = int(rng.integers(1, 4))
        # fractional CPUs, so that the order of the subtractions from what is free shows in the last bits
        j = dataclasses.replace(j, worker_demand={**j.worker_demand, "cpu": float(rng.choice([0.1, 0.3, 0.7, 1.1]))})
        if kind == 0:        # one size, one PS
            j = dataclasses.replace(j, min_workers=k, max_workers=k, max_ps=1, convergence=None)
        elif kind == 1:      # one size, no PS
            j = dataclasses.replace(j, min_workers=k, max_workers=k, max_ps=0, ps_demand={}, convergence=None)
        elif kind == 2:      # elastic, no loss curve
            j = dataclasses.replace(j, convergence=None)
        jobs.append(j)
    return Trace(tuple(jobs), f"mixed {n} seed {seed}")


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 40), servers=st.integers(1, 3),
       options=st.sampled_from([{}, {"slot_seconds": None}, {"gain": "relative"}, {"pairs": True, "normalise": "task"}]))
def test_whole_runs_identical(seed, n, servers, options):
    trace = _mixed_trace(n, seed)
    runs = []
    for pol in (Optimus(**options), Reference(**options)):
        res = simulate(trace, dl2_cluster(servers), pol, Sublinear(), seed=seed, restart_seconds=5.0)
        runs.append((res, pol.error_records()))
    (a, ea), (b, eb) = runs
    assert a.status == b.status
    assert np.array_equal(a.first_start, b.first_start, equal_nan=True)
    assert np.array_equal(a.completion, b.completion, equal_nan=True)
    assert repr(ea) == repr(eb)


def test_the_one_size_shortcut_is_taken():
    """On a trace of one-size jobs only, after the first completion every ready job's time comes from the shortcut."""
    trace = _mixed_trace(20, 3)
    trace = Trace(tuple(dataclasses.replace(j, min_workers=1, max_workers=1, max_ps=1, convergence=None) for j in trace.jobs), "one size")
    pol = Optimus()
    calls = []
    real = pol._times
    pol._times = lambda j, state: calls.append(j) or real(j, state)
    res = simulate(trace, dl2_cluster(2), pol, Sublinear(), seed=0)
    assert res.status == "completed"
    first_done = np.nanmin(res.completion)
    assert calls and all(res.arrival[j] <= first_done for j in calls)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(0, 200), servers=st.integers(1, 12))
def test_kept_holdings_subtract_in_order(seed, n, servers):
    """``np.subtract.at`` (Optimus._place, kept jobs) takes every row off in the order given: the
    free capacity bit for bit as one job after another."""
    rng = np.random.default_rng(seed)
    free = rng.uniform(0, 50, (servers, 3))
    held = [(np.sort(rng.choice(servers, int(rng.integers(1, servers + 1)), replace=False)), None) for _ in range(n)]
    held = [(srv, rng.uniform(0, 1, (srv.size, 3))) for srv, _ in held]
    want = free.copy()
    for srv, rows in held:
        want[srv] -= rows
    got = free.copy()
    if held:
        np.subtract.at(got, np.concatenate([s for s, _ in held]), np.concatenate([r for _, r in held]))
    assert got.tobytes() == want.tobytes()

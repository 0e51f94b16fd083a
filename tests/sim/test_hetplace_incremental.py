"""hetplace's incremental decisions (``-P incremental=true``, docs/hetplace.md, "Incremental decisions"):
the full pipeline every ``refresh`` decisions, between them only the jobs an event lets start."""

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.policies import hetplace as ph
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from dlsched.sim.placement import task_slots
from dlsched.sim.policy import Changes
from tests.sim.helpers import Audit, LinearSpeed, TypedSpeed, job, openb_like, trace, typed_cluster


def _digest(res) -> list:
    """Every job's first start and completion: the run's decisions as the lead's digests read them."""
    return [(float(s), float(c)) for s, c in zip(res.first_start, res.completion)]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40))
def test_refresh_1_makes_the_from_scratch_decisions(seed, n):
    tr, cl, speed = openb_like(seed, n)
    runs = [simulate(tr, cl, make_policy("hetplace", **kw), speed)
            for kw in ({"order": "arrival"}, {"incremental": True, "refresh": 1})]
    assert runs[0].status == runs[1].status == "completed"
    assert _digest(runs[0]) == _digest(runs[1])


class _Checked(ph.HetPlace):
    """Incremental hetplace that checks, after every incremental decision, that no waiting one-worker job
    without PSs fits the free room the decision leaves (what the kept room and the retries must ensure)."""

    def reset(self, ctx):
        super().reset(ctx)
        self.misses, self.steps = [], 0

    def changes(self, state, events):
        out = super().changes(state, events)
        if not isinstance(out, Changes):
            return out
        self.steps += 1
        free = state.free.copy()
        for j, pl in out.place.items():
            for s, k in pl.workers.items():
                free[s] -= k * state.demand_w[j]
            for s, k in pl.ps.items():          # a PS holds room too (seed 7855, n 36: a PS job's CPUs)
                free[s] -= k * state.demand_p[j]
        cap = int(state.cluster.capacity[:, self.g].sum())
        gpu_jobs = sum(1 for j in [*state.running.tolist(), *out.place] if round(state.demand_w[j, self.g]) >= 1)
        for j in state.active.tolist():
            if j in state.allocation or j in out.place or state.jobs[j].max_workers > 1 or state.jobs[j].uses_ps:
                continue
            if round(state.demand_w[j, self.g]) >= 1 and gpu_jobs >= cap:
                continue                                  # one GPU job per GPU: it may wait
            if task_slots(free, state.demand_w[j]).max() >= 1:
                self.misses.append((state.time, j))
        return out


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40), refresh=st.sampled_from([2, 5, 1000]))
@example(seed=7855, n=36, refresh=1000)        # PS jobs beside a job that would fit only without their PSs
def test_incremental_decisions_keep_capacity_and_start_every_job_that_fits(seed, n, refresh):
    tr, cl, speed = openb_like(seed, n, arrivals=40)
    pol = _Checked(incremental=True, refresh=refresh, refresh_gap=10.0)
    audit = Audit(pol)
    res = simulate(tr, cl, audit, speed)
    assert res.status == "completed" and res.completed.all()
    assert not audit.problems, audit.problems[:3]
    assert not pol.misses, pol.misses[:3]


def test_a_completion_starts_the_job_waiting_for_its_room():
    """Only the first decision is a full one: the second job, which found no room at its arrival, starts
    when the first ends, on the room that completion freed."""
    cl = typed_cluster({"k80": 1}, gpus=2)
    tr = trace(job("a", 0.0, 10.0, gpus=2), job("b", 1.0, 5.0, gpus=2))
    pol = make_policy("hetplace", incremental=True, refresh=1000)
    res = simulate(tr, cl, pol, TypedSpeed({"k80": 1.0}))
    assert res.status == "completed"
    assert res.first_start[1] == res.completion[0] == 10.0
    assert pol.full_solves == 1


def test_a_full_decision_every_refresh_decisions():
    cl = typed_cluster({"k80": 1, "v100": 1}, gpus=2)
    tr = trace(*[job(f"j{i}", float(i), 3.0) for i in range(12)])
    for refresh in (1, 4, 1000):
        pol = make_policy("hetplace", incremental=True, refresh=refresh, refresh_gap=10.0)
        res = simulate(tr, cl, pol, TypedSpeed({"k80": 1.0, "v100": 2.0}))
        decisions = len(res.decision_seconds)        # an arrival or a completion each: no timers
        assert res.status == "completed" and pol.full_solves == -(-decisions // refresh), refresh


def test_a_gap_above_the_full_decisions_forces_a_full_one():
    """An elastic job started by an incremental decision on the one GPU of four left: its gap (against
    alone on four GPUs) exceeds the first decision's 0 by more than ``refresh_gap`` = 0.1, so the next
    decision is a full one."""
    cl = typed_cluster({"k80": 1}, gpus=4)
    tr = trace(job("a", 0.0, 30.0, min_workers=3), job("b", 1.0, 40.0, max_workers=4), job("c", 2.0, 1.0))
    runs = {}
    for gap in (0.1, 10.0):
        pol = make_policy("hetplace", incremental=True, refresh=1000, refresh_gap=gap)
        simulate(tr, cl, pol, LinearSpeed())
        runs[gap] = pol.full_solves
    assert runs[10.0] == 1 and runs[0.1] > 1


def test_incremental_decides_in_arrival_order_only():
    with pytest.raises(InputError, match="incremental"):
        make_policy("hetplace", incremental=True, order="srpt")
    assert np.isfinite(make_policy("hetplace", incremental=True).refresh)


def test_only_an_incremental_decisions_gap_forces_a_full_one(monkeypatch):
    """A full decision's own gap (the pipeline's, against its Lagrangian bound) does not call for another
    full one: with every pipeline answer recorded at gap 0.5 and refresh_gap 0.05, the steps between
    (gap 0: every job at its one size on the one type) leave the first decision the only full one."""
    real = ph.hetplace

    def loose(view, opts, samples):
        res = real(view, opts, samples=samples)
        res.objective = 2.0 * res.bound
        return res

    monkeypatch.setattr(ph, "hetplace", loose)
    cl = typed_cluster({"k80": 2}, gpus=2)
    pol = make_policy("hetplace", incremental=True, refresh=1000, refresh_gap=0.05)
    res = simulate(trace(*[job(f"j{i}", float(i), 3.0) for i in range(8)]), cl, pol, TypedSpeed({"k80": 1.0}))
    assert res.status == "completed" and pol.full_solves == 1
    assert pol.decision_record.gaps[0] == pytest.approx(0.5) and max(pol.decision_record.gaps[1:]) == 0.0

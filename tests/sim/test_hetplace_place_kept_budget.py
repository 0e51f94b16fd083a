"""hetplace's placement in arrival order (``_place_kept``) stops at the whole call's budget (docs/hetplace.md,
"Decisions within a budget"): the jobs not yet placed wait, at least one GPU job runs, and the decision certifies
what runs. A fake clock that advances 1 ms per job placed again (never timed)."""

from __future__ import annotations

import numpy as np
import pytest


class _Now:
    t = 0.0


def _first_decision(monkeypatch, budget_ms):
    """hetplace (order arrival) deciding over 300 DL2 jobs (every GPU job a PS job: each placed again, one by one)
    on a clock that moves only when a job is placed again, 1 ms each: its decision, its policy, the GPU jobs
    placed, and the jobs placed again."""
    from dlsched.bench.decision import scene
    from dlsched.policies import hetplace
    from dlsched.policies.budget import DecisionRecord
    from dlsched.sim.engine import Simulation
    from dlsched.sim.policy import PolicyContext
    from dlsched.solvers.options import Budget

    class FakeBudget(Budget):
        def elapsed(self):
            return _Now.t - self.start

    class FakeHetPlace(hetplace.HetPlace):
        def _place_one(self, *a, **kw):
            _Now.t += 1e-3
            self.tries += 1
            return super()._place_one(*a, **kw)

    _Now.t = 0.0
    monkeypatch.setattr(DecisionRecord, "clock", lambda self: FakeBudget(
        self.seconds, start=_Now.t, margin=0.0 if self.seconds is None else self.seconds / 10))
    monkeypatch.setattr(hetplace, "Budget", FakeBudget)
    trace, cluster, speed = scene("dl2", 300, 0)
    sim = Simulation(trace, cluster, speed, seed=0)
    policy = FakeHetPlace(order="arrival", **({} if budget_ms is None else {"budget_ms": budget_ms}))
    policy.tries = 0
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    state = sim.state()
    decision = policy.schedule(state, events)
    sim.apply(decision, policy.name)              # the engine checks the answer (capacity, sizes)
    gpu = [j for j in decision if state.demand_w[j, policy.g] >= 1]
    return decision, policy, gpu, state


def test_the_arrival_order_placement_stops_at_the_budget_and_certifies_what_runs(monkeypatch):
    """Budget 100 ms: the placement's clock ends at the budget less its margin (10 ms) and the GPU-less pass's
    predicted time (REST_PRIOR per GPU-less job), so about that many ms of jobs are placed again, the others wait;
    the gap recorded is of the GPU jobs placed (their §4 JCT at their paces against each alone).
    Without a budget every GPU job that fits is placed (more than 100)."""
    from dlsched.policies import hetplace

    free, unbudgeted, free_gpu, _ = _first_decision(monkeypatch, None)
    monkeypatch.undo()
    decision, policy, gpu, state = _first_decision(monkeypatch, 100)
    other = sum(1 for j in decision if j not in set(gpu))
    limit_ms = 100 - 10 - hetplace.REST_PRIOR * 1e3 * sum(1 for j in free if j not in set(free_gpu))
    assert len(free_gpu) > 100 and unbudgeted.tries > 100
    assert policy._placement_cut and 1 <= len(gpu) < len(free_gpu)
    assert policy.tries == pytest.approx(limit_ms, abs=1.5)
    assert other == len(free) - len(free_gpu)                 # every GPU-less job runs, as without a budget
    rec = policy.decision_record
    assert rec.uncertified == 0 and len(rec.gaps) == 1 and 0 <= rec.gaps[0] < 1
    objective, bound = policy._linear_jct(state, np.array(gpu, dtype=np.int64))
    assert rec.objectives == [pytest.approx(objective)] and rec.gaps[0] == pytest.approx(1 - bound / objective)


def test_a_spent_budget_still_places_one_gpu_job(monkeypatch):
    """Budget 1 ms: the placement's clock is spent before it starts; one GPU job is placed (never an empty answer
    where one fits), the others wait."""
    decision, policy, gpu, _ = _first_decision(monkeypatch, 1)
    assert policy._placement_cut and len(gpu) == 1 and policy.tries == 1

"""fluid's certified gap is of the decision that runs (docs/simulator.md, "Decision budgets and certified gaps"): the
LP's value (fluid_value) of the first sizes after the fill against the LP's optimum, not the optimum against itself."""

from __future__ import annotations

import numpy as np
import pytest


def run_sizes(alloc, view):
    """(p, w) per job of ``view`` as the certificate values what runs: a job that waits at its first size, one PS and
    the fewest workers (FluidPolicy.record_run)."""
    sizes = alloc[view.jobs][:, ::-1].copy()
    waits = sizes[:, 1] == 0
    sizes[waits, 0], sizes[waits, 1] = 1, view.min_workers[waits]
    return sizes


def _certified_run(monkeypatch, budget_ms=None, n_jobs=12, seed=1, **params):
    """fluid on ``dl2_trace(n_jobs, seed)`` on one DL2 node (contended: the LP's shares and the fill differ), each
    decision's allocation and what its LP was (the arguments and value of the LP solved, or None) kept beside the
    record's objective and gap."""
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.policies import fluid
    from dlsched.policies.greedy import greedy_view
    from dlsched.registry import make_policy
    from dlsched.sim.engine import simulate
    from dlsched.sim.speed import make_speed

    seen, lps = [], []
    shares, allocate = fluid.fluid_shares, fluid.FluidPolicy.allocate

    def spy_shares(times, d, e, capacity, order, configs=None, time_limit=None, rest=None):
        out = shares(times, d, e, capacity, order, configs, time_limit, rest)
        lps.append((times, d, e, capacity, list(order), configs, rest, None if out is None else out[1]))
        return out

    def spy_allocate(self, inst, active):
        lps.clear()
        mark = self.decision_record.mark()
        alloc = allocate(self, inst, active)
        view = greedy_view(inst, active)
        rec = self.decision_record
        seen.append({"sizes": run_sizes(alloc, view), "lp": lps[-1] if lps else None,
                     "objectives": rec.objectives[mark[0]:], "gaps": rec.gaps[mark[1]:],
                     "uncertified": rec.uncertified - mark[2]})
        return alloc

    monkeypatch.setattr(fluid, "fluid_shares", spy_shares)
    monkeypatch.setattr(fluid.FluidPolicy, "allocate", spy_allocate)
    policy = make_policy("fluid", **({} if budget_ms is None else {"budget_ms": budget_ms}), **params)
    result = simulate(dl2_trace(n_jobs, seed), dl2_cluster(1), policy, make_speed("table"))
    assert result.status == "completed"
    return policy, seen


def test_an_unbudgeted_decision_records_the_lp_value_of_what_runs_against_the_lp_optimum(monkeypatch):
    """Every decision that solved its LP records fluid_value of the sizes it answers (recomputed here from the
    LP's own arguments) against the LP's optimum; on one contended node what runs is not the LP's phase 0, so some
    gaps are positive (on the code before, every gap was 0: the optimum against itself)."""
    from dlsched.policies.fluid import fluid_value
    from dlsched.result import relative_gap

    policy, seen = _certified_run(monkeypatch)
    solved = [s for s in seen if s["lp"] is not None and s["lp"][-1]]
    assert len(solved) > 5
    for s in solved:
        times, d, e, capacity, order, configs, rest, optimum = s["lp"]
        value = fluid_value(times, d, e, capacity, order, configs, s["sizes"], rest)
        assert s["objectives"] == [pytest.approx(value, rel=1e-12)]
        assert s["gaps"] == [pytest.approx(relative_gap(value, optimum, "min"), abs=1e-12)]
        assert s["gaps"][0] >= 0 and s["uncertified"] == 0
    assert max(s["gaps"][0] for s in solved) > 0.01
    assert policy.decision_record.uncertified == 0


def test_a_budgeted_lp_decision_records_the_same_as_an_unbudgeted_one(monkeypatch):
    """A budget that never binds (100 s): the same allocations, objectives and gaps as without a budget (the LP of
    the same 6 jobs, from nothing: under a budget without lp_jobs m adapts, and a warm start may end at another
    optimum)."""
    _, free = _certified_run(monkeypatch, lp_jobs=6)
    monkeypatch.undo()
    _, budgeted = _certified_run(monkeypatch, budget_ms=100_000, lp_jobs=6, incremental=False)
    assert len(free) == len(budgeted)
    for a, b in zip(free, budgeted):
        assert np.array_equal(a["sizes"], b["sizes"])
        assert a["objectives"] == pytest.approx(b["objectives"], rel=1e-9)
        assert a["gaps"] == pytest.approx(b["gaps"], abs=1e-9)


def test_a_certificate_predicted_not_to_fit_the_budget_is_not_computed_and_counts_uncertified(monkeypatch):
    """A decision under a 100 s budget whose certificate is predicted (its rate as measured before, here 200 s a
    job) to take more than the budget is counted as uncertified without evaluating fluid_value, and the rate is
    lowered by VALUE_DECAY for the next; at the prior rate the same decision is recorded with its gap."""
    from dlsched.bench.decision import one_decision, scene
    from dlsched.policies import fluid

    trace, cluster, speed = scene("dl2", 300)
    values = []
    value = fluid.fluid_value
    monkeypatch.setattr(fluid, "fluid_value", lambda *a, **kw: values.append(1) or value(*a, **kw))

    class Slow(fluid.FluidPolicy):
        def schedule(self, state, events):
            if self.decision_record.seconds is not None:
                self.value_rate = 200.0
            return super().schedule(state, events)

    policy = Slow(budget_ms=100_000, lp_jobs=10)
    got = one_decision(policy, trace, cluster, speed, first_ms=None)       # the first decision unbudgeted
    assert policy.last_answer == "lp" and got["uncertified"] and got["gap"] is None and got["objective"] is None
    assert policy.value_rate == pytest.approx(200.0 * fluid.VALUE_DECAY)
    assert len(values) == 1                             # the first decision's alone
    values.clear()
    fits = fluid.FluidPolicy(budget_ms=100_000, lp_jobs=10)
    got = one_decision(fits, trace, cluster, speed, first_ms=None)
    assert fits.last_answer == "lp" and not got["uncertified"] and got["gap"] >= 0 and len(values) == 2


def _kept_run(monkeypatch, value_rate=None, bound_rate=None, n_jobs=12, seed=1):
    """fluid under a 100 s budget (the LP of 6 jobs, from nothing) on ``dl2_trace(n_jobs, seed)`` on one DL2 node,
    whose every third LP is not solved (a kept answer: the last LP's shares), with a fake clock that stands still
    (the certificate's prediction is all that decides whether it fits). With ``value_rate`` / ``bound_rate`` each
    decision starts with those certificate rates (seconds per LP job). Per decision: its answer, the sizes that run
    ((p, w) per job of the view, a waiting job at one PS and the fewest workers), the LP's arguments, the record's
    objective, gap and uncertified count, what of the certificate it evaluated, and its rates after."""
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.policies import fluid
    from dlsched.policies.budget import DecisionRecord
    from dlsched.policies.greedy import greedy_view
    from dlsched.sim.engine import simulate
    from dlsched.sim.speed import make_speed
    from dlsched.solvers.options import Budget

    class StillBudget(Budget):
        def elapsed(self):
            return 0.0

    solve, value, bound, allocate = fluid.FluidLP.solve, fluid.fluid_value, fluid.fluid_bound, fluid.FluidPolicy.allocate
    solves, evaluated, seen = [0], [], []

    def every_third_unsolved(self, time_limit=None, start=None, basis=None):
        solves[0] += 1
        return fluid.FluidSolve(None, None, {}, None) if solves[0] % 3 == 0 else solve(self, time_limit, start, basis)

    def spy_allocate(self, inst, active):
        evaluated.clear()
        mark = self.decision_record.mark()
        alloc = allocate(self, inst, active)
        view = greedy_view(inst, active)
        rec = self.decision_record
        seen.append({"answer": self.last_answer, "sizes": run_sizes(alloc, view), "view": view,
                     "lp": (self.marks.get("lp_order"), self.marks.get("lp")),
                     "objectives": rec.objectives[mark[0]:], "gaps": rec.gaps[mark[1]:],
                     "uncertified": rec.uncertified - mark[2], "evaluated": list(evaluated),
                     "rates": (self.value_rate, getattr(self, "bound_rate", None))})
        return alloc

    class Rated(fluid.FluidPolicy):
        def schedule(self, state, events):
            if value_rate is not None:
                self.value_rate, self.bound_rate = value_rate, bound_rate
            return super().schedule(state, events)

    monkeypatch.setattr(DecisionRecord, "clock", lambda self: StillBudget(self.seconds, margin=self.seconds / 10))
    monkeypatch.setattr(fluid.FluidLP, "solve", every_third_unsolved)
    monkeypatch.setattr(fluid, "fluid_value", lambda *a, **kw: evaluated.append("value") or value(*a, **kw))
    monkeypatch.setattr(fluid, "fluid_bound", lambda *a, **kw: evaluated.append("bound") or bound(*a, **kw))
    monkeypatch.setattr(fluid.FluidPolicy, "allocate", spy_allocate)
    policy = Rated(budget_ms=100_000, lp_jobs=6, incremental=False)
    result = simulate(dl2_trace(n_jobs, seed), dl2_cluster(1), policy, make_speed("table"))
    assert result.status == "completed"
    return policy, seen


def test_a_kept_answer_records_the_lp_value_of_what_runs_after_the_fill_against_fluid_bound(monkeypatch):
    """A decision whose LP was not solved answers the last LP's shares and the fill; it records fluid_value of the
    sizes that run (recomputed here from the LP's arguments) against fluid_bound, as a decision from the LP records
    what runs against the LP's optimum (before, the kept answer's record was of the fastest sizes within its shares
    before the fill: the same as what runs at most decisions, not at 2 of the 13 kept answers of this trace)."""
    from dlsched.policies.fluid import fluid_bound, fluid_value
    from dlsched.result import relative_gap

    policy, seen = _kept_run(monkeypatch, n_jobs=20, seed=2)
    kept = [s for s in seen if s["answer"] == "kept shares"]
    assert len(kept) >= 3
    for s in kept:
        order, (times, configs, rest) = s["lp"]
        view = s["view"]
        value = fluid_value(times, view.d, view.e, view.capacity, order, configs, s["sizes"], rest)
        low = fluid_bound(times, view.d, view.e, view.capacity, order, configs, rest)
        assert s["objectives"] == [pytest.approx(value, rel=1e-12)]
        assert s["gaps"] == [pytest.approx(relative_gap(value, low, "min"), abs=1e-12)]
        assert s["uncertified"] == 0 and s["evaluated"] == ["value", "bound"]
    assert policy.decision_record.uncertified == 0


def test_a_kept_certificate_predicted_not_to_fit_the_budget_is_not_evaluated_and_counts_uncertified(monkeypatch):
    """With fluid_value at 5 s per LP job (30 s for the LP's 6) and fluid_bound at 45 s more, against the 100 s the
    still clock leaves: a decision from the LP (value alone, against the optimum) is certified; a kept answer
    (value and bound: 300 s) is counted uncertified with neither evaluated, and both rates lowered by VALUE_DECAY."""
    from dlsched.policies import fluid

    _, seen = _kept_run(monkeypatch, value_rate=5.0, bound_rate=45.0)
    kept = [s for s in seen if s["answer"] == "kept shares"]
    from_lp = [s for s in seen if s["answer"] == "lp" and len(s["lp"][0]) == 6]
    assert len(kept) >= 3 and len(from_lp) >= 3
    for s in kept:
        assert s["uncertified"] == 1 and s["objectives"] == [] and s["gaps"] == [] and s["evaluated"] == []
        assert s["rates"] == pytest.approx((5.0 * fluid.VALUE_DECAY, 45.0 * fluid.VALUE_DECAY))
    for s in from_lp:
        assert s["uncertified"] == 0 and len(s["gaps"]) == 1 and s["evaluated"] == ["value"]
        assert s["rates"][1] == 45.0

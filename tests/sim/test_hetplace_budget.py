"""hetplace's decision within its budget (docs/hetplace.md, "Decisions within a budget"): on a 2,000-job
state a clock that expires at each step of the pipeline in turn (the subgradient steps, the market's
rounds, the polish's exchanges, the categories after the first) still gives a non-empty allocation that
the engine applies, with a certified gap >= 0 against a bound that no allocation beats. A fake clock,
no timing: it expires at its k-th check, and records which step made each check."""

import functools
import math
import sys
import time

import pytest

from dlsched.bench.decision import scene
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.policy import PolicyContext
from dlsched.solvers.options import Budget


#: the steps of the pipeline that ask the budget (docs/hetplace.md, "Decisions within a budget")
STEPS = ("type_prices", "clear", "polish_counts", "pair_polish", "hetplace")


class FakeClock(Budget):
    """A budget that is spent from its ``k``-th check on (None: never); ``checks``: the step of the
    pipeline that asked, each time (the nearest caller among :data:`STEPS`)."""

    def __init__(self, k: int | None):
        super().__init__(1e-9, margin=0.0)
        self.k, self.checks = k, []
        # the clock the placement of a full answer stops at is a wall-clock budget from this start: put far ahead,
        # it never expires, so that only the steps above are cut (a placement stopped by the machine's speed is
        # certified by what runs, and would make the objectives compared here depend on the load)
        self.start = time.perf_counter() + 1e6

    def expired(self) -> bool:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name not in STEPS:
            frame = frame.f_back
        self.checks.append(frame.f_code.co_name if frame is not None else "?")
        return self.k is not None and len(self.checks) > self.k

    def remaining(self) -> float:
        return 0.0 if self.k is not None and len(self.checks) > self.k else math.inf


@functools.lru_cache(maxsize=None)
def _scene(mix):
    return scene(mix, 2000, 0)


def _decide(mix: str, k: int | None):
    """The decision at 1 s (after the one at 0, never cut) under a clock spent from its k-th check:
    (decision, its objective, its gap, that clock)."""
    trace, cluster, speed = _scene(mix)
    pol = make_policy("hetplace", budget_ms=10.0)
    sim = Simulation(trace, cluster, speed, seed=0)
    pol.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    clocks = [FakeClock(None), FakeClock(k)]
    clock = clocks[1]
    pol.decision_record.clock = lambda: clocks.pop(0)
    events = sim.advance(None)         # first: the state after the arrivals at 0 (arguments run left to right)
    sim.apply(pol.schedule(sim.state(), events), pol.name)
    # nothing measured: the pipeline decides (the first decision's 2,000 jobs would predict that 10 ms
    # cannot buy it, and the decision would be the anytime answer, test_hetplace_anytime.py)
    pol._full_cost = pol._full_whole = None
    events = sim.advance(1.0)
    decision = pol.schedule(sim.state(), events)
    sim.apply(decision, pol.name)                 # the engine checks capacity and sizes
    rec = pol.decision_record
    return decision, rec.objectives[-1], rec.gaps[-1], clock


@pytest.mark.parametrize("mix", ["gavel", "dl2"])
def test_a_decision_cut_at_each_step_is_feasible_with_a_certified_gap(mix):
    decision, ref, gap, clock = _decide(mix, None)
    assert len(decision) > 0 and gap >= 0
    # the first check of each step in the uncut decision: where the clock expires in turn
    firsts = {}
    for i, name in enumerate(clock.checks):
        firsts.setdefault(name, i)
    steps = {"type_prices", "hetplace"} | ({"clear", "polish_counts"} if mix == "gavel" else set())
    assert steps <= set(firsts), firsts
    objectives = {}
    for name, k in sorted(firsts.items(), key=lambda kv: kv[1]):
        decision, obj, gap, clock = _decide(mix, k)
        assert len(decision) > 0 and len(clock.checks) > k, name
        bound = obj * (1 - gap)
        assert gap >= 0 and bound <= ref * (1 + 1e-9), name      # a bound: no allocation beats it
        objectives[name] = obj
    assert objectives["type_prices"] > ref                        # the cut changed the answer

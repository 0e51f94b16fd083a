"""hetplace's anytime answer (docs/hetplace.md, "Decisions within a budget"): under ``budget_ms``, once the least
work of a full decision, measured at the last one and scaled to the active jobs, exceeds the budget, the decision
keeps the running jobs and starts the waiting ones that fit (``HetPlace._step``), with its certified gap; a full
decision's solver leaves room for what follows its cut. Measured times are set by hand (no timing); with a
generous budget the decisions stay the pipeline's."""

import functools

import numpy as np
import pytest

from dlsched.bench.decision import scene
from dlsched.policies import hetplace as ph
from dlsched.sim.engine import Simulation, simulate
from dlsched.sim.policy import PolicyContext
from tests.sim.helpers import job, trace, typed_cluster, TypedSpeed


class Slow(ph.HetPlace):
    """hetplace whose full decisions measure ``least`` seconds of least work each (no timing), ``after`` of them
    after the solver's cut (``HetPlace._full_cost``); None: as measured."""

    least: float | None = None
    after = 0.0

    def _timed_full(self, state):
        out = super()._timed_full(state)
        if self.least is not None:
            self._full_cost = (self.least, self.after, len(state.active))
        return out


@functools.lru_cache(maxsize=None)
def _scene(mix):
    return scene(mix, 2000, 0)


def _two_decisions(mix: str, least: float | None, after: float = 0.0, **params):
    """The decisions at 0 and 1 s (one arrival) of hetplace under ``params``, a full decision's least work
    measured as ``least`` seconds, ``after`` of them after the solver's cut (None: as measured): (policy,
    state at 1 s, allocation before, decision)."""
    trace, cluster, speed = _scene(mix)
    pol = Slow(**params)
    pol.least, pol.after = least, after
    sim = Simulation(trace, cluster, speed, seed=0)
    pol.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    sim.apply(pol.schedule(sim.state(), events), pol.name)
    events = sim.advance(1.0)
    state = sim.state()
    before = dict(state.allocation)
    decision = pol.schedule(state, events)
    sim.apply(decision, pol.name)              # the engine checks capacity and sizes
    return pol, state, before, decision


@pytest.mark.parametrize("mix", ["gavel", "dl2"])
def test_a_budget_below_the_least_work_makes_the_anytime_answer(mix):
    pol, state, before, decision = _two_decisions(mix, 0.2, budget_ms=100.0, order="arrival")
    assert pol.last_answer == "kept" and pol.kept_answers == 1
    # every running job keeps its placement, and the answer is never empty
    assert len(decision) >= len(before) > 0
    assert all(decision[j] is pl or decision[j] == pl for j, pl in before.items())
    gap, obj = pol.decision_record.gaps[-1], pol.decision_record.objectives[-1]
    assert 0 <= gap < 1 and obj > 0
    # the recorded gap is that of the kept jobs' §4 JCT against each alone (:meth:`_linear_jct`)
    jobs = np.fromiter(decision, dtype=np.int64)
    o, b = pol._linear_jct(state, jobs)
    assert obj == pytest.approx(o) and gap == pytest.approx((o - b) / o)


@pytest.mark.parametrize("mix", ["gavel", "dl2"])
def test_under_srpt_a_budget_below_the_least_work_makes_the_srpt_answer(mix):
    # (tests/sim/test_hetplace_srpt_budget.py has its decisions) on 2,000-job states of both mixes: the answer
    # applies (the engine checks it), runs jobs, and records the §4 JCT of what runs against each job alone
    pol, state, before, decision = _two_decisions(mix, 0.2, budget_ms=100.0, order="srpt")
    assert pol.last_answer in ("srpt", "srpt kept") and pol.srpt_answers == 1 and pol.kept_answers == 0
    after = decision                              # the whole allocation the answer makes
    assert len(after) > 0
    gap, obj = pol.decision_record.gaps[-1], pol.decision_record.objectives[-1]
    gpu = np.array([j for j in after if state.demand_w[j, pol.g] >= 1], dtype=np.int64)
    o, b = pol._linear_jct(state, gpu)
    assert obj == pytest.approx(o) and gap == pytest.approx((o - b) / o) and 0 <= gap < 1


@pytest.mark.parametrize("mix", ["gavel", "dl2"])
def test_a_budget_that_holds_keeps_the_pipelines_decision(mix):
    ref = _two_decisions(mix, None, order="arrival")[3]
    # least work within the budget: the pipeline decides again, as without a budget
    pol, state, _, decision = _two_decisions(mix, 0.05, budget_ms=100_000.0, order="arrival")
    assert pol.last_answer == "full" and pol.kept_answers == 0
    assert decision == ref
    # the least work is predicted in proportion to the active jobs: with twice as many measured, it fits
    pol.decision_record.seconds = 0.1
    pol._full_cost = (0.15, 0.0, 2 * len(state.active))
    assert not pol._over_budget(state)
    pol._full_cost = (0.15, 0.0, len(state.active))
    assert pol._over_budget(state)


def test_the_solver_leaves_room_for_what_follows_its_cut(monkeypatch):
    # the solver's clock ends the measured time after the cut (packing, placement) before the decision's
    seen = []
    real = ph.hetplace

    def spy(view, opts, **kw):
        seen.append(opts.clock.limit)
        return real(view, opts, **kw)

    monkeypatch.setattr(ph, "hetplace", spy)
    pol, state = _two_decisions("gavel", None, budget_ms=1000.0, order="arrival")[:2]
    least, after, jobs = pol._full_cost
    assert seen[0] == pytest.approx(0.9) and 0 < after <= least and jobs == len(state.active)
    seen.clear()
    # nothing measured at the first decision (the margin only: a tenth of the budget); the second also leaves
    # the measured 0.3 s (per active job) after its cut
    _two_decisions("gavel", 0.5, 0.3, budget_ms=1000.0, order="arrival")
    n = len(state.active)
    assert seen[0] == pytest.approx(0.9) and seen[1] == pytest.approx(0.9 - 0.3 * n / (n - 1))


@pytest.mark.parametrize("mix", ["gavel", "dl2"])
def test_paces_are_the_loops_to_the_bit(mix):
    pol, state, before, decision = _two_decisions(mix, None, order="arrival", incremental=True)
    jobs = np.fromiter(decision, dtype=np.int64)
    got = pol._paces(state, jobs, list(decision.values()))
    def pace_of(j, pl):          # the §4 view's sum of rho over the job's GPUs, job by job
        gpw = int(round(state.demand_w[j, pol.g]))
        rho = pol._rho_of(state, j)
        return 0.0 if gpw < 1 else float(sum(k * gpw * rho[pol.server_type[s]] for s, k in pl.workers.items()))

    want = np.array([pace_of(int(j), decision[j]) for j in jobs.tolist()])
    assert got.tolist() == want.tolist() and (got > 0).any()


def test_the_anytime_answer_under_srpt_starts_the_shortest_job():
    # one server of 4 GPUs; at 0 srpt runs j0, j4, j1, j2 and j3 waits; j5 (short) arrives at 0.5 and, as without
    # a budget, preempts the longest running job at once (every full decision's least work "lasts" 10 s, over the
    # 1 s budget: the srpt answer; the kept answer before it started j5 only once j0 ended at 10 s), and j3 that
    # arrived first starts after it (a budget the first decision holds: one it spends places only the jobs it has
    # time for)
    its = [10.0, 1e4, 1e4, 1e4, 5e3, 100.0]
    tr = trace(*[job(f"j{i}", 0.0 if i < 5 else 0.5, n) for i, n in enumerate(its)])
    pol = Slow(budget_ms=1000.0, order="srpt")
    pol.least = 10.0
    res = simulate(tr, typed_cluster({"v100": 1}, gpus=4), pol, TypedSpeed({"v100": 1.0}))
    assert res.status == "completed" and pol.srpt_answers >= 2
    assert res.first_start[5] == pytest.approx(0.5) and res.first_start[3] > res.first_start[5]


def test_a_run_under_a_budget_it_cannot_hold_completes():
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.sim.speed import make_speed
    pol = Slow(budget_ms=10.0)
    pol.least = 1.0                                           # every full decision's least work: 1 s
    res = simulate(dl2_trace(30, seed=1), dl2_cluster(), pol, make_speed("table"))
    assert res.status == "completed"
    assert pol.srpt_answers == len(pol.decision_record.gaps) - 1 > 0     # all but the first
    assert all(g >= 0 for g in pol.decision_record.gaps)

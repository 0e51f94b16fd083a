"""Decisions within a budget (dlsched/policies/budget.py, dlsched/solvers/anytime.py): the greedy
start is feasible, the Lagrangian bound never passes the optimum, a budgeted or POP decision is
bracketed by its certified bound, and the run reports latency and gap."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instance.core import MCMDK
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.policies.budget import DecisionRecord
from dlsched.policies.view import instance_view
from dlsched.registry import make_policy
from dlsched.sim.engine import Simulation
from dlsched.sim.policy import PolicyContext
from dlsched.sim.speed import TableSpeed
from dlsched.solvers.anytime import column_shares, greedy_choice, lagrangian_bound, pop_groups
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.smd import TIE_BREAK, decide, decide_anytime


def defer_core(costs, uses, b) -> MCMDK:
    """An exactly-one min core: per job a zero-use defer column (cost costs[j][0]) and its configurations."""
    ptr = np.concatenate([[0], np.cumsum([len(c) for c in costs])])
    A = np.concatenate([np.asarray(u, float).reshape(len(c), len(b)) for c, u in zip(costs, uses)]).T
    return MCMDK(np.concatenate(costs).astype(float), sp.csr_matrix(A), np.asarray(b, float), ptr, "min", "exactly_one")


def brute_force(core: MCMDK) -> float:
    best = np.inf
    A = core.A.toarray()
    for pick in itertools.product(*[range(k) for k in core.n_configs]):
        cols = core.job_ptr[:-1] + np.array(pick)
        if np.all(A[:, cols].sum(axis=1) <= core.b + 1e-9):
            best = min(best, float(core.value[cols].sum()))
    return best


@st.composite
def cores(draw):
    n, R = draw(st.integers(1, 5)), draw(st.integers(1, 2))
    costs, uses = [], []
    for _ in range(n):
        k = draw(st.integers(1, 3))
        costs.append([draw(st.floats(5, 50))] + [draw(st.floats(0.5, 50)) for _ in range(k)])
        uses.append([[0.0] * R] + [[draw(st.floats(0.1, 4)) for _ in range(R)] for _ in range(k)])
    return defer_core(costs, uses, [draw(st.floats(0.5, 8)) for _ in range(R)])


@settings(max_examples=80, deadline=None)
@given(core=cores())
def test_greedy_is_feasible_and_the_lagrangian_bound_never_passes_the_optimum(core):
    opt = brute_force(core)
    share = column_shares(core)
    choice = greedy_choice(core, share)
    cols = core.columns_of(choice)
    assert np.all(core.A[:, cols].toarray().sum(axis=1) <= core.b + 1e-9)
    assert core.value[cols].sum() >= opt - 1e-9
    upper = float(core.value[cols].sum())
    at_zero, _ = lagrangian_bound(core.value, share, core.job_ptr, upper, iters=1)
    best, prices = lagrangian_bound(core.value, share, core.job_ptr, upper)
    assert at_zero <= best <= opt + 1e-7 * max(1.0, opt)
    assert (prices >= 0).all()
    # the greedy at the Lagrangian prices is feasible too
    cols = core.columns_of(greedy_choice(core, share, prices=prices))
    assert np.all(core.A[:, cols].toarray().sum(axis=1) <= core.b + 1e-9) and core.value[cols].sum() >= opt - 1e-9
    # at λ = 0 the bound is every job at its cheapest configuration
    assert at_zero == pytest.approx(np.minimum.reduceat(core.value, core.job_ptr[:-1]).sum())


def test_the_bound_closes_on_a_contended_two_job_core():
    # two jobs, each 10 to wait or 1 to run on the one unit: OPT = 11; λ = 0 gives only 2
    core = defer_core([[10.0, 1.0], [10.0, 1.0]], [[[0.0], [1.0]], [[0.0], [1.0]]], [1.0])
    share = column_shares(core)
    assert greedy_choice(core, share).tolist() in ([1, 0], [0, 1])
    assert lagrangian_bound(core.value, share, core.job_ptr, 11.0)[0] == pytest.approx(11.0, rel=1e-6)


def test_greedy_keeps_the_fixed_configurations_that_fit():
    core = defer_core([[10.0, 1.0, 2.0], [10.0, 1.0]], [[[0.0], [2.0], [1.0]], [[0.0], [1.0]]], [2.0])
    share = column_shares(core)
    # alone, job 1 (the best saving per share) runs and job 0 takes its smaller configuration
    assert greedy_choice(core, share).tolist() == [2, 1]
    fixed = np.array([1, -1])                       # job 0 kept on its first configuration (column 1): all of it
    assert greedy_choice(core, share, fixed).tolist() == [1, 0]


def test_pop_groups_partition_the_items():
    groups = pop_groups(10, 4, np.random.default_rng(0))
    assert [g.size for g in groups] == [3, 3, 2, 2]
    assert np.array_equal(np.sort(np.concatenate(groups)), np.arange(10))
    assert len(pop_groups(2, 16, np.random.default_rng(0))) == 2


@pytest.fixture(scope="module")
def busy_view():
    cl = dl2_cluster(4)
    tr = dl2_trace(40, seed=2)
    return instance_view(tr.jobs, cl, TableSpeed()), np.arange(40)


@pytest.mark.parametrize("budget_ms,pop_k", [(None, 1), (1, 1), (None, 4), (1, 4)])
def test_a_budgeted_or_partitioned_decision_is_bracketed_by_its_bound(busy_view, budget_ms, pop_k):
    view, active = busy_view
    kw = {"slot_aware": True, "wait_slots": 1.0, "tie_break": TIE_BREAK}
    _, exact, _ = decide(view, active, SolveOptions(threads=1), **kw)
    assert exact.optimal
    rec = DecisionRecord(budget_ms)
    opts = replace(SolveOptions(threads=1), time_limit=rec.seconds, budget=rec.clock())
    dec = decide_anytime(view, active, opts, pop_k=pop_k, rng=np.random.default_rng(1), **kw)
    tol = 1e-7 * exact.objective
    assert dec.bound <= exact.objective + tol <= dec.objective + 2 * tol
    used = dec.alloc[:, :1] * view.d + dec.alloc[:, 1:2] * view.e
    assert np.all(used.sum(axis=0) <= view.capacity + 1e-9)
    assert (dec.alloc[:, 0] > 0).any()                     # never an empty answer
    if budget_ms is None and pop_k == 1:
        assert dec.objective == pytest.approx(exact.objective) and dec.bound == pytest.approx(exact.objective)


def _first_argmin_sorting(x, job_ptr):
    # the sort it replaces, written plainly: the first column of each job at its minimum
    m = np.minimum.reduceat(x, job_ptr[:-1])
    counts = np.diff(job_ptr)
    at = np.flatnonzero(x <= np.repeat(m, counts))
    return m, at[np.unique(np.repeat(np.arange(counts.size), counts)[at], return_index=True)[1]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.5, np.inf]), min_size=1, max_size=4), min_size=1, max_size=12))
def test_segment_argmin_is_the_first_column_at_each_minimum(segments):
    from dlsched.solvers.anytime import _segment_argmin
    x = np.array([v for seg in segments for v in seg])
    ptr = np.concatenate([[0], np.cumsum([len(seg) for seg in segments])])
    got, want = _segment_argmin(x, ptr), _first_argmin_sorting(x, ptr)
    assert np.array_equal(got[0], want[0]) and got[1].tolist() == want[1].tolist()


def test_a_spent_budget_stops_the_lagrangian_steps_and_the_subproblems(busy_view):
    from dlsched.solvers.options import Budget
    from dlsched.solvers.smd import epoch_core, parametric, select_jobs
    view, active = busy_view
    core = epoch_core(view, select_jobs(view, active), slot_aware=True, wait_slots=1.0, tie_break=TIE_BREAK)
    share = column_shares(core)
    spent = Budget(1e-9)
    at_zero = lagrangian_bound(core.value, share, core.job_ptr, np.inf, iters=1)[0]
    assert lagrangian_bound(core.value, share, core.job_ptr, np.inf, clock=spent)[0] == at_zero
    best, prices = lagrangian_bound(core.value, share, core.job_ptr, float(core.value[core.job_ptr[:-1]].sum()))
    assert best > at_zero                               # contended: the steps raise the bound
    assert lagrangian_bound(core.value, share, core.job_ptr, np.inf, start=prices, clock=spent)[0] == pytest.approx(best)
    warm = greedy_choice(core, share)
    out = parametric(core, SolveOptions(threads=1, budget=spent), warm=warm)
    assert out.iterations == 0 and np.array_equal(out.choice, warm)
    # an unspent budget solves on
    assert parametric(core, SolveOptions(threads=1), warm=warm).iterations > 0


@pytest.mark.parametrize("name,params,field", [
    ("smd", {"budget_ms": 0}, "budget_ms"), ("smd", {"budget_ms": "fast"}, "budget_ms"),
    ("smd", {"pop_k": 0}, "pop_k"), ("hetplace", {"budget_ms": -5}, "budget_ms"),
    ("fluid", {"budget_ms": float("inf")}, "budget_ms"), ("fluid", {"lp_jobs": 0}, "lp_jobs"),
    ("optimus", {"budget_ms": 0}, "budget_ms")])
def test_bad_budget_parameters_name_the_parameter(name, params, field):
    with pytest.raises(InputError, match=field):
        make_policy(name, **params)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("policy", ["smd", "hetplace", "fluid", "optimus"])
def test_simulate_reports_latency_and_certified_gap(capsys, policy):
    code, out, _ = run(capsys, "simulate", "dl2:12:3", "--policy", policy, "--speed", "table",
                       "--decision-budget", "200", "--json")
    assert code == 0
    doc = json.loads(out)
    lat, gap = doc["decision_latency_ms"], doc["decision_gap"]
    assert doc["status"] == "completed"
    assert 0 < lat["median"] <= lat["p99"] <= lat["max"]
    assert 1 <= gap["decisions"] <= doc["decision_calls"] and 0 <= gap["mean"] <= gap["max"]


def test_a_policy_without_a_budget_reports_latency_only(capsys):
    code, out, err = run(capsys, "simulate", "dl2:8:3", "--cluster", "dl2:4", "--policy", "fifo", "--speed", "table",
                         "--decision-budget", "10", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["decision_gap"] is None and doc["decision_latency_ms"]["max"] > 0
    assert "takes no decision budget" in err
    code, _, err = run(capsys, "simulate", "dl2:8:3", "--cluster", "dl2:4", "--policy", "smd", "--decision-budget", "0")
    assert code == 2 and "--decision-budget" in err


@pytest.mark.parametrize("policy,mix", [("smd", "dl2"), ("hetplace", "gavel")])
def test_the_decision_scale_task_compares_each_budget_with_the_unbudgeted_decision(policy, mix):
    from dlsched.bench.decision import decision_task

    out = decision_task(policy, mix, 24, [1000], [2])
    ref = out["reference"]
    assert ref["active"] == 24 and ref["gap"] == pytest.approx(0.0, abs=1e-6) and ref["objective"] > 0
    variants = [r["variant"] for r in out["rows"]]
    assert variants == ["scratch", "incremental", "pop2"]
    for row in out["rows"]:
        assert row["active"] == 24 and row["placed"] >= 1 and row["gap"] >= 0 and not row["uncertified"]
        assert row["overrun"] == row["seconds"] * 1000.0 / row["budget_ms"] > 0
        assert row["ratio_to_reference"] >= 1 - 1e-9 or row["variant"] != "scratch"
        assert row["overrun"] == pytest.approx(row["seconds"] * 1e3 / row["budget_ms"])
        assert row["running"] >= 1 and row["held_ratio"] == row["held_jct"] / ref["held_jct"]


def test_a_decisions_held_allocation_is_scored_at_the_engines_rates():
    # held(): the running jobs' remaining iterations over the rate the engine gave each (its observations)
    from dlsched.bench.decision import held, scene

    trace, cluster, speed = scene("gavel", 40)
    sim = Simulation(trace, cluster, speed, seed=0)
    pol = make_policy("hetplace")
    pol.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    sim.apply(pol.schedule(sim.state(), events), pol.name)
    sim.advance(1.0)                               # the jobs ran a second: the engine observed their rates
    state = sim.state()
    rates = {j: state.observations[j].speed[-1][2] for j in state.allocation}
    got = held(state, speed)
    assert got["running"] == len(rates) == 39
    assert got["held_jct"] == pytest.approx(np.mean([state.remaining[j] / r for j, r in rates.items()]), rel=1e-12)


@st.composite
def growth_problems(draw):
    """Optimus's allocation problem: 1-3 jobs, grids of p = 0..2, w = 0..3 (inf at p = 0 for a PS job,
    and at a few drawn sizes), start sizes, demands and a capacity."""
    n, R = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    times = np.full((n, 3, 4), np.inf)
    start = np.zeros((n, 2), dtype=np.int64)
    for i in range(n):
        ps = draw(st.booleans())
        start[i] = (1 if ps else 0, 1)
        for p in (range(1, 3) if ps else [0]):
            for w in range(1, 4):
                if (p, w) == tuple(start[i]) or draw(st.integers(0, 4)):
                    times[i, p, w] = draw(st.floats(1, 100))
    dw = np.array([[draw(st.floats(0.1, 2)) for _ in range(R)] for _ in range(n)])
    dp = np.array([[draw(st.floats(0.1, 2)) for _ in range(R)] for _ in range(n)])
    cap = np.array([draw(st.floats(1, 12)) for _ in range(R)])
    return times, start, dw, dp, cap


@settings(max_examples=80, deadline=None)
@given(prob=growth_problems())
def test_optimus_allocation_is_bracketed_by_its_certified_bound(prob):
    from dlsched.policies.optimus import allocation_bound, marginal_gain_allocation

    times, start, dw, dp, cap = prob
    sizes = marginal_gain_allocation(times, dw, dp, cap, cap.copy(), [tuple(s) for s in start.tolist()])
    objective, bound = allocation_bound(times, sizes, start, dw, dp, cap)
    jobs = sorted(sizes)
    best = np.inf
    choices = [[(p, w) for p in range(3) for w in range(4) if np.isfinite(times[j, p, w])
                and (p >= start[j, 0] if start[j, 0] else p == 0) and w >= start[j, 1]] for j in jobs]
    for pick in itertools.product(*choices):
        used = sum(p * dp[j] + w * dw[j] for j, (p, w) in zip(jobs, pick))
        if np.all(used <= cap + 1e-9):
            best = min(best, sum(times[j, p, w] for j, (p, w) in zip(jobs, pick)))
    used = sum((sizes[j][0] * dp[j] + sizes[j][1] * dw[j] for j in jobs), np.zeros_like(cap))
    assert np.all(used <= cap + 1e-9)
    assert objective == pytest.approx(sum(times[j, sizes[j][0], sizes[j][1]] for j in jobs))
    assert bound <= best * (1 + 1e-9) + 1e-9 and best <= objective * (1 + 1e-9)


def test_optimus_allocation_stops_at_the_start_sizes_when_its_budget_has_expired():
    from dlsched.policies.optimus import marginal_gain_allocation
    from dlsched.solvers.options import Budget

    times = np.full((2, 3, 5), np.inf)
    times[:, 1, 1:] = [[40.0, 22, 15, 12], [30.0, 16, 11, 9]]
    d, cap = np.ones((2, 1)), np.array([8.0])
    start = [(1, 1), (1, 1)]
    spent = Budget(1e-9)
    assert marginal_gain_allocation(times, d, d, cap, cap.copy(), start, budget=spent) == {0: (1, 1), 1: (1, 1)}
    assert marginal_gain_allocation(times, d, d, cap, cap.copy(), start) == {0: (1, 3), 1: (1, 3)}


def test_optimus_with_a_generous_budget_decides_as_without_one(capsys):
    runs = []
    for extra in ([], ["--decision-budget", "60000"]):
        code, out, _ = run(capsys, "simulate", "dl2:12:3", "--policy", "optimus", "--json", "--jobs", *extra)
        assert code == 0
        doc = json.loads(out)
        runs.append([(j["first_start"], j["completion"]) for j in doc["job_results"]])
    assert runs[0] == runs[1]


class FrozenBudget:
    """A decision's budget on a fake clock: ``left`` seconds remain whatever the real time (tests of what
    a budget lets a decision start, not of how long it takes)."""

    def __init__(self, left: float, margin: float = 0.0):
        from dlsched.solvers.options import Budget
        self.limit, self.margin, self.left, self._budget = 1e9, margin, left, Budget

    limited = True

    def remaining(self):
        return max(self.left, 0.0)

    def expired(self):
        return self.left <= 0

    def elapsed(self):
        return self.limit - self.left

    def seconds_for_solver(self):
        return max(self.left - self.margin, 1e-3)

    def share(self, fraction, at_most=None):
        return FrozenBudget(fraction * self.left, self.margin)


def test_a_subproblem_starts_only_when_the_rest_of_the_budget_buys_its_predicted_cost(busy_view):
    from dlsched.solvers.smd import epoch_core, parametric, select_jobs
    view, active = busy_view
    core = epoch_core(view, select_jobs(view, active), slot_aware=True, wait_slots=1.0, tie_break=TIE_BREAK)
    warm = greedy_choice(core, column_shares(core))
    dear = {"_ExactSub": 1e6, "_DPSub": 1e6}                        # 1e6 s a column: more than is left
    out = parametric(core, SolveOptions(threads=1, budget=FrozenBudget(100.0)), warm=warm, costs=dear)
    assert out.iterations == 0 and np.array_equal(out.choice, warm) and dear == {"_ExactSub": 1e6, "_DPSub": 1e6}
    cheap = {"_ExactSub": 0.0, "_DPSub": 0.0}
    out = parametric(core, SolveOptions(threads=1, budget=FrozenBudget(100.0)), warm=warm, costs=cheap)
    exact = parametric(core, SolveOptions(threads=1))
    assert out.iterations > 0 and out.objective == pytest.approx(exact.objective)
    assert max(cheap.values()) > 0                                  # what it cost is kept for the next decision
    # the margin is kept back: 100 s left, all of it margin, buys nothing
    assert parametric(core, SolveOptions(threads=1, budget=FrozenBudget(100.0, margin=100.0)), warm=warm,
                      costs={"_ExactSub": 0.0, "_DPSub": 0.0}).iterations == 0


def test_the_one_row_programme_stops_at_its_budgets_margin():
    from dlsched.solvers import knapsack_dp
    rng = np.random.default_rng(3)
    ptr = np.arange(0, 2 * 40 + 1, 2)
    value = np.column_stack([rng.uniform(5, 9, 40), rng.uniform(1, 4, 40)]).ravel()
    use = np.column_stack([np.zeros(40), rng.integers(1, 5, 40)]).ravel()
    core = MCMDK(value, sp.csr_matrix(use[None, :]), np.array([30.0]), ptr, "min", "exactly_one")
    r, units, cap = knapsack_dp.one_row(core)
    opt, choice = knapsack_dp.solve(core, core.value, units, cap)
    assert knapsack_dp.solve(core, core.value, units, cap, FrozenBudget(100.0))[0] == opt
    with pytest.raises(knapsack_dp.BudgetSpent):
        knapsack_dp.solve(core, core.value, units, cap, FrozenBudget(0.0))


def test_an_answer_that_cannot_be_placed_in_time_gives_way_to_the_kept_one(busy_view):
    view, active = busy_view
    kw = {"slot_aware": True, "wait_slots": 1.0, "tie_break": TIE_BREAK}
    last, _, _ = decide(view, active[:20], SolveOptions(threads=1), **kw)      # the last answer: 20 jobs known
    keep_mask = last[:, 0] > 0

    def place_seconds(alloc):                      # 1 s a job placed at a new size: only the kept ones are free
        return float(np.count_nonzero((alloc[:, 0] > 0) & np.any(alloc != last, axis=1)))

    exact, _, _ = decide(view, active, SolveOptions(threads=1), **kw)
    assert place_seconds(exact) > 1.0                                       # the budget binds
    opts = SolveOptions(threads=1, budget=FrozenBudget(1.0, margin=0.0))
    dec = decide_anytime(view, active, opts, keep=last, place_seconds=place_seconds, costs={}, **kw)
    assert place_seconds(dec.alloc) <= 1.0
    both = keep_mask & (dec.alloc[:, 0] > 0)
    assert both.any() and np.array_equal(dec.alloc[both], last[both])      # the kept jobs run as they ran
    assert dec.bound <= dec.objective
    # where the budget does not bind, the iteration's answer (the decision without a budget)
    free = decide_anytime(view, active, SolveOptions(threads=1), keep=last, place_seconds=place_seconds, costs={}, **kw)
    assert np.array_equal(free.alloc, exact)


def test_smd_with_a_generous_budget_decides_as_without_one(capsys):
    runs = []
    for extra in ([], ["--decision-budget", "600000"]):
        code, out, _ = run(capsys, "simulate", "dl2:12:3", "--policy", "smd", "--speed", "table", "--json", "--jobs", *extra)
        assert code == 0
        runs.append(json.loads(out)["job_results"])
    assert runs[0] == runs[1]


def test_the_kept_answer_is_never_an_empty_one_where_a_job_could_run(busy_view):
    view, active = busy_view
    kw = {"slot_aware": True, "wait_slots": 1.0, "tie_break": TIE_BREAK}
    gone = np.zeros((view.n_jobs, 2), dtype=np.int64)           # the last answer's jobs have all completed
    dec = decide_anytime(view, active, SolveOptions(threads=1, budget=FrozenBudget(0.0)), keep=gone,
                         place_seconds=lambda alloc: float(np.count_nonzero(alloc[:, 0])), costs={}, **kw)
    assert (dec.alloc[:, 0] > 0).any() and dec.bound <= dec.objective


def test_placeable_gives_the_first_answer_placed_in_time_never_an_empty_one_where_one_runs():
    """The kept-answer rule smd and fluid share (dlsched/solvers/anytime.py): the first answer whose placement
    fits what is left, else the one placed soonest; an answer that runs no job only where none runs one."""
    from dlsched.solvers.anytime import placeable

    assert placeable([5.0, 2.0, 0.0], [True, True, True], 3.0) == 1
    assert placeable([1.0, 2.0, 0.0], [True, True, True], 3.0) == 0
    assert placeable([5.0, 4.0, 0.0], [True, True, False], 3.0) == 1          # the empty one fits, but 1 runs jobs
    assert placeable([5.0, 4.0], [False, False], 3.0) == 1                     # none runs a job: the soonest
    assert placeable([5.0, 9.0, 0.0], [True, True, True], 1.0) == 2


def test_every_row_decides_at_1_s_on_the_state_the_reference_decided_on():
    """A budgeted first call places only what its budget allows (docs/results/fluid-budget.md), so a row whose
    decision at 0 kept its own budget measured its decision at 1 s on another state than the reference's."""
    from dlsched.bench.decision import one_decision, scene

    trace, cluster, speed = scene("gavel", 24)
    policy, seen = make_policy("fluid", budget_ms=5), []
    schedule = policy.schedule

    def spy(state, events):
        seen.append(policy.decision_record.seconds)
        return schedule(state, events)
    policy.schedule = spy
    one_decision(policy, trace, cluster, speed, first_ms=None)            # the reference's: none
    one_decision(policy, trace, cluster, speed, first_ms=60000)
    one_decision(policy, trace, cluster, speed)                           # its own, as before
    assert seen == [None, 0.005, 60.0, 0.005, 0.005, 0.005]


def test_a_first_budgeted_fluid_decision_keeps_the_jobs_that_run():
    """After decisions without a budget, a budgeted one whose answer is cut to what its placement can place stopped
    the running jobs it counted as waiting (1,716 of 2,000 DL2 jobs in the decision-scale rerun)."""
    from dlsched.bench.decision import scene
    from dlsched.sim.engine import Simulation
    from dlsched.sim.policy import PolicyContext

    trace, cluster, speed = scene("dl2", 200)
    policy = make_policy("fluid", budget_ms=1e-6, lp_jobs=5)
    sim = Simulation(trace, cluster, speed, seed=0)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    policy.decision_record.seconds = None                     # the first decision without a budget
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    running = set(sim.state().allocation)
    policy.decision_record.seconds = 1e-9
    events = sim.advance(1.0)
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    assert len(running) > 100 and running <= set(sim.state().allocation)

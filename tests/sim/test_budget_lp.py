"""Decision budgets and certified gaps of the LP/MILP policies (docs/simulator.md, "Decision budgets and certified
gaps"): Gavel's LP policies, ``dorm``'s MILP and ``oasis``'s pricing. Every budget here is a fake clock (no test is
timed): a budget that cuts gives a feasible, non-empty answer counted honestly, and an unbudgeted decision records
the gap an independent recomputation gives."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instance.oasis_gen import generate, small
from dlsched.policies import gavel_lp, oasis_baselines
from dlsched.policies.gavel import GavelFinishTimeFairness, GavelMaxMinFairnessPerf, GavelMaxSumThroughput
from dlsched.policies.gavel_prices import LPCut
from dlsched.policies.oasis import SlotView, to_trace
from dlsched.policies.oasis_baselines import DormPolicy
from dlsched.registry import make_policy
from dlsched.result import relative_gap
from dlsched.sim.engine import simulate
from dlsched.solvers.oasis import Prices, admit, dual_subroutine, price_params, slot_costs


class Clock:
    """A decision's budget on a fake clock: spent after ``checks`` calls of :meth:`expired` (0: spent already). A
    solver given it gets a minute while it is not spent (no LP here stops at that), 1 ms once it is, as a spent
    budget gives."""

    limit, margin, limited = 60.0, 0.0, True

    def __init__(self, checks: int = 0):
        self.checks, self.spent = checks, checks <= 0

    def expired(self) -> bool:
        self.checks -= 1
        self.spent = self.spent or self.checks < 0
        return self.spent

    def remaining(self) -> float:
        return 1e-3 if self.spent else 60.0

    def elapsed(self) -> float:
        return self.limit - self.remaining()

    def seconds_for_solver(self) -> float:
        return self.remaining()


def unlimited():
    from dlsched.solvers.options import Budget
    return Budget(None, margin=0.0)


def feasible(X, z, cap, tol=1e-9) -> bool:
    """Gavel's base constraints (dlsched/policies/gavel_lp.py)."""
    return bool((X >= -tol).all() and (X.sum(axis=1) <= 1 + tol).all() and ((z * X).sum(axis=0) <= cap + tol).all())


def gavel_problem(seed: int, m: int = 7, K: int = 3):
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.5, 4.0, (m, K)) * (rng.random((m, K)) > 0.2)
    T[:, 0] = np.maximum(T[:, 0], 0.3)                      # every job runs somewhere
    z = np.where(T > 0, rng.choice([1.0, 2.0, 4.0], (m, 1)), 0.0)
    cap = rng.choice([2.0, 4.0, 8.0], K)
    return T, z, cap


def max_min_by_linprog(W, z, cap) -> float:
    """max t s.t. t <= W_j . X_j (jobs with W_j > 0), the base constraints: scipy's linprog, independently."""
    m, K = W.shape
    live = np.flatnonzero((W > 0).any(axis=1))
    n = m * K
    rows, rhs = [], []
    for k in range(K):
        r = np.zeros(n + 1)
        r[k:n:K] = z[:, k]
        rows.append(r), rhs.append(cap[k])
    for j in range(m):
        r = np.zeros(n + 1)
        r[j * K:(j + 1) * K] = 1
        rows.append(r), rhs.append(1.0)
    for j in live:
        r = np.zeros(n + 1)
        r[j * K:(j + 1) * K] = -W[j]
        r[-1] = 1
        rows.append(r), rhs.append(0.0)
    bounds = [(0, 1 if W.ravel()[i] > 0 else 0) for i in range(n)] + [(0, None)]
    res = linprog(np.r_[np.zeros(n), -1.0], A_ub=np.array(rows), b_ub=rhs, bounds=bounds, method="highs")
    return -res.fun


# ----------------------------------------------------------------------------- Gavel's LP policies

@pytest.mark.parametrize("seed", range(4))
def test_an_unbudgeted_gavel_max_min_decision_records_gap_0_against_an_independent_lp(seed):
    T, z, cap = gavel_problem(seed)
    pol = GavelMaxMinFairnessPerf()
    pol.cap, pol.X, pol.clock = cap, {}, unlimited()
    X = pol.allocate(None, np.arange(T.shape[0]), T, z)
    share = (T * cap).sum(axis=1) / cap.sum()
    W = z * T / share[:, None]
    best = max_min_by_linprog(W, z, cap)
    got = float((W * X).sum(axis=1).min())              # the allocation's own objective, recomputed
    rec = pol.decision_record
    assert feasible(X, z, cap, 1e-7)
    assert rec.uncertified == 0 and rec.gaps == [0.0]
    assert -rec.objectives[0] == pytest.approx(best, rel=1e-6) and got == pytest.approx(best, rel=1e-6)
    assert abs(relative_gap(got, best, "max")) <= 1e-6


def test_an_unbudgeted_max_sum_decision_records_its_optimum():
    T, z, cap = gavel_problem(5)
    pol = GavelMaxSumThroughput()
    pol.cap, pol.X, pol.clock = cap, {}, unlimited()
    X = pol.allocate(None, np.arange(T.shape[0]), T, z)
    m, K = T.shape
    A = np.vstack([np.kron(np.ones(m), np.eye(K)) * z.ravel(), np.kron(np.eye(m), np.ones(K))])
    res = linprog(-T.ravel(), A_ub=A, b_ub=np.r_[cap, np.ones(m)], bounds=[(0, 1 if t > 0 else 0) for t in T.ravel()],
                  method="highs")
    assert pol.decision_record.gaps == [0.0]
    assert float((T * X).sum()) == pytest.approx(-res.fun, rel=1e-7) == -pol.decision_record.objectives[0]


@pytest.mark.parametrize("cls", [GavelMaxMinFairnessPerf, GavelMaxSumThroughput])
def test_a_cut_gavel_lp_answers_the_kept_allocation_feasible_and_not_empty_uncertified(cls):
    T, z, cap = gavel_problem(2)
    pol = cls(budget_ms=5)
    old = np.zeros_like(T)
    old[0, 0], old[1, 1] = 1.0, 0.5                     # the allocation in force: jobs 0, 1 (2 finished since)
    pol.cap, pol.X, pol.clock = cap, {0: old[0], 1: old[1], 2: np.array([1.0, 0, 0])}, Clock(0)
    jobs = np.array([0, 1, 3, 4, 5])
    zz = z[jobs]
    X = pol.allocate(None, jobs, T[jobs], zz)
    rec = pol.decision_record
    assert rec.uncertified == 1 and rec.gaps == [] and rec.objectives == []
    assert feasible(X, zz, cap) and (X[2:].sum(axis=1) > 0).all()
    np.testing.assert_array_equal(X[:2], old[:2])       # the jobs it had keep their shares
    with pytest.raises(LPCut):
        gavel_lp.max_sum_throughput(T, z, cap, budget=Clock(0))


def test_a_first_cut_decision_is_not_empty():
    T, z, cap = gavel_problem(3)
    pol = GavelMaxMinFairnessPerf(budget_ms=1)
    pol.cap, pol.X, pol.clock = cap, {}, Clock(0)
    X = pol.allocate(None, np.arange(T.shape[0]), T, z)
    assert feasible(X, z, cap) and (X.sum(axis=1) > 0).all() and pol.decision_record.uncertified == 1


def ftf_problem(seed: int):
    T, z, cap = gavel_problem(seed)
    rng = np.random.default_rng(seed)
    R = rng.uniform(100, 1000, T.shape[0])
    elapsed = rng.uniform(0, 200, T.shape[0])
    iso = (gavel_lp.isolated_share(z, cap) * T).sum(axis=1)
    E = rng.uniform(0, 50, T.shape[0]) + R / iso
    return T, z, cap, R, elapsed, E


@pytest.mark.parametrize("checks", [0, 3])
def test_a_cut_finish_time_bisection_keeps_a_feasible_answer_and_a_valid_bound(checks):
    T, z, cap, R, elapsed, E = ftf_problem(1)
    full = gavel_lp.finish_time_fairness(T, z, cap, R, elapsed, E)
    cut = gavel_lp.finish_time_fairness(T, z, cap, R, elapsed, E, budget=Clock(checks))
    assert feasible(cut.X, z, cap, 1e-7)
    rho = float(gavel_lp.ftf_ratios(cut.X, T, R, elapsed, E).max())   # the answer's own objective, recomputed
    assert rho == pytest.approx(cut.value)
    assert cut.bound <= full.value * (1 + 1e-9) and full.bound <= full.value * (1 + 1e-9)   # both bound the optimum
    if checks == 0:   # no LP: the isolated allocation against max t_j / E_j
        iso = gavel_lp.isolated_share(z, cap) * (T > 0)
        assert cut.lps == 0 and rho == pytest.approx(float(gavel_lp.ftf_ratios(iso, T, R, elapsed, E).max()))
        assert cut.bound == pytest.approx(float((elapsed / E).max()))
    assert relative_gap(full.value, full.bound, "min") <= 1e-8 < relative_gap(cut.value, cut.bound, "min")


def test_a_finish_time_decision_records_its_bisection_gap():
    T, z, cap, R, elapsed, E = ftf_problem(2)
    pol = GavelFinishTimeFairness(budget_ms=5)
    pol.isolated_time, pol._prev = {}, {}
    pol.cap, pol.X, pol.clock = cap, {}, Clock(2)

    class State:
        remaining, arrival, time = R, -elapsed, 0.0

    X = pol.allocate(State, np.arange(T.shape[0]), T, z)
    rec = pol.decision_record
    E = R / (gavel_lp.isolated_share(z, cap) * T).sum(axis=1)      # no isolated time run yet
    rho = float(gavel_lp.ftf_ratios(X, T, R, elapsed, E).max())
    assert rec.uncertified == 0 and len(rec.gaps) == 1 and rec.gaps[0] > 0
    assert rec.objectives[0] == pytest.approx(rho)


# ----------------------------------------------------------------------------- dorm

def dorm_state(seed: int = 3):
    inst = generate(30, horizon=40, worker_servers=3, ps_servers=3, seed=seed)
    sim = SlotView(inst)
    arrived = [i for i in range(inst.n_jobs) if inst.infeasible_reasons()[i] is None][:12]
    return inst, sim, arrived


def dorm_value(inst, sim, J, lam=1.0) -> float:
    """Dorm's objective of the allocation that runs, from the placements alone."""
    total = inst.worker_cap.sum(axis=0) + inst.ps_cap.sum(axis=0)
    total = np.where(total > 0, total, 1.0)
    y = {i: sim.alloc[i][0].sum() if i in sim.alloc else 0 for i in J}
    zz = {i: sim.alloc[i][1].sum() if i in sim.alloc else 0 for i in J}
    util = sum(((inst.worker_demand[i] * y[i] + inst.ps_demand[i] * zz[i]) / total).sum() for i in J)
    dom = (inst.worker_demand / np.where(total > 0, total, 1.0)).max(axis=1)
    return util + lam * len(J) * min(1.0, min(dom[i] * y[i] for i in J))


def test_an_unbudgeted_dorm_decision_records_the_gap_of_what_runs_against_the_milp_bound(monkeypatch):
    inst, sim, arrived = dorm_state()
    seen = []
    real = oasis_baselines.milp
    monkeypatch.setattr(oasis_baselines, "milp", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    pol = DormPolicy(inst)
    pol.decide(1, sim, arrived, [])
    J = list(pol.active)
    value = dorm_value(inst, sim, J)
    rec = pol.record
    assert sim.alloc and (sim.free_w >= -1e-9).all() and (sim.free_p >= -1e-9).all()
    assert rec.objectives == [pytest.approx(-value)]
    bound = seen[0].mip_dual_bound
    assert bound <= -value + 1e-9 and rec.gaps == [pytest.approx(relative_gap(-value, bound, "min"))]


def test_a_dorm_milp_with_no_incumbent_answers_a_feasible_non_empty_allocation(monkeypatch):
    inst, sim, arrived = dorm_state()

    class NoIncumbent:
        x, mip_dual_bound, status = None, math.nan, 1

    monkeypatch.setattr(oasis_baselines, "milp", lambda *a, **k: NoIncumbent)
    pol = DormPolicy(inst)
    pol.decide(1, sim, arrived, [])
    assert sim.alloc and (sim.free_w >= -1e-9).all() and (sim.free_p >= -1e-9).all()
    for i, (y, z) in sim.alloc.items():
        assert z.sum() >= inst.ps_needed(i, int(y.sum())) and y.sum() <= inst.chunks[i]
    assert pol.record.uncertified == 1 and pol.record.gaps == []


class Left(Clock):
    """A fake clock with ``left`` seconds remaining (no margin)."""

    def __init__(self, left: float):
        super().__init__(1)
        self.left = left

    def remaining(self) -> float:
        return self.left

    def seconds_for_solver(self) -> float:
        return self.left


def test_a_budgeted_dorm_gives_the_milp_what_remains_of_the_decision(monkeypatch):
    inst, sim, arrived = dorm_state()
    limits = []
    real = oasis_baselines.milp
    monkeypatch.setattr(oasis_baselines, "milp", lambda *a, **k: limits.append(k["options"]["time_limit"]) or real(*a, **k))
    DormPolicy(inst).decide(1, SlotView(inst), arrived, [])
    DormPolicy(inst, clock=lambda: Left(0.05)).decide(1, sim, arrived, [])
    assert limits == [1.0, 0.05]


def test_a_dorm_budget_below_the_milp_fixed_cost_answers_the_last_placed_counts_uncertified(monkeypatch):
    """What remains (1 ms) is below the MILP's fixed cost (its prior, then the least of its measured calls): the MILP
    is not called, the last placed counts (N_i for a new job) are placed and recorded without a bound; a measured
    fixed cost below what remains lets the next decision call it."""
    inst, sim, arrived = dorm_state()
    calls = []
    real = oasis_baselines.milp
    monkeypatch.setattr(oasis_baselines, "milp", lambda *a, **k: calls.append(1) or real(*a, **k))
    pol = DormPolicy(inst, clock=lambda: Left(1e-3))
    pol.decide(1, sim, arrived, [])
    assert not calls and sim.alloc and (sim.free_w >= -1e-9).all() and (sim.free_p >= -1e-9).all()
    assert pol.record.uncertified == 1 and pol.record.gaps == []
    assert pol.record.objectives == [pytest.approx(-dorm_value(inst, sim, list(pol.active)))]
    # the gate reads what remains (1 ms); the solve gets a limit no load can cut (a 1-ms limit cut the MILP before
    # its first solution once, under load, and the test failed on the machine's speed, not the gate)
    roomy = Left(1e-3)
    roomy.seconds_for_solver = lambda: 60.0
    fast = DormPolicy(inst, clock=lambda: roomy)
    fast.milp_seconds.append(5e-4)                 # a MILP call measured at 0.5 ms
    fast.decide(1, SlotView(inst), arrived, [])
    assert calls == [1] and fast.record.uncertified == 0 and len(fast.record.gaps) == 1


# ----------------------------------------------------------------------------- oasis

def test_an_oasis_pricing_pass_cut_by_its_budget_bounds_the_full_pass():
    inst = generate(40, seed=4)
    state = Prices(inst, price_params(inst))
    priced = found = 0
    for i in range(inst.n_jobs):
        if state.blocked[i] is not None:
            continue
        priced += 1
        sc = slot_costs(state, i)
        full = dual_subroutine(inst, i, sc, prune=False)
        pruned = dual_subroutine(inst, i, sc)
        assert pruned.bound == pytest.approx(max(full.surplus, 0.0), rel=1e-9, abs=1e-9)
        for checks in (0, 1, 3, 10, 40):
            cut = dual_subroutine(inst, i, sc, budget=Clock(checks))
            assert cut.bound >= max(full.surplus, 0.0) - 1e-9 and cut.slots_examined <= checks
            if cut.completion and cut.slots_examined < sc.cost.shape[0]:
                found += 1
                assert cut.surplus <= full.surplus + 1e-9
        admit(state, i)          # the prices move on, as the policy's do
    assert priced >= 5 and found >= 2


def test_a_cut_oasis_admission_commits_the_best_schedule_found_feasibly():
    inst = generate(40, seed=4)
    state = Prices(inst, price_params(inst))
    admitted = 0
    for i in range(inst.n_jobs):
        bounds = []
        whole = dual_subroutine(inst, i, slot_costs(state, i)) if state.blocked[i] is None else None
        # the pass cut one slot before its end (the first check is admit's own): commit checks every capacity
        checks = 1 + max(whole.slots_examined - 1, 0) if whole is not None else 0
        why, plan, surplus = admit(state, i, Clock(checks), anytime=True, bounds=bounds)
        assert len(bounds) == 1 and (plan is None or bounds[0] >= surplus > 0)
        admitted += plan is not None and whole.slots_examined > 1
    assert admitted > 0


def test_oasis_and_dorm_record_their_decisions_on_the_engine():
    inst = small(seed=3, n_jobs=8, horizon=10)
    trace, cluster, speed = to_trace(inst, slot_seconds=1.0)
    for name in ("oasis", "dorm"):
        res = simulate(trace, cluster, make_policy(name), speed, max_time=float(inst.horizon))
        doc = json.loads(res.to_json())
        assert doc["decisions_uncertified"] == 0 and doc["decision_gap"]["decisions"] >= 1
        if name == "oasis":
            assert doc["decision_gap"]["max"] == 0.0
        cut = simulate(trace, cluster, make_policy(name, budget_ms=1), speed, max_time=float(inst.horizon))
        assert json.loads(cut.to_json())["decisions_uncertified"] is not None


# ----------------------------------------------------------------------------- options and the command line

@pytest.mark.parametrize("name", ["oasis", "dorm", "gavel-max-min-fairness", "gavel-max-min-fairness-perf",
                                  "gavel-max-sum-throughput", "gavel-min-total-duration",
                                  "gavel-finish-time-fairness", "gavel-max-min-fairness-packed"])
@pytest.mark.parametrize("bad", [0, -1, float("nan"), "x"])
def test_bad_budget_ms_names_the_option(name, bad):
    with pytest.raises(InputError, match=r"at budget_ms: expected a finite number > 0 or none .* found"):
        make_policy(name, budget_ms=bad)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_a_gavel_lp_policy_at_1_ms_reports_gap_and_uncertified(capsys):
    code, out, err = run(capsys, "simulate", "gavel:12:1", "--cluster", "4:4:4", "--speed", "throughput", "--policy",
                         "gavel-max-min-fairness-perf,gavel-finish-time-fairness", "--decision-budget", "1", "--json",
                         "--bound", "none")
    assert code == 0, err
    for doc in json.loads(out)["runs"]:
        assert doc["status"] == "completed" and doc["decisions_uncertified"] is not None
        assert doc["decisions_uncertified"] + (doc["decision_gap"] or {"decisions": 0})["decisions"] >= 1


def test_simulate_refuses_a_bad_budget_for_a_gavel_policy(capsys):
    code, _, err = run(capsys, "simulate", "gavel:4:1", "--cluster", "4:4:4", "--speed", "throughput", "--policy",
                       "gavel-max-sum-throughput",
                       "-P", "budget_ms=0")
    assert code == 2 and "at budget_ms: expected a finite number > 0" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["gavel-max-min-fairness", "gavel-max-min-fairness-perf", "gavel-max-sum-throughput",
                                  "gavel-min-total-duration", "gavel-finish-time-fairness"])
def test_gavel_policies_whose_every_lp_is_cut_keep_the_policy_contract(monkeypatch, name):
    from dlsched.instance.cluster import Cluster
    from dlsched.policies.budget import DecisionRecord
    from dlsched.solvers.options import Budget
    from dlsched.testing import LinearSpeed, check_policy, generic_trace

    # every decision's clock spent from its start: every LP is cut (deterministically, unlike a 1-ms budget on
    # LPs that take less), so every allocation is the kept one (finish-time fairness: the isolated one)
    monkeypatch.setattr(DecisionRecord, "clock", lambda self: Budget(1e-12, margin=0.0))
    tr = generic_trace([(0, 9, 1, 3, 0, 0), (0, 4, 2, 2, 0, 1), (1, 7, 1, 4, 1, 0), (2, 3, 1, 1, 0, 2), (2, 12, 2, 2, 2, 1)])
    made = []
    check_policy(lambda: made.append(make_policy(name, budget_ms=1)) or made[-1],
                 cases=[(tr, Cluster.homogeneous(2, {"gpu": 4, "cpu": 8}), LinearSpeed())])
    recs = [p.decision_record for p in made]
    if name == "gavel-finish-time-fairness":     # certified by its lower end even with no LP
        assert sum(len(r.gaps) for r in recs) > 0 and all(r.uncertified == 0 for r in recs)
    else:
        assert sum(r.uncertified for r in recs) > 0 and all(r.gaps == [] for r in recs)


def test_a_dorm_milp_cut_by_its_limit_measures_its_fixed_cost_beyond_the_limit(monkeypatch):
    """A call given 50 ms that takes 52 ms (a fake clock) measures 2 ms of fixed cost, so a run of calls cut at the
    budget does not set the fixed cost at the budget (and stop calling the MILP); a call that ends before its limit
    measures all it took."""
    import types

    inst, sim, arrived = dorm_state()
    now = [0.0]
    real = oasis_baselines.milp
    took = iter([0.052, 0.003])

    def slow(*a, **k):
        now[0] += next(took)
        return real(*a, **k)

    monkeypatch.setattr(oasis_baselines, "milp", slow)
    monkeypatch.setattr(oasis_baselines, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    pol = DormPolicy(inst, clock=lambda: Left(0.05))
    pol.decide(1, sim, arrived, [])
    assert list(pol.milp_seconds) == [pytest.approx(0.002)]
    other = DormPolicy(inst, clock=lambda: Left(0.05))
    other.decide(1, SlotView(inst), arrived, [])
    assert list(other.milp_seconds) == [pytest.approx(0.003)]

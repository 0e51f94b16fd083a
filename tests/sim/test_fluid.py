"""The fluid LP of the active jobs (dlsched/policies/fluid.py) and the ``fluid`` policy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from dlsched.policies.fluid import fluid_shares, pareto_configs
from dlsched.policies.greedy import hesrpt_shares


def _grid(rng, P, W, holes=0.2):
    T = rng.uniform(1.0, 10.0, (P, W))
    T[rng.random((P, W)) < holes] = np.inf
    return T


def _random_lp(rng, m):
    """A random fluid LP of m jobs on (4 PS levels × 5 worker levels) grids and two resources: each job's
    times (inf where it has no PS or no worker), d, e, the capacity and an order; None when some job has
    no finite time."""
    times = [np.where(np.arange(4)[:, None] * np.arange(5) > 0, _grid(rng, 4, 5, 0.1), np.inf) for _ in range(m)]
    if not all(np.isfinite(T).any() for T in times):
        return None
    d = rng.integers(1, 3, (m, 2)).astype(float)
    e = np.c_[rng.integers(1, 3, m), np.zeros(m)].astype(float)
    cap = np.array([float(rng.integers(4, 12)), float(rng.integers(2, 8))])
    return times, d, e, cap, rng.permutation(m).tolist()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), P=st.integers(1, 5), W=st.integers(1, 6), R=st.integers(1, 3))
def test_pareto_configs_are_exactly_the_undominated_ones(seed, P, W, R):
    rng = np.random.default_rng(seed)
    T = _grid(rng, P, W)
    T = np.round(T, 0)                             # ties in time
    d, e = rng.integers(0, 3, R).astype(float), rng.integers(0, 3, R).astype(float)
    got = set(pareto_configs(T, d, e).tolist())
    want = set()
    for (p, w) in itertools.product(range(P), range(W)):
        if not np.isfinite(T[p, w]):
            continue
        u = p * e + w * d
        beaten = any(np.isfinite(T[q, v]) and T[q, v] <= T[p, w] and (q * e + v * d <= u).all()
                     and (T[q, v] < T[p, w] or (q * e + v * d < u).any())
                     for q, v in itertools.product(range(P), range(W)))
        if not beaten:
            want.add(p * W + w)
    assert got == want


def _power_jobs(sizes, p, units=90):
    """Jobs of one resource (``units`` of it) whose remaining time at w units is x / w^p."""
    times = []
    for x in sizes:
        T = np.full((2, units + 1), np.inf)
        T[1, 1:] = x / np.arange(1, units + 1) ** p
        times.append(T)
    n = len(sizes)
    return times, np.ones((n, 1)), np.zeros((n, 1)), np.array([float(units)])


@pytest.mark.parametrize("p", [0.3, 0.5, 0.8])
def test_power_speedups_give_hesrpts_shares(p):
    """With speedup k^p and the jobs shortest first, the LP's first phase is heSRPT's optimum
    (Berg et al.): shares by rank only, whatever the sizes (up to the 1/90 grid of sizes)."""
    times, d, e, cap = _power_jobs([1.0, 2.0, 4.0], p)
    theta, _ = fluid_shares(times, d, e, cap, [0, 1, 2])
    assert theta == pytest.approx(hesrpt_shares(3, p), abs=0.012)
    times, d, e, cap = _power_jobs([3.0, 1.0, 7.0], p)                 # listed in another order
    theta, _ = fluid_shares(times, d, e, cap, [1, 0, 2])
    assert theta[[1, 0, 2]] == pytest.approx(hesrpt_shares(3, p), abs=0.012)


def test_one_job_runs_its_fastest_size_for_its_whole_time():
    times, d, e, cap = _power_jobs([5.0], 0.5, units=16)
    theta, value = fluid_shares(times, d, e, cap, [0])
    assert theta[0] == pytest.approx(1.0) and value == pytest.approx(5.0 / 16 ** 0.5)


def test_a_job_that_cannot_run_gets_no_share():
    times, d, e, cap = _power_jobs([1.0, 2.0], 0.5, units=8)
    times[1][:] = np.inf
    theta, _ = fluid_shares(times, d, e, cap, [0, 1])
    assert theta[1] == 0 and theta[0] == pytest.approx(1.0)


def _independent_value(times, d, e, cap, order, rest=None):
    """The same LP written term by term in CVXPY (shares no code with fluid.py); with ``rest`` = (jobs,
    area a_r / C_r per resource, rate s) the aggregate job A of the jobs left out."""
    import cvxpy as cp

    m = len(times)
    n_a = 0 if rest is None else rest[0]
    t = cp.Variable(m, nonneg=True)
    cons, work = [], {i: 0 for i in range(m)}
    use_k = {(k, r): 0 for k in range(m) for r in range(cap.size)}
    for rank, i in enumerate(order):
        cells = [(p, w) for p in range(times[i].shape[0]) for w in range(times[i].shape[1]) if np.isfinite(times[i][p, w])]
        for k in range(rank + 1):
            y = cp.Variable(len(cells), nonneg=True)
            cons.append(cp.sum(y) <= t[k])
            for c, (p, w) in enumerate(cells):
                work[i] += y[c] / times[i][p, w]
                for r in range(cap.size):
                    use_k[k, r] += (p * e[i][r] + w * d[i][r]) * y[c]
    cons += [work[i] >= 1 for i in range(m)]
    objective = cp.sum(cp.multiply(m + n_a - np.arange(m), t))
    if rest is not None:
        z, t_a = cp.Variable(m + 1, nonneg=True), cp.Variable(nonneg=True)
        phase = [t[k] for k in range(m)] + [t_a]
        for k in range(m + 1):
            for r in range(cap.size):
                use_k[k, r] = use_k.get((k, r), 0) + rest[1][r] * cap[r] * z[k]
            cons.append(z[k] <= rest[2] * phase[k])
        cons += [cp.sum(z) >= 1, use_k[m, 0] <= cap[0] * t_a, use_k[m, 1] <= cap[1] * t_a]
        objective = objective + n_a * t_a
    cons += [use_k[k, r] <= cap[r] * t[k] for k in range(m) for r in range(cap.size) if cap[r] > 0]
    prob = cp.Problem(cp.Minimize(objective), cons)
    prob.solve(solver=cp.HIGHS)
    return prob.value


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 4))
@example(seed=198, m=4)      # HiGHS's y within its tolerance gave theta = -6.7e-14
def test_lp_value_equals_an_independent_model(seed, m):
    """Every configuration (not only the Pareto ones) in the independent model: the same optimum."""
    rng = np.random.default_rng(seed)
    times = [np.where(np.arange(4)[:, None] * np.arange(5) > 0, _grid(rng, 4, 5, 0.1), np.inf) for _ in range(m)]
    d = rng.integers(1, 3, (m, 2)).astype(float)
    e = np.c_[rng.integers(1, 3, m), np.zeros(m)].astype(float)
    cap = np.array([float(rng.integers(4, 12)), float(rng.integers(2, 8))])
    order = rng.permutation(m).tolist()
    if not all(np.isfinite(T).any() for T in times):
        return
    theta, value = fluid_shares(times, d, e, cap, order)
    assert value == pytest.approx(_independent_value(times, d, e, cap, order), rel=1e-6)
    assert ((theta >= 0) & (theta <= 1 + 1e-9)).all()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 4), n_a=st.integers(1, 30))
def test_lp_value_with_the_jobs_left_out_equals_an_independent_model(seed, m, n_a):
    """A cut LP with the aggregate A of the jobs behind it (module docstring of fluid.py): the same
    optimum as the model written term by term, whatever A's area (from none of the cluster to far
    more than the LP's jobs need) and rate."""
    from dlsched.policies.fluid import Rest

    rng = np.random.default_rng(seed)
    lp = _random_lp(rng, m)
    if lp is None:
        return
    times, d, e, cap, order = lp
    area = rng.uniform(0, 1, 2) * 10.0 ** rng.uniform(-1, 2)
    rate = float(rng.uniform(0.5, 3) / area.max())
    theta, value = fluid_shares(times, d, e, cap, order, rest=Rest(n_a, area, rate))
    assert value == pytest.approx(_independent_value(times, d, e, cap, order, (n_a, area, rate)), rel=1e-6)
    assert ((theta >= 0) & (theta <= 1 + 1e-9)).all()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 5), n_a=st.integers(1, 30), k=st.integers(2, 3))
def test_fluid_bound_with_the_jobs_left_out_holds_for_the_lp_and_for_pop(seed, m, n_a, k):
    """fluid_bound with the aggregate A is at most the cut LP's value with A, and at most the sum of
    POP's k groups' values (each group on 1/k of the cluster with A/k), in any order."""
    from dlsched.policies.fluid import Rest, fluid_bound, fluid_lp

    rng = np.random.default_rng(seed)
    times = [np.where(np.arange(3)[:, None] * np.arange(4) > 0, _grid(rng, 3, 4, 0.1), np.inf) for _ in range(m)]
    times = [T if np.isfinite(T).any() else np.where(np.isfinite(T), T, 5.0) for T in times]
    d, e = rng.uniform(0.2, 2, (m, 2)), np.c_[rng.uniform(0.2, 2, m), np.zeros(m)]
    cap = np.array([float(rng.integers(3, 10)), float(rng.integers(2, 6))])
    configs = [pareto_configs(T, d[i], e[i]) for i, T in enumerate(times)]
    order = rng.permutation(m).tolist()
    area = rng.uniform(0.1, 1, 2) * 10.0 ** rng.uniform(-1, 1.5)
    rest = Rest(n_a, area, float(rng.uniform(0.5, 3) / area.max()))
    bound = fluid_bound(times, d, e, cap, order, configs, rest)
    assert bound > fluid_bound(times, d, e, cap, order, configs)
    _, value = fluid_shares(times, d, e, cap, order, configs, rest=rest)
    assert bound <= value * (1 + 1e-9)
    k = min(k, m)                                  # POP's groups are never empty (pop_groups)
    group = rng.permutation(m) % k
    pop = 0.0
    for g in range(k):
        jobs = [i for i in order if group[i] == g]
        lp = fluid_lp(times, d, e, cap / k, jobs, configs, rest=Rest(n_a / k, area, rest.rate))
        pop += lp.solve().value
    assert bound <= pop * (1 + 1e-9)


def test_rest_of_is_the_first_sizes_work_at_most_at_the_fastest_sizes_rate():
    """a_r = sum_j T_j u_jr / C_r at the first sizes, s = min_r (sum_j fastest-size use_r / C_r) / a_r;
    a job that cannot run at its first size is not in it."""
    from dlsched.policies.fluid import rest_of

    times = np.array([10.0, 20.0, np.inf])
    use = np.array([[1.0, 2.0], [1.0, 0.0], [5.0, 5.0]])
    most = np.array([[4.0, 2.0], [2.0, 2.0], [9.0, 9.0]])
    cap = np.array([10.0, 4.0])
    rest = rest_of(times, use, most, cap)
    assert rest.jobs == 2
    assert rest.area == pytest.approx([(10 * 1 + 20 * 1) / 10, (10 * 2) / 4])
    assert rest.rate == pytest.approx(min((6 / 10) / 3.0, (4 / 4) / 5.0))
    assert rest_of(np.array([np.inf]), use[:1], most[:1], cap) is None


def _starving_view(behind=8, units=16):
    """One resource of ``units``: job 0 the shortest (time 10 / w^0.3 at w units: it scales badly), and
    ``behind`` jobs of time 200 / w^0.9 (they scale well), each at least one unit, one PS of no demand."""
    from dlsched.policies.greedy import GreedyView

    n = behind + 1
    w = np.arange(units + 1, dtype=float)
    tau = np.full((n, 2, units + 1), np.inf)
    with np.errstate(divide="ignore"):
        tau[0, 1, 1:] = 1.0 / w[1:] ** 0.3
        tau[1:, 1, 1:] = 1.0 / w[1:] ** 0.9
    remaining = np.r_[10.0, np.full(behind, 200.0)]
    return GreedyView(np.arange(n), remaining, tau, np.tile([2, units + 1], (n, 1)), np.ones((n, 1)),
                      np.zeros((n, 1)), np.array([float(units)]), np.zeros(n), np.ones(n, dtype=np.int64))


def test_a_cut_lp_leaves_the_jobs_behind_it_what_they_use_better():
    """The LP of job 0 alone (lp_jobs = 1) would give it the whole cluster (its 16 units, 2.3 times as
    fast as at one unit), and the 8 jobs behind it, which scale far better, would wait. With the jobs
    behind it as A, job 0 gets less than a third of the cluster, the 8 others all run, and the sum of
    the progress rates of the jobs behind is at least that under srpt-greedy's fill alone."""
    from dlsched.policies.fluid import FluidPolicy
    from dlsched.policies.greedy import greedy_allocation

    view = _starving_view()
    times = [view.times(0)] + [None] * 8
    configs = [pareto_configs(times[0], view.d[0], view.e[0])] + [None] * 8
    cut, _ = fluid_shares(times, view.d, view.e, view.capacity, [0], configs)
    kept, _ = fluid_shares(times, view.d, view.e, view.capacity, [0], configs, rest=FluidPolicy.rest(view, range(1, 9)))
    assert cut[0] == pytest.approx(1.0) and kept[0] < 1 / 3

    def sizes(theta):
        return greedy_allocation(view, alpha=2.0, start="shortest", pairs=True,
                                 shares=None if theta is None else (lambda v, order: theta))

    def behind_rate(alloc):
        return sum(1.0 / view.times(i)[1, w] for i, (w, p) in enumerate(alloc.tolist()) if i and w)

    assert np.all(sizes(cut)[1:, 0] == 0)                    # without A: the 8 behind starve
    alloc = sizes(kept)
    assert np.all(alloc[:, 0] >= 1) and alloc[0, 0] < 16 / 3
    assert behind_rate(alloc) >= behind_rate(sizes(None)) - 1e-12


def test_lp_jobs_limits_the_lp_to_the_first_jobs_of_the_order():
    """``lp_jobs`` = K: the LP of the first K jobs of the order, the others θ = 0 (their first size);
    K at least the active jobs: the decision of the whole LP."""
    from dlsched.bench.decision import one_decision, scene
    from dlsched.registry import make_policy

    trace, cluster, speed = scene("dl2", 12)
    seen = []
    policies = {k: make_policy("fluid", lp_jobs=k) for k in (None, 4, 12)}
    for k, pol in policies.items():
        shares = pol.shares

        def spy(inst, shares=shares):
            theta = shares(inst)

            def wrapped(view, order):
                out = theta(view, order)
                seen.append((k, list(order), out))
                return out
            return wrapped
        pol.shares = spy
        one_decision(pol, trace, cluster, speed)
    last = {k: (order, th) for k, order, th in seen}
    order, th4 = last[4]
    assert np.all(th4[order[4:]] == 0) and np.count_nonzero(th4[order[:4]]) >= 1
    assert np.array_equal(last[12][1], last[None][1])
    assert policies[4].decision_record.objectives[-1] > 0             # the 4 jobs' LP with the 8 behind as A


def _spent_clock(monkeypatch):
    """Every decision's clock already spent at its start (as if the view had taken the whole budget)."""
    import time

    from dlsched.policies.budget import DecisionRecord
    from dlsched.solvers.options import Budget

    monkeypatch.setattr(DecisionRecord, "clock",
                        lambda self: Budget(self.seconds, start=time.perf_counter() - self.seconds, margin=self.seconds / 10))


def test_a_decision_whose_budget_is_spent_builds_no_lp_and_counts_its_kept_answer_uncertified(monkeypatch):
    """With the budget spent when the policy is asked, the LP is not built (the budget runs from the call,
    and nothing is left for it): the decision over 2,000 active jobs is the kept answer, srpt-greedy's first
    sizes (no LP solved before it), and runs jobs. Its certificate (fluid_value and fluid_bound of the sizes that
    run) is under the same clock, which has nothing left: neither is evaluated and the decision is counted
    uncertified (before, both were evaluated past the spent budget)."""
    from dlsched.bench.decision import one_decision, scene
    from dlsched.policies import fluid
    from dlsched.registry import make_policy

    trace, cluster, speed = scene("dl2", 2000)
    _spent_clock(monkeypatch)
    built, evaluated = [], []
    build, value, bound = fluid.fluid_lp, fluid.fluid_value, fluid.fluid_bound
    monkeypatch.setattr(fluid, "fluid_lp", lambda *a, **kw: built.append(1) or build(*a, **kw))
    monkeypatch.setattr(fluid, "fluid_value", lambda *a, **kw: evaluated.append("value") or value(*a, **kw))
    monkeypatch.setattr(fluid, "fluid_bound", lambda *a, **kw: evaluated.append("bound") or bound(*a, **kw))
    policy = make_policy("fluid", lp_jobs=20, budget_ms=20_000, incremental=False)
    got = one_decision(policy, trace, cluster, speed)
    assert got["active"] == 2000 and got["running"] > 0 and not built
    assert policy.last_answer in ("kept shares", "kept")
    assert got["uncertified"] and got["gap"] is None and got["objective"] is None and not evaluated


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 4), n_a=st.integers(0, 30))
def test_fluid_value_is_at_least_the_lp_optimum_and_the_bound(seed, m, n_a):
    """fluid_value (the LP's jobs at given sizes, side by side or one after another, A after them) is the
    value of a feasible point of the LP: at least its optimum (the independent model, every configuration)
    and fluid_bound, whatever the sizes (some that cannot run: the fastest instead)."""
    from dlsched.policies.fluid import Rest, fluid_bound, fluid_value

    rng = np.random.default_rng(seed)
    lp = _random_lp(rng, m)
    if lp is None:
        return
    times, d, e, cap, order = lp
    rest = None
    if n_a:
        area = rng.uniform(0, 1, 2) * 10.0 ** rng.uniform(-1, 2)
        rest = Rest(n_a, area, float(rng.uniform(0.5, 3) / area.max()))
    configs = [pareto_configs(T, d[i], e[i]) for i, T in enumerate(times)]
    sizes = np.stack([rng.integers(0, 3, m), rng.integers(0, 3, m)], axis=1)
    value = fluid_value(times, d, e, cap, order, configs, sizes, rest)
    if value is None:                     # a size larger than the cluster
        return
    optimum = _independent_value(times, d, e, cap, order, None if rest is None else (n_a, rest.area, rest.rate))
    assert value >= optimum * (1 - 1e-6)
    assert value >= fluid_bound(times, d, e, cap, order, configs, rest) * (1 - 1e-9)


def test_fluid_value_of_two_jobs_side_by_side_and_one_after_the_other():
    """Two jobs of times 2 and 5 at sizes that fit together: phases end at 2 and 5, value 2·2 + 1·3 = 7;
    at sizes that do not: at 2 and 7, value 2·2 + 1·5 = 9; with A (3 jobs, area 0.5 of the cluster, rate
    1/4 a second) after them: t_A = 4, and each phase counts A's 3 jobs too."""
    from dlsched.policies.fluid import Rest, fluid_value

    times = [np.array([[np.inf, np.inf], [np.inf, 2.0]]), np.array([[np.inf, np.inf], [np.inf, 5.0]])]
    configs = [np.array([3]), np.array([3])]
    sizes = np.array([[1, 1], [1, 1]])
    d, e = np.array([[1.0], [1.0]]), np.zeros((2, 1))
    assert fluid_value(times, d, e, np.array([2.0]), [0, 1], configs, sizes) == pytest.approx(7.0)
    assert fluid_value(times, d, e, np.array([1.5]), [0, 1], configs, sizes) == pytest.approx(9.0)
    assert fluid_value(times, d, e, np.array([0.5]), [0, 1], configs, sizes) is None
    rest = Rest(3, np.array([0.5]), 0.25)
    assert fluid_value(times, d, e, np.array([2.0]), [0, 1], configs, sizes, rest) == pytest.approx(5 * 2 + 4 * 3 + 3 * 4)


def test_incremental_lp_starts_from_the_last_and_ends_at_the_same_optimum(monkeypatch):
    """Under a budget each LP starts from the last one: from its basis when the LP is the same
    (the same jobs, one arrival behind them), from its columns by key when a job joined or left;
    every optimum is the one solved from nothing."""
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.policies import fluid
    from dlsched.sim.engine import simulate
    from dlsched.sim.speed import make_speed
    from dlsched.registry import make_policy

    starts = []
    solve = fluid.FluidLP.solve

    def spy(self, time_limit=None, start=None, basis=None):
        out = solve(self, time_limit, start, basis)
        cold = solve(self)
        assert (out.value is None) == (cold.value is None)
        if out.value is not None:
            assert out.value == pytest.approx(cold.value, rel=1e-9)
        starts.append(("basis" if basis is not None else "columns" if start is not None else "none"))
        return out

    monkeypatch.setattr(fluid.FluidLP, "solve", spy)
    trace, cluster, speed = dl2_trace(30, 3), dl2_cluster(6), make_speed("table")
    result = simulate(trace, cluster, make_policy("fluid", budget_ms=60_000, lp_jobs=6), speed)
    assert result.status == "completed"
    assert starts[0] == "none" and {"basis", "columns"} <= set(starts[1:]) and "none" not in starts[1:]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 6))
def test_a_start_from_a_solution_puts_each_value_back_on_its_column(seed, m):
    """start_from(the LP's own solution) is its optimum (c x = the value); with the first job gone (it
    completed) the columns of the jobs left keep their values, the phase ending at a job named by it."""
    from dlsched.policies.fluid import fluid_lp

    rng = np.random.default_rng(seed)
    times = [_grid(rng, 3, 4) * rng.uniform(1, 5) for _ in range(m)]
    for T in times:
        T[1, 1] = 10.0
    d, e = rng.uniform(0, 1, (m, 2)), rng.uniform(0, 1, (m, 2))
    cap = np.array([2.0, 3.0])
    ids = rng.permutation(100)[:m]
    lp = fluid_lp(times, d, e, cap, list(range(m)), ids=ids)
    out = lp.solve()
    x = lp.start_from(out.solution)
    assert float(lp.mf.c @ x) * lp.unit == pytest.approx(out.value, rel=1e-9)
    later = fluid_lp(times, d, e, cap, list(range(1, m)), ids=ids)
    y = later.start_from(out.solution)
    for key, value in zip(later.keys, y.tolist()):
        assert value == out.solution.get(key, 0.0)
    assert np.count_nonzero(y) == sum(1 for k in later.keys if k in out.solution)
    assert all(k[0] != ids[0] and k[1] != ids[0] for k in later.keys)


class _FakeClock:
    """Seconds that pass only when the fake LP solve of :func:`_fake_budget_run` says so."""

    now = 0.0


def _fake_budget_run(monkeypatch, budget_ms, cost, **params):
    """A budgeted fluid run on 60 DL2 jobs (4 servers) with a fake clock: each decision's clock starts at
    0, and an LP of n jobs takes ``cost(n, decision)`` seconds of it (not solved when that is more than
    HiGHS's limit, which it then takes whole). Returns (the policy, per LP built: (its jobs, the policy's
    m at its build, the decision's number from 1)). The LP itself is solved for real, to optimality."""
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.policies import fluid
    from dlsched.policies.budget import DecisionRecord
    from dlsched.registry import make_policy
    from dlsched.sim.engine import simulate
    from dlsched.sim.speed import make_speed
    from dlsched.solvers.options import Budget

    class FakeBudget(Budget):
        def elapsed(self):
            return _FakeClock.now - self.start

    def clock(self):
        policy.decisions += 1
        return FakeBudget(self.seconds, start=_FakeClock.now, margin=0.0 if self.seconds is None else self.seconds / 10)

    solve, build = fluid.FluidLP.solve, fluid.fluid_lp

    def timed_solve(self, time_limit=None, start=None, basis=None):
        spent = cost(self.live.size, policy.decisions)
        if time_limit is not None and spent > time_limit:
            _FakeClock.now += time_limit
            return fluid.FluidSolve(None, None, {}, None)
        _FakeClock.now += spent
        return solve(self, None, start, basis)

    def counted_build(times, d, e, capacity, order, *args, **kw):
        built.append((len(order), policy.auto_jobs, policy.decisions))
        return build(times, d, e, capacity, order, *args, **kw)

    built = []
    policy = make_policy("fluid", **({} if budget_ms is None else {"budget_ms": budget_ms}), **params)
    policy.decisions = 0
    monkeypatch.setattr(DecisionRecord, "clock", clock)
    monkeypatch.setattr(fluid.FluidLP, "solve", timed_solve)
    monkeypatch.setattr(fluid, "fluid_lp", counted_build)
    result = simulate(dl2_trace(60, 4), dl2_cluster(4), policy, make_speed("table"))
    assert result.status == "completed"
    return policy, built


def test_a_budgeted_lp_grows_to_what_its_share_solves_and_shrinks_after_a_miss(monkeypatch):
    """Budget 100 ms, an LP of n jobs taking 10 µs n³ (15 jobs: 34 ms): m grows from 8 after three LPs of m
    jobs in a row took at most a quarter of their share (90 ms: the budget less its tenth), to 15, where
    34 ms stops it. From the 40th decision LPs take four times as long: the first at 15 jobs (135 ms)
    misses, m halves to 7, grows to 10 (40 ms) and stays. Every decision records an objective with its gap,
    and no LP holds more than m jobs."""
    def cost(n, decision):
        return 1e-5 * n ** 3 * (4 if decision >= 40 else 1)

    policy, built = _fake_budget_run(monkeypatch, 100, cost)
    assert all(jobs <= m for jobs, m, _ in built)
    jobs = {decision: n for n, _, decision in built}
    assert [jobs[decision] for decision in range(13, 18)] == [7, 8, 8, 8, 10]      # 8 active from the 14th
    assert max(n for decision, n in jobs.items() if decision < 40) == 15 and jobs[40] == 15
    assert jobs[41] == 7 and max(n for decision, n in jobs.items() if decision > 40) == 10
    # every decision records an objective with its gap: the LP's value of what runs against the LP's optimum, or at
    # the one miss the kept answer's against fluid_bound (the fake clock spends nothing on the certificate)
    gaps = policy.decision_record.gaps
    assert len(policy.decision_record.objectives) == len(built) == len(gaps) and policy.decision_record.uncertified == 0
    assert min(gaps) >= 0 and gaps[39] > 0


def test_without_a_budget_every_lp_holds_every_active_job(monkeypatch):
    """No budget: the LP of every active job (lp_jobs unset), at every decision, as before."""
    from dlsched.policies import fluid

    seen = []
    shares = fluid.fluid_shares

    def spy(times, d, e, capacity, order, *args, **kw):
        seen.append((len(order), len(times)))
        return shares(times, d, e, capacity, order, *args, **kw)

    monkeypatch.setattr(fluid, "fluid_shares", spy)
    policy, built = _fake_budget_run(monkeypatch, None, lambda n, decision: 0.0)
    assert built and len(seen) == len(built) and all(n == active for n, active in seen)
    assert max(n for n, _ in seen) > fluid.AUTO_START

def _budgeted_fluid_run(trace_seed: int, servers: int):
    """``fluid`` under a generous budget (LP of 4 jobs) reset on a 40-job DL2 trace, and the simulation to step."""
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.registry import make_policy
    from dlsched.sim.engine import Simulation
    from dlsched.sim.policy import PolicyContext
    from dlsched.sim.speed import make_speed

    trace, cluster, speed = dl2_trace(40, trace_seed), dl2_cluster(servers), make_speed("table")
    policy = make_policy("fluid", budget_ms=60_000, lp_jobs=4)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    return policy, Simulation(trace, cluster, speed, seed=0)



def test_an_answer_whose_placement_does_not_fit_gives_way_to_the_last_sizes():
    """Under a budget, when the answer's expected placement (seconds per job placed at a new size, here
    forced to a day) exceeds what remains, the decision keeps the last answer's sizes for the jobs still
    active (nothing to place) and the jobs that arrived since wait; it records the kept sizes' certified gap."""
    policy, sim = _budgeted_fluid_run(2, 4)
    kept = 0
    for _ in range(30):
        events = sim.advance(None)
        if events is None or not events:
            break
        state = sim.state()
        before = None if policy.previous is None else policy.previous.copy()
        forced = before is not None and kept < 3
        if forced:
            policy.place.rate = 86_400.0
        decision = policy.schedule(state, events)
        if forced and policy.last_answer == "kept":
            kept += 1
            active = np.asarray(state.active)
            held = active[before[active, 0] > 0]
            assert {j: (pl.n_workers, pl.n_ps) for j, pl in decision.items()} == \
                {int(j): (int(before[j, 0]), int(before[j, 1])) for j in held}
            assert 0 <= policy.decision_record.gaps[-1] < 1
        sim.apply(decision, policy.name)
    assert kept == 3


def test_the_kept_start_keeps_the_last_sizes_and_starts_the_waiting_jobs_that_fit_shortest_first():
    """kept_answers: the last sizes of the jobs still active, then the waiting ones at one PS and their fewest
    workers, shortest remaining first, while they fit what the kept sizes leave (within the aggregate
    capacity); the kept sizes alone; and the kept start cut to what is placed in the time given."""
    from dlsched.policies.greedy import greedy_view

    policy, sim = _budgeted_fluid_run(5, 2)
    checked = 0
    for _ in range(40):
        events = sim.advance(None)
        if not events:
            break
        state = sim.state()
        if policy.previous is not None:
            view = greedy_view(policy.view, np.asarray(state.active))
            last = policy.previous
            was = np.isin(view.jobs, policy.previous_jobs)
            (start, n), (alone, zero), (cut, k) = policy.kept_answers(view, last, was, policy.place.rate * 2.5)
            assert zero == 0 and np.array_equal(alone[view.jobs[was]], last[view.jobs[was]])
            # the cut start: the kept sizes and the first of the started jobs placed in the time given (2 of them)
            assert k == min(n, 2)
            kept = alone[view.jobs, 0] > 0
            assert np.array_equal(cut[view.jobs[kept]], alone[view.jobs[kept]])
            started = (cut[view.jobs, 0] > 0) & ~kept
            assert np.count_nonzero(started) == k and np.array_equal(cut[view.jobs[started]], start[view.jobs[started]])
            assert not alone[view.jobs[~was]].any()
            new = np.flatnonzero((start[view.jobs, 0] > 0) & (alone[view.jobs, 0] == 0))
            assert n == new.size and np.all(start[view.jobs[new], 1] == 1)
            assert np.array_equal(start[view.jobs[new], 0], view.min_workers[new])
            use = start[view.jobs, :1] * view.d + start[view.jobs, 1:] * view.e
            assert np.all(use.sum(axis=0) <= view.capacity + 1e-9) or not n
            checked += n > 0
        sim.apply(policy.schedule(state, events), policy.name)
    assert checked > 0

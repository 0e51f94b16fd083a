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


def _independent_value(times, d, e, cap, order):
    """The same LP written term by term in CVXPY (shares no code with fluid.py)."""
    import cvxpy as cp

    m = len(times)
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
    cons += [use_k[k, r] <= cap[r] * t[k] for k in range(m) for r in range(cap.size) if cap[r] > 0]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(m - np.arange(m), t))), cons)
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
    assert policies[4].decision_record.objectives[-1] < policies[None].decision_record.objectives[-1]

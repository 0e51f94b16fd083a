"""The one-row MCMDK by dynamic programming (dlsched.solvers.knapsack_dp): the exact optimum, the
same choice as HiGHS when it is unique, a tie left to the solver, and SMD's decisions unchanged."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import dlsched

from dlsched.instance.core import MCMDK
from dlsched.instance.smd_gen import generate
from dlsched.solvers import knapsack_dp, smd
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import SolveOptions

OPTS = SolveOptions(threads=1)


def one_row_core(rng, n, cap, integral):
    """n jobs, each a zero-use column ("defer") and 1-3 others on one row of capacity ``cap``."""
    ks = 2 + rng.integers(0, 3, n)
    ptr = np.concatenate([[0], np.cumsum(ks)]).astype(np.int64)
    use = rng.integers(1, 12, ptr[-1]).astype(float)
    use[ptr[:-1]] = 0.0
    value = rng.integers(0, 40, ptr[-1]).astype(float) if integral else rng.random(ptr[-1]) * 100
    A = sp.csr_matrix(np.vstack([use, np.zeros_like(use)]))       # a second, unused row
    return MCMDK(value, A, np.array([float(cap), 0.0]), ptr, "min", "exactly_one")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 14), st.integers(0, 40), st.integers(0, 10_000), st.booleans())
def test_dp_matches_highs_when_unique_and_refuses_ties(n, cap, seed, integral):
    core = one_row_core(np.random.default_rng(seed), n, cap, integral)
    row = knapsack_dp.one_row(core)
    assert row is not None and row[0] == 0 and row[2] == cap
    out = knapsack_dp.solve_unique(core, core.value, row[1], row[2])
    exact = solve_core(core, OPTS)
    if out is None:
        # a tie: some other choice is within the tolerance of the optimum
        return
    opt, choice = out
    assert opt == pytest.approx(exact.objective, rel=1e-12, abs=1e-9)
    cols = core.columns_of(choice)
    assert row[1][cols].sum() <= cap
    assert core.value[cols].sum() == pytest.approx(opt, rel=1e-12, abs=1e-9)
    assert np.array_equal(choice, exact.solution)          # the unique optimum: HiGHS's answer too
    report = dlsched.check(core, choice)                     # the independent checker agrees
    assert report.feasible and report.objective == pytest.approx(opt, rel=1e-12, abs=1e-9)


def test_a_tie_is_left_to_the_solver():
    # two identical jobs, room for one: two optima
    core = MCMDK(np.array([5.0, 1.0, 5.0, 1.0]), sp.csr_matrix([[0, 3, 0, 3.0]]), np.array([4.0]),
                 np.array([0, 2, 4]), "min", "exactly_one")
    row = knapsack_dp.one_row(core)
    assert knapsack_dp.solve_unique(core, core.value, row[1], row[2]) is None
    core.value[3] = 1.5                                    # now the first job runs
    opt, choice = knapsack_dp.solve_unique(core, core.value, row[1], row[2])
    assert opt == 6.0 and choice.tolist() == [1, 0]


def test_not_applicable_to_two_rows_fractions_or_at_most_one():
    two = MCMDK(np.ones(2), sp.csr_matrix([[0, 1.0], [0, 1.0]]), np.array([1.0, 1.0]), np.array([0, 2]), "min", "exactly_one")
    frac = MCMDK(np.ones(2), sp.csr_matrix([[0, 0.0005]]), np.array([1.0]), np.array([0, 2]), "min", "exactly_one")
    amo = MCMDK(np.ones(2), sp.csr_matrix([[0, 1.0]]), np.array([1.0]), np.array([0, 2]), "min", "at_most_one")
    assert all(knapsack_dp.one_row(c) is None for c in (two, frac, amo))


@pytest.mark.parametrize("seed", range(4))
def test_parametric_on_one_row_gives_the_highs_answer(seed, monkeypatch):
    """An SMD core cut to its GPU row (several configurations per job): the parametric iteration
    with the DP's subproblems ends where the one with HiGHS's subproblems ends."""
    inst = generate(14, 3, seed=seed, arrival_rate=None, max_workers=6, max_ps=4)
    core = smd.epoch_core(inst, np.arange(inst.n_jobs))
    r = list(inst.resources).index("gpu")
    dense = core.A.toarray()
    dense[np.arange(dense.shape[0]) != r] = 0.0
    core.A = sp.csr_matrix(dense)
    core.b = np.where(np.arange(core.b.size) == r, np.floor(core.b / 3), core.b)   # capacity binds
    assert knapsack_dp.one_row(core) is not None
    dp = smd.parametric(core, OPTS)
    monkeypatch.setattr(knapsack_dp, "one_row", lambda core: None)
    hi = smd.parametric(core, OPTS)
    assert dp.optimal and hi.optimal
    assert np.array_equal(dp.choice, hi.choice) and dp.objective == pytest.approx(hi.objective, rel=1e-12)


def rigid_classes_core(rng, classes, cap):
    """Rigid jobs (defer or run) in classes (1-5 jobs each) of the same use and the same saving, each
    job's costs shifted by 0-2, shuffled in the core's order."""
    kinds = [(float(rng.integers(5, 40)), float(rng.integers(0, 5)), float(rng.integers(1, 8))) for _ in range(classes)]
    jobs = [(d + z, r + z, a) for d, r, a in kinds for z in rng.integers(0, 3, int(rng.integers(1, 6))).astype(float)]
    jobs = [jobs[i] for i in rng.permutation(len(jobs))]
    value = np.array([v for d, r, _ in jobs for v in (d, r)])
    use = np.array([u for _, _, a in jobs for u in (0.0, a)])
    ptr = np.arange(0, 2 * len(jobs) + 1, 2)
    return MCMDK(value, sp.csr_matrix(use[None, :]), np.array([float(cap)]), ptr, "min", "exactly_one")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(0, 30), st.integers(0, 10_000))
def test_the_dp_over_classes_of_identical_jobs_gives_an_optimum(classes, cap, seed):
    core = rigid_classes_core(np.random.default_rng(seed), classes, cap)
    row = knapsack_dp.one_row(core)
    out = knapsack_dp.solve_unique_classes(core, core.value, row[1], row[2])
    if out is None:
        return
    opt, choice = out
    exact = solve_core(core, OPTS)
    assert opt == pytest.approx(exact.objective, rel=1e-12, abs=1e-9)
    report = dlsched.check(core, choice)
    assert report.feasible and report.objective == pytest.approx(opt, rel=1e-12, abs=1e-9)


def test_identical_jobs_tie_is_settled_by_the_dp_over_classes_as_highs_settles_it():
    # three identical rigid jobs, room for two of them, and another job
    core = MCMDK(np.array([5.0, 1.0, 5.0, 1.0, 5.0, 1.0, 9.0, 2.0]), sp.csr_matrix([[0, 3, 0, 3, 0, 3, 0, 1.0]]),
                 np.array([7.0]), np.array([0, 2, 4, 6, 8]), "min", "exactly_one")
    row = knapsack_dp.one_row(core)
    assert knapsack_dp.solve_unique(core, core.value, row[1], row[2]) is None
    opt, choice = knapsack_dp.solve_unique_classes(core, core.value, row[1], row[2])
    assert opt == 9.0 and choice.tolist() == [0, 1, 1, 1]
    assert choice.tolist() == solve_core(core, OPTS).solution.tolist()
    core.value[6:] = [6.0, 2.0]           # a fourth job of 3 GPUs that differs by its costs, not by their difference
    core.A = sp.csr_matrix([[0, 3, 0, 3, 0, 3, 0, 3.0]])
    row = knapsack_dp.one_row(core)
    assert knapsack_dp.solve_unique_classes(core, core.value, row[1], row[2])[1].tolist() == [0, 0, 1, 1]
    assert solve_core(core, OPTS).solution.tolist() == [0, 0, 1, 1]
    core.value[6:] = [9.0, 1.0]           # now it saves as much with 6 GPUs as two of the others: a tie left
    core.A = sp.csr_matrix([[0, 3, 0, 3, 0, 3, 0, 6.0]])
    assert knapsack_dp.solve_unique_classes(core, core.value, knapsack_dp.one_row(core)[1], 7) is None


def test_thousandths_and_rows_that_cannot_bind():
    # uses in whole thousandths (OpenB's GPU shares, 3 x 0.46 = 1.3800000000000001) count in thousandths;
    # a second row that holds whatever is chosen leaves the first as the one row
    core = MCMDK(np.ones(4), sp.csr_matrix([[0, 3 * 0.46, 0, 0.5], [0, 1.0, 0, 1.0]]), np.array([1.5, 2.0]),
                 np.array([0, 2, 4]), "min", "exactly_one")
    r, use, cap = knapsack_dp.one_row(core)
    assert r == 0 and use.tolist() == [0, 1380, 0, 500] and cap == 1500
    core.b[1] = 1.5                                       # now both rows can bind
    assert knapsack_dp.one_row(core) is None


def reduced_core(rng, n, scale):
    """n jobs: most rigid (wait, or run with one of a few sizes, many alike), some with 2-3 sizes;
    a GPU row in whole units / ``scale`` that binds by a few jobs, and a CPU row that never binds."""
    rigid = rng.random(n) < 0.8
    ks = np.where(rigid, 2, 3 + rng.integers(0, 2, n))
    ptr = np.concatenate([[0], np.cumsum(ks)]).astype(np.int64)
    sizes = rng.choice([1, 2, 4, 8, 25, 50, 460], ptr[-1]) / scale
    sizes[ptr[:-1]] = 0.0
    wait = rng.integers(20, 40, n).astype(float) * 100
    value = np.zeros(ptr[-1])
    for j in range(n):                                    # a bigger size runs sooner
        cols = np.arange(ptr[j] + 1, ptr[j + 1])
        value[ptr[j]] = wait[j]
        value[cols] = rng.integers(1, 20) * 100 - np.sort(sizes[cols]) * scale / 10 + rng.random(cols.size) * rng.choice([0, 1e-3])
    gpu = sizes
    most = np.maximum.reduceat(gpu, ptr[:-1]).sum()
    cap = np.floor(most * rng.uniform(0.7, 0.98) * scale) / scale
    cpu = np.where(gpu > 0, 1.0, 0.0)
    return MCMDK(value, sp.csr_matrix(np.vstack([gpu, cpu])), np.array([cap, float(n)]), ptr, "min", "exactly_one")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 60), st.integers(0, 10_000), st.sampled_from([1, 1000]))
def test_the_reduced_dp_gives_the_highs_answer_when_unique(n, seed, scale):
    """The fixing and the recursion over what must be freed (solve_reduced) against HiGHS on cores of
    rigid and elastic jobs: the same choice whenever it answers, and an answer where HiGHS's optimum is
    unique by a margin (ties are left to the solver)."""
    core = reduced_core(np.random.default_rng(seed), n, scale)
    r, use, cap = knapsack_dp.one_row(core)
    exact = solve_core(core, OPTS)
    out = knapsack_dp.solve_reduced(core, core.value, use, cap)
    full = knapsack_dp.solve_unique(core, core.value, use, cap) if scale == 1 else None
    if out is None:
        assert full is None                               # a tie for the DP over the capacity too
        return
    opt, choice = out
    assert np.array_equal(choice, exact.solution)
    assert opt == pytest.approx(exact.objective, rel=1e-12, abs=1e-9)
    report = dlsched.check(core, choice)
    assert report.feasible and report.objective == pytest.approx(opt, rel=1e-12, abs=1e-9)
    if full is not None:
        assert np.array_equal(full[1], choice)


def test_the_reduced_dp_refuses_a_tie():
    # two identical rigid jobs and room for one: either may wait
    core = MCMDK(np.array([5.0, 1.0, 5.0, 1.0, 9.0, 1.0]), sp.csr_matrix([[0, 3, 0, 3, 0, 1.0]]), np.array([4.0]),
                 np.array([0, 2, 4, 6]), "min", "exactly_one")
    r, use, cap = knapsack_dp.one_row(core)
    assert knapsack_dp.solve_reduced(core, core.value, use, cap) is None
    core.value[2] = 5.5                                   # now the second one runs
    opt, choice = knapsack_dp.solve_reduced(core, core.value, use, cap)
    assert choice.tolist() == [0, 1, 1] and opt == 7.0

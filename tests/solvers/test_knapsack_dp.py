"""The one-row MCMDK by dynamic programming (dlsched.solvers.knapsack_dp): the exact optimum and, of
several, the canonical one of the tie rule (dlsched.solvers.ties), against enumeration, HiGHS and
the checker; HiGHS's answers made canonical within classes of identical jobs."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import dlsched

from dlsched.instance.core import MCMDK
from dlsched.instance.smd_gen import generate
from dlsched.solvers import knapsack_dp, smd, ties
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import SolveOptions

OPTS = SolveOptions(threads=1)


def tied_core(rng, n, cap, kinds):
    """n jobs drawn from ``kinds`` prototypes (a zero-use column, "defer", and 1-2 others on one row of
    capacity ``cap``; small whole costs), some shifted by a constant: many ties, within classes of
    copies and between them. A second row is unused."""
    protos = []
    for _ in range(kinds):
        k = int(rng.integers(2, 4))
        protos.append((np.r_[0, rng.integers(1, 8, k - 1)].astype(float), rng.integers(0, 6, k).astype(float)))
    picks = [protos[int(rng.integers(kinds))] for _ in range(n)]
    use = np.concatenate([u for u, _ in picks])
    value = np.concatenate([v + (rng.integers(1, 3) if rng.random() < 0.3 else 0) for _, v in picks])
    ptr = np.concatenate([[0], np.cumsum([u.size for u, _ in picks])]).astype(np.int64)
    A = sp.csr_matrix(np.vstack([use, np.zeros_like(use)]))
    return MCMDK(value, A, np.array([float(cap), 0.0]), ptr, "min", "exactly_one")


def enumerated(core, use, cap):
    """(optimum, the choices within the tie rule's tolerance of it) by enumerating every choice."""
    ptr, cost = core.job_ptr, core.value
    feasible = []
    for ch in itertools.product(*[range(k) for k in np.diff(ptr).tolist()]):
        cols = ptr[:-1] + np.array(ch, dtype=np.int64)
        if use[cols].sum() <= cap:
            feasible.append((ch, float(cost[cols].sum())))
    opt = min(c for _, c in feasible)
    return opt, [ch for ch, c in feasible if c <= opt + ties.tolerance(cost, ptr)]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 8), st.integers(0, 30), st.integers(1, 3), st.integers(0, 10_000), st.sampled_from([1, 10]))
def test_the_dp_gives_the_first_optimum_of_the_tie_rule(n, cap, kinds, seed, unit):
    """Of every choice within the tolerance of the optimum, the DP returns the first with the jobs in
    the core's order, each preferring its later column (the largest tuple); HiGHS's optimum, made
    canonical, is the same whenever the optima differ only by exchanging identical jobs. ``unit`` 10:
    uses in tens on a capacity that need not be (the recursion counts in tens, rounding up)."""
    rng = np.random.default_rng(seed)
    core = tied_core(rng, n, cap, kinds)
    if unit > 1:
        cap = cap * unit + int(rng.integers(0, unit))
        core.A, core.b = core.A * unit, np.array([float(cap), 0.0])
    r, use, c = knapsack_dp.one_row(core)
    assert r == 0 and c == cap
    opt, choice = knapsack_dp.solve(core, core.value, use, cap)
    best, near = enumerated(core, use, cap)
    assert opt == pytest.approx(best, abs=1e-9)
    assert tuple(choice.tolist()) == max(near)
    report = dlsched.check(core, choice)                     # the independent checker agrees
    assert report.feasible and report.objective == pytest.approx(best, abs=1e-9)
    assert np.array_equal(ties.canonical(core, core.value, choice), choice)   # already canonical
    exact = solve_core(core, OPTS)
    assert exact.objective == pytest.approx(best, abs=1e-9)
    highs = ties.canonical(core, core.value, exact.solution)
    assert dlsched.check(core, highs).objective == pytest.approx(exact.objective, abs=1e-9)
    if len({tuple(ties.canonical(core, core.value, np.array(x)).tolist()) for x in near}) == 1:
        assert np.array_equal(highs, choice)


def test_copies_run_in_order_of_arrival():
    # three identical rigid jobs, room for two of them, and another job that runs anyway
    core = MCMDK(np.array([5.0, 1.0, 5.0, 1.0, 5.0, 1.0, 9.0, 2.0]), sp.csr_matrix([[0, 3, 0, 3, 0, 3, 0, 1.0]]),
                 np.array([7.0]), np.array([0, 2, 4, 6, 8]), "min", "exactly_one")
    r, use, cap = knapsack_dp.one_row(core)
    opt, choice = knapsack_dp.solve(core, core.value, use, cap)
    assert opt == 9.0 and choice.tolist() == [1, 1, 0, 1]
    assert ties.canonical(core, core.value, np.array([0, 1, 1, 1])).tolist() == [1, 1, 0, 1]
    assert ties.canonical(core, core.value, solve_core(core, OPTS).solution).tolist() == [1, 1, 0, 1]
    # a copy whose costs differ by a constant is exchangeable too; one whose saving differs is not
    core.value[2:4] += 10.0
    assert knapsack_dp.solve(core, core.value, use, cap)[1].tolist() == [1, 1, 0, 1]
    core.value[3] += 0.5                                  # the second saves less: it waits
    assert knapsack_dp.solve(core, core.value, use, cap)[1].tolist() == [1, 0, 1, 1]


def test_between_classes_the_earlier_job_takes_the_later_column():
    # one 6-GPU job saving 8 or two 3-GPU jobs saving 4 each: a tie between classes on 6 GPUs
    value = np.array([9.0, 1.0, 5.0, 1.0, 5.0, 1.0])
    use = sp.csr_matrix([[0, 6, 0, 3, 0, 3.0]])
    core = MCMDK(value, use, np.array([6.0]), np.array([0, 2, 4, 6]), "min", "exactly_one")
    r, u, cap = knapsack_dp.one_row(core)
    assert knapsack_dp.solve(core, core.value, u, cap)[1].tolist() == [1, 0, 0]          # the first job runs
    swapped = MCMDK(value[[2, 3, 4, 5, 0, 1]], sp.csr_matrix([[0, 3, 0, 3, 0, 6.0]]), np.array([6.0]),
                    np.array([0, 2, 4, 6]), "min", "exactly_one")
    assert knapsack_dp.solve(swapped, swapped.value, u[[2, 3, 4, 5, 0, 1]], cap)[1].tolist() == [1, 1, 0]


def test_a_tie_up_to_rounding_is_a_tie():
    # the first job (2 GPUs) saves 0.3, the two others (1 GPU each) 0.1 and 0.2; room for 2 GPUs:
    # 0.1 + 0.2 is 0.30000000000000004, within the tolerance of 0.3, so the first job runs
    core = MCMDK(np.array([0.3, 0.0, 0.1, 0.0, 0.2, 0.0]), sp.csr_matrix([[0, 2, 0, 1, 0, 1.0]]), np.array([2.0]),
                 np.array([0, 2, 4, 6]), "min", "exactly_one")
    r, use, cap = knapsack_dp.one_row(core)
    opt, choice = knapsack_dp.solve(core, core.value, use, cap)
    assert opt == 0.3 and choice.tolist() == [1, 0, 0]


def test_not_applicable_to_two_rows_fractions_or_at_most_one():
    two = MCMDK(np.ones(2), sp.csr_matrix([[0, 1.0], [0, 1.0]]), np.array([0.0, 0.0]), np.array([0, 2]), "min", "exactly_one")
    frac = MCMDK(np.ones(2), sp.csr_matrix([[0, 0.0005]]), np.array([0.0]), np.array([0, 2]), "min", "exactly_one")
    amo = MCMDK(np.ones(2), sp.csr_matrix([[0, 1.0]]), np.array([1.0]), np.array([0, 2]), "min", "at_most_one")
    assert all(knapsack_dp.one_row(c) is None for c in (two, frac, amo))


@pytest.mark.parametrize("seed", range(4))
def test_parametric_on_one_row_ends_at_the_highs_optimum(seed, monkeypatch):
    """An SMD core cut to its GPU row (several configurations per job): the parametric iteration
    with the DP's subproblems ends at the optimum of the one with HiGHS's subproblems."""
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
    assert dp.objective == pytest.approx(hi.objective, rel=1e-12)
    assert dlsched.check(core, dp.choice).feasible


def test_thousandths_and_rows_that_cannot_bind():
    # uses in whole thousandths (OpenB's GPU shares, 3 x 0.46 = 1.3800000000000001) count in thousandths;
    # a second row that holds whatever is chosen leaves the first as the one row
    core = MCMDK(np.ones(4), sp.csr_matrix([[0, 3 * 0.46, 0, 0.5], [0, 1.0, 0, 1.0]]), np.array([1.5, 2.0]),
                 np.array([0, 2, 4]), "min", "exactly_one")
    r, use, cap = knapsack_dp.one_row(core)
    assert r == 0 and use.tolist() == [0, 1380, 0, 500] and cap == 1500
    core.b[1] = 1.5                                       # now both rows can bind
    assert knapsack_dp.one_row(core) is None
    core.b[:] = [2.0, 2.0]                                # now neither: the row nobody uses
    r, use, cap = knapsack_dp.one_row(core)
    assert r == -1 and cap == 0 and not use.any()


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




def first_within(core, use, cap):
    """(optimum, the tie rule's first choice) by a recursion of our own over exact uses (a dict of
    use -> least cost of the jobs from j on), with no fixing: the reference for cores too large to
    enumerate."""
    ptr, cost = core.job_ptr, core.value
    n = core.n_jobs
    tables = [None] * (n + 1)
    tables[n] = {0: 0.0}
    for j in range(n - 1, -1, -1):
        t = {}
        for o in range(ptr[j], ptr[j + 1]):
            for u, v in tables[j + 1].items():
                if u + use[o] <= cap and v + cost[o] < t.get(u + use[o], np.inf):
                    t[u + use[o]] = v + cost[o]
        tables[j] = t
    opt = min(tables[0].values())
    budget, spent, room, choice = opt + ties.tolerance(cost, ptr), 0.0, cap, []
    for j in range(n):
        for o in range(ptr[j + 1] - 1, ptr[j] - 1, -1):
            rest = [v for u, v in tables[j + 1].items() if u <= room - use[o]]
            if rest and spent + cost[o] + min(rest) <= budget:
                choice.append(o - ptr[j])
                spent, room = spent + cost[o], room - use[o]
                break
    return opt, choice


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(0, 10_000), st.sampled_from([1, 1000]))
def test_the_reduced_dp_gives_the_first_optimum(n, seed, scale):
    """The fixing and the recursion over what must be freed (solve) on cores of rigid and elastic jobs,
    many alike: HiGHS's optimum, the reference's first choice within the tolerance, the checker."""
    core = reduced_core(np.random.default_rng(seed), n, scale)
    r, use, cap = knapsack_dp.one_row(core)
    out = knapsack_dp.solve(core, core.value, use, cap)
    exact = solve_core(core, OPTS)
    opt, choice = out
    assert opt == pytest.approx(exact.objective, rel=1e-12, abs=1e-9)
    ref_opt, ref_choice = first_within(core, use, cap)
    assert opt == pytest.approx(ref_opt, rel=1e-12, abs=1e-9)
    assert choice.tolist() == ref_choice
    report = dlsched.check(core, choice)
    assert report.feasible and report.objective <= exact.objective + ties.tolerance(core.value, core.job_ptr)
    assert np.array_equal(ties.canonical(core, core.value, choice), choice)


def test_thousands_of_copies_run_first_come_first_served():
    """OpenB's arrival burst in small: 3,000 copies of a one-GPU pod (in thousandths) and 40 of an
    8-GPU one on room for all but 12 GPUs: the last copies wait, and the table stays small."""
    n1, n8 = 3000, 40
    value = np.tile([5.0, 1.0], n1 + n8)
    value[2 * n1::2] = 41.0                                    # the 8-GPU pods save 40: 12 GPUs cost less
    gpu = np.tile([0.0, 1.0], n1 + n8)
    gpu[2 * n1 + 1::2] = 8.0
    cap = n1 + 8 * n8 - 12
    core = MCMDK(value, sp.csr_matrix(gpu[None, :]), np.array([float(cap)]), np.arange(0, 2 * (n1 + n8) + 1, 2),
                 "min", "exactly_one")
    r, use, c = knapsack_dp.one_row(core)
    opt, choice = knapsack_dp.solve(core, core.value, use, c)
    assert choice[:n1 - 12].all() and not choice[n1 - 12:n1].any() and choice[n1:].all()
    assert opt == pytest.approx(dlsched.check(core, choice).objective) == pytest.approx(solve_core(core, OPTS).objective)


def test_canonical_keeps_feasibility_and_cost_on_several_rows():
    """On a core of two binding rows (HiGHS's case), the canonical choice deals each class's columns
    out again: the earlier of two identical jobs takes the later column."""
    value = np.array([4.0, 2.0, 1.0, 4.0, 2.0, 1.0, 7.0, 1.0])
    A = sp.csr_matrix([[0, 1, 2, 0, 1, 2, 0, 1.0], [0, 2, 1, 0, 2, 1, 0, 1.0]])
    core = MCMDK(value, A, np.array([3.0, 3.0]), np.array([0, 3, 6, 8]), "min", "exactly_one")
    assert ties.exchange_classes(core, core.value).tolist() == [0, 0, 1]
    out = ties.canonical(core, core.value, np.array([2, 1, 1]))
    assert out.tolist() == [2, 1, 1]
    assert ties.canonical(core, core.value, np.array([1, 2, 1])).tolist() == [2, 1, 1]
    assert dlsched.check(core, out).objective == dlsched.check(core, np.array([1, 2, 1])).objective


def test_smd_subproblems_on_two_rows_run_copies_in_order_of_arrival(monkeypatch):
    """Where two rows can bind, HiGHS decides and its answer is made canonical: of six copies of a
    rigid job (one GPU and one CPU each) on room for three, the first three run."""
    n = 6
    value = np.tile([10.0, 4.0], n)
    use = np.tile([0.0, 1.0], n)
    core = MCMDK(value, sp.csr_matrix(np.vstack([use, use])), np.array([3.0, 3.0]), np.arange(0, 2 * n + 1, 2),
                 "min", "exactly_one")
    core.meta = {"configs": np.column_stack([np.repeat(np.arange(n), 2), np.tile([0, 1], n), np.tile([0, 1], n),
                                             np.full(2 * n, -1)]), "N": np.full(n, 4.0)}
    assert knapsack_dp.one_row(core) is None
    raw = []
    monkeypatch.setattr(ties, "canonical", lambda core, cost, choice: raw.append(choice.copy()) or choice)
    out = smd.parametric(core, OPTS)
    monkeypatch.undo()
    assert out.optimal and out.objective == 3 * 4.0 + 3 * 10.0
    fifo = smd.parametric(core, OPTS)
    assert fifo.choice.tolist() == [1, 1, 1, 0, 0, 0]
    assert any(r.tolist() != [1, 1, 1, 0, 0, 0] for r in raw)        # HiGHS's own answer was another

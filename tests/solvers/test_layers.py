"""The decomposition / sparsification layers on the core MCMDK (MODELS.md §1).

Known optima (mknap1 headers, GAP bounds), brute force on tiny random instances, and the
properties every layer must keep: bound <= optimum <= heuristic (in the maximisation sense),
the checker accepts every solution, lp-round keeps its additive guarantee.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import dlsched
from dlsched.errors import InputError
from dlsched.instance.generate import random_mcmdk
from dlsched.instance.orlib import read_gap, read_mkp
from dlsched.solvers.core import job_slack
from dlsched.solvers.rounding import sub_instance
from dlsched.solvers.lp import gain, lagrangian, solve_lp
from dlsched.solvers.rounding import round_down
from dlsched.solvers.sampling import sample_columns
from tests.helpers import brute_force, tiny_mcmdk

LAYERS = ("lp-round", "core", "sample")
TOL = 1e-6


def at_least_as_good(sense: str, a: float, b: float) -> bool:
    return a >= b - TOL * max(1, abs(b)) if sense == "max" else a <= b + TOL * max(1, abs(b))


def assert_valid(inst, res, optimum: float) -> None:
    """Checker accepts, objective no better than the optimum, bound no worse than it."""
    if res.status.has_solution():
        rep = dlsched.check(inst, res)
        assert rep.feasible, rep.violations
        assert at_least_as_good(inst.sense, optimum, res.objective)
    assert res.bound is not None
    assert at_least_as_good(inst.sense, res.bound, optimum), (res.method, res.bound, optimum)


@pytest.mark.parametrize("k", range(7))
def test_layers_on_mknap1_known_optima(data, k):
    inst = read_mkp(data / "orlib/mkp/mknap1.txt", k)
    opt = inst.reference.objective
    for m in LAYERS:
        res = dlsched.solve(inst, m, time_limit=5, threads=1)
        assert_valid(inst, res, opt)
    # without a limit the core method ends with the proven optimum
    res = dlsched.solve(inst, "core", threads=1)
    assert res.status == dlsched.Status.OPTIMAL and res.objective == pytest.approx(opt)


def test_lp_bound_matches_chu_beasley_lp_values(data):
    """mkcbres.txt's second table: the LP optimum of 5.100-00 and 10.100-01."""
    for f, k, lp_value in (("mknapcb1.txt", 0, 2.4585902722e04), ("mknapcb4.txt", 1, 2.3220685777e04)):
        info = solve_lp(read_mkp(data / "orlib/mkp" / f, k))
        assert info.bound == pytest.approx(lp_value, rel=1e-9)
        assert info.objective == pytest.approx(lp_value, rel=1e-9)


def test_layers_on_gap_min_and_max(data):
    """Minimisation (GAP, exactly_one): bound <= optimum <= objective, with the optimum from bounds.txt."""
    from dlsched.instance.orlib import gap_bounds

    bounds = gap_bounds(data / "orlib/gap/bounds.txt")
    for sense in ("min", "max"):
        lb, ub = bounds[("c0515_1", sense)]
        assert lb == ub
        inst = read_gap(data / "orlib/gap/c0515_1", sense, lb)
        for m in ("core", "sample"):
            res = dlsched.solve(inst, m, time_limit=5, threads=1)
            assert_valid(inst, res, lb)
            assert res.status.has_solution()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk())
def test_layers_against_brute_force(inst):
    opt = brute_force(inst)
    for m in LAYERS:
        res = dlsched.solve(inst, m, time_limit=2, threads=1)
        if opt is None:
            assert not res.status.has_solution()
            continue
        assert_valid(inst, res, opt)
    if opt is not None:
        res = dlsched.solve(inst, "core", threads=1)
        assert res.objective == pytest.approx(opt)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(), np_seed := __import__("hypothesis").strategies.integers(0, 2**31 - 1))
def test_lagrangian_certificate_for_any_prices(inst, np_seed):
    """g(x) <= L(u) - sum of the chosen options' regrets, for every feasible x and any u >= 0."""
    import itertools

    rng = np.random.default_rng(np_seed)
    u = rng.exponential(1.0, inst.n_rows) * (rng.random(inst.n_rows) < 0.8)
    L, _, regret, regret_none = lagrangian(inst, u)
    g = gain(inst)
    A = inst.A.toarray()
    options = [range(-1 if inst.choose == "at_most_one" else 0, int(n)) for n in inst.n_configs]
    for combo in itertools.islice(itertools.product(*options), 500):
        cols = [inst.job_ptr[j] + o for j, o in enumerate(combo) if o >= 0]
        if np.all(A[:, cols].sum(axis=1) <= inst.b + 1e-9):
            lost = sum(regret[inst.job_ptr[j] + o] if o >= 0 else regret_none[j] for j, o in enumerate(combo))
            assert g[cols].sum() <= L - lost + 1e-7


@pytest.mark.parametrize("seed", range(4))
def test_basic_lp_has_at_most_one_fractional_job_per_row(seed):
    inst = random_mcmdk(60, 8, 4, seed)
    info = solve_lp(inst)
    assert info.fractional_jobs(inst).size <= inst.n_rows


@pytest.mark.parametrize("choose", ["at_most_one"])
@pytest.mark.parametrize("seed", range(5))
def test_lp_round_additive_guarantee(seed, choose):
    """objective >= z_LP - Delta, Delta <= m * max g+ (the docstring's guarantee), on random instances."""
    inst = random_mcmdk(80, 6, 5, seed, choose=choose)
    res = dlsched.solve(inst, "lp-round", time_limit=5, threads=1)
    assert dlsched.check(inst, res).feasible
    info = solve_lp(inst)
    _, frac, delta = round_down(inst, info)
    assert res.stats["guarantee"] == pytest.approx(delta)
    assert delta <= inst.n_rows * max(gain(inst).max(), 0) + 1e-9
    assert res.objective >= info.objective - delta - 1e-6
    assert res.bound >= res.objective - 1e-6


def test_lp_round_guarantee_on_chu_beasley(data):
    for f in ("mknapcb1.txt", "mknapcb4.txt"):
        inst = read_mkp(data / "orlib/mkp" / f, 2)
        res = dlsched.solve(inst, "lp-round", time_limit=2, threads=1)
        assert dlsched.check(inst, res).feasible
        assert res.stats["fractional_jobs"] <= inst.n_rows
        assert res.objective >= solve_lp(inst).objective - res.stats["guarantee"] - 1e-6


def test_core_streams_improving_solutions_and_bound(data):
    inst = read_mkp(data / "orlib/mkp/mknapcb1.txt", 1)
    seen = []
    res = dlsched.solve(inst, "core", time_limit=2, threads=1, on_incumbent=seen.append)
    assert seen, "no incumbent reported"
    times = [s.seconds for s in seen]
    assert times == sorted(times)      # timing itself is measured by the suite timelimits, not asserted
    values = [s.objective for s in seen]
    assert all(b >= a - 1e-6 for a, b in zip(values, values[1:])), "incumbents must improve"
    assert values[-1] <= res.objective + 1e-6
    assert all(s.bound is None or s.bound >= 24274 - 1e-6 for s in seen)   # best known 5.100-01
    assert res.bound >= 24274 - 1e-6


def test_sample_keeps_n_per_job_plus_support():
    inst = random_mcmdk(40, 30, 4, 3)
    info = solve_lp(inst)
    keep = sample_columns(inst, info, 5, seed=1)
    per_job = np.bincount(inst.col_job[keep], minlength=inst.n_jobs)
    assert np.all(per_job == 5)
    assert np.array_equal(keep, sample_columns(inst, info, 5, seed=1))
    assert not np.array_equal(keep, sample_columns(inst, info, 5, seed=2))
    res = dlsched.solve(inst, "sample", time_limit=5, threads=1, samples=5, seed=1)
    assert dlsched.check(inst, res).feasible
    assert res.stats["kept_columns"] >= 5 * inst.n_jobs
    assert res.bound >= res.objective - 1e-6


def test_sample_rejects_a_bad_budget():
    inst = random_mcmdk(5, 3, 2, 0)
    with pytest.raises(InputError, match="samples"):
        dlsched.solve(inst, "sample", samples=0)


def test_sub_instance_fixes_the_rest():
    inst = random_mcmdk(10, 4, 3, 0)
    res = dlsched.solve(inst, "lp-round", threads=1)
    col = np.full(inst.n_jobs, -1)
    on = res.solution >= 0
    col[on] = inst.job_ptr[np.flatnonzero(on)] + res.solution[on]
    free = np.array([1, 4, 7])
    sub = sub_instance(inst, free, col)
    assert sub.n_jobs == 3 and sub.n_cols == 12
    fixed = [c for j, c in enumerate(col) if j not in free and c >= 0]
    assert np.allclose(sub.b, np.maximum(inst.b - inst.A[:, fixed].toarray().sum(axis=1), 0))
    assert np.all(np.isfinite(job_slack(inst, solve_lp(inst))))


def test_random_mcmdk_is_seeded_and_shaped():
    a, b, c = random_mcmdk(20, 7, 3, 5), random_mcmdk(20, 7, 3, 5), random_mcmdk(20, 7, 3, 6)
    assert a.n_jobs == 20 and a.n_cols == 140 and a.n_rows == 3
    assert np.array_equal(a.value, b.value) and (a.A != b.A).nnz == 0
    assert not np.array_equal(a.value, c.value)
    # values grow with size: correlated instance
    size = np.asarray(a.A.sum(axis=0)).ravel()
    assert np.corrcoef(size, a.value)[0, 1] > 0.6
    with pytest.raises(InputError, match="n_configs"):
        random_mcmdk(3, 0, 2)


def test_bound_is_reported_even_when_time_is_short():
    inst = random_mcmdk(200, 20, 6, 1)
    for m in LAYERS:
        res = dlsched.solve(inst, m, time_limit=0.5, threads=1)
        assert res.bound is not None and math.isfinite(res.bound)
        if res.status.has_solution():
            assert res.bound >= res.objective - 1e-6
            assert dlsched.check(inst, res).feasible


def test_cli_sample_with_samples_and_seed(data, capsys):
    """`dlsched solve FILE --method sample --samples N --seed S` (the seed travels as SolveOptions.seed)."""
    import json

    from dlsched.cli import main

    rc = main(["solve", str(data / "orlib/mkp/mknap1.txt"), "--problem", "4", "--method", "sample",
               "--samples", "3", "--seed", "2", "--time-limit", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["checked"] is True and out["stats"]["seed"] == 2
    assert out["objective"] == 12400 and out["bound"] >= 12400


def test_lp_bound_above_best_known_on_all_chu_beasley(data):
    """The certified L(u) is never below the best known value (60 problems, LP only: fast)."""
    from dlsched.instance.orlib import best_known, reference_of

    table = best_known(data / "orlib/mkp/mkcbres.txt")
    for f in ("mknapcb1.txt", "mknapcb4.txt"):
        for k in range(30):
            inst = read_mkp(data / "orlib/mkp" / f, k)
            ref, _ = reference_of(inst, table)
            info = solve_lp(inst)
            assert info.bound >= ref - 1e-6, (inst.name, info.bound, ref)
            assert info.fractional_jobs(inst).size <= inst.n_rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(max_jobs=5), __import__("hypothesis").strategies.integers(0, 2**31 - 1))
def test_restricted_solve_certifies_the_whole_problem(inst, seed):
    """A core/sample solve on an arbitrary column subset: its bound holds for the *whole* problem."""
    import time

    from dlsched.models.mcmdk import build_matrix
    from dlsched.solvers.core import Tracker, solve_restricted
    from dlsched.solvers.options import SolveOptions

    opt = brute_force(inst)
    info = solve_lp(inst)
    if opt is None or info.status != dlsched.Status.OPTIMAL:
        return
    rng = np.random.default_rng(seed)
    keep = rng.random(inst.n_cols) < 0.5
    none_ok = rng.random(inst.n_jobs) < 0.5 if inst.choose == "at_most_one" else np.zeros(inst.n_jobs, bool)
    tr = Tracker(inst, SolveOptions(), time.perf_counter(), info)
    solve_restricted(inst, build_matrix(inst), info, keep, none_ok, tr, 5.0, {})
    g_opt = opt if inst.sense == "max" else -opt
    assert tr.bound >= g_opt - 1e-6
    if tr.choice is not None:
        assert dlsched.check(inst, tr.choice).feasible
        assert tr.gain <= g_opt + 1e-6


@pytest.mark.parametrize("name", ["c0515_1", "c0520_2", "c0525_2"])
@pytest.mark.parametrize("sense", ["min", "max"])
def test_lp_round_repairs_tight_gap(data, name, sense):
    """exactly_one: greedy placement fails on these; the exact repair must still return a checked solution."""
    inst = read_gap(data / "orlib/gap" / name, sense)
    res = dlsched.solve(inst, "lp-round", time_limit=5, threads=1)
    assert res.status.has_solution(), res.message
    assert dlsched.check(inst, res).feasible
    assert at_least_as_good(inst.sense, res.bound, res.objective)


@pytest.mark.parametrize("kind, sense", [("c", "min"), ("e", "min")])
def test_exact_with_primal_start_keeps_a_valid_bound(kind, sense):
    """exact with primal_start=on: a checked answer, the layer's statistics, and bound <= objective (min)."""
    from dlsched.instance.classic_gen import gap_instance

    inst = gap_instance(kind, 5, 60, seed=7)
    res = dlsched.solve(inst, "exact", time_limit=5, primal_start="on")
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    assert res.stats["primal_start"]["method"] == "core"
    assert res.bound <= res.objective + 1e-6
    ref = dlsched.solve(inst, "exact", primal_start="off")       # proven optimum of this small model
    assert ref.status.value == "optimal" and ref.bound - 1e-6 <= res.objective


def test_exact_primal_start_arguments():
    inst = dlsched.load(Path(__file__).parents[2] / "instances" / "mknap1-0.json")
    with pytest.raises(InputError):
        dlsched.solve(inst, "exact", primal_start="sometimes")
    with pytest.raises(InputError, match="time limit"):
        dlsched.solve(inst, "exact", primal_start="on")
    assert "primal_start" not in dlsched.solve(inst, "exact", time_limit=5).stats   # small model: auto is off

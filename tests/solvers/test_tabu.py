"""The ``tabu`` method (dlsched/solvers/tabu.py): every answer checked, bound <= optimum <= heuristic
(optimum by brute force or the exact MILP), the fixing never cuts off a better solution, the
time-limit contract, and clear refusals of bad options and of models it cannot hold."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.errors import InputError
from dlsched.instance.classic_gen import chu_beasley_mkp, gap_instance
from dlsched.instance.generate import random_mcmdk
from dlsched.solvers import tabu as tabu_module
from dlsched.solvers.core import Tracker
from dlsched.solvers.lp import gain, solve_lp
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.tabu import fixing_masks, misfit_jobs, search_masks
from tests.helpers import brute_force, tiny_mcmdk

TOL = 1e-6


def assert_sandwich(inst, res, optimum: float) -> None:
    """Checker accepts; bound on the far side of the optimum, the objective on the near side."""
    sign = 1.0 if inst.sense == "max" else -1.0
    assert res.inconsistency() is None
    if res.status.has_solution():
        rep = dlsched.check(inst, res)
        assert rep.feasible, rep.violations
        assert sign * res.objective <= sign * optimum + TOL * max(1.0, abs(optimum))
    assert res.bound is not None
    assert sign * res.bound >= sign * optimum - TOL * max(1.0, abs(optimum))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(max_jobs=5), st.integers(0, 3))
def test_tabu_against_brute_force(inst, seed):
    """Random tiny MCMDKs (several configurations per job, both choice rules, max and min)."""
    opt = brute_force(inst)
    res = dlsched.solve(inst, "tabu", threads=1, seed=seed)        # no limit: ends by its own rule
    if opt is None:
        assert not res.status.has_solution()
        return
    assert_sandwich(inst, res, opt)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(max_jobs=5), st.integers(0, 3))
def test_tabu_with_hyperplane_centres_against_brute_force(inst, seed):
    """``centres="hyperplanes"``: restarts around the LP optima of the cardinality hyperplanes
    (under ``exactly_one`` the perturbed prices as by default); the same guarantees."""
    opt = brute_force(inst)
    res = dlsched.solve(inst, "tabu", threads=1, seed=seed, centres="hyperplanes")
    if opt is None:
        assert not res.status.has_solution()
        return
    assert_sandwich(inst, res, opt)


@pytest.mark.parametrize("m,n,alpha,seed", [(5, 60, 0.5, 1), (10, 40, 0.25, 2)])
def test_hyperplane_centres_on_mkp_against_the_exact_milp(m, n, alpha, seed):
    """On MKPs the restarts do use hyperplane centres; checked answer, bound >= optimum >= objective."""
    inst = chu_beasley_mkp(n, m, alpha, seed)
    exact = dlsched.solve(inst, "exact", threads=1)
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=2, seed=seed, centres="hyperplanes")
    assert_sandwich(inst, res, exact.objective)
    assert res.objective >= 0.99 * exact.objective
    assert res.stats["restarts"] == 0 or res.stats["hyperplanes"] > 0 or res.objective == exact.objective


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(max_jobs=5), st.integers(0, 3))
def test_tabu_with_misfits_against_brute_force(inst, seed):
    """``misfits=true`` with a one-job core (``core_min=1``), so that the core is the misfits plus
    one job and the other jobs stay fixed: checked answer, bound >= optimum >= objective."""
    opt = brute_force(inst)
    res = dlsched.solve(inst, "tabu", threads=1, seed=seed, misfits=True, core_share=0.01, core_min=1)
    if opt is None:
        assert not res.status.has_solution()
        return
    assert_sandwich(inst, res, opt)


@pytest.mark.parametrize("m,n,alpha,seed", [(5, 60, 0.5, 1), (10, 40, 0.25, 2), (5, 80, 0.25, 3)])
def test_misfits_on_mkp_against_the_exact_milp(m, n, alpha, seed):
    """``misfits=true`` on MKPs with a core smaller than the model (``core_min=10``): checked answer,
    bound >= optimum (plain HiGHS, proven) >= objective, and a good answer."""
    inst = chu_beasley_mkp(n, m, alpha, seed)
    exact = dlsched.solve(inst, "exact", threads=1)
    assert exact.status == dlsched.Status.OPTIMAL
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=2, seed=seed, misfits=True, core_min=10)
    assert_sandwich(inst, res, exact.objective)
    assert res.objective >= 0.99 * exact.objective


def test_misfits_are_the_jobs_the_incumbent_sets_against_the_prices():
    """On an MKP: an item is a misfit iff the incumbent takes it at a negative reduced gain
    g - u.a or leaves it at a positive one (LP prices u); with ``misfits`` every misfit is in the
    search core, without it the core is the ``core_jobs`` jobs only."""
    inst = chu_beasley_mkp(300, 10, 0.25, seed=5)
    lp = solve_lp(inst)
    tr = Tracker(inst, SolveOptions(), 0.0, lp)
    res = dlsched.solve(inst, "lp-round", threads=1, time_limit=2)
    tr.offer(res.solution, float(gain(inst)[inst.columns_of(res.solution)].sum()))
    reduced = gain(inst) - inst.A.T @ lp.u
    taken = tr.choice >= 0
    tol = 1e-9 * max(1.0, abs(lp.bound_gain))
    expected = (taken & (reduced < -tol)) | (~taken & (reduced > tol))
    mis = misfit_jobs(inst, tr, lp)
    assert np.array_equal(mis, expected)
    assert mis.any(), "the repair of the rounded LP takes items against the prices on this problem"
    _, _, jobs_plain, _ = search_masks(inst, tr, lp, False, 20)
    _, _, jobs_mis, _ = search_masks(inst, tr, lp, False, 20, misfits=True)
    assert jobs_plain.size == 20
    assert set(np.flatnonzero(mis)) <= set(jobs_mis) and set(jobs_plain) <= set(jobs_mis)


def test_misfits_stop_at_the_limit_and_stream():
    """``misfits=true`` on a 500-item MKP: stopped by its limit (termination, checked answer, LP bound),
    the improvements streamed in order of time and value."""
    inst = chu_beasley_mkp(500, 10, 0.5, seed=7)
    seen = []
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=1.0, misfits=True, on_incumbent=seen.append)
    assert res.termination == "time_limit" and dlsched.check(inst, res).feasible
    assert res.objective <= res.bound <= res.stats["lp_bound"] + 1e-6
    assert seen and seen[-1].objective == pytest.approx(res.objective)
    assert all(a.objective <= b.objective and a.seconds <= b.seconds for a, b in zip(seen, seen[1:]))


@pytest.mark.parametrize("seed", range(6))
def test_tabu_finds_the_optimum_of_small_mcmdks(seed):
    """Eight jobs, three configurations, three rows: the search reaches the brute-force optimum."""
    inst = random_mcmdk(8, 3, 3, seed=seed, tightness=0.4)
    opt = brute_force(inst)
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=1)
    assert_sandwich(inst, res, opt)
    assert res.objective == pytest.approx(opt)


@pytest.mark.parametrize("m,n,alpha,seed", [(5, 40, 0.5, 1), (10, 30, 0.25, 2)])
def test_tabu_against_the_exact_milp_on_mkp(m, n, alpha, seed):
    inst = chu_beasley_mkp(n, m, alpha, seed)
    exact = dlsched.solve(inst, "exact", threads=1)
    assert exact.status == dlsched.Status.OPTIMAL
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=3, seed=seed)
    assert_sandwich(inst, res, exact.objective)
    assert res.objective >= 0.99 * exact.objective      # a poor search would fail this


def test_tabu_on_a_gap_instance_exactly_one():
    """Under exactly_one (GAP, minimisation) every job keeps a configuration; the bound holds."""
    inst = gap_instance("d", 4, 16, seed=3)
    exact = dlsched.solve(inst, "exact", threads=1, time_limit=10)
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=1)
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    ref = exact.bound if exact.bound is not None else exact.objective
    assert res.bound <= ref + TOL * abs(ref) and res.bound <= res.objective


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(max_jobs=5))
def test_fixing_keeps_every_better_solution(inst):
    """A solution worth at least z + 1 (integer gains) uses only options the fixing allows."""
    import itertools

    lp = solve_lp(inst)
    if lp.status != dlsched.Status.OPTIMAL:
        return
    g = gain(inst)
    A = inst.A.toarray()
    options = [range(-1 if inst.choose == "at_most_one" else 0, int(k)) for k in inst.n_configs]
    sols = []
    for combo in itertools.product(*options):
        cols = [inst.job_ptr[j] + o for j, o in enumerate(combo) if o >= 0]
        if np.all(A[:, cols].sum(axis=1) <= inst.b + 1e-9):
            sols.append((np.array(combo), float(g[cols].sum())))
    if not sols:
        return
    tr = Tracker(inst, SolveOptions(), 0.0, lp)
    worst = min(sols, key=lambda s: s[1])
    tr.offer(*worst)
    allowed, none_ok = fixing_masks(inst, tr, True)
    for combo, v in sols:
        if v >= tr.gain + 1:
            on = combo >= 0
            assert allowed[inst.job_ptr[np.flatnonzero(on)] + combo[on]].all()
            assert none_ok[~on].all()


def test_time_limit_and_stream():
    """Stopped by the limit: best so far with the LP bound, improvements streamed in order."""
    inst = chu_beasley_mkp(250, 10, 0.5, seed=7)
    seen = []
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=1.0, on_incumbent=seen.append)
    assert res.termination == "time_limit" and dlsched.check(inst, res).feasible
    assert res.bound >= res.objective and res.bound <= res.stats["lp_bound"] + 1e-6
    assert seen and seen[-1].objective == pytest.approx(res.objective)
    assert all(a.objective <= b.objective for a, b in zip(seen, seen[1:]))
    short = dlsched.solve(inst, "tabu", threads=1, time_limit=0.01)     # the LP may not even finish
    assert short.inconsistency() is None
    if short.status.has_solution():
        # the LP unfinished, the greedy start comes without a bound
        assert dlsched.check(inst, short).feasible and (short.bound is None or short.bound >= short.objective)


@pytest.mark.parametrize("param,value", [("tenure", 0), ("tenure", 2.0), ("stall", -1), ("kick", 0),
                                         ("kick", 1.5), ("lam_up", 1.0), ("lam_cap", 0.5), ("price_noise", -0.1),
                                         ("fixing", "maybe"), ("swaps", "perhaps"), ("search_share", 0),
                                         ("tenure", "x"), ("centres", "lp"), ("misfits", "some")])
def test_bad_options_are_refused(param, value):
    inst = chu_beasley_mkp(20, 3, 0.5, seed=1)
    with pytest.raises(InputError) as err:
        dlsched.solve(inst, "tabu", threads=1, time_limit=1, **{param: value})
    assert err.value.where == param


def test_models_too_large_to_hold_dense_are_refused(monkeypatch):
    monkeypatch.setattr(tabu_module, "DENSE_ENTRIES", 100)
    inst = chu_beasley_mkp(50, 5, 0.5, seed=1)
    with pytest.raises(InputError, match="columns x rows"):
        dlsched.solve(inst, "tabu", threads=1, time_limit=1)


def test_a_limited_call_without_a_compiled_kernel_searches_in_python(monkeypatch):
    """Compiling the numba kernel cannot be interrupted: with less than COMPILE_SECONDS left and no
    compiled kernel, the call starts the compile in the background, searches with the kernel's
    Python original meanwhile and keeps its limit: its answer is a search's, at least as good as
    its start (it was the start solution); with no limit it searches compiled."""
    inst = chu_beasley_mkp(100, 5, 0.5, seed=3)
    dlsched.solve(inst, "tabu", threads=1)                   # compiled (or loaded) here
    from dlsched.solvers.tabu_kernel import search
    assert tabu_module.kernel_ready(search)
    start = dlsched.solve(inst, "lp-round", threads=1)
    monkeypatch.setattr(tabu_module, "kernel_ready", lambda search: False)
    started = []
    never = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])    # a compile that never ends in time
    monkeypatch.setattr(tabu_module, "compile_in_background", lambda: started.append(1) or never)
    try:
        t0 = time.perf_counter()
        res = dlsched.solve(inst, "tabu", threads=1, time_limit=2.0)
        wall = time.perf_counter() - t0
    finally:
        never.kill()
    assert started == [1], "the kernel is compiled in the background for the calls after this one"
    assert res.stats["kernel"].startswith("python") and res.termination == "time_limit" and res.stats["iterations"] > 0
    assert wall < 2.0 + 1.0, "one Python iteration at most past the limit"
    assert res.objective >= start.objective and res.inconsistency() is None
    assert dlsched.check(inst, res).feasible and res.bound >= res.objective
    assert "kernel" not in dlsched.solve(inst, "tabu", threads=1).stats


def test_a_first_limited_call_switches_to_the_compiled_kernel_when_it_is_ready(monkeypatch):
    """A first call with a few seconds (the kernel neither loaded nor cached) searches in Python until
    the background compile is done, then with the compiled kernel."""
    inst = chu_beasley_mkp(100, 5, 0.5, seed=3)
    dlsched.solve(inst, "tabu", threads=1)                   # compiled (or loaded) here
    done = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])   # a compile that ends in 0.5 s
    monkeypatch.setattr(tabu_module, "kernel_ready", lambda search: done.poll() is not None)
    monkeypatch.setattr(tabu_module, "compile_in_background", lambda: done)
    res = dlsched.solve(inst, "tabu", threads=1, time_limit=5.0)
    assert res.stats["kernel"] == "compiled during the call (python until then)"
    assert "jit_first_chunk_seconds" in res.stats, "the search ran"
    assert dlsched.check(inst, res).feasible and res.bound >= res.objective


def test_the_background_compile_program_runs():
    """What :func:`compile_in_background` starts: an unlimited call in a fresh interpreter that exits cleanly."""
    proc = tabu_module.compile_in_background()
    assert proc.wait(timeout=300) == 0

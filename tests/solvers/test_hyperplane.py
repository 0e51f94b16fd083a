"""The ``hyperplane`` method (dlsched/solvers/hyperplane.py): the cardinality range never cuts off a
better solution, the bound stays on the right side of the optimum, the checker accepts every answer."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.errors import InputError
from dlsched.instance.classic_gen import chu_beasley_mkp, gap_instance
from dlsched.solvers.core import Tracker
from dlsched.solvers.cardinality import cardinality_range
from dlsched.solvers.lp import gain, lagrangian, solve_lp
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.tabu import hyperplane_duals, shifted
from tests.helpers import brute_force, tiny_mcmdk


def solutions(inst):
    """(cardinality, gain) of every feasible choice of a tiny instance."""
    A = inst.A.toarray()
    g = gain(inst)
    for combo in itertools.product(*[range(-1, int(n)) for n in inst.n_configs]):
        cols = [inst.job_ptr[j] + o for j, o in enumerate(combo) if o >= 0]
        if np.all(A[:, cols].sum(axis=1) <= inst.b + 1e-9):
            yield len(cols), float(g[cols].sum())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(max_jobs=5), st.integers(-3, 3))
def test_cardinality_range_keeps_every_better_solution(inst, shift):
    """Every solution worth at least z + delta has its cardinality inside [k_lo, k_hi]; None only
    when no solution is worth that much."""
    if inst.choose != "at_most_one":
        return
    sols = list(solutions(inst))
    z = max(v for _, v in sols) + shift        # around the optimum: above it nothing may remain
    found = cardinality_range(inst, z, 1.0, SolveOptions())
    better = [(k, v) for k, v in sols if v >= z + 1 - 1e-9]
    if found is None:
        assert not better
        return
    k_lo, k_hi, lp_max = found
    for k, v in better:
        assert k_lo <= k <= k_hi and v <= lp_max + 1e-6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk(max_jobs=5), st.integers(-3, 0))
def test_hyperplane_duals_bound_their_hyperplane(inst, shift):
    """tabu's hyperplane centres (``centres="hyperplanes"``): the prices (u, mu) kept for k give the
    Lagrangian bound u.b + mu k + sum_j max(0, max_o g - A'u - mu), which is at least every solution
    with k jobs chosen (valid) and at most the range's largest LP value (the sign HiGHS reports was
    read right: at the LP optimum's duals the bound is z_LP(k))."""
    if inst.choose != "at_most_one":
        return
    sols = list(solutions(inst))
    z = max(v for _, v in sols) + shift
    tr = Tracker(inst, SolveOptions(), 0.0, solve_lp(inst), 0.0)
    tr.choice, tr.gain = np.full(inst.n_jobs, -1, dtype=np.int64), z     # only the incumbent's value matters
    found = cardinality_range(inst, z, 1.0, SolveOptions())
    planes = hyperplane_duals(inst, tr, SolveOptions())
    if found is None:
        assert not planes
        return
    lp_max = found[2]
    ks = [k for k, _, _ in planes]
    assert min(ks) == found[0] and max(ks) == found[1]
    for k, u, mu in planes:
        bound = lagrangian(shifted(inst, mu), u)[0] + mu * k
        assert bound <= lp_max + 1e-6 * max(1.0, abs(lp_max))
        for card, v in sols:
            if card == k:
                assert v <= bound + 1e-6 * max(1.0, abs(bound))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk())
def test_hyperplane_against_brute_force(inst):
    opt = brute_force(inst)
    res = dlsched.solve(inst, "hyperplane", time_limit=2, threads=1)
    if opt is None:
        assert not res.status.has_solution()
        return
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    assert res.objective == pytest.approx(opt)        # tiny: the core layer proves it


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_mcmdk())
def test_hyperplane_from_tabu_against_brute_force(inst):
    """``start="tabu"``: the tabu search's incumbent (bound: the LP's) handed to the cut whole MILP,
    which proves the optimum of a tiny model; both choice rules, max and min."""
    opt = brute_force(inst)
    res = dlsched.solve(inst, "hyperplane", time_limit=2, threads=1, start="tabu")
    if opt is None:
        assert not res.status.has_solution()
        return
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    assert res.objective == pytest.approx(opt)
    if res.bound is not None:
        assert (res.bound >= opt - 1e-6) if inst.sense == "max" else (res.bound <= opt + 1e-6)


@pytest.mark.parametrize("seed,start", [(3, "core"), (4, "core"), (3, "tabu"), (5, "tabu")])
def test_hyperplane_bound_and_answer_on_a_hard_mkp(seed, start):
    """A 30-constraint MKP the start layer does not finish in its share: the cardinality range is
    used, the answer is checked and bound >= optimum >= objective (optimum from plain HiGHS)."""
    inst = chu_beasley_mkp(40, 30, 0.25, seed)
    res = dlsched.solve(inst, "hyperplane", time_limit=1.0, threads=1, start=start)
    assert start in res.stats
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    ref = dlsched.solve(inst, "exact", threads=1)
    assert ref.status == dlsched.Status.OPTIMAL
    assert res.bound >= ref.objective - 1e-6 >= res.objective - 1e-6


@pytest.mark.parametrize("seed", [3, 6])
def test_hyperplane_from_tabu_with_misfits_on_a_hard_mkp(seed):
    """``start="tabu", misfits=true`` (the search's core also holds the items its incumbent sets
    against the LP prices): checked answer, bound >= optimum (plain HiGHS) >= objective."""
    inst = chu_beasley_mkp(40, 30, 0.25, seed)
    res = dlsched.solve(inst, "hyperplane", time_limit=1.0, threads=1, start="tabu", misfits=True)
    assert "tabu" in res.stats
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    ref = dlsched.solve(inst, "exact", threads=1)
    assert ref.status == dlsched.Status.OPTIMAL
    assert res.bound >= ref.objective - 1e-6 >= res.objective - 1e-6


def test_hyperplane_on_gap_skips_the_range():
    """exactly_one: every solution has cardinality n_jobs, so the method is the whole MILP from the core incumbent."""
    inst = gap_instance("c", 5, 60, seed=7)
    res = dlsched.solve(inst, "hyperplane", time_limit=3, threads=1)
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    assert "cardinality" not in res.stats
    assert res.bound <= res.objective + 1e-6


def test_hyperplane_rejects_a_bad_share():
    inst = chu_beasley_mkp(20, 5, 0.5, 1)
    with pytest.raises(InputError):
        dlsched.solve(inst, "hyperplane", time_limit=1, core_share=1.5)
    with pytest.raises(InputError, match="start"):
        dlsched.solve(inst, "hyperplane", time_limit=1, start="lns")
    with pytest.raises(InputError, match="misfits"):      # an option of the tabu search only
        dlsched.solve(inst, "hyperplane", time_limit=1, misfits=True)
    with pytest.raises(InputError, match="misfits"):
        dlsched.solve(inst, "hyperplane", time_limit=1, start="tabu", misfits="sometimes")


def test_hyperplane_goes_on_when_the_core_layer_finds_nothing(monkeypatch):
    """The core layer's share may end without an incumbent (on a 4,000-job model its LP took most of
    it): the core layer then gets the rest of the time instead of the call returning with no solution."""
    import dlsched.solvers.hyperplane as hp
    from dlsched.result import make_result

    real, calls = hp.core_layer, []

    def nothing_first(inst, opts):
        calls.append(1)
        if len(calls) == 1:
            return make_result("core", opts, sense=inst.sense, termination="time_limit", bound=None)
        return real(inst, opts)

    monkeypatch.setattr(hp, "core_layer", nothing_first)
    inst = chu_beasley_mkp(30, 5, 0.5, 2)
    res = dlsched.solve(inst, "hyperplane", time_limit=3, threads=1)
    ref = dlsched.solve(inst, "exact", threads=1)
    assert res.status.has_solution() and dlsched.check(inst, res).feasible
    assert res.bound >= ref.objective - 1e-6 >= res.objective - 1e-6
    assert len(calls) == 2 and "core_again" in res.stats


def test_hyperplane_from_tabu_stops_at_the_limit_and_streams():
    """``start="tabu"`` on a 250-item MKP neither layer closes in 1 s: stopped by the limit, the
    improvements of both steps streamed in order, the bound on the right side."""
    inst = chu_beasley_mkp(250, 10, 0.5, seed=7)
    seen = []
    res = dlsched.solve(inst, "hyperplane", time_limit=1.0, threads=1, start="tabu", on_incumbent=seen.append)
    assert res.termination == "time_limit" and dlsched.check(inst, res).feasible
    assert res.bound >= res.objective
    assert seen and seen[-1].objective <= res.objective + 1e-6
    assert all(a.objective <= b.objective + 1e-6 for a, b in zip(seen, seen[1:]))
    assert all(a.seconds <= b.seconds for a, b in zip(seen, seen[1:]))

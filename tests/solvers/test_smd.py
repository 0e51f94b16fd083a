"""SMD decomposition, baselines and the time-indexed model (MODELS.md §2.3, §2.4, §5, §7)."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dlsched
from dlsched.instance.smd_gen import generate
from dlsched.policies.drf import DRF
from dlsched.policies.greedy import OptimusGreedyPolicy
from dlsched.policies.smd import run
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.smd import epoch_core, parametric

OPTS = SolveOptions(threads=1)


@pytest.mark.parametrize("seed", range(8))
def test_parametric_reaches_the_exact_optimum(seed):
    inst = generate(12, 2 + seed % 3, seed=seed, arrival_rate=None)
    core = epoch_core(inst, np.arange(inst.n_jobs))
    exact = solve_core(core, OPTS)
    out = parametric(core, OPTS)
    assert out.optimal
    assert out.objective == pytest.approx(exact.objective, rel=1e-9)
    assert out.bound <= exact.objective * (1 + 1e-9)
    # the lower bounds never decrease and the upper bounds never increase
    lbs, ubs = zip(*out.history)
    assert all(b >= a - 1e-9 for a, b in zip(lbs, lbs[1:])) and all(b <= a + 1e-9 for a, b in zip(ubs, ubs[1:]))
    alloc = inst.allocation_from_core(core, out.choice)[:, :2]
    assert dlsched.check(inst, {"allocation": alloc}, out.objective).feasible


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 12), st.integers(1, 4), st.integers(0, 10_000), st.booleans(), st.sampled_from(["highs", "lp-round"]))
def test_bound_le_exact_le_heuristic(n, servers, seed, memory, sub):
    inst = generate(n, servers, seed=seed, arrival_rate=None, max_workers=6, max_ps=6)
    core = epoch_core(inst, np.arange(n))
    exact = solve_core(core, OPTS).objective
    out = parametric(core, OPTS, memory=memory, sub=sub)
    assert out.bound <= exact * (1 + 1e-9) + 1e-9
    assert out.objective >= exact * (1 - 1e-9) - 1e-9
    if memory and sub == "highs":
        assert out.objective == pytest.approx(exact, rel=1e-9)
    if memory and sub == "lp-round":     # the additive guarantee of the rounding subproblem
        assert out.objective <= exact + out.delta + 1e-6 * max(1.0, exact)
    alloc = inst.allocation_from_core(core, out.choice)[:, :2]
    rep = dlsched.check(inst, {"allocation": alloc}, out.objective)
    assert rep.feasible, rep.violations


def test_smd_epoch_method_certifies_optimality():
    inst = generate(10, 2, seed=3, arrival_rate=None)
    res = dlsched.solve(inst, "smd", threads=1, mode="epoch", select="all")
    ex = dlsched.solve(inst, "exact", threads=1)
    assert res.status == dlsched.Status.OPTIMAL and res.objective == pytest.approx(ex.objective, rel=1e-9)
    assert res.bound <= res.objective * (1 + 1e-9)
    assert dlsched.check(inst, res).feasible and dlsched.check(inst, ex).feasible


@pytest.mark.parametrize("seed", range(4))
def test_schedules_are_checked_and_time_indexed_is_a_lower_bound(seed):
    inst = generate(5, 1, seed=seed, max_len_slots=3, arrival_rate=1.0)
    ti = dlsched.solve(inst, "time-indexed", threads=1)
    assert ti.status == dlsched.Status.OPTIMAL and dlsched.check(inst, ti).feasible
    assert ti.stats["horizon_provable"]
    for m in ("smd", "optimus", "drf"):
        res = dlsched.solve(inst, m, threads=1)
        rep = dlsched.check(inst, res)
        assert rep.feasible, (m, rep.violations)
        assert rep.objective == pytest.approx(res.objective)
        assert ti.objective <= res.objective + 1e-9


def test_no_resizing_is_never_better_and_front_ends_agree():
    inst = generate(3, 1, seed=11, max_len_slots=2, arrival_rate=1.0, max_workers=3, max_ps=3)
    res = {b: dlsched.solve(inst, "time-indexed", threads=1, backend=b, horizon=8) for b in ("highs", "pyomo", "cvxpy")}
    objs = [r.objective for r in res.values()]
    assert objs[0] == pytest.approx(objs[1]) == pytest.approx(objs[2])
    for r in res.values():
        assert dlsched.check(inst, r).feasible
    fixed = dlsched.solve(inst, "time-indexed", threads=1, resizing=False, horizon=8)
    assert fixed.objective >= objs[0] - 1e-9 and dlsched.check(inst, fixed).feasible
    sch = fixed.solution["schedule"]
    for j in range(inst.n_jobs):      # one allocation, no interruption
        on = np.flatnonzero(sch[:, j, 0] > 0)
        assert on.size and np.all(np.diff(on) == 1) and len({tuple(sch[k, j]) for k in on}) == 1


def test_brute_force_time_indexed_on_two_jobs():
    """Tiny case: every per-slot allocation sequence of two jobs over 4 slots, enumerated."""
    import itertools

    inst = generate(2, 1, seed=5, max_len_slots=2, arrival_rate=None, max_workers=2, max_ps=2)
    T = 4
    ti = dlsched.solve(inst, "time-indexed", threads=1, horizon=T)
    assert dlsched.check(inst, ti).feasible
    options = [(0, 0)] + [(w, p) for w in (1, 2) for p in (1, 2)]
    best = np.inf
    per_slot = [c for c in itertools.product(options, repeat=2)
                if np.all(sum(w * inst.d[j] + p * inst.e[j] for j, (w, p) in enumerate(c)) <= inst.capacity)]
    for plan in itertools.product(per_slot, repeat=4):
        sched = np.array(plan, dtype=np.int64)
        rem = inst.iterations.copy()
        done = [0, 0]
        for k in range(4):
            for j in range(2):
                w, p = sched[k, j]
                if done[j]:
                    sched[k, j] = 0
                elif w:
                    rem[j] -= inst.slot_seconds / float(inst.tau(j, w, p))
                    if rem[j] <= 1e-9 * inst.iterations[j]:
                        done[j] = k + 1
        if all(done):
            best = min(best, sum(done))
    assert np.isfinite(best)
    assert ti.objective == pytest.approx(best)


def test_baselines_respect_capacity_under_load():
    inst = generate(40, 3, seed=2, arrival_rate=4.0)
    for pol in (OptimusGreedyPolicy(inst), DRF(placer="first_fit")):
        s = run(inst, pol)
        assert s.complete
        rep = dlsched.check(inst, s.as_solution())
        assert rep.feasible, rep.violations[:3]


def test_unschedulable_job_is_reported_and_others_run():
    inst = generate(6, 1, seed=1, arrival_rate=None)
    inst.d[2] = [100, 2]
    inst.__dict__.pop("_config_cache", None)
    for m in ("smd", "optimus", "drf", "time-indexed"):
        res = dlsched.solve(inst, m, threads=1)
        assert res.status.has_solution(), m
        assert "cannot be scheduled" in res.message and inst.job_names[2] in res.message
        assert dlsched.check(inst, res).feasible
        assert res.solution["schedule"][:, 2].sum() == 0


def test_lp_round_subproblems_at_scale_keep_the_guarantee():
    inst = generate(120, 24, seed=4, arrival_rate=None)
    core = epoch_core(inst, np.arange(inst.n_jobs))
    exact = solve_core(core, OPTS).objective
    out = parametric(core, OPTS, sub="lp-round")
    assert out.bound <= exact * (1 + 1e-9) and exact <= out.objective * (1 + 1e-9)
    assert out.objective <= exact + out.delta + 1e-6 * exact
    res = dlsched.solve(inst, "smd", threads=1, mode="epoch", select="all", sub="lp-round")
    assert dlsched.check(inst, res).feasible and "rounding_delta" in res.stats


def test_bad_method_parameters():
    inst = generate(3, 1, seed=0)
    with pytest.raises(dlsched.InputError, match="mode"):
        dlsched.solve(inst, "smd", mode="forever")
    with pytest.raises(dlsched.InputError, match="wait_slots"):
        dlsched.solve(inst, "smd", wait_slots=0)
    with pytest.raises(dlsched.InputError, match="sub"):
        dlsched.solve(inst, "smd", sub="magic")


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 60), st.integers(1, 6), st.integers(0, 10_000))
def test_outer_selection_fits_and_is_maximal(n, servers, seed):
    from dlsched.solvers.smd import select_jobs

    inst = generate(n, servers, seed=seed, arrival_rate=None)
    active = np.arange(n)
    cand = select_jobs(inst, active)
    use = (inst.d[cand] + inst.e[cand]).sum(axis=0)
    assert cand.size >= 1
    if cand.size > 1:
        assert np.all(use <= inst.capacity + 1e-9)
    for j in np.setdiff1d(active, cand):
        assert not np.all(use + inst.d[j] + inst.e[j] <= inst.capacity + 1e-9)


def test_iterations_are_bounded_by_the_columns_and_init_choices_agree():
    inst = generate(30, 6, seed=9, arrival_rate=None)
    core = epoch_core(inst, np.arange(inst.n_jobs))
    a = parametric(core, OPTS, init="ends")
    b = parametric(core, OPTS, init="fastest")
    assert a.optimal and b.optimal and a.objective == pytest.approx(b.objective, rel=1e-9)
    assert a.iterations <= core.n_cols and b.iterations <= core.n_cols
    for out in (a, b):
        alloc = inst.allocation_from_core(core, out.choice)[:, :2]
        assert dlsched.check(inst, {"allocation": alloc}, out.objective).feasible


def test_schedule_methods_refuse_per_server_instances(tmp_path):
    """Schedules place no servers: on a per-server instance the schedule methods say so up front,
    and the checker will not pass a schedule it cannot verify."""
    import json

    root = Path(__file__).resolve().parents[2]
    doc = json.loads((root / "instances/smd-small.json").read_text())
    doc.setdefault("options", {})["capacity"] = "per_server"
    p = tmp_path / "ps.json"
    p.write_text(json.dumps(doc))
    inst = dlsched.load(p)
    for method in ("smd", "optimus", "drf", "time-indexed"):
        with pytest.raises(dlsched.InputError, match=r"options\.capacity: expected 'aggregate' for schedule methods"):
            dlsched.solve(inst, method)
    res = dlsched.solve(inst, "exact")          # the one-epoch allocation models per-server capacity
    assert res.status == dlsched.Status.OPTIMAL and dlsched.check(inst, res).feasible
    sched = {"schedule": np.zeros((1, inst.n_jobs, 2), dtype=np.int64)}
    assert not dlsched.check(inst, sched).feasible


@pytest.mark.parametrize("capacity", ["aggregate", "per_server"])
@pytest.mark.parametrize("method", ["exact", "lp-round", "core", "sample"])
def test_generic_layers_answer_smd_with_a_checked_allocation(tmp_path, capacity, method):
    """The registry translates the generic layers' core solutions into SMD allocations, which the
    independent checker verifies, and which survive a solution file round trip."""
    import json

    from dlsched.check import check_smd
    from dlsched.cli import main

    inst = generate(10, 3, seed=5, arrival_rate=None)
    inst.options = type(inst.options)(**{**vars(inst.options), "capacity": capacity})
    best = dlsched.solve(inst, "exact", threads=1).objective
    res = dlsched.solve(inst, method, time_limit=5, threads=1)
    assert set(res.solution) == {"allocation"}
    assert res.solution["allocation"].shape == (inst.n_jobs, 3 if capacity == "per_server" else 2)
    rep = check_smd(inst, res.solution, res.objective)
    assert rep.feasible, rep.violations
    assert res.objective >= best - 1e-6 * abs(best)          # minimisation: no layer beats the optimum
    path, out = tmp_path / "inst.json", tmp_path / "sol.json"
    dlsched.save(inst, path)
    assert main(["solve", str(path), "--method", method, "--time-limit", "5", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["solution"]["allocation"]
    assert main(["check", str(path), str(out)]) == 0


@pytest.mark.parametrize("backend", ["highs", "pyomo", "cvxpy"])
def test_time_indexed_out_of_time_before_any_heuristic_is_a_status(backend):
    """The horizon comes from a heuristic schedule; a time limit spent before one finishes is a stop
    (no solution, termination ``time_limit``), not an input error (it failed at load average 6)."""
    inst = generate(4, 2, seed=3, max_len_slots=3.0)
    res = dlsched.solve(inst, "time-indexed", time_limit=1e-9, backend=backend)
    assert res.status == dlsched.Status.NO_SOLUTION and res.termination == "time_limit"
    assert res.objective is None and res.inconsistency() is None


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 150), st.integers(1, 3), st.integers(0, 10_000), st.sampled_from([0.02, 0.05, 0.1, 0.3, 1.0]))
def test_select_jobs_is_first_fit_in_score_order(n, servers, seed, slack):
    """The outer selection (MODELS.md §2.3) against first fit written out: every job in score
    order is kept when its (1, 1) use fits what is left of slack x capacity. Fractional sizes (as
    OpenB's shared GPUs) make subtracting in turn round differently from subtracting sums."""
    from dlsched.solvers.smd import select_jobs
    inst = generate(n, servers, seed=seed, arrival_rate=None)
    rng = np.random.default_rng(seed)
    sizes = [0.0, 0.1, 0.2, 0.3, 0.46, 1.0, 2.0]          # jobs of different sizes and shapes
    inst.d, inst.e = rng.choice(sizes, inst.d.shape) + 1e-3, rng.choice(sizes, inst.e.shape)
    # about three times what slack x capacity holds, so that many jobs are passed over
    inst.d *= 3 * slack * inst.capacity / (inst.d + inst.e).sum(axis=0)
    active = rng.permutation(n)[: max(1, n // 2 + seed % 7)]
    use_least = inst.d[active] + inst.e[active]          # (1, 1): every generated job may run on one worker
    cap = inst.capacity
    share = np.max(np.where(cap > 0, use_least / np.where(cap > 0, cap, 1.0), np.where(use_least > 0, np.inf, 0.0)), axis=1)
    t11 = np.array([float(inst.tau(j, 1, 1)) for j in active.tolist()])
    order = np.argsort(-(inst.weight[active] / (inst.iterations[active] * t11 * np.maximum(share, 1e-12))), kind="stable")
    room, keep = slack * cap + 1e-9, []
    for i in order.tolist():
        if np.all(use_least[i] <= room):
            room = room - use_least[i]
            keep.append(i)
    want = np.sort(active[keep or [int(order[0])]])
    assert np.array_equal(select_jobs(inst, active, slack), want)

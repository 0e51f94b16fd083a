"""OASiS online (MODELS.md §3.2) and the oasis baselines: exactness against brute force, feasibility."""

import itertools

import numpy as np
import pytest

import dlsched
from dlsched.check import check_oasis
from dlsched.instance.oasis import OasisInstance, Utility
from dlsched.instance.oasis_gen import generate, small
from dlsched.solvers.oasis import Prices, PriceParams, dual_subroutine, place, price_params, slot_costs


def random_tiny(seed: int, T: int = 3, H: int = 2, K: int = 2) -> OasisInstance:
    """Two jobs; the first is used to load the cluster, the second is priced."""
    rng = np.random.default_rng(seed)
    kinds = [Utility("sigmoid", {"gamma1": float(rng.uniform(1, 20)), "gamma2": float(rng.uniform(0, 3)), "gamma3": float(rng.uniform(1, 3))}),
             Utility("step", {"value": float(rng.uniform(1, 20)), "deadline": int(rng.integers(1, T + 1))}),
             Utility("linear", {"value": float(rng.uniform(5, 20)), "slope": float(rng.uniform(0, 6))})]
    return OasisInstance(
        resources=("gpu", "cpu"), horizon=T,
        worker_cap=rng.integers(2, 5, size=(H, 2)), ps_cap=np.column_stack([np.zeros(K), rng.integers(2, 5, size=K)]),
        arrival=[1, int(rng.integers(1, 2))], chunks=[2, 2], minibatches=[1, 1], epochs=[1, int(rng.integers(1, 3))],
        tau=[1.0, float(rng.choice([0.5, 1.0, 1.5]))], grad_mb=[0, 0], worker_gbps=[1, float(rng.choice([0.5, 1.0]))],
        ps_gbps=[2, 1.0], worker_demand=[[1, 1], [1, int(rng.integers(1, 3))]], ps_demand=[[0, 1], [0, int(rng.integers(1, 3))]],
        utilities=(kinds[0], kinds[int(rng.integers(0, 3))]))


def loaded_state(inst: OasisInstance, seed: int) -> Prices:
    """A state with random allocations already committed (so prices differ by server and slot)."""
    rng = np.random.default_rng(seed + 99)
    # prices of the same order as the utilities, so that the DP must trade time against cost
    st = Prices(inst, PriceParams(np.full(2, 40.0), np.full(2, 30.0), 0.5, 0.3))
    H, K, T = inst.n_worker_servers, inst.n_ps_servers, inst.horizon
    fw = inst.worker_fit()[0]
    fp = inst.ps_fit()[0]
    y = rng.integers(0, fw + 1, size=(T, H)) // 2
    z = rng.integers(0, fp + 1, size=(T, K)) // 2
    # background load written straight into the state (it need not be a schedule of one job)
    st.g[:, 1:] += y.T[:, :, None] * inst.worker_demand[0][None, None, :]
    st.v[:, 1:] += z.T[:, :, None] * inst.ps_demand[0][None, None, :]
    return st


def one_slot_options(inst, st, i, t):
    """Every placement of job i in slot t: (workers, PSs, cost)."""
    H, K = inst.n_worker_servers, inst.n_ps_servers
    w, s = inst.worker_demand[i], inst.ps_demand[i]
    cw = (st.worker_prices(t)[:, 0] * w).sum(axis=1)
    cp = (st.ps_prices(t)[:, 0] * s).sum(axis=1)
    freew = inst.worker_cap - st.g[:, t]
    freep = inst.ps_cap - st.v[:, t]
    N = int(inst.chunks[i])
    out = []
    for yh in itertools.product(range(N + 1), repeat=H):
        if sum(yh) > N or any((np.array(yh)[h] * w > freew[h] + 1e-9).any() for h in range(H)):
            continue
        for zk in itertools.product(range(N + 1), repeat=K):
            if any((np.array(zk)[k] * s > freep[k] + 1e-9).any() for k in range(K)):
                continue
            Y, Z = sum(yh), sum(zk)
            if Z > Y or inst.worker_gbps[i] * Y > inst.ps_gbps[i] * Z + 1e-9:
                continue
            out.append((Y, float(np.dot(yh, cw) + np.dot(zk, cp))))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_one_slot_greedy_is_optimal(seed):
    inst = random_tiny(seed)
    st = loaded_state(inst, seed)
    sc = slot_costs(st, 1)
    for k in range(sc.cost.shape[0]):
        opts = one_slot_options(inst, st, 1, sc.t0 + k)
        for y in range(sc.cost.shape[1]):
            brute = min((c for Y, c in opts if Y == y), default=np.inf)
            assert sc.cost[k, y] == pytest.approx(brute, rel=1e-9, abs=1e-12), (k, y)


@pytest.mark.parametrize("seed", range(25))
def test_dual_subroutine_equals_brute_force(seed):
    inst = random_tiny(seed)
    st = loaded_state(inst, seed)
    i = 1
    a = int(inst.arrival[i])
    slots = range(a, inst.horizon + 1)
    per_slot = [one_slot_options(inst, st, i, t) for t in slots]
    R = int(inst.work()[i])
    best = -np.inf
    for combo in itertools.product(*per_slot):
        ys = [Y for Y, _ in combo]
        if sum(ys) < R:
            continue
        last = max(k for k, Y in enumerate(ys) if Y > 0)
        best = max(best, float(inst.utility_of(i, last + 1)) - sum(c for _, c in combo))
    d = dual_subroutine(inst, i, slot_costs(st, i), prune=False)
    assert d.surplus == pytest.approx(best, rel=1e-9, abs=1e-9)
    pruned = dual_subroutine(inst, i, slot_costs(st, i), prune=True)
    if best > 0:
        assert pruned.surplus == pytest.approx(best, rel=1e-9, abs=1e-9)
    else:
        assert pruned.surplus <= 0


def test_placement_matches_priced_cost():
    inst = generate(30, horizon=40, worker_servers=5, ps_servers=4, preset="small", seed=2)
    st = Prices(inst, price_params(inst))
    for i in range(inst.n_jobs):
        if inst.infeasible_reason(i):
            continue
        sc = slot_costs(st, i)
        d = dual_subroutine(inst, i, sc)
        if d.completion and d.surplus > 0:
            y, z = place(sc, d.y_total, inst.n_worker_servers, inst.n_ps_servers)
            Pw = (st.worker_prices(sc.t0) * inst.worker_demand[i]).sum(axis=2).T
            Pp = (st.ps_prices(sc.t0) * inst.ps_demand[i]).sum(axis=2).T
            assert float((y * Pw).sum() + (z * Pp).sum()) == pytest.approx(d.cost, rel=1e-9)
            st.commit(i, y, z, sc.t0)


@pytest.mark.parametrize("seed", range(8))
def test_oasis_schedules_are_feasible(seed):
    inst = small(seed)
    res = dlsched.solve(inst, "oasis")
    rep = check_oasis(inst, res.solution, res.objective)
    assert rep.feasible, rep.violations
    assert set(res.solution.reasons) == set(np.flatnonzero(~res.solution.admitted).tolist())


def test_oasis_paper_setting_feasible_and_fast():
    inst = generate(60, seed=1)
    res = dlsched.solve(inst, "oasis")
    assert check_oasis(inst, res.solution, res.objective).feasible
    assert res.stats["admitted"] > 0
    assert res.stats["decision_seconds_p50"] < 1.0


def test_estimates_change_prices_not_feasibility():
    inst = small(3)
    for u, l in ((0.2, 1.0), (10.0, 1.0), (1.0, 0.2), (1.0, 10.0)):
        res = dlsched.solve(inst, "oasis", u_scale=u, l_scale=l)
        assert check_oasis(inst, res.solution, res.objective).feasible


def test_l_estimate_ignores_jobs_whose_utility_vanished_by_T():
    """l_min_share: L's min runs over jobs whose f_i(T - a_i + 1) >= share * max f_i(D_i^min) (docs/oasis.md)."""
    inst = generate(60, seed=1)          # 12 of 60 jobs can run; one keeps >= 10% of the top utility at T
    exact, est = price_params(inst), price_params(inst, l_min_share=0.1)
    assert est.L1 > 1e3 * exact.L1 and est.L2 > 1e3 * exact.L2     # the formula's L underflows to the floor
    assert np.all(est.U1 >= exact.U1) and np.all(est.U1 >= est.L1)  # U itself is unchanged unless below L
    assert est.alpha < exact.alpha
    # recompute L1 by hand over the qualifying jobs
    T, n = inst.horizon, inst.n_jobs
    ok = np.array([inst.infeasible_reason(i) is None for i in range(n)])
    R, Dmin = inst.work().astype(float), inst.min_duration()
    fb = np.array([inst.utility_of(i, Dmin[i]) for i in range(n)])
    fw = np.array([inst.utility_of(i, T - inst.arrival[i] + 1) for i in range(n)])
    tot = inst.worker_demand.sum(axis=1)
    eta = np.max(T * inst.worker_cap.sum() / (R[ok] * tot[ok]))
    sel = ok & (fw >= 0.1 * fb[ok].max())
    assert sel.any() and (~sel & ok).any()
    assert est.L1 == pytest.approx(np.min(fw[sel] / (R[sel] * tot[sel])) / (4 * eta), rel=1e-12)
    # a share no job meets keeps the formula (as on generate(40, seed=2)); feasible either way
    assert price_params(inst, l_min_share=10.0).L1 == exact.L1
    assert price_params(generate(40, seed=2), l_min_share=0.1).L1 == price_params(generate(40, seed=2)).L1
    res = dlsched.solve(inst, "oasis", l_min_share=0.1)
    assert check_oasis(inst, res.solution, res.objective).feasible
    assert res.stats["L1"] == pytest.approx(est.L1)


def test_too_big_job_rejected_with_reason():
    inst = small(0)
    inst.worker_demand[4, 0] = 100.0
    res = dlsched.solve(inst, "oasis")
    assert not res.solution.admitted[4]
    assert "exceeds every worker server" in res.solution.reasons[4]
    assert check_oasis(inst, res.solution, res.objective).feasible


@pytest.mark.parametrize("method", ["fifo", "drf"])
@pytest.mark.parametrize("seed", range(4))
def test_baselines_feasible_small(method, seed):
    inst = small(seed)
    res = dlsched.solve(inst, method)
    rep = check_oasis(inst, res.solution, res.objective)
    assert rep.feasible, rep.violations
    assert res.objective == pytest.approx(rep.objective)


@pytest.mark.parametrize("method", ["fifo", "drf"])
def test_baselines_feasible_paper_setting(method):
    inst = generate(80, seed=4)
    res = dlsched.solve(inst, method)
    assert check_oasis(inst, res.solution, res.objective).feasible
    assert res.stats["admitted"] > 0


def test_fifo_fixed_count_and_order():
    inst = small(1)
    res = dlsched.solve(inst, "fifo", workers=1)
    W = res.solution.workers
    for i in np.flatnonzero(res.solution.admitted):
        per_slot = np.bincount(W[W[:, 0] == i, 1])
        assert set(per_slot[per_slot > 0].tolist()) == {1}    # exactly one worker in every slot it runs
    starts = {i: W[W[:, 0] == i, 1].min() for i in np.flatnonzero(res.solution.admitted)}
    by_arrival = sorted(starts, key=lambda i: (inst.arrival[i], i))
    assert [starts[i] for i in by_arrival] == sorted(starts[i] for i in by_arrival)   # FIFO start order


def test_drf_equalises_dominant_shares():
    # two identical jobs arriving together on a cluster that holds 4 workers: 2 each
    inst = OasisInstance(("gpu", "cpu"), 6, [[4, 8]], [[0, 8]], [1, 1], [4, 4], [1, 1], [1, 1], [2.0, 2.0], [0, 0],
                         [1, 1], [4, 4], [[1, 1], [1, 1]], [[0, 1], [0, 1]],
                         (Utility("linear", {"value": 10, "slope": 1}),) * 2)
    res = dlsched.solve(inst, "drf")
    W = res.solution.workers
    first = W[W[:, 1] == 1]
    assert sorted(np.bincount(first[:, 0], weights=first[:, 3]).tolist()) == [2, 2]
    assert check_oasis(inst, res.solution, res.objective).feasible


@pytest.mark.parametrize("seed", [1, 4, 8])
def test_offline_dominates_online_within_two_alpha(seed):
    inst = small(seed, n_jobs=8, horizon=8)
    opt = dlsched.solve(inst, "offline", threads=1)
    assert opt.status.value == "optimal"
    assert check_oasis(inst, opt.solution, opt.objective).feasible
    alpha = price_params(inst).alpha
    for m in ("oasis", "fifo", "drf"):
        r = dlsched.solve(inst, m)
        assert r.objective <= opt.bound + 1e-6
        if m == "oasis":
            assert opt.objective <= 2 * alpha * r.objective


@pytest.mark.parametrize("method, params", [("risk_reward", {}), ("risk_reward", {"preempt": True}), ("dorm", {})])
@pytest.mark.parametrize("seed", range(3))
def test_more_baselines_feasible(method, params, seed):
    inst = small(seed)
    res = dlsched.solve(inst, method, **params)
    rep = check_oasis(inst, res.solution, res.objective)
    assert rep.feasible, rep.violations


def test_risk_reward_drops_jobs_whose_utility_is_gone():
    # a step utility with deadline 1 that the job cannot meet: dropped, never run
    inst = small(2)
    inst.utilities = inst.utilities[:3] + (Utility("step", {"value": 50, "deadline": 0.5}),) + inst.utilities[4:]
    res = dlsched.solve(inst, "risk_reward")
    assert not res.solution.admitted[3] and "dropped" in res.solution.reasons[3]


def test_bench_quick_json(capsys):
    import json

    from dlsched.bench import get_suite

    assert get_suite("oasis")(["--json", "--seeds", "2", "--jobs", "25", "--quick"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("ratio_mean", "ratio_max", "alpha_bound_violations", "utility_vs_best_baseline", "utility_vs_paper_baselines", "decision_seconds_p50"):
        assert key in out
    assert out["alpha_bound_violations"] == 0 and out["ratio_mean"] >= 1.0 - 1e-9
    # the paper's baselines are a subset of all baselines: the headline ratio is at least the other
    assert out["best_paper_baseline"] in ("fifo", "drf", "dorm")
    assert out["utility_vs_paper_baselines"] >= out["utility_vs_best_baseline"] - 1e-12
    assert list(out)[2] == "utility_vs_paper_baselines"          # the headline leads
    assert "environment" in out


def test_bench_parts_paper_only(capsys):
    import json

    from dlsched.bench import get_suite

    assert get_suite("oasis")(["--json", "--parts", "paper", "--jobs", "20", "--paper-seeds", "1", "--l-min-share", "0.1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parts"] == ["paper"] and "ratio_mean" not in out and "sensitivity" not in out
    p = out["paper_setting"][0]
    assert {"oasis", "oasis_lest", "risk_reward", "fifo", "drf", "dorm"} <= set(p)
    assert out["bound_vs_best_baseline"] >= out["utility_vs_best_baseline"] - 1e-9
    assert p["upper_bound"]["utility"] >= max(p[m]["utility"] for m in ("oasis", "oasis_lest", "risk_reward", "fifo", "drf", "dorm")) - 1e-6
    assert out["lest_vs_best_baseline"] == pytest.approx(
        out["utility_totals_at_max_jobs"]["oasis_lest"] / out["utility_totals_at_max_jobs"][out["best_baseline"]])


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), T=st.integers(2, 12), H=st.integers(1, 4), K=st.integers(1, 3),
       arrivals=st.sampled_from(["poisson", "trace"]))
def test_every_online_method_is_feasible_on_random_instances(seed, n, T, H, K, arrivals):
    inst = generate(n, horizon=T, worker_servers=H, ps_servers=K, preset="small", seed=seed, arrivals=arrivals)
    for method, params in (("oasis", {}), ("fifo", {}), ("drf", {}), ("risk_reward", {}), ("risk_reward", {"preempt": True}), ("dorm", {})):
        res = dlsched.solve(inst, method, **params)
        rep = check_oasis(inst, res.solution, res.objective)
        assert rep.feasible, (method, rep.violations[:3])
        rejected = set(np.flatnonzero(~res.solution.admitted).tolist())
        assert rejected == set(res.solution.reasons), method    # every rejection has a reason


@pytest.mark.parametrize("argv", [["--method", "oasis", "-P", "u_scale=0.2"], ["--method", "offline", "--backend", "pyomo"],
                                  ["--method", "fifo", "-P", "workers=1"], ["--method", "drf"],
                                  ["--method", "risk_reward", "-P", "preempt=true"], ["--method", "dorm"]])
def test_cli_solve_oasis_methods(capsys, tmp_path, argv):
    import json
    from pathlib import Path

    from dlsched.cli import main

    path = Path(__file__).resolve().parents[2] / "instances" / "oasis-tiny.json"
    out_file = tmp_path / "sol.json"
    assert main(["solve", str(path), *argv, "--json", "--out", str(out_file)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["checked"] is True and doc["objective"] <= 12.310585786300049 + 1e-9
    assert main(["check", str(path), str(out_file)]) == 0


def test_cli_bad_oasis_file_names_the_place(capsys, tmp_path):
    import json

    from tests.models.test_oasis import tiny_doc

    from dlsched.cli import main

    doc = tiny_doc()
    doc["jobs"][0]["utility"]["gamma2"] = -0.5
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert main(["solve", str(path), "--method", "oasis"]) == 2
    err = capsys.readouterr().err
    assert "$.jobs[0].utility.gamma2" in err and "does not increase" in err


def test_commit_refuses_an_infeasible_schedule():
    from dlsched.errors import SolverError

    inst = small(1)
    st = Prices(inst, price_params(inst))
    H, K = inst.n_worker_servers, inst.n_ps_servers
    y = np.zeros((inst.horizon, H), np.int64)
    z = np.zeros((inst.horizon, K), np.int64)
    y[0, 0] = 100                      # far beyond one server's capacity
    z[0, 0] = 1
    with pytest.raises(SolverError):
        st.commit(0, y, z, 1)
    assert st.g.sum() == 0             # nothing was committed


@pytest.mark.parametrize("seed", [1, 4, 8])
def test_pooled_bound_is_above_the_offline_optimum(seed):
    inst = small(seed, n_jobs=8, horizon=8)
    opt = dlsched.solve(inst, "offline", threads=1)
    mip = dlsched.solve(inst, "pooled-bound", threads=1)
    lp = dlsched.solve(inst, "pooled-bound", relax=True, threads=1)
    assert mip.solution is None and mip.objective is None
    assert opt.objective <= mip.bound + 1e-6 <= lp.bound + 2e-6


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 8), T=st.integers(2, 8), H=st.integers(1, 3), K=st.integers(1, 2))
def test_pooled_bound_valid_on_random_instances(seed, n, T, H, K):
    inst = generate(n, horizon=T, worker_servers=H, ps_servers=K, preset="small", seed=seed)
    opt = dlsched.solve(inst, "offline", threads=1)
    assert opt.status.value == "optimal"
    assert opt.objective <= dlsched.solve(inst, "pooled-bound", threads=1).bound + 1e-6


def test_offline_with_a_start_highs_misreports_is_still_optimal():
    # found by the test above: HiGHS 1.16 values the OASiS start in presolve's reduced space at
    # the optimum (80.07), stops "optimal" and returns the start's columns (52.84)
    inst = generate(5, horizon=4, worker_servers=1, ps_servers=1, preset="small", seed=2908)
    cold = dlsched.solve(inst, "offline", warm=False, threads=1)
    warm = dlsched.solve(inst, "offline", threads=1)
    assert warm.status.value == cold.status.value == "optimal"
    assert warm.objective == pytest.approx(cold.objective) and warm.objective > 80
    assert check_oasis(inst, warm.solution, warm.objective)


def test_pooled_bound_above_every_method_in_the_paper_setting():
    inst = generate(100, seed=1)
    bound = dlsched.solve(inst, "pooled-bound", relax=True, threads=1).bound
    for method, params in (("oasis", {}), ("risk_reward", {"preempt": True}), ("drf", {})):
        assert dlsched.solve(inst, method, **params).objective <= bound + 1e-6, method


def test_pooled_bound_counts_what_it_truncates():
    # with a coarse threshold many jobs and tails are cut; the slack keeps the bound above the exact one
    inst = small(3, n_jobs=8, horizon=8)
    exact = dlsched.solve(inst, "offline", threads=1).objective
    coarse = dlsched.solve(inst, "pooled-bound", eps=0.5, threads=1)
    assert coarse.stats["slack"] > 0 and coarse.bound >= exact - 1e-6


@pytest.mark.parametrize("eps", ["-1", "abc", "inf"])
def test_pooled_bound_rejects_a_bad_eps(capsys, eps):
    from pathlib import Path

    from dlsched.cli import main

    path = Path(__file__).resolve().parents[2] / "instances" / "oasis-tiny.json"
    assert main(["solve", str(path), "--method", "pooled-bound", "-P", f"eps={eps}"]) == 2
    # a word is refused by the parameter's type, a number out of range by the method
    assert ("at eps: expected a number" if eps == "abc" else "at eps: expected a finite number >= 0") in capsys.readouterr().err

"""Placement methods: market, category assignment, hetplace, greedy, exact (MODELS.md §4.2-4.3)."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy.optimize import linear_sum_assignment

import dlsched
from dlsched.errors import InputError
from dlsched.instance import jsonio
from dlsched.instance.placement import PlacementInstance
from dlsched.instance.placement_gen import generate
from dlsched.models.placement import brute_force, evaluate
from dlsched.solvers.hetplace import evaluate_category, greedy_counts, pack
from dlsched.solvers.market import clear
from dlsched.solvers.options import SolveOptions


# -------------------------------------------------------------------------- the market

def _random_market(data):
    """(values, demand, supply) of up to 5 buyers and 4 groups, with supply enough for the demand."""
    n = data.draw(st.integers(1, 5))
    G = data.draw(st.integers(1, 4))
    d = np.array(data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    s = np.array(data.draw(st.lists(st.integers(0, 4), min_size=G, max_size=G)))
    s[0] += max(0, d.sum() - s.sum())
    v = np.array(data.draw(st.lists(st.floats(-5, 20, allow_nan=False), min_size=n * G, max_size=n * G))).reshape(n, G)
    return v, d, s


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_market_clears_at_a_maximum_weight_assignment(data):
    v, d, s = _random_market(data)
    n, G = v.shape
    out = clear(v, d, s)
    assert np.array_equal(out.alloc.sum(axis=1), d) and np.all(out.alloc.sum(axis=0) <= s)
    # Hungarian method on units
    rows, cols = np.repeat(np.arange(n), d), np.repeat(np.arange(G), s)
    W = v[np.ix_(rows, cols)]
    r, c = linear_sum_assignment(W, maximize=True)
    assert out.welfare == pytest.approx(W[r, c].sum(), abs=1e-7)
    # every unit went to a buyer who demands it at the clearing prices
    surplus = v - out.prices
    for i in range(n):
        got = np.flatnonzero(out.alloc[i])
        assert np.all(surplus[i, got] >= surplus[i].max() - 1e-6 * max(1, np.abs(v).max()))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), cap=st.integers(1, 3))
def test_market_lp_finish_is_a_maximum_weight_assignment(data, cap):
    """Capped after 1-3 rounds, the LP finish gives the market's and the Hungarian method's welfare,
    an integral allocation and prices that support it (the module docstring's dual feasibility)."""
    v, d, s = _random_market(data)
    n, G = v.shape
    market, out = clear(v, d, s), clear(v, d, s, max_rounds=cap)
    assert out.rounds <= cap and out.alloc.dtype.kind == "i"
    assert np.array_equal(out.alloc.sum(axis=1), d) and np.all(out.alloc.sum(axis=0) <= s)
    rows, cols = np.repeat(np.arange(n), d), np.repeat(np.arange(G), s)
    W = v[np.ix_(rows, cols)]
    r, c = linear_sum_assignment(W, maximize=True)
    assert out.welfare == pytest.approx(W[r, c].sum(), abs=1e-7)
    assert out.welfare == pytest.approx(market.welfare, abs=1e-7)
    assert np.all(out.prices >= 0)
    surplus = v - out.prices
    got = out.alloc > 0
    assert np.all(surplus[got] >= np.broadcast_to(surplus.max(axis=1)[:, None], got.shape)[got] - 1e-6 * max(1, np.abs(v).max()))
    # the idle buyer (worth 0 everywhere) demands the groups with unsold units: they are the cheapest
    assert np.all(out.prices[out.alloc.sum(axis=0) < s] <= out.prices.min() + 1e-6 * max(1, np.abs(v).max()))


def test_market_of_tie_sized_steps_reaches_the_cap_and_the_lp_answers():
    """300 buyers whose values for group 0 differ by 1e-7 (tie-sized steps): the market peels one
    buyer off group 0 per round, so it needs about 290 rounds; capped at 50, the LP finish sells
    group 0's 10 units to the 10 buyers who value it most."""
    n, eps = 300, 1e-7
    v = np.column_stack([1.0 + eps * np.arange(n), np.ones(n)])
    d, s = np.ones(n, dtype=np.int64), np.array([10, n])
    full = clear(v, d, s)
    assert full.rounds > 250
    out = clear(v, d, s, max_rounds=50)
    assert out.rounds == 50
    assert np.array_equal(np.flatnonzero(out.alloc[:, 0]), np.arange(n - 10, n))
    assert out.welfare == pytest.approx(full.welfare, abs=1e-9)
    assert out.welfare == pytest.approx(n + eps * np.arange(n - 10, n).sum(), abs=1e-9)


def test_market_warm_start_gives_the_same_welfare():
    rng = np.random.default_rng(3)
    v, d, s = rng.random((30, 3)), rng.integers(1, 4, 30), np.array([25, 25, 25])
    cold = clear(v, d, s)
    warm = clear(v, d, s, prices=cold.prices + rng.random(3))
    assert warm.welfare == pytest.approx(cold.welfare)


def test_market_rejects_excess_demand():
    with pytest.raises(RuntimeError, match="need 3 units"):
        clear(np.ones((1, 1)), [3], [2])


# -------------------------------------------------------------------------- a category's best assignment

def _tiny_cases(count=24, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        n = int(rng.integers(2, 4))
        types = {t: int(rng.integers(1, 3)) for t in ("k80", "p100", "v100")}
        K = sum(types.values())
        if (n + 1) ** K > 50_000:
            continue
        inst = generate(n, types, seed=int(rng.integers(1_000_000)), gpus_per_server=int(rng.integers(1, 3)), max_workers=4,
                        communication=str(rng.choice(["ring", "ps"])))
        sizes = np.ones(n, dtype=np.int64)
        for _ in range(int(rng.integers(0, K - n + 1))):
            i = rng.integers(n)
            sizes[i] += sizes[i] < 4
        out.append((inst, sizes))
    return out


@pytest.mark.parametrize("case", range(24))
def test_market_outcome_is_the_best_assignment_of_its_category(case):
    inst, sizes = _tiny_cases()[case]
    gpu_job, val, *_ = evaluate_category(inst, sizes, iters=4)
    p = dlsched.instance.placement.GpuAssignment(gpu_job, np.zeros(inst.n_gpus))
    assert np.array_equal(p.sizes(inst.n_jobs), sizes)
    best, _ = brute_force(inst, sizes)
    assert val == pytest.approx(best, rel=1e-9)


# -------------------------------------------------------------------------- methods end to end

@pytest.fixture(scope="module")
def mid():
    return [generate(n, {"k80": n, "p100": n, "v100": n}, seed=s) for n, s in ((6, 0), (8, 1), (12, 2), (16, 3))]


def test_bound_le_exact_le_heuristics_and_all_checked(mid):
    for inst in mid:
        ex = dlsched.solve(inst, method="exact", threads=1)
        assert ex.status == dlsched.Status.OPTIMAL
        for res in (ex, dlsched.solve(inst, method="hetplace"), dlsched.solve(inst, method="greedy")):
            rep = dlsched.check(inst, res)
            assert rep.feasible, rep.violations
            assert res.bound <= ex.objective * (1 + 1e-9)
            assert res.objective >= ex.objective * (1 - 1e-9)
            assert 0 < res.stats["jain_fairness"] <= 1 and res.stats["max_slowdown"] >= 1 - 1e-9
        het = dlsched.solve(inst, method="hetplace")
        assert het.objective <= dlsched.solve(inst, method="greedy").objective * (1 + 1e-9)
        assert het.objective <= ex.objective * 1.02


def test_generic_core_exact_agrees_with_family_exact(mid):
    from dlsched.solvers.milp import solve_core

    inst = mid[0]
    assert solve_core(inst.to_core()).objective == pytest.approx(dlsched.solve(inst, method="exact").objective, rel=1e-9)


def test_hetplace_is_seeded_and_samples_matter(mid):
    inst = mid[3]
    a, b = dlsched.solve(inst, method="hetplace", seed=5), dlsched.solve(inst, method="hetplace", seed=5)
    assert np.array_equal(a.solution.gpu_job, b.solution.gpu_job)
    one = dlsched.solve(inst, method="hetplace", samples=1)
    assert a.objective <= one.objective * (1 + 1e-12) and one.stats["categories"] == 1


def test_bad_method_parameters():
    inst = generate(3, seed=0)
    with pytest.raises(InputError, match="samples"):
        dlsched.solve(inst, method="hetplace", samples=0)
    with pytest.raises(InputError, match="sampler"):
        dlsched.solve(inst, method="hetplace", sampler="uniform")


@pytest.mark.parametrize("seed", range(6))
def test_proportional_beats_equal_split_on_mixed_clusters(seed):
    """Never worse; strictly better whenever the optimal placement mixes GPU types in a job
    (when no job gains from mixing, both splits give the same placement and JCT)."""
    inst = generate(8, {"k80": 8, "p100": 8, "v100": 8}, seed=seed)
    eq = dataclasses.replace(inst, workload="equal")
    prop = dlsched.solve(inst, method="exact", threads=1)
    eq_opt = dlsched.solve(eq, method="exact", threads=1).objective
    p = prop.solution
    mixed = any(len(set(inst.gpu_type[p.gpus_of(i)].tolist())) > 1 for i in range(inst.n_jobs))
    assert prop.objective < eq_opt if mixed else prop.objective <= eq_opt * (1 + 1e-12)
    # on any fixed placement proportional is never slower (the heuristic's own runs under the two
    # splits are not ordered: hetplace is within ~1% of each optimum, not exact)
    p = dlsched.solve(eq, method="hetplace").solution
    assert np.all(evaluate(inst, p) <= evaluate(eq, p) * (1 + 1e-12))


def test_solution_file_roundtrip(tmp_path, mid):
    inst = mid[0]
    res = dlsched.solve(inst, method="hetplace")
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(jsonio.solution_document(inst, res)))
    doc = json.loads(path.read_text())
    assert doc["solution"]["jobs"][0]["gpus"]
    sol, claimed = jsonio.load_solution(inst, path)
    assert dlsched.check(inst, sol, claimed).feasible


def test_greedy_and_pack_respect_capacity(mid):
    for inst in mid:
        counts = greedy_counts(inst)
        assert np.all(counts.sum(axis=0) <= inst.type_counts) and np.all(counts.sum(axis=1) >= 1)
        gpu_job = pack(inst, counts)
        got = np.zeros_like(counts)
        np.add.at(got, (gpu_job[gpu_job >= 0], inst.gpu_type[gpu_job >= 0]), 1)
        assert np.array_equal(got, counts)


@pytest.mark.parametrize("params", [{"valuation": "throughput"}, {"sampler": "moves"}, {"polish": False},
                                    {"valuation": lambda inst, S: inst.rho / S[:, None]}, {"market_iters": 3}])
def test_pipeline_options_give_checked_placements(mid, params):
    inst = mid[2]
    ex = dlsched.solve(inst, method="exact", threads=1).objective
    res = dlsched.solve(inst, method="hetplace", samples=4, **params)
    assert dlsched.check(inst, res).feasible
    assert ex * (1 - 1e-9) <= res.objective <= dlsched.solve(inst, method="greedy").objective * 1.05


def test_cli_solve_hetplace_then_check(capsys, tmp_path):
    from dlsched.cli import main
    from dlsched.data import project_root

    inst = str(project_root() / "instances" / "placement-small.json")
    sol = tmp_path / "sol.json"
    assert main(["solve", inst, "--method", "hetplace", "--samples", "4", "--seed", "2", "--out", str(sol), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["method"] == "hetplace" and doc["checked"] is True and doc["stats"]["samples"] == 4
    assert "jain_fairness" in doc["stats"] and doc["objective"] >= 142257.76847911207 * (1 - 1e-9)
    assert main(["check", inst, str(sol), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["feasible"] is True
    assert main(["solve", inst, "--method", "exact", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["objective"] == pytest.approx(142257.76847911207)


@pytest.mark.parametrize("case", [dict(n_jobs=6, gpus_per_type={"v100": 8}),
                                  dict(n_jobs=6, gpus_per_type={"k80": 2, "p100": 2, "v100": 2}),
                                  dict(n_jobs=5, gpus_per_type={"k80": 3, "v100": 4}, max_workers=1),
                                  dict(n_jobs=3, gpus_per_type={"k80": 5, "v100": 4}, gpus_per_server=1),
                                  dict(n_jobs=4, gpus_per_type={"k80": 5, "p100": 0, "v100": 4}, communication="ps")])
def test_edge_clusters(case):
    """One GPU type; every GPU taken; single-GPU jobs; one-GPU servers; an empty type with PS."""
    inst = generate(seed=1, **case)
    ex = dlsched.solve(inst, method="exact")
    for m in ("hetplace", "greedy"):
        res = dlsched.solve(inst, method=m)
        assert dlsched.check(inst, res).feasible
        assert res.bound <= ex.objective * (1 + 1e-9) <= res.objective * (1 + 2e-9)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 10), per=st.integers(1, 4),
       comm=st.sampled_from(["ring", "ps"]), wl=st.sampled_from(["proportional", "equal"]))
@example(seed=6903, n=10, per=2, comm="ps", wl="proportional")  # the priced repair used to get stuck
def test_bound_le_optimum_le_hetplace_random(seed, n, per, comm, wl):
    inst = generate(n, {"k80": 4, "p100": 3, "v100": 4}, seed=seed, gpus_per_server=per, communication=comm, workload=wl)
    ex = dlsched.solve(inst, method="exact", threads=1)
    res = dlsched.solve(inst, method="hetplace", samples=2, seed=seed)
    assert dlsched.check(inst, res).feasible and dlsched.check(inst, ex).feasible
    assert res.bound <= ex.objective * (1 + 1e-9) <= res.objective * (1 + 2e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), wl=st.sampled_from(["proportional", "equal"]),
       per_job=st.booleans())
def test_config_table_picks_as_the_dense_table(seed, n, wl, per_job):
    """The grouped table picks, for a price vector or per-job prices, the configuration and value
    that the dense (jobs x every count vector) table picks, with inf above each job's M_i."""
    from dlsched.instance.placement import count_vectors, jct_counts
    from dlsched.solvers.hetplace import ConfigTable, est_spans

    rng = np.random.default_rng(seed)
    inst = generate(n, {"k80": 6, "p100": 5, "v100": 4}, seed=seed, workload=wl)
    inst = dataclasses.replace(inst, max_workers=rng.integers(1, 6, n))
    C = count_vectors(inst.n_types, int(inst.max_workers.max()))
    C = C[np.all(C <= inst.type_counts, axis=1)]
    rows = np.broadcast_to(np.arange(n)[:, None], (n, C.shape[0]))
    J = jct_counts(inst, rows, np.broadcast_to(C, (n, *C.shape)), np.broadcast_to(est_spans(inst, C), rows.shape))
    J = np.where(C.sum(axis=1)[None, :] <= inst.max_workers[:, None], J, np.inf)
    table = ConfigTable(inst)
    assert np.array_equal(table.C, C)
    lam = rng.random((n, inst.n_types) if per_job else inst.n_types) * float(J[np.isfinite(J)].mean())
    red = J + (lam @ C.T if per_job else C @ lam)
    pick, val = table.pick(lam)
    assert np.array_equal(pick, red.argmin(axis=1))
    assert np.array_equal(val, red[np.arange(n), pick])


# -------------------------------------------------------------------------- shortcuts that keep the answer

@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12))
def test_one_type_market_and_exchanges_leave_the_sizes(seed, n):
    """With one GPU type the market sells each job its size and no exchange exists: the shortcut of
    category_counts is what market_counts and polish_counts give."""
    from dlsched.solvers.hetplace import category_counts, market_counts, polish_counts

    inst = dataclasses.replace(generate(n, {"v100": 16}, seed=seed), max_workers=np.full(n, 4))
    sizes = np.random.default_rng(seed).integers(1, 16 // n + 1, n)
    counts, _, _ = market_counts(inst, sizes)
    assert np.array_equal(counts, sizes[:, None])
    polished, moves = polish_counts(inst, counts)
    assert moves == 0 and np.array_equal(polished, counts)
    assert np.array_equal(category_counts(inst, sizes)[0], counts)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 14), types=st.integers(1, 3))
def test_hetplace_packs_only_the_best_category_when_placement_is_free(seed, n, types):
    """Without a communication term each category scores its counts: packing only the best gives the
    placement and average JCT that packing every category gives (the general path, forced)."""
    import dlsched.solvers.hetplace as sh

    gpus = dict(list({"k80": 8, "p100": 6, "v100": 4}.items())[:types])
    n = min(n, sum(gpus.values()))
    inst = dataclasses.replace(generate(n, gpus, seed=seed), model_size_mb=np.zeros(n))
    assert sh.placement_free(inst)
    fast = sh.hetplace(inst, SolveOptions(seed=seed))
    real = sh.placement_free
    sh.placement_free = lambda inst: False
    try:
        slow = sh.hetplace(inst, SolveOptions(seed=seed))
    finally:
        sh.placement_free = real
    assert np.array_equal(fast.solution.gpu_job, slow.solution.gpu_job)
    assert fast.objective == slow.objective and fast.bound == slow.bound


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_single_gpus_go_one_by_one_into_the_smallest_hole(data):
    """pack's one pass for single GPUs places them as one-by-one best fit does: each into the server
    of its type with the least room left, the first such server on ties."""
    from dlsched.solvers.hetplace import _pack_order

    S = data.draw(st.integers(1, 8))
    server_type = np.array(data.draw(st.lists(st.integers(0, 1), min_size=S, max_size=S)))
    server_type[0] = 0
    G = int(server_type.max()) + 1
    cap = np.array(data.draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=S, max_size=S)))
    room = np.bincount(server_type, weights=cap, minlength=G).astype(int)
    counts = []
    for _ in range(data.draw(st.integers(1, 12))):
        g = data.draw(st.integers(0, G - 1))
        k = min(int(room[g]), data.draw(st.sampled_from([1, 1, 1, 2, 3])))
        if k:
            room[g] -= k
            counts.append(np.eye(G, dtype=np.int64)[g] * k)
    if not counts:
        return
    counts = np.array(counts)
    n = counts.shape[0]
    inst = PlacementInstance(tuple(f"t{g}" for g in range(G)), tuple(f"s{s}" for s in range(S)), server_type, cap,
                             tuple(f"j{i}" for i in range(n)), ("x",) * n, np.ones((n, G)), np.ones(n), np.ones(n),
                             np.zeros(n), np.full(n, int(cap.sum())), 10.0, 5.0)
    got = _pack_order(inst, counts, np.arange(n))
    # the reference: the multi-GPU jobs as placed, then one single at a time
    start = np.concatenate([[0], np.cumsum(cap)[:-1]])
    used = np.array([(got[start[s]:start[s] + cap[s]] >= 0).sum() for s in range(S)])
    singles = np.flatnonzero(counts.sum(axis=1) == 1)
    used -= np.array([np.isin(got[start[s]:start[s] + cap[s]], singles).sum() for s in range(S)])
    want = got.copy()
    want[np.isin(want, singles)] = -1
    for i in singles.tolist():
        cand = np.flatnonzero(server_type == counts[i].argmax())
        left = cap[cand] - used[cand]
        s = cand[np.flatnonzero(left > 0)[np.argmin(left[left > 0])]]
        want[start[s] + used[s]] = i
        used[s] += 1
    assert np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), types=st.integers(1, 3), wl=st.sampled_from(["proportional", "equal"]))
def test_swap_deltas_score_every_existing_move_as_one_by_one(seed, n, types, wl):
    """_swap_deltas scores only the moves that exist: each equals the job's cost with one of its type-g
    GPUs made type h, less its current cost, scored one move at a time; inf where the job holds no g or h = g."""
    from dlsched.solvers.hetplace import _biggest_server, _swap_deltas, cost

    gpus = dict(list({"k80": 8, "p100": 6, "v100": 4}.items())[:types])
    n = min(n, sum(gpus.values()))
    inst = generate(n, gpus, seed=seed, workload=wl)
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 3, (n, types))
    counts[counts.sum(axis=1) == 0, 0] = 1
    biggest = _biggest_server(inst)
    cur = cost(inst, np.arange(n), counts, biggest)
    rows = np.flatnonzero(rng.random(n) < 0.7)
    got = _swap_deltas(inst, counts, cur, rows, biggest)
    want = np.full((rows.size, types, types), np.inf)
    for a, i in enumerate(rows.tolist()):
        for g in range(types):
            for h in range(types):
                if g != h and counts[i, g] > 0:
                    moved = counts[i].copy()
                    moved[g] -= 1
                    moved[h] += 1
                    want[a, g, h] = cost(inst, np.array([i]), moved[None, :], biggest)[0] - cur[i]
    assert np.array_equal(got, want)


def _prices_without_stop(inst, table, iters=200):
    """type_prices as it was, every step taken until the complementary slackness test: the reference
    for the stop at a feasible value."""
    from dlsched.solvers.hetplace import POLYAK_OVERSHOOT, STALL_STEPS

    N = inst.type_counts.astype(float)
    lam = np.zeros(inst.n_types)
    best_lam, best_L, theta, since = lam.copy(), -np.inf, 1.0, 0
    for _ in range(iters):
        pick, val = table.pick(lam)
        L = float(val.sum() - lam @ N)
        if L > best_L + 1e-12 * abs(L):
            best_L, best_lam, since = L, lam.copy(), 0
        else:
            since += 1
            if since >= STALL_STEPS:
                theta, since = theta / 2, 0
        g = N - table.C[pick].sum(axis=0)
        if np.all(g >= 0) and np.all(np.abs(lam * g) <= 1e-8):
            break
        step = theta * max(POLYAK_OVERSHOOT * best_L - L, 1e-12 * abs(POLYAK_OVERSHOOT * best_L)) / max(float(g @ g), 1.0)
        lam = np.maximum(0.0, lam - step * g)
    return best_lam, best_L


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 14), types=st.integers(1, 3), flat=st.booleans())
def test_type_prices_stop_at_a_feasible_value_keeps_the_prices(seed, n, types, flat):
    """Stopping the subgradient steps once the picks fit at a total JCT no better than the best L gives
    the prices and bound that all the steps give; ``flat``: one speed per job on every type (OpenB's
    durations), where the jobs all pick the first type at zero prices."""
    from dlsched.solvers.hetplace import ConfigTable, type_prices

    gpus = dict(list({"k80": 8, "p100": 6, "v100": 4}.items())[:types])
    n = min(n, sum(gpus.values()))
    inst = generate(n, gpus, seed=seed)
    inst = dataclasses.replace(inst, model_size_mb=np.zeros(n), max_workers=np.minimum(inst.max_workers, 4))
    if flat:
        inst = dataclasses.replace(inst, rho=np.repeat(inst.rho[:, :1], types, axis=1))
    table = ConfigTable(inst)
    lam, L = type_prices(inst, table)
    ref_lam, ref_L = _prices_without_stop(inst, table)
    assert np.array_equal(lam, ref_lam) and L == ref_L


def _split_one_by_one(flow, patterns, inverse, demand, G):
    """The market's split as a loop per buyer: the reference of the interval overlaps."""
    alloc = np.zeros((inverse.size, G), dtype=np.int64)
    for q in range(patterns.size):
        left = {node[1]: f for node, f in flow.get(q, {}).items() if f > 0}
        for i in np.flatnonzero(inverse == q):
            want = int(demand[i])
            for k in list(left):
                take = min(want, left[k])
                alloc[i, k] += take
                want -= take
                left[k] -= take
                if not left[k]:
                    del left[k]
                if not want:
                    break
    return alloc


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_market_split_hands_out_units_as_buyer_by_buyer(data):
    """Each pattern's flow to the groups, handed to its buyers in order from the groups in order:
    the interval overlaps give what the loop per buyer gives."""
    from dlsched.solvers.market import _split

    G = data.draw(st.integers(1, 4))
    n = data.draw(st.integers(1, 12))
    P = data.draw(st.integers(1, 4))
    inverse = np.array(data.draw(st.lists(st.integers(0, P - 1), min_size=n, max_size=n)))
    demand = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    flow = {}
    for q in range(P):
        total = int(demand[inverse == q].sum())
        groups = sorted(data.draw(st.sets(st.integers(0, G - 1), min_size=1)))
        cuts = sorted(data.draw(st.lists(st.integers(0, total), min_size=len(groups) - 1, max_size=len(groups) - 1)))
        units = np.diff([0, *cuts, total])
        flow[q] = {("g", k): int(u) for k, u in zip(groups, units)}
    patterns = np.arange(P)
    assert np.array_equal(_split(flow, patterns, inverse, demand, G), _split_one_by_one(flow, patterns, inverse, demand, G))


@settings(max_examples=200, deadline=None)
@given(G=st.integers(1, 4), data=st.data())
def test_market_min_cut_is_networkx_max_flow_and_residual_reach(G, data):
    """A round's flow value and constricted set (the patterns and groups reachable from the source in the
    residual graph, the same for every maximum flow) are networkx's Edmonds-Karp's."""
    import networkx as nx
    from networkx.algorithms.flow import edmonds_karp

    from dlsched.solvers.market import _min_cut

    patterns = data.draw(st.lists(st.integers(1, 2 ** G - 1), min_size=1, max_size=2 ** G - 1, unique=True))
    need = data.draw(st.lists(st.integers(0, 9), min_size=len(patterns), max_size=len(patterns)))
    supply = data.draw(st.lists(st.integers(0, 9), min_size=G, max_size=G))
    g = nx.DiGraph()
    g.add_nodes_from(["s", "t"])
    for q, pat in enumerate(patterns):
        if need[q]:
            g.add_edge("s", q, capacity=need[q])
            for k in range(G):
                if pat >> k & 1:
                    g.add_edge(q, ("g", k))
    for k in range(G):
        if supply[k]:
            g.add_edge(("g", k), "t", capacity=supply[k])
    value, flow = nx.maximum_flow(g, "s", "t", flow_func=edmonds_karp)
    seen, stack = {"s"}, ["s"]
    while stack:
        u = stack.pop()
        nxt = [v for v, a in g[u].items() if flow[u][v] < a.get("capacity", float("inf"))]
        nxt += [v for v in g.predecessors(u) if flow[v][u] > 0]
        for v in nxt:
            if v not in seen:
                seen.add(v)
                stack.append(v)
    got, S, N = _min_cut(need, patterns, supply)
    assert got == value
    if value < sum(need):
        assert S == {x for x in seen if isinstance(x, int)}
        assert N.tolist() == sorted(x[1] for x in seen if isinstance(x, tuple))

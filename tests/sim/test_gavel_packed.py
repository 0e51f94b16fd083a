"""Space sharing: packed leases in the engine, Gavel's packed max-min fairness LP (dlsched.policies.gavel_lp)
and its policy (dlsched.policies.gavel_packed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.instance.workload import Job
from dlsched.policies import gavel_cvxpy, gavel_lp
from dlsched.registry import make_policy
from dlsched.sim.engine import PolicyError, Simulation, simulate
from dlsched.sim.policy import Placement
from dlsched.sim.speed import ThroughputSpeed

from .helpers import Audit, LinearSpeed, job, trace, typed_cluster


class PairSpeed:
    """``alone[name]`` iterations/s per worker alone; ``pair[(a, b)]`` = (rate of a, rate of b) together."""

    def __init__(self, alone: dict[str, float], pair: dict[tuple[str, str], tuple[float, float]]):
        self.alone, self.pair = alone, pair

    def rate(self, job, placement, cluster) -> float:
        return self.alone[job.name] * placement.n_workers

    def pair_rates(self, job, other, placement, cluster):
        return self.pair.get((job.name, other.name), (0.0, 0.0))


# -- the LP ------------------------------------------------------------------------------------

@st.composite
def packed_instances(draw):
    m, K = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    W = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]), min_size=m * K, max_size=m * K))).reshape(m, K)
    size = np.array(draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=m, max_size=m)))
    cap = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 4.0]), min_size=K, max_size=K)))
    z = np.where(size[:, None] <= cap[None, :], size[:, None], 0.0) * np.ones((1, K))
    W = np.where(z > 0, W, 0.0)
    ia, ib = np.triu_indices(m, 1)
    keep = np.array(draw(st.lists(st.booleans(), min_size=ia.size, max_size=ia.size)), dtype=bool) & (size[ia] == size[ib])
    pairs = np.stack([ia[keep], ib[keep]], axis=1)
    P = pairs.shape[0]
    frac = np.array(draw(st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0]), min_size=2 * P * K, max_size=2 * P * K))).reshape(2, P, K)
    Va, Vb = frac[0] * W[pairs[:, 0]], frac[1] * W[pairs[:, 1]]
    return W, z, cap, pairs, Va, Vb


def packed_feasible(a, W, z, cap, pairs, Va, Vb) -> bool:
    X, Y = a.X, a.Y
    gpus = (z * X).sum(axis=0) + (z[pairs[:, 0]] * Y).sum(axis=0)
    time = X.sum(axis=1) + np.bincount(pairs.ravel(), weights=np.repeat(Y.sum(axis=1), 2), minlength=len(W))
    ok = (Va > 0) & (Vb > 0)
    return bool((X >= 0).all() and (Y >= 0).all() and (gpus <= cap + 1e-6).all() and (time <= 1 + 1e-6).all()
                and (X[W <= 0] == 0).all() and (Y[~ok] == 0).all())


def throughputs(a, W, pairs, Va, Vb) -> np.ndarray:
    """Each job's normalised effective throughput under the allocation."""
    m = len(W)
    return (W * a.X).sum(axis=1) + np.bincount(pairs[:, 0], (Va * a.Y).sum(axis=1), m) + \
        np.bincount(pairs[:, 1], (Vb * a.Y).sum(axis=1), m)


def test_two_jobs_that_share_well_run_together():
    # one GPU: alone each gets 1/2; together each runs at 0.8 of its speed all the time
    W, z, cap, pairs = np.ones((2, 1)), np.ones((2, 1)), np.array([1.0]), np.array([[0, 1]])
    a = gavel_lp.max_min_fairness_packed(W, z, cap, pairs, np.array([[0.8]]), np.array([[0.8]]))
    assert a.value == pytest.approx(0.8) and a.Y[0, 0] == pytest.approx(1.0) and a.X == pytest.approx(np.zeros((2, 1)))
    # three jobs on one GPU, every pair at 0.6 each: alone, 1/3 each; the three pairs 1/3 of the time
    # each, every job in two of them: 2/3 of its time at 0.6
    W3, z3 = np.ones((3, 1)), np.ones((3, 1))
    p3 = np.array([[0, 1], [0, 2], [1, 2]])
    b = gavel_lp.max_min_fairness_packed(W3, z3, np.array([1.0]), p3, np.full((3, 1), 0.6), np.full((3, 1), 0.6))
    assert b.value == pytest.approx(0.4) and b.Y[:, 0] == pytest.approx([1 / 3] * 3)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packed_instances())
def test_packed_lp_is_feasible_and_agrees_with_its_cvxpy_statement(inst):
    W, z, cap, pairs, Va, Vb = inst
    a = gavel_lp.max_min_fairness_packed(W, z, cap, pairs, Va, Vb)
    assert packed_feasible(a, W, z, cap, pairs, Va, Vb)
    live = (W > 0).any(axis=1)
    live[pairs[((Va > 0) & (Vb > 0)).any(axis=1)].ravel()] = True
    if live.any():
        assert (throughputs(a, W, pairs, Va, Vb)[live] >= a.value * (1 - 1e-6) - 1e-9).all()
    assert a.value == pytest.approx(gavel_cvxpy.max_min_fairness_packed(W, z, cap, pairs, Va, Vb), rel=1e-6, abs=1e-9)
    # never worse than without sharing (X alone is one of its allocations)
    assert a.value >= gavel_lp.max_min_fairness(W, z, cap).value * (1 - 1e-9) - 1e-12


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packed_instances())
def test_sharing_that_gains_nothing_leaves_the_unpacked_value(inst):
    # each job of a pair at half its speed alone or less: a pair is no better than the two taking turns
    W, z, cap, pairs, _, _ = inst
    a, b = W[pairs[:, 0]] * 0.5, W[pairs[:, 1]] * 0.5
    packed = gavel_lp.max_min_fairness_packed(W, z, cap, pairs, a, b)
    assert packed.value == pytest.approx(gavel_lp.max_min_fairness(W, z, cap).value, rel=1e-7, abs=1e-12)


@st.composite
def class_instances(draw):
    """Classes of identical jobs (1-3 each) and pairs of classes (a class with itself where it has
    2 jobs or more), with the per-job instance they stand for."""
    C, K = draw(st.integers(1, 4)), draw(st.integers(1, 2))
    count = np.array(draw(st.lists(st.integers(1, 3), min_size=C, max_size=C)))
    W = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=C * K, max_size=C * K))).reshape(C, K)
    cap = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=K, max_size=K)))
    z = np.ones((C, K))
    ia, ib = np.triu_indices(C)
    keep = np.array(draw(st.lists(st.booleans(), min_size=ia.size, max_size=ia.size)), dtype=bool)
    pairs = np.stack([ia[keep], ib[keep]], axis=1)
    P = pairs.shape[0]
    frac = np.array(draw(st.lists(st.sampled_from([0.0, 0.4, 0.7, 1.0]), min_size=2 * P * K, max_size=2 * P * K))).reshape(2, P, K)
    Va, Vb = frac[0] * W[pairs[:, 0]], frac[1] * W[pairs[:, 1]]
    Vb[pairs[:, 0] == pairs[:, 1]] = Va[pairs[:, 0] == pairs[:, 1]]      # two jobs of a class: the same rate
    of = np.repeat(np.arange(C), count)                                   # job -> class
    ja, jb = np.triu_indices(of.size, 1)
    jobs_pairs, ja_v, jb_v = [], [], []
    for x, y in zip(ja.tolist(), jb.tolist()):
        for p, (u, v) in enumerate(pairs.tolist()):
            if (of[x], of[y]) in ((u, v), (v, u)):
                jobs_pairs.append((x, y))
                ja_v.append(Va[p] if of[x] == u else Vb[p])
                jb_v.append(Vb[p] if of[x] == u else Va[p])
    per_job = (W[of], z[of], cap, np.array(jobs_pairs, dtype=np.int64).reshape(-1, 2),
               np.array(ja_v).reshape(-1, K), np.array(jb_v).reshape(-1, K))
    return (W, z, cap, pairs, Va, Vb, count), per_job


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(class_instances())
def test_the_lp_over_classes_has_the_value_of_the_lp_over_jobs(inst):
    (W, z, cap, pairs, Va, Vb, count), per_job = inst
    by_class = gavel_lp.max_min_fairness_packed(W, z, cap, pairs, Va, Vb, count)
    assert by_class.value == pytest.approx(gavel_lp.max_min_fairness_packed(*per_job).value, rel=1e-7, abs=1e-12)
    # its fractions, each job's and each job pair's, are an allocation of the jobs
    n = count.astype(float)
    a, b = pairs[:, 0], pairs[:, 1]
    mult = np.where(a == b, n[a] * (n[a] - 1) / 2, n[a] * n[b])
    assert ((z * by_class.X * n[:, None]).sum(axis=0) + (z[a] * by_class.Y * mult[:, None]).sum(axis=0) <= cap + 1e-6).all()


# -- the engine --------------------------------------------------------------------------------

def packed(s: int, a: int, b: int) -> dict[int, Placement]:
    return {a: Placement({s: 1}, partner=b), b: Placement({s: 1}, partner=a)}


def test_engine_runs_a_packed_pair_on_one_gpu_at_its_pair_rates_and_counts_the_gpu_once():
    tr = trace(job("a", iterations=100.0), job("b", iterations=300.0))
    speed = PairSpeed({"a": 2.0, "b": 2.0}, {("a", "b"): (1.0, 1.5)})
    sim = Simulation(tr, typed_cluster({"v100": 1}, gpus=1), speed)
    sim.advance(None)
    sim.apply(packed(0, 0, 1), "p")
    assert sim.state().free[0, 0] == 0.0            # the GPU booked once: 1 GPU holds both
    sim.advance(None)
    # a: 100 steps at 1/s ends at 100 s; b then runs alone at 2/s: 300 - 150 = 150 left, 75 s more
    assert sim.time == pytest.approx(100.0) and sim.finished[0]
    assert sim.state().free[0, 0] == 0.0            # b books the GPU alone now
    sim.advance(None)
    assert sim.completion.tolist() == pytest.approx([100.0, 175.0])
    res = sim.result(policy="p")
    assert res.segment_used[:, 0].max() == 1.0       # utilisation counts the shared GPU once


@pytest.mark.parametrize("answer, message", [
    ({0: Placement({0: 1}, partner=1), 1: Placement({0: 1})}, "not place on the same workers"),
    ({0: Placement({0: 1}, partner=1), 1: Placement({1: 1}, partner=0)}, "not place on the same workers"),
    ({0: Placement({0: 1}, partner=0)}, "packed with job 0"),
    ({0: Placement({0: 1}, partner=2), 2: Placement({0: 1}, partner=0)}, "cannot share"),
])
def test_engine_rejects_a_packed_lease_that_is_not_one_or_cannot_share(answer, message):
    tr = trace(job("a", iterations=100.0), job("b", iterations=100.0), job("c", iterations=100.0))
    speed = PairSpeed({"a": 1.0, "b": 1.0, "c": 1.0}, {("a", "b"): (0.7, 0.7), ("a", "c"): (0.9, 0.0)})
    sim = Simulation(tr, typed_cluster({"v100": 2}, gpus=1), speed)
    sim.advance(None)
    with pytest.raises(PolicyError, match=message):
        sim.apply(answer, "p")
    assert not sim.running.size and (sim.state().free[:, 0] == 1.0).all()   # refused: nothing changed


def test_engine_refuses_packing_without_pair_rates_and_a_pair_left_half():
    tr = trace(job("a", iterations=100.0), job("b", iterations=100.0))
    sim = Simulation(tr, typed_cluster({"v100": 1}, gpus=1), LinearSpeed())
    sim.advance(None)
    with pytest.raises(PolicyError, match="no pair throughputs"):
        sim.apply(packed(0, 0, 1), "p")
    sim = Simulation(tr, typed_cluster({"v100": 1}, gpus=1), PairSpeed({"a": 1, "b": 1}, {("a", "b"): (0.6, 0.6)}))
    sim.advance(None)
    sim.apply(packed(0, 0, 1), "p")
    with pytest.raises(PolicyError, match="stays packed with job 0"):
        sim.apply({1: sim.state().allocation[1]}, "p")


def test_a_policy_that_never_packs_books_gpus_as_before():
    # two jobs alone on one GPU over-commit it; packed they fit
    tr = trace(job("a"), job("b"))
    sim = Simulation(tr, typed_cluster({"v100": 1}, gpus=1), PairSpeed({"a": 1, "b": 1}, {("a", "b"): (0.6, 0.6)}))
    sim.advance(None)
    with pytest.raises(PolicyError, match="over-commits"):
        sim.apply({0: Placement({0: 1}), 1: Placement({0: 1})}, "p")


# -- the policy --------------------------------------------------------------------------------

def gavel_jobs(n: int, seed: int):
    """n one-GPU jobs of Gavel's measured types (pairs measured on every type), arriving over an hour."""
    rng = np.random.default_rng(seed)
    types = ["ResNet-18 (batch size 64)", "ResNet-50 (batch size 64)", "Transformer (batch size 64)",
             "LM (batch size 20)", "Recommendation (batch size 2048)", "CycleGAN"]
    arrival = np.sort(np.r_[0.0, rng.uniform(0, 3600, n - 1)])
    return trace(*[gavel_job(f"j{i}", str(rng.choice(types)), float(rng.uniform(2e3, 2e4)), arrival[i]) for i in range(n)])


def gavel_job(name: str, job_type: str, iterations: float = 10.0, arrival: float = 0.0) -> Job:
    return Job(name, arrival, job_type, iterations, {"gpu": 1, "cpu": 1}, {})


@pytest.mark.parametrize("seed", [0, 1])
def test_a_packed_run_conserves_work(seed):
    # every job's iterations = the integral of its rate over the run, with each interval's rate from
    # the decisions (pair rates while the partner runs, alone after): an account kept apart from the engine's
    tr = gavel_jobs(10, seed)
    cl = typed_cluster({"v100": 1, "p100": 1, "k80": 1}, gpus=1)
    speed = ThroughputSpeed()
    calls = []

    class Record(Audit):
        def schedule(self, state, events):
            out = super().schedule(state, events)
            calls.append((state.time, dict(out)))
            return out

    audit = Record(make_policy("gavel-max-min-fairness-packed"))
    res = simulate(tr, cl, audit, speed)
    assert res.status == "completed" and not audit.problems
    done = np.zeros(len(tr))
    paired = 0
    ends = [t for t, _ in calls[1:]] + [float(np.nanmax(res.completion))]
    for (t0, alloc), t1 in zip(calls, ends):
        for j, pl in alloc.items():
            p = pl.partner
            if p is not None and res.completion[p] > t0:
                a, b = sorted((j, p))
                ra, rb = speed.pair_rates(tr.jobs[a], tr.jobs[b], pl, cl)
                r = ra if j == a else rb
                paired += 1
            else:
                r = speed.rate(tr.jobs[j], Placement(pl.workers), cl)
            done[j] += r * (min(t1, res.completion[j]) - t0)
    assert paired > 0                                     # the run did pack
    assert done == pytest.approx([j.iterations for j in tr.jobs], rel=1e-9)
    assert res.segment_used[:, 0].max() <= 3.0            # a shared GPU counts once


def test_packing_helps_where_pairs_share_well_and_changes_nothing_where_they_cannot():
    tr = gavel_jobs(12, 3)
    cl = typed_cluster({"v100": 1, "p100": 1, "k80": 1}, gpus=1)
    packed = simulate(tr, cl, make_policy("gavel-max-min-fairness-packed"), ThroughputSpeed())
    alone = simulate(tr, cl, make_policy("gavel-max-min-fairness-perf"), ThroughputSpeed())
    assert packed.summary()["avg_jct"] < alone.summary()["avg_jct"]

    class NoPairs(ThroughputSpeed):
        def pair_rates(self, job, other, placement, cluster):
            return 0.0, 0.0

    never = simulate(tr, cl, make_policy("gavel-max-min-fairness-packed"), NoPairs())
    assert never.completion.tolist() == alone.completion.tolist()      # bit for bit


def test_a_packed_policy_needs_pair_throughputs(tmp_path):
    with pytest.raises(InputError, match="pair throughputs"):
        simulate(trace(job("a")), typed_cluster({"v100": 1}), make_policy("gavel-max-min-fairness-packed"), LinearSpeed())
    alone = tmp_path / "alone.json"            # a throughput file with no co-located entries
    alone.write_text('{"v100": {"(\'ResNet-18 (batch size 16)\', 1)": {"null": 2.0}}}')
    with pytest.raises(InputError, match=r"alone\.json.*pair throughputs"):
        simulate(trace(gavel_job("a", "ResNet-18 (batch size 16)")), typed_cluster({"v100": 1}),
                 make_policy("gavel-max-min-fairness-packed"), ThroughputSpeed(alone))


def test_a_packed_policy_without_pair_throughputs_exits_2_from_the_command_line(capsys):
    from dlsched.cli import main

    code = main(["simulate", "dl2:5", "--policy", "gavel-max-min-fairness-packed"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "pair throughputs" in err and "TableSpeed" in err and "Traceback" not in err


def test_gavel_file_pair_rates():
    speed = ThroughputSpeed()
    cl = typed_cluster({"v100": 1, "k80": 1}, gpus=2)
    a, b = gavel_job("a", "ResNet-18 (batch size 16)"), gavel_job("b", "ResNet-18 (batch size 64)")
    # Gavel's v100 entry of ('ResNet-18 (batch size 16)', 1) under ('ResNet-18 (batch size 64)', 1)
    assert speed.pair_rates(a, b, Placement({0: 1}), cl) == pytest.approx((32.353384328946916, 24.093231895382736))
    assert speed.pair_rates(a, b, Placement({0: 1, 1: 1}), cl) == (0.0, 0.0)    # across types: no pair


def test_a_malformed_pair_in_the_throughput_file_is_named(tmp_path):
    from dlsched.perf.throughputs import load_gavel

    bad = tmp_path / "t.json"
    bad.write_text('{"v100": {"(\'A\', 1)": {"null": 2.0, "(\'B\', 1)": 3.0}}}')
    with pytest.raises(InputError, match=r"\$\.v100\[\"\('A', 1\)\"\]\[\"\('B', 1\)\"\]"):
        load_gavel(bad)
    good = tmp_path / "g.json"
    good.write_text('{"v100": {"(\'A\', 1)": {"null": 2.0, "(\'B\', 1)": [1.5, 0.5], "(\'C\', 2)": [1.0, 1.0]}}}')
    assert load_gavel(good).pairs == {("A", "B", "v100", 1): (1.5, 0.5)}     # other scale factors: no pair


def test_an_allocation_held_past_a_completion_leases_nothing_to_the_finished_job():
    # reset_seconds keeps the allocation of t = 0 (which names the short job) after that job ends
    tr = gavel_jobs(6, 5)
    tr = trace(*[j if i else Job(j.name, j.arrival, j.job_type, 300.0, {"gpu": 1, "cpu": 1}, {}) for i, j in enumerate(tr.jobs)])
    cl = typed_cluster({"v100": 1, "k80": 1}, gpus=1)
    audit = Audit(make_policy("gavel-max-min-fairness-packed", reset_seconds=5000.0))
    res = simulate(tr, cl, audit, ThroughputSpeed())
    assert res.status == "completed" and not audit.problems


def test_the_deficits_kept_are_those_of_combinations_still_active():
    tr = gavel_jobs(12, 3)
    pol = make_policy("gavel-max-min-fairness-packed")
    res = simulate(tr, typed_cluster({"v100": 1, "p100": 1, "k80": 1}, gpus=1), pol, ThroughputSpeed())
    assert res.status == "completed" and pol.deficits
    assert all(j in pol.jobs_of_X for c in pol.deficits for j in c if j >= 0)

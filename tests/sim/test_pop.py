"""POP (Narayanan et al., SOSP'21) for ``hetplace`` and ``fluid`` (``pop_k``): the deals partition the
jobs and the servers, a POP decision is feasible and certified against a bound of the unsplit problem,
and ``pop_k`` = 1 is the unsplit decision."""

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.instance.placement_gen import generate
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.instance.workload import Trace
from dlsched.policies.fluid import fluid_bound, fluid_lp, pareto_of
from dlsched.policies.greedy import greedy_view
from dlsched.models.placement import alone_jct
from dlsched.policies import hetplace as hetplace_policy
from dlsched.policies.hetplace import HetPlace, deal_servers, to_trace
from dlsched.policies.view import instance_view
from dlsched.registry import make_policy
from dlsched.result import Status
from dlsched.sim.engine import Simulation, simulate
from dlsched.sim.policy import PolicyContext
from dlsched.sim.speed import TableSpeed
from dlsched.solvers.anytime import pop_groups
from dlsched.solvers.hetplace import ConfigTable, exact
from dlsched.solvers.options import Budget, SolveOptions
from dlsched.check import check_placement
from dlsched.testing import check_policy
from tests.sim.helpers import LinearSpeed, openb_like


@settings(max_examples=60, deadline=None)
@given(w=st.lists(st.integers(1, 9), min_size=1, max_size=8), frac=st.floats(0, 1), seed=st.integers(0, 99))
def test_weighted_pop_groups_partition_the_items_and_respect_the_weights(w, frac, seed):
    n = int(frac * sum(w))
    groups = pop_groups(n, len(w), np.random.default_rng(seed), weights=np.array(w))
    assert len(groups) == len(w)
    assert np.array_equal(np.sort(np.concatenate(groups)), np.arange(n))
    sizes = np.array([g.size for g in groups])
    assert (sizes <= np.array(w)).all()
    assert (np.abs(sizes - n * np.array(w) / sum(w)) < 1).all()       # rounded down or up


def test_pop_groups_without_weights_deal_as_before():
    # the same generator draws give smd the same groups as before the weights
    assert [g.tolist() for g in pop_groups(7, 3, np.random.default_rng(5))] == \
        [np.sort(g).tolist() for g in np.array_split(np.random.default_rng(5).permutation(7), 3)]


@settings(max_examples=60, deadline=None)
@given(servers=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 2)), min_size=1, max_size=30), k=st.integers(1, 17))
def test_deal_servers_partitions_the_servers_with_equal_shares_of_each_type(servers, k):
    gpus, types = np.array([g for g, _ in servers]), np.array([t for _, t in servers])
    groups = deal_servers(gpus, types, k)
    assert len(groups) == min(k, gpus.size)
    assert np.array_equal(np.sort(np.concatenate(groups)), np.arange(gpus.size))
    assert all(g.size for g in groups) or gpus.size < k
    for t in np.unique(types).tolist():
        share = np.array([gpus[g][types[g] == t].sum() for g in groups])
        # list scheduling's bound: the shares of a type differ by at most its largest server
        assert share.max() - share.min() <= gpus[types == t].max()


def _pop_decision(inst, k, seed=0):
    pol = HetPlace(pop_k=k)
    tr, cl, speed = to_trace(inst)
    pol.reset(PolicyContext(cluster=cl, speed=speed, seed=seed))
    ones = np.ones(inst.n_jobs, dtype=np.int64)
    return pol._pop(inst, SolveOptions(threads=1, seed=seed), k, ones, ones)


@pytest.mark.parametrize("n,seed", [(6, 0), (8, 1), (10, 2), (12, 3)])
@pytest.mark.parametrize("k", [2, 3])
def test_a_hetplace_pop_decision_is_feasible_and_bracketed_by_a_bound_of_the_unsplit_problem(n, seed, k):
    # 12 GPUs of three types on 3 servers: the jobs contend and the unsplit optimum is exact's
    inst = generate(n, {"k80": 4, "p100": 4, "v100": 4}, seed=seed, max_workers=4)
    opt = exact(inst, SolveOptions(threads=1))
    assert opt.status == Status.OPTIMAL
    res = _pop_decision(inst, k, seed)
    rep = check_placement(inst, res.solution, res.objective)
    assert rep.feasible, rep.violations
    tol = 1e-9 * opt.objective
    assert res.bound <= opt.objective + tol <= res.objective + 2 * tol
    assert res.stats["pop_k"] == k


class _SpentAfter(Budget):
    """A budget spent from its ``k``-th check on (a fake clock, no timing) whose shares are unlimited
    (``remaining`` is inf): the groups of a POP decision run in full and only its certificate is cut."""

    def __init__(self, k: int):
        super().__init__(1e-9, margin=0.0)
        self.k, self.checks = k, 0

    def expired(self) -> bool:
        self.checks += 1
        return self.checks > self.k

    def remaining(self) -> float:
        return math.inf


@pytest.mark.parametrize("k", [0, 1, 3, 8])
def test_the_pop_certificate_does_what_the_budget_leaves_and_stays_a_bound(k, monkeypatch):
    # the unsplit bound's subgradient picks end with the budget, as spent after the groups: the pick at the
    # groups' prices always (the least bound), then one per check that finds the budget left
    inst = generate(10, {"k80": 4, "p100": 4, "v100": 4}, seed=2, max_workers=4)
    opt = exact(inst, SolveOptions(threads=1))
    picks = []

    class Counting(hetplace_policy.ConfigTable):
        def pick(self, lam):
            picks.append(lam)
            return super().pick(lam)

    monkeypatch.setattr(hetplace_policy, "ConfigTable", Counting)
    pol = HetPlace(pop_k=3)
    tr, cl, speed = to_trace(inst)
    pol.reset(PolicyContext(cluster=cl, speed=speed, seed=0))
    ones = np.ones(inst.n_jobs, dtype=np.int64)
    res = pol._pop(inst, SolveOptions(threads=1, seed=2, budget=_SpentAfter(k)), 3, ones, ones)
    assert len(picks) <= k + 1
    assert res.termination == "time_limit"
    tol = 1e-9 * opt.objective
    assert res.bound <= opt.objective + tol <= res.objective + 2 * tol
    if k == 0:
        lam = np.array(res.stats["prices"])
        _, val = ConfigTable(inst).pick(lam)
        least = (val.sum() - lam @ inst.type_counts) / inst.n_jobs
        assert res.bound == pytest.approx(max(least, float(alone_jct(inst).mean())), rel=1e-12)
    unlimited = pol._pop(inst, SolveOptions(threads=1, seed=2), 3, ones, ones)
    assert len(picks) > k + 1 and unlimited.bound <= opt.objective + tol


def test_hetplace_pop_decides_unsplit_when_a_job_is_larger_than_its_group():
    inst = generate(6, {"k80": 4, "p100": 4, "v100": 4}, seed=0, max_workers=4)
    pol = HetPlace(pop_k=3)
    tr, cl, speed = to_trace(inst)
    pol.reset(PolicyContext(cluster=cl, speed=speed, seed=0))
    least = np.ones(6, dtype=np.int64)
    least[2] = 5                          # more than the 4 GPUs of any group of one server
    res = pol._pop(inst, SolveOptions(threads=1), 3, least, np.ones(6, dtype=np.int64))
    assert "pop_k" not in res.stats       # the unsplit pipeline's answer


def _completions(res):
    return [(float(s), float(c)) for s, c in zip(res.first_start, res.completion)]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 30))
def test_pop_k_1_and_a_pop_min_above_the_jobs_are_the_unsplit_decisions(seed, n):
    tr, cl, speed = openb_like(seed, n)
    base = _completions(simulate(tr, cl, make_policy("hetplace"), speed))
    for kw in ({"pop_k": 1}, {"pop_k": 4, "pop_min": n + 1}):
        assert _completions(simulate(tr, cl, make_policy("hetplace", **kw), speed)) == base
    fl = _completions(simulate(tr, cl, make_policy("fluid", lp_jobs=4), speed))
    assert _completions(simulate(tr, cl, make_policy("fluid", lp_jobs=4, pop_k=1), speed)) == fl


@pytest.mark.parametrize("name,params", [("hetplace", {"pop_k": 2}), ("hetplace", {"pop_k": 3, "budget_ms": 60_000}),
                                         ("hetplace", {"pop_k": 2, "order": "srpt"}), ("fluid", {"pop_k": 2}),
                                         ("fluid", {"pop_k": 3, "budget_ms": 60_000, "lp_jobs": 4})])
def test_pop_policies_keep_the_contract(name, params):
    # the engine applies every decision (capacity, sizes), every job finishes, same seed same schedule
    cases = [openb_like(seed, 24)[:2] + (LinearSpeed(),) for seed in (0, 1)]
    check_policy(lambda: make_policy(name, **params), cases=cases)


@pytest.mark.parametrize("name", ["hetplace", "fluid"])
@pytest.mark.parametrize("bad", [0, -1, "x"])
def test_bad_pop_k_names_the_option(name, bad):
    with pytest.raises(InputError, match="pop_k"):
        make_policy(name, pop_k=bad)


def test_bad_pop_min_names_the_option():
    with pytest.raises(InputError, match="pop_min"):
        make_policy("hetplace", pop_min=-1)


# ------------------------------------------------------------------ fluid

def _fluid_state(n, seed, nodes=2):
    """A contended DL2 state (``n`` jobs on ``nodes`` DL2 nodes): its greedy view and each job's times and Pareto sizes."""
    tr = dl2_trace(n, seed=seed)
    inst = instance_view(tr.jobs, dl2_cluster(nodes), TableSpeed())
    view = greedy_view(inst, np.arange(n))
    times = [view.times(i) for i in range(n)]
    configs = [pareto_of(inst, int(view.jobs[i])) for i in range(n)]
    return view, times, configs


@pytest.mark.parametrize("seed,nodes", [(0, 1), (1, 1), (2, 1), (3, 2), (4, 1), (5, 1)])
def test_fluid_bound_is_below_the_lp_in_every_completion_order(seed, nodes):
    view, times, configs = _fluid_state(4, seed, nodes)
    values = [fluid_lp(times, view.d, view.e, view.capacity, list(order), configs).solve().value
              for order in itertools.permutations(range(4))]
    assert fluid_bound(times, view.d, view.e, view.capacity, range(4), configs) <= min(values) * (1 + 1e-7)


def test_fluid_bound_is_the_lp_where_the_jobs_do_not_contend():
    # a cluster of 100 DL2 nodes: each job runs at its fastest size from the start, and the bound is exact
    view, times, configs = _fluid_state(4, 0, 100)
    order = np.argsort([t[np.isfinite(t)].min() for t in times]).tolist()        # shortest first
    value = fluid_lp(times, view.d, view.e, view.capacity, order, configs).solve().value
    assert fluid_bound(times, view.d, view.e, view.capacity, range(4), configs) == pytest.approx(value, rel=1e-7)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("k", [2, 3])
def test_a_fluid_pop_decision_is_certified_against_the_unsplit_problem(seed, k):
    n = 8
    tr = dl2_trace(n, seed=seed)
    tr = Trace(tuple(replace(j, arrival=0.0) for j in tr.jobs), tr.source)
    cl = dl2_cluster(2)
    view, times, configs = _fluid_state(n, seed)
    order = np.argsort([t[np.isfinite(t)].min() for t in times], kind="stable").tolist()
    unsplit = fluid_lp(times, view.d, view.e, view.capacity, order, configs).solve().value
    pol = make_policy("fluid", pop_k=k)
    sim = Simulation(tr, cl, TableSpeed(), seed=seed)
    pol.reset(PolicyContext(cluster=cl, speed=TableSpeed(), seed=seed))
    events = sim.advance(None)
    sim.apply(pol.schedule(sim.state(), events), pol.name)      # the engine checks the answer
    obj, gap = pol.decision_record.objectives[-1], pol.decision_record.gaps[-1]
    bound = obj * (1 - gap)
    assert gap >= 0 and bound <= unsplit * (1 + 1e-7)
    assert obj >= bound

"""The Policy contract (dlsched/sim/policy.py, docs/simulator.md), asserted for every registered policy.

The shipped policy kit (:func:`dlsched.testing.check_policy`) runs here on every registered
policy (one line in ``dlsched.registry.POLICIES`` puts a policy here), on random traces of the
family it applies to, through an audit that recomputes every answer from the placements alone:
capacity, sizes, the state left unchanged, every job finished (an admission policy may turn a
job away), no job sooner than alone at full size, same seed same schedule, ``reset`` makes a used
policy new. The method kit does the same for methods (tests/test_conformance.py).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.oasis_gen import small as oasis_small
from dlsched.policies import oasis as oasis_policies
from dlsched.registry import make_policy, policy_names
from dlsched.testing import LinearSpeed, PairedLinearSpeed, check_policy, generic_trace

# The traces each policy applies to; every other registered policy takes any trace.
OASIS_FAMILY = ("oasis", "risk_reward", "dorm")      # need OASiS's speed source (utilities, worker/PS servers)
DL2_FAMILY = ("dl2",)                                # a trained network knows only DL2's job types
PACKED_FAMILY = ("gavel-max-min-fairness-packed",)   # needs a speed source with pair rates (space sharing)
GENERIC = tuple(n for n in policy_names() if n not in OASIS_FAMILY + DL2_FAMILY + PACKED_FAMILY)


def test_every_registered_policy_is_under_this_suite():
    assert set(GENERIC) | set(OASIS_FAMILY) | set(DL2_FAMILY) | set(PACKED_FAMILY) == set(policy_names())
    assert set(OASIS_FAMILY + DL2_FAMILY + PACKED_FAMILY) <= set(policy_names())


jobs_st = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 30), st.sampled_from([1, 2]), st.integers(1, 2),
                             st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=5)


@pytest.mark.parametrize("name", GENERIC + PACKED_FAMILY)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_st, servers=st.integers(1, 3), restart=st.sampled_from([0.0, 2.0]), seed=st.integers(0, 3))
def test_generic_policies_keep_the_contract_on_random_traces(name, rows, servers, restart, seed):
    cl = Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8})
    speed = PairedLinearSpeed() if name in PACKED_FAMILY else LinearSpeed()
    check_policy(name, cases=[(generic_trace(rows), cl, speed)], seed=seed, restart_seconds=restart)


@pytest.mark.parametrize("name", PACKED_FAMILY)
def test_packing_policies_keep_the_contract_where_they_pack(name):
    # eight rigid 1-GPU jobs and a PS job on 2 GPUs: pairs at 0.6 each beat taking turns, so they pack
    tr = generic_trace([(i, 10 + 5 * i, 1, 1, 0, 0) for i in range(8)] + [(3, 20, 1, 1, 0, 1)])
    check_policy(name, cases=[(tr, Cluster.homogeneous(1, {"gpu": 2, "cpu": 16}), PairedLinearSpeed())], restart_seconds=2.0)


@pytest.mark.parametrize("name", OASIS_FAMILY)
@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_oasis_family_policies_keep_the_contract(name, seed):
    cases = [oasis_policies.to_trace(oasis_small(s, n_jobs=5, horizon=8)) for s in (seed, seed + 100)]
    check_policy(name, cases=cases, admission=True)


def test_dl2_keeps_the_contract_on_its_job_mix():
    pytest.importorskip("torch", reason="DL2 needs the rl extra: pip install 'dlsched[rl]'")
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.sim.speed import TableSpeed

    cl, speed = dl2_cluster(4), TableSpeed()
    # DL2's measured speed table is not monotone in the size: a job may beat "alone at full size"
    check_policy("dl2", cases=[(dl2_trace(8, seed=3), cl, speed), (dl2_trace(6, seed=4), cl, speed)],
                 restart_seconds=10.0, exclude=("isolation",))


@pytest.mark.parametrize("name", GENERIC)
def test_gang_scheduled_jobs_run_at_their_whole_size(name):
    # fixed sizes 2 and 3 on 4 GPUs: one at a time. The policies built on the SMD view once sized
    # them from 1 worker up, then dropped every size below the minimum: nothing ran, the run stalled.
    tr = generic_trace([(0, 4, 1, 2, 0, 0), (0, 6, 1, 3, 0, 1)])
    check_policy(name, cases=[(tr, Cluster.homogeneous(1, {"gpu": 4, "cpu": 8}), LinearSpeed())],
                 exclude=("determinism", "reset"))


def test_a_broken_policy_fails_the_kit_naming_the_check():
    """Each check can fail: a policy that over-commits, one that mis-sizes, one that remembers."""
    from dlsched.policies.fifo import FIFO
    from dlsched.sim.placement import hold
    from dlsched.sim.policy import Placement

    class Greedy(FIFO):
        """Every active job on server 0 at its maximum size: over-commits when two run."""

        def schedule(self, state, events):
            return {int(j): Placement({0: state.jobs[j].max_workers}, {0: 1} if state.jobs[j].uses_ps else {})
                    for j in state.active}

    class Forgetful(FIFO):
        """Arrival order on its first run, reversed on its next: reset does not make it new."""

        def __init__(self):
            super().__init__()
            self.runs = 0

        def reset(self, ctx):
            super().reset(ctx)
            self.runs += 1

        def schedule(self, state, events):
            out, free = dict(state.allocation), state.free.copy()
            order = state.active.tolist()
            for j in (order if self.runs == 1 else order[::-1]):
                w, p, _ = self.full(state, j)
                pl = None if j in out else self.placer.fit(free, state.demand_w[j], state.demand_p[j], w, p)
                if pl is not None:
                    hold(free, pl, state.demand_w[j], state.demand_p[j])
                    out[j] = pl
            return out

    tr = generic_trace([(0, 10, 2, 2, 0, 0), (0, 10, 2, 2, 0, 0), (1, 5, 1, 1, 0, 0)])
    case = [(tr, Cluster.homogeneous(1, {"gpu": 4, "cpu": 8}), LinearSpeed())]
    with pytest.raises(AssertionError, match=r"^capacity: trace 0 .*over-committed"):
        check_policy(Greedy, cases=case)
    check_policy(Forgetful, cases=case, exclude=("reset",))
    with pytest.raises(AssertionError, match=r"^reset: trace 0 .*reset did not make a used policy new"):
        check_policy(Forgetful, cases=case)


#: the optimisation policies with a per-decision budget (dlsched/policies/budget.py), and POP
BUDGETED = [("smd", {"budget_ms": 60_000}), ("smd", {"budget_ms": 60_000, "pop_k": 2}),
            ("hetplace", {"budget_ms": 60_000}), ("fluid", {"budget_ms": 60_000}),
            ("optimus", {"budget_ms": 60_000})]
#: modes other than the defaults the suite above runs: hetplace deciding which jobs run, hetplace's
#: incremental decisions (a full one every 3, and only the first), POP without a budget, fluid's LP over
#: its first jobs only
MODES = [("hetplace", {"order": "srpt"}), ("hetplace", {"incremental": True, "refresh": 3}),
         ("hetplace", {"incremental": True, "refresh": 10_000}), ("smd", {"pop_k": 2}), ("fluid", {"lp_jobs": 2})]


@pytest.mark.parametrize("name,params", BUDGETED + MODES,
                         ids=lambda x: x if isinstance(x, str) else "-".join(map(str, x.values())))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_st, servers=st.integers(1, 3), seed=st.integers(0, 3))
def test_budgeted_policies_and_other_modes_keep_the_contract(name, params, rows, servers, seed):
    cl = Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8})
    check_policy(lambda: make_policy(name, **params), cases=[(generic_trace(rows), cl, LinearSpeed())], seed=seed)


def test_pop_decides_unsplit_when_a_job_is_larger_than_its_group():
    """POP's groups hold 1/k of every server: a job whose every size needs more would never run in
    its group (two jobs of two 2-GPU workers on one 4-GPU server stalled with pop_k=2)."""
    tr = generic_trace([(0, 1, 1, 1, 0, 0), (0, 1, 2, 2, 0, 0), (0, 1, 2, 2, 0, 0)])
    check_policy(lambda: make_policy("smd", budget_ms=60_000, pop_k=2),
                 cases=[(tr, Cluster.homogeneous(1, {"gpu": 4, "cpu": 8}), LinearSpeed())])


@pytest.mark.parametrize("name", ["smd", "hetplace", "fluid", "optimus"])
def test_a_budget_that_binds_still_answers_within_the_contract(name):
    # 1 ms: every decision is cut short; the answers depend on the clock (no determinism check)
    tr = generic_trace([(0, 9, 1, 3, 0, 0), (0, 4, 2, 2, 0, 1), (1, 7, 1, 4, 1, 0), (2, 3, 1, 1, 0, 2), (2, 12, 2, 2, 2, 1)])
    check_policy(lambda: make_policy(name, budget_ms=1), cases=[(tr, Cluster.homogeneous(2, {"gpu": 4, "cpu": 8}), LinearSpeed())],
                 exclude=("determinism", "reset"))

"""The Policy contract (dlsched/sim/policy.py, docs/simulator.md), asserted for every registered policy.

The solvers' conformance suite (tests/test_conformance.py) does this for methods; this one does it
for policies: registering a policy (one line in ``dlsched.registry.POLICIES``) puts it here.
Each policy runs on random traces of the family it applies to, through an audit that recomputes
every answer from the placements alone (no code shared with the engine's own check):

* no server is over-committed, every job runs between its minimum and maximum size, with a PS
  exactly when it uses PSs, and only active jobs are named;
* the policy does not change the state it is shown (its arrays, the allocation, ``free``);
* a run ends: every job completes, except under an admission policy (OASiS and its baselines may
  turn a job away, which leaves the run "stalled" with only those jobs waiting); no job finishes
  sooner than it would alone at full size;
* the same seed gives the same schedule, and ``reset`` makes a used policy new again.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.instance.cluster import Cluster
from dlsched.instance.oasis_gen import small as oasis_small
from dlsched.instance.workload import Job, Trace
from dlsched.sim.engine import simulate
from dlsched.registry import make_policy, policy_names
from dlsched.policies import oasis as oasis_policies
from tests.sim.helpers import Audit, LinearSpeed

# The traces each policy applies to; every other registered policy takes any trace.
OASIS_FAMILY = ("oasis", "risk_reward", "dorm")      # need OASiS's speed source (utilities, worker/PS servers)
DL2_FAMILY = ("dl2",)                                # a trained network knows only DL2's job types
ADMISSION = set(OASIS_FAMILY)                        # may turn jobs away by design
GENERIC = tuple(n for n in policy_names() if n not in OASIS_FAMILY + DL2_FAMILY)


def run(name: str, tr: Trace, cl: Cluster, speed, policy=None, monotone: bool = True, **kw):
    """Simulate under the audit. ``monotone``: the speed never drops as a job grows, so no job may
    finish sooner than alone at full size (DL2's measured table is not monotone)."""
    audit = Audit(policy if policy is not None else make_policy(name))
    res = simulate(tr, cl, audit, speed, deadline=120, **kw)
    assert not audit.problems, (name, audit.problems[:3])
    assert res.policy == make_policy(name).name
    if name in ADMISSION:
        assert res.status in ("completed", "stalled"), (name, res.status, res.message)
    else:
        assert res.status == "completed", (name, res.status, res.message)
        assert res.completed.sum() + len(res.unschedulable) == len(tr)
    done = res.completed
    assert not monotone or (res.jct[done] >= res.isolated_jct[done] * (1 - 1e-9)).all(), name
    return res, audit


def same_schedule(a, b) -> bool:
    return np.array_equal(a.completion, b.completion, equal_nan=True) and \
        np.array_equal(a.first_start, b.first_start, equal_nan=True)


def test_every_registered_policy_is_under_this_suite():
    assert set(GENERIC) | set(OASIS_FAMILY) | set(DL2_FAMILY) == set(policy_names())
    assert set(OASIS_FAMILY + DL2_FAMILY) <= set(policy_names())


jobs_st = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 30), st.sampled_from([1, 2]), st.integers(1, 2),
                             st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=5)


def generic_trace(rows) -> Trace:
    """Jobs with 1–2 GPUs per worker, elastic or fixed, with or without PSs, arriving in order."""
    out = []
    for i, (a, k, g, lo, extra, ps) in enumerate(sorted(rows, key=lambda r: r[0])):
        out.append(Job(f"j{i}", float(a), "toy", float(k), {"gpu": g, "cpu": 1}, {"cpu": 1} if ps else {},
                       min_workers=lo, max_workers=lo + extra, max_ps=ps))
    return Trace(tuple(out), "<random>")


@pytest.mark.parametrize("name", GENERIC)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_st, servers=st.integers(1, 3), restart=st.sampled_from([0.0, 2.0]), seed=st.integers(0, 3))
def test_generic_policies_keep_the_contract_on_random_traces(name, rows, servers, restart, seed):
    tr, cl, speed = generic_trace(rows), Cluster.homogeneous(servers, {"gpu": 4, "cpu": 8}), LinearSpeed()
    first, _ = run(name, tr, cl, speed, seed=seed, restart_seconds=restart)
    again, _ = run(name, tr, cl, speed, seed=seed, restart_seconds=restart)
    assert same_schedule(first, again), f"{name}: the same seed gave another schedule"
    used = make_policy(name)
    run(name, generic_trace(rows[::-1]), cl, speed, policy=used, seed=seed)      # leaves state behind
    reused, _ = run(name, tr, cl, speed, policy=used, seed=seed, restart_seconds=restart)
    assert same_schedule(first, reused), f"{name}: reset did not make a used policy new"


@pytest.mark.parametrize("name", OASIS_FAMILY)
@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_oasis_family_policies_keep_the_contract(name, seed):
    tr, cl, speed = oasis_policies.to_trace(oasis_small(seed, n_jobs=5, horizon=8))
    first, _ = run(name, tr, cl, speed)
    used = make_policy(name)
    run(name, *oasis_policies.to_trace(oasis_small(seed + 100, n_jobs=5, horizon=8)), policy=used)
    assert same_schedule(first, run(name, tr, cl, speed, policy=used)[0]), name


def test_dl2_keeps_the_contract_on_its_job_mix():
    pytest.importorskip("torch", reason="DL2 needs the rl extra: pip install 'dlsched[rl]'")
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.sim.speed import TableSpeed

    cl, speed = dl2_cluster(4), TableSpeed()
    tr = dl2_trace(8, seed=3)
    first, _ = run("dl2", tr, cl, speed, monotone=False, restart_seconds=10.0)
    used = make_policy("dl2")
    run("dl2", dl2_trace(6, seed=4), cl, speed, policy=used, monotone=False)
    assert same_schedule(first, run("dl2", tr, cl, speed, policy=used, monotone=False, restart_seconds=10.0)[0])


@pytest.mark.parametrize("name", GENERIC)
def test_gang_scheduled_jobs_run_at_their_whole_size(name):
    # fixed sizes 2 and 3 on 4 GPUs: one at a time. The policies built on the SMD view once sized
    # them from 1 worker up, then dropped every size below the minimum: nothing ran, the run stalled.
    tr = generic_trace([(0, 4, 1, 2, 0, 0), (0, 6, 1, 3, 0, 1)])
    res, _ = run(name, tr, Cluster.homogeneous(1, {"gpu": 4, "cpu": 8}), LinearSpeed())
    assert res.completed.all()

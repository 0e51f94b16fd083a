"""The SMD and OASiS families on the engine (MODELS.md §2.3, §2.4, §3): converters, policies, checkers."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dlsched
from dlsched.check import check_oasis, check_smd
from dlsched.instance.oasis_gen import small
from dlsched.instance.smd_gen import generate
from dlsched.models.oasis import schedule_utility
from dlsched.sim.engine import simulate
from dlsched.sim.policies import make_policy
from dlsched.sim.policies import oasis as po
from dlsched.sim.policies import smd as ps
from dlsched.sim.policies.baselines import DRF
from dlsched.sim.policies.offline import TimeIndexed
from dlsched.solvers.baselines_oasis import DrfPolicy, FifoPolicy, RiskRewardPolicy
from dlsched.solvers.options import SolveOptions
from tests.sim.helpers import LinearSpeed, cluster, job, trace


def test_smd_to_trace_keeps_every_job_demand_and_speed():
    inst = generate(6, 2, seed=3, arrival_rate=1.0)
    tr, cl, speed = ps.to_trace(inst)
    assert len(tr) == inst.n_jobs and cl.n_servers == 1
    assert np.allclose(cl.capacity[0], inst.capacity)
    for job in tr.jobs:
        j = job.meta["index"]
        assert job.arrival == pytest.approx(inst.arrival[j] * inst.slot_seconds)
        assert job.iterations == inst.iterations[j] and job.max_workers == inst.max_workers[j] and job.max_ps == inst.max_ps[j]
        assert np.allclose(cl.vector(job.worker_demand), inst.d[j]) and np.allclose(cl.vector(job.ps_demand), inst.e[j])
        pl = dlsched.sim.policy.Placement({0: 2}, {0: 1})
        assert speed.rate(job, pl, cl) == pytest.approx(1.0 / float(inst.tau(j, 2, 1)))
    assert [j.arrival for j in tr.jobs] == sorted(j.arrival for j in tr.jobs)


def test_oasis_to_trace_separates_worker_and_ps_servers():
    inst = small(2)
    tr, cl, speed = po.to_trace(inst)
    H, K = inst.n_worker_servers, inst.n_ps_servers
    assert cl.n_servers == H + K and len(tr) == inst.n_jobs
    w, p = cl.index("oasis_worker"), cl.index("oasis_ps")
    assert (cl.capacity[:H, p] == 0).all() and (cl.capacity[H:, w] == 0).all()
    for job in tr.jobs:
        i = job.meta["index"]
        assert job.arrival == (inst.arrival[i] - 1) * inst.slot_seconds and job.iterations == inst.work()[i]
        pl = dlsched.sim.policy.Placement({0: 1}, {H: int(inst.ps_needed(i, 1))})
        assert speed.rate(job, pl, cl) == pytest.approx(1.0 / inst.slot_seconds)
        assert job.utility(inst.slot_seconds) == pytest.approx(float(inst.utility_of(i, 1)))


@pytest.mark.parametrize("seed", range(4))
def test_smd_policies_pass_check_smd_and_the_offline_optimum_is_below_them(seed):
    inst = generate(4 + seed % 2, 1, seed=seed, max_len_slots=2.0, arrival_rate=1.0)
    opt = ps.run(inst, TimeIndexed(), replan="slots")
    ti = dlsched.solve(inst, "time-indexed", threads=1)
    assert ti.status == dlsched.Status.OPTIMAL and opt.complete
    assert opt.objective == pytest.approx(ti.objective)
    assert check_smd(inst, opt.as_solution(), opt.objective).feasible
    for pol in (ps.SMDPolicy(inst, SolveOptions(threads=1)), ps.OptimusGreedyPolicy(inst), DRF(placer="first_fit")):
        s = ps.run(inst, pol)
        rep = check_smd(inst, s.as_solution(), s.objective)
        assert s.complete and rep.feasible, rep.violations[:3]
        assert ti.bound <= opt.objective + 1e-9 <= s.objective + 1e-9


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_oasis_policies_pass_check_oasis(seed):
    inst = small(seed)
    makers = [po.SlotDecide(lambda i: FifoPolicy(i), "fifo"), po.SlotDecide(lambda i: RiskRewardPolicy(i), "risk_reward"),
              po.SlotDecide(lambda i: RiskRewardPolicy(i, preempt=True), "risk_reward"), DrfPolicy(), po.OasisPolicy()]
    for pol in makers:
        sched, _ = po.run(inst, pol)
        u = schedule_utility(inst, sched)
        rep = check_oasis(inst, sched, u)
        assert rep.feasible, (pol.name, rep.violations[:3])


def test_oasis_policy_equals_the_direct_primal_dual():
    from dlsched.solvers.oasis import run_oasis

    for s in range(3):
        inst = small(s)
        direct, _ = run_oasis(inst)
        sim, _ = po.run(inst, po.OasisPolicy())
        assert (direct.admitted == sim.admitted).all() and (direct.completion == sim.completion).all()
        assert schedule_utility(inst, sim) == pytest.approx(schedule_utility(inst, direct))


def test_smd_and_offline_policies_run_on_a_generic_trace():
    tr = trace(job("a", 0.0, 5.0), job("b", 1.0, 3.0, max_workers=2, max_ps=1), job("c", 2.0, 2.0, gpus=2))
    results = {}
    for name in ("smd", "optimus-greedy", "time-indexed"):
        pol = make_policy(name, slot_seconds=1.0) if name == "time-indexed" else make_policy(name)
        res = simulate(tr, cluster(servers=2), pol, LinearSpeed())
        assert res.status == "completed" and res.completed.all(), name
        results[name] = res
    # on the 1-s slot grid the optimum's Σ C_j (slots) is below the others' completion slots
    slots = {n: np.ceil(r.completion - 1e-9).sum() for n, r in results.items()}
    assert slots["time-indexed"] <= min(slots["smd"], slots["optimus-greedy"])


def test_the_time_limit_stops_a_simulated_method():
    inst = generate(30, 2, seed=1, arrival_rate=2.0)
    res = dlsched.solve(inst, "smd", threads=1, time_limit=1e-3)
    assert res.termination == "time_limit" and not res.status.has_solution()

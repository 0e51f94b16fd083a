"""Every budgeted decision either certifies the allocation that runs or is counted as uncertified
(docs/simulator.md, "Decision budgets and certified gaps"; dlsched/policies/budget.py). Budgets of a
nanosecond stand in for a fake clock: every step that stops at the budget stops at its first chance, whatever
the machine's speed, so nothing here is timed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dlsched.bench.decision import held, scene
from dlsched.cli import main
from dlsched.policies.budget import DecisionRecord
from dlsched.registry import make_policy
from dlsched.result import relative_gap
from dlsched.sim.engine import Simulation
from dlsched.sim.policy import Placement, PolicyContext


def decided_then_budgeted(name: str, mix: str, n: int, **params):
    """The policy's first decision without a budget (as a run whose budget is set later), then one at 1 s under a
    budget of a nanosecond: (the jobs running before it, the state after it, the policy)."""
    trace, cluster, speed = scene(mix, n)
    policy = make_policy(name, budget_ms=1e-6, **params)
    sim = Simulation(trace, cluster, speed, seed=0)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    policy.decision_record.seconds = None
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    running = dict(sim.state().allocation)
    policy.decision_record.seconds = 1e-9
    events = sim.advance(1.0)
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    return running, sim.state(), policy


@pytest.mark.parametrize("mix", ["dl2", "gavel"])
def test_a_first_budgeted_smd_decision_keeps_the_jobs_that_run(mix):
    """With nothing kept, smd's answer cut to what its placement can place counted the running jobs as waiting and
    stopped all but one of them (198 of 199); their sizes are now the last answer's, kept where they run."""
    running, state, policy = decided_then_budgeted("smd", mix, 200)
    assert len(running) > 100
    assert all(state.allocation.get(j) == pl for j, pl in running.items())
    assert len(policy.decision_record.gaps) == 2 and policy.decision_record.uncertified == 0     # both certified


def test_a_cut_hetplace_placement_certifies_what_runs():
    """A full hetplace decision whose placement stops at the budget records the average JCT of the GPU jobs placed
    at their paces and the bound of each alone on its fastest type (Gavel's one-GPU jobs: the engine's rates), not
    the solver's objective of the 60 jobs it had sized (66,645 s, gap 0, with one job running)."""
    trace, cluster, speed = scene("gavel", 60)
    policy = make_policy("hetplace", budget_ms=1e-6)
    sim = Simulation(trace, cluster, speed, seed=0)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    state = sim.state()
    assert policy.last_answer == "full" and 1 <= len(state.allocation) < 60
    rec = policy.decision_record
    assert len(rec.objectives) == len(rec.gaps) == 1
    assert rec.objectives[0] == pytest.approx(held(state, speed)["held_jct"], rel=1e-9)
    first = {t: int(np.flatnonzero(np.array(cluster.gpu_type) == t)[0]) for t in set(cluster.gpu_type)}
    bound = np.mean([state.remaining[j] / max(speed.rate(state.jobs[j], Placement({s: 1}), cluster) for s in first.values())
                     for j in state.allocation])
    assert all(state.jobs[j].max_workers == 1 for j in state.allocation)
    assert rec.gaps[0] == pytest.approx(relative_gap(rec.objectives[0], bound, "min"), abs=1e-12)


@pytest.mark.parametrize("name", ["fluid", "smd"])
def test_a_kept_start_is_counted_as_uncertified(name):
    """The kept start (the floor past the budget: no view, no bound) records no gap and is counted, so the run's
    gap statistics say what they leave out."""
    trace, cluster, speed = scene("dl2", 40)
    policy = make_policy(name, budget_ms=1e6)
    sim = Simulation(trace, cluster, speed, seed=0)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    events = sim.advance(None)
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    rec = policy.decision_record
    gaps, uncertified = len(rec.gaps), rec.uncertified
    policy.floor.rate = 1e3                                    # a floor of 10^3 s a job: past the budget
    events = sim.advance(1.0)
    sim.apply(policy.schedule(sim.state(), events), policy.name)
    assert policy.last_answer == "kept start, no view"
    assert len(rec.gaps) == gaps and rec.uncertified == uncertified + 1


def test_the_record_counts_an_objective_without_a_bound_and_forgets_what_is_undone():
    rec = DecisionRecord(10)
    rec.record(5.0, 4.0)
    mark = rec.mark()
    rec.record(6.0, None)
    rec.record(None, None)                  # nothing of the model runs: nothing to certify
    assert rec.uncertified == 1 and rec.gaps == [0.2]
    rec.undo(mark)
    assert (rec.objectives, rec.gaps, rec.uncertified) == ([5.0], [0.2], 0)
    rec.record_uncertified()
    assert rec.uncertified == 1
    rec.reset()
    assert (rec.objectives, rec.gaps, rec.uncertified) == ([], [], 0)


def test_simulate_reports_the_decisions_left_out_of_the_gap(capsys, tmp_path):
    """``decisions_uncertified`` beside the gaps: fluid's budgeted decisions over Gavel's one-size jobs run
    srpt-greedy's answer with no LP behind it, so none is certified, and the count is that of the calls that
    answered jobs and recorded no gap, counted apart from the policy."""
    from dlsched.data import data_dir
    from dlsched.instance.cluster_spec import gavel_cluster
    from dlsched.instance.traces import load_trace
    from dlsched.sim.engine import simulate
    from dlsched.sim.speed import make_speed

    src = data_dir() / "gavel" / "msr_seed0_0e4a51.trace"
    small = tmp_path / "gavel25.trace"
    small.write_text("\n".join(src.read_text().splitlines()[:25]) + "\n")
    policy, seen = make_policy("fluid", budget_ms=1000), []
    schedule = policy.schedule

    def counted(state, events):
        before = len(policy.decision_record.gaps)
        out = schedule(state, events)
        seen.append(bool(out) and len(policy.decision_record.gaps) == before)
        return out
    policy.schedule = counted
    res = simulate(load_trace(str(small)), gavel_cluster("8:8:8"), policy, make_speed("throughput"))
    doc = res.summary()
    assert doc["status"] == "completed" and doc["decision_gap"] is None
    assert doc["decisions_uncertified"] == sum(seen) > 0
    code = main(["simulate", str(small), "--cluster", "8:8:8", "--policy", "fluid", "--decision-budget", "1000", "--json"])
    doc = json.loads(capsys.readouterr()[0])
    assert code == 0 and doc["decisions_uncertified"] == sum(seen)
    code = main(["simulate", "dl2:12:3", "--policy", "smd", "--speed", "table", "--decision-budget", "200", "--json"])
    doc = json.loads(capsys.readouterr()[0])
    assert code == 0 and doc["decisions_uncertified"] == 0 and doc["decision_gap"]["decisions"] >= 1
    code = main(["simulate", "dl2:8:3", "--cluster", "dl2:4", "--policy", "fifo", "--json"])
    assert json.loads(capsys.readouterr()[0])["decisions_uncertified"] is None

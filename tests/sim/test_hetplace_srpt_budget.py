"""hetplace's answer under ``order="srpt"`` where the budget cannot buy the §4 solver (``HetPlace._srpt_answer``,
docs/hetplace.md "Decisions within a budget"): srpt's admitted jobs re-decided without the solver, placed from the
empty cluster by the type rounds when the placement is predicted to fit what is left of the budget ("srpt"), else
the admitted running jobs kept and the admitted waiting ones placed on the room left ("srpt kept"). Measured times
are set by hand (no timing): every full decision's least work "lasts" 10 s under a 1-s budget."""

import pytest

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Job
from dlsched.policies import hetplace as ph
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from tests.sim.helpers import Audit, job, trace
from tests.sim.test_hetplace_types import PerWorkerSpeed


class OverBudget(ph.HetPlace):
    """hetplace under a 1-s budget whose full decisions' least work measures 10 s and whose placements of srpt's
    admitted jobs measure ``per_job`` seconds a job (``HetPlace._srpt_cost``), whatever they take."""

    per_job = 0.0

    def _timed_full(self, state):
        out = super()._timed_full(state)
        self._full_cost = (10.0, 0.0, len(state.active))
        return out

    def _srpt_answer(self, state):
        self._srpt_cost.clear()
        self._srpt_cost.append(self.per_job)
        out = super()._srpt_answer(state)
        self.answers.append(self.last_answer)
        self.measured.append(list(self._srpt_cost)[1:])       # what this answer's placement measured
        return out


def run(tr, cl, speed, policy):
    audit = Audit(policy)
    res = simulate(tr, cl, audit, speed)
    assert not audit.problems and res.status == "completed"
    return dict(zip(res.names, res.completion.tolist()))


def over_budget(per_job: float) -> OverBudget:
    pol = OverBudget(budget_ms=1000.0, order="srpt")
    pol.per_job, pol.answers, pol.measured = per_job, [], []
    return pol


# a run whose types change at a completion (b moves to the V100 once a ends: tests/sim/test_hetplace_types.py)
# and whose arrivals preempt (s, short, arrives at 0.5 and takes the V100 from the longer c)
TYPES = Cluster.from_groups([(1, {"gpu": 1, "cpu": 4}, "k80"), (1, {"gpu": 1, "cpu": 4}, "p100"),
                             (1, {"gpu": 1, "cpu": 4}, "v100")])
RATES = PerWorkerSpeed({"a": {"v100": 1.0, "p100": 0.5, "k80": 0.1}, "b": {"v100": 1.0, "p100": 0.8, "k80": 0.1},
                        "c": {"v100": 0.9, "p100": 1.0, "k80": 0.1}, "s": {"v100": 1.0, "p100": 0.5, "k80": 0.1},
                        "d": {"v100": 1.0, "p100": 0.9, "k80": 0.2}})
JOBS = trace(job("a", 0.0, 1.0), job("b", 0.0, 2.0), job("c", 0.0, 4.0), job("s", 0.5, 0.2), job("d", 0.7, 3.0))


def test_the_srpt_answer_decides_as_the_unbudgeted_policy_on_rigid_jobs():
    # every decision after the first is the srpt answer, placed from the empty cluster: on rigid jobs the solver
    # only sized them, so the run is the unbudgeted one, its exchanges between types too (a budget of 1 s holds
    # their search) (the kept answer ran b on the K80 to its end)
    want = run(JOBS, TYPES, RATES, make_policy("hetplace", order="srpt"))
    pol = over_budget(0.0)
    got = run(JOBS, TYPES, RATES, pol)
    assert got == pytest.approx(want)
    assert pol.answers and set(pol.answers) == {"srpt"} and pol.srpt_answers == len(pol.answers)
    assert all(g >= 0 for g in pol.decision_record.gaps) and len(pol.decision_record.gaps) == len(pol.answers) + 1


def test_a_placement_predicted_over_the_budget_keeps_the_running_jobs_and_preempts_for_a_shorter_one():
    # one server of 4 GPUs, 1 iteration/s a worker: L (4 workers, 10 iterations) runs; S (4 workers, 2 iterations)
    # arrives at 1 with L 1.5 s from its end and preempts it (the kept answer ran L on: S would end at 3); at 1.5
    # S ends and W arrives (2 workers, 15 s), longer than L's 1.5 s left: L runs again to 3, W after it
    cl = Cluster.from_groups([(1, {"gpu": 4, "cpu": 8}, "v100")])
    speed = PerWorkerSpeed({"L": {"v100": 1.0}, "S": {"v100": 1.0}, "W": {"v100": 1.0}})
    tr = trace(job("L", 0.0, 10.0, min_workers=4), job("S", 1.0, 2.0, min_workers=4), job("W", 1.5, 30.0, min_workers=2))
    pol = over_budget(1.0)                   # a job's placement "takes" the whole budget
    got = run(tr, cl, speed, pol)
    assert set(pol.answers) == {"srpt kept"}
    assert got == pytest.approx({"S": 1.5, "L": 3.0, "W": 18.0})
    assert got == pytest.approx(run(tr, cl, speed, make_policy("hetplace", order="srpt")))


def test_a_preempted_job_whose_room_no_new_job_takes_runs_on():
    # one server of 4 GPUs and 8 CPUs. C (1 GPU, 6 CPUs) and L (1 GPU, 1 CPU, the longest) run; S (3 GPUs, 4 CPUs)
    # arrives shortest: srpt admits S and C (4 GPUs), not L; but with L's room given back S finds 2 CPUs, not 4, so
    # no new job takes L's room and L runs on, where stopping it would idle its GPU for nothing
    cl = Cluster.from_groups([(1, {"gpu": 4, "cpu": 8}, "v100")])
    speed = PerWorkerSpeed({n: {"v100": 1.0} for n in ("C", "L", "S")})
    tr = trace(Job("C", 0.0, "toy", 5.0, {"gpu": 1, "cpu": 6}), Job("L", 0.0, "toy", 10.0, {"gpu": 1, "cpu": 1}),
               Job("S", 1.0, "toy", 1.0, {"gpu": 3, "cpu": 4}))
    pol = over_budget(1.0)
    got = run(tr, cl, speed, pol)
    assert pol.answers[0] == "srpt kept"
    assert got == pytest.approx({"C": 5.0, "L": 10.0, "S": 6.0})


def test_the_prediction_chooses_the_placement_and_every_placement_measures_it():
    pol = over_budget(0.0)
    run(JOBS, TYPES, RATES, pol)
    assert set(pol.answers) == {"srpt"}
    # a cost per job that no longer fits the budget: the running jobs are kept, and the kept answer's own placement
    # of the waiting jobs is measured, so the next prediction reads it (a rule that measured only the whole
    # placement would never measure again once it refused)
    pol = over_budget(1.0)
    run(JOBS, TYPES, RATES, pol)
    assert set(pol.answers) == {"srpt kept"}
    assert any(m and m[0] < 1.0 for m in pol.measured)


def test_a_whole_gpu_job_is_placed_on_its_type_as_consolidated_places_it():
    # HetPlace._on_type's path for jobs of whole GPUs (the type's free GPU column alone) against consolidated on a
    # copy of the cluster with the type's GPUs only, on seeded random free rooms, sizes and GPUs per worker
    import numpy as np
    from dlsched.sim.engine import Simulation
    from dlsched.sim.placement import consolidated
    from dlsched.sim.policy import PolicyContext
    cl = Cluster.from_groups([(5, {"gpu": 4, "cpu": 16}, "k80"), (3, {"gpu": 8, "cpu": 16}, "v100"),
                              (4, {"gpu": 2, "cpu": 16}, "p100")])
    tr = trace(*(Job(f"j{g}", 0.0, "toy", 5.0, {"gpu": g}, min_workers=1, max_workers=8) for g in (1, 2, 4)))
    speed = PerWorkerSpeed({f"j{g}": {"k80": 1.0, "v100": 2.0, "p100": 1.5} for g in (1, 2, 4)})
    pol = ph.HetPlace()
    pol.reset(PolicyContext(cluster=cl, speed=speed, seed=0))
    state = Simulation(tr, cl, speed, seed=0).state()
    rng = np.random.default_rng(3)
    seen = 0
    for _ in range(300):
        free = cl.capacity.astype(float).copy()
        free[:, 0] = rng.integers(0, cl.capacity[:, 0] + 1)
        j, g, size = int(rng.integers(3)), int(rng.integers(3)), int(rng.integers(1, 9))
        assert pol._whole_gpus(state)[j]
        want = consolidated(pol._only_type(free, g), state.demand_w[j], state.demand_p[j], size, 0)
        got = pol._on_type(state, free, j, size, g)
        assert got == want
        seen += want is not None and len(want.workers) > 1
    assert seen > 10                           # placements over several servers were compared too


@pytest.mark.parametrize("order", ["srpt", "arrival"])
def test_under_srpt_a_full_decision_the_budget_would_cut_is_not_taken(order):
    # least work within the budget, the whole of the last full decision over it: srpt takes its own answer (a cut
    # full decision leaves the jobs it did not reach waiting); arrival order, whose answer keeps the running jobs,
    # still decides in full
    from types import SimpleNamespace
    pol = ph.HetPlace(budget_ms=1000.0, order=order)
    run(JOBS, TYPES, RATES, pol)
    now = SimpleNamespace(active=[0, 1, 2])
    pol._full_cost = (0.5, 0.0, 3)
    pol._full_whole = (0.9, 3)
    assert not pol._over_budget(now)
    pol._full_whole = (1.5, 3)
    assert pol._over_budget(now) == (order == "srpt")
    pol._full_whole = (1.5, 6)                 # in proportion to the active jobs: half as many now
    assert not pol._over_budget(now)

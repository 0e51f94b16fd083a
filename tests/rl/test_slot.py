"""The slot encoding (MODELS.md §6): mask is exact, placements fit, elastic scaling keeps servers."""

import copy

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.rl.slot import Slot, Spec, action_kind, fastest_rate, window
from dlsched.sim.engine import Simulation
from dlsched.sim.placement import usage

from .helpers import small


def state_at(n_jobs=10, servers=3, until=6000.0, seed=3):
    traces, cluster, speed = small(n_jobs, (seed,), servers)
    sim = Simulation(traces[0], cluster, speed)
    while sim.time < until and not sim.done:
        sim.advance(until)
    return sim, Spec(J=6)


def new_slot(sim, spec, slots_run=None):
    st = sim.state()
    return Slot(spec, st, spec.type_index(st.jobs), np.zeros(len(st.jobs), np.int64) if slots_run is None else slots_run)


def test_observation_rows_follow_arrival_and_one_hot_type():
    sim, spec = state_at()
    slot = new_slot(sim, spec)
    x = slot.observation()
    assert x.shape == (spec.J, spec.n_features) and x.dtype == np.float32
    n = len(slot.jobs)
    assert 0 < n <= spec.J
    assert list(slot.jobs) == sorted(slot.jobs, key=lambda j: (sim.arrival[j], j))
    assert (x[:n, :spec.n_types].sum(axis=1) == 1).all() and not x[n:].any()
    for i, j in enumerate(slot.jobs):
        assert spec.job_types[int(np.argmax(x[i, :spec.n_types]))] == sim.jobs[j].job_type


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 18), min_size=1, max_size=60))
def test_every_valid_action_fits_and_every_invalid_one_would_not(actions):
    sim, spec = state_at()
    slot = new_slot(sim, spec)
    cap = sim.cluster.capacity
    for a in actions:
        m = slot.mask()
        kind, i = action_kind(a, spec.J)
        before = (slot.w.copy(), slot.p.copy())
        applied = slot.apply(a)
        assert applied == bool(m[a] and kind != "stop")
        if not applied:
            assert (slot.w == before[0]).all() and (slot.p == before[1]).all()
        assert (slot.free >= -1e-9).all()
        if kind in ("worker", "ps") and not m[a] and i < len(slot.jobs):
            d = slot.dw[i] if kind == "worker" else slot.dp[i]
            limit = slot.max_w[i] if kind == "worker" else slot.max_p[i]
            counts = slot.w[i] if kind == "worker" else slot.p[i]
            assert counts >= limit or not (slot.free >= d - 1e-9).all(axis=1).any()
    # what the slot hands to the engine never over-commits a server and is accepted
    placements = slot.placements({})
    used = np.zeros_like(cap)
    for j, pl in placements.items():
        srv, rows = usage(pl, sim.demand_w[j], sim.demand_p[j])
        np.add.at(used, srv, rows)
    assert (used <= cap + 1e-9).all()
    sim.apply(placements, "dl2")


def test_unchanged_jobs_keep_their_servers_and_changed_ones_move_around_them():
    sim, spec = state_at()
    first = new_slot(sim, spec)
    J = spec.J
    first.apply(2 * J + 0)
    first.apply(2 * J + 1)
    prev = first.placements({})
    assert set(prev) == {int(first.jobs[0]), int(first.jobs[1])}
    second = new_slot(sim, spec)
    second.apply(2 * J + 1)          # job of row 1 first: row 0's servers would differ if rebuilt
    second.apply(2 * J + 0)
    second.apply(2 * J + 1)          # row 1 grows
    now = second.placements(prev)
    j0, j1 = int(first.jobs[0]), int(first.jobs[1])
    assert now[j0] == prev[j0]
    assert (now[j1].n_workers, now[j1].n_ps) == (2, 2)


def test_a_job_with_workers_but_no_ps_is_not_run():
    sim, spec = state_at()
    slot = new_slot(sim, spec)
    slot.apply(0)                     # a worker for row 0, no PS
    assert list(slot.bad_rows()) == [0]
    assert slot.placements({}) == {}


def test_window_is_the_first_J_active_jobs():
    sim, _ = state_at(n_jobs=12, until=30000.0)
    st = sim.state()
    w = window(st, 3)
    assert len(w) == min(3, len(st.active))
    rest = np.setdiff1d(st.active, w)
    assert all(sim.arrival[j] >= sim.arrival[w].max() for j in rest)


def test_rows_by_remaining_time_reorder_the_same_window_shortest_first():
    sim, _ = state_at(n_jobs=12, until=30000.0)
    st = sim.state()
    rate = fastest_rate(st.jobs, sim.speed)
    # the fastest rate is the largest of the measured table's speeds within the job's limits
    j = int(st.active[0])
    job = st.jobs[j]
    assert rate[j] == pytest.approx(max(sim.speed.speed(job.job_type, p, w) for p in range(1, job.max_ps + 1)
                                        for w in range(job.min_workers, job.max_workers + 1)), rel=1e-12)
    for J in (3, 40):
        by_arrival, by_time = window(st, J), window(st, J, rate)
        assert sorted(by_arrival) == sorted(by_time)
        left = st.remaining[by_time] / rate[by_time]
        assert (np.diff(left) >= 0).all()
    spec = Spec(J=6, rows="remaining")
    slot = Slot(spec, st, spec.type_index(st.jobs), np.zeros(len(st.jobs)), rate)
    assert list(slot.jobs) == list(window(st, 6, rate))
    with pytest.raises(ValueError, match="fastest rate"):
        Slot(spec, st, spec.type_index(st.jobs), np.zeros(len(st.jobs)))
    with pytest.raises(InputError, match="rows"):
        Spec(rows="size")
    assert Spec.from_dict(spec.to_dict()) == spec


def test_a_job_type_the_network_does_not_know_is_input_error():
    sim, _ = state_at()
    spec = Spec(job_types=("resnet-50",))
    with pytest.raises(InputError, match="job types the DL2 network was trained on"):
        spec.type_index(sim.jobs, "t.json")


def _fill_task_by_task(slot, levels) -> None:
    """Slot.fill's rule spelled out with the task actions' own checks (_can) and placement (_place)."""
    full = set()
    for i in range(len(slot.jobs)):
        w, p = slot.spec.configs[int(levels[i])]
        p = p if slot.max_p[i] > 0 else 0
        both = min(w, p)
        for kind in ["both"] * both + ["worker"] * (w - both) + ["ps"] * (p - both):
            key = (kind, slot.dw[i].tobytes(), slot.dp[i].tobytes())
            if key in full:
                break
            can_w, can_p, can_b = slot._can([i])
            if not {"both": can_b, "worker": can_w, "ps": can_p}[kind][0]:
                full.add(key)
                break
            slot._place(kind, i)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_filling_by_levels_places_the_tasks_the_task_actions_would(seed):
    """On the slots of episodes played with random levels (DL2's mix, a small crowded cluster):
    the same tasks on the same servers as the task-by-task rule."""
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.rl.env import DL2Env
    from dlsched.sim.speed import TableSpeed
    spec = Spec(J=12, actions="jobs", rows="remaining")
    env = DL2Env([dl2_trace(20, seed=seed)], dl2_cluster(3), TableSpeed(), spec, reward="jct", max_slots=400)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(options={"trace": 0})
    done, checked = False, 0
    while not done:
        mask = info["action_mask"]
        levels = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        a, b = (copy.deepcopy(env.slot, memo={id(env.slot.state): env.slot.state, id(env.slot.spec): spec})
                for _ in range(2))
        a.fill(levels)
        _fill_task_by_task(b, levels)
        assert (a.w == b.w).all() and (a.p == b.p).all() and np.array_equal(a.free, b.free)
        assert a.on_w == b.on_w and a.on_p == b.on_p
        checked += int(a.w.sum() > 0)
        obs, _, term, trunc, info = env.step(levels)
        done = term or trunc
    assert checked >= 10

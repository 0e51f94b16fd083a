"""DL2's environment: a ``gymnasium.Env`` over the simulator (MODELS.md §6).

One ``step`` is one inference: an action of :mod:`dlsched.rl.slot` (add a worker, a PS, or both
to a window job, or stop). Actions repeat inside a slot until "stop" or no other action is valid;
then the slot's allocation (only its difference to the last slot, :meth:`Slot.placements`) is
applied to the simulator, which runs to the next slot boundary (every ``slot_seconds``; with
``Spec.decide_at = "events"`` only to the first arrival or completion before it, where the next
decision starts: a "slot" is then the time between two decisions); the step that closes a slot returns
the slot's reward

    r_t = Σ_i (epochs trained by job i in slot t) / E_i        (= Δ iterations_i / K_i)

and the other steps 0 (the paper's reward, ``reward="epochs"``). With ``reward="jct"`` the slot's
reward is instead minus the number of jobs in the system, time-averaged over the slot,

    r_t = −(1/Δ) Σ_j |[a_j, c_j) ∩ [t, t + Δ)|        (a_j arrival, c_j completion, Δ the slot)

so that Σ_t r_t = −Σ_j JCT_j / Δ over an episode that completes: the undiscounted return is the
average JCT up to a constant factor. Slots with no active job pass without asking for an action
(their reward, jobs waiting for the next boundary, is added to the next slot's). An episode
ends (``terminated``) when every job of the trace has finished, or is cut (``truncated``) after
``max_slots`` slots.

With ``Spec.actions = "jobs"`` one ``step`` is one whole slot: the action is a size level per window
row (``MultiDiscrete``, :meth:`Slot.fill`), the mask (J, C); a level a row may not take is taken as
0 (and flagged), an action of another shape as all zeros. The mask of valid actions is ``info["action_mask"]`` (int8, gymnasium's convention for
``Discrete.sample(mask=...)``); an invalid action is taken as "stop" and flagged in
``info["invalid_action"]``. ``info["slot_end"]`` is true on the step that closed a slot, which
the trainer uses to give every action of a slot that slot's discounted return.
"""

from __future__ import annotations

from typing import Callable, Sequence

import gymnasium as gym
import numpy as np

from dlsched.instance.cluster import Cluster
from dlsched.instance.workload import Trace
from dlsched.rl.slot import OBS_HIGH, Slot, Spec, fastest_rate
from dlsched.sim.policy import Decision, Placement
from dlsched.errors import InputError
from dlsched.sim.engine import Simulation

POLICY_NAME = "dl2"
#: "epochs": the paper's Σ_i ΔK_i / K_i; "jct": minus the jobs in the system (module docstring)
REWARDS = ("epochs", "jct")


class DL2Env(gym.Env):
    """See the module docstring. ``traces`` is a list (one drawn per episode with the env's seeded
    generator, or chosen by ``reset(options={"trace": k})``) or a function ``rng -> Trace``."""

    metadata = {"render_modes": []}

    def __init__(self, traces: Sequence[Trace] | Callable[[np.random.Generator], Trace], cluster: Cluster,
                 speed, spec: Spec = Spec(), *, restart_seconds: float = 0.0, max_slots: int = 2000,
                 seed: int = 0, reward: str = "epochs"):
        if reward not in REWARDS:
            raise InputError("<argument>", "reward", f"one of {REWARDS}", reward)
        self.reward = reward
        self.traces = traces
        self.cluster = cluster
        self.speed = speed
        self.dl2_spec = spec   # (gymnasium owns `spec`)
        self.restart_seconds = float(restart_seconds)
        self.max_slots = int(max_slots)
        self.sim_seed = int(seed)
        J, F = spec.J, spec.n_features
        self.observation_space = gym.spaces.Box(0.0, OBS_HIGH, shape=(J, F), dtype=np.float32)
        self.action_space = (gym.spaces.Discrete(spec.n_actions) if spec.actions == "tasks"
                             else gym.spaces.MultiDiscrete(np.full(J, spec.n_levels)))
        self.sim = None
        self.slot: Slot | None = None

    # -- episode ------------------------------------------------------------------------
    def _trace(self, options: dict | None) -> Trace:
        if callable(self.traces):
            return self.traces(self.np_random)
        if options and "trace" in options:
            return self.traces[int(options["trace"])]
        return self.traces[int(self.np_random.integers(len(self.traces)))]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.trace = self._trace(options)
        self.type_index = self.dl2_spec.type_index(self.trace.jobs, self.trace.source)
        self.sim = Simulation(self.trace, self.cluster, self.speed, seed=self.sim_seed,
                              restart_seconds=self.restart_seconds)
        self.slots_run = np.zeros(len(self.trace), dtype=float)
        self.rate = fastest_rate(self.trace.jobs, self.speed) if self.dl2_spec.rows == "remaining" else None
        self.previous: dict[int, Placement] = {}
        self.t = 0.0
        self.n_slots = 0
        self.events = self.sim.advance(0.0)
        self.pending = self._skip_idle()
        return self.slot.observation(), self._info(slot_end=False)

    def _open_slot(self) -> None:
        self.state = self.sim.state()
        self.slot = Slot(self.dl2_spec, self.state, self.type_index, self.slots_run, self.rate)

    def _skip_idle(self) -> float:
        """Open the next slot that has a job to schedule (idle slots pass with no decision); their reward."""
        self._open_slot()
        r = 0.0
        while not len(self.slot.jobs) and not self.sim.done:
            r += self._run_slot({})
            self._open_slot()
        return r

    def _run_slot(self, placements: dict[int, Placement]) -> float:
        """Apply ``placements``, run to the next slot boundary (``decide_at="events"``: or to the
        first arrival or completion before it), return r_t."""
        before = self.state.remaining.astype(float).copy()
        self.sim.apply(Decision(placements), POLICY_NAME)
        t0 = self.t
        self.t = self.dl2_spec.next_boundary(t0)
        # the engine stops at every arrival and completion; the allocation holds until the boundary
        self.events = []
        while not self.sim.done and self.sim.time < self.t:
            events = self.sim.advance(self.t)
            self.events += events
            if self.dl2_spec.decide_at == "events" and any(e.kind != "timer" for e in events):
                self.t = min(self.t, self.sim.time)
                break
        after = self.sim.state().remaining.astype(float)
        # the time run, in slots (1 per slot when deciding only at boundaries)
        self.slots_run[list(placements)] += (self.t - t0) / self.dl2_spec.slot_seconds
        self.previous = placements
        self.n_slots += 1
        if self.reward == "jct":
            end = np.where(np.isnan(self.sim.completion), self.t, np.minimum(self.sim.completion, self.t))
            inside = np.clip(end - np.maximum(self.sim.arrival, t0), 0.0, None)
            return -float(inside.sum()) / self.dl2_spec.slot_seconds
        K = np.array([j.iterations for j in self.trace.jobs], dtype=float)
        return float(np.sum(np.clip(before - after, 0.0, None) / K))

    def step(self, action):
        slot = self.slot
        if self.dl2_spec.actions == "jobs":
            levels = np.asarray(action, dtype=np.int64).reshape(-1)
            mask = slot.level_mask()
            if levels.shape != (len(mask),):
                levels = np.zeros(len(mask), np.int64)
                invalid = True
            else:
                inside = (levels >= 0) & (levels < mask.shape[1])
                ok = inside & (mask[np.arange(len(mask)), np.where(inside, levels, 0)] == 1)
                invalid = not bool(ok.all())
                levels = np.where(ok, levels, 0)
            slot.fill(levels)
        else:
            invalid = not bool(slot.mask()[int(action)])
            if slot.apply(int(action)) and slot.mask()[: self.dl2_spec.stop].any():
                return slot.observation(), 0.0, False, False, self._info(slot_end=False, invalid=invalid)
        reward = self._run_slot(slot.placements(self.previous)) + self.pending
        self.pending = 0.0
        terminated = bool(self.sim.done)
        truncated = not terminated and self.n_slots >= self.max_slots
        if not (terminated or truncated):
            reward += self._skip_idle()
            terminated = bool(self.sim.done)
        else:
            self._open_slot()
        return self.slot.observation(), reward, terminated, truncated, self._info(slot_end=True, invalid=invalid)

    def _info(self, slot_end: bool, invalid: bool = False) -> dict:
        mask = self.slot.level_mask() if self.dl2_spec.actions == "jobs" else self.slot.mask().copy()
        return {"action_mask": mask, "slot_end": slot_end, "invalid_action": invalid,
                "time": self.t, "bad_rows": self.slot.bad_rows()}

    def result(self):
        """The simulator's result of the episode (JCTs), once it has ended."""
        return self.sim.result()

"""Training DL2 (MODELS.md §6): supervised warm-up on a teacher policy, then actor-critic fine-tuning.

**Warm-up.** A registered simulator policy (DRF by default) is replayed on the training traces
inside :class:`~dlsched.rl.env.DL2Env`: at each slot it is asked for its allocation, and the
allocation is turned into DL2's action sequence by progressive filling (:func:`teacher_action`:
the window job furthest below its target by dominant share gets "both", or the worker or PS it
still lacks, ..., then "stop"; for DRF this is exactly DRF's own order; ``order="gain"``:
Optimus's marginal-gain order, :func:`gain_action`). The policy network learns these actions by
cross-entropy (Adam, lr 0.005 falling to ``warmup_lr_final`` along a cosine).

**Fine-tuning.** Episodes are played with the policy's own samples; each action of slot t gets
the slot's discounted return G_t = r_t + γ G_{t+1} (γ = 0.95; the paper's 0.9 is ``--gamma``),
with the reward of :mod:`dlsched.rl.env` (``"jct"``, minus the jobs in the system, by default;
the paper's ``"epochs"`` by ``--reward``). Samples and the log-probability of each action under
the policy that took it go to an experience-replay buffer (8,192); minibatches from it update the
critic by (G − V(s))² and the actor by PPO's clipped surrogate of ρ = π(a|s)/μ(a|s) times the
advantage A = G − V(s), standardised per minibatch (``clip = 0`` gives the paper's
−log π(a|s)·A), minus β·H(π(·|s)) (β = 0.01), with Adam at lr 1e-4. ``baseline="greedy"``
replaces V(s) by the greedy policy's return on the same trace (self-critical); ``baseline="branch"``
measures each sampled slot's advantage by forking the deterministic simulator and comparing with the
greedy continuation (:func:`branch_episode`). In a "bad state"
(:meth:`Slot.bad_rows`: workers but no PS, PSs but no workers, ratio > 10) the action is, with
probability ε, the one that repairs the first bad job (ε-exploration). Optional DAgger rounds
(``dagger_rounds``) follow the warm-up. Why these choices: docs/dl2.md ("Training").

Every ``eval_every`` episodes the greedy policy is simulated on the tuning traces; the model with
the lowest average JCT there is the one kept (``--out``), and the curve of tuning JCT against
training seconds is written beside it as PNG.
"""

from __future__ import annotations

import copy
import json
import math
import sys
import time
from collections import deque
from dataclasses import dataclass, field, asdict, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from dlsched.rl.env import DL2Env
from dlsched.rl.cmaes import KIND as CMA, CmaSearch
from dlsched.rl.es import Adam as EsAdam, at_scale, es_basis, es_features, es_gradient, rank_groups, theta, with_prior
from dlsched.rl.policy_iteration import Labels, api_update, fork_targets
from dlsched.rl.forks import ForkPool, fork, fork_update
from dlsched.errors import InputError
from dlsched.rl.policy import (MAX_HIDDEN, MAX_LAYERS, DL2Policy, Model, choose, load_checkpoint, save_checkpoint,
                               weights_digest)
from dlsched.rl.slot import ACTIONS, DECIDE_AT, MAX_WINDOW, ROWS, Slot, Spec, action_kind
from dlsched.policies.optimus import task_shares
from dlsched.sim.policy import Decision, PolicyContext
from dlsched.console import progress as bar
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from dlsched.sim.run import parse_params
from dlsched.sim.speed import TableSpeed


#: the largest training traces and clusters `dlsched train dl2` makes (a larger one is refused, not allocated)
MAX_TRAINING_JOBS, MAX_TRAINING_SERVERS = 100_000, 10_000


@dataclass
class TrainConfig:
    """Every setting of a training run (recorded in the checkpoint's provenance)."""

    teacher: str = "drf"
    #: the teacher's constructor options (``--teacher-param KEY=VALUE``)
    teacher_params: dict = field(default_factory=dict)
    #: when DL2 decides (:data:`dlsched.rl.slot.DECIDE_AT`): slot boundaries only (DL2's), or also arrivals and completions
    decide_at: str = "slots"
    #: order of the window's rows (:data:`dlsched.rl.slot.ROWS`): arrival (DL2's) or remaining time, shortest first
    rows: str = "arrival"
    #: what one inference decides (:data:`dlsched.rl.slot.ACTIONS`): one task (DL2's) or every window job's size level
    actions: str = "tasks"
    #: with job-level actions, whether a window job may be left out while a size fits its limits
    #: (:attr:`dlsched.rl.slot.Spec.leave_out`; False: work-conserving rows, docs/dl2.md round 16)
    leave_out: bool = True
    #: (:attr:`dlsched.rl.slot.Spec.prior_load`; True: the row prior also reads the window's load, docs/dl2.md round 17)
    prior_load: bool = False
    seed: int = 0
    J: int = 40
    hidden: tuple[int, ...] = (256, 256)
    train_seeds: tuple[int, ...] = tuple(range(1000, 1024))
    tune_seeds: tuple[int, ...] = (2000, 2001, 2002)
    n_jobs: int = 60
    n_servers: int = 16
    warmup_epochs: int = 40
    warmup_lr: float = 0.005
    #: the warm-up's learning rate falls to this along a cosine (None: constant)
    warmup_lr_final: float | None = 0.0002
    #: label smoothing of the warm-up: this much of the target is spread evenly over the valid actions,
    #: so the warmed-up policy keeps sampling other actions (a pure copy leaves nothing to explore)
    warmup_smoothing: float = 0.0
    #: order of the teacher's actions within a slot (:data:`ORDERS`)
    order: str = "share"
    #: an episode is cut after this many slots
    max_slots: int = 2000
    #: "jct" (minus the jobs in the system per slot) or "epochs" (the paper's), see dlsched.rl.env
    reward: str = "jct"
    rl_episodes: int = 300
    rl_lr: float = 1e-4
    gamma: float = 0.95
    beta: float = 0.01
    #: PPO-style clipping of the probability ratio to the acting policy's (0: the plain actor-critic step)
    clip: float = 0.2
    #: the actor's baseline: "critic" (A = G − V(s)), "greedy" (A = episode return − the greedy
    #: policy's return on the same trace, the self-critical baseline), "branch" (A of a sampled
    #: slot = the return of the greedy episode forked there minus the greedy one, :func:`branch_episode`)
    #: or "rollouts" (the best of ``candidates`` sampled slots per fork, if better than greedy, as a target);
    #: with ``actions="jobs"`` only "forks" (one row's level per fork, :mod:`dlsched.rl.forks`), "es"
    #: (evolution strategies on the output bias, :mod:`dlsched.rl.es`) or "api" (approximate policy
    #: iteration: the forks' best levels as labels of the whole network, :mod:`dlsched.rl.policy_iteration`)
    baseline: str = "critic"
    #: ``baseline="gae"``: λ of the generalised advantage estimate (per slot), the passes over each
    #: episode's decisions, and the weight of the KL penalty towards the warm-up policy (``baseline="api"``:
    #: κ, towards the policy before each update)
    gae_lambda: float = 0.9
    ppo_epochs: int = 4
    kl: float = 0.0
    #: ``baseline="api"``: the return (job-slots) a fork's best level must gain over the greedy one to
    #: become its label, and the most recent labels the updates fit (:mod:`dlsched.rl.policy_iteration`)
    api_margin: float = 1.0
    api_memory: int = 20000
    #: ``baseline="rollouts"``: sampled slots per fork, the best of which (if it beats the greedy one) is the target;
    #: ``baseline="forks"``: levels tried per fork
    candidates: int = 4
    #: ``baseline="forks"``: slots each fork's candidates are continued for (0: to the end of the episode)
    horizon: int = 0
    #: ``baseline="forks"``: slots the forked job keeps its candidate level (0: for the whole continuation,
    #: where with ``horizon`` 0 a job left out, level 0, is never run); by default a size for 15 slots,
    #: credited to the end of the episode (a 15-slot horizon misjudges it: docs/dl2.md "round 9")
    hold: int = 15
    #: ``baseline="branch"``: probability of forking at a slot, and the temperature of the forked slot's sampling
    p_branch: float = 0.1
    temperature: float = 1.0
    epsilon: float = 0.1
    replay: int = 8192
    batch: int = 256
    updates_per_episode: int = 32
    eval_every: int = 10
    time_budget_s: float | None = None
    #: stop fine-tuning after this many CPU seconds of the run (``time.process_time``)
    cpu_budget_s: float | None = None
    #: torch's intra-op threads (1: small MLPs on a shared machine gain nothing from more)
    threads: int = 1
    #: ``baseline="forks"``: episodes played at once in as many processes; ``baseline="es"``: the processes
    #: a generation's greedy episodes are split over (the same θ as one; their CPU time counts in the budget)
    workers: int = 1
    #: CPU minutes (of the budget's count) after which the best model so far is also written as
    #: ``OUT-<m>min.pt``: what a run with that budget would have written
    snapshots_cpu_min: tuple[float, ...] = ()
    #: ``baseline="es"``: antithetic pairs and common training traces per generation, and σ of the perturbation
    es_pairs: int = 4
    es_traces: int = 2
    es_sigma: float = 1.0
    #: ``baseline="es"``: search the bias with the rows tied in rank groups (:func:`dlsched.rl.es.rank_groups`)
    es_groups: bool = False
    #: ``baseline="es"``: search the logit scale and, per rank group, the bias of leaving a job out,
    #: slopes in log workers and log PSs and a curvature (:func:`dlsched.rl.es.es_basis`, 1 + 4G directions)
    es_basis: bool = False
    #: ``baseline="es"``: search the policy's row prior Θ, features of the row (job type, log remaining
    #: epochs, log rank) × the size terms of ``es_basis`` (:func:`dlsched.rl.es.es_features`), from Θ = 0
    es_features: bool = False
    #: ``es_basis``, ``es_features``: search the logit scale too (False: s stays the checkpoint's)
    es_scale: bool = True
    #: ``baseline="es"``: the logit scale s the search plays at, held (None: the checkpoint's s), the bias
    #: scaled with it at the start (z = s · (W h + b) + φᵀ Θ ψ, :func:`dlsched.rl.es.at_scale`): with Θ = 0
    #: the warm-up's decisions, and the search at s = 1 with σ and lr divided by s (docs/dl2.md, round 14)
    es_held_scale: float | None = None
    #: ``baseline="es"``: the step on the searched coordinates, "adam" (a fixed learning rate ``rl_lr`` on the
    #: estimated gradient, :class:`dlsched.rl.es.Adam`) or "cma" (CMA-ES, σ₀ = ``es_sigma`` adapted by its
    #: evolution path, λ = 2 ``es_pairs`` mirrored points; :mod:`dlsched.rl.cmaes`, docs/dl2.md round 15)
    es_optimizer: str = "adam"
    #: a checkpoint to start from: its warm-up is kept and only fine-tuning runs
    init: str | None = None
    #: DAgger rounds after the warm-up (0: none), each followed by this many epochs on all samples
    dagger_rounds: int = 0
    dagger_epochs: int = 5
    #: each DAgger round's learning rate, falling to ``warmup_lr_final`` along a cosine (round 1 used a
    #: constant 0.005, which undid much of the warm-up)
    dagger_lr: float = 0.001

    def __post_init__(self) -> None:
        """Every setting in its range before any work (a window of 0 looped for ever, a NaN gamma ran)."""
        def bad(name, expected):
            raise InputError("<argument>", name, expected, getattr(self, name))

        def whole(x) -> bool:
            return isinstance(x, int) and not isinstance(x, bool)

        def real(x) -> bool:
            return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

        for name, low in (("J", 1), ("n_jobs", 1), ("n_servers", 1), ("warmup_epochs", 0), ("rl_episodes", 0),
                          ("candidates", 1), ("updates_per_episode", 0), ("eval_every", 1), ("dagger_rounds", 0),
                          ("dagger_epochs", 0), ("max_slots", 1), ("replay", 1), ("batch", 1), ("ppo_epochs", 1), ("threads", 1),
                          ("horizon", 0), ("hold", 0), ("workers", 1), ("es_pairs", 1), ("es_traces", 1),
                          ("api_memory", 1)):
            if not whole(getattr(self, name)) or getattr(self, name) < low:
                bad(name, f"an integer >= {low}")
        for name, high in (("J", MAX_WINDOW), ("n_jobs", MAX_TRAINING_JOBS), ("n_servers", MAX_TRAINING_SERVERS)):
            if getattr(self, name) > high:
                bad(name, f"at most {high:,}")
        if not self.hidden or not all(whole(h) and 1 <= h <= MAX_HIDDEN for h in self.hidden) or len(self.hidden) > MAX_LAYERS:
            bad("hidden", f"1 to {MAX_LAYERS} layer sizes of 1 to {MAX_HIDDEN}")
        for name in ("gamma", "p_branch", "epsilon", "warmup_smoothing", "gae_lambda"):
            if not real(getattr(self, name)) or not 0 <= getattr(self, name) <= 1:
                bad(name, "a number in [0, 1]")
        for name in ("beta", "clip", "kl", "api_margin"):
            if not real(getattr(self, name)) or getattr(self, name) < 0:
                bad(name, "a finite number >= 0")
        for name in ("warmup_lr", "rl_lr", "dagger_lr", "temperature", "es_sigma"):
            if not real(getattr(self, name)) or getattr(self, name) <= 0:
                bad(name, "a finite number > 0")
        if self.warmup_lr_final is not None and (not real(self.warmup_lr_final) or self.warmup_lr_final <= 0):
            bad("warmup_lr_final", "a finite number > 0, or None")
        if not isinstance(self.leave_out, bool) or not (self.leave_out or self.actions == "jobs"):
            bad("leave_out", "True, or False with job-level actions (actions jobs)")
        if not isinstance(self.prior_load, bool) or (self.prior_load and self.actions != "jobs"):
            bad("prior_load", "False, or True with job-level actions (actions jobs)")
        if (self.actions == "jobs") != (self.baseline in ("forks", "es", "api")):
            bad("baseline", "forks, es or api, with job-level actions (actions jobs) and only with them")
        if self.es_groups + self.es_basis + self.es_features > 1:
            bad("es_features" if self.es_features else "es_basis",
                "one of es_groups, es_basis and es_features, not two (each is a basis of what ES searches)")
        if self.es_held_scale is not None:
            if not real(self.es_held_scale) or self.es_held_scale <= 0:
                bad("es_held_scale", "a finite number > 0, or None")
            if self.baseline != "es" or self.es_scale:
                bad("es_held_scale", "a scale only with baseline es and the scale held (es_scale False)")
        if self.es_optimizer not in ("adam", "cma"):
            bad("es_optimizer", "adam or cma")
        if self.es_optimizer != "adam" and self.baseline != "es":
            bad("es_optimizer", "adam unless the baseline is es (the optimizer of evolution strategies' search)")
        if self.workers > 1 and self.baseline not in ("forks", "es", "api"):
            bad("workers", "1, unless the baseline is forks, es or api")
        if not isinstance(self.snapshots_cpu_min, tuple) or not all(real(m) and m > 0 for m in self.snapshots_cpu_min):
            bad("snapshots_cpu_min", "a tuple of CPU minutes > 0")
        if self.baseline in ("forks", "api") and self.candidates < 2:
            bad("candidates", "at least 2 levels per fork (the advantage compares them)")
        for name in ("time_budget_s", "cpu_budget_s"):
            if getattr(self, name) is not None and (not real(getattr(self, name)) or getattr(self, name) <= 0):
                bad(name, "a positive number of seconds, or None")


# -- teacher -------------------------------------------------------------------------------

def teacher_action(slot: Slot, target: dict[int, tuple[int, int]], by: str = "share") -> int:
    """The next action towards ``target`` (w, p per trace index): progressive filling by dominant
    share (``by="share"``), or job by job in row order (``by="job"``: the first row still below its
    target gets its next task, so a job's tasks are issued together)."""
    J = slot.spec.J
    mask = slot.mask()
    share = slot.dominant_share() if by == "share" else np.zeros(J)
    best, best_key = slot.spec.stop, None
    for i, j in enumerate(slot.jobs):
        tw, tp = target.get(int(j), (0, 0))
        need_w, need_p = tw > slot.w[i], tp > slot.p[i]
        if need_w and need_p and mask[2 * J + i]:
            a = 2 * J + i
        elif need_w and mask[i]:
            a = i
        elif need_p and mask[J + i]:
            a = J + i
        else:
            continue
        key = (share[i], i)
        if best_key is None or key < best_key:
            best, best_key = a, key
    return best


#: orders in which a teacher's allocation becomes DL2's action sequence (:func:`teacher_action`, :func:`gain_action`)
ORDERS = ("share", "gain", "job")


def remaining_times(slot: Slot, speed) -> np.ndarray:
    """T_i[p, w] = remaining iterations / rate(p, w) of each window row (J, P + 1, W + 1), from the
    speed source the simulator runs on (``speeds(type, p, w)``); inf where the job cannot run."""
    st, J = slot.state, slot.spec.J
    P, W = int(slot.max_p.max(initial=0)), int(slot.max_w.max(initial=1))
    T = np.full((J, P + 1, W + 1), np.inf)
    pp, ww = np.meshgrid(np.arange(P + 1), np.arange(W + 1), indexing="ij")
    for i, j in enumerate(slot.jobs):
        job = st.jobs[j]
        rate = np.asarray(speed.speeds(job.job_type, np.maximum(pp, 1) if not job.uses_ps else pp, ww), dtype=float)
        ok = (rate > 0) & (pp <= job.max_ps) & (ww <= job.max_workers) & (ww >= job.min_workers)
        T[i][ok] = st.remaining[j] / rate[ok]
    return T


def gain_action(slot: Slot, target: dict[int, tuple[int, int]], T: np.ndarray) -> int:
    """The next action towards ``target`` in Optimus's marginal-gain order (MODELS.md §5): first
    "both" to every job that has nothing yet, in arrival order (Optimus's start); then the single
    task (worker or PS) the job still lacks whose gain (T_i(p, w) − T_i(p', w')) / (the task's
    dominant share) is largest; then stop. ``T`` is :func:`remaining_times` of the slot."""
    J, mask = slot.spec.J, slot.mask()
    need = [(i, *target.get(int(j), (0, 0))) for i, j in enumerate(slot.jobs)]
    for i, tw, tp in need:
        if slot.w[i] == 0 and slot.p[i] == 0 and tw > 0 and tp > 0 and mask[2 * J + i]:
            return 2 * J + i
    share_w, share_p = task_shares(slot.dw, slot.dp, slot.total)     # Optimus's own divisor
    best, best_gain = slot.spec.stop, -np.inf
    for i, tw, tp in need:
        w, p = int(slot.w[i]), int(slot.p[i])
        now = T[i, p, w] if p < T.shape[1] and w < T.shape[2] else np.inf
        for a, more, nxt, cost in ((i, tw > w, (p, w + 1), share_w[i]), (J + i, tp > p, (p + 1, w), share_p[i])):
            if not (more and mask[a]):
                continue
            after = T[i][nxt] if nxt[0] < T.shape[1] and nxt[1] < T.shape[2] else np.inf
            # from a state that cannot train (now = inf) every needed task is worth the most
            g = np.inf if not np.isfinite(now) else (now - after) / max(cost, 1e-12)
            if g > best_gain:
                best, best_gain = a, g
    return best


def teacher_levels(slot: Slot, target: dict[int, tuple[int, int]]) -> np.ndarray:
    """``Spec.actions = "jobs"``: the teacher's allocation as a size level per window row: the valid
    config (w', p') nearest to its (w, p) by |log((w' + 1)/(w + 1))| + |log((p' + 1)/(p + 1))| (level 0
    only for a job the teacher leaves out, and with ``Spec.leave_out`` False only where no other level is
    valid: such a job gets the smallest valid config, and the fill gives it room only if the rows before it left some)."""
    mask = slot.level_mask()
    cw, cp = np.log1p(np.array(slot.spec.configs, dtype=float)).T
    levels = np.zeros(slot.spec.J, dtype=np.int64)
    for i, j in enumerate(slot.jobs):
        w, p = target.get(int(j), (0, 0))
        if w or p or not mask[i, 0]:
            dist = np.abs(cw - np.log1p(w)) + np.abs(cp - np.log1p(p if slot.max_p[i] > 0 else 0))
            dist[mask[i] == 0] = np.inf
            dist[0] = np.inf
            levels[i] = int(np.argmin(dist)) if np.isfinite(dist).any() else 0
    return levels


def targets(decision) -> dict[int, tuple[int, int]]:
    placements = decision.placements if isinstance(decision, Decision) else decision
    return {int(j): (pl.n_workers, pl.n_ps) for j, pl in placements.items()}


def teacher_picker(env: DL2Env, make_teacher: Callable, order: str = "share"):
    """``act`` for :func:`rollout` that follows a fresh teacher policy through one episode; its
    allocation of each slot is issued in ``order`` (:data:`ORDERS`)."""
    teacher = make_teacher()
    teacher.reset(PolicyContext(env.cluster, env.speed, seed=env.sim_seed, restart_seconds=env.restart_seconds))
    target: dict[int, tuple[int, int]] = {}
    T = None

    def act(obs, info, slot_start: bool) -> int:
        nonlocal target, T
        if slot_start:
            target = targets(teacher.schedule(env.state, env.events))
            T = remaining_times(env.slot, env.speed) if order == "gain" else None
        if env.dl2_spec.actions == "jobs":
            return teacher_levels(env.slot, target)
        return gain_action(env.slot, target, T) if order == "gain" else teacher_action(env.slot, target, order)

    return act


def teacher_samples(env: DL2Env, make_teacher: Callable, traces: Sequence[int], gamma: float, order: str = "share"):
    """States, masks, teacher actions and returns of the teacher replayed on ``env``'s traces."""
    parts = [rollout(env, teacher_picker(env, make_teacher, order), gamma, trace=k) for k in traces]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


def dagger_samples(env: DL2Env, model: Model, make_teacher: Callable, traces: Sequence[int], gamma: float,
                   order: str = "share"):
    """States the greedy network reaches by itself on ``env``'s traces, each labelled with the
    teacher's action there (DAgger, Ross et al. 2011): the teacher is consulted at every slot, as in
    :func:`teacher_samples`, but the network acts. Returns states, masks and teacher actions."""
    parts = []
    for k in traces:
        teach = teacher_picker(env, make_teacher, order)
        labels: list[int] = []

        def act(obs, info, slot_start: bool, teach=teach, labels=labels) -> int:
            labels.append(teach(obs, info, slot_start))
            return choose(model, obs, info["action_mask"])

        X, M = rollout(env, act, gamma, trace=k)[:2]
        parts.append((X, M, np.array(labels, np.int64)))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def rows_of(logits: torch.Tensor, mask: torch.Tensor, a: torch.Tensor, spec: Spec):
    """``Spec.actions = "jobs"``: logits, masks and levels of the rows that hold a job, one row each
    ((n, C), (n, C), (n,)), so that a level is classified like a task action."""
    K = spec.n_levels
    logits, mask, a = logits.reshape(-1, K), mask.reshape(-1, K), a.reshape(-1)
    held = mask[:, 1:].bool().any(dim=1)
    return logits[held], mask[held], a[held]


def agreement(model: Model, X: np.ndarray, M: np.ndarray, A: np.ndarray) -> float:
    """Fraction of states where the network's most likely action is the teacher's (``Spec.actions =
    "jobs"``: of the window rows holding a job where its most likely level is the teacher's)."""
    with torch.inference_mode():
        logits = model.policy(torch.from_numpy(X), torch.from_numpy(M))
        if model.spec.actions == "jobs":
            logits, _, a = rows_of(logits, torch.from_numpy(M), torch.from_numpy(A), model.spec)
            A = a.numpy()
        pred = logits.argmax(dim=1).numpy()
    return float((pred == A).mean()) if len(A) else float("nan")


def agreement_by_kind(model: Model, X: np.ndarray, M: np.ndarray, A: np.ndarray) -> dict[str, dict]:
    """:func:`agreement` per kind of the teacher's action (worker, ps, both, stop): count and fraction."""

    J = model.spec.J
    if model.spec.actions == "jobs":
        return {"levels": {"n": int(M[:, :, 1:].any(axis=2).sum()), "agreement": agreement(model, X, M, A)}}
    kinds = np.array([action_kind(int(a), J)[0] for a in A]) if len(A) else np.array([], dtype=str)
    out = {}
    for k in ("worker", "ps", "both", "stop"):
        sel = kinds == k
        if sel.any():
            out[k] = {"n": int(sel.sum()), "agreement": agreement(model, X[sel], M[sel], A[sel])}
    return out


def minibatches(perm: torch.Tensor, batch: int):
    """Consecutive slices of ``batch`` indices of the permutation ``perm`` (the last may be shorter)."""
    return (perm[s:s + batch] for s in range(0, len(perm), batch))


def smoothed_cross_entropy(logits: torch.Tensor, mask: torch.Tensor, a: torch.Tensor, smoothing: float) -> torch.Tensor:
    """(1 − s) · (−log π(a|s)) + s · mean over the valid actions b of (−log π(b|s)): the target puts
    1 − s on the teacher's action and s evenly on the valid ones (torch's ``label_smoothing`` would
    also spread it over the masked actions, whose log-probabilities are −inf)."""
    logp = torch.log_softmax(logits, 1)
    ce = -logp.gather(1, a[:, None]).squeeze(1)
    if smoothing == 0:
        return ce.mean()
    valid = mask.bool()
    uniform = -torch.where(valid, logp, torch.zeros_like(logp)).sum(1) / valid.sum(1).clamp(min=1)
    return ((1 - smoothing) * ce + smoothing * uniform).mean()


def warmup(model: Model, X: np.ndarray, M: np.ndarray, A: np.ndarray, *, epochs: int, lr: float, batch: int,
           seed: int, lr_final: float | None = None, smoothing: float = 0.0) -> list[float]:
    """Cross-entropy of the masked softmax against the teacher's actions; the loss per epoch.

    With ``lr_final`` the learning rate falls from ``lr`` to it along a cosine over the epochs
    (a constant 0.005 leaves the loss oscillating once the easy actions are learnt). ``smoothing``
    > 0: :func:`smoothed_cross_entropy`, so the copy keeps probability on the other valid actions."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.policy.parameters(), lr=lr)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(epochs, 1), eta_min=lr_final)
             if lr_final is not None else None)
    x, m, a = torch.from_numpy(X), torch.from_numpy(M), torch.from_numpy(A)
    losses = []
    model.policy.train()
    for _ in range(epochs):
        perm = torch.randperm(len(a), generator=gen)
        total = 0.0
        for idx in minibatches(perm, batch):
            logits, mi, ai = model.policy(x[idx], m[idx]), m[idx], a[idx]
            if model.spec.actions == "jobs":
                logits, mi, ai = rows_of(logits, mi, ai, model.spec)
            loss = smoothed_cross_entropy(logits, mi, ai, smoothing)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / max(len(a), 1))
        if sched is not None:
            sched.step()
    model.policy.eval()
    return losses


# -- reinforcement learning ----------------------------------------------------------------

def repair_action(slot: Slot) -> int | None:
    """The action that repairs the first job in a bad state, if it is valid."""
    J, mask = slot.spec.J, slot.mask()
    for i in slot.bad_rows():
        a = J + i if slot.w[i] > slot.p[i] else i
        if mask[a]:
            return int(a)
    return None


def sampler(env: DL2Env, model: Model, rng: np.random.Generator, epsilon: float, temperature: float = 1.0):
    """``act`` for :func:`rollout`: sample π(·|s) (its logits divided by ``temperature``), or with
    probability ε repair a job in a bad state.

    Returns (action, log-probability of the action under the acting behaviour), the latter for
    the clipped ratio of :func:`actor_critic_update`.
    """

    def act(obs, info, slot_start: bool) -> tuple[int, float]:
        with torch.inference_mode():
            logits = model.policy(torch.from_numpy(obs)[None], torch.from_numpy(info["action_mask"])[None])
            p = torch.softmax(logits / temperature, 1)
        p = p[0].numpy().astype(float)
        p /= p.sum()
        if len(info["bad_rows"]) and rng.random() < epsilon:
            a = repair_action(env.slot)
            if a is not None:
                return a, float(np.log(epsilon + (1 - epsilon) * p[a]))
        a = int(rng.choice(len(p), p=p))
        return a, float(np.log(max(p[a], 1e-12)))

    return act


def rollout(env: DL2Env, act: Callable, gamma: float, trace: int | None = None, slots: bool = False):
    """One episode; (states, masks, actions, returns G of each action's slot, total reward, log-probabilities).

    G_t = r_t + γ G_{t+1} over slots; every action of slot t is credited with G_t. ``act`` returns an
    action, or (action, its log-probability under the acting policy); the latter are 0 otherwise.
    ``slots=True`` adds each action's slot index and the slots' rewards r_t (for :func:`gae`).
    """
    obs, info = env.reset(options=None if trace is None else {"trace": trace})
    X, M, A, LP, slot_of, rewards = [], [], [], [], [], [0.0]
    done, slot_start = False, True
    while not done:
        a = act(obs, info, slot_start)
        a, lp = a if isinstance(a, tuple) else (a, 0.0)
        X.append(obs)
        M.append(info["action_mask"])
        A.append(a)
        LP.append(lp)
        slot_of.append(len(rewards) - 1)
        obs, r, term, trunc, info = env.step(a)
        done = term or trunc
        slot_start = bool(info["slot_end"])
        if slot_start:
            rewards[-1] += r
            rewards.append(0.0)
    G = np.zeros(len(rewards))
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        G[t] = acc
    out = (np.array(X, np.float32), np.array(M, np.int8), np.array(A, np.int64),
           G[np.array(slot_of, dtype=np.int64)].astype(np.float32), float(sum(rewards)), np.array(LP, np.float32))
    return out + (np.array(slot_of, np.int64), np.array(rewards)) if slots else out


def gae(v: np.ndarray, slot_of: np.ndarray, rewards: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """Generalised advantage estimate (Schulman et al. 2016) of every decision of an episode that
    ended (V = 0 after the last decision), with the reward and the discount per slot.

    Decision i of slot t has the residual δ_i = r_i + g_i V(s_{i+1}) − V(s_i), where r_i = r_t and
    g_i = γ if i closes slot t, else r_i = 0 and g_i = 1 (the slot's decisions take no time), and
    A_i = δ_i + g_i λ_i A_{i+1} with λ_i = λ at a slot's end and 1 inside it: within a slot the sum
    telescopes to A_i = r_t + γ V(s_{t+1}) − V(s_i) + γλ A(next slot), so every decision is credited
    with its slot's outcome against its own state's value (the state after the decisions before it).
    """
    n = len(v)
    closes = np.ones(n, bool)
    closes[:-1] = slot_of[1:] != slot_of[:-1]
    r = np.where(closes, rewards[slot_of], 0.0)
    g = np.where(closes, gamma, 1.0)
    v_next = np.append(v[1:], 0.0)
    delta = r + g * v_next - v
    decay = g * np.where(closes, lam, 1.0)
    adv = np.empty(n)
    acc = 0.0
    for i in range(n - 1, -1, -1):
        acc = delta[i] + decay[i] * acc
        adv[i] = acc
    return adv


def finish_greedy(env: DL2Env, model: Model) -> float:
    """Play the greedy policy to the end of the episode; the sum of the rewards on the way."""
    total, done = 0.0, False
    info = env._info(slot_end=False)
    obs = env.slot.observation()
    while not done:
        obs, r, term, trunc, info = env.step(choose(model, obs, info["action_mask"]))
        total += r
        done = term or trunc
    return total


def sampled_slot(f: DL2Env, model: Model, rng: np.random.Generator, epsilon: float, temperature: float,
                 keep: str = "deviations"):
    """Play the rest of ``f``'s open slot with actions sampled from π (:func:`sampler`), then the
    rest of the episode greedily (:func:`finish_greedy`). Returns the states, masks and actions kept
    (``keep="deviations"``: those that differ from the greedy choice in the same state; ``"all"``:
    every action of the slot), whether any action deviated, and the return from the slot on."""
    act = sampler(f, model, rng, epsilon, temperature)   # its ε-repair reads this env's slot
    fo, fi = f.slot.observation(), f._info(slot_end=False)
    xs, ms, acts, r, end, deviated = [], [], [], 0.0, False, False
    while True:
        a, _ = act(fo, fi, False)
        differs = a != choose(model, fo, fi["action_mask"])
        deviated |= differs
        if differs or keep == "all":
            xs.append(fo)
            ms.append(fi["action_mask"])
            acts.append(a)
        fo, r, term, trunc, fi = f.step(a)
        if fi["slot_end"]:
            end = term or trunc
            break
    return xs, ms, acts, deviated, r + (0.0 if end or not deviated else finish_greedy(f, model))


def branch_episode(env: DL2Env, model: Model, rng: np.random.Generator, *, trace: int, p_branch: float,
                   epsilon: float, temperature: float, candidates: int = 0):
    """Slot advantages measured against the greedy policy on the same trace (``baseline="branch"``).

    The greedy policy plays trace ``trace``; at each slot, with probability ``p_branch``, the
    episode is forked (:func:`fork`), the fork plays that one slot with actions sampled from π
    (:func:`sampler`) and the rest greedily. The simulator is deterministic, so the difference of
    the two continuations' undiscounted returns is exactly what the sampled slot changed (with the
    ``jct`` reward: −Δ(Σ_j JCT_j)/Δ), free of the noise of future arrivals that burdens G − V(s).
    Returns, for the actions of the sampled slots that differ from the greedy policy's choice in the
    same state, their states, masks, actions and their slot's advantage (forks whose slot equals the
    greedy one are dropped: their advantage is 0), the greedy episode's return and the fork count.

    With ``candidates`` = K > 0 (``baseline="rollouts"``, policy improvement by rollouts) each fork
    plays K sampled slots instead of one; the best of them, if it beats the greedy continuation,
    becomes a target: every action of that slot with advantage 1 (so the update is the cross-entropy
    towards the improved slot); forks where no sample beats the greedy slot teach nothing.
    """
    obs, info = env.reset(options={"trace": trace})
    forks = []
    prefix, done, slot_start = 0.0, False, True
    while not done:
        if slot_start and rng.random() < p_branch:
            forks.append((fork(env), prefix))
        obs, r, term, trunc, info = env.step(choose(model, obs, info["action_mask"]))
        prefix += r
        done = term or trunc
        slot_start = bool(info["slot_end"])
    greedy = prefix
    X, M, A, ADV = [], [], [], []
    for f, before in forks:
        if candidates:
            tries = [sampled_slot(fork(f), model, rng, epsilon, temperature, keep="all") for _ in range(candidates)]
            xs, ms, acts, deviated, rest = max(tries, key=lambda t: t[4] if t[3] else -np.inf)
            if not deviated or before + rest <= greedy:
                continue
            adv = 1.0
        else:
            xs, ms, acts, deviated, rest = sampled_slot(f, model, rng, epsilon, temperature)
            if not acts:
                continue
            adv = before + rest - greedy
        X += xs
        M += ms
        A += acts
        ADV += [adv] * len(acts)
    return (np.array(X, np.float32).reshape(-1, *env.observation_space.shape), np.array(M, np.int8).reshape(len(A), env.action_space.n),
            np.array(A, np.int64), np.array(ADV, np.float32), greedy, len(forks))


def advantage_update(model: Model, batch, opt_pi, beta: float) -> float:
    """One policy-gradient step −A · log π(a|s) − β H(π(·|s)) on a :class:`Replay` minibatch whose
    advantages are given (its sixth entry: :func:`branch_episode`'s, scaled); the loss."""
    x, m, a, adv = batch[0], batch[1], batch[2], batch[5]
    model.policy.train()
    dist = model.policy.dist(x, m)
    loss = -(dist.log_prob(a) * adv).mean() - beta * dist.entropy().mean()
    opt_pi.zero_grad()
    loss.backward()
    opt_pi.step()
    model.policy.eval()
    return float(loss.detach())


@dataclass
class Replay:
    """Experience replay: the last ``size`` (state, mask, action, return, log-probability) samples."""

    size: int
    data: deque = field(init=False)

    def __post_init__(self) -> None:
        self.data = deque(maxlen=self.size)

    def add(self, X, M, A, G, LP=None, ADV=None) -> None:
        n = len(A)
        self.data.extend(zip(X, M, A, G, np.zeros(n, np.float32) if LP is None else LP,
                             np.full(n, np.nan, np.float32) if ADV is None else ADV))

    def sample(self, n: int, rng: np.random.Generator):
        """(states, masks, actions, returns, log-probabilities, given advantages or NaN) as tensors."""
        idx = rng.integers(len(self.data), size=min(n, len(self.data)))
        X, M, A, G, LP, ADV = zip(*(self.data[i] for i in idx))
        return (torch.from_numpy(np.stack(X)), torch.from_numpy(np.stack(M)), torch.from_numpy(np.array(A)),
                torch.from_numpy(np.array(G, np.float32)), torch.from_numpy(np.array(LP, np.float32)),
                torch.from_numpy(np.array(ADV, np.float32)))


def actor_critic_update(model: Model, batch, opt_pi, opt_v, beta: float, clip: float = 0.0) -> tuple[float, float]:
    """One step: critic on (G − V)², actor on −log π(a|s)·A − β H with A = G − V(s) standardised per batch.

    With ``clip`` > 0 the actor's term is PPO's clipped surrogate −min(ρA, clip(ρ, 1 ± clip)A),
    ρ = π(a|s) / μ(a|s) against the log-probabilities μ recorded when acting (batch's fifth entry):
    replayed samples come from older policies, and the clip keeps one update from undoing the
    warm-up (without it the warm-started policy drifted away within 100 episodes, docs/dl2.md).
    """
    x, m, a, g = batch[:4]
    model.policy.train()
    model.value.train()
    v = model.value(x)
    loss_v = nn.functional.mse_loss(v, g)
    opt_v.zero_grad()
    loss_v.backward()
    opt_v.step()
    given = batch[5] if len(batch) > 5 else None
    if given is not None and not torch.isnan(given).any():
        adv = given                      # the self-critical baseline's, already scaled
    else:
        adv = (g - v.detach())
        adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv
    dist = model.policy.dist(x, m)
    logp = dist.log_prob(a)
    if clip > 0:
        ratio = torch.exp(logp - batch[4])
        gain = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
    else:
        gain = logp * adv
    loss_pi = -gain.mean() - beta * dist.entropy().mean()
    opt_pi.zero_grad()
    loss_pi.backward()
    opt_pi.step()
    model.policy.eval()
    model.value.eval()
    return float(loss_pi.detach()), float(loss_v.detach())


def ppo_episode_update(model: Model, ref: nn.Module | None, X, M, A, LP, adv, target, opt_pi, opt_v, *,
                       beta: float, clip: float, kl: float, epochs: int, batch: int, rng: np.random.Generator):
    """``epochs`` passes of minibatches over one episode's decisions (on-policy; ``baseline="gae"``).

    Critic: (target − V(s))², target = A + V_old(s) (the λ-return). Actor: PPO's clipped surrogate
    −min(ρA, clip(ρ, 1 ± clip)A), ρ = π(a|s)/μ(a|s) against the acting log-probabilities ``LP``, with A
    standardised over the episode (not per minibatch: a minibatch's mean is noise), − β H(π(·|s)),
    + ``kl`` · KL(π_ref(·|s) ‖ π(·|s)) towards the warm-up policy ``ref``. Returns the mean losses."""
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    x, m, a = torch.from_numpy(X), torch.from_numpy(M), torch.from_numpy(A)
    lp, ad, tg = torch.from_numpy(LP), torch.from_numpy(adv.astype(np.float32)), torch.from_numpy(target.astype(np.float32))
    model.policy.train()
    model.value.train()
    losses = []
    for _ in range(epochs):
        perm = torch.from_numpy(rng.permutation(len(a)))
        for idx in minibatches(perm, batch):
            loss_v = nn.functional.mse_loss(model.value(x[idx]), tg[idx])
            opt_v.zero_grad()
            loss_v.backward()
            opt_v.step()
            logits = model.policy(x[idx], m[idx])
            logp_all = torch.log_softmax(logits, 1)
            valid = m[idx].bool()
            logp = logp_all.gather(1, a[idx][:, None]).squeeze(1)
            ratio = torch.exp(logp - lp[idx])
            gain = torch.minimum(ratio * ad[idx], torch.clamp(ratio, 1 - clip, 1 + clip) * ad[idx])
            p = logp_all.exp()
            entropy = -torch.where(valid, p * logp_all, torch.zeros_like(p)).sum(1)
            loss_pi = -gain.mean() - beta * entropy.mean()
            if kl > 0 and ref is not None:
                with torch.no_grad():
                    logq = torch.log_softmax(ref(x[idx], m[idx]), 1)
                div = torch.where(valid, logq.exp() * (logq - logp_all), torch.zeros_like(p)).sum(1)
                loss_pi = loss_pi + kl * div.mean()
            opt_pi.zero_grad()
            loss_pi.backward()
            opt_pi.step()
            losses.append((float(loss_pi.detach()), float(loss_v.detach())))
    model.policy.eval()
    model.value.eval()
    return tuple(np.mean(losses, axis=0)) if losses else (float("nan"), float("nan"))


def explained_variance(model: Model, X: np.ndarray, G: np.ndarray) -> float:
    """1 − Var(G − V(s)) / Var(G) of the critic on an episode's samples, before learning from them
    (1: the critic predicts the returns, 0: no better than their mean)."""
    if len(G) < 2 or float(np.var(G)) == 0.0:
        return float("nan")
    with torch.inference_mode():
        v = model.value(torch.from_numpy(X)).numpy()
    return float(1.0 - np.var(G - v) / np.var(G))


def value_warmup(model: Model, X, M, A, G, lr: float, epochs: int, batch: int, seed: int) -> None:
    """Fit the critic to the teacher's returns so fine-tuning starts from a sensible baseline."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.value.parameters(), lr=lr)
    x, g = torch.from_numpy(X), torch.from_numpy(G)
    for _ in range(epochs):
        perm = torch.randperm(len(g), generator=gen)
        for idx in minibatches(perm, batch):
            loss = nn.functional.mse_loss(model.value(x[idx]), g[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.value.eval()


# -- the training run ----------------------------------------------------------------------

def finite(x: float) -> float | None:
    """``x``, or None for inf/NaN (a run that stalled), so that JSON stays strict."""
    return x if np.isfinite(x) else None


def setting(cfg: TrainConfig, seeds: Sequence[int]):
    """DL2's job mix on ``cfg.n_servers`` nodes: the traces of ``seeds``, the cluster, the measured speeds."""
    return [dl2_trace(cfg.n_jobs, seed=s) for s in seeds], dl2_cluster(cfg.n_servers), TableSpeed()


def mean_jct(make_policy: Callable, traces, cluster, speed, seed: int = 0) -> float:
    """Average JCT over ``traces`` (every job of each); inf if a run does not complete."""

    out = []
    for tr in traces:
        res = simulate(tr, cluster, make_policy(), speed, seed=seed, stall_calls=200)
        if res.status != "completed":
            return float("inf")
        out.append(float(np.mean(res.jct)))
    return float(np.mean(out))


def rl_stream(seed: int, start: Model | None = None) -> np.random.Generator:
    """The fine-tuning's random stream: ``seed``'s, or for a run from a checkpoint (``start``) one
    keyed by ``seed`` and the weights it starts from, so that the links of a chain (each ``--init``
    the last link's best) run with one ``--seed`` do not replay each other's draws."""
    if start is None:
        return np.random.default_rng(seed)
    digest = weights_digest(start.policy.state_dict(), start.value.state_dict())
    return np.random.default_rng([seed, int(digest[:15], 16)])


def train(cfg: TrainConfig, out: str | Path, *, command: str = "", progress: bool = True) -> dict:
    """Warm-up then fine-tuning (module docstring); writes the best checkpoint to ``out`` with a
    provenance JSON and training curves (PNG) beside it; returns the provenance."""
    wall0, cpu_start = time.monotonic(), time.process_time()
    worker_cpu = 0.0        # CPU seconds of worker processes (``workers``)

    def cpu_seconds() -> float:
        return time.process_time() - cpu_start + worker_cpu
    # small MLPs on a shared machine: intra-op threads cost more than they give (--threads to ask)
    torch.set_num_threads(cfg.threads)
    out = Path(out)
    torch.manual_seed(cfg.seed)
    spec = Spec(J=cfg.J, decide_at=cfg.decide_at, rows=cfg.rows, actions=cfg.actions, leave_out=cfg.leave_out,
                prior_load=cfg.prior_load)

    def teacher():
        return make_policy(cfg.teacher, **cfg.teacher_params)

    train_traces, cluster, speed = setting(cfg, cfg.train_seeds)
    tune_traces = setting(cfg, cfg.tune_seeds)[0]
    env = DL2Env(train_traces, cluster, speed, spec, seed=cfg.seed, reward=cfg.reward, max_slots=cfg.max_slots)
    env.reset(seed=cfg.seed)
    tune_env = DL2Env(tune_traces, cluster, speed, spec, seed=cfg.seed, reward=cfg.reward, max_slots=cfg.max_slots)
    if cfg.init is None:
        model = Model.new(spec, cfg.hidden, seed=cfg.seed)
        # warm-up on the teacher
        X, M, A, G = teacher_samples(env, teacher, range(len(train_traces)), cfg.gamma,
                                     cfg.order)
        Xh, Mh, Ah, _ = teacher_samples(tune_env, teacher, range(len(tune_traces)), cfg.gamma,
                                        cfg.order)
        losses = warmup(model, X, M, A, epochs=cfg.warmup_epochs, lr=cfg.warmup_lr, batch=cfg.batch, seed=cfg.seed,
                        lr_final=cfg.warmup_lr_final, smoothing=cfg.warmup_smoothing)
        value_warmup(model, X, M, A, G, lr=cfg.warmup_lr, epochs=max(cfg.warmup_epochs // 3, 1), batch=cfg.batch,
                     seed=cfg.seed)
        warm = {"warmup_samples": int(len(A)), "warmup_loss": losses,
                "agreement": {"train": agreement(model, X, M, A), "held_out": agreement(model, Xh, Mh, Ah),
                              "held_out_by_action": agreement_by_kind(model, Xh, Mh, Ah)}}
    else:
        model = load_checkpoint(cfg.init)
        if model.spec.decide_at != spec.decide_at and replace(model.spec, decide_at=spec.decide_at, prior_load=spec.prior_load) == spec:
            model.decide_at(spec.decide_at)
        if spec.prior_load and not model.spec.prior_load and replace(model.spec, prior_load=True) == spec:
            model.read_load()
        if model.spec != spec or model.shape.hidden != tuple(cfg.hidden):
            raise InputError(cfg.init, "spec", f"a checkpoint with J={cfg.J}, hidden {list(cfg.hidden)}, decisions at "
                             f"{cfg.decide_at}, rows by {cfg.rows}, {cfg.actions} actions, leave_out {cfg.leave_out} and prior_load {cfg.prior_load} (as the flags ask)",
                             f"J={model.spec.J}, hidden {list(model.shape.hidden)}, decisions at {model.spec.decide_at}, "
                             f"rows by {model.spec.rows}, {model.spec.actions} actions, leave_out {model.spec.leave_out} and prior_load {model.spec.prior_load}")
        warm = {k: model.provenance.get(k) for k in ("warmup_samples", "warmup_loss", "agreement")}
        warm["init"] = {"path": Path(cfg.init).name, **{k: model.provenance.get(k) for k in
                                                   ("command", "training_seconds", "total_training_seconds",
                                                    "warmup_seconds", "curve", "best_episode", "best_tune_jct",
                                                    "init")}}
    rng = rl_stream(cfg.seed, model if cfg.init is not None else None)
    if cfg.baseline == "es" and cfg.es_features:
        with_prior(model)       # Θ = 0: the same decisions, and the coordinates searched
    if cfg.es_held_scale is not None:
        # the warm-up's decisions at s (its bias scaled too); s is saved with the checkpoint
        # (``logit_scale``), so `-P checkpoint=` plays the s it was trained at
        at_scale(model, cfg.es_held_scale)
    if cfg.dagger_rounds:
        # imitation on the network's own states: the teacher's trajectories plus, per round, the
        # states the current network reaches, all labelled by the teacher
        if cfg.init is not None:
            X, M, A, _ = teacher_samples(env, teacher, range(len(train_traces)), cfg.gamma,
                                         cfg.order)
            Xh, Mh, Ah, _ = teacher_samples(tune_env, teacher, range(len(tune_traces)),
                                            cfg.gamma, cfg.order)
        rounds = []
        for r in range(cfg.dagger_rounds):
            Xd, Md, Ad = dagger_samples(env, model, teacher, range(len(train_traces)), cfg.gamma,
                                        cfg.order)
            X, M, A = np.concatenate([X, Xd]), np.concatenate([M, Md]), np.concatenate([A, Ad])
            loss = warmup(model, X, M, A, epochs=cfg.dagger_epochs, lr=cfg.dagger_lr, batch=cfg.batch, seed=cfg.seed + r + 1,
                          lr_final=cfg.warmup_lr_final)
            rounds.append({"samples": int(len(A)), "loss": loss,
                           "held_out": agreement(model, Xh, Mh, Ah), "seconds": time.monotonic() - wall0})
        warm["dagger"] = rounds
    warmup_seconds = time.monotonic() - wall0
    # with --init this run only loads the checkpoint: the warm-up ran (once) in the first run of the
    # chain, so its time is that run's warm-up time, and the chain's training time is the
    # checkpoint's total (not its own run's, which is fine-tuning after the first link)
    init = warm.get("init") or {}
    warmup_seconds += float(init.get("warmup_seconds") or 0.0)
    earlier = float(init.get("total_training_seconds") or init.get("training_seconds") or 0.0)

    def tune_jct() -> float:
        return mean_jct(lambda: DL2Policy(model), tune_traces, cluster, speed, seed=cfg.seed)

    es_opt = EsAdam(cfg.rl_lr)
    basis = (rank_groups(spec.J, spec.n_levels) if cfg.es_groups else es_basis(spec, cfg.es_scale) if cfg.es_basis
             else es_features(spec, cfg.es_scale) if cfg.es_features else None)

    search, cma_curve, api_curve, labels = None, [], [], Labels(cfg.api_memory)
    if cfg.baseline == "es" and cfg.es_optimizer == "cma":
        search = cma_search(cfg, model, basis)
        model.es_optimizer = search.state()
    else:
        model.es_optimizer = None       # a state the checkpoint carried continues only a search of its kind
    teacher_jct = mean_jct(teacher, tune_traces, cluster, speed, seed=cfg.seed)
    cpu0, rl_wall0 = cpu_seconds(), time.monotonic()
    curve = [(time.monotonic() - wall0, 0, tune_jct(), cpu0)]
    best = (curve[0][2], 0)
    save_checkpoint(model, out)

    def provenance(finished: bool) -> dict:
        wall = time.monotonic() - wall0
        config = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(cfg).items()}
        config["init"] = None if cfg.init is None else Path(cfg.init).name     # where it lay is this machine's, not the model's
        return {"command": command, "config": config,
                "seed": cfg.seed, "torch": str(torch.__version__), "numpy": str(np.__version__), "finished": finished,
                "training_seconds": wall, "total_training_seconds": earlier + wall, "warmup_seconds": warmup_seconds,
                **warm,
                "teacher_tune_jct": finite(teacher_jct), "best_episode": best[1], "best_tune_jct": finite(best[0]),
                "cpu_seconds": cpu_seconds(),
                "curve": [{"seconds": s, "cpu_seconds": c, "episode": e, "tune_jct": finite(j)} for s, e, j, c in curve],
                "episodes_run": len(rewards),
                **({"cma": cma_curve} if search is not None else {}),
                **({"api": api_curve} if cfg.baseline == "api" else {}),
                "critic_explained_variance": [round(r[2], 4) if np.isfinite(r[2]) else None for r in rewards]}

    def write(prov: dict) -> None:
        out.with_suffix(".json").write_text(json.dumps(prov, indent=1) + "\n")
        plot_curves(prov, rewards, out.with_suffix(".png"))

    # actor-critic fine-tuning
    replay = Replay(cfg.replay)
    adv_scale = None
    opt_pi = torch.optim.Adam(model.policy.parameters(), lr=cfg.rl_lr)
    opt_v = torch.optim.Adam(model.value.parameters(), lr=cfg.rl_lr)
    rewards: list[tuple[float, float, float]] = []
    running = None

    ref = copy.deepcopy(model.policy).eval() if cfg.kl > 0 else None   # the warm-up policy, for the KL penalty
    snapshots = sorted(set(cfg.snapshots_cpu_min))

    def snapshot(m: float) -> None:
        """The best model so far as ``OUT-<m>min.pt`` (provenance JSON beside it), once the CPU passed m minutes."""
        snapshots.remove(m)
        path = out.with_name(f"{out.stem}-{m:g}min{out.suffix}")
        shot = load_checkpoint(out)
        shot.provenance = {**provenance(finished=False), "snapshot_cpu_min": m}
        save_checkpoint(shot, path)
        path.with_suffix(".json").write_text(json.dumps(shot.provenance, indent=1) + "\n")

    def ends_in() -> float | None:
        """Wall seconds before a time budget ends fine-tuning (a CPU budget's at this run's CPU per wall second
        so far), for the progress line's ETA; None without a budget."""
        left = [] if cfg.time_budget_s is None else [cfg.time_budget_s - (time.monotonic() - wall0)]
        spent = cpu_seconds() - cpu0
        if cfg.cpu_budget_s is not None and spent > 0:
            left.append((cfg.cpu_budget_s - cpu_seconds()) * (time.monotonic() - rl_wall0) / spent)
        return min(left, default=None)

    def stop_after(ep: int) -> bool:
        """True if a time budget will end the run before the next episode (so its last model is evaluated)."""
        return ((cfg.time_budget_s is not None and time.monotonic() - wall0 > cfg.time_budget_s)
                or (cfg.cpu_budget_s is not None and cpu_seconds() > cfg.cpu_budget_s))
    # ES (--baseline es) is no actor-critic: the line names what runs
    stage = {"es": "dl2 evolution strategies", "api": "dl2 policy iteration"}.get(cfg.baseline, "dl2 actor-critic")
    with bar(stage, cfg.rl_episodes, enabled=progress) as tick, ForkPool(cfg.workers, env, model) as pool:
        for ep in range(1, cfg.rl_episodes + 1):
            if stop_after(ep - 1):
                break
            tick(f"running reward {running:.3f}  best tune JCT {best[0]:.0f}s" if running is not None else "", ends_in())
            ADVe = None
            if cfg.baseline == "gae":
                Xe, Me, Ae, Ge, R, LPe, slot_of, slot_r = rollout(
                    env, sampler(env, model, rng, cfg.epsilon, cfg.temperature), cfg.gamma, slots=True)
                with torch.inference_mode():
                    v = model.value(torch.from_numpy(Xe)).numpy().astype(float)
                adv = gae(v, slot_of, slot_r, cfg.gamma, cfg.gae_lambda)
                running = Ge[0] if running is None else 0.9 * running + 0.1 * Ge[0]
                rewards.append((time.monotonic() - wall0, float(Ge[0]), explained_variance(model, Xe, Ge)))
                ppo_episode_update(model, ref, Xe, Me, Ae, LPe, adv, adv + v, opt_pi, opt_v, beta=cfg.beta,
                                   clip=cfg.clip if cfg.clip > 0 else 0.2, kl=cfg.kl, epochs=cfg.ppo_epochs,
                                   batch=cfg.batch, rng=rng)
            elif cfg.baseline in ("forks", "api"):
                done, cpu = pool.episodes(model, rng, rng.integers(len(train_traces), size=cfg.workers),
                                          p_fork=cfg.p_branch, candidates=cfg.candidates,
                                          temperature=cfg.temperature, horizon=cfg.horizon, hold=cfg.hold)
                worker_cpu += cpu
                for *_, R in done:
                    running = R if running is None else 0.9 * running + 0.1 * R
                    rewards.append((time.monotonic() - wall0, R, float("nan")))
                if cfg.baseline == "forks":
                    Xe, Me, Ie, Ke, LPe, ADVe = (np.concatenate([d[i] for d in done]) for i in range(6))
                    if len(Ke):
                        # one scale for all episodes: a running mean square of the advantages
                        ms2 = float(np.mean(ADVe ** 2))
                        adv_scale = ms2 if adv_scale is None else 0.9 * adv_scale + 0.1 * ms2
                        fork_update(model, opt_pi, Xe, Me, Ie, Ke, LPe, ADVe / np.sqrt(max(adv_scale, 1e-12)),
                                    clip=cfg.clip if cfg.clip > 0 else 0.2, epochs=cfg.ppo_epochs, batch=cfg.batch,
                                    rng=rng)
                else:
                    forked = improved = 0
                    for Xe, Me, Ie, Ke, _, ADVe, Fe, _ in done:
                        first, target, gain = fork_targets(Ke, ADVe, Fe, cfg.api_margin)
                        labels.add(Xe[first], Me[first], Ie[first], target)
                        forked, improved = forked + len(first), improved + int((gain > 0).sum())
                    stats = api_update(model, opt_pi, labels, kl=cfg.kl, steps=cfg.updates_per_episode,
                                       batch=cfg.batch, rng=rng)
                    api_curve.append({"iteration": ep, "forks": forked, "improved": improved, "labels": len(labels),
                                      "cpu_seconds": cpu_seconds(), **stats})
            elif search is not None:
                d, R, cpu = search.generation(env, model, rng, traces=cfg.es_traces, pool=pool)
                worker_cpu += cpu
                model.es_optimizer = search.state()
                cma_curve.append({"generation": ep, "iteration": int(search.es.countiter), "sigma": search.sigma, "mean_rms": float(np.sqrt(np.mean(search.mean ** 2)))})
                running = R if running is None else 0.9 * running + 0.1 * R
                rewards.append((time.monotonic() - wall0, R, float("nan")))
            elif cfg.baseline == "es":
                g, d, R, cpu = es_gradient(env, model, rng, pairs=cfg.es_pairs, traces=cfg.es_traces,
                                           sigma=cfg.es_sigma, basis=basis, pool=pool)
                worker_cpu += cpu
                es_opt.step(model, g, basis)
                running = R if running is None else 0.9 * running + 0.1 * R
                rewards.append((time.monotonic() - wall0, R, float("nan")))
            elif cfg.baseline in ("branch", "rollouts"):
                k = int(rng.integers(len(train_traces)))
                Xe, Me, Ae, ADVe, R, _ = branch_episode(env, model, rng, trace=k, p_branch=cfg.p_branch,
                                                        epsilon=cfg.epsilon, temperature=cfg.temperature,
                                                        candidates=cfg.candidates if cfg.baseline == "rollouts" else 0)
                running = R if running is None else 0.9 * running + 0.1 * R
                rewards.append((time.monotonic() - wall0, R, float("nan")))
                if len(Ae):
                    # one scale for all: a running RMS of the forks' advantages (a minibatch mixes forks)
                    ms2 = float(np.mean(np.unique(ADVe) ** 2))
                    adv_scale = ms2 if adv_scale is None else 0.9 * adv_scale + 0.1 * ms2
                    replay.add(Xe, Me, Ae, np.zeros(len(Ae), np.float32), None, ADVe / np.sqrt(max(adv_scale, 1e-12)))
                if len(replay.data):
                    for _ in range(cfg.updates_per_episode):
                        advantage_update(model, replay.sample(cfg.batch, rng), opt_pi, cfg.beta)
            elif cfg.baseline == "greedy":
                # the self-critical baseline: the greedy policy's undiscounted return on the same trace
                k = int(rng.integers(len(train_traces)))
                greedy = rollout(env, lambda obs, info, _: choose(model, obs, info["action_mask"]), cfg.gamma, trace=k)[4]
                Xe, Me, Ae, Ge, R, LPe = rollout(env, sampler(env, model, rng, cfg.epsilon), cfg.gamma, trace=k)
                # scaled by a running RMS: every action of an episode shares one advantage, so a
                # minibatch cannot standardise it
                adv_scale = abs(R - greedy) if adv_scale is None else float(np.sqrt(0.9 * adv_scale ** 2 + 0.1 * (R - greedy) ** 2))
                ADVe = np.full(len(Ae), (R - greedy) / max(adv_scale, 1e-8), np.float32)
            else:
                Xe, Me, Ae, Ge, R, LPe = rollout(env, sampler(env, model, rng, cfg.epsilon), cfg.gamma)
            if cfg.baseline in ("critic", "greedy"):
                # the discounted return of the first slot: what a faster schedule raises
                running = Ge[0] if running is None else 0.9 * running + 0.1 * Ge[0]
                rewards.append((time.monotonic() - wall0, float(Ge[0]), explained_variance(model, Xe, Ge)))
                replay.add(Xe, Me, Ae, Ge, LPe, ADVe)
                for _ in range(cfg.updates_per_episode):
                    actor_critic_update(model, replay.sample(cfg.batch, rng), opt_pi, opt_v, cfg.beta, cfg.clip)
            marks = [m for m in snapshots if cpu_seconds() > 60 * m]
            if ep % cfg.eval_every == 0 or ep == cfg.rl_episodes or stop_after(ep) or marks:
                jct = tune_jct()
                curve.append((time.monotonic() - wall0, ep, jct, cpu_seconds()))
                if not progress:    # a log line per evaluation for runs in the background
                    print(f"episode {ep} at {curve[-1][0]:.0f}s: tuning JCT {jct:.0f}s (best {min(best[0], jct):.0f}s)"
                          + (f" cpu {curve[-1][3]:.0f}s sigma {search.sigma:.3g} |m| {cma_curve[-1]['mean_rms']:.3g}"
                             if search is not None and cma_curve else ""), file=sys.stderr, flush=True)
                if jct < best[0]:
                    best = (jct, ep)
                    model.provenance = provenance(finished=False)
                    save_checkpoint(model, out)
                # the provenance and curves so far: a run watched (or cut) before it ends has them
                write(provenance(finished=False))
            for m in marks:
                snapshot(m)
    final = load_checkpoint(out)
    final.provenance = prov = provenance(finished=True)
    save_checkpoint(final, out)
    write(prov)
    return prov


def cma_search(cfg: TrainConfig, model: Model, basis: np.ndarray | None) -> CmaSearch:
    """``--es-optimizer cma``'s search: the one the ``--init`` checkpoint carries, continued, or a new one
    around the model's θ with σ₀ = ``es_sigma``."""
    state = model.es_optimizer
    if state is None or state.get("kind") != CMA:
        return CmaSearch(theta(model).numpy(), basis, cfg.es_sigma, cfg.es_pairs)
    try:
        search = CmaSearch.from_state(state, basis, cfg.es_pairs)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise InputError(str(cfg.init), "es_optimizer", "the state of a CMA search over the coordinates these flags "
                         "search (continue with the flags of the run that wrote it)", str(exc)) from None
    here = theta(model).numpy().astype(float)
    if len(search.origin) != len(here) or not np.allclose(search.theta(search.mean), here, rtol=1e-5, atol=1e-5):
        raise InputError(str(cfg.init), "es_optimizer", "a search whose mean is the checkpoint's policy (continue "
                         "with the flags of the run that wrote it, the same --es-scale)", "another policy")
    return search


def chain_curve(prov: dict) -> list[tuple[float, float, int]]:
    """(CPU hours of fine-tuning, tuning JCT, leg) along a chain of runs, each continuing (``--init``)
    from the model an earlier run handed on: the first leg's points from its start, each earlier leg
    up to its best evaluation (the model the next leg loaded; a leg's later evaluations did not
    lead to the model), each leg's CPU counted from the end of the one before."""
    legs = [prov]
    while isinstance(legs[0].get("init"), dict) and legs[0]["init"].get("curve"):
        legs.insert(0, legs[0]["init"])
    out: list[tuple[float, float, int]] = []
    offset = 0.0
    for i, leg in enumerate(legs):
        c = leg["curve"]
        if i < len(legs) - 1 and leg.get("best_episode") is not None:
            c = c[:next((n + 1 for n, p in enumerate(c) if p["episode"] == leg["best_episode"]), len(c))]
        cpu0 = c[0].get("cpu_seconds") or 0.0
        pts = [(offset + ((p.get("cpu_seconds") or 0.0) - cpu0) / 3600, p["tune_jct"], i) for p in c
               if p["tune_jct"] is not None]
        out += pts[1:] if i else pts    # a later leg's first point is the model the leg before ended on
        offset = out[-1][0] if out else offset
    return out


def plot_curves(prov: dict, rewards, path: Path) -> None:
    """Tuning-trace JCT against the CPU hours of fine-tuning (along the chain of ``--init`` runs,
    :func:`chain_curve`), with the warm-up's (the first point) and the teacher's as lines, and, given
    ``rewards``, this run's episode returns (with the critic's explained variance where a critic was trained)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if rewards else 1, figsize=(10, 3.6) if rewards else (5.5, 3.6), squeeze=False)
    a1 = axes[0, 0]
    pts = chain_curve(prov)
    for leg in sorted({p[2] for p in pts}):
        seg = [p for p in pts if p[2] == leg]
        a1.plot([p[0] for p in seg], [p[1] / 3600 for p in seg], marker="o", ms=3, color="tab:blue",
                alpha=1.0 if leg == pts[-1][2] else 0.6, label="DL2 (greedy)" if leg == 0 else None)
        if leg:
            a1.axvline(seg[0][0], color="lightgray", lw=0.8)
    if pts:
        a1.axhline(pts[0][1] / 3600, color="tab:green", ls=":", label="warm-up")
    if prov["teacher_tune_jct"] is not None:
        a1.axhline(prov["teacher_tune_jct"] / 3600, color="gray", ls="--", label=f"teacher ({prov['config']['teacher']})")
    a1.set_xlabel("CPU hours of fine-tuning" + (" (runs chained by --init)" if pts and pts[-1][2] else ""))
    a1.set_ylabel("average JCT on tuning traces (h)")
    a1.legend()
    if rewards:
        a2 = axes[0, 1]
        a2.plot([r[0] / 60 for r in rewards], [r[1] for r in rewards], lw=0.8)
        a2.set_xlabel("training wall time (min)")
        a2.set_ylabel("episode return G_0")
    if any(np.isfinite(r[2]) for r in rewards):
        a3 = a2.twinx()
        a3.plot([r[0] / 60 for r in rewards], [r[2] for r in rewards], lw=0.8, color="tab:orange")
        a3.set_ylabel("critic's explained variance", color="tab:orange")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _seeds(text: str) -> tuple[int, ...]:
    """``"1000-1011"`` or ``"1,2,5"`` (or a mix) as a tuple of seeds."""

    out: list[int] = []
    try:
        for part in text.split(","):
            lo, sep, hi = part.strip().partition("-")
            out += list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
    except ValueError:
        raise InputError("<argument>", "--traces", "seeds like 1000-1011 or 1,2,5", text) from None
    if not out:
        raise InputError("<argument>", "--traces", "at least one seed", text)
    return tuple(out)


def portable_command(argv: Sequence[str]) -> str:
    """The command as the provenance records it: the checkpoints ``--out`` and ``--init`` name by their file name only,
    so that a shipped model's record holds no path of the machine it was trained on (``--out /tmp/x/W.pt`` → ``--out
    W.pt``)."""
    words, named = [], False
    for word in argv:
        flag, eq, value = word.partition("=")
        if named:
            word = Path(word).name
        elif eq and flag in ("--out", "--init"):
            word = f"{flag}={Path(value).name}"
        named = word in ("--out", "--init")
        words.append(word)
    return " ".join(words)


def _minutes(text: str) -> tuple[float, ...]:
    """``"30,60"`` as (30.0, 60.0); "" as ()."""
    try:
        return tuple(float(m) for m in text.split(",")) if text.strip() else ()
    except ValueError:
        raise InputError("<argument>", "--snapshots", "CPU minutes like 30,60", text) from None


def parser():
    import argparse

    d = TrainConfig()
    p = argparse.ArgumentParser(prog="dlsched train dl2",
                                description="Train DL2: warm-up on a teacher policy, then actor-critic (docs/dl2.md).")
    p.add_argument("--teacher", default=d.teacher, help="a registered policy to warm up on (default drf)")
    p.add_argument("--teacher-param", action="append", metavar="KEY=VALUE",
                   help="an option of the teacher policy (JSON value; repeatable), as `simulate -P`")
    p.add_argument("--decide-at", choices=DECIDE_AT, default=d.decide_at,
                   help="decide at slot boundaries only (DL2's, default) or also at every arrival and completion")
    p.add_argument("--rows", choices=ROWS, default=d.rows,
                   help="order of the window's rows: arrival (DL2's, default) or remaining time at the fastest size")
    p.add_argument("--traces", default=f"{d.train_seeds[0]}-{d.train_seeds[-1]}", metavar="SEEDS",
                   help="seeds of the training traces of DL2's job mix, e.g. 1000-1011")
    p.add_argument("--tune", default=",".join(map(str, d.tune_seeds)), metavar="SEEDS",
                   help="seeds of the traces that pick the best checkpoint")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--jobs", type=int, default=d.n_jobs, help="jobs per trace")
    p.add_argument("--servers", type=int, default=d.n_servers, help="nodes of DL2's cluster")
    p.add_argument("--window", type=int, default=d.J, help="J, the jobs the network sees")
    p.add_argument("--hidden", default=",".join(map(str, d.hidden)), help="hidden layer sizes")
    p.add_argument("--warmup-epochs", type=int, default=d.warmup_epochs)
    p.add_argument("--warmup-lr-final", type=float, default=d.warmup_lr_final,
                   help="the warm-up's learning rate falls from 0.005 to this along a cosine")
    p.add_argument("--order", choices=ORDERS, default=d.order,
                   help="order of the teacher's actions in a slot: DRF's progressive filling (share) or Optimus's gains (gain)")
    p.add_argument("--episodes", type=int, default=d.rl_episodes, help="actor-critic episodes")
    p.add_argument("--reward", choices=["jct", "epochs"], default=d.reward,
                   help="per-slot reward: minus the jobs in the system (default) or the paper's Σ epochs/E_i")
    p.add_argument("--gamma", type=float, default=d.gamma, help="discount per slot")
    p.add_argument("--beta", type=float, default=d.beta, help="entropy weight")
    p.add_argument("--clip", type=float, default=d.clip, help="PPO-style ratio clip (0: plain actor-critic)")
    p.add_argument("--warmup-smoothing", type=float, default=d.warmup_smoothing,
                   help="label smoothing of the warm-up over the valid actions (keeps the copy exploring)")
    p.add_argument("--gae-lambda", type=float, default=d.gae_lambda, help="--baseline gae: λ per slot")
    p.add_argument("--ppo-epochs", type=int, default=d.ppo_epochs, help="--baseline gae: passes over each episode")
    p.add_argument("--kl", type=float, default=d.kl, help="--baseline gae: weight of KL(warm-up policy || policy); "
                   "--baseline api: weight of KL(policy before the update || policy) over the labelled states' rows")
    p.add_argument("--api-margin", type=float, default=d.api_margin,
                   help="--baseline api: return (job-slots) a fork's best level must gain over the greedy one to be "
                        "its label (default 1)")
    p.add_argument("--api-memory", type=int, default=d.api_memory,
                   help="--baseline api: the most recent labels the updates fit (default 20000)")
    p.add_argument("--budget-cpu-min", type=float, default=None, help="stop fine-tuning after this many CPU minutes")
    p.add_argument("--threads", type=int, default=d.threads, help="torch threads (default 1)")
    p.add_argument("--workers", type=int, default=d.workers,
                   help="--baseline forks or api: episodes played at once in as many processes; --baseline es: processes "
                        "a generation's episodes are split over, the same result as one (default 1)")
    p.add_argument("--snapshots", default="", metavar="MINUTES",
                   help="CPU minutes, e.g. 30,60: when the run's CPU passes each, the best model so far is also "
                        "written as OUT-30min.pt etc. (with its provenance)")
    p.add_argument("--actions", choices=ACTIONS, default=d.actions,
                   help="one task per inference (DL2's, default) or every window job's size level at once (jobs)")
    p.add_argument("--work-conserving", action="store_true",
                   help="with --actions jobs: a window job is never left out while a size within its limits exists; it "
                        "waits only when the rows before it took the room (recorded in the checkpoint's spec)")
    p.add_argument("--prior-load", action="store_true",
                   help="with --actions jobs: the row prior also reads the window's number of jobs, so the sizes it "
                        "prefers can follow the load (recorded in the checkpoint's spec); with --init of a checkpoint "
                        "without it, its row is added at 0 (the same decisions) and a new search starts")
    p.add_argument("--horizon", type=int, default=d.horizon,
                   help="--baseline forks or api: slots each fork is continued for (0, the default: to the end of the "
                        "episode; a short horizon is biased, docs/dl2.md round 9)")
    p.add_argument("--hold", type=int, default=d.hold,
                   help="--baseline forks or api: slots the forked job keeps its candidate level (default 15; 0: the whole continuation)")
    p.add_argument("--es-pairs", type=int, default=d.es_pairs, help="--baseline es: antithetic pairs per generation")
    p.add_argument("--es-traces", type=int, default=d.es_traces,
                   help="--baseline es: training traces every member of a generation plays")
    p.add_argument("--es-groups", action="store_true",
                   help="--baseline es: tie the bias of the window's rows in rank groups 0, 1-2, 3-6, 7-14, ... (docs/dl2.md)")
    p.add_argument("--es-basis", action="store_true",
                   help="--baseline es: search the logit scale and, per rank group, the bias of leaving a job out, "
                        "slopes in log workers and log PSs and a curvature (1 + 4G directions; docs/dl2.md round 12)")
    p.add_argument("--es-features", action="store_true",
                   help="--baseline es: search a row prior, features of each window row (job type, log remaining "
                        "epochs, log rank) × the size terms of --es-basis, and the logit scale (docs/dl2.md round 13)")
    p.add_argument("--es-hold-scale", action="store_true",
                   help="--es-basis, --es-features: keep the logit scale s as the checkpoint has it (search the rank groups' priors only)")
    p.add_argument("--es-scale", type=float, default=None, metavar="S",
                   help="--baseline es: play and search at logit scale S, held, the output bias scaled with it (implies "
                        "--es-hold-scale; the warm-up's decisions at the start; the same search as S = 1 with "
                        "--es-sigma and --rl-lr divided by S; saved in the checkpoint; docs/dl2.md round 14)")
    p.add_argument("--es-sigma", type=float, default=d.es_sigma,
                   help="--baseline es: σ of the perturbation (with --es-optimizer cma: σ₀, adapted; a continued search keeps its σ)")
    p.add_argument("--es-optimizer", choices=["adam", "cma"], default=d.es_optimizer,
                   help="--baseline es: Adam at --rl-lr on the estimated gradient (default), or CMA-ES with its step "
                        "adapted by the evolution path, 2 x --es-pairs mirrored points a generation, its state in the "
                        "checkpoint so that --init continues it (docs/dl2.md round 15)")
    p.add_argument("--baseline", choices=["critic", "greedy", "branch", "rollouts", "gae", "forks", "es", "api"], default=d.baseline,
                   help="actor's baseline: the critic V(s) (default), the greedy policy's return on the same trace, "
                        "per sampled slot the greedy episode forked there (branch), or the best of --candidates "
                        "sampled slots per fork as a target (rollouts), or one row's candidate levels per fork with "
                        "--actions jobs (forks; docs/dl2.md), or evolution strategies on the output bias with "
                        "--actions jobs (es), or policy iteration: each fork's best level as a label of the whole "
                        "network, --actions jobs (api; docs/dl2.md round 20)")
    p.add_argument("--candidates", type=int, default=d.candidates,
                   help="--baseline rollouts: sampled slots per fork; --baseline forks or api: levels tried per fork")
    p.add_argument("--p-branch", type=float, default=d.p_branch, help="--baseline branch, forks or api: probability of forking at a slot")
    p.add_argument("--temperature", type=float, default=d.temperature,
                   help="--baseline branch: temperature of the forked slot's sampling")
    p.add_argument("--dagger", type=int, default=d.dagger_rounds, metavar="ROUNDS",
                   help="DAgger rounds after the warm-up: label the network's own states by the teacher and retrain")
    p.add_argument("--dagger-epochs", type=int, default=d.dagger_epochs, help="epochs of each DAgger round")
    p.add_argument("--dagger-lr", type=float, default=d.dagger_lr, help="learning rate of each DAgger round (cosine decay)")
    p.add_argument("--rl-lr", type=float, default=d.rl_lr,
                   help="Adam learning rate of fine-tuning (not used by --es-optimizer cma, whose step adapts)")
    p.add_argument("--batch", type=int, default=d.batch, help="minibatch size of the warm-up and the updates")
    p.add_argument("--updates", type=int, default=d.updates_per_episode, help="minibatch updates after each episode")
    p.add_argument("--eval-every", type=int, default=d.eval_every, help="episodes between evaluations on the tuning traces")
    p.add_argument("--budget-min", type=float, default=None, help="stop fine-tuning after this many minutes")
    p.add_argument("--init", default=None, metavar="CHECKPOINT",
                   help="start from this checkpoint (keeps its warm-up, runs only the fine-tuning; its spec must be the "
                        "flags', except that a model decided at the slots may go on at --decide-at events)")
    p.add_argument("--out", default="dl2.pt", help="checkpoint to write (provenance .json and curves .png beside it)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


#: TrainConfig's settings by the flags of `dlsched train dl2` that set them
FLAGS = {"J": "--window", "n_jobs": "--jobs", "n_servers": "--servers", "rl_episodes": "--episodes",
         "dagger_rounds": "--dagger", "updates_per_episode": "--updates", "time_budget_s": "--budget-min",
         "cpu_budget_s": "--budget-cpu-min", "snapshots_cpu_min": "--snapshots",
         "es_held_scale": "--es-scale"}


def main(argv: Sequence[str]) -> int:
    """``dlsched train dl2``: train and print the provenance summary as one JSON object."""

    args = parser().parse_args(list(argv))

    for flag, on in (("--work-conserving", args.work_conserving), ("--prior-load", args.prior_load)):
        if on and args.actions != "jobs":
            raise InputError("<argument>", flag, "--actions jobs beside it", f"--actions {args.actions}")
    try:
        hidden = tuple(int(h) for h in args.hidden.split(","))
    except ValueError:
        raise InputError("<argument>", "--hidden", "sizes like 256,256", args.hidden) from None

    try:
        cfg = TrainConfig(teacher=args.teacher, teacher_params=parse_params(args.teacher_param, "--teacher-param"),
                          decide_at=args.decide_at, rows=args.rows, actions=args.actions,
                          leave_out=not args.work_conserving, prior_load=args.prior_load,
                          horizon=args.horizon, hold=args.hold, seed=args.seed, J=args.window, hidden=hidden,
                          train_seeds=_seeds(args.traces), tune_seeds=_seeds(args.tune), n_jobs=args.jobs,
                          n_servers=args.servers, warmup_epochs=args.warmup_epochs, warmup_lr_final=args.warmup_lr_final,
                          order=args.order, rl_episodes=args.episodes,
                          reward=args.reward, gamma=args.gamma, beta=args.beta, clip=args.clip, rl_lr=args.rl_lr,
                          baseline=args.baseline, candidates=args.candidates, dagger_rounds=args.dagger,
                          dagger_epochs=args.dagger_epochs, dagger_lr=args.dagger_lr, p_branch=args.p_branch,
                          temperature=args.temperature, updates_per_episode=args.updates, eval_every=args.eval_every,
                          time_budget_s=None if args.budget_min is None else 60 * args.budget_min, init=args.init,
                          cpu_budget_s=None if args.budget_cpu_min is None else 60 * args.budget_cpu_min,
                          warmup_smoothing=args.warmup_smoothing, gae_lambda=args.gae_lambda, ppo_epochs=args.ppo_epochs,
                          kl=args.kl, api_margin=args.api_margin, api_memory=args.api_memory, threads=args.threads, workers=args.workers, batch=args.batch,
                          es_pairs=args.es_pairs, es_traces=args.es_traces, es_sigma=args.es_sigma, es_groups=args.es_groups,
                          es_basis=args.es_basis, es_features=args.es_features, es_optimizer=args.es_optimizer,
                          es_scale=not (args.es_hold_scale or args.es_scale is not None), es_held_scale=args.es_scale,
                          snapshots_cpu_min=_minutes(args.snapshots))
    except InputError as exc:       # name the flag, not the setting
        flag = FLAGS.get(exc.where, "--" + exc.where.replace("_", "-"))
        raise InputError(exc.source, flag, exc.expected, exc.found) from None

    make_policy(cfg.teacher, **cfg.teacher_params)   # an unknown teacher or option fails before any work
    prov = train(cfg, args.out, command=portable_command(["dlsched train dl2", *argv]), progress=not args.quiet)
    print(json.dumps({k: prov[k] for k in ("agreement", "teacher_tune_jct", "best_tune_jct", "best_episode",
                                            "episodes_run", "training_seconds")}))
    return 0

"""Reinforcement learning of job-level sizes (``Spec.actions = "jobs"``) by forked rollouts (MODELS.md §6).

With job-level actions one inference sizes every window job of a slot, so an episode is a few
hundred decisions and the simulator (deterministic, and copyable: :func:`fork`) can measure what
one decision is worth. :func:`fork_episode` plays the greedy policy on a training trace; at a slot,
with probability ``p_fork``, it picks one window row i among those whose level can change the slot
(:func:`decisive_rows`) and plays ``candidates`` copies of the episode from there that differ only
in row i's level k_c: the greedy level and others drawn without replacement from π_i(· | s)^(1/τ)
(:func:`candidate_levels`), the rest of the slot as the greedy policy has it, each continued
greedily for ``horizon`` slots (0: to the end of the episode) with the ``jct`` reward, minus the
jobs in the system, while row i's job keeps level k_c for ``hold`` slots (:func:`continue_greedy`:
one slot of a larger size rarely shows in the returns; a job kept at that size does). The training
default is a 15-slot hold credited to the end of the episode: cut at 15 slots, the advantages
hardly correlate with those to the end and favour larger sizes that cost more later (docs/dl2.md,
"round 9"); held to the end, level 0 would mean a job never runs. The candidates' returns R_c share the trace, the state and every other
decision, so their differences measure row i's level alone; the advantage is R_c minus the mean of
the others (leave-one-out, Kool et al. 2019):

    A_c = R_c − (1 / (C − 1)) Σ_{c' ≠ c} R_{c'}

:func:`fork_update` then takes PPO's clipped step on −A_c · log π_i(k_c | s) (ratio against the
policy that played the episode, the advantages scaled by a running RMS), so the network moves
probability towards the levels whose continuations finished the jobs sooner: policy improvement
by rollouts, one job's size at a time.

:class:`ForkPool` plays several such episodes at once in worker processes (``--workers``), each
with the current weights; the update takes all their samples. It also plays the greedy episodes
of an evolution-strategies generation (:func:`dlsched.rl.es.es_gradient`).
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import time

import numpy as np
import torch

from dlsched.rl.env import DL2Env
from dlsched.rl.es import member_returns
from dlsched.rl.policy import Model, choose


def fork(env: DL2Env) -> DL2Env:
    """A copy of ``env`` in its current state that shares the read-only trace, cluster and speed
    source, and the slot's ``ClusterState`` (a snapshot the simulator no longer changes). The
    simulator is deterministic, so the copy and the original evolve alike under the same actions."""
    shared = (env.traces, env.trace, env.trace.jobs, env.cluster, env.speed, env.dl2_spec, env.state)
    return copy.deepcopy(env, memo={id(x): x for x in shared})


def continue_greedy(env: DL2Env, model: Model, levels: np.ndarray, horizon: int,
                    hold: tuple[int, int] | None = None, record: list | None = None, hold_slots: int = 0) -> float:
    """Step ``levels`` in ``env``'s open slot, then the greedy policy for ``horizon`` − 1 more slots
    (``horizon`` = 0: to the end of the episode); the sum of the rewards. ``hold`` = (job j, level
    k): in those later slots job j (trace index) keeps level k
    wherever it sits in the window, so that a job's size is measured as a sustained choice; for
    ``hold_slots`` slots in all, the forked one included (0: as long as the continuation), the
    greedy policy deciding its level after them.
    ``record``: a list that gets (reward, observation after the step) of every slot, so that one
    continuation to the end gives the return at every shorter horizon and the state at its cut-off."""
    total, slots = 0.0, 0
    action = levels
    while True:
        obs, r, term, trunc, info = env.step(action)
        total += r
        slots += 1
        if record is not None:
            record.append((r, obs))
        if term or trunc or (horizon and slots >= horizon):
            return total
        action = choose(model, obs, info["action_mask"])
        if hold is not None and (not hold_slots or slots < hold_slots):
            row = np.flatnonzero(env.slot.jobs == hold[0])
            if len(row):
                action[row] = hold[1] if info["action_mask"][row[0], hold[1]] else 0


def row_probabilities(model: Model, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """π_i(k | s) of every row i and level k, (J, C)."""
    with torch.inference_mode():
        logits = model.policy.levels(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None])[0]
        return torch.softmax(logits, dim=1).numpy().astype(float)


def decisive_rows(env: DL2Env, levels: np.ndarray) -> np.ndarray:
    """The window rows whose level can change the slot: those the greedy ``levels`` serve, and the
    first row left without tasks after them (the rows further down get nothing at any level, and a
    served row's level changes what the rows after it get)."""
    slot = copy.deepcopy(env.slot, memo={id(env.slot.state): env.slot.state, id(env.slot.spec): env.slot.spec})
    slot.fill(levels)
    served = np.flatnonzero((slot.w + slot.p)[:len(slot.jobs)] > 0)
    last = int(served[-1]) + 1 if len(served) else 0
    return np.arange(min(last + 1, len(slot.jobs)))


def candidate_levels(p: np.ndarray, valid: np.ndarray, greedy: int, n: int, temperature: float,
                     rng: np.random.Generator) -> np.ndarray:
    """The greedy level and up to ``n`` − 1 other valid levels, drawn without replacement from
    π_i^(1/τ) mixed with 10 % uniform (so that every level is tried now and then)."""
    others = valid[valid != greedy]
    q = p[others] ** (1.0 / temperature)
    q = 0.9 * q / max(q.sum(), 1e-300) + 0.1 / len(others) if len(others) else q
    pick = rng.choice(others, size=min(n - 1, len(others)), replace=False, p=q / q.sum()) if len(others) else others
    return np.concatenate([[greedy], pick]).astype(np.int64)


def draw_fork(env: DL2Env, model: Model, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator, *,
              p_fork: float, candidates: int, temperature: float):
    """The greedy levels of ``env``'s open slot and, with probability ``p_fork`` (and a row that can
    change the slot), the forked row i, π_i(· | s) and its candidate levels; else None for those three."""
    levels = choose(model, obs, mask)
    rows = decisive_rows(env, levels) if rng.random() < p_fork else []
    if not len(rows):
        return levels, None, None, None
    i = int(rng.choice(rows))
    p = row_probabilities(model, obs, mask)[i]
    return levels, i, p, candidate_levels(p, np.flatnonzero(mask[i]), int(levels[i]), candidates, temperature, rng)


def fork_episode(env: DL2Env, model: Model, rng: np.random.Generator, *, trace: int, p_fork: float,
                 candidates: int, temperature: float, horizon: int, hold: int = 0):
    """The forked rollouts of one greedy episode on trace ``trace`` (module docstring); the forked
    job keeps its candidate level for ``hold`` slots (0: for the whole continuation).

    Returns the states, masks, chosen rows, levels, their log-probabilities under π and their
    advantages of every fork whose candidates' returns differ, the fork each sample belongs to (its
    first sample is the greedy level), and the greedy episode's return."""
    obs, info = env.reset(options={"trace": trace})
    X, M, I, K, LP, ADV, F = [], [], [], [], [], [], []
    forks = 0
    greedy, done = 0.0, False
    while not done:
        mask = info["action_mask"]
        levels, i, p, ks = draw_fork(env, model, obs, mask, rng, p_fork=p_fork, candidates=candidates,
                                     temperature=temperature)
        if i is not None:
            returns = []
            for k in ks:
                alt = levels.copy()
                alt[i] = k
                returns.append(continue_greedy(fork(env), model, alt, horizon, (int(env.slot.jobs[i]), int(k)),
                                               hold_slots=hold))
            R = np.asarray(returns)
            if R.max() > R.min():
                adv = R - (R.sum() - R) / (len(R) - 1)
                X += [obs] * len(R)
                M += [mask] * len(R)
                I += [i] * len(R)
                K += list(ks)
                LP += list(np.log(np.maximum(p[ks], 1e-12)))
                ADV += list(adv)
                F += [forks] * len(R)
                forks += 1
        obs, r, term, trunc, info = env.step(levels)
        greedy += r
        done = term or trunc
    J = env.dl2_spec.J
    return (np.array(X, np.float32).reshape(-1, *env.observation_space.shape),
            np.array(M, np.int8).reshape(-1, J, env.dl2_spec.n_levels), np.array(I, np.int64),
            np.array(K, np.int64), np.array(LP, np.float32), np.array(ADV, np.float64), np.array(F, np.int64), greedy)


def fork_update(model: Model, opt: torch.optim.Optimizer, X, M, I, K, LP, adv, *, clip: float, epochs: int,
                batch: int, rng: np.random.Generator) -> float:
    """``epochs`` passes of PPO's clipped surrogate −min(ρA, clip(ρ, 1 ± clip)A) over the forks'
    samples, ρ = π_i(k | s) / π_old,i(k | s) (``LP``: the log-probability under the policy that
    played the episode); ``adv`` already scaled. The mean loss."""
    x, m, i, k = (torch.from_numpy(v) for v in (X, M, I, K))
    lp, a = torch.from_numpy(LP), torch.from_numpy(adv.astype(np.float32))
    model.policy.train()
    losses = []
    for _ in range(epochs):
        perm = torch.from_numpy(rng.permutation(len(k)))
        for s in range(0, len(perm), batch):
            idx = perm[s:s + batch]
            logp = torch.log_softmax(model.policy.levels(x[idx], m[idx]), dim=2)
            logp = logp[torch.arange(len(idx)), i[idx], k[idx]]
            ratio = torch.exp(logp - lp[idx])
            gain = torch.minimum(ratio * a[idx], torch.clamp(ratio, 1 - clip, 1 + clip) * a[idx])
            loss = -gain.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    model.policy.eval()
    return float(np.mean(losses)) if losses else float("nan")


#: a worker process's environment and model (:class:`ForkPool`)
_WORKER: dict = {}


def _init_worker(env: DL2Env, model: Model) -> None:
    torch.set_num_threads(1)
    _WORKER.update(env=env, model=model)


def _worker_episode(args):
    weights, seed, trace, kw = args
    cpu = time.process_time()
    model = _WORKER["model"]
    model.policy.load_state_dict(weights)
    out = fork_episode(_WORKER["env"], model, np.random.default_rng(seed), trace=trace, **kw)
    return out, time.process_time() - cpu


def _worker_greedy(member):
    cpu = time.process_time()
    return member_returns(_WORKER["env"], _WORKER["model"], [member])[0], time.process_time() - cpu


class ForkPool:
    """:func:`fork_episode` on ``workers`` traces at once: in this process for one worker, else in
    that many forked processes holding a copy of the environment and the model. :meth:`episodes`
    returns each episode's result and the CPU seconds the workers spent (0 in this process)."""

    def __init__(self, workers: int, env: DL2Env, model: Model):
        self.env, self.workers = env, workers
        self.pool = (mp.get_context("fork").Pool(workers, _init_worker, (env, copy.deepcopy(model)))
                     if workers > 1 else None)

    def episodes(self, model: Model, rng: np.random.Generator, traces, **kw) -> tuple[list, float]:
        if self.pool is None:
            return [fork_episode(self.env, model, rng, trace=int(k), **kw) for k in traces], 0.0
        weights = {k: v.clone() for k, v in model.policy.state_dict().items()}
        seeds = rng.integers(2 ** 63, size=len(traces))
        done = self.pool.map(_worker_episode, [(weights, int(s), int(k), kw) for s, k in zip(seeds, traces)])
        return [out for out, _ in done], float(sum(c for _, c in done))

    def greedy_returns(self, model: Model, members) -> tuple[list[float], float]:
        """The greedy return of each (θ, trace) member (:func:`dlsched.rl.es.member_returns`; θ the
        logit scale's log and the output bias, :func:`dlsched.rl.es.theta`), one episode a task, and
        the CPU seconds of the workers (0 in this process). Only θ is sent: evolution strategies change
        nothing else, so the rest of the workers' copies is ``model``'s."""
        if self.pool is None:
            return member_returns(self.env, model, members), 0.0
        done = self.pool.map(_worker_greedy, members, chunksize=1)
        return [r for r, _ in done], float(sum(c for _, c in done))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()

    def __enter__(self) -> "ForkPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

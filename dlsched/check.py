"""Independent checker: feasibility and objective recomputed from the instance alone.

This module deliberately imports nothing from ``dlsched.models`` or ``dlsched.solvers``
and does its own arithmetic, so that a bug in a model builder cannot hide itself.
Family checkers register in :data:`CHECKERS` under the instance's family name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

ABS_TOL = 1e-6
REL_TOL = 1e-9


@dataclass
class CheckReport:
    feasible: bool
    objective: float | None
    violations: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.feasible

    def raise_if_infeasible(self) -> "CheckReport":
        if not self.feasible:
            raise AssertionError("checker rejected the solution: " + "; ".join(self.violations[:10]))
        return self


def _within(used: float, cap: float) -> bool:
    return used <= cap + ABS_TOL + REL_TOL * abs(cap)


def check_mcmdk(inst, choice, claimed_objective: float | None = None) -> CheckReport:
    """Verify a core solution: one configuration index per job (``-1`` = none).

    Checks: one entry per job, each in range, every job served under ``exactly_one``,
    every capacity row respected; recomputes the objective sum of the chosen values.
    """
    bad: list[str] = []
    choice = np.asarray(choice)
    n_jobs = len(inst.job_ptr) - 1
    if choice.ndim != 1 or choice.shape[0] != n_jobs:
        return CheckReport(False, None, [f"solution has {choice.shape} entries, instance has {n_jobs} jobs"])
    if not np.issubdtype(choice.dtype, np.integer):
        if not np.all(np.equal(np.mod(choice, 1), 0)):
            return CheckReport(False, None, ["configuration indices must be integers"])
        choice = choice.astype(np.int64)
    counts = [int(inst.job_ptr[j + 1] - inst.job_ptr[j]) for j in range(n_jobs)]
    A = inst.A.tocsc()
    used = np.zeros(len(inst.b))
    total = 0.0
    for j in range(n_jobs):
        o = int(choice[j])
        name = inst.job_names[j] if inst.job_names else f"job{j}"
        if o == -1:
            if inst.choose == "exactly_one":
                bad.append(f"job '{name}' has no configuration but every job must get one")
            continue
        if not 0 <= o < counts[j]:
            bad.append(f"job '{name}' chose configuration {o}, it has {counts[j]}")
            continue
        col = int(inst.job_ptr[j]) + o
        total += float(inst.value[col])
        lo, hi = A.indptr[col], A.indptr[col + 1]
        used[A.indices[lo:hi]] += A.data[lo:hi]
    for k in range(len(inst.b)):
        if not _within(used[k], float(inst.b[k])):
            row = inst.row_names[k] if inst.row_names else f"row{k}"
            bad.append(f"capacity row '{row}' uses {used[k]:g} > {inst.b[k]:g}")
    if claimed_objective is not None and abs(claimed_objective - total) > 1e-6 * max(1.0, abs(total)):
        bad.append(f"claimed objective {claimed_objective:g} but the chosen values sum to {total:g}")
    return CheckReport(not bad, total, bad)


# ------------------------------------------------------------------------------ oasis (MODELS.md §3.1)

def _oasis_utility(u, d: float) -> float:
    """f(d) recomputed here from the utility's data (not the model's own evaluation)."""
    p = u.params
    if u.kind == "sigmoid":
        x = p["gamma2"] * (d - p["gamma3"])
        return 0.0 if x > 700 else p["gamma1"] / (1.0 + np.exp(x))
    if u.kind == "step":
        return p["value"] if d <= p["deadline"] else p.get("after", 0.0)
    if u.kind == "linear":
        return max(p.get("floor", 0.0), p["value"] - p["slope"] * (d - 1.0))
    raise ValueError(f"unknown utility kind {u.kind}")


def check_oasis(inst, sched, claimed_objective: float | None = None) -> CheckReport:
    """Verify an oasis schedule against every constraint of MODELS.md §3.1; recompute its utility.

    Slot convention (docs/oasis.md): slots 1..T, a job runs from its arrival slot, its completion
    is the last slot with workers, and its utility is f(completion - arrival + 1).
    Checks: rows well formed; servers and slots in range; nothing before arrival; only admitted
    jobs hold resources; work E N M (tau + 2e/b) done; at most N workers per slot; worker and PS
    capacities per server, slot and resource; b * workers <= B * PSs; PSs <= workers; the claimed
    completion equals the last active slot; the claimed total utility.
    """
    bad: list[str] = []
    n, T = inst.n_jobs, int(inst.horizon)
    H, K = inst.worker_cap.shape[0], inst.ps_cap.shape[0]
    W = np.asarray(sched.workers, dtype=np.int64).reshape(-1, 4)
    P = np.asarray(sched.ps, dtype=np.int64).reshape(-1, 4)
    admitted = np.asarray(sched.admitted, dtype=bool)
    if admitted.shape != (n,) or np.asarray(sched.completion).shape != (n,):
        return CheckReport(False, None, [f"schedule describes {admitted.shape} jobs, the instance has {n}"])
    for name, rows, S in (("workers", W, H), ("ps", P, K)):
        if len(rows) == 0:
            continue
        if (rows[:, 0] < 0).any() or (rows[:, 0] >= n).any():
            return CheckReport(False, None, [f"{name}: job index out of range"])
        if (rows[:, 1] < 1).any() or (rows[:, 1] > T).any():
            return CheckReport(False, None, [f"{name}: slot outside 1..{T}"])
        if (rows[:, 2] < 0).any() or (rows[:, 2] >= S).any():
            return CheckReport(False, None, [f"{name}: server index outside 0..{S - 1}"])
        if (rows[:, 3] < 0).any():
            bad.append(f"{name}: negative count")
    # dense per-job totals per slot, and per-server usage per slot
    Y = np.zeros((n, T + 1))
    Z = np.zeros((n, T + 1))
    np.add.at(Y, (W[:, 0], W[:, 1]), W[:, 3])
    np.add.at(Z, (P[:, 0], P[:, 1]), P[:, 3])
    used_w = np.zeros((H, T + 1, len(inst.resources)))
    used_p = np.zeros((K, T + 1, len(inst.resources)))
    np.add.at(used_w, (W[:, 2], W[:, 1]), W[:, 3:4] * inst.worker_demand[W[:, 0]])
    np.add.at(used_p, (P[:, 2], P[:, 1]), P[:, 3:4] * inst.ps_demand[P[:, 0]])
    for srv, used, cap, kind in ((H, used_w, inst.worker_cap, "worker"), (K, used_p, inst.ps_cap, "PS")):
        over = used > cap[:, None, :] + ABS_TOL + REL_TOL * np.abs(cap[:, None, :])
        for s, t, r in np.argwhere(over)[:10]:
            bad.append(f"{kind} server {s} slot {t}: {inst.resources[r]} used {used[s, t, r]:g} > capacity {cap[s, r]:g}")
    comm = 2.0 * inst.grad_mb * 8e-3 / inst.worker_gbps / inst.slot_seconds
    work = np.ceil(inst.epochs * inst.chunks * inst.minibatches * (inst.tau + comm) - 1e-9)
    total = 0.0
    for i in range(n):
        a = int(inst.arrival[i])
        name = inst.job_names[i] if inst.job_names else f"job{i}"
        y, z = Y[i], Z[i]
        if not admitted[i]:
            if y.any() or z.any():
                bad.append(f"job '{name}' is not admitted but holds workers or PSs")
            continue
        if y[:a].any() or z[:a].any():
            bad.append(f"job '{name}' runs before its arrival slot {a}")
        if y.sum() < work[i] - 1e-9:
            bad.append(f"job '{name}' gets {y.sum():g} worker-slots, needs {work[i]:g}")
        if (y > inst.chunks[i]).any():
            bad.append(f"job '{name}' has more than N={int(inst.chunks[i])} workers in slot {int(np.argmax(y > inst.chunks[i]))}")
        if (inst.worker_gbps[i] * y > inst.ps_gbps[i] * z + 1e-9).any():
            t = int(np.argmax(inst.worker_gbps[i] * y > inst.ps_gbps[i] * z + 1e-9))
            bad.append(f"job '{name}' slot {t}: {y[t]:g} workers need more PS bandwidth than {z[t]:g} PSs give")
        if (z > y).any():
            bad.append(f"job '{name}' has more PSs than workers in slot {int(np.argmax(z > y))}")
        active = np.flatnonzero(y > 0)
        last = int(active[-1]) if len(active) else 0
        if int(sched.completion[i]) != last:
            bad.append(f"job '{name}' claims completion slot {int(sched.completion[i])}, its last slot with workers is {last}")
        if len(active):
            total += float(_oasis_utility(inst.utilities[i], last - a + 1))
    if claimed_objective is not None and abs(claimed_objective - total) > 1e-6 * max(1.0, abs(total)):
        bad.append(f"claimed total utility {claimed_objective:g} but the schedule's utilities sum to {total:g}")
    return CheckReport(not bad, total, bad)


CHECKERS: dict[str, Callable[..., CheckReport]] = {"mcmdk": check_mcmdk, "oasis": check_oasis}


def check(instance: Any, solution: Any, claimed_objective: float | None = None) -> CheckReport:
    """Check ``solution`` against ``instance`` with the checker of the instance's family."""
    fn = CHECKERS.get(instance.family)
    if fn is None:
        raise KeyError(f"no checker for family '{instance.family}'")
    return fn(instance, solution, claimed_objective)

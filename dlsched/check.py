"""Independent checker: feasibility and objective recomputed from the instance alone.

This module deliberately imports nothing from ``dlsched.models`` or ``dlsched.solvers``
and does its own arithmetic, so that a bug in a model builder cannot hide itself: its only
dlsched imports are ``errors`` and the registry of names (which imports nothing else).
A family's checker is the function of this module that its line in
:data:`dlsched.registry.FAMILIES` names (``checker``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlsched.errors import InputError
from dlsched.registry import FAMILIES

ABS_TOL = 1e-6
REL_TOL = 1e-9
MAX_INT = 2**53


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


def _integers(x: Any, what: str, ndim: int) -> tuple[np.ndarray | None, str | None]:
    """``x`` as an int64 array of ``ndim`` dimensions, or the reason it is not one (a rejection,
    never an exception: the checker judges whatever it is handed)."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError, OverflowError):
        return None, f"{what} is not a rectangular array of integers"
    if a.ndim != ndim:
        return None, f"{what} has {a.ndim} dimensions, expected {ndim}"
    if a.dtype.kind == "b" or a.dtype.kind not in "iuf":
        return None, f"{what} must hold integers, it holds {a.dtype.name} values"
    if a.dtype.kind == "f" and not (np.all(np.isfinite(a)) and np.all(a == np.round(a))):
        return None, f"{what} must hold integers, it holds non-integral or non-finite numbers"
    if a.size and (a.max() > MAX_INT or a.min() < -MAX_INT):
        return None, f"{what} holds an integer beyond 2^53 in magnitude"
    return a.astype(np.int64), None


def _finite_numbers(x: Any, what: str, ndim: int) -> tuple[np.ndarray | None, str | None]:
    try:
        a = np.asarray(x)
    except (TypeError, ValueError, OverflowError):
        return None, f"{what} is not a rectangular array of numbers"
    if a.ndim != ndim or a.dtype.kind == "b" or a.dtype.kind not in "iuf":
        return None, f"{what} must be a {ndim}-dimensional array of numbers"
    a = a.astype(float)
    if not np.all(np.isfinite(a)):
        return None, f"{what} holds a NaN or an infinity"
    return a, None


def _claim(claimed: Any, total: float, what: str, recomputed: str) -> list[str]:
    """The violation of a claimed objective: not a finite number, or not the recomputed ``total``
    (relative tolerance 1e-6). No claim, or a total that is not finite (the solution is already
    rejected for it), adds nothing."""
    if claimed is None:
        return []
    if isinstance(claimed, (bool, np.bool_)) or not isinstance(claimed, (int, float, np.integer, np.floating)):
        return [f"the claimed {what} {claimed!r} is not a number"]
    if not np.isfinite(claimed):
        return [f"the claimed {what} {claimed!r} is not finite"]
    if np.isfinite(total) and abs(claimed - total) > 1e-6 * max(1.0, abs(total)):
        return [f"claimed {what} {claimed:g} but {recomputed} {total:g}"]
    return []


def _within(used: float, cap: float) -> bool:
    return used <= cap + ABS_TOL + REL_TOL * abs(cap)


def check_mcmdk(inst, choice, claimed_objective: float | None = None) -> CheckReport:
    """Verify a core solution: one configuration index per job (``-1`` = none).

    Checks: one entry per job, each in range, every job served under ``exactly_one``,
    every capacity row respected; recomputes the objective sum of the chosen values.
    """
    bad: list[str] = []
    n_jobs = len(inst.job_ptr) - 1
    choice, why = _integers(choice, "configuration indices", 1)
    if why:
        return CheckReport(False, None, [why])
    if choice.shape[0] != n_jobs:
        return CheckReport(False, None, [f"solution has {choice.shape} entries, instance has {n_jobs} jobs"])
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
    bad += _claim(claimed_objective, total, "objective", "the chosen values sum to")
    return CheckReport(not bad, total, bad)


# ------------------------------------------------------------------------------ smd (MODELS.md §2)

def _smd_tau(inst, j: int, w: int, p: int) -> float:
    """τ_j(w, p) recomputed layer by layer from the profile's fields (MODELS.md §2.1)."""
    prof = inst.profiles[inst.job_type[j]]
    B = float(inst.batch[j])
    per = B / w
    s = 2.0 * max(1.0 / prof.beta_w, w / (p * prof.beta_p))
    if np.isfinite(prof.mu_p):
        s += 1.0 / (p * prof.mu_p)
    phi, psi, m = (np.asarray(a, dtype=float).tolist() for a in (prof.phi, prof.psi, prof.m))
    if inst.options.overlap == "none":
        return prof.delta + per * sum(phi) + per * sum(psi) + s * sum(m)
    C, G = 0.0, 0.0
    for ell in range(len(m) - 1, -1, -1):
        G += per * psi[ell]
        C = max(G, C) + m[ell] * s
    return prof.delta + per * sum(phi) + C


def _smd_alloc_violations(inst, j: int, w: int, p: int, where: str) -> list[str]:
    name = inst.job_names[j]
    if w < 0 or p < 0 or (w == 0) != (p == 0):
        return [f"{where}: job '{name}' has w={w}, p={p} (both 0 or both >= 1)"]
    bad = []
    if w > inst.max_workers[j] or p > inst.max_ps[j]:
        bad.append(f"{where}: job '{name}' has w={w}, p={p} above its limits {int(inst.max_workers[j])}, {int(inst.max_ps[j])}")
    if inst.options.ps_le_workers and p > w:
        bad.append(f"{where}: job '{name}' has more PSs ({p}) than workers ({w})")
    return bad


def check_smd(inst, solution, claimed_objective: float | None = None) -> CheckReport:
    """Verify an SMD solution (MODELS.md §2) from the instance alone.

    * ``{"allocation": (n, 2|3) ints}`` -- one decision epoch (§2.2): limits, capacities
      (aggregate, or per server when the instance asks for it, the third column is the
      server), objective Σ ω R τ(w, p) over running jobs + Σ ω·factor·R·τ(1, 1) over waiting
      ones with R > 0;
    * ``{"schedule": (T, n, 2) ints}`` -- slots 1..T (§2.4): per-slot limits and aggregate
      capacities, nothing before arrival or after completion, every schedulable job completes;
      objective Σ ω_j C_j (completion slot). Jobs whose (1, 1) does not fit are "cannot be
      scheduled": they must never run and are left out of the objective.

    Generic (core) methods return the allocation form too (``SMDInstance.solution_from_core``).
    """
    bad: list[str] = []
    n = len(inst.job_names)
    cap = np.asarray(inst.server_cap, dtype=float).sum(axis=0)
    d, e = np.asarray(inst.d, dtype=float), np.asarray(inst.e, dtype=float)
    if not isinstance(solution, dict):
        return CheckReport(False, None, ["an SMD solution is {'allocation': ...} or {'schedule': ...} (generic "
                                         "methods translate their core solution through solution_from_core)"])
    if "allocation" in solution:
        alloc, why = _integers(solution["allocation"], "allocation", 2)
        if why:
            return CheckReport(False, None, [why])
        if alloc.ndim != 2 or alloc.shape[0] != n or alloc.shape[1] not in (2, 3):
            return CheckReport(False, None, [f"allocation has shape {alloc.shape}, expected ({n}, 2)"])
        per_server = inst.options.capacity == "per_server"
        used = np.zeros((len(inst.server_cap), len(cap))) if per_server else np.zeros(len(cap))
        total = 0.0
        for j in range(n):
            w, p = int(alloc[j, 0]), int(alloc[j, 1])
            bad += _smd_alloc_violations(inst, j, w, p, "allocation")
            R = float(inst.iterations[j])
            if w <= 0 or p <= 0:
                if R > 0:
                    total += float(inst.weight[j]) * inst.options.deferral_factor * R * _smd_tau(inst, j, 1, 1)
                continue
            use = w * d[j] + p * e[j]
            if per_server:
                s = int(alloc[j, 2]) if alloc.shape[1] == 3 else -1
                if not 0 <= s < len(inst.server_cap):
                    bad.append(f"job '{inst.job_names[j]}' runs but names no server (per-server capacity)")
                    continue
                used[s] += use
            else:
                used += use
            total += float(inst.weight[j]) * R * _smd_tau(inst, j, w, p)
        caps = np.asarray(inst.server_cap, dtype=float) if per_server else cap
        for idx in np.argwhere(used > caps + ABS_TOL + REL_TOL * np.abs(caps)):
            idx = tuple(idx)
            r = inst.resources[idx[-1]]
            where = f"{r}@{inst.server_names[idx[0]]}" if per_server else r
            bad.append(f"capacity '{where}' uses {used[idx]:g} > {caps[idx]:g}")
    elif "schedule" in solution:
        sch, why = _integers(solution["schedule"], "schedule", 3)
        if why:
            return CheckReport(False, None, [why])
        if sch.ndim != 3 or sch.shape[1:] != (n, 2):
            return CheckReport(False, None, [f"schedule has shape {sch.shape}, expected (T, {n}, 2)"])
        if inst.options.capacity == "per_server":
            return CheckReport(False, None, ["a schedule places no servers: per-server capacities cannot be verified"])
        T = sch.shape[0]
        delta = float(inst.slot_seconds)
        progress = np.zeros(n)
        done = np.full(n, -1)
        total = 0.0
        fits11 = [bool(np.all(d[j] + e[j] <= cap + ABS_TOL)) for j in range(n)]
        for k in range(T):
            used = np.zeros(len(cap))
            for j in range(n):
                w, p = int(sch[k, j, 0]), int(sch[k, j, 1])
                if w == 0 and p == 0:
                    continue
                name = inst.job_names[j]
                bad += _smd_alloc_violations(inst, j, w, p, f"slot {k + 1}")
                if w <= 0 or p <= 0:
                    continue
                if k < np.ceil(float(inst.arrival[j]) - 1e-9):
                    bad.append(f"slot {k + 1}: job '{name}' runs before its arrival {float(inst.arrival[j]):g}")
                if done[j] >= 0:
                    bad.append(f"slot {k + 1}: job '{name}' runs after completing in slot {done[j]}")
                used += w * d[j] + p * e[j]
                progress[j] += delta / _smd_tau(inst, j, w, p)
                if done[j] < 0 and progress[j] >= float(inst.iterations[j]) * (1 - 1e-9):
                    done[j] = k + 1
            for r in np.flatnonzero(used > cap + ABS_TOL + REL_TOL * cap):
                bad.append(f"slot {k + 1}: capacity '{inst.resources[r]}' uses {used[r]:g} > {cap[r]:g}")
        for j in range(n):
            R = float(inst.iterations[j])
            if R <= 0:
                continue
            if not fits11[j]:
                if progress[j] > 0:
                    bad.append(f"job '{inst.job_names[j]}' cannot be scheduled (does not fit alone) but runs")
                continue
            if done[j] < 0:
                bad.append(f"job '{inst.job_names[j]}' is not complete after {T} slots ({progress[j]:.6g} of {R:g} iterations)")
            else:
                total += float(inst.weight[j]) * done[j]
    else:
        return CheckReport(False, None, ["an SMD solution is {'allocation': ...} or {'schedule': ...}"])
    bad += _claim(claimed_objective, total, "objective", "the solution's objective is")
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
    parts = {}
    for name in ("workers", "ps", "completion", "admitted"):
        if not hasattr(sched, name):
            return CheckReport(False, None, [f"an oasis schedule has workers, ps, completion and admitted; '{name}' is missing"])
    for name, ndim in (("workers", 2), ("ps", 2), ("completion", 1)):
        value = getattr(sched, name)
        if name != "completion" and isinstance(value, (list, tuple, np.ndarray)) and len(value) == 0:
            value = np.zeros((0, 4), np.int64)   # no rows at all: nothing placed
        parts[name], why = _integers(value, name, ndim)
        if why:
            return CheckReport(False, None, [why])
    W, P, completion = parts["workers"], parts["ps"], parts["completion"]
    for name, rows in (("workers", W), ("ps", P)):
        if rows.shape[1:] != (4,):
            return CheckReport(False, None, [f"{name} rows are (job, slot, server, count), found shape {rows.shape}"])
    try:
        admitted = np.asarray(sched.admitted)
    except (TypeError, ValueError):
        admitted = np.zeros(0, dtype=object)
    if admitted.dtype.kind != "b":
        return CheckReport(False, None, [f"admitted must be booleans, found {admitted.dtype.name} values"])
    if admitted.shape != (n,) or completion.shape != (n,):
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
        if int(completion[i]) != last:
            bad.append(f"job '{name}' claims completion slot {int(completion[i])}, its last slot with workers is {last}")
        if len(active):
            total += float(_oasis_utility(inst.utilities[i], last - a + 1))
    bad += _claim(claimed_objective, total, "total utility", "the schedule's utilities sum to")
    return CheckReport(not bad, total, bad)


def placement_jcts(inst, gpu_job, workload) -> tuple[list[float], list[str]]:
    """JCT of every job from the GPUs and per-GPU samples a placement gives it (MODELS.md §4.1).

    The iteration's compute time is the slowest worker's ``samples / rho`` (so any split can be
    judged); communication is the ring (``2 (n-1)/n D / r``) or PS (``2 (n-1) D / r``) volume over
    the intra-server bandwidth when every worker shares a server, else the inter-server one.
    """
    bad: list[str] = []
    servers = [s for s, c in enumerate(inst.server_gpus.tolist()) for _ in range(c)]
    jcts = []
    gpus_of: dict[int, list[int]] = {}
    for k, i in enumerate(gpu_job.tolist()):
        gpus_of.setdefault(int(i), []).append(k)
    for i, name in enumerate(inst.job_names):
        gpus = gpus_of.get(i, [])
        if not gpus:
            bad.append(f"job '{name}' has no GPU")
            jcts.append(float("inf"))
            continue
        if len(gpus) > int(inst.max_workers[i]):
            bad.append(f"job '{name}' has {len(gpus)} GPUs, more than its maximum {int(inst.max_workers[i])}")
        P = float(inst.global_batch[i])
        rhos = [float(inst.rho[i, int(inst.server_type[servers[k]])]) for k in gpus]
        loads = [float(workload[k]) for k in gpus]
        if any(x < -ABS_TOL for x in loads) or abs(sum(loads) - P) > 1e-6 * P:
            bad.append(f"job '{name}': per-GPU samples sum to {sum(loads):g}, its global batch is {P:g}")
        n = len(gpus)
        want = [P * r / sum(rhos) for r in rhos] if inst.workload == "proportional" else [P / n] * n
        if any(abs(a - b) > 1e-6 * P for a, b in zip(loads, want)):
            bad.append(f"job '{name}': samples {loads[:4]} differ from the {inst.workload} split {want[:4]}")
        compute = max(w / r for w, r in zip(loads, rhos))
        one_server = len({servers[k] for k in gpus}) == 1
        r = inst.intra_gbps if one_server else inst.inter_gbps
        volume = 2.0 * (n - 1) / n if inst.communication == "ring" else 2.0 * (n - 1)
        comm = volume * float(inst.model_size_mb[i]) * 8.0 / 1000.0 / r
        jcts.append(float(inst.iterations[i]) * (compute + comm))
    return jcts, bad


def check_placement(inst, placement, claimed_objective: float | None = None) -> CheckReport:
    """Verify a placement (MODELS.md §4.1) and recompute the average JCT from the instance alone.

    Checks: one job index (or -1) per GPU, so each GPU serves at most one job; every job gets
    between 1 and ``max_workers`` GPUs; per-GPU samples are the instance's split of the global
    batch; the claimed objective equals the recomputed average JCT.
    """
    K = int(sum(int(c) for c in inst.server_gpus))
    gpu_job, why = _integers(getattr(placement, "gpu_job", None), "gpu_job", 1)
    workload, why2 = _finite_numbers(getattr(placement, "workload", None), "workload", 1)
    if why or why2:
        return CheckReport(False, None, [why or why2])
    if gpu_job.shape != (K,) or workload.shape != (K,):
        return CheckReport(False, None, [f"placement covers {gpu_job.shape} GPUs / {workload.shape} loads, the cluster has {K}"])
    n = len(inst.job_names)
    out = [int(x) for x in gpu_job if not -1 <= int(x) < n]
    if out:
        return CheckReport(False, None, [f"GPU assigned to job index {out[0]}, jobs are 0..{n - 1} (or -1 idle)"])
    idle = np.flatnonzero((gpu_job < 0) & (np.abs(workload) > ABS_TOL))
    bad = [f"idle GPU {int(k)} has a workload {workload[k]:g}" for k in idle[:3]]
    jcts, more = placement_jcts(inst, gpu_job, workload)
    bad += more
    total = float(np.mean(jcts))
    bad += _claim(claimed_objective, total, "average JCT", "the placement gives")
    return CheckReport(not bad, total, bad)


def checker(family: str):
    """The checker function of ``family`` (its registry line's ``checker``), or None for no such family."""
    entry = FAMILIES.get(family) if isinstance(family, str) else None
    return globals()[entry.checker] if entry is not None else None


def check(instance: Any, solution: Any, claimed_objective: float | None = None) -> CheckReport:
    """Check ``solution`` against ``instance`` with the checker of the instance's family."""
    family = getattr(instance, "family", None)
    fn = checker(family)
    if fn is None:
        raise InputError("<argument>", "instance", f"an instance of a family with a checker ({', '.join(sorted(FAMILIES))})",
                         f"family {family!r}" if family is not None else type(instance).__name__)
    return fn(instance, solution, claimed_objective)

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
    gpu_job = np.asarray(getattr(placement, "gpu_job", []))
    workload = np.asarray(getattr(placement, "workload", []), dtype=float)
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
    if claimed_objective is not None and np.isfinite(total) and abs(claimed_objective - total) > 1e-6 * max(1.0, abs(total)):
        bad.append(f"claimed average JCT {claimed_objective:g} but the placement gives {total:g}")
    return CheckReport(not bad, total, bad)


CHECKERS: dict[str, Callable[..., CheckReport]] = {"mcmdk": check_mcmdk, "placement": check_placement}


def check(instance: Any, solution: Any, claimed_objective: float | None = None) -> CheckReport:
    """Check ``solution`` against ``instance`` with the checker of the instance's family."""
    fn = CHECKERS.get(instance.family)
    if fn is None:
        raise KeyError(f"no checker for family '{instance.family}'")
    return fn(instance, solution, claimed_objective)

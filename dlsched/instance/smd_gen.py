"""Seeded generator of SMD instances with DL2's and Optimus's job mixes (MODELS.md §2, §5, §6).

* Job types: DL2's eight models, uniformly at random (DL2's simulator draws the type uniformly;
  Optimus's testbed also uses a uniform mix of its job types).
* Demands: DL2's resource slots from ``shared/data/dl2/job_types.csv`` (per worker: 2 CPU slots,
  4 GPU slots = 1 GPU, or no GPU for cnn-text-classification and dssm; per PS: 2 CPU slots);
  a server has 8 CPU and 8 GPU slots (DL2's node).
* Lengths: DL2's ``epochs_fraction_of_max`` fixes the relative length of each type; job j needs
  ``R_j = L_j Δ / τ_j(1, 1)`` iterations, ``L_j = fraction · max_len_slots · U(0.5, 1.5)`` (its
  length in slots on one worker and one PS), so ``max_len_slots`` sets the absolute scale.
* Arrivals (slots): ``mix="dl2"`` a Poisson process of rate ``arrival_rate`` jobs per slot
  (exponential gaps, floored to slots, the first job at 0); ``mix="optimus"`` uniform over a window
  of ``n_jobs / arrival_rate`` slots. ``arrival_rate=None`` puts every job at slot 0 (a batch).
"""

from __future__ import annotations

import csv
import math

import numpy as np

from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance.fields import count_argument
from dlsched.instance.smd import SMDInstance, SMDOptions
from dlsched.perf.layered import iteration_time
from dlsched.perf.profiles import MEASURED_BATCH, MODELS, builtin

MIXES = ("dl2", "optimus")
RESOURCES = ("gpu", "cpu")
SERVER_SLOTS = {"gpu": 8.0, "cpu": 8.0}


def job_types() -> dict[str, dict]:
    """DL2's job-type table (``dl2/job_types.csv``) as a dict by model name."""
    with open(data_dir() / "dl2" / "job_types.csv") as f:
        return {r["model"]: {k: (float(v) if k != "model" else v) for k, v in r.items()} for r in csv.DictReader(f)}


def generate(n_jobs: int, n_servers: int, *, mix: str = "dl2", seed: int = 0, slot_seconds: float = 1200.0,
             max_len_slots: float = 6.0, arrival_rate: float | None = 1.0, max_workers: int = 16, max_ps: int = 16,
             horizon: int | None = None, options: SMDOptions | None = None, name: str | None = None) -> SMDInstance:
    """An SMD instance with ``n_jobs`` jobs on ``n_servers`` DL2 nodes (every random choice from ``seed``)."""
    if mix not in MIXES:
        raise InputError("<argument>", "mix", f"one of {MIXES}", mix)
    for arg, val, lo in (("n_jobs", n_jobs, 0), ("n_servers", n_servers, 1), ("max_workers", max_workers, 1),
                         ("max_ps", max_ps, 1), ("seed", seed, 0)):
        count_argument(arg, val, lo)
    rng = np.random.default_rng(seed)
    table = job_types()
    types = [MODELS[i] for i in rng.integers(0, len(MODELS), n_jobs)]
    frac = np.array([table[t]["epochs_fraction_of_max"] for t in types])
    length = frac * max_len_slots * rng.uniform(0.5, 1.5, n_jobs)
    batch = np.array([MEASURED_BATCH[t] for t in types], dtype=float)
    opts = options or SMDOptions(max_workers=max_workers, max_ps=max_ps)
    tau11 = np.array([float(iteration_time(builtin(t), b, 1, 1, opts.overlap)) for t, b in zip(types, batch)])
    iterations = np.maximum(1.0, np.round(length * slot_seconds / tau11))
    if arrival_rate is None:
        arrival = np.zeros(n_jobs)
    elif mix == "dl2":
        gaps = rng.exponential(1.0 / arrival_rate, n_jobs)
        gaps[0] = 0.0
        arrival = np.floor(np.cumsum(gaps))
    else:
        window = max(1, math.ceil(n_jobs / arrival_rate))
        arrival = np.sort(rng.integers(0, window, n_jobs)).astype(float)
        if n_jobs:
            arrival -= arrival[0]
    d = np.array([[table[t]["worker_gpu_slots"], table[t]["worker_cpu_slots"]] for t in types]).reshape(n_jobs, 2)
    e = np.array([[table[t]["ps_gpu_slots"], table[t]["ps_cpu_slots"]] for t in types]).reshape(n_jobs, 2)
    cap = np.tile([SERVER_SLOTS[r] for r in RESOURCES], (n_servers, 1))
    return SMDInstance(
        name=name or f"smd-{mix}-n{n_jobs}-s{n_servers}-seed{seed}", resources=RESOURCES, server_cap=cap,
        server_names=tuple(f"node{s}" for s in range(n_servers)), profiles={t: builtin(t) for t in set(types)},
        job_names=tuple(f"j{i}-{t}" for i, t in enumerate(types)), job_type=tuple(types), batch=batch,
        iterations=iterations, weight=np.ones(n_jobs), arrival=arrival, d=d, e=e,
        max_workers=np.full(n_jobs, opts.max_workers), max_ps=np.full(n_jobs, opts.max_ps), options=opts,
        slot_seconds=slot_seconds, horizon=horizon,
        meta={"generator": "dlsched.instance.smd_gen.generate", "mix": mix, "seed": seed, "max_len_slots": max_len_slots,
              "arrival_rate": arrival_rate})

"""Seeded generator of oasis instances (MODELS.md §3.3; choices in docs/oasis.md).

``preset="paper"`` draws every job parameter from the ranges of the paper's simulation:
worker demand 0–4 GPU, 1–10 vCPU, 2–32 GB; PS demand 1–10 vCPU, 2–32 GB; b 0.1–5 Gbps,
B 5–20 Gbps; E 50–200, N 5–100, M 10–100, tau 0.001–0.1 slots, e 30–575 MB; sigmoid utility
with gamma1 in [1, 100], gamma3 in [1, 15] and the job mix 10% time-insensitive (gamma2 = 0),
55% time-sensitive (gamma2 in [0.01, 1]), 35% time-critical (gamma2 in [4, 6]).
Server capacities are not given by the paper: ours are named options (``WORKER_SERVER``,
``PS_SERVER``). ``preset="small"`` scales jobs down so that 10 of them fit T = 10 slots on
3–12 servers (the competitive-ratio setting of the paper's Fig. 5).

Arrivals: ``"poisson"`` (exponential inter-arrival times at rate n / window) or ``"trace"``
(the submit times of the Tiresias 60-job trace in the shared data, cycled and rescaled to
the window).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field, replace

import numpy as np

from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance.fields import count_argument
from dlsched.instance.oasis import OasisInstance, Utility

RESOURCES = ("gpu", "cpu", "mem_gb")
#: our choice (the paper does not give server sizes): an 8-GPU worker server and a CPU-only PS server
WORKER_SERVER = {"gpu": 8.0, "cpu": 48.0, "mem_gb": 192.0}
PS_SERVER = {"gpu": 0.0, "cpu": 48.0, "mem_gb": 192.0}
MIX = (("time-insensitive", 0.10), ("time-sensitive", 0.55), ("time-critical", 0.35))


@dataclass(frozen=True)
class Ranges:
    """Closed ranges [lo, hi] that job parameters are drawn from (uniformly)."""

    epochs: tuple[int, int] = (50, 200)
    chunks: tuple[int, int] = (5, 100)
    minibatches: tuple[int, int] = (10, 100)
    tau: tuple[float, float] = (0.001, 0.1)
    grad_mb: tuple[float, float] = (30.0, 575.0)
    worker_gbps: tuple[float, float] = (0.1, 5.0)
    ps_gbps: tuple[float, float] = (5.0, 20.0)
    worker_gpu: tuple[int, int] = (0, 4)
    worker_cpu: tuple[int, int] = (1, 10)
    worker_mem: tuple[int, int] = (2, 32)
    ps_cpu: tuple[int, int] = (1, 10)
    ps_mem: tuple[int, int] = (2, 32)
    gamma1: tuple[float, float] = (1.0, 100.0)
    gamma3: tuple[float, float] = (1.0, 15.0)
    gamma2_sensitive: tuple[float, float] = (0.01, 1.0)
    gamma2_critical: tuple[float, float] = (4.0, 6.0)
    worker_server: dict = field(default_factory=lambda: dict(WORKER_SERVER))
    ps_server: dict = field(default_factory=lambda: dict(PS_SERVER))
    slot_seconds: float = 3600.0


PAPER = Ranges()
SMALL = replace(PAPER, epochs=(1, 2), chunks=(1, 4), minibatches=(1, 3), tau=(0.2, 0.6), grad_mb=(30.0, 575.0),
                gamma3=(1.0, 8.0), worker_server={"gpu": 4.0, "cpu": 16.0, "mem_gb": 64.0},
                ps_server={"gpu": 0.0, "cpu": 16.0, "mem_gb": 64.0}, slot_seconds=60.0)
PRESETS = {"paper": PAPER, "small": SMALL}


def trace_arrivals(n: int, window: int, rng: np.random.Generator) -> np.ndarray:
    """Arrival slots from the Tiresias 60-job trace (submit_time column), cycled, rescaled to 1..window."""

    path = data_dir() / "tiresias" / "60_job.csv"
    with open(path) as fh:
        times = np.array(sorted(float(r["submit_time"]) for r in csv.DictReader(fh)))
    reps = -(-n // len(times))
    span = times[-1] - times[0] + 1.0
    seq = np.concatenate([times - times[0] + k * span for k in range(reps)])[:n]
    return 1 + np.floor(seq / (seq[-1] + 1e-9) * (window - 1)).astype(np.int64)


def generate(n_jobs: int, *, horizon: int = 300, worker_servers: int = 50, ps_servers: int = 50,
             preset: str | Ranges = "paper", arrivals: str = "poisson", arrival_window: int | None = None,
             seed: int = 0, mix=MIX, name: str | None = None) -> OasisInstance:
    """A seeded oasis instance; every random choice comes from ``numpy.random.default_rng(seed)``."""
    for arg, val, lo in (("n_jobs", n_jobs, 1), ("horizon", horizon, 1), ("worker_servers", worker_servers, 1),
                         ("ps_servers", ps_servers, 1), ("seed", seed, 0)):
        count_argument(arg, val, lo)
    rg = PRESETS.get(preset) if isinstance(preset, str) else preset
    if rg is None:
        raise InputError("<argument>", "preset", f"one of {', '.join(PRESETS)}", preset)
    rng = np.random.default_rng(seed)
    window = int(arrival_window or horizon)
    n = int(n_jobs)
    if arrivals == "poisson":
        gaps = rng.exponential(window / max(n, 1), size=n)
        arr = 1 + np.floor(np.cumsum(gaps) - gaps[0]).astype(np.int64)
        arr = np.minimum(arr, window)
    elif arrivals == "trace":
        arr = trace_arrivals(n, window, rng)
    else:
        raise InputError("<argument>", "arrivals", "'poisson' or 'trace'", arrivals)
    arr = np.minimum(arr, horizon)

    def ui(r):
        return rng.integers(r[0], r[1] + 1, size=n)

    def uf(r):
        return rng.uniform(r[0], r[1], size=n)

    epochs, chunks, mb = ui(rg.epochs), ui(rg.chunks), ui(rg.minibatches)
    tau, grad, b, B = uf(rg.tau), uf(rg.grad_mb), uf(rg.worker_gbps), uf(rg.ps_gbps)
    wd = np.column_stack([ui(rg.worker_gpu), ui(rg.worker_cpu), ui(rg.worker_mem)]).astype(float)
    pd = np.column_stack([np.zeros(n), ui(rg.ps_cpu), ui(rg.ps_mem)]).astype(float)
    labels, probs = zip(*mix)
    cls = rng.choice(len(labels), size=n, p=np.array(probs) / sum(probs))
    g1, g3 = uf(rg.gamma1), uf(rg.gamma3)
    g2s, g2c = uf(rg.gamma2_sensitive), uf(rg.gamma2_critical)
    utils = []
    for i in range(n):
        g2 = {"time-insensitive": 0.0, "time-sensitive": g2s[i], "time-critical": g2c[i]}[labels[cls[i]]]
        utils.append(Utility("sigmoid", {"gamma1": round(float(g1[i]), 4), "gamma2": round(float(g2), 4),
                                         "gamma3": round(float(g3[i]), 4)}))
    wcap = np.tile([rg.worker_server.get(r, 0.0) for r in RESOURCES], (worker_servers, 1))
    pcap = np.tile([rg.ps_server.get(r, 0.0) for r in RESOURCES], (ps_servers, 1))
    return OasisInstance(
        resources=RESOURCES, horizon=int(horizon), worker_cap=wcap, ps_cap=pcap, arrival=arr,
        chunks=chunks, minibatches=mb, epochs=epochs, tau=np.round(tau, 5), grad_mb=np.round(grad, 2),
        worker_gbps=np.round(b, 3), ps_gbps=np.round(B, 3), worker_demand=wd, ps_demand=pd,
        utilities=tuple(utils), slot_seconds=rg.slot_seconds,
        name=name or f"oasis-{preset if isinstance(preset, str) else 'custom'}-n{n}-T{horizon}-s{seed}",
        job_classes=tuple(labels[c] for c in cls),
        meta={"generator": "dlsched.instance.oasis_gen", "seed": int(seed), "preset": preset if isinstance(preset, str) else "custom",
              "arrivals": arrivals})


def small(seed: int, n_jobs: int = 10, horizon: int = 10) -> OasisInstance:
    """A competitive-ratio instance: 10 jobs, T = 10, 3–12 servers in all (MODELS.md §3.3)."""
    rng = np.random.default_rng(10_000 + seed)
    total = int(rng.integers(3, 13))
    w = int(rng.integers(max(1, total // 2 - 1), total - 1 + 1)) if total > 2 else 1
    w = min(max(w, 1), total - 1)
    return generate(n_jobs, horizon=horizon, worker_servers=w, ps_servers=total - w, preset="small",
                    arrival_window=max(1, horizon // 2), seed=seed, name=f"oasis-small-s{seed}")

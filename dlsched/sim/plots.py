"""Figures of simulated runs (matplotlib, Agg backend): JCT CDF per policy, utilisation over time."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from dlsched.sim.metrics import SimResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def jct_cdf(results: Sequence[SimResult], path: str | Path, title: str = "") -> Path:
    """Empirical CDF of the completed jobs' JCT, one line per run (labelled by its policy)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for res in results:
        jct = np.sort(res.jct[res.completed])
        if jct.size:
            ax.step(jct, np.arange(1, jct.size + 1) / jct.size, where="post", label=res.policy)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    return _finish(plt, fig, ax, path, title, results)


def _finish(plt, fig, ax, path, title, results) -> Path:
    ax.set_title(title or (results[0].trace if results else ""), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def utilisation(results: Sequence[SimResult], path: str | Path, resource: str = "gpu", title: str = "") -> Path:
    """Share of ``resource`` held over simulated time, one step line per run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for res in results:
        if resource not in res.resources:
            continue
        t, share = res.utilisation_series(resource)
        if t.size:
            ax.step(np.append(t, res.segments[-1, 1]) / 3600, np.append(share, share[-1]), where="post",
                    label=res.policy, lw=0.8)
    ax.set_xlabel("simulated time (h)")
    ax.set_ylabel(f"{resource} utilisation")
    ax.set_ylim(0, 1.05)
    return _finish(plt, fig, ax, path, title, results)


def write_figures(results: Sequence[SimResult], directory: str | Path) -> list[Path]:
    """jct_cdf.png and utilisation.png (GPU, or the first resource) in ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    resource = "gpu" if results and "gpu" in results[0].resources else (results[0].resources[0] if results else "gpu")
    return [jct_cdf(results, d / "jct_cdf.png"), utilisation(results, d / "utilisation.png", resource)]

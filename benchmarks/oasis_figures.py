"""Figures of docs/results.md (OASiS section) from the JSON of ``dlsched bench oasis --json``.

    python benchmarks/oasis_figures.py results/oasis/full.json docs/figures

writes oasis_ratio.png (offline optimum / OASiS per small instance, with the 2α bound),
oasis_paper.png (paper setting: total utility of every method per instance, with the pooled
upper bound on the offline optimum) and copies the sensitivity figure the benchmark drew.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src: str, out: str) -> int:
    doc = json.loads(Path(src).read_text())
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if doc.get("ratio_study"):          # absent when the run was limited with --parts
        _ratio_figure(doc["ratio_study"]["instances"], out_dir)
    if doc.get("paper_setting"):
        _paper_figure(doc["paper_setting"], out_dir)
    sens = doc.get("sensitivity") or {}
    if sens.get("figure") and Path(sens["figure"]).is_file():
        shutil.copy(sens["figure"], out_dir / "oasis_sensitivity.png")
    return 0


def _ratio_figure(rows: list, out_dir: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    xs = [r["seed"] for r in rows]
    ax.plot(xs, [r["ratio"] for r in rows], "o", label="offline optimum / OASiS")
    ax.plot(xs, [r["bound_2alpha"] for r in rows], "_", ms=12, color="C3", label="2α bound")
    ax.set_yscale("log")
    ax.set_xlabel("instance (seed), 10 jobs, T = 10, 3–12 servers")
    ax.set_ylabel("ratio")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "oasis_ratio.png", dpi=120)
    plt.close(fig)


def _paper_figure(rows: list, out_dir: Path) -> None:
    import numpy as np

    methods = [m for m in ("oasis", "oasis_lest", "risk_reward", "risk_reward_preemptive", "dorm", "drf", "fifo") if m in rows[0]]
    x = np.arange(len(rows))
    width = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for k, m in enumerate(methods):
        ax.bar(x - 0.4 + (k + 0.5) * width, [r[m]["utility"] for r in rows], width, label=m)
    ax.hlines([r["upper_bound"]["utility"] for r in rows], x - 0.45, x + 0.45, colors="k", lw=2,
              label="upper bound on the offline optimum")
    ax.set_xticks(x, [f"{r['jobs']} jobs\nseed {r['seed']}" for r in rows])
    ax.set_ylabel("total utility")
    ax.set_title("Paper setting (T = 300, 50 + 50 servers)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(out_dir / "oasis_paper.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))

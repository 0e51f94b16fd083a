"""Regenerate the SMD figures quoted in docs/results.md.

    PYTHONPATH=$PWD python -m dlsched bench smd --json > smd.json
    PYTHONPATH=$PWD python benchmarks/smd_figures.py smd.json docs/figures

Writes ``smd-calibration.png`` (measured against modelled throughput, every DL2 grid point, both
the layered model and Optimus's fit) and ``smd-gaps.png`` (per-instance gaps to the time-indexed
optimum, sorted, per method).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def calibration_figure(out: Path) -> None:
    from dlsched.perf.layered import throughput
    from dlsched.perf.optimus_fit import fit_sync
    from dlsched.perf.profiles import builtin
    from dlsched.perf.speeds import read_config_speed

    tables, _ = read_config_speed()
    fig, axes = plt.subplots(2, 4, figsize=(14, 6.5))
    for ax, (m, tb) in zip(axes.ravel(), tables.items()):
        lay = throughput(builtin(m), tb.batch, tb.w, tb.p)
        opt = fit_sync(tb).speed(tb.p, tb.w)
        ax.scatter(tb.g, lay, s=9, label="layered (§2.1)")
        ax.scatter(tb.g, opt, s=9, marker="x", alpha=0.6, label="Optimus f(p, w)")
        lim = [0, 1.05 * max(tb.g.max(), lay.max(), opt.max())]
        ax.plot(lim, lim, "k--", lw=0.8)
        ax.set_xlim(lim)
        ax.set_ylim(lim)
        ax.set_title(m, fontsize=10)
        ax.set_xlabel("measured iterations/s", fontsize=8)
        ax.set_ylabel("model iterations/s", fontsize=8)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("DL2 config_speed.txt: measured vs modelled throughput over the (PS, worker) grid")
    fig.tight_layout()
    fig.savefig(out / "smd-calibration.png", dpi=80)
    plt.close(fig)


def gaps_figure(doc: dict, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    for m, label in (("smd", "SMD"), ("smd_lp", "SMD, LP-rounding subproblems"), ("optimus", "Optimus greedy"),
                     ("drf", "DRF")):
        g = np.sort([100 * r[f"gap_{m}"] for r in doc["gap_rows"]])
        ax.plot(np.arange(1, g.size + 1), g, marker="o", ms=3, label=f"{label} (mean {g.mean():.2f}%)")
    ax.set_xlabel("instance (sorted by gap)")
    ax.set_ylabel("gap to the time-indexed optimum (%)")
    ax.set_title(f"{doc['instances']} small instances, re-planning at every arrival and completion", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "smd-gaps.png", dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    doc = json.loads(Path(argv[0]).read_text())
    out = Path(argv[1] if len(argv) > 1 else "docs/figures")
    out.mkdir(parents=True, exist_ok=True)
    calibration_figure(out)
    gaps_figure(doc, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

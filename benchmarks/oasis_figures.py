"""Figures of docs/results.md (OASiS section) from the JSON of ``dlsched bench oasis --json``.

    python benchmarks/oasis_figures.py results/oasis/full.json docs/figures

writes oasis_ratio.png (offline optimum / OASiS per small instance, with the 2α bound) and copies
the sensitivity figure the benchmark drew.
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
    rows = doc["ratio_study"]["instances"]
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
    sens = doc.get("sensitivity") or {}
    if sens.get("figure") and Path(sens["figure"]).is_file():
        shutil.copy(sens["figure"], out_dir / "oasis_sensitivity.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))

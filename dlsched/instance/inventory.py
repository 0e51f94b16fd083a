"""An inventory of the reference data's traces and clusters as dlsched loads them (docs/simulator-data.md).

It reads both the trace importers and the cluster readers, which is why it lives apart from either.
"""

from __future__ import annotations

from pathlib import Path

from dlsched.data import data_dir
from dlsched.instance.cluster_spec import load_cluster
from dlsched.instance.traces import _read_lines, load_trace, trace_format


def data_table(root: str | Path | None = None) -> str:
    """A Markdown table of every trace and cluster file of the reference data as loaded
    (``python -m dlsched.instance.inventory``; docs/simulator-data.md)."""
    if root is None:
        root = data_dir()
    root = Path(root)
    out = ["| file | format | rows in file | jobs loaded | GPU jobs | GPUs asked (max) | last arrival (s) |",
           "|---|---|---:|---:|---:|---:|---:|"]
    files = sorted((root / "gavel").glob("*.trace")) + sorted((root / "tiresias").glob("*_job.csv")) + sorted(
        (root / "alibaba-openb").glob("openb_pod_list_*.csv")) + sorted((root / "microsoft-itp").glob("*.csv"))
    for f in files:
        text = [ln for ln in _read_lines(f, "a trace file") if ln.strip()]
        rows = len(text) - (0 if f.suffix == ".trace" else 1)
        t = load_trace(f)
        gpus = [j.max_workers * j.worker_demand.get("gpu", 0.0) for j in t.jobs]
        out.append(f"| {f.relative_to(root)} | {trace_format(f)} | {rows} | {len(t)} | {sum(g > 0 for g in gpus)} | "
                   f"{max(gpus):g} | {t.jobs[-1].arrival:.0f} |")
    out += ["", "| cluster file | servers | GPUs | GPU types |", "|---|---:|---:|---|"]
    clusters = [root / "gavel" / "cluster_specs.json", *sorted((root / "alibaba-openb").glob("openb_node_list_*.csv")),
                *sorted(p for p in (root / "tiresias").glob("*.csv") if not p.name.endswith("_job.csv"))]
    for f in clusters:
        c = load_cluster(f)
        types = sorted({g for g in c.gpu_type if g})
        out.append(f"| {f.relative_to(root)} | {c.n_servers} | {c.total()[c.index('gpu')]:g} | {', '.join(types) or '-'} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(data_table())

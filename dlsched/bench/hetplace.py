"""``dlsched bench hetplace``: the §4.3 pipeline against the exact optimum (MODELS.md §4).

For seeded Gavel instances (n jobs on n K80 + n P100 + n V100 GPUs, 4 per server) it runs
the exact MCMDK (1 thread, a time limit), then ``hetplace`` for every sample budget N, the
greedy baseline, and the equal-split comparison; then one scale run (256 jobs, 1,024 GPUs).
Reports per N: mean and max gap of the average JCT to the optimum, run time and Jain's
fairness; the speedup over the exact method on the largest instances; and, with ``--json``,
one JSON object on stdout. Timing is wall time of the whole method (build + solve).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
from rich.table import Table

import dlsched
from dlsched.bench import environment, register_suite
from dlsched.console import table_console
from dlsched.instance.placement_gen import generate
from dlsched.solvers.hetplace import DEFAULT_SAMPLES

FULL_SIZES = (8, 16, 32, 64, 128, 256)
QUICK_SIZES = (8, 16, 32)
FULL_SAMPLES = (1, 2, 4, 8, 16, 32)
QUICK_SAMPLES = (1, 4, 8, 16)


def _timed(inst, method, **kw):
    t = time.perf_counter()
    res = dlsched.solve(inst, method=method, **kw)
    wall = time.perf_counter() - t
    rep = dlsched.check(inst, res)
    if res.solution is not None and not rep.feasible:
        raise AssertionError(f"{method} on {inst.name}: checker rejected: {rep.violations[:3]}")
    return res, wall


def run(sizes, seeds, samples_list, default_n, time_limit, scale: bool, equal_upto: int, log=None) -> dict:
    rows = []
    for n in sizes:
        for seed in seeds:
            inst = generate(n, {"k80": n, "p100": n, "v100": n}, seed=seed)
            ex, ex_t = _timed(inst, "exact", threads=1, time_limit=time_limit)
            row = {"n_jobs": n, "n_gpus": inst.n_gpus, "seed": seed, "exact_status": ex.status.value,
                   "exact_objective": ex.objective, "exact_bound": ex.bound, "exact_seconds": ex_t,
                   "exact_jain": ex.stats.get("jain_fairness"), "hetplace": {}}
            for N in samples_list:
                h, h_t = _timed(inst, "hetplace", samples=N, seed=seed)
                row["hetplace"][N] = {"objective": h.objective, "seconds": h_t, "jain": h.stats["jain_fairness"],
                                      "bound": h.bound, "gap": h.objective / ex.objective - 1 if ex.objective else None}
            g, g_t = _timed(inst, "greedy")
            row["greedy"] = {"objective": g.objective, "seconds": g_t, "gap": g.objective / ex.objective - 1, "jain": g.stats["jain_fairness"]}
            if n <= equal_upto:
                eq = dataclasses.replace(inst, workload="equal")
                eq_ex, _ = _timed(eq, "exact", threads=1, time_limit=time_limit)
                eq_h, _ = _timed(eq, "hetplace", samples=default_n, seed=seed)
                p = ex.solution
                mixed = bool(any(len(set(inst.gpu_type[p.gpus_of(i)].tolist())) > 1 for i in range(inst.n_jobs)))
                row["equal_split"] = {"exact": eq_ex.objective, "hetplace": eq_h.objective, "optimum_mixes_types": mixed}
            rows.append(row)
            if log:
                d = row["hetplace"][default_n]
                log(f"n={n:4d} K={inst.n_gpus:4d} seed={seed} exact {ex_t:7.2f}s ({ex.status.value})  "
                    f"hetplace[N={default_n}] {d['seconds']:.3f}s gap {100 * d['gap']:.3f}%  greedy gap {100 * row['greedy']['gap']:.2f}%")
    out = {"rows": rows}
    if scale:
        inst = generate(256, {"k80": 342, "p100": 341, "v100": 341}, seed=0)
        h, h_t = _timed(inst, "hetplace", samples=default_n, seed=0)
        out["scale"] = {"n_jobs": 256, "n_gpus": inst.n_gpus, "types": 3, "seconds": h_t, "objective": h.objective,
                        "bound": h.bound, "bound_gap": h.objective / h.bound - 1, "jain": h.stats["jain_fairness"],
                        "samples": default_n}
        if log:
            log(f"scale: 256 jobs on {inst.n_gpus} GPUs: {h_t:.2f}s, within {100 * (h.objective / h.bound - 1):.3f}% of the Lagrangian bound")
    return out


def summarise(out: dict, samples_list, default_n) -> dict:
    rows = [r for r in out["rows"] if r["exact_status"] == "optimal"]
    curve = []
    largest = max(r["n_jobs"] for r in rows)
    big = [r for r in rows if r["n_jobs"] == largest]
    for N in samples_list:
        gaps = np.array([r["hetplace"][N]["gap"] for r in rows])
        curve.append({"samples": N, "mean_gap": float(gaps.mean()), "max_gap": float(gaps.max()),
                      "mean_seconds": float(np.mean([r["hetplace"][N]["seconds"] for r in rows])),
                      "largest_mean_seconds": float(np.mean([r["hetplace"][N]["seconds"] for r in big])),
                      "jain_fairness_mean": float(np.mean([r["hetplace"][N]["jain"] for r in rows]))})
    ex_t = float(np.mean([r["exact_seconds"] for r in big]))
    h_t = float(np.mean([r["hetplace"][default_n]["seconds"] for r in big]))
    d = next(c for c in curve if c["samples"] == default_n)
    eq = [r["equal_split"] for r in out["rows"] if "equal_split" in r]
    summary = {
        "samples": default_n, "instances": len(rows), "instances_total": len(out["rows"]),
        "mean_gap": d["mean_gap"], "max_gap": d["max_gap"], "jain_fairness_mean": d["jain_fairness_mean"],
        "speedup_vs_exact": ex_t / h_t, "largest": {"n_jobs": largest, "n_gpus": big[0]["n_gpus"], "instances": len(big),
                                                    "exact_seconds_mean": ex_t, "exact_seconds_max": float(max(r["exact_seconds"] for r in big)),
                                                    "hetplace_seconds_mean": h_t},
        "greedy_mean_gap": float(np.mean([r["greedy"]["gap"] for r in rows])),
        "exact_jain_fairness_mean": float(np.mean([r["exact_jain"] for r in rows])),
        "curve": curve,
    }
    if eq:
        opt = [(r["exact_objective"], r["equal_split"]) for r in out["rows"] if "equal_split" in r]
        summary["proportional_vs_equal"] = {
            "instances": len(opt),
            "optimum_strictly_better": int(sum(p < e["exact"] * (1 - 1e-9) for p, e in opt)),
            "optimum_mixes_types": int(sum(e["optimum_mixes_types"] for _, e in opt)),
            "optimum_never_worse": bool(all(p <= e["exact"] * (1 + 1e-9) for p, e in opt)),
            "mean_reduction_of_optimum": float(np.mean([1 - p / e["exact"] for p, e in opt])),
            "max_reduction_of_optimum": float(np.max([1 - p / e["exact"] for p, e in opt])),
        }
    if "scale" in out:
        summary["scale"] = out["scale"]
    return summary


def replot(rows_json: str | Path, outdir: Path, samples_list=FULL_SAMPLES, default_n: int = 8) -> Path:
    """Redraw the figure from a saved ``rows.json`` (JSON turns the N keys into strings)."""
    out = json.loads(Path(rows_json).read_text())
    for r in out["rows"]:
        r["hetplace"] = {int(k): v for k, v in r["hetplace"].items()}
    return plot(summarise(out, samples_list, default_n), outdir)


def plot(summary: dict, outdir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c = summary["curve"]
    N = [x["samples"] for x in c]
    fig, ax = plt.subplots(1, 3, figsize=(12, 3.4))
    ax[0].plot(N, [100 * x["mean_gap"] for x in c], "o-", label="mean")
    ax[0].plot(N, [100 * x["max_gap"] for x in c], "s--", label="max")
    ax[0].set(xscale="log", xlabel="samples N", ylabel="gap to optimum avg JCT (%)", title="gap")
    ax[0].legend()
    big = summary["largest"]["n_jobs"]
    ax[1].plot(N, [x["mean_seconds"] for x in c], "o-", label="hetplace, all sizes")
    ax[1].plot(N, [x["largest_mean_seconds"] for x in c], "s-", label=f"hetplace, n={big}")
    ax[1].axhline(summary["largest"]["exact_seconds_mean"], color="r", ls=":", label=f"exact, n={big}")
    ax[1].set(xscale="log", yscale="log", xlabel="samples N", ylabel="seconds (mean)", title="run time")
    ax[1].legend()
    ax[2].plot(N, [x["jain_fairness_mean"] for x in c], "o-", label="hetplace")
    ax[2].axhline(summary["exact_jain_fairness_mean"], color="r", ls=":", label="exact")
    ax[2].set(xscale="log", xlabel="samples N", ylabel="Jain's index of slowdowns", title="fairness", ylim=(0, 1))
    ax[2].legend()
    fig.tight_layout()
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / "hetplace_curve.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


@register_suite("hetplace")
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched bench hetplace", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, 2 seeds, N in {QUICK_SAMPLES}")
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ap.add_argument("--out", default="results/hetplace", help="folder for the figure and the raw rows")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per size (default 5, quick 2)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="exact method's limit in seconds")
    ap.add_argument("--no-scale", action="store_true", help="skip the 256-job / 1,024-GPU run")
    args = ap.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    samples_list = QUICK_SAMPLES if args.quick else FULL_SAMPLES
    seeds = range(args.seeds if args.seeds is not None else (2 if args.quick else 5))
    log = (lambda s: print(s, file=sys.stderr, flush=True))  # progress on stderr; stdout holds only the JSON
    out = run(sizes, list(seeds), samples_list, DEFAULT_SAMPLES, args.time_limit, not args.no_scale,
              equal_upto=64, log=log)
    summary = summarise(out, samples_list, DEFAULT_SAMPLES)
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "rows.json").write_text(json.dumps(out, indent=1, default=str))
    fig = plot(summary, outdir)
    env = environment(seed=list(seeds), time_limit=args.time_limit, threads=1, sizes=list(sizes))
    if args.json:
        print(json.dumps({**summary, "figure": str(fig), "environment": env}))
        return 0

    t = Table(title=f"hetplace vs exact ({summary['instances']} instances, largest n={summary['largest']['n_jobs']})")
    for col in ("N", "mean gap %", "max gap %", "mean s", "Jain"):
        t.add_column(col, justify="right")
    for c in summary["curve"]:
        t.add_row(str(c["samples"]), f"{100 * c['mean_gap']:.3f}", f"{100 * c['max_gap']:.3f}", f"{c['mean_seconds']:.3f}",
                  f"{c['jain_fairness_mean']:.3f}")
    con = table_console()
    con.print(t)
    con.print(f"speedup vs exact at N={summary['samples']} on the largest instances: {summary['speedup_vs_exact']:.1f}x "
              f"(exact {summary['largest']['exact_seconds_mean']:.2f}s, hetplace {summary['largest']['hetplace_seconds_mean']:.3f}s)")
    if "scale" in summary:
        s = summary["scale"]
        con.print(f"scale: {s['n_jobs']} jobs on {s['n_gpus']} GPUs in {s['seconds']:.2f}s")
    con.print(f"figure: {fig}")
    return 0

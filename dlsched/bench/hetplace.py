"""``dlsched bench hetplace``: the §4.3 pipeline against the exact optimum (MODELS.md §4).

For seeded Gavel instances (n jobs on n K80 + n P100 + n V100 GPUs, 4 per server) it runs
the exact MCMDK (1 thread, a time limit), then ``hetplace`` for every sample budget N, the
greedy baseline, and the equal-split comparison; then one scale run (256 jobs, 1,024 GPUs).
Sizes, seeds and budgets are those of the suite file ``hetplace`` (``hetplace-quick`` with
``--quick``; ``dlsched/bench/suites/``), one ``hetplace.instance`` cell per (n, seed).
Reports per N: mean and max gap of the average JCT to the optimum, run time and Jain's
fairness; the speedup over the exact method on the largest instances; and, with ``--json``,
one JSON object on stdout. Timing is wall time of the whole method (build + solve).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
from rich.table import Table

from dlsched import api
from dlsched.bench import environment, register_suite
from dlsched.bench.runner import run_suite
from dlsched.bench.suite import suite_from_definition
from dlsched.bench.tasks import failures, grid_values, load_definition, results_of, with_grid, with_params, with_settings
from dlsched.console import table_console
from dlsched.errors import InputError
from dlsched.instance.placement_gen import generate
from dlsched.solvers.hetplace import DEFAULT_SAMPLES

#: the sample budgets of the full suite (dlsched/bench/suites/hetplace.toml), for :func:`replot`
FULL_SAMPLES = (1, 2, 4, 8, 16, 32)


def _timed(inst, method, **kw):
    t = time.perf_counter()
    res = api.solve(inst, method=method, **kw)
    wall = time.perf_counter() - t
    rep = api.check(inst, res)
    if res.solution is not None and not rep.feasible:
        raise AssertionError(f"{method} on {inst.name}: checker rejected: {rep.violations[:3]}")
    return res, wall


def instance_task(n: int, seed: int, samples: list[int], time_limit: float | None, equal_upto: int = 64,
                  default_n: int = DEFAULT_SAMPLES) -> dict:
    """One Gavel instance (n jobs on n K80 + n P100 + n V100 GPUs): exact, hetplace for every
    sample budget, greedy, and (up to ``equal_upto`` jobs) the equal-split comparison."""
    inst = generate(n, {"k80": n, "p100": n, "v100": n}, seed=seed)
    ex, ex_t = _timed(inst, "exact", threads=1, time_limit=time_limit)
    row = {"n_jobs": n, "n_gpus": inst.n_gpus, "seed": seed, "exact_status": ex.status.value,
           "exact_objective": ex.objective, "exact_bound": ex.bound, "exact_seconds": ex_t,
           "exact_jain": ex.stats.get("jain_fairness"), "hetplace": {}}
    for N in samples:
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
    return row


def scale_task(samples: int = DEFAULT_SAMPLES) -> dict:
    """One hetplace run at scale: 256 jobs on 1,024 GPUs of three types, against its Lagrangian bound."""
    inst = generate(256, {"k80": 342, "p100": 341, "v100": 341}, seed=0)
    h, h_t = _timed(inst, "hetplace", samples=samples, seed=0)
    return {"n_jobs": 256, "n_gpus": inst.n_gpus, "types": 3, "seconds": h_t, "objective": h.objective,
            "bound": h.bound, "bound_gap": h.objective / h.bound - 1, "jain": h.stats["jain_fairness"],
            "samples": samples}


def summarise_suite(rows: list[dict], suite) -> dict:
    """The summary of a hetplace study suite's rows (``dlsched bench hetplace``, ``bench run hetplace``)."""
    cells = results_of(rows, "hetplace.instance")
    if not cells:
        raise InputError(suite.source, "tasks", "hetplace.instance cells that finished", failures(rows) or "none")
    for r in cells:                    # JSON turned the sample budgets into strings
        r["hetplace"] = {int(k): v for k, v in r["hetplace"].items()}
    samples = sorted(cells[0]["hetplace"])
    default_n = next(c.kwargs().get("default_n", DEFAULT_SAMPLES) for c in suite.tasks if c.task == "hetplace.instance")
    out = {"rows": cells}
    scale = results_of(rows, "hetplace.scale")
    if scale:
        out["scale"] = scale[0]
    return {**summarise(out, samples, default_n), "failures": failures(rows), "raw": out}


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
    ap.add_argument("--quick", action="store_true", help="suite hetplace-quick: sizes 8 16 32, 2 seeds, N in 1 4 8 16")
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ap.add_argument("--out", default="results/hetplace", help="folder for the figure and the raw rows")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per size (default 5, quick 2)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None, help="job counts (default: the suite file's)")
    ap.add_argument("--samples", type=int, nargs="+", default=None, help="sample budgets N (default: the suite file's)")
    ap.add_argument("--time-limit", type=float, default=None, help="exact method's limit in seconds (default 120)")
    ap.add_argument("--no-scale", action="store_true", help="skip the 256-job / 1,024-GPU run")
    args = ap.parse_args(argv)
    name = "hetplace-quick" if args.quick else "hetplace"
    doc, path = load_definition(name)
    doc = with_settings(doc, time_limit=args.time_limit)
    doc = with_grid(doc, "hetplace.instance", n=args.sizes,
                    seed=None if args.seeds is None else {"start": 0, "count": args.seeds})
    doc = with_params(doc, "hetplace.instance", samples=args.samples)
    if args.no_scale:
        doc = {**doc, "tasks": [t for t in doc["tasks"] if t["name"] != "hetplace.scale"]}
    suite = suite_from_definition(doc, path, source=f"{path} (with the command line's settings)")
    summary = summarise_suite(run_suite(suite, None, progress=not args.json), suite)
    out = summary.pop("raw")
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "rows.json").write_text(json.dumps(out, indent=1, default=str))
    fig = plot(summary, outdir)
    env = environment(seed=grid_values(doc, "hetplace.instance", "seed"), time_limit=suite.time_limit, threads=1,
                      sizes=grid_values(doc, "hetplace.instance", "n"), suite=name)
    if args.json:
        print(json.dumps({**summary, "figure": str(fig), "environment": env}))
        return 1 if summary["failures"] else 0

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

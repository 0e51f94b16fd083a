"""``dlsched bench oasis``: the OASiS acceptance study (MODELS.md §3.3, docs/oasis.md).

Sections:

1. **competitive ratio** on seeded small instances (10 jobs, T = 10, 3–12 servers): the offline
   optimum (HiGHS, proven optimal) over OASiS's total utility, its mean and max, the per-instance
   2α bound and how often it is violated, the offline solve seconds (median, max), and how far
   the pooled upper bound lies above the known optimum (``pooled_over_opt_mean``/``_max``);
2. **paper setting** (T = 300, 50 worker + 50 PS servers) at each job count: total utility of
   OASiS and every baseline on the same instances in the same run, every schedule checked;
   OASiS's per-job decision seconds (median, 99th percentile); with ``--l-min-share S`` > 0
   (default ``L_MIN_SHARE``) also OASiS with that L estimate, column ``oasis_lest``; and an
   upper bound on the offline optimum (``pooled-bound``, ``--time-limit`` seconds), so
   ``bound_vs_best_baseline`` is the largest ratio any method could reach over the best baseline;
3. **sensitivity** (not in ``--quick``): OASiS utility when U or L is estimated at 20%–1000% of its
   true value, plotted to ``--out``/oasis_sensitivity.png.

``--parts`` selects sections (default all three; ``--quick``: ratio and paper).
``--quick``: 10 small instances and one 100-job instance. The headline,
``utility_vs_paper_baselines``, is OASiS's total over the paper-setting instances of the largest
job count divided by the best total of the paper's own baselines (FIFO, DRF, Dorm-like);
``utility_vs_best_baseline`` is
OASiS's total over the paper-setting instances of the largest job count divided by the best
baseline's total over the same instances. ``--json`` prints exactly one JSON object.

The sections are the cells of the suite file ``oasis`` (``oasis-quick`` with ``--quick``;
``dlsched/bench/suites/``), tasks ``oasis.ratio``, ``oasis.paper`` and ``oasis.sensitivity``, run
with the command line's settings; :func:`summarise_suite` is the summary (also of ``dlsched bench
run oasis``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.table import Table

from dlsched import api
from dlsched.bench import environment, register_suite
from dlsched.bench.runner import run_suite
from dlsched.bench.suite import suite_from_definition
from dlsched.bench.tasks import (failures, grid_values, load_definition, results_of, with_grid, with_params,
                                 with_settings)
from dlsched.check import check_oasis
from dlsched.console import table_console
from dlsched.instance.oasis import schedule_utility
from dlsched.instance.oasis_gen import PAPER, generate, small
from dlsched.solvers.oasis import price_params, run_oasis

BASELINES = ("fifo", "drf", "risk_reward", "dorm")
#: the baselines of the OASiS paper itself (risk-reward is this toolkit's heuristic, reported beside)
PAPER_BASELINES = ("fifo", "drf", "dorm")
#: ``l_min_share`` of the "OASiS, L estimate" column (docs/oasis.md "Estimating L"): the best of
#: 0.001, 0.01, 0.1 on the 400-job tuning seeds 11–15, disjoint from the evaluation seeds 1–3
L_MIN_SHARE = 0.1
SCALES = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
#: beyond the paper's range: L raised by powers of ten (the exact L is tiny, see docs/oasis.md)
L_FAR = (1e2, 1e4, 1e6, 1e8, 1e10, 1e12, 1e13, 1e14)


def ratio_task(s: int, time_limit: float | None, threads: int = 1) -> dict:
    """Competitive-ratio instance ``s`` (``oasis_gen.small``)."""
    return _ratio_row(s, small(s), time_limit, threads)


def ratio_study(rows: list[dict]) -> dict:
    """The competitive-ratio section from its instances' rows."""
    ratios = np.array([r["ratio"] for r in rows])
    # how tight the pooled bound (used where the exact optimum is out of reach) is where OPT is known
    tight = np.array([r["pooled_bound"] / r["offline"] for r in rows if r["offline"] > 0 and r["optimal"]])
    secs = np.array([r["offline_seconds"] for r in rows])
    return {"instances": rows, "ratio_mean": float(ratios.mean()), "ratio_max": float(ratios.max()),
            "ratio_median": float(np.median(ratios)),
            "alpha_bound_violations": int(sum(r["violated"] for r in rows)),
            "alpha_min": float(min(r["alpha"] for r in rows)),
            "all_optimal": bool(all(r["optimal"] for r in rows)),
            "offline_seconds_median": float(np.median(secs)), "offline_seconds_max": float(secs.max()),
            "pooled_over_opt_mean": float(tight.mean()) if tight.size else None,
            "pooled_over_opt_max": float(tight.max()) if tight.size else None}


def _ratio_row(s: int, inst, time_limit: float | None, threads: int) -> dict:
    """One competitive-ratio instance: offline optimum and OASiS (both checked), α, the pooled bound."""

    t0 = time.perf_counter()
    opt = api.solve(inst, "offline", threads=threads, time_limit=time_limit)
    secs = time.perf_counter() - t0
    onl = api.solve(inst, "oasis")
    for r in (opt, onl):
        rep = check_oasis(inst, r.solution, r.objective)
        if not rep.feasible:
            raise AssertionError(f"seed {s} {r.method}: {rep.violations[:3]}")
    alpha = price_params(inst).alpha
    pooled = api.solve(inst, "pooled-bound", threads=threads, time_limit=time_limit).bound
    ratio = opt.objective / onl.objective if onl.objective > 0 else float("inf")
    # the guarantee is OPT <= 2 alpha ALG; with a time-limited MILP use its bound
    upper = opt.bound if opt.bound is not None else opt.objective
    return {"seed": s, "servers": inst.n_worker_servers + inst.n_ps_servers, "optimal": opt.status.value == "optimal",
            "offline": opt.objective, "offline_bound": upper, "oasis": onl.objective, "ratio": ratio,
            "alpha": alpha, "bound_2alpha": 2 * alpha, "violated": bool(upper > 2 * alpha * onl.objective + 1e-9),
            "offline_seconds": secs, "nodes": opt.stats.get("nodes"), "pooled_bound": pooled}


def paper_setting(n_jobs: int, seed: int, baselines=BASELINES, l_min_share: float = L_MIN_SHARE,
                  bound_time_limit: float | None = 60.0, preset="paper", arrivals: str = "poisson") -> dict:

    inst = generate(n_jobs, seed=seed, preset=preset, arrivals=arrivals)
    out = {"jobs": n_jobs, "seed": seed, "fit_alone": int(inst.runnable().sum())}
    methods = [("oasis", {}), *[(b, {}) for b in baselines], ("risk_reward_preemptive", {"preempt": True})]
    if l_min_share > 0:
        methods.insert(1, ("oasis_lest", {"l_min_share": l_min_share}))
    for name, params in methods:
        method = "risk_reward" if name.startswith("risk_reward") else "oasis" if name.startswith("oasis") else name
        t0 = time.perf_counter()
        r = api.solve(inst, method, **params)
        secs = time.perf_counter() - t0
        rep = check_oasis(inst, r.solution, r.objective)
        if not rep.feasible:
            raise AssertionError(f"{name} at {n_jobs} jobs: {rep.violations[:3]}")
        out[name] = {"utility": r.objective, "admitted": r.stats["admitted"], "seconds": secs}
        if name == "oasis":
            out["decision_seconds_p50"] = r.stats["decision_seconds_p50"]
            out["decision_seconds_p99"] = r.stats["decision_seconds_p99"]
            out["decision_seconds_max"] = r.stats["decision_seconds_max"]
            out["alpha"] = r.stats["alpha"]
    # an upper bound on the offline optimum: no method, online or not, can exceed it
    r = api.solve(inst, "pooled-bound", threads=1, time_limit=bound_time_limit)
    out["upper_bound"] = {"utility": r.bound, "termination": r.termination, "seconds": r.build_seconds + r.solve_seconds}
    best = max(baselines, key=lambda b: out[b]["utility"])
    out["best_baseline"] = best
    out["bound_vs_best_baseline"] = r.bound / max(out[best]["utility"], 1e-12)
    out["utility_vs_best_baseline"] = out["oasis"]["utility"] / max(out[best]["utility"], 1e-12)
    if "oasis_lest" in out:
        out["l_min_share"] = l_min_share
        out["lest_vs_best_baseline"] = out["oasis_lest"]["utility"] / max(out[best]["utility"], 1e-12)
    return out


def paper_task(jobs: int, seed: int, l_min_share: float = L_MIN_SHARE, time_limit: float | None = 60.0) -> dict:
    """One paper-setting instance; ``time_limit`` bounds the pooled upper bound's MILP."""
    return paper_setting(jobs, seed, l_min_share=l_min_share, bound_time_limit=time_limit)


def capacity_task(jobs: int, seed: int, scale: float, arrivals: str = "poisson", l_min_share: float = L_MIN_SHARE,
                  time_limit: float | None = 60.0) -> dict:
    """The paper setting with every server's capacity times ``scale`` (same jobs and arrivals;
    ``arrivals="trace"``: the Tiresias submit times): does the comparison depend on our server size
    (the paper gives none) or on the arrival process? docs/oasis.md, "Findings"."""
    preset = replace(PAPER, worker_server={k: v * scale for k, v in PAPER.worker_server.items()},
                     ps_server={k: v * scale for k, v in PAPER.ps_server.items()})
    row = paper_setting(jobs, seed, l_min_share=l_min_share, bound_time_limit=time_limit, preset=preset, arrivals=arrivals)
    return {**row, "scale": scale, "arrivals": arrivals}


def sensitivity_task(jobs: int, seed: int, out: str | None = None) -> dict:
    return sensitivity(jobs, seed, None if out is None else Path(out))


def sensitivity(n_jobs: int, seed: int, out_dir: Path | None) -> dict:
    inst = generate(n_jobs, seed=seed)
    exact = schedule_utility(inst, run_oasis(inst)[0])
    res = {"jobs": n_jobs, "seed": seed, "exact_utility": exact, "scales": list(SCALES), "U": [], "L": [],
           "l_far_scales": list(L_FAR), "L_far": []}
    for s in SCALES:
        res["U"].append(schedule_utility(inst, run_oasis(inst, u_scale=s)[0]))
        res["L"].append(schedule_utility(inst, run_oasis(inst, l_scale=s)[0]))
    for s in L_FAR:
        res["L_far"].append(schedule_utility(inst, run_oasis(inst, l_scale=s)[0]))
    if out_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out_dir.mkdir(parents=True, exist_ok=True)
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
        pct = [100 * s for s in SCALES]
        ax.plot(pct, [u / exact for u in res["U"]], "o-", label="U estimated (L exact)")
        ax.plot(pct, [u / exact for u in res["L"]], "s--", label="L estimated (U exact)")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("estimate, % of the true value")
        ax.set_ylabel("OASiS utility / utility with exact U, L")
        ax.set_title(f"OASiS sensitivity, {n_jobs} jobs, T = 300, seed {seed}")
        ax.legend()
        ax2.plot([1.0, *L_FAR], [1.0, *[u / exact for u in res["L_far"]]], "s-", color="C1")
        ax2.axhline(1.0, color="grey", lw=0.8)
        ax2.set_xscale("log")
        ax2.set_xlabel("L estimate / true L (beyond the paper's range)")
        ax2.set_ylabel("OASiS utility / utility with exact U, L")
        ax2.set_title("raising L: fewer low-value admissions")
        fig.tight_layout()
        path = out_dir / "oasis_sensitivity.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        res["figure"] = str(path)
    return res


@register_suite("oasis")
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched bench oasis", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="suite oasis-quick: 10 small instances, 100 jobs, no sensitivity")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--seeds", type=int, default=None, help="small instances for the ratio study (default 30; quick 10)")
    ap.add_argument("--jobs", type=int, nargs="+", default=None, help="paper-setting job counts (default 100 400)")
    ap.add_argument("--seed", type=int, default=None, help="seed of the (first) paper-setting instance (default 1)")
    ap.add_argument("--paper-seeds", type=int, default=None, help="paper-setting instances per job count (default 3; quick 1)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per offline MILP (default 60)")
    ap.add_argument("--sensitivity-jobs", type=int, default=None, help="default 400")
    ap.add_argument("--out", type=Path, default=Path("results/oasis"))
    ap.add_argument("--parts", nargs="+", choices=("ratio", "paper", "sensitivity"), default=None,
                    help="sections to run (default all; --quick: ratio paper)")
    ap.add_argument("--l-min-share", type=float, default=None,
                    help=f"also run OASiS with this L estimate in the paper setting (column oasis_lest; 0: skip; default {L_MIN_SHARE})")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    suite = _suite(args)
    summary = summarise_suite(run_suite(suite, None, progress=not args.json), suite)
    summary["seconds"] = time.perf_counter() - t0
    summary["environment"] = environment(seed=_paper_seeds(suite)[:1] or None, time_limit=suite.time_limit, threads=1,
                                         suite=suite.name)
    if args.json:
        print(json.dumps(summary, default=float))
    else:
        _table(summary)
    return 1 if summary["failures"] else 0


def _suite(args):
    """The oasis (or oasis-quick) suite file with the command line's settings."""
    name = "oasis-quick" if args.quick else "oasis"
    doc, path = load_definition(name)
    doc = with_settings(doc, time_limit=args.time_limit)
    if args.parts:
        task = {"ratio": "oasis.ratio", "paper": "oasis.paper", "sensitivity": "oasis.sensitivity"}
        doc = {**doc, "tasks": [t for t in doc["tasks"] if t["name"] in {task[p] for p in args.parts}]}
        if "sensitivity" in args.parts and not any(t["name"] == "oasis.sensitivity" for t in doc["tasks"]):
            doc["tasks"].append({"name": "oasis.sensitivity", "params": {"jobs": 400, "seed": 1}})
    if args.seeds is not None:
        doc = with_grid(doc, "oasis.ratio", s={"start": 0, "count": args.seeds})
    seeds = grid_values(doc, "oasis.paper", "seed")
    if seeds and (args.seed is not None or args.paper_seeds is not None):
        first = seeds[0] if args.seed is None else args.seed
        doc = with_grid(doc, "oasis.paper", seed={"start": first, "count": args.paper_seeds or len(seeds)})
    doc = with_grid(doc, "oasis.paper", jobs=args.jobs)
    doc = with_params(doc, "oasis.paper", l_min_share=args.l_min_share)
    doc = with_params(doc, "oasis.sensitivity", jobs=args.sensitivity_jobs, seed=args.seed, out=str(args.out))
    return suite_from_definition(doc, path, source=f"{path} (with the command line's settings)")


def _paper_seeds(suite) -> list[int]:
    return sorted({c.kwargs()["seed"] for c in suite.tasks if c.task == "oasis.paper"})


def summarise_suite(rows: list[dict], suite) -> dict:
    """The summary of an oasis study suite's rows: the headline first (module docstring)."""
    summary = {"suite": "oasis", "parts": sorted({c.task.split(".")[1] for c in suite.tasks}),
               "failures": failures(rows)}
    ratio_rows = results_of(rows, "oasis.ratio")
    if ratio_rows:
        ratio = ratio_study(ratio_rows)
        summary.update({
            "ratio_mean": ratio["ratio_mean"], "ratio_max": ratio["ratio_max"], "ratio_median": ratio["ratio_median"],
            "alpha_bound_violations": ratio["alpha_bound_violations"], "ratio_instances": len(ratio_rows),
            "offline_all_optimal": ratio["all_optimal"],
            "offline_seconds_median": ratio["offline_seconds_median"], "offline_seconds_max": ratio["offline_seconds_max"],
            "ratio_study": ratio})
    paper = results_of(rows, "oasis.paper")
    if paper:
        last = [p for p in paper if p["jobs"] == paper[-1]["jobs"]]
        lest = "oasis_lest" in paper[0]
        names = ["oasis", *(["oasis_lest"] if lest else []), *BASELINES, "risk_reward_preemptive"]
        totals = {m: float(sum(p[m]["utility"] for p in last)) for m in [*names, "upper_bound"]}
        best = max(BASELINES, key=lambda b: totals[b])
        paper_best = max(PAPER_BASELINES, key=lambda b: totals[b])
        summary.update({
            # the headline: OASiS against the paper's own baselines; risk-reward and the bound beside it
            "utility_vs_paper_baselines": totals["oasis"] / max(totals[paper_best], 1e-12),
            "best_paper_baseline": paper_best,
            "utility_vs_best_baseline": totals["oasis"] / max(totals[best], 1e-12), "best_baseline": best,
            "bound_vs_best_baseline": totals["upper_bound"] / max(totals[best], 1e-12),
            "utility_totals_at_max_jobs": totals, "paper_seeds": len(last), "paper_setting": paper,
            "decision_seconds_p50": float(np.median([p["decision_seconds_p50"] for p in last])),
            "decision_seconds_p99": float(max(p["decision_seconds_p99"] for p in last))})
        if lest:
            summary["l_min_share"] = paper[0]["l_min_share"]
            summary["lest_vs_best_baseline"] = totals["oasis_lest"] / max(totals[best], 1e-12)
    sens = results_of(rows, "oasis.sensitivity")
    if sens:
        summary["sensitivity"] = sens[0]
    lead = ("suite", "parts", "utility_vs_paper_baselines", "best_paper_baseline", "utility_vs_best_baseline",
            "best_baseline", "bound_vs_best_baseline")
    return {**{k: summary[k] for k in lead if k in summary}, **summary}   # the headline first


def _table(summary: dict) -> None:
    ratio, paper, sens = summary.get("ratio_study"), summary.get("paper_setting"), summary.get("sensitivity")
    con = table_console()
    if "utility_vs_paper_baselines" in summary:
        con.print(f"OASiS / best of the paper's baselines (FIFO, DRF, Dorm-like): {summary['utility_vs_paper_baselines']:.3f} "
                  f"(best: {summary['best_paper_baseline']}); / best baseline incl. risk-reward: "
                  f"{summary['utility_vs_best_baseline']:.3f} ({summary['best_baseline']}); pooled bound / best baseline: "
                  f"{summary['bound_vs_best_baseline']:.3f}")
    if ratio:
        _ratio_table(con, ratio, summary["ratio_instances"])
    if paper:
        _paper_table(con, paper)
    if sens:
        con.print(f"sensitivity figure: {sens.get('figure')}")


def _ratio_table(con, ratio: dict, seeds: int) -> None:
    t = Table(title=f"OASiS competitive ratio, {seeds} small instances (10 jobs, T = 10)")
    for col in ("ratio mean", "ratio max", "2α violations", "min 2α", "offline s median", "offline s max", "all optimal",
                "pooled bound / OPT mean (max)"):
        t.add_column(col)
    tight = ratio.get("pooled_over_opt_mean")
    t.add_row(f"{ratio['ratio_mean']:.3f}", f"{ratio['ratio_max']:.3f}", str(ratio["alpha_bound_violations"]),
              f"{2 * ratio['alpha_min']:.1f}", f"{ratio['offline_seconds_median']:.2f}", f"{ratio['offline_seconds_max']:.2f}",
              str(ratio["all_optimal"]), "-" if tight is None else f"{tight:.3f} ({ratio['pooled_over_opt_max']:.3f})")
    con.print(t)


def _paper_table(con, paper: list) -> None:
    names = ["oasis", *(["oasis_lest"] if "oasis_lest" in paper[0] else []), *BASELINES, "risk_reward_preemptive"]
    t = Table(title="Paper setting (T = 300, 50 + 50 servers): total utility")
    t.add_column("jobs")
    t.add_column("seed")
    for nme in names:
        t.add_column(nme)
    t.add_column("upper bound")
    t.add_column("oasis / best baseline")
    t.add_column("bound / best baseline")
    t.add_column("decision s p50 / p99")
    for p in paper:
        t.add_row(str(p["jobs"]), str(p["seed"]), *[f"{p[nme]['utility']:.1f}" for nme in names], f"{p['upper_bound']['utility']:.1f}",
                  f"{p['utility_vs_best_baseline']:.2f}", f"{p['bound_vs_best_baseline']:.2f}",
                  f"{p['decision_seconds_p50']:.4f} / {p['decision_seconds_p99']:.3f}")
    con.print(t)

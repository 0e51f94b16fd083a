"""``dlsched bench mkp``: plain exact HiGHS against every decomposition/sparsification layer.

Runs every method on the same OR-Library MKP problems with the same time limit and thread
count, checks every solution, checks every bound against the reference value, and reports per
method: mean and max gap to the reference (best known from ``mkcbres.txt``, or the file header's
optimum), wins/ties/losses against plain HiGHS (``exact``), mean time to reach 0.1 % gap, and
two figures: mean gap versus time and a Dolan–Moré performance profile of the time to 0.1 %.

The study is the bundled suite file ``mkp`` (``dlsched/bench/suites/mkp.toml``) with the command
line's files, problems, methods, parameters and limits, run by the one suite runner
(:mod:`dlsched.bench.runner`): every cell is appended to ``OUT/results-DIGEST.jsonl`` as soon as
it ends (DIGEST names the suite as run), so the same command run again resumes where an
interrupted study stopped; ``--from-runs FILE`` summarises such a file (or any results file of
``dlsched bench run``) without solving anything.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rich.table import Table

from dlsched.bench import environment, register_suite
from dlsched.bench.report import FLOOR, dolan_more, mean_gap_curve, style
from dlsched.bench.results import latest, read_results
from dlsched.bench.runner import run_suite
from dlsched.bench.suite import suite_from_definition
from dlsched.bench.tasks import load_definition, with_settings
from dlsched.console import table_console

TIE = 1e-9


def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per method: gaps, wins/ties/losses against ``exact``, time to 0.1 %, checks."""
    by_method: dict[str, list[dict]] = {}
    for r in rows:
        by_method.setdefault(r["method"], []).append(r)
    base = {r["instance"]: r for r in by_method.get("exact", [])}
    out = {}
    for m, rs in by_method.items():
        gaps = [r["gap"] for r in rs if r["gap"] is not None]
        unsolved = sum(1 for r in rs if r["objective"] is None)
        hits = [r["time_to_target"] for r in rs if r.get("time_to_target") is not None]
        w = t = lo = 0
        for r in rs:
            b = base.get(r["instance"])
            if b is None or m == "exact":
                continue
            a, e = r["objective"], b["objective"]
            if a is None and e is None or (a is not None and e is not None and abs(a - e) <= TIE * max(1, abs(e))):
                t += 1
            elif e is None or (a is not None and a > e):
                w += 1
            else:
                lo += 1
        bgaps = [(r["bound"] - r["objective"]) / max(abs(r["objective"]), 1e-9) for r in rs
                 if r["bound"] is not None and r["objective"] is not None]
        out[m] = {
            "runs": len(rs), "solved": len(rs) - unsolved,
            "mean_gap": float(np.mean(gaps)) if gaps else None, "max_gap": float(np.max(gaps)) if gaps else None,
            "mean_gap_pct": float(100 * np.mean(gaps)) if gaps else None,
            "wins": w, "ties": t, "losses": lo,
            "reached_target": len(hits), "mean_time_to_target": float(np.mean(hits)) if hits else None,
            "mean_certified_gap": float(np.mean(bgaps)) if bgaps else None,
            "mean_seconds": float(np.mean([r["seconds"] for r in rs])),
            "all_checked": all(r["checked"] is True for r in rs if r["objective"] is not None),
            "all_bounds_valid": all(r["bound_valid"] is not False for r in rs),
            "bounds_reported": sum(1 for r in rs if r["bound"] is not None),
        }
    return out


def plot(rows: list[dict], out: Path, time_limit: float) -> list[str]:
    """``gap_vs_time.png`` (mean gap to reference over the runs, log time) and ``profile.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    methods = sorted({r["method"] for r in rows})
    grid = np.geomspace(1e-3, max(time_limit, 1e-2), 200)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m in methods:
        rs = [r for r in rows if r["method"] == m and r["reference"] is not None]
        if rs:
            curve = mean_gap_curve([r["trace"] for r in rs], [r["reference"] for r in rs], ["max"] * len(rs), grid)
            ax.plot(grid, np.maximum(curve, FLOOR), label=m)
    style(ax, "seconds", "mean gap to best known (%), log", "MKP: gap versus time (mean over problems)", logy=True)
    fig.tight_layout()
    files = [str(out / "gap_vs_time.png")]
    fig.savefig(files[0], dpi=120)
    plt.close(fig)

    # Dolan–Moré: ratio of each method's time to 0.1 % gap to the best method's, per problem
    insts = sorted({r["instance"] for r in rows})
    T = np.full((len(insts), len(methods)), np.inf)
    for r in rows:
        if r.get("time_to_target") is not None:
            T[insts.index(r["instance"]), methods.index(r["method"])] = max(r["time_to_target"], 1e-3)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    prof = dolan_more(T)
    if prof is not None:
        for m, frac in zip(methods, prof[1]):
            ax.step(prof[0], frac, where="post", label=m)
    style(ax, "τ (time to 0.1 % gap / best method's time)", "fraction of problems", "MKP: performance profile (Dolan–Moré)")
    fig.tight_layout()
    files.append(str(out / "profile.png"))
    fig.savefig(files[1], dpi=120)
    plt.close(fig)
    return files


def print_table(summary: dict[str, dict]) -> None:
    tab = Table(title="dlsched bench mkp")
    for col in ("method", "runs", "mean gap %", "max gap %", "W/T/L vs exact", "reached 0.1%",
                "mean t(0.1%) s", "mean cert. gap %", "checked", "bounds valid"):
        tab.add_column(col)
    for m, s in summary.items():
        pct = lambda x: "-" if x is None else f"{100 * x:.4f}"
        tab.add_row(m, str(s["runs"]), pct(s["mean_gap"]), pct(s["max_gap"]), f"{s['wins']}/{s['ties']}/{s['losses']}",
                    f"{s['reached_target']}/{s['runs']}",
                    "-" if s["mean_time_to_target"] is None else f"{s['mean_time_to_target']:.2f}",
                    pct(s["mean_certified_gap"]), str(s["all_checked"]), str(s["all_bounds_valid"]))
    table_console().print(tab)


def _params(text: list[str] | None) -> dict[str, dict]:
    """``-P method:key=value`` (value parsed as JSON when it can be)."""
    out: dict[str, dict] = {}
    for item in text or []:
        m, _, kv = item.partition(":")
        k, _, v = kv.partition("=")
        try:
            val = json.loads(v)
        except json.JSONDecodeError:
            val = v
        out.setdefault(m, {})[k] = val
    return out


def suite_definition(args: argparse.Namespace) -> tuple[dict, Path]:
    """The bundled ``mkp`` suite file with the command line's choices in place of its own."""
    doc, path = load_definition("mkp")
    (inst,) = doc["instances"]
    if args.files:
        inst = {**inst, "files": [str(Path(f).resolve()) for f in args.files]}
    if args.problems:
        inst = {**inst, "problems": args.problems}
    if args.reference:
        inst = {**inst, "best_known": str(Path(args.reference).resolve())}
    params = _params(args.param)
    methods = [{"name": m.split("@")[0], "label": m, "params": params.get(m, {})}
               for m in (x.strip() for x in args.methods.split(",")) if m] if args.methods else doc["methods"]
    doc = with_settings({**doc, "instances": [inst], "methods": methods},
                        time_limit=args.time_limit, threads=args.threads, seed=args.seed)
    return doc, path


@register_suite("mkp")
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched bench mkp", description=__doc__.split("\n")[0])
    ap.add_argument("--files", nargs="+", default=None, help="OR-Library MKP files (default: the suite file's, mknapcb1 and mknapcb4)")
    ap.add_argument("--problems", default=None, help="problem indices per file, e.g. 0-4,7 (default: all)")
    ap.add_argument("--methods", default=None,
                    help="comma-separated (default: the suite file's, exact,lp-round,core,sample); NAME@LABEL runs NAME "
                         "under its own label (e.g. core@div with -P core@div:diversify=true)")
    ap.add_argument("-P", "--param", action="append", metavar="METHOD:KEY=VALUE", help="a method parameter")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per run (default: the suite file's, 10)")
    ap.add_argument("--threads", type=int, default=None, help="solver threads (default: the suite file's, 1)")
    ap.add_argument("--seed", type=int, default=None, help="solver seed (default: the suite file's, 0)")
    ap.add_argument("--reference", type=Path, default=None, help="best-known table (default: mkcbres.txt of the data dir)")
    ap.add_argument("--out", type=Path, default=Path("results/mkp"))
    ap.add_argument("--from-runs", type=Path, default=None, help="summarise a results file instead of solving")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    if args.from_runs:
        head, rows = read_results(args.from_runs)
        rows, limits = latest(rows), head["limits"]
    else:
        doc, path = suite_definition(args)
        suite = suite_from_definition(doc, path, source=f"{path} (with the command line's settings)")
        args.out.mkdir(parents=True, exist_ok=True)
        rows = run_suite(suite, args.out / f"results-{suite.digest()[:12]}.jsonl", progress=not args.json,
                         command="dlsched bench mkp " + " ".join(argv))
        limits = suite.limits()
    failures = [r for r in rows if "exception" in r]
    rows = [r for r in rows if "exception" not in r]
    summary = summarise(rows)
    figures = plot(rows, args.out, limits["time_limit"]) if rows else []
    if args.json:
        print(json.dumps({"environment": environment(**limits), "methods": summary, "figures": figures,
                          "failures": [f"{r['cell']}: {r['exception']}" for r in failures]}, indent=1))
    else:
        print_table(summary)
        print("figures: " + ", ".join(figures))
        for r in failures:
            print(f"failed: {r['cell']}: {r['exception']}")
    bad = [m for m, s in summary.items() if not (s["all_checked"] and s["all_bounds_valid"])]
    return 1 if bad or failures else 0

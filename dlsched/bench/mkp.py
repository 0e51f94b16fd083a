"""``dlsched bench mkp``: plain exact HiGHS against every decomposition/sparsification layer.

Runs every method on the same OR-Library MKP problems with the same time limit and thread
count, checks every solution, checks every bound against the reference value, and reports per
method: mean and max gap to the reference (best known from ``mkcbres.txt``, or the file header's
optimum), wins/ties/losses against plain HiGHS (``exact``), mean time to reach 0.1 % gap, and
two figures: mean gap versus time and a Dolan–Moré performance profile of the time to 0.1 %.

Every run is appended to ``OUT/runs.jsonl`` as soon as it ends, so an interrupted study keeps
what it measured; ``--from-runs FILE`` summarises such a file without solving anything.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
from rich.table import Table

import dlsched
from dlsched.bench import environment, register_suite
from dlsched.console import progress, table_console
from dlsched.data import data_dir
from dlsched.instance.orlib import count_mkp_problems
from dlsched.result import gap_to_reference

DEFAULT_FILES = ("orlib/mkp/mknapcb1.txt", "orlib/mkp/mknapcb4.txt")
DEFAULT_METHODS = ("exact", "lp-round", "core", "sample")
TARGET = 1e-3          # "time to 0.1 % gap"
TIE = 1e-9
FLOOR = 1e-3          # gap-versus-time plot: a mean gap of 0 % is drawn at 0.001 %


def best_known(path: Path) -> dict[str, float]:
    """``mkcbres.txt``: problem name ("5.100-00": m.n-index) -> best known value (first table only)."""
    text = Path(path).read_text()
    first = text.split("LP optimal")[0]
    out = {}
    for name, val in re.findall(r"^\s*(\d+\.\d+-\d+)\s+([0-9.eE+]+)\s*$", first, flags=re.M):
        out[name] = float(val)
    return out


def problems(files: list[Path], select: str | None) -> list[tuple[Path, int]]:
    keep = _range(select)
    out = []
    for f in files:
        for k in range(count_mkp_problems(f)):
            if keep is None or k in keep:
                out.append((f, k))
    return out


def _range(text: str | None) -> set[int] | None:
    if not text:
        return None
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def reference_of(inst, table: dict[str, float]) -> tuple[float | None, str]:
    """Best known value for a problem (``m.n-kk`` in ``mkcbres.txt``), else the header optimum."""
    k = inst.name.rsplit("-", 1)[-1]
    name = f"{inst.n_rows}.{inst.n_jobs}-{int(k):02d}" if k.isdigit() else ""
    if name in table and inst.meta.get("origin") == "orlib-mkp" and "mknapcb" in inst.source:
        return table[name], f"mkcbres.txt {name}"
    if inst.reference is not None:
        return inst.reference.objective, inst.reference.source
    return None, ""


def run_one(inst, method: str, params: dict, time_limit: float, threads: int, seed: int, ref: float | None) -> dict:
    """One run; ``method`` may carry a label (``core@div``: method ``core``, reported as ``core@div``)."""

    trace: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    res = dlsched.solve(inst, method.split("@")[0], time_limit=time_limit, threads=threads, seed=seed,
                        on_incumbent=lambda inc: trace.append((inc.seconds, inc.objective)), **params)
    wall = time.perf_counter() - t0
    if res.objective is not None:
        trace.append((wall, res.objective))   # the final answer is an incumbent too
    report = dlsched.check(inst, res.solution, res.objective) if res.status.has_solution() else None
    row = {"instance": inst.name, "method": method, "params": params, "status": res.status.value,
           "termination": res.termination, "objective": res.objective, "bound": res.bound, "reference": ref,
           "seconds": wall, "checked": None if report is None else report.feasible,
           "gap": gap_to_reference(res.objective, ref, inst.sense) if ref is not None else None,
           "bound_valid": None, "trace": trace}
    if ref is not None and res.bound is not None:
        row["bound_valid"] = bool(res.bound >= ref - 1e-6 * max(1.0, abs(ref))) if inst.sense == "max" \
            else bool(res.bound <= ref + 1e-6 * max(1.0, abs(ref)))
    if ref is not None:
        hit = [t for t, v in trace if gap_to_reference(v, ref, inst.sense) <= TARGET]
        row["time_to_target"] = min(hit) if hit else None
    return row


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
        if not rs:
            continue
        curves = []
        for r in rs:
            g = np.full(grid.size, np.nan)
            for t, v in sorted(r["trace"]):
                g[grid >= t] = gap_to_reference(v, r["reference"], "max")
            curves.append(g)
        C = np.array(curves)
        # the mean over the runs that have a solution by then (before that: the curve is cut)
        # the mean over all runs, drawn from the moment every run has a solution
        have = np.all(np.isfinite(C), axis=0)
        mean = np.full(grid.size, np.nan)
        mean[have] = C[:, have].mean(axis=0)
        ax.plot(grid, np.maximum(100 * mean, FLOOR), label=m)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=FLOOR)
    ax.set_xlabel("seconds")
    ax.set_ylabel("mean gap to best known (%), log")
    ax.set_title("MKP: gap versus time (mean over problems)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
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
    best = T.min(axis=1, keepdims=True)
    solvable = np.isfinite(best[:, 0])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if solvable.any():
        ratio = T[solvable] / best[solvable]
        taus = np.geomspace(1, max(2.0, float(np.nanmax(np.where(np.isfinite(ratio), ratio, 1))) * 1.5), 300)
        for i, m in enumerate(methods):
            frac = [(ratio[:, i] <= tau).sum() / len(insts) for tau in taus]
            ax.step(taus, frac, where="post", label=m)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("τ (time to 0.1 % gap / best method's time)")
    ax.set_ylabel("fraction of problems")
    ax.set_title("MKP: performance profile (Dolan–Moré)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
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


@register_suite("mkp")
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched bench mkp", description=__doc__.split("\n")[0])
    ap.add_argument("--files", nargs="+", default=None, help="OR-Library MKP files (default: mknapcb1, mknapcb4)")
    ap.add_argument("--problems", default=None, help="problem indices per file, e.g. 0-4,7 (default: all)")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help="comma-separated; NAME@LABEL runs NAME under its own label (e.g. core@div with -P core@div:diversify=true)")
    ap.add_argument("-P", "--param", action="append", metavar="METHOD:KEY=VALUE", help="a method parameter")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", type=Path, default=None, help="best-known table (default: mkcbres.txt of the data dir)")
    ap.add_argument("--out", type=Path, default=Path("results/mkp"))
    ap.add_argument("--from-runs", type=Path, default=None, help="summarise a runs.jsonl instead of solving")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    if args.from_runs:
        rows = [json.loads(line) for line in args.from_runs.read_text().splitlines() if line.strip()]
    else:
        files = [Path(f) for f in args.files] if args.files else [data_dir() / f for f in DEFAULT_FILES]
        ref_file = args.reference or (data_dir() / "orlib/mkp/mkcbres.txt")
        table = best_known(ref_file) if ref_file.is_file() else {}
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        params = _params(args.param)
        args.out.mkdir(parents=True, exist_ok=True)
        log = (args.out / "runs.jsonl").open("w")
        rows = []
        todo = problems(files, args.problems)
        with progress("bench mkp", len(todo) * len(methods)) as tick:
            for path, k in todo:
                inst = dlsched.load(path, problem=k)
                ref, _ = reference_of(inst, table)
                for m in methods:
                    tick(f"{path.name}#{k} {m}")
                    row = run_one(inst, m, params.get(m, {}), args.time_limit, args.threads, args.seed, ref)
                    rows.append(row)
                    log.write(json.dumps(row) + "\n")
                    log.flush()
        log.close()
    summary = summarise(rows)
    figures = plot(rows, args.out, args.time_limit) if rows else []
    if args.json:
        print(json.dumps({"environment": environment(seed=args.seed, time_limit=args.time_limit, threads=args.threads),
                          "methods": summary, "figures": figures}, indent=1))
    else:
        print_table(summary)
        print("figures: " + ", ".join(figures))
    bad = [m for m, s in summary.items() if not (s["all_checked"] and s["all_bounds_valid"])]
    return 1 if bad else 0

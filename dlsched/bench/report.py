"""``dlsched report RESULTS...``: tables, figures and a Markdown page from suite results files.

Per method (and suite): cells, solutions, proven optima, failures (exceptions, rejected
solutions, bounds that cut off the reference), mean and max gap to the reference, mean
seconds and how many cells reached 0.1 % of the reference. The reference of an instance is
its proven optimum or best-known value when the results carry one, else the best bound any
method found (then gaps are certified upper estimates), else the best value any method found.

Figures (matplotlib, Agg): ``profile.png`` (Dolan–Moré performance profile of the time to
reach 0.1 % of the reference), ``gap_vs_time.png`` (mean gap to the reference over the
incumbent streams, log-log) and ``families.png`` (mean gap per family and method). A suite with
several instance sets also gets the mean gap and seconds per method and set.

Rows of simulation suites (``kind = "simulate"``) give a JCT table per policy (runs, completed
runs, mean of the runs' average JCT, median and 95th percentile of all completed jobs' JCTs,
mean makespan, GPU utilisation, decision latency) and ``jct_cdf.png``, the empirical CDF of the
completed jobs' JCTs per policy over all traces. Rows of study suites (``kind = "study"``) give a
table per task (cells, failures, seconds). A suite that names its ``family`` also gets the
family's own summary (its scalar figures), computed from the rows as ``dlsched bench FAMILY``
does (first, for a study suite). ``report.md`` (headed by ``--title``) holds the provenance, the
tables and the figures with the command that made them; the results pages of the docs
(docs/results/) are such pages, remade and checked by ``--pages DIR [--check]``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
from pathlib import Path

import numpy as np

from dlsched.bench.results import TARGET, compare, failed, latest, read_results
from dlsched.errors import InputError
from dlsched.result import gap_to_reference
from dlsched.bench.suite import summariser, suite_from_definition
from dlsched.console import number, table_console

FLOOR = 1e-3           # gap-versus-time: a mean gap of 0 % is drawn at 0.001 % (log axis)


def kind(row: dict) -> str:
    """The cell kind of a row: solve (instance x method), simulate or study."""
    return row.get("kind", "solve")


def load(paths: list[str | Path]) -> tuple[list[dict], list[dict]]:
    """Headers and rows (last row per cell) of results files; rows carry their suite name."""
    heads, rows = [], []
    for p in paths:
        head, rs = read_results(p)
        heads.append(head)
        for r in latest(rs):
            rows.append({**r, "suite": head.get("suite")})
    return heads, rows


def with_references(rows: list[dict]) -> list[dict]:
    """Every row with ``ref`` / ``ref_kind`` / ``ref_gap``: the instance's known reference, else
    the best bound any method found, else the best value any method found."""
    by_inst: dict[tuple, list[dict]] = {}
    for r in rows:
        by_inst.setdefault((r["suite"], r["instance"]), []).append(r)
    out = []
    for rs in by_inst.values():
        sense = next((r.get("sense") for r in rs if r.get("sense")), "max")
        pick = min if sense == "max" else max
        known = [r["reference"] for r in rs if r.get("reference") is not None]
        bounds = [r["bound"] for r in rs if _finite(r.get("bound"))]
        values = [r["objective"] for r in rs if _finite(r.get("objective"))]
        best_value = (max if sense == "max" else min)(values) if values else None
        if known:
            ref, kind = known[0], "reference"
        elif bounds:
            ref, kind = pick(bounds), "best bound"
        else:
            ref, kind = best_value, "best value"
        for r in rs:
            g = None if ref is None or not _finite(r.get("objective")) else gap_to_reference(r["objective"], ref, sense)
            hit = [t for t, v in r.get("trace") or [] if ref is not None and gap_to_reference(v, ref, sense) <= TARGET]
            out.append({**r, "ref": ref, "ref_kind": kind, "ref_gap": g, "ref_time": min(hit) if hit else None})
    return out


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _label(r: dict, many_suites: bool) -> str:
    return f"{r['suite']}:{r['method']}" if many_suites else r["method"]


def by_label(rows: list[dict], key: str = "method") -> dict[str, list[dict]]:
    """Rows grouped by ``row[key]`` (``suite:value`` when the rows come from several suites)."""
    many = len({r["suite"] for r in rows}) > 1
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(f"{r['suite']}:{r[key]}" if many else r[key], []).append(r)
    return by


def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per method label (``suite:method`` when several suites): the table's columns."""
    out = {}
    for m, rs in by_label(rows).items():
        gaps = [r["ref_gap"] for r in rs if r["ref_gap"] is not None]
        secs = [r["seconds"] for r in rs if _finite(r.get("seconds"))]
        out[m] = {"cells": len(rs), "solutions": sum(1 for r in rs if _finite(r.get("objective"))),
                  "optimal": sum(1 for r in rs if r.get("status") == "optimal"),
                  "failures": sum(1 for r in rs if failed(r)),
                  "mean_gap": float(np.mean(gaps)) if gaps else None, "max_gap": float(np.max(gaps)) if gaps else None,
                  "reached_target": sum(1 for r in rs if r["ref_time"] is not None),
                  "mean_seconds": float(np.mean(secs)) if secs else None,
                  "reference": ", ".join(sorted({r["ref_kind"] for r in rs}))}
    return out


def print_tables(summary: dict[str, dict], title: str) -> None:
    from rich.table import Table


    tab = Table(title=title)
    for col in ("method", "cells", "solutions", "optimal", "failures", "mean gap %", "max gap %",
                "reached 0.1%", "mean s", "reference"):
        tab.add_column(col, justify="left" if col in ("method", "reference") else "right")
    for m, s in summary.items():
        tab.add_row(m, *_cells(s))
    table_console().print(tab)


def _cells(s: dict) -> list[str]:
    pct = lambda x: "-" if x is None else f"{100 * x:.4f}"
    return [str(s["cells"]), str(s["solutions"]), str(s["optimal"]), str(s["failures"]), pct(s["mean_gap"]),
            pct(s["max_gap"]), f"{s['reached_target']}/{s['cells']}",
            "-" if s["mean_seconds"] is None else f"{s['mean_seconds']:.3f}", s["reference"]]


def mean_gap_curve(traces: list[list], refs: list[float], senses: list[str], grid: np.ndarray) -> np.ndarray:
    """Mean gap to the reference (%) over incumbent streams at each grid time; NaN until every
    stream has an incumbent (a mean over fewer runs would jump when a slow run starts)."""
    C = np.full((len(traces), grid.size), np.nan)
    for k, (trace, ref, sense) in enumerate(zip(traces, refs, senses)):
        for t, v in sorted(trace):
            C[k, grid >= t] = gap_to_reference(v, ref, sense)
    have = np.all(np.isfinite(C), axis=0)
    mean = np.full(grid.size, np.nan)
    mean[have] = C[:, have].mean(axis=0)
    return 100 * mean


def dolan_more(T: np.ndarray) -> tuple[np.ndarray, list[list[float]]] | None:
    """Dolan–Moré performance profile of a (problems x methods) table of times (``inf``: never):
    the grid of ratios τ and, per method, the fraction of all problems within τ of the best."""
    best = T.min(axis=1, keepdims=True)
    ok = np.isfinite(best[:, 0])
    if not ok.any():
        return None
    ratio = T[ok] / best[ok]
    taus = np.geomspace(1, max(2.0, float(np.nanmax(np.where(np.isfinite(ratio), ratio, 1))) * 1.5), 300)
    return taus, [[(ratio[:, i] <= tau).sum() / T.shape[0] for tau in taus] for i in range(T.shape[1])]


def style(ax, xlabel: str, ylabel: str, title: str, *, logy: bool = False, **legend) -> None:
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
        ax.set_ylim(bottom=FLOOR)
    else:
        ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:      # no method reached the target: no legend to draw
        ax.legend(**legend)


def figures(rows: list[dict], out: Path) -> list[Path]:
    """The three figures of the module docstring, written under ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    many = len({r["suite"] for r in rows}) > 1
    labels = sorted({_label(r, many) for r in rows})
    files = []

    # Dolan–Moré: each method's time to 0.1 % over the best method's, per (instance, repetition)
    probs = sorted({(r["suite"], r["instance"], r.get("repetition", 0)) for r in rows})
    T = np.full((len(probs), len(labels)), np.inf)
    for r in rows:
        if r["ref_time"] is not None:
            T[probs.index((r["suite"], r["instance"], r.get("repetition", 0))), labels.index(_label(r, many))] = \
                max(r["ref_time"], 1e-3)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    prof = dolan_more(T)
    if prof is not None:
        for m, frac in zip(labels, prof[1]):
            ax.step(prof[0], frac, where="post", label=m)
    style(ax, "τ (time to 0.1 % of the reference / best method's time)", "fraction of problems",
          "performance profile (Dolan–Moré)", fontsize="small")
    files.append(_save(fig, out / "profile.png"))

    # gap versus time over the incumbent streams
    horizon = max([t for r in rows for t, _ in (r.get("trace") or [])] + [1e-2])
    grid = np.geomspace(1e-3, horizon, 200)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m in labels:
        rs = [r for r in rows if _label(r, many) == m and r["ref"] is not None]
        if rs:
            curve = mean_gap_curve([r.get("trace") or [] for r in rs], [r["ref"] for r in rs],
                                   [r.get("sense", "max") for r in rs], grid)
            ax.plot(grid, np.maximum(curve, FLOOR), label=m)
    style(ax, "seconds", "mean gap to the reference (%), log", "gap versus time (incumbent streams)",
          logy=True, fontsize="small")
    files.append(_save(fig, out / "gap_vs_time.png"))

    # per family: mean gap to the reference
    fams = sorted({r.get("family") or "?" for r in rows})
    width = 0.8 / max(len(labels), 1)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(fams) + 2), 4.2))
    for i, m in enumerate(labels):
        vals = []
        for f in fams:
            g = [r["ref_gap"] for r in rows if _label(r, many) == m and (r.get("family") or "?") == f
                 and r["ref_gap"] is not None]
            vals.append(100 * float(np.mean(g)) if g else np.nan)
        ax.bar(np.arange(len(fams)) + i * width, vals, width, label=m)
    ax.set_xticks(np.arange(len(fams)) + 0.4 - width / 2, fams)
    ax.set_ylabel("mean gap to the reference (%)")
    ax.set_title("per family")
    ax.legend(fontsize="small")
    files.append(_save(fig, out / "families.png"))
    return files


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sim_summary(rows: list[dict]) -> dict[str, dict]:
    """Per policy label (``suite:policy`` when several suites): the JCT table's columns."""
    out = {}
    for m, rs in by_label(rows).items():
        done = [r for r in rs if r.get("status") == "completed"]
        jct = np.array([x for r in rs for x in r.get("jct") or []], dtype=float)

        def mean(key, rs=done):
            vals = [r[key] for r in rs if _finite(r.get(key))]
            return float(np.mean(vals)) if vals else None

        out[m] = {"runs": len(rs), "completed": len(done), "failures": sum(1 for r in rs if "exception" in r),
                  "jobs_done": int(jct.size), "mean_avg_jct": mean("avg_jct"),
                  "median_jct": float(np.median(jct)) if jct.size else None,
                  "p95_jct": float(np.percentile(jct, 95)) if jct.size else None,
                  "mean_makespan": mean("makespan"), "gpu_utilisation": mean("gpu_utilisation"),
                  "decision_median_s": mean("decision_median_s")}
    return out


SIM_COLUMNS = ("policy", "runs ok", "jobs done", "mean avg JCT (s)", "median JCT (s)", "p95 JCT (s)", "mean makespan (s)",
               "GPU util", "decision med (ms)")


def _sim_cells(s: dict) -> list[str]:
    ms = None if s["decision_median_s"] is None else 1e3 * s["decision_median_s"]
    return [f"{s['completed']}/{s['runs']}", str(s["jobs_done"]), number(s["mean_avg_jct"]), number(s["median_jct"]),
            number(s["p95_jct"]), number(s["mean_makespan"]), number(s["gpu_utilisation"], 3), number(ms, 3)]


def study_summary(rows: list[dict]) -> dict[str, dict]:
    """Per task (``suite:task`` when several suites): cells, failures, seconds."""
    return {t: {"cells": len(rs), "failures": sum(1 for r in rs if "exception" in r),
                "seconds": float(sum(r.get("seconds") or 0.0 for r in rs))} for t, rs in by_label(rows, "task").items()}


STUDY_COLUMNS = ("task", "cells", "failures", "seconds (sum)")


def _study_cells(s: dict) -> list[str]:
    return [str(s["cells"]), str(s["failures"]), f"{s['seconds']:.2f}"]


def print_table(columns, body: dict[str, list[str]], title: str) -> None:
    from rich.table import Table


    tab = Table(title=title)
    for k, col in enumerate(columns):
        tab.add_column(col, justify="left" if k == 0 else "right", no_wrap=k == 0)
    for m, cells in body.items():
        tab.add_row(m, *cells)
    table_console(tab).print(tab)


def jct_cdf(rows: list[dict], out: Path) -> Path:
    """``jct_cdf.png``: per policy, the empirical CDF of every completed job's JCT over all traces."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m, rs in sorted(by_label(rows).items()):
        jct = np.sort([x for r in rs for x in r.get("jct") or []])
        if jct.size:
            ax.step(jct, np.arange(1, jct.size + 1) / jct.size, where="post", label=m)
    style(ax, "job completion time (s), log", "fraction of completed jobs", "JCT CDF per policy (all traces)",
          fontsize="small")
    return _save(fig, out / "jct_cdf.png")


def family_summary(rows: list[dict], suite) -> dict | None:
    """The summary ``dlsched bench FAMILY`` prints, from a suite's rows (None: the suite names no family)."""

    if suite.family is None:
        return None
    return summariser(suite.family)(rows, suite)


def family_summaries(heads: list[dict], rows: list[dict]) -> dict[str, dict]:
    """Per results file whose suite names a family: the family's summary of its rows (scalars only)."""

    out = {}
    for h in heads:
        fam = (h.get("definition") or {}).get("family")
        if summariser(fam) is None:
            continue
        suite = suite_from_definition(h["definition"], Path(str(h.get("suite_file", "."))), source=str(h.get("suite_file")))
        mine = [r for r in rows if r["suite"] == h.get("suite")]
        doc = family_summary(mine, suite)
        out[h["suite"]] = {k: v for k, v in doc.items() if isinstance(v, (int, float, str, bool)) or v is None}
    return out


def _value(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def markdown(heads: list[dict], paths: list, sections: list[tuple[str, tuple, dict]], files: list[Path], out: Path,
             command: str, title: str = "Benchmark report") -> str:
    """A page the docs include: title, provenance (what each suite measures, the command that made its
    results, git revision, date, limits, versions, machine), the tables (``sections``: heading,
    columns, rows) and the figures, with the commands."""
    lines = [f"# {title}", "", f"Made by `{command}` from:", ""]
    for h, p in zip(heads, paths):
        env = h.get("environment", {})
        src = Path(str(h.get("suite_file", "")))
        suite = h.get("suite") if src.parent.parts[-3:] == ("dlsched", "bench", "suites") else str(src)
        made = h.get("command") or f"dlsched bench run {suite} --out {p}"
        about = (h.get("definition") or {}).get("description")
        lines.append(f"- `{p}`" + (f" ({about})" if about else "") + f", made by `{made}`: "
                     f"suite `{h.get('suite')}` ({h.get('suite_digest')}), git `{h.get('git')}`, started "
                     f"{h.get('started')}; limits {h.get('limits')}; dlsched {env.get('dlsched')}, HiGHS "
                     f"{env.get('highs')}, Python {env.get('python')}, {env.get('cpus')} CPUs ({env.get('processor')})")
    for heading, cols, body in sections:
        if heading:
            lines += ["", f"## {heading}"]
        lines += ["", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join([m, *cells]) + " |" for m, cells in body.items()]
    for f in files:
        rel = Path(f).resolve().relative_to(out.resolve()) if Path(f).resolve().is_relative_to(out.resolve()) else f
        lines += ["", f"![{Path(f).stem}]({rel})", "", f"Figure made by `{command}`."]
    return "\n".join(lines) + "\n"


def per_set(rows: list[dict]) -> tuple[tuple, dict[str, list[str]]] | None:
    """Mean gap to the reference (%) and mean seconds per method label and instance set (None: one set
    only, the main table says it all)."""
    sets = list(dict.fromkeys(r.get("set") or "?" for r in rows))
    if len(sets) < 2:
        return None
    body = {}
    for m, rs in by_label(rows).items():
        cells = []
        for s in sets:
            mine = [r for r in rs if (r.get("set") or "?") == s]
            gaps = [r["ref_gap"] for r in mine if r["ref_gap"] is not None]
            secs = [r["seconds"] for r in mine if _finite(r.get("seconds"))]
            cells.append(("-" if not gaps else f"{100 * float(np.mean(gaps)):.4f}")
                         + (f" / {float(np.mean(secs)):.2f}" if secs else ""))
        body[m] = cells
    return ("method", *[f"{s}: mean gap % / s" for s in sets]), body


SOLVE_COLUMNS = ("method", "cells", "solutions", "optimal", "failures", "mean gap %", "max gap %", "reached 0.1%",
                 "mean s", "reference")


def build(results: list[str], out: Path, command: str, figs: str = "draw",
          title: str = "Benchmark report") -> tuple[str, list[Path], bool]:
    """Tables (printed), figures and the page text of ``results``; whether any cell failed.
    ``figs``: ``draw`` the figures, only ``name`` them on the page (``--check``), or ``none``.
    A study suite's family summary comes first (its tasks' table only counts cells); otherwise
    the solve or JCT table does."""
    heads, rows = load(results)
    suites = ", ".join(sorted({h.get("suite", "?") for h in heads}))
    sections: list[tuple[str, tuple, dict]] = []
    files: list[Path] = []
    bad = False
    family = []
    for name, fam in family_summaries(heads, rows).items():
        body = {k: [_value(v)] for k, v in fam.items()}
        print_table(("figure", "value"), body, f"family summary of {name}")
        family.append((f"Family summary: {name}", ("figure", "value"), body))
    solve = with_references([r for r in rows if kind(r) == "solve"])
    if solve:
        summary = summarise(solve)
        print_tables(summary, "dlsched report: " + suites)
        sections.append(("", SOLVE_COLUMNS, {m: _cells(s) for m, s in summary.items()}))
        sets = per_set(solve)
        if sets is not None:
            print_table(*sets, "dlsched report, per instance set: " + suites)
            sections.append(("Per instance set", *sets))
        files += _figures(figs, out, ("profile.png", "gap_vs_time.png", "families.png"), lambda: figures(solve, out))
        bad |= any(s["failures"] for s in summary.values())
    sim = [r for r in rows if kind(r) == "simulate"]
    if sim:
        ss = sim_summary(sim)
        body = {m: _sim_cells(s) for m, s in ss.items()}
        print_table(SIM_COLUMNS, body, "dlsched report, simulations: " + suites)
        sections.append(("Simulations: JCT per policy", SIM_COLUMNS, body))
        files += _figures(figs, out, ("jct_cdf.png",), lambda: [jct_cdf(sim, out)])
        bad |= any(s["failures"] for s in ss.values())
    study = [r for r in rows if kind(r) == "study"]
    if study:
        sections = family + sections
        family = []
        st = study_summary(study)
        body = {t: _study_cells(s) for t, s in st.items()}
        print_table(STUDY_COLUMNS, body, "dlsched report, study tasks: " + suites)
        sections.append(("Study tasks", STUDY_COLUMNS, body))
        bad |= any(s["failures"] for s in st.values())
    sections += family
    return markdown(heads, results, sections, files, out, command, title), files, bad


def _figures(figs: str, out: Path, names: tuple[str, ...], draw) -> list[Path]:
    if figs == "none":
        return []
    return draw() if figs == "draw" else [out / n for n in names]


MADE_BY = re.compile(r"^Made by `dlsched report ([^`]*)` from:$", re.M)


def pages(root: Path) -> list[tuple[Path, list[str]]]:
    """Every generated page under ``root`` (``*/report.md``) and the ``dlsched report`` arguments
    that made it (read from the page's "Made by" line)."""
    out = []
    for page in sorted(Path(root).glob("*/report.md")):
        m = MADE_BY.search(page.read_text())
        if m is None:
            raise InputError(str(page), "line 3", "a \"Made by `dlsched report ...` from:\" line (a generated page)",
                             page.read_text().splitlines()[2:3])
        out.append((page, shlex.split(m.group(1))))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched report", description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="*", help="results files of `dlsched bench run`")
    ap.add_argument("--out", type=Path, default=Path("results/report"), help="folder for the figures and report.md")
    ap.add_argument("--no-figures", action="store_true")
    ap.add_argument("--title", default="Benchmark report", help="the page's heading")
    ap.add_argument("--check", action="store_true",
                    help="write nothing: exit 1 if OUT/report.md differs from the page these results give")
    ap.add_argument("--pages", type=Path, default=None, metavar="DIR",
                    help="remake every DIR/*/report.md with the command written on it (with --check: compare only)")
    ap.add_argument("--compare", action="store_true",
                    help="two results files: print, as JSON, the cells whose values differ (times aside); exit 1 if any")
    args = ap.parse_args(argv)
    if args.compare:
        if len(args.results) != 2:
            raise InputError("<argument>", "results", "two results files with --compare", len(args.results))
        out = compare(*args.results)
        print(json.dumps(out, indent=1, default=str))
        return 1 if out["differ"] or out["only_in_one"] else 0
    if args.pages is not None:
        codes = [main([*page_argv, *(["--check"] if args.check else [])]) for _, page_argv in pages(args.pages)]
        return max(codes, default=0)
    if not args.results:
        raise InputError("<argument>", "results", "results files of `dlsched bench run` (or --pages DIR)", "none")
    if args.out.exists() and not args.out.is_dir():
        raise InputError("<argument>", "--out", "a folder for the figures and report.md", f"'{args.out}' is a file")
    command = "dlsched report " + " ".join(shlex.quote(a) for a in argv if a != "--check")
    text, files, bad = build(args.results, args.out, command,
                             "none" if args.no_figures else "name" if args.check else "draw", args.title)
    page = args.out / "report.md"
    if args.check:
        same = page.is_file() and page.read_text() == text
        print(f"{page}: " + ("up to date" if same else f"differs from what `{command}` writes"))
        return 0 if same else 1
    args.out.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    print("wrote " + ", ".join(str(p) for p in [*files, page]))
    return 1 if bad else 0

"""``dlsched bench quick``: every bundled instance with every backend, checked, in one table.

Fails (exit 1) when a backend misses an instance's recorded optimum, the backends disagree,
or the checker rejects a solution.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dlsched.bench import environment, register_suite
from dlsched.errors import InputError
from dlsched.bench.runner import run_suite
from dlsched.bench.suite import instance_set, load_suite
from dlsched.console import table_console

TOL = 1e-6


def suite(folder: Path | None, backends: tuple[str, ...], time_limit: float | None, threads: int | None):
    """The bundled ``quick`` suite file, narrowed to ``backends`` (method labels) and, when given,
    to the instance files of ``folder``."""
    from dataclasses import replace


    s = load_suite("quick")
    unknown = [b for b in backends if b not in {m.label for m in s.methods}]
    if unknown:
        raise InputError("<argument>", "--backends", f"backends among {', '.join(m.label for m in s.methods)}", unknown[0])
    methods = [m for m in s.methods if m.label in backends]
    instances = s.instances if folder is None else instance_set("<argument>", Path.cwd(), "--instances",
                                                                 {"kind": "folder", "path": str(folder)})
    return replace(s, methods=methods, instances=instances, time_limit=time_limit, threads=threads or 1)


def run(folder: Path | None, backends: tuple[str, ...], time_limit: float | None, threads: int | None, progress: bool) -> list[dict]:
    """Solve every instance with each family's ``exact`` method on each backend, and check it."""

    rows = run_suite(suite(folder, backends, time_limit, threads), None, progress=progress)
    return [{"instance": r["instance"], "family": r.get("family"), "backend": r["method"], "status": r["status"],
             "objective": r.get("objective"), "reference": r.get("reference"), "gap_to_reference": r.get("gap"),
             "build_seconds": r.get("build_seconds", 0.0), "solve_seconds": r.get("solve_seconds", 0.0),
             "checked": r.get("checked"), "exception": r.get("exception")} for r in rows]


def problems(rows: list[dict]) -> list[str]:
    out = []
    by_inst: dict[str, list[dict]] = {}
    for r in rows:
        by_inst.setdefault(r["instance"], []).append(r)
        if r.get("exception"):
            out.append(f"{r['instance']}/{r['backend']}: {r['exception']}")
        elif r["checked"] is not True:
            out.append(f"{r['instance']}/{r['backend']}: checker {'rejected' if r['checked'] is False else 'had no solution'}")
        elif r["gap_to_reference"] is not None and abs(r["gap_to_reference"]) > TOL:
            out.append(f"{r['instance']}/{r['backend']}: {r['objective']} vs reference {r['reference']}")
    for name, rs in by_inst.items():
        vals = [r["objective"] for r in rs if r["objective"] is not None]
        if vals and max(vals) - min(vals) > TOL * max(1.0, abs(max(vals))):
            out.append(f"{name}: backends disagree {vals}")
    return out


@register_suite("quick")
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched bench quick", description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=Path, default=None, help="folder of instance files (default: the quick suite, bundled instances/)")
    ap.add_argument("--backends", default="highs,pyomo,cvxpy")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    folder = args.instances
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    rows = run(folder, backends, args.time_limit, args.threads, progress=not args.json)
    bad = problems(rows)
    if args.json:
        print(json.dumps({"suite": "quick", "rows": rows, "problems": bad,
                          "environment": environment(time_limit=args.time_limit, threads=args.threads)}))
    else:
        from rich.table import Table

        t = Table(title=f"dlsched bench quick: {len({r['instance'] for r in rows})} instances x {len(backends)} backends")
        for col in ("instance", "backend", "status", "value", "reference", "gap", "build s", "solve s", "check"):
            t.add_column(col, justify="left" if col in ("instance", "backend", "status") else "right")
        for r in rows:
            g = r["gap_to_reference"]
            t.add_row(r["instance"], r["backend"], r["status"], f"{r['objective']:.6g}" if r["objective"] is not None else "-",
                      f"{r['reference']:.6g}" if r["reference"] is not None else "-",
                      "-" if g is None else f"{100 * g:.4f}%", f"{r['build_seconds']:.3f}", f"{r['solve_seconds']:.3f}",
                      {True: "ok", False: "REJECTED", None: "-"}[r["checked"]])
        console = table_console()
        console.print(t)
        console.print("all backends agree with the recorded optima; every solution checked" if not bad
                        else "PROBLEMS:\n  " + "\n  ".join(bad))
    return 1 if bad else 0

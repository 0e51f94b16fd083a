"""``dlsched bench quick``: every bundled instance with every backend, checked, in one table.

Fails (exit 1) when a backend misses an instance's recorded optimum, the backends disagree,
or the checker rejects a solution.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.table import Table

import dlsched
from dlsched.bench import environment, register_suite
from dlsched.console import progress as progress_bar, table_console
from dlsched.data import project_root
from dlsched.result import gap_to_reference

TOL = 1e-6


def instance_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def run(folder: Path, backends: tuple[str, ...], time_limit: float | None, threads: int | None, progress: bool) -> list[dict]:
    """Solve every instance with each family's ``exact`` method on each backend, and check it."""

    files = instance_files(folder)
    rows = []

    with progress_bar("bench quick", len(files) * len(backends), enabled=progress) as tick:
        for path in files:
            inst = dlsched.load(path)
            ref = getattr(inst, "reference", None)
            for backend in backends:
                tick(f"{path.name} / {backend}")
                res = dlsched.solve(inst, "exact", backend=backend, time_limit=time_limit, threads=threads)
                report = dlsched.check(inst, res) if res.status.has_solution() else None
                rows.append({
                    "instance": path.name, "family": inst.family, "backend": backend, "status": res.status.value,
                    "objective": res.objective, "reference": ref.objective if ref else None,
                    "gap_to_reference": gap_to_reference(res.objective, ref.objective, res.sense) if ref else None,
                    "build_seconds": res.build_seconds, "solve_seconds": res.solve_seconds,
                    "checked": None if report is None else report.feasible,
                })
    return rows


def problems(rows: list[dict]) -> list[str]:
    out = []
    by_inst: dict[str, list[dict]] = {}
    for r in rows:
        by_inst.setdefault(r["instance"], []).append(r)
        if r["checked"] is not True:
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
    ap.add_argument("--instances", type=Path, default=None, help="folder of instance files (default: bundled instances/)")
    ap.add_argument("--backends", default="highs,pyomo,cvxpy")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    folder = args.instances or project_root() / "instances"
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    rows = run(folder, backends, args.time_limit, args.threads, progress=not args.json)
    bad = problems(rows)
    if args.json:
        print(json.dumps({"suite": "quick", "rows": rows, "problems": bad,
                          "environment": environment(time_limit=args.time_limit, threads=args.threads)}))
    else:

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

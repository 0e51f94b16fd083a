"""Whole-call time limits (docs/contract.md, "Time limit"): wall seconds of one ``dlsched.solve``
call against its limit, as study tasks (suite ``timelimits``).

``timelimit`` times one call (threads=1) of a method (``exact:highs``, ``core``, ``offline``, ...)
on one of :data:`INSTANCES` at one limit, around the whole call (the library starts the budget
when ``solve`` is called, so importing the method's module counts; the instance is made before).
``fixed_cost`` measures what no limit can cover: process start and the imports a ``dlsched
solve`` makes before its clock starts (``dlsched.cli``), the extra seconds of Pyomo and CVXPY on
first use, and loading mknapcb4. Target: wall <= 1.1 x limit + that fixed cost.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import time

from dlsched import api
from dlsched.bench import register_suite
from dlsched.bench.runner import main as run_suite_file
from dlsched.bench.tasks import failures, results_of
from dlsched.data import data_dir
from dlsched.errors import InputError
from dlsched.instance import oasis_gen, placement_gen, smd_gen
from dlsched.instance.generate import random_mcmdk

#: instance name -> how to make it (MCMDK: 500 jobs = 10k columns, 5,000 jobs = 50k columns; the
#: families at 500 jobs; OR-Library's mknapcb4 (250 items) for the quick suite)
INSTANCES = {
    "mcmdk-500": lambda: random_mcmdk(500, 20, 10, seed=1),
    "mcmdk-5000": lambda: random_mcmdk(5000, 10, 10, seed=1),
    "mknapcb4-p0": lambda: api.load(data_dir() / "orlib" / "mkp" / "mknapcb4.txt", problem=0),
    "smd-500": lambda: smd_gen.generate(500, 50, seed=1),
    "oasis-500": lambda: oasis_gen.generate(500, seed=1),
    "placement-500": lambda: placement_gen.generate(500, {"k80": 200, "p100": 200, "v100": 200}, seed=1),
}
IMPORTS = {"dlsched": "import dlsched.cli",
           "pyomo": "import pyomo.environ, pyomo.contrib.solver.solvers.highs",
           "cvxpy": "import cvxpy"}


def timelimit(method: str, instance: str, limit: float) -> dict:
    """One limited call: wall, wall / limit, the overrun beyond 1.1 x limit, status and termination."""
    name, _, backend = method.partition(":")
    params = {"backend": backend} if backend else {}
    if backend in IMPORTS:       # the import is part of the fixed cost (fixed_cost), not of the call
        for module in IMPORTS[backend].removeprefix("import ").split(", "):
            importlib.import_module(module)
    inst = INSTANCES[instance]()
    t0 = time.perf_counter()
    res = api.solve(inst, name, time_limit=limit, threads=1, **params)
    wall = time.perf_counter() - t0
    return {"method": method, "instance": instance, "limit": limit, "wall": wall, "ratio": wall / limit,
            "over": max(0.0, wall - 1.1 * limit), "status": res.status.value, "termination": res.termination,
            "build": res.build_seconds, "guarded": bool(res.stats.get("guarded", False))}


def fixed_cost() -> dict:
    """Seconds of process start + imports per front end (fresh processes) and of loading mknapcb4 p0."""
    out = {}
    for key, stmt in IMPORTS.items():
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS["dlsched"] + "; " + stmt], check=True)
        out[key] = time.perf_counter() - t0
    t0 = time.perf_counter()
    INSTANCES["mknapcb4-p0"]()
    return {"import_seconds": {"dlsched": out["dlsched"], "pyomo": out["pyomo"] - out["dlsched"],
                               "cvxpy": out["cvxpy"] - out["dlsched"]},
            "load_seconds": time.perf_counter() - t0}


def summarise_suite(rows: list[dict], suite) -> dict:
    """Every cell's wall / limit and status; per method and family, the worst wall / limit (and
    where); the cells over 1.1 x limit and the largest overrun; the fixed cost; ``target_met``:
    every overrun within the fixed cost of a CLI call (start, imports of the method's front end,
    loading)."""
    calls = results_of(rows, "timelimit")
    if not calls:
        raise InputError(suite.source, "tasks", "timelimit cells that finished", failures(rows) or "none")
    fixed = next(iter(results_of(rows, "timelimit.fixed_cost")), None)
    out: dict = {}

    def family(r: dict) -> str:
        return r["instance"].rpartition("-")[0]

    for method, fam in dict.fromkeys((r["method"], family(r)) for r in calls):
        worst = max((r for r in calls if r["method"] == method and family(r) == fam), key=lambda r: r["ratio"])
        out[f"{method} ({fam}) worst wall/limit"] = f"{worst['ratio']:.3f} at {worst['instance']} @ {worst['limit']:g} s"
    for r in calls:
        out[f"{r['method']} on {r['instance']} @ {r['limit']:g} s"] = f"{r['ratio']:.3f} ({r['status']}, {r['termination']})"
    out["cells over 1.1 x limit"] = sum(r["over"] > 0 for r in calls)
    out["max over 1.1 x limit (s)"] = max(r["over"] for r in calls)
    if fixed is not None:
        imp = fixed["import_seconds"]
        out["fixed_cost_seconds"] = imp["dlsched"] + fixed["load_seconds"]
        out["target_met"] = all(r["over"] <= out["fixed_cost_seconds"] + imp.get(r["method"].partition(":")[2], 0.0)
                                for r in calls)
    return {**out, "failures": failures(rows), "rows": calls, "fixed_cost": fixed}


@register_suite("timelimits")
def main(argv: list[str]) -> int:
    """``dlsched bench timelimits [--quick] [--json]``: the suite file ``timelimits`` (or
    ``timelimits-quick``) through ``dlsched bench run``, which prints its summary."""
    ap = argparse.ArgumentParser(prog="dlsched bench timelimits", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="suite timelimits-quick")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    return run_suite_file(["timelimits-quick" if args.quick else "timelimits"] + (["--json"] if args.json else []))

"""``dlsched bench smd``: the acceptance figures of the SMD family (docs/smd.md, docs/results/smd/).

Parts (``--quick`` runs smaller versions of the same parts):

1. **calibration** — per DL2 model, median and 90th-percentile relative throughput error of the
   layered model (stored constants) and of Optimus's fitted f(p, w) over the measured grid
   (the no-overlap refit only without ``--quick``);
2. **gaps** — on seeded small instances (4–8 jobs, DL2/Optimus mixes, online arrivals), the
   time-indexed optimum (MODELS.md §2.4, resizing, provable horizon) against SMD, Optimus greedy
   and DRF, all simulated with re-planning at every arrival and completion; every schedule is
   checked;
3. **exactness** — the parametric iteration against the enumerated exact MILP of §2.2 on
   instances of ≤ 12 jobs (must agree), and, without ``--quick``, at 50, 200 and 500 jobs
   (iterations, seconds);
4. **decision time** — one SMD decision for 500 active jobs on 100 servers (median seconds);
5. **load** (without ``--quick``) — 200 jobs on 10 DL2 nodes arriving at 8 per slot, both mixes,
   3 seeds: average JCT (slots) of SMD, Optimus and DRF (no optimum at this size).

Every random choice comes from ``--seed``; solver threads default to 1. The parts are the cells of
the suite file ``smd`` (``smd-quick`` with ``--quick``; ``dlsched/bench/suites/``), tasks
``smd.calibration``, ``smd.gap``, ``smd.exact``, ``smd.decision`` and ``smd.load``, run with the
command line's settings; :func:`summarise_suite` is the summary (also of ``dlsched bench run smd``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from rich.table import Table

from dlsched import api
from dlsched.bench import environment, register_suite
from dlsched.bench.runner import run_suite
from dlsched.bench.suite import suite_from_definition
from dlsched.bench.tasks import failures, load_definition, results_of, with_grid, with_settings
from dlsched.check import check_smd
from dlsched.console import table_console
from dlsched.errors import InputError
from dlsched.instance.smd_gen import generate
from dlsched.perf.calibrate import error_table, relative_errors
from dlsched.perf.optimus_fit import fit_sync, relative_errors as opt_errors
from dlsched.perf.profiles import builtin
from dlsched.perf.speeds import read_config_speed
from dlsched.solvers.milp import solve_core
from dlsched.solvers.options import SolveOptions
from dlsched.solvers.smd import TIE_BREAK, decide, epoch_core, parametric
from dlsched.result import Status


def calibration(quick: bool) -> list[dict]:
    tables, _ = read_config_speed()
    if not quick:
        return error_table(tables)
    rows = []
    for m, tb in tables.items():
        lay = relative_errors(builtin(m), tb)
        opt = opt_errors(fit_sync(tb), tb)
        rows.append({"model": m, "points": int(tb.p.size), "layered_median": float(np.median(lay)),
                     "layered_p90": float(np.quantile(lay, 0.9)), "optimus_median": float(np.median(opt)),
                     "optimus_p90": float(np.quantile(opt, 0.9))})
    return rows


def small_instance(k: int, seed: int):
    n_jobs = 4 + k % 5                      # 4..8 jobs
    servers = 1 + (k // 5) % 2              # 1 or 2 DL2 nodes
    mix = ("dl2", "optimus")[k % 2]
    return generate(n_jobs, servers, mix=mix, seed=seed * 1000 + k, max_len_slots=3.0, arrival_rate=1.0)


def calibration_task(quick: bool) -> dict:
    return {"rows": calibration(quick)}


def gap_task(k: int, seed: int, time_limit: float | None, threads: int) -> dict:
    """Small instance ``k`` (:func:`small_instance`): every method against the time-indexed optimum."""
    return _gap_row(small_instance(k, seed), time_limit, threads)


def _gap_row(inst, time_limit: float, threads: int) -> dict:
    """One small instance: the time-indexed optimum and every method's gap to it, all checked."""

    t0 = time.perf_counter()
    ti = api.solve(inst, "time-indexed", time_limit=time_limit, threads=threads)
    ti_s = time.perf_counter() - t0
    row = {"instance": inst.name, "jobs": inst.n_jobs, "servers": inst.n_servers, "horizon": ti.stats["horizon"],
           "horizon_provable": ti.stats["horizon_provable"], "ti_status": ti.status.value,
           "ti_objective": ti.objective, "ti_bound": ti.bound, "ti_seconds": ti_s,
           "ti_checked": bool(api.check(inst, ti).feasible) if ti.solution is not None else None}
    for m, kw in (("smd", {}), ("smd_lp", {"sub": "lp-round"}), ("optimus", {}), ("drf", {})):
        t0 = time.perf_counter()
        res = api.solve(inst, "smd" if m == "smd_lp" else m, threads=threads, **kw)
        rep = api.check(inst, res)
        row[m] = res.objective
        row[f"{m}_seconds"] = time.perf_counter() - t0
        row[f"{m}_checked"] = bool(rep.feasible)
        # gap to the proven optimum (to the bound if the MILP stopped early: then an upper estimate)
        ref = ti.objective if ti.status == Status.OPTIMAL else ti.bound
        row[f"gap_{m}"] = (res.objective - ref) / ref if ref else None
    return row


def exact_task(n: int, repeat: int, seed: int, threads: int) -> dict:
    """The parametric iteration (and its lp-round variant) against the enumerated exact MILP, ``n`` jobs."""
    opts = SolveOptions(threads=threads)
    inst = generate(n, max(1, n // 5), seed=seed * 7919 + n * 31 + repeat, arrival_rate=None)
    core = epoch_core(inst, np.arange(n))
    t0 = time.perf_counter()
    ex = solve_core(core, opts)
    t_ex = time.perf_counter() - t0
    out = parametric(core, opts)
    lp = parametric(core, opts, sub="lp-round")
    tol = 1e-6 * max(1.0, abs(ex.objective))
    return {"jobs": n, "servers": inst.n_servers, "columns": int(core.n_cols), "exact": ex.objective,
            "exact_seconds": t_ex, "parametric": out.objective, "parametric_bound": out.bound,
            "iterations": out.iterations, "parametric_seconds": out.seconds, "certified": out.optimal,
            "agree": bool(abs(out.objective - ex.objective) <= tol),
            "lp_round": lp.objective, "lp_round_bound": lp.bound, "lp_round_delta": lp.delta,
            "lp_round_iterations": lp.iterations, "lp_round_seconds": lp.seconds,
            "lp_round_gap": (lp.objective - ex.objective) / ex.objective,
            # bound <= exact <= SMD(lp-round) <= exact + Δ (MODELS.md §2.3 "guarantee")
            "lp_round_guarantee_holds": bool(lp.bound <= ex.objective + tol and ex.objective <= lp.objective + tol
                                             and lp.objective <= ex.objective + lp.delta + tol)}


def decision_task(repeats: int, seed: int, threads: int) -> dict:
    inst = generate(500, 100, seed=seed, arrival_rate=None)
    opts = SolveOptions(threads=threads)
    active = np.arange(inst.n_jobs)
    times, iters, times_lp = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        alloc, out, core = decide(inst, active, opts, slot_aware=True, wait_slots=1.0, tie_break=TIE_BREAK)
        times.append(time.perf_counter() - t0)
        iters.append(out.iterations)
        t0 = time.perf_counter()
        decide(inst, active, opts, slot_aware=True, wait_slots=1.0, tie_break=TIE_BREAK, sub="lp-round")
        times_lp.append(time.perf_counter() - t0)

    rep = check_smd(inst, {"allocation": alloc})
    return {"jobs": 500, "servers": 100, "repeats": repeats, "seconds": times, "seconds_p50": float(np.median(times)),
            "seconds_lp_round": times_lp, "seconds_p50_lp_round": float(np.median(times_lp)),
            "iterations": iters, "candidates": int(core.n_jobs), "running": int((alloc[:, 0] > 0).sum()),
            "checked": bool(rep.feasible)}


def load_task(mix: str, k: int, seed: int, threads: int) -> dict:
    """200 jobs on 10 DL2 nodes arriving at 8 per slot (instance seed ``100 seed + k``)."""
    s = seed * 100 + k
    return _load_row(generate(200, 10, mix=mix, seed=s, arrival_rate=8.0, max_len_slots=6.0), mix, s, threads)


def _load_row(inst, mix: str, seed: int, threads: int) -> dict:
    """Average JCT of SMD, Optimus and DRF on one loaded instance, every schedule checked."""

    row = {"mix": mix, "seed": seed, "jobs": inst.n_jobs, "servers": inst.n_servers}
    for m in ("smd", "optimus", "drf"):
        t0 = time.perf_counter()
        res = api.solve(inst, m, threads=threads)
        row[f"{m}_avg_jct"] = (res.objective - float(inst.arrival.sum())) / inst.n_jobs
        row[f"{m}_seconds"] = time.perf_counter() - t0
        row[f"{m}_checked"] = bool(api.check(inst, res).feasible)
    return row


def summarise(cal, gap_rows, exact_rows, dec) -> dict:
    def mean(key):
        vals = [r[key] for r in gap_rows if r[key] is not None]
        return float(np.mean(vals)) if vals else None

    small = [r for r in exact_rows if r["jobs"] <= 12]
    return {
        "instances": len(gap_rows),
        "mean_gap_smd": mean("gap_smd"), "mean_gap_optimus": mean("gap_optimus"), "mean_gap_drf": mean("gap_drf"),
        "mean_gap_smd_lp_round": mean("gap_smd_lp"),
        "max_gap_smd": max((r["gap_smd"] for r in gap_rows), default=None),
        "ti_all_optimal": all(r["ti_status"] == "optimal" for r in gap_rows),
        "ti_all_horizon_provable": all(r["horizon_provable"] for r in gap_rows),
        "max_horizon": max((r["horizon"] for r in gap_rows), default=None),
        "all_checked": all(r[f"{m}_checked"] for r in gap_rows for m in ("smd", "smd_lp", "optimus", "drf"))
        and all(r["ti_checked"] for r in gap_rows),
        "decision_seconds_p50": dec["seconds_p50"],
        "decision_seconds_p50_lp_round": dec["seconds_p50_lp_round"],
        "lp_round_guarantee_holds": all(r["lp_round_guarantee_holds"] for r in exact_rows),
        "exact_small_agree": f"{sum(r['agree'] for r in small)}/{len(small)}",
        "calibration_max_median_error": max(r["layered_median"] for r in cal),
    }


def summarise_suite(rows: list[dict], suite) -> dict:
    """The summary of an smd study suite's rows (``dlsched bench smd``, ``dlsched bench run smd``)."""
    cal = [r for part in results_of(rows, "smd.calibration") for r in part["rows"]]
    gap_rows, exact_rows = results_of(rows, "smd.gap"), results_of(rows, "smd.exact")
    dec, load_rows = results_of(rows, "smd.decision"), results_of(rows, "smd.load")
    if not (cal and gap_rows and exact_rows and dec):
        raise InputError(suite.source, "tasks", "smd.calibration, smd.gap, smd.exact and smd.decision cells that finished",
                         failures(rows) or "none")
    summary = summarise(cal, gap_rows, exact_rows, dec[0])
    if load_rows:
        jct = {m: float(np.mean([r[f"{m}_avg_jct"] for r in load_rows])) for m in ("smd", "optimus", "drf")}
        summary.update({f"load_avg_jct_{m}": v for m, v in jct.items()})
        summary["load_all_checked"] = all(r[f"{m}_checked"] for r in load_rows for m in jct)
    return {**summary, "calibration": cal, "gap_rows": gap_rows, "exactness": exact_rows, "decision": dec[0],
            "load": load_rows, "failures": failures(rows)}


@register_suite("smd")
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched bench smd", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller runs of every part: suite smd-quick (about a minute)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--seed", type=int, default=None, help="default: the suite file's (0)")
    ap.add_argument("--instances", type=int, default=None, help="small gap instances (default: the suite file's, 20 quick, 40 full)")
    ap.add_argument("--time-limit", type=float, default=None, help="per time-indexed MILP (s; default: the suite file's, 120)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", default="results/smd", help="folder for the per-instance rows (JSON)")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    name = "smd-quick" if args.quick else "smd"
    doc, path = load_definition(name)
    doc = with_settings(doc, seed=args.seed, time_limit=args.time_limit, threads=args.threads)
    if args.instances is not None:
        doc = with_grid(doc, "smd.gap", k={"start": 0, "count": args.instances})
    suite = suite_from_definition(doc, path, source=f"{path} (with the command line's settings)")
    doc = summarise_suite(run_suite(suite, None, progress=not args.json), suite)
    doc["seconds"] = time.perf_counter() - t0
    doc["environment"] = environment(seed=suite.seed, time_limit=suite.time_limit, threads=suite.threads,
                                     quick=args.quick, suite=name)
    try:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / ("smd-quick.json" if args.quick else "smd.json")).write_text(json.dumps(doc, indent=1, default=float))
    except OSError:
        pass
    if args.json:
        print(json.dumps(doc, default=float))
    else:
        _print(doc)
    ok = doc["all_checked"] and doc["lp_round_guarantee_holds"] and not doc["failures"] \
        and doc["exact_small_agree"].split("/")[0] == doc["exact_small_agree"].split("/")[1]
    return 0 if ok else 1


def _print(doc: dict) -> None:
    con = table_console()
    t = Table(title="layered model calibration (relative throughput error)")
    for c in ("model", "points", "layered median", "layered p90", "optimus median", "optimus p90"):
        t.add_column(c)
    for r in doc["calibration"]:
        t.add_row(r["model"], str(r["points"]), f"{100 * r['layered_median']:.1f}%", f"{100 * r['layered_p90']:.1f}%",
                  f"{100 * r['optimus_median']:.1f}%", f"{100 * r['optimus_p90']:.1f}%")
    con.print(t)
    t = Table(title=f"gap to the time-indexed optimum ({doc['instances']} instances)")
    for c in ("method", "mean gap", "max gap"):
        t.add_column(c)
    for m in ("smd", "smd_lp", "optimus", "drf"):
        g = [r[f"gap_{m}"] for r in doc["gap_rows"]]
        t.add_row(m, f"{100 * np.mean(g):.2f}%", f"{100 * np.max(g):.2f}%")
    con.print(t)
    t = Table(title="parametric iteration vs enumerated exact MILP (MODELS.md §2.2)")
    for c in ("jobs", "columns", "exact s", "parametric s", "iterations", "agree", "lp-round s", "lp-round gap", "Δ holds"):
        t.add_column(c)
    for r in doc["exactness"]:
        t.add_row(str(r["jobs"]), str(r["columns"]), f"{r['exact_seconds']:.3f}", f"{r['parametric_seconds']:.3f}",
                  str(r["iterations"]), str(r["agree"]), f"{r['lp_round_seconds']:.3f}", f"{100 * r['lp_round_gap']:.3f}%",
                  str(r["lp_round_guarantee_holds"]))
    con.print(t)
    con.print(f"one SMD decision, 500 jobs / 100 servers: median {doc['decision_seconds_p50']:.3f} s")
    if doc.get("load"):
        con.print("200 jobs / 10 nodes, 8 arrivals per slot: average JCT (slots) "
                  + ", ".join(f"{m} {doc[f'load_avg_jct_{m}']:.2f}" for m in ("smd", "optimus", "drf")))

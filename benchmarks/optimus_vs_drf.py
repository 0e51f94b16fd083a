"""Optimus vs DRF on DL2's job mix with DL2's measured speeds (issue 11 acceptance; MODELS.md §5-§7).

Setting: ``dl2_trace(--jobs, seed)`` for seeds ``--first-seed``.. (``--seeds`` of them; DL2's 8 job
types, Poisson arrivals of 3 jobs per 1,200-s slot), on ``dl2_cluster(--nodes)`` (DL2's default 96
nodes of 8 CPU slots and 2 GPUs), speeds from ``TableSpeed`` (DL2's measured config_speed.txt,
interpolated), a restart cost of ``--restart-seconds`` charged by the engine to every job whose
placement changes (all policies alike). FIFO, SRTF, DRF, Tetris, Optimus and the ablation
``optimus-relative`` (``gain="relative"``) run on every trace, and so does the ablation
``optimus-oracle`` (``models="oracle"``: Optimus fed the true speeds and remaining steps instead
of its online fits; ``dlsched.policies.optimus.ABLATIONS``) on the first ``--oracle-seeds``
(default: all); SMD (slow: an MILP per event) on the first ``--smd-seeds`` traces. Per run it also
records the load while jobs arrive (:func:`contention`), to show that the setting is contended.
Per trace it computes lower bounds on the average JCT that hold for every policy
(:func:`lower_bounds`: each job alone on the whole cluster at its fastest size, and the
time-indexed LP of ``dlsched.sim.bounds``) and reports DRF / LB and Optimus / LB.

Prints one table (means over traces; ratios are per trace, then averaged: the mean of
avg JCT(DRF) / avg JCT(Optimus) and of makespan(DRF) / makespan(Optimus), with min and max), the
per-trace bounds and ratios, and Optimus's model errors pooled over all jobs of all traces: the
median relative error of its speed fit against the measured table per job type (the fit each job
had when it finished), and of its remaining-steps (= remaining-epochs) estimate at 25/50/75 % of
each job's progress. ``--json`` prints one JSON object instead.

    PYTHONPATH=$PWD python benchmarks/optimus_vs_drf.py            # the figures in docs/results.md
    PYTHONPATH=$PWD python benchmarks/optimus_vs_drf.py --first-seed 100 --seeds 5 --smd-seeds 0   # tuning seeds
    PYTHONPATH=$PWD python benchmarks/optimus_vs_drf.py --quick    # 2 traces of 60 jobs on 24 nodes (~1 min)
    PYTHONPATH=$PWD python benchmarks/optimus_vs_drf.py --policies drf,optimus-oracle-pairs --smd-seeds 0   # ablations only

No default was tuned on seeds 1..10 (Optimus's options were compared on seeds 100-104).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

BASELINES = ("fifo", "srtf", "drf", "tetris")
#: Optimus and its ablations (dlsched.policies.optimus.ABLATIONS), each compared with DRF trace by trace
VERSUS = ("optimus", "optimus-relative", "optimus-oracle", "optimus-pairs", "optimus-oracle-pairs", "optimus-oracle-speed-pairs",
          "optimus-nnls")


def lower_bounds(trace, cluster, restart_seconds: float, lp_slot_seconds: float) -> dict:
    """Lower bounds on this trace's average JCT valid for every policy (dlsched.sim.bounds): each job
    alone on the whole cluster at its fastest size, and the time-indexed LP; ``bound`` = the larger."""
    from dlsched.sim.bounds import trace_lower_bound
    from dlsched.sim.speed import TableSpeed

    b = trace_lower_bound(trace, cluster, TableSpeed(), restart_seconds, slot_seconds=lp_slot_seconds)
    return {"alone": b["alone"], "capacity_srpt": b["capacity"], "lp": b["lp"], "lp_status": b["lp_status"],
            "lp_slot_seconds": lp_slot_seconds, "bound": b["bound"]}


def contention(res) -> dict:
    """Load while jobs still arrive: mean share of each resource held and mean number of jobs in
    the system over [first, last arrival], and the mean queueing delay (arrival to first start)."""
    last = float(res.arrival.max())
    seg, used = res.segments, res.segment_used
    keep = seg[:, 0] < last
    dt = np.minimum(seg[keep, 1], last) - seg[keep, 0]
    held = (used[keep] * dt[:, None]).sum(axis=0) / max(dt.sum(), 1e-12) / np.where(res.capacity_total > 0, res.capacity_total, 1.0)
    t = np.linspace(float(res.arrival.min()), last, 500)
    in_system = ((res.arrival[None, :] <= t[:, None]) & ~(res.completion[None, :] <= t[:, None])).sum(axis=1)
    return {"held_until_last_arrival": dict(zip(res.resources, held.round(3).tolist())),
            "jobs_in_system": float(in_system.mean()), "queueing_delay": float(np.nanmean(res.queueing_delay))}


def run(seeds: int, n_jobs: int, nodes: int, restart_seconds: float, smd_seeds: int, run_deadline: float | None,
        verbose: bool = True, oracle_seeds: int = 0, first_seed: int = 1, lp_slot_seconds: float = 3600.0,
        policies: list[str] | None = None) -> dict:
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.sim.engine import simulate
    from dlsched.registry import make_policy
    from dlsched.policies.optimus import ABLATIONS, make_ablation
    from dlsched.sim.speed import TableSpeed

    cluster = dl2_cluster(nodes)
    rows, errors, bounds = [], [], {}
    for k, seed in enumerate(range(first_seed, first_seed + seeds)):
        trace = dl2_trace(n_jobs, seed)
        bounds[seed] = lower_bounds(trace, cluster, restart_seconds, lp_slot_seconds)
        names = ["optimus", *BASELINES, "optimus-relative"] + (["smd"] if k < smd_seeds else []) + \
            (["optimus-oracle"] if k < oracle_seeds else [])
        if policies is not None:  # exactly these (SMD still only on the first smd_seeds traces)
            names = [n for n in policies if n != "smd" or k < smd_seeds]
        for name in names:
            policy = make_ablation(name) if name in ABLATIONS else make_policy(name)
            t0 = time.perf_counter()
            res = simulate(trace, cluster, policy, TableSpeed(), seed=seed, restart_seconds=restart_seconds,
                           deadline=run_deadline)
            ok = res.status == "completed"
            rows.append({"seed": seed, "policy": name, "status": res.status,
                         "avg_jct": float(np.mean(res.jct)) if ok else None,
                         "makespan": res.makespan() if ok else None,
                         "gpu_utilisation": res.utilisation().get("gpu"),
                         "wall_seconds": time.perf_counter() - t0, **contention(res)})
            if name == "optimus":
                errors += [{"seed": seed, **r} for r in policy.error_records()]
            if verbose:
                r = rows[-1]
                print(f"seed {seed:2d} {name:8s} {r['status']:9s} avg JCT {r['avg_jct'] or float('nan'):10.0f} s  "
                      f"makespan {r['makespan'] or float('nan'):10.0f} s  wall {r['wall_seconds']:6.1f} s",
                      file=sys.stderr, flush=True)
    return summarise(rows, errors, bounds, {"traces": seeds, "first_seed": first_seed, "jobs": n_jobs, "nodes": nodes,
                                            "restart_seconds": restart_seconds,
                                    "smd_traces": min(smd_seeds, seeds), "oracle_traces": min(oracle_seeds, seeds),
                                    "speed": "TableSpeed (DL2 config_speed.txt)",
                                    "arrivals": "Poisson, 3 jobs per 1,200 s", "run_deadline": run_deadline,
                                    "policies": policies})


def _per_trace_ratio(rows: list[dict], key: str, policy: str = "optimus") -> list[float]:
    by = {(r["seed"], r["policy"]): r for r in rows}
    out = []
    for seed in sorted({r["seed"] for r in rows}):
        a, b = by.get((seed, "drf")), by.get((seed, policy))
        if a and b and a[key] is not None and b[key]:
            out.append(a[key] / b[key])
    return out


def per_seed(rows: list[dict], bounds: dict) -> list[dict]:
    """Per trace: the lower bound, avg JCT and makespan of DRF, Optimus and its ablations (relative
    gain, oracle models), and their ratios to the bound and DRF / each."""
    by = {(r["seed"], r["policy"]): r for r in rows}
    out = []
    for seed, b in sorted(bounds.items()):
        row = {"seed": seed, "lower_bound": b["bound"], "lower_bound_alone": b["alone"], "lower_bound_lp": b["lp"]}
        for name in ("drf", *VERSUS):
            r = by.get((seed, name))
            if r is None and name != "drf":
                continue
            jct = r["avg_jct"] if r else None
            row[f"{name}_avg_jct"] = jct
            row[f"{name}_makespan"] = r["makespan"] if r else None
            row[f"{name}_over_lb"] = jct / b["bound"] if jct and b["bound"] else None
        for name in VERSUS:
            if f"{name}_avg_jct" not in row:
                continue
            a, o = row["drf_avg_jct"], row[f"{name}_avg_jct"]
            row[f"drf_over_{name}"] = a / o if a and o else None
        out.append(row)
    return out


def summarise(rows: list[dict], errors: list[dict], bounds: dict, setting: dict) -> dict:
    from dlsched.policies.optimus import summarise_errors

    table = {}
    for name in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == name]
        done = [r for r in mine if r["status"] == "completed"]
        table[name] = {"runs": len(mine), "completed": len(done),
                       **{k: (float(np.mean([r[k] for r in done])) if done else None)
                          for k in ("avg_jct", "makespan", "gpu_utilisation", "wall_seconds", "jobs_in_system",
                                    "queueing_delay")},
                       "held_until_last_arrival": {r: float(np.mean([x["held_until_last_arrival"][r] for x in mine]))
                                                   for r in mine[0]["held_until_last_arrival"]}}
    jct, mk = _per_trace_ratio(rows, "avg_jct"), _per_trace_ratio(rows, "makespan")
    stat = lambda v: {"mean": float(np.mean(v)), "min": float(np.min(v)), "max": float(np.max(v)), "n": len(v)} if v else None  # noqa: E731
    from dlsched.bench import environment

    ablations = {name: {"jct_ratio_drf_over": stat(_per_trace_ratio(rows, "avg_jct", name)),
                        "makespan_ratio_drf_over": stat(_per_trace_ratio(rows, "makespan", name))}
                 for name in VERSUS[1:] if any(r["policy"] == name for r in rows)}
    return {"setting": setting, "table": table,
            "jct_ratio_drf_over_optimus": stat(jct), "makespan_ratio_drf_over_optimus": stat(mk), "ablations": ablations,
            "optimus_model_errors": summarise_errors(errors), "per_seed": per_seed(rows, bounds),
            "lower_bounds": {str(k): v for k, v in bounds.items()}, "runs": rows,
            "environment": environment(seeds=sorted({r["seed"] for r in rows}))}


def print_report(doc: dict) -> None:
    s = doc["setting"]
    print(f"DL2 job mix, {s['traces']} traces x {s['jobs']} jobs, {s['nodes']} nodes, {s['speed']}, "
          f"restart {s['restart_seconds']:g} s (SMD on {s['smd_traces']} traces)")
    print(f"{'policy':15s} {'runs ok':>8s} {'avg JCT (h)':>12s} {'makespan (h)':>13s} {'GPU util':>9s} "
          f"{'held until last arrival':>24s} {'in system':>10s} {'queueing (h)':>13s} {'wall (s)':>9s}")
    for name, r in doc["table"].items():
        h = lambda x: "-" if x is None else f"{x / 3600:.2f}"  # noqa: E731
        held = " ".join(f"{k} {v:.2f}" for k, v in r["held_until_last_arrival"].items())
        print(f"{name:15s} {r['completed']:>4d}/{r['runs']:<3d} {h(r['avg_jct']):>12s} {h(r['makespan']):>13s} "
              f"{(r['gpu_utilisation'] or float('nan')):9.3f} {held:>24s} {(r['jobs_in_system'] or float('nan')):10.1f} "
              f"{h(r['queueing_delay']):>13s} {(r['wall_seconds'] or float('nan')):9.1f}")
    for key, label in (("jct_ratio_drf_over_optimus", "avg JCT"), ("makespan_ratio_drf_over_optimus", "makespan")):
        v = doc[key]
        print(f"DRF / Optimus {label}: " + ("-" if v is None else
              f"{v['mean']:.2f}x (per-trace min {v['min']:.2f}, max {v['max']:.2f}, {v['n']} traces)"))
    for name, v in doc["ablations"].items():
        for key, label in (("jct_ratio_drf_over", "avg JCT"), ("makespan_ratio_drf_over", "makespan")):
            r = v[key]
            print(f"DRF / {name} {label}: " + ("-" if r is None else
                  f"{r['mean']:.2f}x (per-trace min {r['min']:.2f}, max {r['max']:.2f}, {r['n']} traces)"))
    ran = [n for n in VERSUS if doc["per_seed"] and f"{n}_avg_jct" in doc["per_seed"][0]]
    print(f"{'seed':>4s} {'LB (h)':>7s} {'alone':>6s} {'LP':>6s} {'DRF/LB':>7s} " +
          " ".join(f"{n + '/LB':>22s} {'DRF/' + n:>25s}" for n in ran))
    f = lambda x, d=2: "-" if x is None else f"{x:.{d}f}"  # noqa: E731
    for r in doc["per_seed"]:
        h = lambda x: None if x is None else x / 3600  # noqa: E731
        print(f"{r['seed']:>4d} {f(h(r['lower_bound'])):>7s} {f(h(r['lower_bound_alone'])):>6s} {f(h(r['lower_bound_lp'])):>6s} "
              f"{f(r['drf_over_lb']):>7s} " + " ".join(f"{f(r[n + '_over_lb']):>22s} {f(r['drf_over_' + n]):>25s}" for n in ran))
    if not doc["optimus_model_errors"]["speed_by_type"]:
        return
    e = doc["optimus_model_errors"]
    print("Optimus remaining-steps estimate, median relative error at 25/50/75 % of progress: " +
          ", ".join(f"{e['remaining'][c]:.3f} (n={e['n'][c]})" for c in e["remaining"]))
    print("Optimus speed fit vs the measured table, median relative error at 25/50/75 %: " +
          ", ".join(f"{e['speed'][c]:.3f}" for c in e["speed"]))
    print("  per job type (fit at completion): " + ", ".join(f"{t} {v:.3f}" for t, v in e["speed_by_type"].items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--nodes", type=int, default=96)
    ap.add_argument("--restart-seconds", type=float, default=30.0)
    ap.add_argument("--smd-seeds", type=int, default=3)
    ap.add_argument("--run-deadline", type=float, default=900.0, help="wall seconds per run")
    ap.add_argument("--oracle-seeds", type=int, default=None, help="traces with the optimus-oracle ablation (default: all)")
    ap.add_argument("--first-seed", type=int, default=1, help="traces are seeds first..first+seeds-1 (tuning: 100)")
    ap.add_argument("--lp-slot-seconds", type=float, default=3600.0, help="slot of the LP lower bound")
    ap.add_argument("--policies", default=None, help="comma-separated: run exactly these (policies of the table and "
                    "Optimus's ablations) instead of the default set; DRF is needed for the ratios")
    ap.add_argument("--quick", action="store_true", help="2 traces of 60 jobs on 24 nodes, no SMD")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None, metavar="FILE", help="also write the JSON object to FILE")
    a = ap.parse_args(argv)
    if a.quick:
        a.seeds, a.jobs, a.nodes, a.smd_seeds, a.oracle_seeds = 2, 60, 24, 0, 1
    if a.oracle_seeds is None:
        a.oracle_seeds = a.seeds
    doc = run(a.seeds, a.jobs, a.nodes, a.restart_seconds, a.smd_seeds, a.run_deadline, verbose=not a.json,
              oracle_seeds=a.oracle_seeds, first_seed=a.first_seed, lp_slot_seconds=a.lp_slot_seconds,
              policies=a.policies.split(",") if a.policies else None)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(doc, fh, default=str, indent=1)
    if a.json:
        print(json.dumps(doc, default=str))
    else:
        print_report(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())

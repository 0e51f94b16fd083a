"""``dlsched bench sim``: every policy of the table on the same seeded traces, in one run, one table.

Setting (MODELS.md §5–§7): DL2's job mix (``dlsched.instance.synthetic.dl2_trace``, seeds
``1..--seeds``) on DL2's cluster (``dl2_cluster(--nodes)``), speeds from DL2's measured table
(``--speed table``), ``--restart-seconds`` charged at every placement change. Every policy of
``dlsched.policies`` except offline references runs on every trace (``--policies`` picks a
subset); each run has a wall-clock budget ``--run-deadline`` (a run that hits it is reported
``time_limit`` and its figures are left out of the means and ratios); a policy that refuses the
trace (an InputError, e.g. OASiS's policies on a trace without utilities) is reported ``refused``.
The table says why a policy's runs did not complete (a numbered note: the refusal, the exception's
class and message, the time limit; ``not_completed`` in ``--json``) and which policies it left
out (``skipped``: the offline references, which are told the whole trace in advance).

Per policy the table gives the mean over traces of the average JCT, median and p95 JCT, makespan,
GPU utilisation and decision latency. ``jct_ratio_drf_over_optimus`` is the mean over traces of
avg JCT(DRF) / avg JCT(Optimus) on the same trace, ``makespan_ratio_drf_over_optimus`` likewise;
null when the table has no ``optimus`` or a run did not complete. ``optimus_model_errors``:
Optimus's median relative errors of its remaining-epochs estimate and of its speed fit at 25/50/75 %
of each job's progress, pooled over its completed runs (:func:`model_errors`). ``--json`` prints
exactly one JSON object with the environment recorded.

``--quick``: 3 traces of 40 jobs on 16 nodes, 60 s per run. The runs are the cells of the suite
file ``sim`` (``dlsched/bench/suites/sim.toml``) with these settings; ``dlsched bench run sim``
runs the file as is and prints :func:`summarise_suite`.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from dlsched.bench import environment, register_suite
from dlsched.bench.runner import run_suite
from dlsched.bench.simcells import simulate_cell
from dlsched.bench.suite import suite_from_definition
from dlsched.bench.tasks import load_definition
from dlsched.console import number, table_console
from dlsched.policies.optimus import summarise_errors
from dlsched.registry import policy_class, policy_names
from dlsched.sim.plots import write_figures

#: per-run figures kept in the JSON rows
_FIGURES = ("completed", "avg_jct", "median_jct", "p95_jct", "p99_jct", "makespan", "avg_queueing_delay", "jain_fairness",
            "decision_median_s", "decision_p95_s", "engine_per_event_s", "events", "wall_seconds", "gpu_utilisation")


def policies_to_run(names: list[str] | None) -> list[str]:
    if names:
        for n in names:
            policy_class(n)             # an unknown name is an InputError
        return names
    return [n for n in policy_names() if n not in skipped_policies()]


def skipped_policies() -> dict[str, str]:
    """The policies the default table leaves out, with the reason: offline references, which are
    told the whole trace in advance (an online policy is not) and solve one MILP over it."""
    return {n: "offline reference (told the whole trace in advance; one MILP over it, for small traces): "
               f"not comparable with the online policies; run it with --policies {n}"
            for n in policy_names() if getattr(policy_class(n), "offline", False)}


def suite(seeds: int, n_jobs: int, nodes: int, policies: list[str], speed_name: str, restart_seconds: float,
          run_deadline: float | None):
    """The bundled ``sim`` suite file (``dlsched/bench/suites/sim.toml``) with these settings."""
    doc, path = load_definition("sim")
    doc = {k: v for k, v in doc.items() if k != "time_limit"}
    doc.update(speed=speed_name, restart_seconds=restart_seconds, cluster={"generator": "dl2", "params": {"n_servers": nodes}},
               traces=[{**doc["traces"][0], "seeds": {"start": 1, "count": seeds}, "params": {"n_jobs": n_jobs}}],
               policies=[{"name": p} for p in policies], **({} if run_deadline is None else {"time_limit": run_deadline}))
    return suite_from_definition(doc, path, source=f"{path} (with the command line's settings)")


def run(seeds: int, n_jobs: int, nodes: int, policies: list[str], speed_name: str, restart_seconds: float,
        run_deadline: float | None, progress: bool = False, keep: bool = False) -> tuple[list[dict], dict]:
    """Simulate every policy on every trace (the suite's cells); returns the run rows and, with
    ``keep``, the SimResults of trace seed 1 (for figures; simulated again here)."""
    s = suite(seeds, n_jobs, nodes, policies, speed_name, restart_seconds, run_deadline)
    rows = [_row(r) for r in run_suite(s, None, progress=progress)]
    kept = {}
    if keep:
        first = s.simulation["traces"][0]
        for p in s.simulation["policies"]:
            if next(r for r in rows if r["seed"] == first.seed and r["policy"] == p.label)["status"] != "refused":
                kept[p.label] = simulate_cell(first, p, 0, s.simulation["settings"])[0]
    return rows, kept


def _row(r: dict) -> dict:
    """A suite row (dlsched.bench.simcells) as this table's run row (with Optimus's per-job model
    errors under ``model_errors`` while :func:`model_errors` has not taken them out)."""
    out = {"trace": r.get("trace_source", r["trace"]), "seed": r["trace_seed"], "policy": r["policy"], "status": r["status"],
           "message": r.get("message") or r.get("exception", ""), **{k: r.get(k) for k in _FIGURES}}
    if r.get("policy_name", r["policy"]) == "optimus" and r["status"] == "completed" and r.get("model_errors"):
        out["model_errors"] = r["model_errors"]
    return out


def model_errors(runs: list[dict]) -> dict | None:
    """Optimus's model errors pooled over its completed runs (MODELS.md §5), taken out of ``runs``:
    median relative error of the remaining-epochs estimate (``remaining``) and of the speed fit
    against the speed source (``speed``) at 25/50/75 % of each job's progress, with the counts
    ``n``, and per job type the speed fit at completion; keys "25%", "50%", "75%". None without a
    completed ``optimus`` run."""
    records = [e for r in runs for e in (r.pop("model_errors", None) or [])]
    if not records:
        return None

    e = summarise_errors([{k: v for k, v in x.items() if v is not None} for x in records])
    pct = lambda d: {f"{round(100 * c)}%": v for c, v in d.items()}  # noqa: E731
    return {"remaining": pct(e["remaining"]), "speed": pct(e["speed"]), "n": pct(e["n"]),
            "speed_by_type": e["speed_by_type"], "jobs": len(records)}


def summarise_suite(rows: list[dict], suite) -> dict:
    """``dlsched bench run sim``: the table and ratios of this command from a sim suite's rows, and
    Optimus's model errors when its rows have them."""
    runs = [_row(r) for r in rows]
    errors = model_errors(runs)
    policies = [p.label for p in suite.simulation["policies"]]
    return {"suite": suite.name, "policies": policies, "traces": sorted({r["trace"] for r in runs}),
            "jct_ratio_drf_over_optimus": _ratio(runs, "avg_jct"), "makespan_ratio_drf_over_optimus": _ratio(runs, "makespan"),
            **({"optimus_model_errors": errors} if errors else {}), "table": table(runs, policies), "runs": runs}


def _ratio(rows: list[dict], key: str, num: str = "drf", den: str = "optimus") -> float | None:
    """Mean over traces of key(num) / key(den) on the same trace; None unless both completed everywhere."""
    by = {(r["seed"], r["policy"]): r for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    pairs = [(by.get((s, num)), by.get((s, den))) for s in seeds]
    if not pairs or any(a is None or b is None or a["status"] != "completed" or b["status"] != "completed" or not b[key]
                        for a, b in pairs):
        return None
    return float(np.mean([a[key] / b[key] for a, b in pairs]))


def not_completed(rows: list[dict]) -> dict[str, int]:
    """Why runs did not complete: each distinct ``status: message`` (the policy's refusal, the
    exception's class and message, the time limit hit) with the number of runs it ended."""
    why: dict[str, int] = {}
    for r in rows:
        if r["status"] != "completed":
            key = f"{r['status']}: {r['message']}" if r["message"] else r["status"]
            why[key] = why.get(key, 0) + 1
    return why


def table(rows: list[dict], policies: list[str]) -> dict[str, dict]:
    out = {}
    for name in policies:
        mine = [r for r in rows if r["policy"] == name]
        done = [r for r in mine if r["status"] == "completed"]

        def mean(key):
            vals = [r[key] for r in done if r[key] is not None]
            return float(np.mean(vals)) if vals else None

        out[name] = {"runs": len(mine), "completed_runs": len(done),
                     "statuses": sorted({r["status"] for r in mine}), "not_completed": not_completed(mine),
                     **{k: mean(k) for k in ("avg_jct", "median_jct", "p95_jct", "makespan", "avg_queueing_delay",
                                             "jain_fairness", "gpu_utilisation", "decision_median_s", "wall_seconds")}}
    return out


def _print_table(tab: dict, doc: dict) -> None:
    """The table with one notation per column (seconds as plain numbers with thousands separators,
    decision latency in ms), policy names in full, a numbered note for each policy with runs that
    did not complete saying why, and the policies left out with the reason."""
    from rich.table import Table


    t = Table(title=f"bench sim: {doc['setting']['traces']} DL2-mix traces x {doc['setting']['jobs']} jobs, "
                    f"{doc['setting']['nodes']} nodes, speed {doc['setting']['speed']}, "
                    f"restart {doc['setting']['restart_seconds']:g} s (means over completed runs)")
    t.add_column("policy", justify="left", no_wrap=True)
    for c in ("runs ok", "avg JCT\n(s)", "median\nJCT (s)", "p95 JCT\n(s)", "makespan\n(s)", "queueing\n(s)", "Jain",
              "GPU\nutil", "decision\nmed (ms)", "wall (s)"):
        t.add_column(c, justify="right")
    notes = []
    for name, r in tab.items():
        ok = f"{r['completed_runs']}/{r['runs']}"
        if r["not_completed"]:
            notes.append((name, r))
            ok += f" [{len(notes)}]"
        ms = None if r["decision_median_s"] is None else 1000 * r["decision_median_s"]
        t.add_row(name, ok, *(number(r[k]) for k in ("avg_jct", "median_jct", "p95_jct", "makespan", "avg_queueing_delay")),
                  number(r["jain_fairness"], 3), number(r["gpu_utilisation"], 3), number(ms, 2), number(r["wall_seconds"], 1))
    table_console(t).print(t)
    for k, (name, r) in enumerate(notes, 1):
        print(f"[{k}] {name}: " + "; ".join(f"{n} of {r['runs']} runs {why}" for why, n in r["not_completed"].items()))
    for name, why in doc.get("skipped", {}).items():
        print(f"not run: {name}: {why}")
    f = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    print(f"DRF / Optimus: avg JCT {f(doc['jct_ratio_drf_over_optimus'])}, makespan {f(doc['makespan_ratio_drf_over_optimus'])}")
    e = doc.get("optimus_model_errors")
    if e:
        print("Optimus model errors (median relative, at 25/50/75 % of progress): remaining epochs "
              + ", ".join(f(v) for v in e["remaining"].values()) + "; speed fit "
              + ", ".join(f(v) for v in e["speed"].values()))


@register_suite("sim")
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="dlsched bench sim", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seeds", type=int, default=None, help="traces (seeds 1..N); default 10, quick 3")
    ap.add_argument("--jobs", type=int, default=None, help="jobs per trace; default 200, quick 40")
    ap.add_argument("--nodes", type=int, default=None, help="DL2 nodes; default 96 (DL2's), quick 16")
    ap.add_argument("--policies", default=None, help="comma-separated policy names (default: every online policy)")
    ap.add_argument("--speed", default="table")
    ap.add_argument("--restart-seconds", type=float, default=0.0)
    ap.add_argument("--run-deadline", type=float, default=None, help="wall seconds per run; default 600, quick 60")
    ap.add_argument("--plot", default=None, metavar="DIR", help="JCT CDF and utilisation of seed 1, every policy")
    args = ap.parse_args(argv)
    seeds = args.seeds or (3 if args.quick else 10)
    n_jobs = args.jobs or (40 if args.quick else 200)
    nodes = args.nodes or (16 if args.quick else 96)
    deadline = args.run_deadline or (60.0 if args.quick else 600.0)
    policies = policies_to_run(args.policies.split(",") if args.policies else None)
    rows, kept = run(seeds, n_jobs, nodes, policies, args.speed, args.restart_seconds, deadline,
                     progress=not args.json, keep=bool(args.plot))
    errors = model_errors(rows)
    tab = table(rows, policies)
    doc = {"suite": "sim",
           "setting": {"traces": seeds, "jobs": n_jobs, "nodes": nodes, "speed": args.speed,
                       "restart_seconds": args.restart_seconds, "run_deadline": deadline, "quick": args.quick},
           "policies": policies, "skipped": {} if args.policies else skipped_policies(),
           "traces": sorted({r["trace"] for r in rows}),
           "jct_ratio_drf_over_optimus": _ratio(rows, "avg_jct"),
           "makespan_ratio_drf_over_optimus": _ratio(rows, "makespan"),
           "optimus_model_errors": errors,
           "table": tab, "runs": rows, "environment": environment(seeds=list(range(1, seeds + 1)))}
    if args.plot:
        doc["figures"] = [str(p) for p in write_figures(list(kept.values()), args.plot)]
    if args.json:
        print(json.dumps(doc))
    else:
        _print_table(tab, doc)
    return 0

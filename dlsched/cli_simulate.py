"""``dlsched simulate`` and ``dlsched policies``: load a trace and a cluster, pick a speed source
(:mod:`dlsched.sim.run`), run the named policy on the engine, print or write what it did."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.table import Table

from dlsched.console import table_console
from dlsched.errors import InputError
from dlsched.instance.traces import TRACE_FORMATS, load_trace
from dlsched.registry import describe_policy, make_policy, policy_accepts, policy_names
from dlsched.sim.bounds import certified_bound
from dlsched.sim.engine import simulate
from dlsched.sim.load import low_load_warning, offered_load
from dlsched.sim.plots import write_figures
from dlsched.sim.run import load_cluster, parse_params, pick_speed, rescale


def cmd_simulate(args) -> int:
    params = parse_params(args.param)
    if args.decision_budget is not None:
        if not args.decision_budget > 0:
            raise InputError("<argument>", "--decision-budget", "a positive number of milliseconds", args.decision_budget)
        if policy_accepts(args.policy, "budget_ms"):
            params.setdefault("budget_ms", args.decision_budget)      # -P budget_ms=... wins
        else:
            print(f"note: policy {args.policy} takes no decision budget; --decision-budget ignored "
                  "(its decision latency is reported all the same)", file=sys.stderr)
    if args.plot and Path(args.plot).exists() and not Path(args.plot).is_dir():
        raise InputError("<argument>", "--plot", "a folder for the figures", f"'{args.plot}' is not a folder")
    policy = make_policy(args.policy, **params)
    trace = load_trace(args.trace, args.trace_format)
    cluster = load_cluster(args.cluster, trace)
    speed = pick_speed(args.speed, trace, cluster, noise=args.speed_noise, seed=args.seed)
    trace, scaling = rescale(trace, cluster, speed, arrival_scale=args.arrival_scale, target_load=args.target_load,
                             target_peak=args.target_peak, inflation=args.inflate, inflation_seed=args.seed)
    load = scaling.get("offered_load") or offered_load(trace, cluster, speed)
    warning = low_load_warning(load)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    res = simulate(trace, cluster, policy, speed, seed=args.seed, restart_seconds=args.restart_seconds,
                   max_time=args.max_time, deadline=args.deadline, progress=True)
    res.extra.update(scaling)
    res.extra.update({"offered_load": load, "warnings": [warning] if warning else []})
    if args.bound != "none":
        res.extra.update(certified_bound(res, trace, cluster, speed, lp=args.bound == "lp"))
    if args.plot:      # named on stderr, so that --json stays one object on stdout
        print("wrote " + ", ".join(str(p) for p in write_figures([res], args.plot)), file=sys.stderr)
    if args.json:
        print(res.to_json(speed=type(speed).__name__, jobs=args.jobs))
    else:
        print_summary(res)
    return 0


def print_summary(res) -> None:
    s = res.summary()
    t = Table(title=f"{s['policy']} on {s['trace']}", show_header=False)

    def f(x, unit=""):
        if x is None:
            return "-"
        if unit == " s" and isinstance(x, (int, float)) and abs(x) >= 7200:     # hours or days beside seconds
            return f"{x:.6g} s ({x / 86400:.1f} d)" if abs(x) >= 2 * 86400 else f"{x:.6g} s ({x / 3600:.1f} h)"
        return f"{x:.6g}{unit}" if isinstance(x, float) else str(x)

    rows = [("status", s["status"] + (f" ({s['message']})" if s["message"] else "")),
            ("jobs completed", f"{s['completed']} / {s['jobs']}" + (f", {s['unschedulable']} unschedulable" if s["unschedulable"] else "")),
            ("JCT avg / median", f"{f(s['avg_jct'], ' s')} / {f(s['median_jct'], ' s')}"),
            ("JCT p95 / p99", f"{f(s['p95_jct'], ' s')} / {f(s['p99_jct'], ' s')}"),
            ("lower bound on avg JCT", _bound_row(res.extra, f)),
            ("makespan", f(s["makespan"], " s")), ("queueing delay avg", f(s["avg_queueing_delay"], " s")),
            ("Jain fairness", f(s["jain_fairness"]) + "  (of JCT_iso/JCT)"),
            ("utilisation", ", ".join(f"{k} {f(v)}" for k, v in s["utilisation"].items())),
            ("total utility", f(s["total_utility"])),
            ("decision median / p95", f"{f(s['decision_median_s'], ' s')} / {f(s['decision_p95_s'], ' s')} ({s['decision_calls']} calls)"),
            ("decision p99 / max", " / ".join(f(s["decision_latency_ms"][k], " ms") for k in ("p99", "max"))),
            ("decision gap mean / max", _gap_row(s["decision_gap"])),
            ("engine per event", f"{f(s['engine_per_event_s'], ' s')} ({s['events']} events)"),
            ("wall", f(s["wall_seconds"], " s")), ("peak memory", f(s["peak_memory_mib"], " MiB"))]
    if "arrival_scale" not in res.extra and res.extra.get("offered_load"):
        rows.insert(1, ("offered load", ", ".join(f"{k} {f(v)}" for k, v in res.extra["offered_load"].items())))
    if "arrival_scale" in res.extra:
        load = ", ".join(f"{k} {f(v)}" for k, v in res.extra["offered_load"].items())
        peak = ", ".join(f"{k} {f(v)}" for k, v in res.extra["peak_demand"].items())
        rows.insert(1, ("arrivals", f"scaled by {res.extra['arrival_scale']:.6g} ({res.extra['arrival_rule']}); "
                                    f"offered load {load}; peak demand {peak}"))
    if "inflation" in res.extra:
        rows.insert(1, ("inflated", f"x{res.extra['inflation']:g} to {res.extra['jobs']} jobs (seed {res.extra['inflation_seed']})"))
    for k, v in rows:
        t.add_row(k, v)
    table_console().print(t)


def _gap_row(gap: dict | None) -> str:
    if gap is None:
        return "not certified by this policy"
    return f"{gap['mean']:.3g} / {gap['max']:.3g} (relative, over {gap['decisions']} decisions)"


def _bound_row(extra: dict, f) -> str:
    if "lower_bound" not in extra:
        return "not computed (--bound none)"
    if extra["lower_bound"] is None:
        return extra.get("lower_bound_note", "-")
    ratio = extra["ratio_to_bound"]
    return f"{f(extra['lower_bound'], ' s')}" + (f" (avg JCT / bound {ratio:.4g})" if ratio is not None else "")


def cmd_policies(args) -> int:
    for name in policy_names():
        print(f"{name:16s} {describe_policy(name)}")
    return 0


def add_parsers(sub) -> None:
    """The ``simulate`` and ``policies`` subcommands (called from dlsched/cli.py)."""
    p = sub.add_parser("simulate", help="replay a job trace on a cluster under a policy")
    p.add_argument("trace", help="a trace file (Gavel, Tiresias, OpenB, Pollux, Microsoft ITP) or dl2:N[:SEED] / poisson:N[:SEED]")
    p.add_argument("--trace-format", default=None, metavar="FORMAT",
                   help=f"the trace's format ({', '.join(TRACE_FORMATS)}; default: detected); itp-elastic: Microsoft ITP "
                        "jobs that may run on 1..num_gpu GPUs")
    p.add_argument("--cluster", default=None, metavar="SPEC",
                   help="a cluster spec (JSON, Gavel, OpenB, Tiresias), 'V:P:K' Gavel GPU counts, or 'SxG' servers x GPUs (e.g. 80x8)")
    p.add_argument("--policy", required=True, help="see `dlsched policies`")
    p.add_argument("-P", "--param", action="append", metavar="KEY=VALUE", help="a policy parameter (JSON value)")
    p.add_argument("--speed", default=None, metavar="SOURCE", help="table, layered, optimus, throughput, duration (default: detected)")
    p.add_argument("--speed-noise", type=float, default=0.0, metavar="SIGMA", help="multiplicative lognormal speed noise")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--restart-seconds", type=float, default=0.0, metavar="X", help="seconds without progress after a placement change")
    p.add_argument("--arrival-scale", type=float, default=None, metavar="S",
                   help="multiply arrival offsets by S (S < 1 compresses the trace in time)")
    p.add_argument("--target-load", type=float, default=None, metavar="L",
                   help="scale arrivals so the offered GPU load (GPU-seconds / (GPUs x arrival window)) is L")
    p.add_argument("--target-peak", type=float, default=None, metavar="P",
                   help="scale arrivals so that, every job started on arrival, at most P of the GPUs are held at once")
    p.add_argument("--inflate", type=float, default=None, metavar="F",
                   help="add copies of jobs drawn from the trace (seeded by --seed) until it has F times its jobs, "
                        "before any arrival scaling (makes a one-snapshot pod list contend)")
    p.add_argument("--max-time", type=float, default=None, metavar="T", help="simulated-time cap (s)")
    p.add_argument("--deadline", type=float, default=None, metavar="S", help="wall-clock budget (s)")
    p.add_argument("--decision-budget", type=float, default=None, metavar="MS",
                   help="per-decision time budget in ms, passed as budget_ms to a policy that takes one "
                        "(smd, hetplace, fluid): the best answer found in it, and its certified gap in --json")
    p.add_argument("--bound", choices=("simple", "lp", "none"), default="simple",
                   help="the lower bound on the average JCT reported beside the run (sim/bounds.py): alone + "
                        "capacity (default), also the time-indexed LP (slower), or none")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--jobs", action="store_true", help="with --json: include one row per job")
    p.add_argument("--plot", default=None, metavar="DIR", help="write jct_cdf.png and utilisation.png")
    p.set_defaults(fn=cmd_simulate)
    p = sub.add_parser("policies", help="list the simulator's policies")
    p.set_defaults(fn=cmd_policies)

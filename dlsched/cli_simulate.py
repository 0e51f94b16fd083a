"""``dlsched simulate`` and ``dlsched policies``: load a trace and a cluster, pick a speed source
(:mod:`dlsched.sim.run`), run the named policy on the engine, print or write what it did."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from rich.table import Table

from dlsched.arguments import checked_policy
from dlsched.console import EXIT_STOPPED, number, seconds, stop_requests, table_console
from dlsched.errors import InputError
from dlsched.instance.traces import TRACE_FORMATS, load_trace
from dlsched.registry import describe_policy, policy_accepts, policy_names
from dlsched.sim.bounds import certified_bound
from dlsched.sim.engine import simulate
from dlsched.sim.load import low_load_warning, offered_load
from dlsched.sim.plots import write_figures
from dlsched.sim.run import load_cluster, oasis_instance, oasis_setting, parse_params, pick_speed, rescale


def cmd_simulate(args) -> int:
    params = parse_params(args.param)
    if args.seed < 0:       # it seeds numpy's generators (speed noise, inflation)
        raise InputError("<argument>", "--seed", "an integer seed >= 0", args.seed)
    if args.decision_budget is not None and not args.decision_budget > 0:
        raise InputError("<argument>", "--decision-budget", "a positive number of milliseconds", args.decision_budget)
    _check_bound_options(args)
    if args.plot and Path(args.plot).exists() and not Path(args.plot).is_dir():
        raise InputError("<argument>", "--plot", "a folder for the figures", f"'{args.plot}' is not a folder")
    names = policy_list(args.policy)
    if "dl2" in names:
        from dlsched.rl.policy import one_inference_thread

        one_inference_thread()
    policies = [checked_policy(name, _with_budget(args.decision_budget, name, params))   # every name and parameter
                for name in names]                                                  # checked before any run
    inst = oasis_instance(args.trace, args.trace_format)
    if inst is None:
        trace, oasis = load_trace(args.trace, args.trace_format), None
        cluster = load_cluster(args.cluster, trace)
    else:
        trace, cluster, oasis = _oasis_setting(args, inst)
    for name, policy in zip(names, policies):
        if getattr(policy, "trace_family", None) == "oasis" and oasis is None:
            raise InputError("<argument>", "--policy", f"an OASiS instance (a dlsched/1 file of family oasis) as the trace "
                             f"for policy '{name}'", args.trace)
    runs, warned, bounds = [], False, {}
    with stop_requests() as stop:     # Ctrl-C or SIGTERM: the run in progress ends with what it has
        for policy in policies:
            runs.append(_run(args, policy, trace, cluster, warn=not warned, stop=stop, oasis=oasis))
            warned = True
            if stop.is_set():
                break
    for k, (res, speed, used) in enumerate(runs):
        if args.bound != "none":      # the bound depends on the run only through the jobs it left unschedulable
            key = frozenset(res.unschedulable)
            if key not in bounds:
                bounds[key] = certified_bound(res, used, cluster, speed, lp=args.bound == "lp", **_lp_options(args))
            res.extra.update(_ratio_for(res, bounds[key]))
        runs[k] = (res, speed)
    if args.plot:      # named on stderr, so that --json stays one object on stdout
        print("wrote " + ", ".join(str(p) for p in write_figures([res for res, _ in runs], args.plot)), file=sys.stderr)
    if len(names) == 1:
        res, speed = runs[0]
        if args.json:
            print(res.to_json(speed=type(speed).__name__, jobs=args.jobs))
        else:
            print_summary(res)
    elif args.json:
        print(comparison_json(runs, jobs=args.jobs))
    else:
        print_comparison([res for res, _ in runs], cluster=args.cluster)
    if stop.is_set():
        left = names[len(runs):]
        print(f"stopped: {runs[-1][0].policy} ended early" + (f"; not run: {', '.join(left)}" if left else ""), file=sys.stderr)
        return EXIT_STOPPED
    return 0


def _with_budget(budget_ms: float | None, name: str, params: dict) -> dict:
    """``params`` with ``--decision-budget`` as ``budget_ms`` where policy ``name`` takes one (``-P budget_ms`` wins)."""
    if budget_ms is None:
        return params
    if policy_accepts(name, "budget_ms"):
        return {"budget_ms": budget_ms, **params}
    print(f"note: policy {name} takes no decision budget; --decision-budget ignored "
          "(its decision latency is reported all the same)", file=sys.stderr)
    return params


def policy_list(text: str) -> list[str]:
    """``--policy``: one policy name, or several separated by commas (each run on the same trace)."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise InputError("<argument>", "--policy", "policy names separated by commas", repr(text))
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError("<argument>", "--policy", "each policy once", f"{', '.join(twice)} more than once")
    return names


#: what an OASiS instance brings itself: options that would reshape it are refused beside one
_OASIS_OWN = (("--cluster", "cluster", "its servers"), ("--speed", "speed", "its speed source"),
              ("--speed-param", "speed_param", "its speed source"), ("--speed-noise", "speed_noise", "its speed source"),
              ("--max-time", "max_time", "its horizon T"), ("--arrival-scale", "arrival_scale", "its arrival slots"),
              ("--target-load", "target_load", "its arrival slots"), ("--target-peak", "target_peak", "its arrival slots"),
              ("--inflate", "inflate", "its jobs"))


def _oasis_setting(args, inst):
    """The trace, cluster and (speed source, horizon) of an OASiS instance (:func:`oasis_setting`)."""
    given = ((flag, getattr(args, attr), what) for flag, attr, what in _OASIS_OWN)
    trace, cluster, speed, horizon = oasis_setting(inst, [(flag, None if value in (None, [], 0.0) else value, what)
                                                          for flag, value, what in given])    # the defaults: not given
    return trace, cluster, (speed, horizon)


def _run(args, policy, trace, cluster, *, warn: bool, stop=None, oasis=None):
    """One policy on the trace as the options shape it (speed source and scaling made afresh, so
    that a policy's run is the run it gets alone); returns the result, the speed source, the trace run.
    ``oasis``: the speed source and horizon of an OASiS instance (:func:`_oasis_setting`), used as they are."""
    if oasis is None:
        speed = pick_speed(args.speed, trace, cluster, noise=args.speed_noise, seed=args.seed,
                           params=parse_params(args.speed_param, "--speed-param"))
        used, scaling = rescale(trace, cluster, speed, arrival_scale=args.arrival_scale, target_load=args.target_load,
                                target_peak=args.target_peak, inflation=args.inflate, inflation_seed=args.seed)
        max_time = args.max_time
    else:
        (speed, max_time), used, scaling = oasis, trace, {"time_unit": "slot"}
    load = scaling.get("offered_load") or offered_load(used, cluster, speed)
    warning = low_load_warning(load)
    if warning and warn:
        print(f"warning: {warning}", file=sys.stderr)
    res = simulate(used, cluster, policy, speed, seed=args.seed, restart_seconds=args.restart_seconds,
                   max_time=max_time, deadline=args.deadline, progress=True, stop=stop)
    res.extra.update(scaling)
    res.extra.update({"offered_load": load, "warnings": [warning] if warning else []})
    return res, speed, used


def _lp_options(args) -> dict:
    """``--bound-slot`` and ``--bound-window`` as given, as :func:`certified_bound`'s ``slot_seconds`` and ``window``."""
    given = (("slot_seconds", args.bound_slot), ("window", args.bound_window))
    return {name: value for name, value in given if value is not None}


def _check_bound_options(args) -> None:
    """``--bound-slot`` and ``--bound-window``: positive and finite, and only with ``--bound lp``."""
    for flag, value in (("--bound-slot", args.bound_slot), ("--bound-window", args.bound_window)):
        if value is None:
            continue
        if args.bound != "lp":
            raise InputError("<argument>", flag, "--bound lp beside it (it shapes the LP bound)", f"--bound {args.bound}")
        if not (math.isfinite(value) and value > 0):
            raise InputError("<argument>", flag, "a positive finite number", value)


def _ratio_for(res, bound: dict) -> dict:
    """``bound`` (:func:`certified_bound` of a run with the same unschedulable jobs) with this run's ratio."""
    avg = res.summary()["avg_jct"] if res.status == "completed" else None
    b = bound["lower_bound"]
    return {**bound, "ratio_to_bound": avg / b if avg is not None and b else None}


def comparison_json(runs, *, jobs: bool) -> str:
    """Several policies' runs as one JSON object: the setting they share, the environment once, and
    ``runs``: per policy what ``--json`` prints for it alone (less the environment)."""
    docs = [json.loads(res.to_json(speed=type(speed).__name__, jobs=jobs)) for res, speed in runs]
    env = docs[0].pop("environment")
    for d in docs[1:]:
        d.pop("environment")
    shared = {k: docs[0][k] for k in ("trace", "cluster", "speed", "seed", "restart_seconds", "offered_load", "warnings")}
    return json.dumps({"policies": [d["policy"] for d in docs], **shared, "environment": env, "runs": docs})


#: the comparison table: heading ({t}: the unit of simulated time), summary key (or a function of the summary and the run's extra), decimals
_COMPARISON = (("avg JCT\n({t})", "avg_jct", 0), ("p50 JCT\n({t})", "median_jct", 0), ("p95 JCT\n({t})", "p95_jct", 0),
               ("makespan\n({t})", "makespan", 0), ("queueing\navg ({t})", "avg_queueing_delay", 0),
               ("GPU\nutil", lambda s, x: s["utilisation"].get("gpu", next(iter(s["utilisation"].values()), None)), 3),
               ("wall (s)", "wall_seconds", 2), ("bound on\navg JCT ({t})", lambda s, x: x.get("lower_bound"), 0),
               ("avg JCT\n/ bound", lambda s, x: x.get("ratio_to_bound"), 3))


def print_comparison(results, cluster: str | None = None) -> None:
    """One row per policy: jobs completed, JCT mean / p50 / p95, makespan, queueing, GPU
    utilisation, wall time, the lower bound on the average JCT and the ratio to it; seconds as plain
    numbers with thousands separators. ``cluster``: the spec as given (a generated cluster has no name)."""
    first = results[0].summary()
    t = Table(title=f"{len(results)} policies on {first['trace']} ({first['jobs']:,} jobs), "
                    f"cluster {cluster or first['cluster']}")
    t.add_column("policy", no_wrap=True)
    t.add_column("completed", justify="right")
    unit = "slots" if results[0].extra.get("time_unit") == "slot" else "s"
    for head, _, _ in _COMPARISON:
        t.add_column(head.format(t=unit), justify="right")
    notes = []
    for res in results:
        s = res.summary()
        done = f"{s['completed']:,}/{s['jobs']:,}"
        if s["status"] != "completed":
            notes.append(f"{s['policy']}: {s['status']}" + (f" ({s['message']})" if s["message"] else ""))
            done += f" [{len(notes)}]"
        t.add_row(s["policy"], done, *(number(key(s, res.extra) if callable(key) else s[key], d) for _, key, d in _COMPARISON))
    table_console(t).print(t)
    for k, note in enumerate(notes, 1):
        print(f"[{k}] {note}")
    if "lower_bound" not in results[0].extra:
        print("lower bound not computed (--bound none)")
    elif results[0].extra["lower_bound"] is None:
        print(f"lower bound: {results[0].extra.get('lower_bound_note', '-')}")


def print_summary(res) -> None:
    s = res.summary()
    t = Table(title=f"{s['policy']} on {s['trace']}", show_header=False)

    slots = res.extra.get("time_unit") == "slot"    # an OASiS instance: simulated time in slots (Δ = 1 s in the engine)

    def f(x, unit=""):
        if x is None:
            return "-"
        if unit == " t" and slots:
            return f"{x:.6g} slots"
        if unit in (" s", " t"):
            return seconds(x)
        if unit in (" ms", " MiB"):
            return number(x, 3 if unit == " ms" else 1) + unit
        return f"{x:.6g}{unit}" if isinstance(x, float) else str(x)

    rows = [("status", s["status"] + (f" ({s['message']})" if s["message"] else "")),
            ("jobs completed", f"{s['completed']} / {s['jobs']}" + (f", {s['unschedulable']} unschedulable" if s["unschedulable"] else "")),
            ("JCT avg / median", f"{f(s['avg_jct'], ' t')} / {f(s['median_jct'], ' t')}"),
            ("JCT p95 / p99", f"{f(s['p95_jct'], ' t')} / {f(s['p99_jct'], ' t')}"),
            ("lower bound on avg JCT", _bound_row(res.extra, f)),
            ("makespan", f(s["makespan"], " t")), ("queueing delay avg", f(s["avg_queueing_delay"], " t")),
            ("Jain fairness", f(s["jain_fairness"]) + "  (of JCT_iso/JCT)"),
            ("utilisation", ", ".join(f"{k} {f(v)}" for k, v in s["utilisation"].items())),
            ("total utility", f(s["total_utility"])),
            ("decision median / p95", f"{f(s['decision_median_s'], ' s')} / {f(s['decision_p95_s'], ' s')} ({s['decision_calls']} calls)"),
            ("decision p99 / max", " / ".join(f(s["decision_latency_ms"][k], " ms") for k in ("p99", "max"))),
            ("decision gap mean / max", _gap_row(s["decision_gap"], s["decisions_uncertified"])),
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


def _gap_row(gap: dict | None, uncertified: int | None) -> str:
    if gap is None and not uncertified:
        return "not certified by this policy"
    left = f"; {uncertified} decisions with no gap" if uncertified else ""
    if gap is None:
        return f"none certified{left}"
    inf = f", {gap['infinite']} of them infinite" if gap["infinite"] else ""
    if gap["mean"] is None:
        return f"infinite (over {gap['decisions']} decisions{left})"
    return f"{gap['mean']:.3g} / {gap['max']:.3g} (relative, over {gap['decisions']} decisions{inf}{left})"


def _bound_row(extra: dict, f) -> str:
    if "lower_bound" not in extra:
        return "not computed (--bound none)"
    if extra["lower_bound"] is None:
        return extra.get("lower_bound_note", "-")
    ratio = extra["ratio_to_bound"]
    return f"{f(extra['lower_bound'], ' t')}" + (f" (avg JCT / bound {ratio:.4g})" if ratio is not None else "")


def cmd_policies(args) -> int:
    for name in policy_names():
        print(f"{name:16s} {describe_policy(name)}")
    return 0


def add_parsers(sub) -> None:
    """The ``simulate`` and ``policies`` subcommands (called from dlsched/cli.py)."""
    p = sub.add_parser("simulate", help="replay a job trace on a cluster under a policy")
    p.add_argument("trace", help="a trace file (Gavel, Tiresias, OpenB, Pollux, Microsoft ITP), an OASiS instance (dlsched/1 JSON of "
                        "family oasis: its own cluster, speed and horizon T) or dl2:N[:SEED] / poisson:N[:SEED] / gavel:N[:SEED[:rate=R,bursts=B,...]]")
    p.add_argument("--trace-format", default=None, metavar="FORMAT",
                   help=f"the trace's format ({', '.join(TRACE_FORMATS)}; default: detected); itp-elastic: Microsoft ITP "
                        "jobs that may run on 1..num_gpu GPUs")
    p.add_argument("--cluster", default=None, metavar="SPEC",
                   help="a cluster spec (JSON, Gavel, OpenB, Tiresias), 'V:P:K' Gavel GPU counts, or 'SxG' servers x GPUs (e.g. 80x8)")
    p.add_argument("--policy", required=True,
                   help="see `dlsched policies`; several separated by commas (fifo,drf,hetplace) are compared on the same "
                        "trace and cluster: one table, one JCT CDF with every policy, --json with a `runs` list")
    p.add_argument("-P", "--param", action="append", metavar="KEY=VALUE", help="a policy parameter (JSON value)")
    p.add_argument("--speed", default=None, metavar="SOURCE", help="table, layered, optimus, throughput, duration (default: detected)")
    p.add_argument("--speed-param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of the speed source (throughput: mixed=average|slowest, failed=model|cannot-run)")
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
                        "(smd, hetplace, fluid, optimus, Gavel's LP policies, oasis, dorm): the best answer found in it, and "
                        "its certified gap in --json")
    p.add_argument("--bound", choices=("simple", "lp", "none"), default="simple",
                   help="the lower bound on the average JCT reported beside the run (sim/bounds.py): alone + "
                        "capacity (default), also the time-indexed LP (slower), or none")
    p.add_argument("--bound-slot", type=float, default=None, metavar="S",
                   help="with --bound lp: the LP's slot length in seconds (shorter: tighter and slower; default 1800)")
    p.add_argument("--bound-window", type=float, default=None, metavar="W",
                   help="with --bound lp: each job's slots end W times its shortest time after its arrival, the rest "
                        "of its work in a tail without capacity rows (a smaller, still valid LP; default: no window)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--jobs", action="store_true", help="with --json: include one row per job")
    p.add_argument("--plot", default=None, metavar="DIR", help="write jct_cdf.png and utilisation.png (every policy in each)")
    p.set_defaults(fn=cmd_simulate)
    p = sub.add_parser("policies", help="list the simulator's policies")
    p.set_defaults(fn=cmd_policies)

"""``dlsched``: solve, check, export, convert and benchmark from the command line.

The contract scripts rely on: ``dlsched solve ... --json`` prints exactly one JSON object with
at least ``status, objective, bound, gap, build_seconds, solve_seconds, method, backend``; bad
input exits 2 with one line ``dlsched: error: <file>: at <place>: expected ..., found ...``
(a traceback only with ``--debug``); an infeasible instance is a status, exit 0.

Exit codes (docs/cli.md), the same from every subcommand: 0 success; 1 the checker rejected a
solution; 2 bad input or usage (a file, a field, an argument; argparse's usage errors too);
3 a failure that is not the input's fault (a solver backend, or a bug: ``--debug`` shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.table import Table

import dlsched
from dlsched.bench import get_suite
from dlsched.bench.report import main as report_main
from dlsched.console import EXIT_STOPPED, Reporter, python_stdout_only, stop_signals, table_console
from dlsched.errors import DlschedError, InputError, MissingExtra
from dlsched.export import check_model_path, core_of, write_model
from dlsched.instance import jsonio
from dlsched.instance.files import check_out_path, write_atomic
from dlsched.sim.engine import PolicyError
from dlsched.cli_simulate import add_parsers as add_sim_parsers
from dlsched.solvers import registry
from dlsched.solvers.options import Budget
from dlsched.version import __version__

EXIT_OK, EXIT_REJECTED, EXIT_INPUT, EXIT_FAILURE = 0, 1, 2, 3


def _params(args, method_params: tuple[str, ...]) -> dict:
    """Method parameters from the dedicated flags and ``-P key=value`` (values parsed as JSON)."""

    given = {"backend": args.backend, "samples": args.samples, "solver": args.solver}
    params = {k: v for k, v in given.items() if v is not None and k in method_params}
    for k, v in given.items():
        if v is not None and k not in method_params and not (k == "backend" and v == "highs"):
            raise InputError("<argument>", f"--{k}", f"a flag method '{args.method}' takes ({', '.join(method_params) or 'none'})", v)
    # --seed reaches every method as SolveOptions.seed (a method's own `seed` parameter defaults
    # to it); passing it twice made dlsched.solve() fail with "multiple values for 'seed'".
    for item in args.param or []:
        key, sep, val = item.partition("=")
        if not sep:
            raise InputError("<argument>", "-P", "key=value", item)
        if key == "seed":
            raise InputError("<argument>", "-P seed", "--seed S (the seed reaches every method through the common options)", item)
        try:
            params[key] = json.loads(val)
        except json.JSONDecodeError:
            params[key] = val
    return params


def cmd_solve(args) -> int:
    budget = Budget(args.time_limit)     # the time limit covers loading the file too (docs/contract.md)
    if args.out:
        check_out_path(args.out, [args.path])
    inst = dlsched.load(args.path, args.format, problem=args.problem, sense=args.sense)
    method = registry.lookup(args.method, inst.family)
    params = _params(args, method.params)
    res = _with_progress(args, lambda cb: dlsched.solve(
        inst, args.method, time_limit=args.time_limit, gap=args.gap, threads=args.threads, seed=args.seed,
        log=args.log, on_incumbent=cb, budget=budget, **params))
    report = dlsched.check(inst, res) if res.status.has_solution() else None
    if args.out:
        doc = jsonio.solution_document(inst, res)
        write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)       # on stderr: --json stays one object on stdout
    if args.json:
        out = res.summary()
        # a reference of another objective than the method's is no reference for it (objective_of)
        ref = getattr(inst, "reference", None) if not res.objective_of else None
        out.update(instance=inst.name, family=inst.family, reference=ref.objective if ref else None,
                   checked=None if report is None else report.feasible)
        print(json.dumps(out))
    else:
        _print_result(inst, res, report)
    return EXIT_OK if report is None or report.feasible else EXIT_REJECTED


def _with_progress(args, run):
    """While a solve runs, on stderr (not with --quiet; on a terminal not with --json): a spinner
    whose elapsed clock ticks with the best incumbent and bound found so far, or off a terminal a
    line a minute (:class:`dlsched.console.Reporter`)."""
    if args.quiet or (args.json and sys.stderr.isatty()):
        return run(None)
    with Reporter(f"solving with {args.method}") as rep:
        def cb(inc):
            rep.note(f"incumbent {inc.objective:.10g} at {inc.seconds:.2f} s, bound {inc.bound:.10g}")

        return run(cb)


def _fmt(x, digits: int = 6) -> str:
    return "-" if x is None else (f"{x:.{digits}g}" if isinstance(x, float) else str(x))


def _print_result(inst, res, report) -> None:
    t = Table(title=f"{inst.name or Path(str(getattr(inst, 'source', ''))).name}  ({inst.family}, {res.sense})", show_header=False)
    ref = getattr(inst, "reference", None)
    rows = [("method", f"{res.method}" + (f" / {res.backend}" if res.backend else "")),
            ("status", f"{res.status.value} ({res.termination})"),
            ("objective", _fmt(res.objective, 10) + (f"  ({res.objective_of})" if res.objective_of else "")),
            ("bound", _fmt(res.bound, 10)),
            ("gap", "-" if res.gap is None else f"{100 * res.gap:.4f}%"),
            ("reference", "-" if ref is None else f"{ref.objective:.10g}" + (" (optimal)" if ref.optimal else " (best known)")
             + (" of the instance's own objective; not comparable" if res.objective_of else "")),
            ("build / solve s", f"{res.build_seconds:.3f} / {res.solve_seconds:.3f}"),
            ("checker", "-" if report is None else ("feasible" if report.feasible else "REJECTED: " + "; ".join(report.violations[:3])))]
    rows += [(k, _fmt(v)) for k, v in res.stats.items() if isinstance(v, (int, float, str))]
    if res.message:
        rows.append(("message", res.message))
    for k, v in rows:
        t.add_row(k, v)
    table_console().print(t)


def cmd_check(args) -> int:
    problem = args.problem
    if problem is None:      # a solution of problem K of a multi-problem file records its name, STEM-K
        recorded = jsonio.recorded_instance(args.solution) or ""
        stem, _, k = recorded.rpartition("-")
        if k.isdigit() and stem == Path(args.instance).stem:
            problem = int(k)
    inst = dlsched.load(args.instance, args.format, problem=problem, sense=args.sense)
    solution, claimed = jsonio.load_solution(inst, args.solution)
    report = dlsched.check(inst, solution, claimed)
    if args.json:
        print(json.dumps({"feasible": report.feasible, "objective": report.objective, "violations": report.violations}))
    else:
        print(("feasible" if report.feasible else "INFEASIBLE") + f"; objective {_fmt(report.objective, 10)}")
        for v in report.violations:
            print("  - " + v)
    return EXIT_OK if report.feasible else EXIT_REJECTED


def cmd_export(args) -> int:
    check_model_path(check_out_path(args.out, [args.instance], "out"))
    inst = dlsched.load(args.instance, args.format, problem=args.problem, sense=args.sense)
    write_model(core_of(inst), args.out)
    print(f"wrote {args.out}")
    return EXIT_OK


def cmd_convert(args) -> int:
    check_out_path(args.out, [args.path], "out")
    inst = dlsched.load(args.path, args.format, problem=args.problem, sense=args.sense)
    dlsched.save(inst, args.out)
    print(f"wrote {args.out}")
    return EXIT_OK


def cmd_methods(args) -> int:
    for m in registry.describe():
        fams = ", ".join(sorted(m.families)) if m.families else "any"
        print(f"{m.name:16s} [{fams}] {m.description}" + (f"  (params: {', '.join(m.params)})" if m.params else ""))
    return EXIT_OK


def cmd_bench(args) -> int:
    return get_suite(args.suite)(args.rest)


def cmd_report(args) -> int:
    return report_main(args.rest[1:] if args.rest[:1] == ["--"] else args.rest)


def cmd_train(args) -> int:
    from dlsched.rl.train import main      # raises MissingExtra (exit 2, says what to install) without torch

    return main(args.rest)


def _instance_args(p, path_name: str = "path") -> None:
    p.add_argument(path_name, help="a dlsched/1 JSON file or an OR-Library MKP/GAP file")
    p.add_argument("--format", default="auto", choices=["auto", "json", "mkp", "gap"])
    p.add_argument("--problem", type=int, default=None, help="K-th (0-based) problem of a multi-problem OR-Library file")
    p.add_argument("--sense", choices=["max", "min"], default=None, help="GAP objective sense (default min)")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="dlsched", description=__doc__.split("\n")[0])
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    ap.add_argument("--version", action="version", version=f"dlsched {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("solve", help="solve an instance file")
    _instance_args(p)
    p.add_argument("--method", default="exact", help="see `dlsched methods`")
    p.add_argument("--backend", default=None, choices=["highs", "pyomo", "cvxpy"], help="front end for exact solves (default highs)")
    p.add_argument("--solver", default=None, metavar="NAME",
                   help="another MILP solver behind --backend pyomo (e.g. scip_direct, gurobi_direct) or cvxpy (SCIP, GUROBI)")
    p.add_argument("--time-limit", type=float, default=None, metavar="S")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--gap", type=float, default=0.0, help="relative MIP gap to stop at (default 0: proven optimal)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=None, help="sample budget N for sampling methods")
    p.add_argument("-P", "--param", action="append", metavar="KEY=VALUE", help="a method parameter")
    p.add_argument("--out", default=None, metavar="SOLUTION.json")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--log", action="store_true", help="show the solver log")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_solve)

    p = sub.add_parser("check", help="check a solution file against an instance")
    _instance_args(p, "instance")
    p.add_argument("solution")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_check)

    p = sub.add_parser("export", help="write the core model as MPS or LP (for Gurobi, CPLEX, SCIP)")
    _instance_args(p, "instance")
    p.add_argument("out", help="OUT.mps or OUT.lp")
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser("convert", help="convert an OR-Library file (or any instance) to dlsched/1 JSON")
    _instance_args(p)
    p.add_argument("out", help="OUT.json")
    p.set_defaults(fn=cmd_convert)

    p = sub.add_parser("methods", help="list the methods")
    p.set_defaults(fn=cmd_methods)

    p = sub.add_parser("train", help="train a learned scheduler: `dlsched train dl2 --help` (needs the rl extra)",
                       add_help=False)
    p.add_argument("learner", choices=["dl2"])
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(fn=cmd_train)

    add_sim_parsers(sub)

    p = sub.add_parser("bench", help="run a benchmark suite (quick, ...; `bench run SUITE` runs a suite file)", add_help=False)
    p.add_argument("suite")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser("report", help="tables, figures and a Markdown page from `bench run` results", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(fn=cmd_report)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    at = next((k for k, a in enumerate(argv[:2]) if a == "report"), None)
    if at is not None:              # `report --pages DIR`: an option first is the report's, not ours
        argv.insert(at + 1, "--")
    args = parser().parse_args(argv)

    try:
        with python_stdout_only(), stop_signals():
            return args.fn(args)
    except BrokenPipeError:         # the reader left (`| head`), as Unix tools expect: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())     # Python's flush at exit too
        return EXIT_OK
    except KeyboardInterrupt:       # Ctrl-C or SIGTERM: what was written stays (bench run says where)
        print("dlsched: stopped", file=sys.stderr)
        return EXIT_STOPPED
    except Exception as exc:
        if args.debug:
            raise
        # bad input, a policy that cannot run this input (docs/simulator.md), a missing optional extra
        if isinstance(exc, (InputError, PolicyError, MissingExtra)):
            print(f"dlsched: error: {exc}", file=sys.stderr)
            return EXIT_INPUT
        if isinstance(exc, DlschedError):
            print(f"dlsched: failure: {exc}", file=sys.stderr)
        else:
            print(f"dlsched: internal error: {type(exc).__name__}: {exc} (a bug; --debug shows the traceback)", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    raise SystemExit(main())

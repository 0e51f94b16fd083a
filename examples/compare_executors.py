"""Run one suite on two executors (local worker processes, then a Dask LocalCluster of as many
single-threaded workers) and compare the two results files cell by cell (times aside): a cell's
row depends only on the cell, never on where it ran.

    python examples/compare_executors.py [SUITE] [--jobs 2] [--max-cells N] [--out results/executors]

The same as ``dlsched bench run SUITE --jobs N --out A.jsonl``, ``dlsched bench run SUITE
--executor dask --scheduler local --jobs N --out B.jsonl`` and ``dlsched report --compare A.jsonl
B.jsonl``, from Python. Needs ``pip install 'dlsched[dist]'``.
"""

import argparse
import json
import time
from pathlib import Path

from dlsched.bench.executors import DaskExecutor, LocalExecutor
from dlsched.bench.results import compare
from dlsched.bench.runner import run_suite
from dlsched.bench.suite import load_suite


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", nargs="?", default="quick")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-cells", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path("results/executors"))
    args = ap.parse_args(argv)
    suite = load_suite(args.suite)
    wall = {}
    for name, make in (("local", lambda: LocalExecutor(args.jobs)), ("dask", lambda: DaskExecutor("local", args.jobs))):
        path = args.out / f"{name}.jsonl"
        path.unlink(missing_ok=True)           # a fresh run of each executor, timed from its start
        executor = make()
        t0 = time.perf_counter()
        try:
            run_suite(suite, path, executor=executor, progress=False, max_cells=args.max_cells)
        finally:
            getattr(executor, "close", lambda: None)()
        wall[name] = time.perf_counter() - t0
    out = {**compare(args.out / "local.jsonl", args.out / "dask.jsonl"), "wall_seconds": wall}
    print(json.dumps(out, indent=1, default=str))
    return 0 if not out["differ"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

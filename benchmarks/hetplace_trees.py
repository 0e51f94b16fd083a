"""``hetplace``'s average JCT on generated traces, this tree against another, seed by seed:

    DLSCHED_DATA=/work/shared/data python benchmarks/hetplace_trees.py --base /work/main \\
        --set 'gavel:14:{seed}:bursts=1,burst_jobs=14@1-20' --set 'gavel:160:{seed}:rate=0.5,bursts=2@11-14' \\
        [--reading gavel] [-P span_up=false]

For each seed of each ``--set`` (``SPEC@FIRST-LAST``, ``{seed}`` in the spec), ``dlsched simulate SPEC --cluster
CLUSTER --speed throughput --policy hetplace --json`` (``--cluster``, default ``36:36:36``) runs in ``--base``'s tree
and then in this one (each its own process, ``PYTHONPATH`` at the tree); ``--reading gavel`` adds Gavel's reading of
the throughputs (``--speed-param mixed=slowest --speed-param failed=cannot-run``), ``-P`` goes to this tree's
policy. Per set: the mean average JCT of each tree, the change with its paired standard error over the seeds, and
the seeds better and worse. The decisions are deterministic (no timing enters them without a budget), so a seed's
pair needs no repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
GAVEL_READING = ["--speed-param", "mixed=slowest", "--speed-param", "failed=cannot-run"]


def average_jct(tree: Path, spec: str, cluster: str, extra: list[str]) -> float:
    """Hours: ``hetplace``'s average JCT on ``spec`` and ``cluster`` by ``tree``'s code."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, "-m", "dlsched", "simulate", spec, "--cluster", cluster, "--speed", "throughput",
           "--policy", "hetplace", "--json", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd="/", env=env, check=True)
    return json.loads(out.stdout)["avg_jct"] / 3600


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the other tree (a checkout of dlsched)")
    ap.add_argument("--set", action="append", required=True, help="SPEC@FIRST-LAST")
    ap.add_argument("--reading", choices=["ours", "gavel"], default="ours")
    ap.add_argument("--cluster", default="36:36:36")
    ap.add_argument("-P", action="append", default=[], help="KEY=VALUE for this tree's policy")
    args = ap.parse_args(argv)
    reading = GAVEL_READING if args.reading == "gavel" else []
    for item in args.set:
        spec, _, seeds = item.rpartition("@")
        lo, _, hi = seeds.partition("-")
        base, new = [], []
        for seed in range(int(lo), int(hi or lo) + 1):
            base.append(average_jct(Path(args.base), spec.format(seed=seed), args.cluster, reading))
            new.append(average_jct(HERE, spec.format(seed=seed), args.cluster, reading + [f"-P{p}" for p in args.P]))
        a, b = np.array(base), np.array(new)
        se = (b - a).std(ddof=1) / np.sqrt(a.size) / a.mean() if a.size > 1 else np.nan
        better, worse = int((b < a * (1 - 1e-9)).sum()), int((b > a * (1 + 1e-9)).sum())
        change = 100 * (b.mean() / a.mean() - 1)
        print(f"{spec} seeds {seeds} ({args.reading} reading): base {a.mean():.4f} h, this tree {b.mean():.4f} h, "
              f"{change:+.3f} % (paired s.e. {100 * se:.3f} %), better {better}, worse {worse}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Whole-run decision digests: what the "nothing lost where budgets do not bind" checks compare between two trees.

    python benchmarks/digests.py TREE OUT.json "POLICY[@KEY=VALUE...],..." [dl2,gavel]

runs ``dlsched simulate TRACE --policy POLICY -P KEY=VALUE ... --json --jobs --bound none`` with ``TREE`` on
``PYTHONPATH`` (the code under test), for DL2's ``dl2:60:1`` and Gavel's ``msr_seed0_0e4a51`` on ``36:36:36`` (from
``$DLSCHED_DATA``, else ``../shared/data``), and records per (policy spec, trace) the BLAKE2b digest (8 bytes) of
every job's (name, first start, completion), rounded to 1e-6 s, with the run's average JCT. Two trees decide alike
on a run iff the digests are equal. OUT.json accumulates (a second call adds to it); each line is also printed.
A spec's parameters are separated by ``@`` (``hetplace@budget_ms=100000``), the specs by commas.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def traces(data: str) -> dict[str, list[str]]:
    return {"dl2": ["dl2:60:1"], "gavel": [f"{data}/gavel/msr_seed0_0e4a51.trace", "--cluster", "36:36:36"]}


def digest(job_results: list[dict]) -> str:
    """The digest of every job's first start and completion (a job never started or never completed: -1)."""
    rows = [(j["name"], round(j["first_start"] or -1, 6), round(j["completion"] or -1, 6)) for j in job_results]
    return hashlib.blake2b(repr(rows).encode(), digest_size=8).hexdigest()


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    tree, out, specs = Path(argv[0]).resolve(), Path(argv[1]), argv[2].split(",")
    data = os.environ.get("DLSCHED_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    runs = traces(data)
    which = argv[3].split(",") if len(argv) == 4 else list(runs)
    if unknown := [t for t in which if t not in runs]:
        print(f"unknown traces {unknown}: expected some of {list(runs)}", file=sys.stderr)
        return 2
    res = json.loads(out.read_text()) if out.exists() else {}
    for spec in specs:
        policy, *params = spec.split("@")
        for t in which:
            cmd = [sys.executable, "-m", "dlsched", "simulate", *runs[t], "--policy", policy, "--json", "--jobs",
                   "--bound", "none", *sum((["-P", p] for p in params), [])]
            t0 = time.time()
            p = subprocess.run(cmd, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree), "DLSCHED_DATA": data},
                               capture_output=True, text=True)
            if p.returncode:
                res[f"{spec}|{t}"] = f"error {p.returncode}: {p.stderr[-300:]}"
            else:
                d = json.loads(p.stdout)
                res[f"{spec}|{t}"] = f"{digest(d['job_results'])} avg_jct={d['avg_jct']:.1f}"
            print(spec, t, res[f"{spec}|{t}"], f"{time.time() - t0:.0f}s", flush=True)
            out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Where Optimus gains and loses against DRF: per job type, on DL2's job mix (docs/results.md).

For each job type: the mean time of its jobs alone on the whole cluster at their fastest size
(``dlsched.sim.bounds.job_configurations``), and per policy the mean JCT, the mean slowdown
JCT / alone, the type's share of the policy's average JCT above the alone bound (hours per job of
the trace), and the (PSs, workers) the policy gave the type's jobs most often (decisions counted
per call). Same setting as benchmarks/optimus_vs_drf.py (``dl2_trace(200, seed)``,
``dl2_cluster(96)``, TableSpeed, restart 30 s). ``--policies`` takes any policy of the table and
Optimus's ablations (``optimus-relative``, ``optimus-oracle``: ``dlsched.policies.optimus.ABLATIONS``).
For tuning seeds only (100..):

    PYTHONPATH=$PWD python benchmarks/optimus_breakdown.py --seeds 100,101,102
    PYTHONPATH=$PWD python benchmarks/optimus_breakdown.py --seeds 101,102 --policies optimus,optimus-oracle
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict

import numpy as np


def sizes_recorder(policy, sizes: dict):
    """The policy, with every placement it returns counted per job as (PSs, workers) in ``sizes``."""
    from dlsched.sim.policy import Decision

    inner = policy.schedule

    def schedule(state, events):
        out = inner(state, events)
        for j, pl in (out.placements if isinstance(out, Decision) else out).items():
            sizes[j][(pl.n_ps, pl.n_workers)] += 1
        return out

    policy.schedule = schedule
    return policy


def breakdown(seeds: list[int], policies: list[str], restart_seconds: float = 30.0) -> dict:
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.sim.bounds import job_configurations
    from dlsched.sim.engine import simulate
    from dlsched.registry import make_policy
    from dlsched.policies.optimus import ABLATIONS, make_ablation
    from dlsched.sim.speed import TableSpeed

    cluster, speed = dl2_cluster(96), TableSpeed()
    acc: dict = defaultdict(lambda: defaultdict(lambda: {"alone": [], "jct": [], "excess": 0.0, "sizes": Counter()}))
    n_total = 0
    for seed in seeds:
        trace = dl2_trace(200, seed)
        alone = np.array([restart_seconds + job_configurations(j, cluster, speed)[0].min() for j in trace.jobs])
        n_total += len(trace.jobs)
        for name in policies:
            sizes: dict = defaultdict(Counter)
            pol = make_ablation(name) if name in ABLATIONS else make_policy(name)
            res = simulate(trace, cluster, sizes_recorder(pol, sizes), speed, seed=seed, restart_seconds=restart_seconds)
            jct = np.asarray(res.jct)
            for i, job in enumerate(trace.jobs):
                a = acc[name][job.job_type]
                a["alone"].append(alone[i])
                a["jct"].append(jct[i])
                a["excess"] += jct[i] - alone[i]
                a["sizes"].update(sizes[i])
    out = {}
    for name, types in acc.items():
        out[name] = {t: {"jobs": len(a["jct"]), "alone_h": float(np.mean(a["alone"])) / 3600,
                         "jct_h": float(np.mean(a["jct"])) / 3600,
                         "slowdown": float(np.mean(np.asarray(a["jct"]) / np.asarray(a["alone"]))),
                         "excess_h_per_job": a["excess"] / n_total / 3600,
                         "top_sizes": [list(k) for k, _ in a["sizes"].most_common(3)]}
                     for t, a in sorted(types.items(), key=lambda kv: np.mean(kv[1]["alone"]))}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="100,101,102", help="comma-separated trace seeds (tuning seeds: 100..)")
    ap.add_argument("--policies", default="drf,optimus,optimus-relative,optimus-oracle")
    a = ap.parse_args(argv)
    doc = breakdown([int(s) for s in a.seeds.split(",")], a.policies.split(","))
    for name, types in doc.items():
        print(f"{name}: type, jobs, alone (h), JCT (h), slowdown, excess h/job of the trace, most frequent (p, w)")
        for t, r in types.items():
            print(f"  {t:24s} {r['jobs']:4d} {r['alone_h']:7.2f} {r['jct_h']:7.2f} {r['slowdown']:6.2f} "
                  f"{r['excess_h_per_job']:6.2f}  {r['top_sizes']}")
        print(f"  total excess over the alone bound: {sum(r['excess_h_per_job'] for r in types.values()):.2f} h per job")
    return 0


if __name__ == "__main__":
    sys.exit(main())

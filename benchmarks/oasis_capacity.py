"""Does the paper-setting comparison depend on our server size or the arrival process? (docs/oasis.md, "Findings")

The paper gives no server capacities; ours (8 GPU / 48 vCPU / 192 GB workers, 48 vCPU / 192 GB
PS servers) are a choice. This reruns the paper-setting study (every method, every schedule
checked, the pooled upper bound on the offline optimum) with every server's capacity scaled by
each factor, on the same jobs and arrivals (Poisson, or ``--arrivals trace``: the Tiresias
submit times), and prints one Markdown table and, with ``--json``, the rows.

    python benchmarks/oasis_capacity.py [--scales 0.25 0.5 1 2] [--arrivals poisson|trace] [--jobs 400] [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from dlsched.bench import environment
from dlsched.bench.oasis import BASELINES, L_MIN_SHARE, paper_setting
from dlsched.instance.oasis_gen import PAPER

COLUMNS = ("oasis", "oasis_lest", *BASELINES, "risk_reward_preemptive", "upper_bound")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0])
    ap.add_argument("--arrivals", choices=("poisson", "trace"), default="poisson")
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds for each pooled bound")
    ap.add_argument("--json", action="store_true", help="also print the rows and the environment as one JSON line")
    args = ap.parse_args()
    rows = []
    print("| server scale | seed | " + " | ".join(COLUMNS) + " | OASiS / best baseline | bound / best baseline |")
    print("|---:|---:|" + "---:|" * (len(COLUMNS) + 2))
    for scale in args.scales:
        preset = replace(PAPER, worker_server={k: v * scale for k, v in PAPER.worker_server.items()},
                         ps_server={k: v * scale for k, v in PAPER.ps_server.items()})
        for seed in args.seeds:
            p = paper_setting(args.jobs, seed, l_min_share=L_MIN_SHARE, bound_time_limit=args.time_limit, preset=preset,
                              arrivals=args.arrivals)
            p["scale"], p["arrivals"] = scale, args.arrivals
            rows.append(p)
            cells = " | ".join(f"{p[c]['utility']:.1f}" for c in COLUMNS)
            print(f"| {scale:g} | {seed} | {cells} | {p['utility_vs_best_baseline']:.2f} | {p['bound_vs_best_baseline']:.2f} |", flush=True)
    if args.json:
        print(json.dumps({"rows": rows, "environment": environment(jobs=args.jobs, seeds=args.seeds, time_limit=args.time_limit,
                                                                    arrivals=args.arrivals, threads=1)}, default=float))


if __name__ == "__main__":
    main()

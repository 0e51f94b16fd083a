"""Optimus with given constructor options against DRF on DL2's job mix, for choosing options on
tuning seeds (docs/results.md, "The authors' speed estimator"; never on seeds 1-10).

Setting of ``benchmarks/optimus_vs_drf.py``: ``dl2_trace(200, seed)`` on ``dl2_cluster(96)``,
``TableSpeed``, a 30-s restart cost. Prints, per JSON option set, the mean over the seeds of
Optimus's average JCT, the mean of the per-trace ratios avg JCT(DRF) / avg JCT(Optimus) and
makespan(DRF) / makespan(Optimus), and Optimus's model errors pooled over the traces (median
relative error of the speed estimate against the measured table at 25/50/75 % of progress, per
job type at completion, and of the remaining steps).

    PYTHONPATH=$PWD python benchmarks/optimus_options.py --seeds 101,102,103,104 '{}' '{"speed_model": "nnls"}'
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.sim.engine import simulate
from dlsched.registry import make_policy
from dlsched.policies.optimus import Optimus, summarise_errors
from dlsched.sim.speed import TableSpeed


def run(trace, policy, seed: int):
    res = simulate(trace, dl2_cluster(96), policy, TableSpeed(), seed=seed, restart_seconds=30.0)
    return float(np.mean(res.jct)), res.makespan()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("options", nargs="+", help="JSON objects of Optimus's constructor options")
    ap.add_argument("--seeds", default="101,102,103,104")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    traces = {s: dl2_trace(200, s) for s in seeds}
    drf = {s: run(traces[s], make_policy("drf"), s) for s in seeds}
    print("DRF: avg JCT %.3f h, makespan %.2f h" % (np.mean([v[0] for v in drf.values()]) / 3600,
                                                  np.mean([v[1] for v in drf.values()]) / 3600))
    for text in args.options:
        jct, r_jct, r_mk, rows = [], [], [], []
        for s in seeds:
            pol = Optimus(**json.loads(text))
            a, m = run(traces[s], pol, s)
            jct.append(a)
            r_jct.append(drf[s][0] / a)
            r_mk.append(drf[s][1] / m)
            rows += pol.error_records()
        e = summarise_errors(rows)
        print(f"{text}: avg JCT {np.mean(jct) / 3600:.3f} h, DRF / it {np.mean(r_jct):.3f}, makespan DRF / it {np.mean(r_mk):.3f}; "
              f"speed error {', '.join(f'{v:.3f}' for v in e['speed'].values())}; remaining "
              f"{', '.join(f'{v:.3f}' for v in e['remaining'].values())}; by type "
              + ", ".join(f"{t} {v:.3f}" for t, v in e["speed_by_type"].items()), flush=True)


if __name__ == "__main__":
    main()

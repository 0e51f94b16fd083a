"""The details MODELS.md §5 leaves open, measured on DL2's job mix (docs/results.md, faithfulness audit).

Same setting as benchmarks/optimus_vs_drf.py (``dl2_trace(200, seed)``, ``dl2_cluster(96)``,
TableSpeed, restart 30 s). Per seed, one line per run: average JCT and makespan (hours), the
placements a policy changed per job (a job whose returned placement differs from
``state.allocation``: each costs a restart), and for Optimus how many calls left a ready job
without its starting 1 PS + 1 worker. Runs:

* ``optimus`` and ``drf`` with the restart cost and without it (what restarts cost each);
* ``optimus`` with the placement principle switched off (first fit only: what the principle buys
  when the speed source ignores placement);
* ``optimus`` with ``normalise="none"`` (DL2's simulator's Optimus divides the gain by nothing).

For tuning seeds only (100..):

    PYTHONPATH=$PWD python benchmarks/optimus_audit.py --seeds 101
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from unittest import mock

import numpy as np


def counting(policy, counts: dict):
    """The policy, with its changed placements counted in ``counts["changes"]`` (wraps ``schedule``)."""
    from dlsched.sim.policy import Decision

    inner = policy.schedule

    def schedule(state, events):
        out = inner(state, events)
        for j, pl in (out.placements if isinstance(out, Decision) else out).items():
            if state.allocation.get(j) != pl:
                counts["changes"] += 1
        return out

    policy.schedule = schedule
    return policy


def start_counter(counts: dict):
    """A stand-in for optimus.marginal_gain_allocation that counts the calls leaving a ready job
    (one that could run at its start size) without its start size."""
    from dlsched.policies import optimus

    real = optimus.marginal_gain_allocation

    def allocation(times, demand_w, demand_p, capacity, free, start, shares=None, order=None, pairs=False):
        out = real(times, demand_w, demand_p, capacity, free, start, shares, order, pairs)
        if any(i not in out and np.isfinite(times[i][tuple(start[i])]) for i in range(len(start))):
            counts["start_short"] += 1
        return out

    return allocation


RUNS = (("optimus", {}, 30.0, False), ("drf", {}, 30.0, False), ("optimus", {}, 0.0, False), ("drf", {}, 0.0, False),
        ("optimus", {}, 30.0, True), ("optimus", {"normalise": "none"}, 30.0, False))


def audit(seed: int) -> list[dict]:
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace
    from dlsched.sim.engine import simulate
    from dlsched.registry import make_policy
    from dlsched.sim.speed import TableSpeed

    trace, cluster, rows = dl2_trace(200, seed), dl2_cluster(96), []
    for name, options, restart, first_fit_only in RUNS:
        counts = {"changes": 0, "start_short": 0}
        policy = counting(make_policy(name, **options), counts)
        no_principle = (mock.patch("dlsched.policies.optimus.place_principle", lambda *a, **k: None)
                        if first_fit_only else contextlib.nullcontext())
        with mock.patch("dlsched.policies.optimus.marginal_gain_allocation", start_counter(counts)), no_principle:
            res = simulate(trace, cluster, policy, TableSpeed(), seed=seed, restart_seconds=restart)
        rows.append({"seed": seed, "policy": name, "options": options, "restart_seconds": restart,
                     "placement": "first fit only" if first_fit_only else "default",
                     "avg_jct_h": float(np.mean(res.jct)) / 3600, "makespan_h": res.makespan() / 3600,
                     "changes_per_job": counts["changes"] / len(trace), "calls": len(res.decision_seconds),
                     "calls_with_a_start_left_out": counts["start_short"] if name == "optimus" else None})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="101", help="comma-separated trace seeds (tuning seeds: 100..)")
    a = ap.parse_args(argv)
    for seed in (int(s) for s in a.seeds.split(",")):
        for r in audit(seed):
            print(f"seed {r['seed']} {r['policy']:8s} {str(r['options'] or ''):22s} restart {r['restart_seconds']:4.0f} s "
                  f"{r['placement']:14s} avg JCT {r['avg_jct_h']:.3f} h  makespan {r['makespan_h']:.2f} h  "
                  f"placement changes/job {r['changes_per_job']:.1f}  calls {r['calls']}"
                  + ("" if r["calls_with_a_start_left_out"] is None else
                     f"  calls leaving a start out {r['calls_with_a_start_left_out']}"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

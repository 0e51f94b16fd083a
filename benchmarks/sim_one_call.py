"""One policy call on many candidates: CPU seconds of a policy's ``schedule`` on the first N pods of
the inflated OpenB list (benchmarks/sim_scale.py ``openb``), all arrived at time 0 on all OpenB GPU
nodes, nothing running yet (every candidate a DRF or Tetris step). Prints the CPU seconds of two
calls on the same state (the second with warm caches) and a digest of the placements, so that the
package of an older commit (``PYTHONPATH=DIR`` of its ``git archive``) and this one can be compared:

    PYTHONPATH=$PWD python benchmarks/sim_one_call.py --policy tetris --n 7000
    git archive REV | tar -x -C /tmp/rev && PYTHONPATH=/tmp/rev python benchmarks/sim_one_call.py --policy tetris --n 7000
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time


def main() -> None:
    from benchmarks.sim_scale import openb
    from dlsched.instance.workload import Trace
    from dlsched.sim.engine import Simulation
    from dlsched.registry import make_policy
    from dlsched.sim.policy import PolicyContext

    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="tetris")
    ap.add_argument("--n", type=int, default=7000)
    args = ap.parse_args()
    trace, cluster, speed = openb(None)
    at0 = Trace(tuple(dataclasses.replace(j, arrival=0.0) for j in trace.jobs[:args.n]), f"{trace.source}, first {args.n} at 0")
    sim = Simulation(at0, cluster, speed)
    sim.advance()
    state = sim.state()
    policy = make_policy(args.policy)
    policy.reset(PolicyContext(cluster=cluster, speed=speed, seed=0))
    seconds = []
    for _ in range(2):
        c0 = time.process_time()
        out = policy.schedule(state, [])
        seconds.append(time.process_time() - c0)
    rows = sorted((j, sorted(p.workers.items()), sorted(p.ps.items())) for j, p in out.items())
    print(json.dumps({"policy": args.policy, "n": args.n, "placed": len(out), "cpu_seconds": seconds,
                      "digest": hashlib.sha256(repr(rows).encode()).hexdigest()[:16]}))


if __name__ == "__main__":
    main()

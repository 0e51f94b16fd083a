"""Wall seconds of the retired family simulators against the engine, side by side (issue 11 port).

The old slot simulators ``dlsched/sim/oasis.py`` and ``dlsched/sim/smd.py`` are read from git
(commit ``OLD``, the last one that had them) into a temporary folder and run in the same process
as their engine ports on the same instances, alternately, best of ``--repeats``; prints one JSON
object of seconds and ratios engine / old (the schedules are identical, see docs/results.md).

    PYTHONPATH=$PWD python benchmarks/sim_port_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OLD = "f6fa6ac"


def _old(module: str, folder: Path):
    path = folder / f"old_{module}.py"
    path.write_text(subprocess.run(["git", "show", f"{OLD}:dlsched/sim/{module}.py"], check=True, capture_output=True,
                                   text=True).stdout)
    spec = importlib.util.spec_from_file_location(f"old_{module}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def best(fn, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main(argv: list[str]) -> int:
    from dlsched.instance.oasis_gen import generate
    from dlsched.instance.smd_gen import generate as smd_generate
    from dlsched.policies import smd as ps
    from dlsched.policies.greedy import OptimusGreedyPolicy
    from dlsched.policies.oasis import OasisPolicy, SlotDecide, run
    from dlsched.policies.oasis_baselines import RiskRewardPolicy
    from dlsched.solvers.oasis import run_oasis

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        old_oasis, old_smd = _old("oasis", Path(tmp)), _old("smd", Path(tmp))
        inst = generate(400, seed=1, preset="paper", arrivals="poisson")
        for name, make in (("risk_reward", lambda i: RiskRewardPolicy(i)),):
            rows[f"oasis400_{name}"] = (best(lambda: old_oasis.simulate(inst, make(inst)), args.repeats),
                                        best(lambda: run(inst, SlotDecide(make, name)), args.repeats))
        rows["oasis400_primal_dual"] = (best(lambda: run_oasis(inst), args.repeats),
                                        best(lambda: run(inst, OasisPolicy()), args.repeats))
        sinst = smd_generate(200, 10, mix="dl2", seed=0, arrival_rate=8.0, max_len_slots=6.0)
        rows["smd200_optimus"] = (best(lambda: old_smd.simulate(sinst, OptimusGreedyPolicy().allocate), args.repeats),
                                  best(lambda: ps.run(sinst, OptimusGreedyPolicy(sinst)), args.repeats))
    print(json.dumps({k: {"old_seconds": o, "engine_seconds": n, "ratio": n / o} for k, (o, n) in rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""hetplace's types exchange on the same states, the replay one job and one event at a time (as first built, kept as
the tests' reference) against the tries replayed side by side (``dlsched/policies/type_exchange.py``), CPU seconds.

    PYTHONPATH=$PWD DLSCHED_DATA=/work/shared/data python benchmarks/exchange_replay.py \\
        --trace 'gavel:160:11:rate=0.5,bursts=2' [--jobs 0-999] [--states 40] [--seed 0]

The states are the exchange's inputs (the admitted jobs' pooled model) at every decision of ``hetplace`` on the trace
(``36:36:36``, ``--speed throughput``), recorded along the rule's own run (each search answered with no promotion, so
that no cap on the jobs applies); ``--states`` of those with a number of admitted jobs in ``--jobs`` are drawn with
``--seed``. For each, both searches run in turn in this process (``time.process_time``) and must return the same
promotions and F (to 1e-9 relative): the sums of CPU seconds, and the largest single search, for each.
``--base TREE``: the old side is ``TREE``'s ``dlsched/policies/type_exchange.py`` (another checkout, e.g. main's)
instead of the one-at-a-time reference, and the percentiles of the single searches are printed for both;
``--different`` lets the two answer differently (a changed search, its CPU measured all the same: the states'
models are this tree's, the base's built from their rates, needs and room alone) and counts the states where they do.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

from dlsched.instance.traces import load_trace
from dlsched.policies import hetplace as hp
from dlsched.policies import type_exchange as tx
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from dlsched.sim.run import load_cluster
from dlsched.sim.speed import make_speed
from tests.sim.test_hetplace_exchange import ref_exchange


def states(spec: str) -> list[tx.TypeModel]:
    """The exchange's models at every decision of hetplace on ``spec``, along the rule's run."""
    out: list[tx.TypeModel] = []

    def record(m, limit=None, base=None, clock=None):
        out.append(m)
        return [], 0.0, 0.0

    cap, search = hp.EXCHANGE_MAX_JOBS, tx.exchange
    hp.EXCHANGE_MAX_JOBS, tx.exchange = sys.maxsize, record
    try:
        tr = load_trace(spec)
        simulate(tr, load_cluster("36:36:36", tr), make_policy("hetplace"), make_speed("throughput"), seed=0)
    finally:
        hp.EXCHANGE_MAX_JOBS, tx.exchange = cap, search
    return out


def base_search(tree: str):
    """The search of ``tree``'s ``dlsched/policies/type_exchange.py`` on a model of this tree's."""
    spec = importlib.util.spec_from_file_location("base_type_exchange", Path(tree) / "dlsched/policies/type_exchange.py")
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    return lambda m: base.exchange(base.TypeModel(m.rem, m.need, m.rho, m.per, m.cap, m.slow))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--jobs", default="0-999", help="LO-HI admitted jobs")
    ap.add_argument("--states", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base", help="another tree whose type_exchange.py is the old side")
    ap.add_argument("--different", action="store_true",
                    help="with --base: a search that answers differently by design (its CPU all the same)")
    a = ap.parse_args(argv)
    reference = base_search(a.base) if a.base else ref_exchange
    lo, hi = (int(x) for x in a.jobs.split("-"))
    pool = [m for m in states(a.trace) if lo <= m.rem.size <= hi]
    rng = np.random.default_rng(a.seed)
    pick = sorted(rng.choice(len(pool), min(a.states, len(pool)), replace=False).tolist())
    old, new, differ = [], [], 0
    for i in pick:
        m = pool[i]
        c0 = time.process_time()
        want = reference(m)
        c1 = time.process_time()
        got = tx.exchange(m)
        c2 = time.process_time()
        same = got[0] == want[0] and abs(got[2] - want[2]) <= 1e-9 * abs(want[2])
        assert same or a.different, (i, got, want)
        differ += not same
        old.append(c1 - c0)
        new.append(c2 - c1)
    sizes = [pool[i].rem.size for i in pick]
    answers = f"different promotions or F on {differ}" if differ else "the same promotions and F"
    print(f"{a.trace}: {len(pick)} states of {min(sizes)}-{max(sizes)} admitted jobs (of {len(pool)} in {a.jobs}), "
          f"{answers}; CPU s {'base' if a.base else 'one at a time'} {sum(old):.3f} (largest "
          f"{max(old):.3f}), {'this' if a.base else 'side by side'} {sum(new):.3f} (largest {max(new):.3f}): "
          f"{sum(old) / sum(new):.2f} times less")
    if a.base:
        q = [50, 90, 99]
        print(f"single searches, ms at percentiles {q}: base {np.round(np.percentile(old, q) * 1e3, 1).tolist()}, "
              f"this {np.round(np.percentile(new, q) * 1e3, 1).tolist()}")


if __name__ == "__main__":
    main()

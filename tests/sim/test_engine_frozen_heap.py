"""The engine leaves the objects made before a run out of the garbage collector's full passes while it runs
(``gc.freeze``), and gives them back after (unless its caller had frozen them)."""

import gc

from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
from dlsched.sim.speed import make_speed


def _run():
    seen = []
    policy = make_policy("fifo")
    for name in ("schedule", "changes"):         # whichever the engine asks
        if hasattr(policy, name):
            def spy(state, events, call=getattr(policy, name)):
                seen.append(gc.get_freeze_count())
                return call(state, events)
            setattr(policy, name, spy)
    assert simulate(dl2_trace(8, 1), dl2_cluster(2), policy, make_speed("table")).status == "completed"
    return seen


def test_the_heap_made_before_a_run_is_frozen_while_it_runs_and_unfrozen_after():
    gc.unfreeze()
    seen = _run()
    assert seen and min(seen) > 0 and gc.get_freeze_count() == 0


def test_a_heap_its_caller_froze_stays_frozen():
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        seen = _run()
        assert before > 0 and min(seen) > before // 2 and gc.get_freeze_count() > before // 2     # not unfrozen by the run
    finally:
        gc.unfreeze()

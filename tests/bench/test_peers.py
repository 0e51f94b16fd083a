"""The peer adapters solve bundled instances to their recorded optima, and the checker accepts each."""

import pytest

import dlsched
from dlsched.bench.peers import PEERS, available, run_peer


@pytest.mark.parametrize("peer", sorted(PEERS))
@pytest.mark.parametrize("name", ["mknap1-2.json", "gap-c0515_1-min.json"])
def test_peer_reaches_the_recorded_optimum(peer, name, instances_dir):
    if not available(peer):
        pytest.skip(f"{PEERS[peer]} is not installed")
    inst = dlsched.load(instances_dir / name)
    run = run_peer(peer, inst, limit=20.0)
    if run.status == "skipped":
        pytest.skip(run.note)
    assert run.status == "optimal"
    assert run.objective == pytest.approx(inst.reference.objective)
    report = dlsched.check(inst, run.choice, run.objective)
    assert report.feasible, report
    assert run.trace, "an incumbent stream was recorded"


def test_missing_peer_is_skipped_with_a_reason(monkeypatch, instances_dir):
    import dlsched.bench.peers as peers

    monkeypatch.setattr(peers, "available", lambda p: False)
    run = peers.run_peer("scip", dlsched.load(instances_dir / "mknap1-0.json"), 1.0)
    assert run.status == "skipped" and "pip install pyscipopt" in run.note

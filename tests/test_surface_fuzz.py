"""Property-based fuzzing of the simulator's and the harness's surfaces (a small budget;
``benchmarks/fuzz.py --surfaces N`` runs the long sweep): a mutated trace, cluster, policy option,
scaling flag, suite file, results file or checkpoint never gives a traceback or a hang, and a
certainly invalid one is never accepted."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import fuzz

TIMEOUT = 20.0
FUZZ = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    work = tmp_path_factory.mktemp("surfaces")
    return work, fuzz.make_surface_seeds(work / "seeds")


@pytest.mark.parametrize("surface", fuzz.SURFACES)
@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_mutated_surface_inputs_fail_cleanly(seeds, surface, rng):
    work, pool = seeds
    if surface == "checkpoint" and pool.checkpoint is None:
        pytest.skip("no torch (the rl extra)")
    trial = fuzz.surface_trial(rng, pool, Path(tempfile.mkdtemp(dir=work)), 0, surface)
    out = fuzz.judge_surface(trial, TIMEOUT)
    what = f"{trial.kind} {trial.seed} {trial.edits}: {' '.join(trial.argv)}"
    assert out.kind not in ("traceback", "hang"), f"{out.kind} on {what}\n{out.detail}"
    assert not (trial.must_reject and out.kind == "accepted"), f"wrongly accepted: {what}"


def test_a_suite_refused_after_writing_results_is_caught(seeds, monkeypatch, tmp_path):
    """The harness can fail: a refusal that comes after the results file was written counts."""
    out = tmp_path / "r.jsonl"
    out.write_text("{}\n")
    monkeypatch.setattr(fuzz, "run", lambda argv, timeout: fuzz.Outcome("clean error", "late"))
    trial = fuzz.Trial("suite", "simulate", ["x"], ["bench", "run", "s.toml", "--out", str(out)], False)
    assert fuzz.judge_surface(trial, TIMEOUT).kind == "traceback"

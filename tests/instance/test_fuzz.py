"""Property-based fuzzing of every reader and of the checker (a small budget; benchmarks/fuzz.py runs
the large one): a mutated input never gives a traceback or a hang, a certainly invalid one is
never accepted, and a tampered solution that is certainly wrong is never accepted."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import fuzz

TIMEOUT = 20.0
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    work = tmp_path_factory.mktemp("fuzz")
    return work, fuzz.make_seeds(work)


def _judge(trial: fuzz.Trial) -> None:
    out = fuzz.run_trial(trial, TIMEOUT)
    what = f"{trial.seed} {trial.edits}: {' '.join(trial.argv)}"
    assert out.kind not in ("traceback", "hang"), f"{out.kind} on {what}\n{out.detail}"
    assert not (trial.must_reject and out.kind == "accepted"), f"wrongly accepted: {what}"


@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_mutated_inputs_fail_cleanly(seeds, rng):
    work, pool = seeds
    _judge(fuzz.input_trial(rng, pool, Path(tempfile.mkdtemp(dir=work)), 0))


@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_tampered_solutions_are_rejected(seeds, rng):
    work, pool = seeds
    _judge(fuzz.solution_trial(rng, pool, Path(tempfile.mkdtemp(dir=work)), 0))


def test_every_family_and_both_orlib_formats_are_seeds(seeds):
    assert {s.family for s in seeds[1]} == {"mcmdk", "smd", "oasis", "placement", "mkp", "gap"}


def test_fuzzer_sees_a_wrong_acceptance(seeds, monkeypatch):
    """The harness can fail: a checker that accepts everything is caught."""
    work, pool = seeds
    monkeypatch.setattr(fuzz, "run", lambda argv, timeout: fuzz.Outcome("accepted"))
    trial = fuzz.Trial("solution", "x", ["objective nan"], ["check"], must_reject=True)
    with pytest.raises(AssertionError, match="wrongly accepted"):
        _judge(trial)

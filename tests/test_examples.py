"""Every script in examples/ runs, quickly, on a small setting (each has its command line here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TINY_SUITE = """name = "tiny"
[[instances]]
kind = "bundled"
pattern = "mknap1-*.json"
[[methods]]
name = "exact"
"""

#: example -> (arguments, a line its output must contain); "{tmp}" is a fresh folder
RUNS = {
    "layer_profile.py": (["--m", "5", "--n", "50", "--limit", "1"], "checked True"),
    "hetplace_calibration.py": ([], "mean over job types"),
    "compare_executors.py": (["{tmp}/tiny.toml", "--jobs", "1", "--max-cells", "1", "--out", "{tmp}/out"],
                             '"differ": {}'),
}


def test_every_example_has_a_run():
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(RUNS)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_example_runs(name, tmp_path):
    if name == "compare_executors.py":
        pytest.importorskip("distributed")
        (tmp_path / "tiny.toml").write_text(TINY_SUITE)
    args, expected = RUNS[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name), *(a.format(tmp=tmp_path) for a in args)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expected in proc.stdout

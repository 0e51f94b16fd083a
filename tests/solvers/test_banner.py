"""A program that calls dlsched as a library keeps its stdout: HiGHS's banner is not printed.

HiGHS writes a two-line banner to file descriptor 1 at the first Highs object of a process, whatever
``output_flag`` says; ``dlsched.solvers.highs`` makes that first object with fd 1 on the null device.
Each case runs in a fresh interpreter, because the banner is printed once per process.
"""

import subprocess
import sys

import pytest

PROGRAM = """
import dlsched
from dlsched.instance.classic_gen import chu_beasley_mkp
r = dlsched.solve(chu_beasley_mkp(5, 20, 0.5, seed=1), method={method!r}, time_limit=20{params})
print("objective", r.objective)
"""


@pytest.mark.parametrize("method, params", [("exact", ""), ("exact", ", backend='pyomo'"),
                                            ("exact", ", backend='cvxpy'"), ("core", "")])
def test_library_stdout_has_only_the_callers_output(method, params):
    done = subprocess.run([sys.executable, "-c", PROGRAM.format(method=method, params=params)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("objective"), done.stdout
    assert "Running HiGHS" not in done.stderr

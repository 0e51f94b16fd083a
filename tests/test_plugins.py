"""A third-party package plugs in through entry points alone (docs/plugins.md).

The fixture package ``tests/fixtures/dlsched_plugin_example`` (one policy ``sjf-full``, one method
``density-greedy``) is installed offline into a temporary target; its entry points make both
names known to ``dlsched policies``/``methods``, ``simulate --policy``, ``solve --method``, the
library and the suites, and both pass the shipped conformance kits (dlsched.testing).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

import dlsched
from dlsched import registry
from dlsched.solvers import registry as methods
from dlsched.testing import bundled_instances, check_method, check_policy
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "dlsched_plugin_example"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """The example installed with pip into a fresh target (no index, no build isolation), on sys.path."""
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("build") / FIXTURE.name
    shutil.copytree(FIXTURE, source)          # pip builds in the source folder: keep the clone clean
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--quiet", "--target", str(target), str(source)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    yield target
    sys.path.remove(str(target))
    for key in [k for k in methods._METHODS if k[1] == "density-greedy"]:
        del methods._METHODS[key]
    for mod in [m for m in sys.modules if m.startswith("dlsched_plugin_example")]:
        del sys.modules[mod]
    importlib.invalidate_caches()


def test_the_entry_points_name_them(plugin):
    assert registry.plugins("policies") == {"sjf-full": "dlsched_plugin_example.policy:ShortestJobFirst"}
    assert registry.plugins("methods") == {"density-greedy": "dlsched_plugin_example.method"}
    assert "sjf-full" in registry.policy_names() and "density-greedy" in dlsched.methods("mcmdk")
    assert "density-greedy" not in dlsched.methods("smd")


def test_the_policy_passes_the_kit(plugin):
    check_policy("sjf-full")


def test_the_method_passes_the_kit(plugin):
    # every bundled core instance, against its optimum; the greedy has no bound and refuses a gap
    check_method("density-greedy", family="mcmdk")
    res = dlsched.solve(bundled_instances(names=["mknap1-0.json"])[0], "density-greedy")
    assert res.status.value == "feasible" and res.bound is None


def test_the_kits_catch_a_broken_method(plugin, monkeypatch):
    """The same method claiming a proof it does not have fails the reference check, and one claiming
    more than its solution gives fails the checker, each by name."""
    from dlsched.result import Status

    mod = importlib.import_module("dlsched_plugin_example.method")
    real, key = mod.density_greedy, ("mcmdk", "density-greedy")

    def boastful(inst, opts):
        res = real(inst, opts)
        res.status, res.termination, res.bound = Status.OPTIMAL, "optimal", res.objective
        return res

    def inflated(inst, opts):
        res = real(inst, opts)
        res.objective += 1.0
        return res

    mknap = bundled_instances(names=["mknap1-2.json"])
    for fn, expected in ((boastful, r"^reference: density-greedy on .*mknap1-2.json: .*known optimum 4015"),
                         (inflated, r"^checker: density-greedy on .*mknap1-2.json: the checker rejected")):
        monkeypatch.setitem(methods._METHODS, key, replace(methods._METHODS[key], fn=fn))
        with pytest.raises(AssertionError, match=expected):
            check_method("density-greedy", family="mcmdk", instances=mknap)


def test_a_fresh_interpreter_sees_them(plugin):
    """A new process with the target only on PYTHONPATH finds both names (no import of the plug-in)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)])}
    code = "from dlsched import registry as r; print(r.policy_names()[-1], r.method_modules('density-greedy'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["sjf-full", "('dlsched_plugin_example.method',)"], out.stderr


def test_the_cli_and_a_suite_see_them(plugin, tmp_path, capsys):
    from dlsched.cli import main

    def run(*argv):
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert code == 0, err[-2000:]
        return out

    assert "SJF: fewest remaining" in run("policies")
    assert "density-greedy" in run("methods")
    assert json.loads(run("solve", str(ROOT / "instances" / "mknap1-0.json"), "--method", "density-greedy",
                          "--json"))["status"] == "feasible"
    assert json.loads(run("simulate", "dl2:12:3", "--policy", "sjf-full", "--json"))["status"] == "completed"
    suite = tmp_path / "plug.toml"
    suite.write_text('name = "plug"\ntime_limit = 10.0\nthreads = 1\n'
                     '[[instances]]\nkind = "bundled"\nname = "b"\npattern = "mknap1-*.json"\n'
                     '[[methods]]\nname = "density-greedy"\n')
    run("bench", "run", str(suite), "--out", str(tmp_path / "plug.jsonl"), "--json")
    rows = [json.loads(line) for line in (tmp_path / "plug.jsonl").read_text().splitlines()]
    assert sum(r.get("method") == "density-greedy" for r in rows) == 3, rows[:2]


def test_the_library_simulates_with_it(plugin):
    from dlsched.instance.synthetic import dl2_cluster, dl2_trace

    res = dlsched.simulate(dl2_trace(10, seed=1), dl2_cluster(4), "sjf-full")
    assert res.status == "completed" and res.policy == "sjf-full"

"""The ``dl2`` simulator policy and its checkpoints: runs in the engine, bad files are clear errors."""

import subprocess
import sys

import pytest
import torch

from dlsched.errors import InputError
from dlsched.rl.policy import DEFAULT_CHECKPOINT, DL2Policy, Model, load_checkpoint, save_checkpoint
from dlsched.rl.slot import Spec
from dlsched.sim.engine import simulate
from dlsched.registry import make_policy

from tests.sim.helpers import LinearSpeed, cluster, job, trace

from .helpers import small


@pytest.fixture(scope="module")
def untrained(tmp_path_factory):
    path = tmp_path_factory.mktemp("ck") / "m.pt"
    save_checkpoint(Model.new(Spec(J=6), (16,), seed=0), path)
    return path


def bundles_in_arrival_order(spec: Spec) -> Model:
    """A network whose output ignores the state: "both" for the earliest job that can grow, else stop."""
    model = Model.new(spec, (8,), seed=0)
    last = model.policy.body[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.fill_(-10.0)
        last.bias[2 * spec.J:3 * spec.J] = torch.arange(spec.J, 0, -1, dtype=torch.float32)
        last.bias[spec.stop] = 0.0
    return model


def test_dl2_policy_fills_slots_through_the_engine_and_keeps_unchanged_jobs_in_place():
    traces, cl, speed = small(8, (7,), 3)
    pol = DL2Policy(bundles_in_arrival_order(Spec(J=6)))
    decisions = []
    orig = pol.schedule

    def spy(state, events):
        d = orig(state, events)
        decisions.append((state.time, dict(d.placements)))
        return d

    pol.schedule = spy
    res = simulate(traces[0], cl, pol, speed)
    assert res.status == "completed" and res.completed.all()
    assert pol.inferences > 0
    st = pol.inference_stats()
    assert st["count"] == len(pol.inference_seconds) == len(pol.inference_cpu_seconds) > 0
    assert 0 < st["p50"] <= st["p95"] <= st["max"] and 0 <= st["cpu_p50"] <= st["cpu_p95"] <= st["cpu_max"]
    # every decision is made at a slot boundary or keeps the last one
    for (t0, a), (t1, b) in zip(decisions, decisions[1:]):
        if t1 % pol.slot_seconds > 1e-6:
            assert all(b[j] == a[j] for j in b)
        for j in set(a) & set(b):
            if (a[j].n_workers, a[j].n_ps) == (b[j].n_workers, b[j].n_ps):
                assert a[j] == b[j]


def test_the_shipped_checkpoint_loads_through_the_policy_table():
    if not DEFAULT_CHECKPOINT.is_file():
        pytest.fail(f"the shipped model {DEFAULT_CHECKPOINT} is missing")
    pol = make_policy("dl2")
    assert pol.spec.job_types == Spec().job_types
    assert pol.model.provenance.get("command", "").startswith("dlsched train dl2")
    traces, cl, speed = small(6, (8,), 4)
    assert simulate(traces[0], cl, pol, speed).completed.all()


@pytest.mark.parametrize("name", ["dl2-default", "dl2-rl-from-drf"])
def test_a_shipped_checkpoint_records_no_path_of_the_machine_it_was_trained_on(name):
    import json

    path = DEFAULT_CHECKPOINT.parent / f"{name}.pt"
    text = path.with_suffix(".json").read_text()
    assert not any(p in text for p in ("/tmp", "/work", "/home", "/root"))
    assert json.loads(text) == load_checkpoint(path).provenance


def test_the_model_trained_from_drf_alone_loads_as_a_checkpoint_option():
    """`--policy dl2 -P checkpoint=...dl2-rl-from-drf.pt`: DRF its only teacher (its record: the test above)."""
    path = DEFAULT_CHECKPOINT.parent / "dl2-rl-from-drf.pt"
    pol = make_policy("dl2", checkpoint=str(path))
    prov = pol.model.provenance
    assert prov["config"]["teacher"] == "drf" and prov["command"].startswith("dlsched train dl2")
    # every run of the chain it came from (--init) was taught by DRF and nothing else
    link, commands = prov, []
    while isinstance(link, dict) and "command" in link:
        commands.append(link["command"])
        link = link.get("init")
    assert len(commands) >= 2 and all("--teacher drf" in c and c.count("--teacher") == 1 for c in commands)
    traces, cl, speed = small(6, (8,), 4)
    assert simulate(traces[0], cl, pol, speed).completed.all()


def test_missing_foreign_and_misshaped_checkpoints_are_input_errors(tmp_path, untrained):
    with pytest.raises(InputError, match="no such file"):
        load_checkpoint(tmp_path / "none.pt")
    (tmp_path / "junk.pt").write_text("not a checkpoint")
    with pytest.raises(InputError, match="unreadable"):
        load_checkpoint(tmp_path / "junk.pt")
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(InputError, match="format"):
        load_checkpoint(tmp_path / "other.pt")
    doc = torch.load(untrained, weights_only=True)
    doc["hidden"] = [32]                 # claims another shape than its weights have
    torch.save(doc, tmp_path / "shape.pt")
    with pytest.raises(InputError, match="retrain with `dlsched train dl2`"):
        load_checkpoint(tmp_path / "shape.pt")


def test_damaged_checkpoints_are_input_errors(tmp_path, untrained):
    """NaN weights, weights that no longer match their digest (flipped bytes still load as numbers)
    and sizes that would allocate without limit are refused on load, before any run."""
    doc = torch.load(untrained, weights_only=True)
    name = next(iter(doc["policy"]))
    nan = {**doc, "policy": {**doc["policy"], name: doc["policy"][name].clone().fill_(float("nan"))}}
    torch.save(nan, tmp_path / "nan.pt")
    with pytest.raises(InputError, match="NaN or infinite weights"):
        load_checkpoint(tmp_path / "nan.pt")
    flipped = {**doc, "policy": {**doc["policy"], name: doc["policy"][name].clone() * -1.0}}
    torch.save(flipped, tmp_path / "flipped.pt")
    with pytest.raises(InputError, match="damaged"):
        load_checkpoint(tmp_path / "flipped.pt")
    huge = {**doc, "spec": {**doc["spec"], "J": 10**7}}
    torch.save(huge, tmp_path / "huge.pt")
    with pytest.raises(InputError, match="window of 1 to"):
        load_checkpoint(tmp_path / "huge.pt")
    wide = {**doc, "hidden": [10**9]}
    torch.save(wide, tmp_path / "wide.pt")
    with pytest.raises(InputError, match="hidden layers of 1 to"):
        load_checkpoint(tmp_path / "wide.pt")


def test_the_shipped_checkpoint_carries_its_digest():
    assert "digest" in torch.load(DEFAULT_CHECKPOINT, weights_only=True)
    load_checkpoint()


def test_a_trace_of_other_job_types_is_a_clear_error(untrained):
    # an InputError a policy raises passes through the engine unchanged (docs/simulator.md)
    with pytest.raises(InputError, match="job types the DL2 network was trained on"):
        simulate(trace(job("a", 0.0, 5.0, max_ps=1)), cluster(), DL2Policy(untrained), LinearSpeed())


def test_without_torch_the_toolkit_imports_and_dl2_says_what_to_install():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import dlsched, dlsched.cli, dlsched.sim.engine\n"
        "from dlsched.registry import describe_policy\n"
        "assert 'pip install' in describe_policy('dl2'), describe_policy('dl2')\n"
        "try:\n"
        "    import dlsched.rl\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'dlsched[rl]'" in out
    cli = subprocess.run([sys.executable, "-c", "import sys; sys.modules['torch'] = None\n"
                          "from dlsched.cli import main; raise SystemExit(main(['train', 'dl2']))"],
                         capture_output=True, text=True)
    assert cli.returncode == 2 and "pip install 'dlsched[rl]'" in cli.stderr and "Traceback" not in cli.stderr


@pytest.mark.parametrize("decide_at,rows", [("slots", "arrival"), ("events", "arrival"), ("events", "remaining")])
def test_the_policy_decides_when_and_as_the_environment_does(decide_at, rows):
    """The network's greedy episode in DL2Env and the ``dl2`` policy in the engine give the same JCTs
    (same decision times, same features, including the time each job has run)."""
    import numpy as np

    from dlsched.rl.env import DL2Env
    from dlsched.rl.policy import choose
    from dlsched.rl.train import rollout

    traces, cl, speed = small(8, (6, 7), 3)
    # bundles in arrival order, perturbed by weights on the hidden layer so that the state matters
    model = bundles_in_arrival_order(Spec(J=8, decide_at=decide_at, rows=rows))
    with torch.no_grad():
        last = model.policy.body[-1]
        last.weight.copy_(3.0 * torch.randn(last.weight.shape, generator=torch.Generator().manual_seed(1)))
    env = DL2Env(traces, cl, speed, model.spec)
    for k, tr in enumerate(traces):
        rollout(env, lambda obs, info, _: choose(model, obs, info["action_mask"]), 0.9, trace=k)
        res = simulate(tr, cl, DL2Policy(model), speed)
        assert res.status == "completed" and env.sim.done
        assert np.allclose(env.result().jct, res.jct)
    # the option overrides the checkpoint's timing
    assert DL2Policy(model, decide_at="slots").spec.decide_at == "slots"


def test_simulate_with_dl2_runs_torch_on_one_thread_and_the_library_policy_leaves_threads_alone(capsys):
    """`dlsched simulate --policy dl2` pins one torch thread (a second one spin-waits: 13 times the CPU at
    load 2.6, dlsched.rl.policy.one_inference_thread); making the policy in a library caller's process does not."""
    from dlsched.cli import main

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        make_policy("dl2")
        assert torch.get_num_threads() == 2
        assert main(["simulate", "dl2:3:1", "--policy", "dl2", "--json"]) == 0
        capsys.readouterr()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)

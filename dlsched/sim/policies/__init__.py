"""The policy table: every named policy of the simulator (``dlsched policies`` lists it).

One explicit table ``name -> "module:Class"``; the class is imported only when the policy is made
or described, so listing stays fast and one policy's dependencies never load another's. Adding a
policy is adding one line here; registering it is what puts it under the table's tests
(STYLE.md practice 11). The one-line description is the first line of the class's docstring.
"""

from __future__ import annotations

import importlib

from dlsched.errors import InputError

POLICIES: dict[str, str] = {
    "fifo": "dlsched.sim.policies.baselines:FIFO",
    "srtf": "dlsched.sim.policies.baselines:SRTF",
    "drf": "dlsched.sim.policies.baselines:DRF",
    "tetris": "dlsched.sim.policies.baselines:Tetris",
    "optimus": "dlsched.sim.policies.optimus:Optimus",
    "smd": "dlsched.sim.policies.smd:SMDPolicy",
    "optimus-greedy": "dlsched.sim.policies.smd:OptimusGreedyPolicy",
    "srpt-greedy": "dlsched.sim.policies.smd:SRPTGreedyPolicy",
    "hesrpt": "dlsched.sim.policies.smd:HeSRPTPolicy",
    "fluid": "dlsched.sim.policies.smd:FluidPolicy",
    "hetplace": "dlsched.sim.policies.hetplace:HetPlace",
    "oasis": "dlsched.sim.policies.oasis:OASiS",
    "risk_reward": "dlsched.sim.policies.oasis_baselines:RiskReward",
    "dorm": "dlsched.sim.policies.oasis_baselines:Dorm",
    "time-indexed": "dlsched.sim.policies.offline:TimeIndexed",
    "dl2": "dlsched.rl.policy:DL2Policy",
}


def available() -> list[str]:
    """The policy names, in table order."""
    return list(POLICIES)


def policy_class(name: str):
    if name not in POLICIES:
        raise InputError("<argument>", "--policy", f"one of {', '.join(POLICIES)} (see `dlsched policies`)", name)
    module, _, cls = POLICIES[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def make_policy(name: str, **params):
    """A fresh policy object; ``params`` are its constructor's keyword arguments."""
    cls = policy_class(name)
    try:
        return cls(**params)
    except TypeError as exc:
        raise InputError("<argument>", f"policy {name} parameters", f"parameters {cls.__name__} accepts", str(exc)) from None


def describe(name: str) -> str:
    """The first line of the policy class's docstring (or why it cannot load: a missing optional extra)."""
    try:
        doc = policy_class(name).__doc__ or ""
    except ImportError as exc:
        return f"(unavailable: {exc})"
    return doc.strip().split("\n")[0]

"""The contract of docs/contract.md, asserted for every registered (family, method, backend).

MathOptInterface's ``MOI.Test`` idea: one suite runs every method on small instances of its
family. Registering a method (``dlsched.solvers.registry.register``) is what puts it here: the
grid is ``registry.cases()``. Timing is not asserted here (the suite timelimits measures it).
"""

from __future__ import annotations

import json
import math
from functools import cache

import numpy as np
import pytest

import dlsched
from dlsched.errors import InputError
from dlsched.instance import oasis_gen, placement_gen, smd_gen
from dlsched.instance.generate import random_mcmdk
from dlsched.result import TERMINATIONS, Result, Status
from dlsched.solvers import hyperplane, registry, tabu
from tests.conftest import ROOT

CASES = registry.cases()


@cache
def instances(family: str) -> tuple:
    """Small instances of each family: one bundled, one generated with a seed."""
    bundled = {"mcmdk": ["mknap1-0.json", "gap-c0515_1-min.json"], "smd": ["smd-small.json"],
               "oasis": ["oasis-tiny.json"], "placement": ["placement-small.json"]}[family]
    out = [dlsched.load(ROOT / "instances" / name) for name in bundled]
    if family == "mcmdk":
        out.append(random_mcmdk(12, 4, 3, seed=7, choose="exactly_one"))
    elif family == "smd":
        out.append(smd_gen.generate(4, 2, seed=3, max_len_slots=3.0))
    elif family == "oasis":
        out.append(oasis_gen.small(seed=5, n_jobs=5, horizon=8))
    else:
        out.append(placement_gen.generate(5, seed=2))
    return tuple(out)


def case_id(case) -> str:
    family, name, backend = case
    return f"{family}-{name}" + (f"-{backend}" if backend else "")


def run(inst, name: str, backend: str | None, **opts) -> Result:
    params = {"backend": backend} if backend else {}
    return dlsched.solve(inst, name, threads=1, **opts, **params)


def assert_contract(inst, res: Result, name: str) -> None:
    # every field filled, with the documented types
    assert isinstance(res, Result) and res.method and isinstance(res.status, Status)
    assert res.termination in TERMINATIONS, res.termination
    assert res.sense in ("max", "min")
    if hasattr(inst, "sense"):
        assert res.sense == inst.sense
    assert math.isfinite(res.build_seconds) and res.build_seconds >= 0
    assert math.isfinite(res.solve_seconds) and res.solve_seconds >= 0
    assert isinstance(res.solver_version, str) and isinstance(res.message, str) and isinstance(res.stats, dict)
    assert {"time_limit", "mip_rel_gap", "threads", "seed", "warm_start", "raw"} <= set(res.options)
    json.dumps(res.summary())
    # status agrees with the presence of a solution and with the termination; the bound is on the
    # valid side of the objective (gap >= 0)
    assert res.inconsistency() is None, res.inconsistency()
    if res.gap is not None:
        assert res.gap >= 0
    # the independent checker accepts every solution, at the claimed objective
    if res.status.has_solution():
        report = dlsched.check(inst, res)
        assert report.feasible, report


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_contract(case):
    family, name, backend = case
    for inst in instances(family):
        assert_contract(inst, run(inst, name, backend), name)


@pytest.mark.parametrize("mode", ["epoch", "schedule"])
def test_smd_modes(mode):
    """Both modes of ``smd`` (the default covers only the schedule): an epoch decision, and a
    schedule cut by the time limit, which is no solution when incomplete (never an objective)."""
    for inst in instances("smd"):
        assert_contract(inst, dlsched.solve(inst, "smd", mode=mode, threads=1), "smd")
        assert_contract(inst, dlsched.solve(inst, "smd", mode=mode, threads=1, time_limit=0.001), "smd")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_contract_under_a_short_time_limit(case):
    """Stopped early, a method still answers within the contract (best so far, consistent status)."""
    family, name, backend = case
    inst = instances(family)[-1]
    res = run(inst, name, backend, time_limit=0.05)
    assert_contract(inst, res, name)
    assert res.options["time_limit"] == 0.05


# Non-default choices of methods' options: the grid above runs each method with its defaults only.
VARIANTS = [("mcmdk", "hyperplane", {"start": v}) for v in hyperplane.STARTS[1:]] + \
    [("mcmdk", "tabu", {"centres": v}) for v in tabu.CENTRES[1:]] + \
    [("mcmdk", "tabu", {"misfits": True}), ("mcmdk", "hyperplane", {"start": "tabu", "misfits": True})]


@pytest.mark.parametrize("family, name, params", VARIANTS, ids=lambda v: v if isinstance(v, str) else ",".join(f"{k}={x}" for k, x in v.items()))
def test_contract_of_option_variants(family, name, params):
    assert set(params) <= set(registry.params_of(name, family))
    for inst in instances(family):
        assert_contract(inst, run(inst, name, None, **params), name)
        assert_contract(inst, run(inst, name, None, time_limit=0.05, **params), name)


REFUSABLE = {"gap": dict(gap=0.1), "raw": dict(raw={"presolve": "off"}), "warm_start": dict(warm_start=np.zeros(3, dtype=int))}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_options_are_honoured_or_refused(case):
    """An option a method does not declare is refused with InputError before anything runs; a
    declared raw option is validated (an unknown HiGHS key is refused too)."""
    family, name, backend = case
    method = registry.lookup(name, family)
    inst = instances(family)[0]
    for option, kwargs in REFUSABLE.items():
        honoured = option in method.supports and not (option == "warm_start" and backend not in (None, "highs"))
        if not honoured:
            with pytest.raises(InputError) as err:
                run(inst, name, backend, **kwargs)
            assert err.value.where in (option, f"raw[{next(iter(kwargs['raw']))!r}]" if option == "raw" else option)
    if "raw" in method.supports:
        with pytest.raises(InputError):
            run(inst, name, backend, raw={"no_such_highs_option": 1})
        with pytest.raises(InputError):
            run(inst, name, backend, raw={"time_limit": 5.0})      # a typed option: say it once


@pytest.mark.parametrize("case", [c for c in CASES if "gap" in registry.lookup(c[1], c[0]).supports], ids=case_id)
def test_a_requested_gap_is_met_or_reported(case):
    """With gap g, a method that stops on it reports gap_limit only when its certified gap is within g."""
    family, name, backend = case
    inst = instances(family)[0]
    res = run(inst, name, backend, gap=0.5)
    assert_contract(inst, res, name)
    if res.termination == "gap_limit":
        assert res.gap is not None and res.gap <= 0.5 + 1e-9


def test_every_listed_method_is_covered():
    from dlsched.instance.families import FAMILIES

    covered = {(f, n) for f, n, _ in CASES}
    for family in FAMILIES:
        assert {(family, n) for n in dlsched.methods(family)} <= covered

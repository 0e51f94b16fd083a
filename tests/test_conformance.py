"""The contract of docs/contract.md, asserted for every registered (family, method, backend).

MathOptInterface's ``MOI.Test`` idea: the shipped method kit (:func:`dlsched.testing.check_method`)
runs every method on small instances of its family. Registering a method
(``dlsched.solvers.registry.register``) is what puts it here: the grid is ``registry.cases()``.
Only a gross overrun of a time limit is asserted here (the suite timelimits measures them).
"""

from __future__ import annotations

from functools import cache

import pytest

import dlsched
from dlsched.instance import oasis_gen, placement_gen, smd_gen
from dlsched.instance.generate import random_mcmdk
from dlsched.result import Result
from dlsched.solvers import hyperplane, registry, tabu
from dlsched.testing import assert_result, bundled_instances, check_method

CASES = registry.cases()


@cache
def instances(family: str) -> tuple:
    """Small instances of each family: one or two bundled (with their optima), one generated with a seed."""
    bundled = {"mcmdk": ["mknap1-0.json", "gap-c0515_1-min.json"], "smd": ["smd-small.json"],
               "oasis": ["oasis-tiny.json"], "placement": ["placement-small.json"]}[family]
    out = bundled_instances(names=bundled)
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


def assert_contract(inst, res: Result, name: str, exclude=()) -> None:
    assert_result(inst, res, f"{name} on {getattr(inst, 'source', '<memory>')}", exclude)


#: (family, method) whose objective is of another model than the bundled files' reference: SMD's
#: reference is the §2.2 one-epoch optimum; its online methods and the time-indexed MILP (§2.4)
#: minimise the average JCT in slots
OTHER_MODEL = {("smd", "smd"), ("smd", "optimus"), ("smd", "drf"), ("smd", "time-indexed")}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_contract(case):
    """The method kit (dlsched.testing.check_method): every check, on one or two bundled instances
    (against their optima) and a generated one, then under a short time limit and with options the
    method does not declare."""
    family, name, backend = case
    check_method(name, family=family, instances=instances(family), backend=backend,
                 exclude=("reference",) if (family, name) in OTHER_MODEL else ())


@pytest.mark.parametrize("mode", ["epoch", "schedule"])
def test_smd_modes(mode):
    """Both modes of ``smd`` (the default covers only the schedule): an epoch decision, and a
    schedule cut by the time limit, which is no solution when incomplete (never an objective)."""
    for inst in instances("smd"):
        assert_contract(inst, dlsched.solve(inst, "smd", mode=mode, threads=1), "smd", exclude=("reference",))
        assert_contract(inst, dlsched.solve(inst, "smd", mode=mode, threads=1, time_limit=0.001), "smd",
                        exclude=("reference",))


# Non-default choices of methods' options: the grid above runs each method with its defaults only.
VARIANTS = [("mcmdk", "hyperplane", {"start": v}) for v in hyperplane.STARTS[1:]] + \
    [("mcmdk", "tabu", {"centres": v}) for v in tabu.CENTRES[1:]] + \
    [("mcmdk", "tabu", {"misfits": True}), ("mcmdk", "hyperplane", {"start": "tabu", "misfits": True})]


@pytest.mark.parametrize("family, name, params", VARIANTS, ids=lambda v: v if isinstance(v, str) else ",".join(f"{k}={x}" for k, x in v.items()))
def test_contract_of_option_variants(family, name, params):
    assert set(params) <= set(registry.params_of(name, family))
    check_method(name, family=family, instances=instances(family), params=params, exclude=("options",))


@pytest.mark.parametrize("case", [c for c in CASES if "gap" in registry.lookup(c[1], c[0]).supports], ids=case_id)
def test_a_requested_gap_is_met_or_reported(case):
    """With gap g, a method that stops on it reports gap_limit only when its certified gap is within g."""
    family, name, backend = case
    inst = instances(family)[0]
    res = run(inst, name, backend, gap=0.5)
    assert_result(inst, res, name, exclude=("reference",) if (family, name) in OTHER_MODEL else (), gap=0.5)
    if res.termination == "gap_limit":
        assert res.gap is not None and res.gap <= 0.5 + 1e-9


def test_every_listed_method_is_covered():
    from dlsched.instance.families import FAMILIES

    covered = {(f, n) for f, n, _ in CASES}
    for family in FAMILIES:
        assert {(family, n) for n in dlsched.methods(family)} <= covered

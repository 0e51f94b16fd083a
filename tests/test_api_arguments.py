"""The library API refuses bad arguments as the CLI does: an InputError naming the argument, never
a Python built-in raised from inside a method (issue 25's probes), and takes a path as solve's
instance."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.errors import InputError


@pytest.fixture(scope="module")
def inst(instances_dir):
    return dlsched.load(instances_dir / "dl-small.json")


@pytest.mark.parametrize("method, kw, where", [
    ("exact", {"time_limit": "10"}, "time_limit"), ("exact", {"gap": "x"}, "gap"),
    ("exact", {"threads": "x"}, "threads"), ("exact", {"seed": "x"}, "seed"),
    ("sample", {"samples": "x"}, "samples"), ("core", {"core_fractions": "x"}, "core_fractions"),
    ("exact", {"on_incumbent": 5}, "on_incumbent"), ("exact", {"time_limit": math.nan}, "time_limit"),
    ("exact", {"threads": True}, "threads"), ("lp-round", {"seed": 1.5}, "seed"), ("sample", {"seed": -1}, "seed"),
])
def test_bad_arguments_are_input_errors(inst, method, kw, where):
    with pytest.raises(InputError) as e:
        dlsched.solve(inst, method, **kw)
    assert e.value.where == where


@pytest.mark.parametrize("arg", [None, {"family": "mcmdk"}, 5])
def test_solve_refuses_what_is_not_an_instance(arg):
    with pytest.raises(InputError, match="at instance"):
        dlsched.solve(arg)


def test_solve_takes_a_path(inst, instances_dir):
    assert dlsched.solve(str(instances_dir / "dl-small.json")).objective == pytest.approx(inst.reference.objective)


def test_check_without_a_solution_is_an_input_error(inst):
    with pytest.raises(InputError, match="at solution"):
        dlsched.check(inst, None)


ANY = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=3), st.lists(st.integers(0, 2), max_size=2))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(time_limit=ANY, gap=ANY, threads=ANY, seed=ANY)
def test_any_common_option_is_accepted_or_refused_cleanly(inst, time_limit, gap, threads, seed):
    kw = {"time_limit": time_limit, "gap": gap, "threads": threads, "seed": seed}
    kw = {k: v for k, v in kw.items() if v is not None or k in ("time_limit", "threads")}
    try:
        res = dlsched.solve(inst, "lp-round", **kw)
    except InputError:
        return
    if res.status.has_solution():
        assert dlsched.check(inst, res).feasible
    else:       # a limit too short to find one (1e-59 s) is a status, not an error
        assert res.termination == "time_limit"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(samples=ANY, fractions=ANY)
def test_any_method_parameter_is_accepted_or_refused_cleanly(inst, samples, fractions):
    for method, kw in (("sample", {"samples": samples}), ("core", {"core_fractions": fractions})):
        try:
            res = dlsched.solve(inst, method, time_limit=10, **kw)
        except InputError:
            continue
        assert res.status.has_solution() and dlsched.check(inst, res).feasible

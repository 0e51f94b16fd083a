"""One check of every policy's options (dlsched.arguments), the same from every entry: the Python
constructor, ``make_policy``, ``dlsched simulate -P``, a suite file and ``dlsched.simulate(...,
params=...)``; an unknown option (with a did-you-mean), a wrong type and an out-of-range value
each give one InputError naming the policy, the option, what was expected and what was found."""

from __future__ import annotations

import inspect
from typing import Annotated, Literal, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.arguments import Range, check_arguments, checked, policy_options
from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.policies.tetris import Tetris
from dlsched.registry import make_policy, policy_class, policy_names


def f(a: int = 1, b: Annotated[float, Range(gt=0, finite=True)] = 1.0, c: Literal["x", "y"] = "x", d: bool = False,
      e: Sequence[tuple[int, int]] | None = None, g: float = 0.0):
    return a, b, c, d, e, g


def test_values_are_converted_as_the_annotation_says():
    out = check_arguments(f, {"a": "3", "b": "2.5", "d": "yes", "e": [[1, 2]], "g": "inf"}, "f")
    assert out == {"a": 3, "b": 2.5, "d": True, "e": [(1, 2)], "g": float("inf")}


@pytest.mark.parametrize("params, where, expected", [
    ({"bb": 1}, "bb", "did you mean 'b'"),
    ({"a": 2.5}, "a", "an integer for f"),
    ({"a": True}, "a", "an integer"),
    ({"b": 0}, "b", "a finite number > 0"),
    ({"b": float("inf")}, "b", "a finite number > 0"),
    ({"b": "abc"}, "b", "a finite number > 0"),
    ({"c": "z"}, "c", "one of 'x', 'y'"),
    ({"d": "maybe"}, "d", "true or false"),
    ({"e": [[1, 2], [3]]}, "e", "a list of (a pair (an integer, an integer)) or none"),
    ({"g": float("nan")}, "g", "a number"),
])
def test_each_bad_value_names_option_expected_and_found(params, where, expected):
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")) as err:
        check_arguments(f, params, "f")
    assert err.value.where == where


def test_the_decorator_checks_positional_and_keyword_arguments():
    class P:
        name = "p"

        @checked
        def __init__(self, k: Annotated[int, Range(ge=1)] = 1):
            self.k = k

    assert P("2").k == 2
    with pytest.raises(InputError, match="policy 'p'"):
        P(0)
    with pytest.raises(InputError, match="at most 1 positional"):
        P(1, 2)


def test_every_entry_gives_the_same_refusal(tmp_path, capsys):
    """The constructor, make_policy, -P, a suite file and dlsched.simulate: one message."""
    expected = "at remaining_weight: expected a finite number for policy 'tetris', found 'abc'"
    for make in (lambda: Tetris(remaining_weight="abc"), lambda: make_policy("tetris", remaining_weight="abc"),
                 lambda: dlsched.simulate("dl2:4", policy="tetris", params={"remaining_weight": "abc"})):
        with pytest.raises(InputError, match=expected):
            make()
    assert main(["simulate", "dl2:4", "--policy", "tetris", "-P", 'remaining_weight="abc"']) == 2
    assert expected in capsys.readouterr().err
    suite = tmp_path / "s.toml"
    suite.write_text('kind = "simulate"\n[cluster]\ngenerator = "dl2"\nparams = { n_servers = 2 }\n[[traces]]\n'
                     'generator = "dl2"\nseeds = [1]\nparams = { n_jobs = 4 }\n[[policies]]\nname = "tetris"\n'
                     'params = { remaining_weight = "abc" }\n')
    assert main(["bench", "run", str(suite), "--out", str(tmp_path / "r.jsonl"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{suite}: at policies[0].params.remaining_weight: expected a finite number for policy 'tetris'" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("name, params, where", [
    ("optimus", {"slot_seconds": "abc"}, "slot_seconds"),
    ("optimus", {"gamma": "x"}, "gamma"),
    ("optimus", {"profile_seconds": -1}, "profile_seconds"),
    ("tetris", {"remaining_weight": float("nan")}, "remaining_weight"),
    ("smd", {"opts": 5}, "opts"),
    ("smd", {"bogus_kw": 1}, "bogus_kw"),
    ("hetplace", {"seed": "x"}, "seed"),
    ("gavel-fifo-perf", {"round_seconds": 1e-300}, "round_seconds"),
    ("drf", {"placer": "nonsense"}, "placer"),
])
def test_the_issue_examples_are_refused_by_name(name, params, where):
    with pytest.raises(InputError) as err:
        make_policy(name, **params)
    assert err.value.where == where and f"policy '{name}'" in err.value.expected


ODD = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=8), st.lists(st.integers(-3, 3), max_size=3), st.just({"a": 1}))


def _options(name):
    try:
        return [p for p in inspect.signature(inspect.unwrap(policy_class(name).__init__)).parameters if p != "self"]
    except ImportError:           # a policy of a missing extra
        return []


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_option_value_makes_a_policy_or_an_input_error(data):
    """Property: whatever value an option of any policy gets, the constructor either makes the
    policy or raises an InputError naming that option; the suite reader agrees with it."""
    name = data.draw(st.sampled_from(policy_names()))
    options = _options(name)
    key = data.draw(st.sampled_from(options + ["bogus"]))
    value = data.draw(ODD)
    try:
        make_policy(name, **{key: value})
    except InputError as exc:
        assert exc.where == key or key == "checkpoint", exc     # a checkpoint's errors name the file and its field
        if key != "checkpoint":      # a checkpoint's file is read when the policy is made, not by the options check
            with pytest.raises(InputError):
                policy_options(policy_class(name), {key: value}, source="s.toml", where="policies[0].params")
    except ImportError:
        pytest.skip("a policy of a missing extra")


"""The error types survive a trip between processes (multiprocessing pickles a worker's exception back)."""

import multiprocessing as mp
import pickle

import pytest

from dlsched.errors import InputError


def _refuse(x):
    raise InputError("trace.csv", f"row {x}", "a number", "abc")


def test_an_input_error_round_trips_through_pickle():
    e = InputError("<argument>", "--budget", "a number > 0", -1)
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is InputError and str(back) == str(e)
    assert (back.source, back.where, back.expected, back.found) == ("<argument>", "--budget", "a number > 0", -1)


def test_an_input_error_raised_in_a_worker_reaches_the_parent():
    with mp.get_context("fork").Pool(1) as pool:
        with pytest.raises(InputError) as e:
            pool.map_async(_refuse, [3], chunksize=1).get(timeout=60)     # without the fix: a hang, here a timeout
    assert e.value.where == "row 3" and e.value.source == "trace.csv"

"""dlsched.data: the data folder's helpers."""

import threading

from dlsched import data


def test_literal_parses_one_thread_at_a_time():
    # CPython 3.11's compiler is not thread-safe (docstring of data.literal): a parse waits for the lock
    out = []
    with data._PARSING:
        t = threading.Thread(target=lambda: out.append(data.literal("('resnet', 32, [1.5, 2])")))
        t.start()
        t.join(0.5)
        assert t.is_alive() and not out
    t.join(5)
    assert out == [("resnet", 32, [1.5, 2])]

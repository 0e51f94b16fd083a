"""A policy class whose constructor is not ``@checked`` (a plug-in's) has its options checked
against its signature before any run, as the bundled policies' are (issue 25)."""

import pytest

import dlsched
from dlsched.errors import InputError
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.policies.fifo import FIFO


class Plain(FIFO):
    """FIFO with an annotated option and no ``@checked``: what a third-party policy may look like."""

    name = "plain"

    def __init__(self, spread: float = 1.0, label: str = "x"):
        super().__init__()
        self.spread = spread * 2      # a str would be repeated, not refused, without the check


PLAIN = f"{__name__}:Plain"


@pytest.mark.parametrize("params, field", [({"spread": "abc"}, "spread"), ({"spred": 1.0}, "spred"),
                                           ({"label": 5}, "label")])
def test_a_bad_option_of_an_unchecked_policy_is_refused_before_the_run(params, field):
    with pytest.raises(InputError) as err:
        dlsched.simulate(dl2_trace(4, seed=1), dl2_cluster(2), PLAIN, params=params)
    assert err.value.where == field


def test_good_options_of_an_unchecked_policy_are_converted_and_run():
    res = dlsched.simulate(dl2_trace(4, seed=1), dl2_cluster(2), PLAIN, params={"spread": 2})
    assert res.status == "completed"


def test_the_cli_refuses_them_with_one_line(capsys):
    from dlsched.cli import main

    code = main(["simulate", "dl2:4:1", "--policy", PLAIN, "-P", 'spread="abc"'])
    assert code == 2 and "spread" in capsys.readouterr().err

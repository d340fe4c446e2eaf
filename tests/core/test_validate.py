"""core/validate.py: the bundles of the log-prob primitive and the policy (tested through
logprob's and policy's own tests and the battery) and the helpers that pick which argument an
overflow names, each exactly."""

import numpy as np
import pytest

from minirl_lm.core import validate as CV
from quiet import raises


def test_largest_names_the_input_of_largest_magnitude_first_on_a_tie():
    assert CV.largest(logp=[[-1.0, -2.0]], logp_ref=[[-1e308]]) == "logp_ref"
    assert CV.largest(a=[3.0], b=[-3.0]) == "a"
    assert CV.largest(a=np.zeros((0, 2)), b=[0.0]) == "a"  # empty: magnitude 0


def test_culprit_is_the_first_non_finite_stage_else_the_last_name():
    assert CV.culprit(("u", np.array([1.0, np.inf])), ("k", 2.0), "beta") == "u"
    assert CV.culprit(("u", (1.0, [np.nan])), "beta") == "u"  # nested leaves
    assert CV.culprit(("u", 1.0), ("k", np.array([2.0])), "beta") == "beta"


def test_finite_stages_names_the_first_stage_to_overflow_and_returns_the_last_value():
    assert CV.finite_stages((1.0, "a", "f"), (np.array([2.0]), "b", "g"))[0] == 2.0
    msg = raises(ValueError, lambda: CV.finite_stages((np.inf, "a", "f"), (np.nan, "b", "g")))
    assert msg.startswith("a: expected a value for which f is finite")


def test_max_draws_is_addressable():
    assert CV.MAX_DRAWS * 8 <= np.iinfo(np.intp).max


@pytest.mark.parametrize("bad", [True, 1, None, "yes"])
def test_flag_is_a_bool_only(bad):
    if bad is True:
        assert CV.flag(bad, "parallel") is True
    else:
        assert raises(TypeError, lambda: CV.flag(bad, "parallel")).startswith("parallel: expected")

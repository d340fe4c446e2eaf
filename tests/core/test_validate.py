"""core/validate.py: core's kinds (logits with -inf, ids read without a copy; tested through
logprob's and policy's own tests and the battery), the allocation bounds and a callable's
return value, each exactly."""

import numpy as np

from minirl_lm.core import validate as CV
from quiet import raises


def test_max_draws_is_addressable():
    assert CV.MAX_DRAWS * 8 <= np.iinfo(np.intp).max


def test_real_result():
    assert CV.real_result(np.float32(0.5), "grader") == 0.5
    assert CV.real_result(3, "grader") == 3.0 and CV.MAX_CELLS == 2**31
    for bad, exc in (
        (None, TypeError),
        ("1", TypeError),
        (True, TypeError),
        (np.array([1.0]), TypeError),
        (np.nan, ValueError),
        (-np.inf, ValueError),
        (10**400, ValueError),
    ):
        assert raises(exc, lambda bad=bad: CV.real_result(bad, "grader", " (a reward)")).startswith(
            "grader: expected a"
        )


def test_policy_table_shape():
    class Table:
        theta = np.zeros((3, 4))

    assert CV.policy_table_shape(Table(), 3, 4) is None
    assert CV.policy_table_shape(Table(), 2, 4, " for this MDP") == (
        "policy: expected a policy with a table of shape (S, V) = (2, 4) for this MDP, got Table with shape (3, 4)"
    )
    Table.theta = [0.0]  # no shape
    assert CV.policy_table_shape(Table(), 2, 4) == (
        "policy: expected a policy with a table of shape (S, V) = (2, 4), got Table with shape None"
    )

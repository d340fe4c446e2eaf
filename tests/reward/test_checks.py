"""reward/checks.py: the bundles return their arguments checked (float64, defaults filled in) and
reject the rest naming the argument; every message is also exercised through the public
functions (tests/reward/test_bt.py, test_prm.py) and the bad-input battery."""

import numpy as np

from minirl_lm.reward import checks as RC
from quiet import raises


def test_margin_args_fill_the_defaults():
    r_c, r_r, m, c, w = RC.margin_args([1, 2], [0, 3], None, 0, None)
    assert r_c.dtype == np.float64 and m.tolist() == [0.0, 0.0] and c == 0.0 and w.tolist() == [0.5, 0.5]
    assert raises(ValueError, lambda: RC.margin_args([1.0], [1.0], None, 0.0, [-1.0])) == (
        "weights: expected nonnegative weights, got min -1.0"
    )


def test_linear_args_refuse_empty_features_and_ids_out_of_range():
    assert raises(
        ValueError, lambda: RC.linear_bt_args(RC.FIT, np.zeros((1, 2, 0)), [0], [0], [1], None, 0, None, 0)
    ).startswith("phi: expected a non-empty")
    msg = raises(
        ValueError, lambda: RC.linear_outcome_args(RC.FIT, np.zeros((1, 2, 1)), [0], [2], [1.0], "bce", None, 0)
    )
    assert msg.startswith("response: expected ids < 2")
    assert RC.fit_outcome_args(np.ones((1, 1, 1)), [0], [0], [1.0], "bce", None, 0, 3)[-1] == 3

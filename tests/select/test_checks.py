"""select/checks.py: the bundles return their arguments checked (float64, ints, options) and
reject the rest naming the argument; every message is also exercised through the public
functions (tests/select/test_bestofn.py, test_rejection.py) and the bad-input battery."""

import numpy as np

from minirl_lm.select import checks as SC
from quiet import raises

PI = np.array([[0.5, 0.5], [1.0, 0.0]])


def test_table_and_bon_args():
    pi, r, w = SC.table_args(PI, [[1, 0], [0, 0]])
    assert r.dtype == np.float64 and np.array_equal(w, [0.5, 0.5])
    assert SC.bon_args(PI, r, np.int64(3))[2] == 3 and type(SC.bon_args(PI, r, 3)[2]) is int
    assert raises(TypeError, lambda: SC.bon_args(PI, r, 2.0)).startswith("N: expected an integer")
    assert SC.bound_args(5) == 5
    assert SC.match_args(PI, r, 1)[2] == 1.0
    assert raises(ValueError, lambda: SC.match_args(PI, r, -1.0)) == "kl: expected a number >= 0.0, got -1.0"


def test_accept_and_rejection_args():
    r, K, rule, thr = SC.accept_args([1, 0, 1, 1], 2, "best", 1)
    assert r.dtype == np.float64 and (K, rule, thr) == (2, "best", 1.0)
    out = SC.rejection_args(np.zeros((4, 2)), np.ones((4, 2)), [1, 0, 0, 1], 4, "group")
    assert out[3] == 4 and out[4] == "group"
    assert raises(
        ValueError, lambda: SC.rejection_args(np.zeros((4, 2)), np.ones((4, 2)), [1, 0, 0, 1], 3, "group")
    ) == ("K: expected a group size dividing the 4 rows of mask, got 3")
    assert raises(ValueError, lambda: SC.accept_args([], 1, "best", 1.0)).startswith(
        "reward: expected a non-empty"
    )


def test_update_args_counts_the_multisets():
    assert SC.update_args(PI, np.zeros((2, 2)), 5, "verified", "accepted", 1.0)[2] == 5
    pi = np.full((1, 9), 1 / 9)
    assert SC.update_args(pi, np.zeros((1, 9)), 12, "best", "group", 1.0)[2] == 12  # C(20, 12) = 125970
    assert raises(ValueError, lambda: SC.update_args(pi, np.zeros((1, 9)), 13, "best", "group", 1.0)) == (
        "K: expected at most 200000 groups of K a prompt, got C(9 + 13 - 1, 13) = 203490"
    )

"""direct/checks.py: the bundles of dpo.py and preferences.py return their arguments checked
(float64, the shapes the math trusts) and reject the rest naming the argument; every message is
also exercised through the public functions (tests/direct/test_dpo.py, test_preferences.py) and
the bad-input battery."""

import numpy as np

from minirl_lm.direct import checks as DC
from quiet import raises


def test_bt_pairs_returns_float64_pairs_and_refuses_none():
    r_c, r_r = DC.bt_pairs([1, 2], [0, 3])
    assert r_c.dtype == np.float64 and r_c.tolist() == [1.0, 2.0] and r_r.tolist() == [0.0, 3.0]
    assert (
        raises(ValueError, lambda: DC.bt_pairs([], [])) == "r_chosen: expected at least one pair, got shape (0,)"
    )
    assert raises(ValueError, lambda: DC.bt_pairs([1.0], [1.0, 2.0])).startswith("r_rejected: ")


def test_pair_weights_default_and_shape():
    assert np.array_equal(DC.pair_weights(None, 3), np.full(3, 1 / 3))  # the mean
    assert DC.pair_weights([0, 2], 2).tolist() == [0.0, 2.0]
    assert (
        raises(ValueError, lambda: DC.pair_weights([1.0, -1.0], 2))
        == "weights: expected nonnegative pair weights, got min -1.0"
    )
    assert raises(ValueError, lambda: DC.pair_weights([0.5, 0.5], 3)).startswith("weights: ")

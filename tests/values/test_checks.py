"""values/checks.py: the bundles of critic.py and optimum.py return their arguments checked and
reject the rest naming the argument; every message is also exercised through the public functions
(tests/values/test_critic.py, test_optimum.py) and the bad-input battery."""

import numpy as np

from minirl_lm.values import checks as VC
from quiet import raises


def test_mu0_weights_uniform_by_default_else_a_distribution():
    assert np.array_equal(VC.mu0_weights(None, 4), np.full(4, 0.25))
    assert VC.mu0_weights([0.25, 0.75], 2).tolist() == [0.25, 0.75]
    assert raises(ValueError, lambda: VC.mu0_weights([0.5, 0.6], 2)).startswith(
        "weights: expected rows summing to 1"
    )


def test_threshold_args_are_finite_numbers():
    gap, log_odds = VC.threshold_args(1, 4)
    assert (gap, log_odds) == (1.0, 4.0) and isinstance(gap, float)
    assert raises(ValueError, lambda: VC.threshold_args(np.nan, 4.0)).startswith("gap: ")

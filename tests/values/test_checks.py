"""values/checks.py: the prompt weights `select/` still reads, uniform by default, else a
distribution named `weights`."""

import numpy as np

from minirl_lm.values import checks as VC
from quiet import raises


def test_mu0_weights_uniform_by_default_else_a_distribution():
    assert np.array_equal(VC.mu0_weights(None, 4), np.full(4, 0.25))
    assert VC.mu0_weights([0.25, 0.75], 2).tolist() == [0.25, 0.75]
    assert raises(ValueError, lambda: VC.mu0_weights([0.5, 0.6], 2)).startswith(
        "weights: expected rows summing to 1"
    )

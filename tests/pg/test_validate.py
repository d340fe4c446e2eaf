"""The toy's bundles left in the pg part (minirl_lm/pg/validate.py), until tasks.py declares its
boundary."""

import numpy as np

from minirl_lm.pg import validate as PV
from quiet import raises


def test_grader_rewards_bound_is_inclusive_and_names_the_grader():
    R = np.array([[1e150, -1e150]])
    assert PV.grader_rewards(R, 1e150) is R
    assert raises(ValueError, lambda: PV.grader_rewards(np.array([[2e150]]), 1e150)) == (
        "grader: expected rewards |R| <= 1e+150 (the advantages' domain), got max |R| = 2e+150"
    )

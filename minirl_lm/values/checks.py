"""What `minirl_lm/select/checks.py` still reads of the values part's old bundles: the prompt
weights `mu_0`. The values part declares its own arguments (`boundary`); this file goes when
`select/` does too."""

import numpy as np

from minirl_lm.core.checks import prob_table

__all__ = ["mu0_weights"]


def mu0_weights(weights, N):
    """`(N,)` prompt weights mu_0, rows of a distribution, uniform by default."""
    if weights is None:
        return np.full(N, 1.0 / N)
    return prob_table(weights, "weights", shape=(N,), ndim=1)

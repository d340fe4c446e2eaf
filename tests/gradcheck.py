"""The independent oracle every gradient test uses: central finite differences in float64.

Truncation error O(h^2) ~ 1e-12 at h = 1e-6; rounding error ~ 1e-16 * |f| / h ~ 1e-10 * |f|.
Tests state their tolerances against these two numbers.
"""

import numpy as np


def fd_grad(f, x, h=1e-6):
    """Central differences of the scalar function f at every entry of the float64 array x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g

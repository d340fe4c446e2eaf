r"""RMSNorm: each position's vector divided by its root mean square, times a learned gain.

    r = (mean_j x_j^2 + eps)^(-1/2)                 the reciprocal rms       eq. (rms)
    xhat_j = x_j r,   y_j = g_j xhat_j                                       eq. (rmsnorm)

Backward, for one position (d entries), with `dxhat_j = dy_j g_j`:

    dg_j = sum over positions of dy_j xhat_j                                 eq. (rmsnorm_dg)
    dr/dx_j = -x_j r^3 / d
    dx_j = r dxhat_j - xhat_j r mean_k(dxhat_k xhat_k)                       eq. (rmsnorm_dx)

(Zhang and Sennrich 2019; no mean subtraction, no bias.) The forward caches `xhat` and `r`, what
the backward needs (llm.c caches LayerNorm's mean and rstd the same way). The other layers call
`rmsnorm_forward.core` and `rmsnorm_backward.core`, the bodies without the declared checks.
"""

import numpy as np

from minirl_lm.boundary import POSITIVE, array, boundary
from minirl_lm.nn.layer import ACTS, Cache, cache_of

__all__ = ["rmsnorm_forward", "rmsnorm_backward"]


@boundary(x=ACTS, g=array("D"), eps=POSITIVE, returns="y cache")
def rmsnorm_forward(x, g, eps=1e-5):
    """RMSNorm over the last axis.

    Args:
        x: (B, L, d) input.
        g: (d,) gain.
        eps: > 0, added to the mean square.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `rmsnorm_backward` reads.
    """
    y = x * x  # (B, L, d) a work buffer, then the output
    r = 1.0 / np.sqrt(y.mean(axis=-1, keepdims=True) + eps)  # (B, L, 1) eq. (rms)
    xhat = x * r  # (B, L, d)
    return np.multiply(xhat, g, out=y), Cache(("rmsnorm", x.shape, xhat, r, g))  # eq. (rmsnorm)


@boundary(cache=cache_of("rmsnorm"), dy=ACTS, returns="dx dg")
def rmsnorm_backward(dy, cache):
    """Gradients of RMSNorm.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `rmsnorm_forward`.

    Returns:
        ``(dx, dg)``: (B, L, d) and (d,).
    """
    _, _, xhat, r, g = cache
    work = dy * xhat  # (B, L, d)
    dg = work.sum(axis=(0, 1))  # (d,) eq. (rmsnorm_dg)
    dx = dy * g  # (B, L, d) dxhat, then dx in place
    m = np.multiply(dx, xhat, out=work).mean(axis=-1, keepdims=True)
    dx -= np.multiply(xhat, m, out=work)
    dx *= r  # eq. (rmsnorm_dx)
    return dx, dg

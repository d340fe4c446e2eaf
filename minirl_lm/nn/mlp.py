r"""The MLP of a block: a linear map up, GELU, a linear map down (no biases).

    u = x W1,  a = gelu(u),  y = a W2                                        eq. (mlp)
    gelu(u) = u/2 (1 + tanh(c (u + 0.044715 u^3))),  c = sqrt(2/pi)          eq. (gelu)

Backward:

    dW2 = a^T dy,   da = dy W2^T                                             eq. (mlp_grad)
    gelu'(u) = (1 + t)/2 + u/2 (1 - t^2) c (1 + 3 0.044715 u^2),  t = tanh(.)   eq. (gelu_grad)
    du = da gelu'(u),   dW1 = x^T du,   dx = du W1^T                         eq. (mlp_grad)

The tanh form of GELU is GPT-2's (Hendrycks and Gimpel 2016); the forward caches `u`, `t`, `a`
(as llm.c caches the pre-activation and the activation). The block calls `mlp_forward.core` and
`mlp_backward.core`, the bodies without the declared checks.

The GELU and its derivative run over blocks of `CHUNK` entries, in place: each operation of the
formula reads and writes a block that stays in the core's cache (a whole (B L, 4d) array does not
at d = 256, and every fresh temporary of that size is written to cold memory); the backward
writes `du` over `da`. Elementwise, so the numbers are the same bit for bit as on whole arrays.
"""

import numpy as np

from minirl_lm.boundary import array, boundary
from minirl_lm.nn.layer import ACTS, Cache, cache_of
from minirl_lm.nn.matmul import matmul, weight_grad

__all__ = ["CHUNK", "mlp_forward", "mlp_backward"]

_C = np.sqrt(2.0 / np.pi)
CHUNK = 16384  # entries of a block of the elementwise GELU: 128 KiB of float64


def _blocks(n_rows, width):
    """Row slices covering n_rows rows in blocks of about CHUNK entries."""
    rows = max(1, CHUNK // width)
    return [slice(i, i + rows) for i in range(0, n_rows, rows)]


@boundary(x=ACTS, W1=array("D M"), W2=array("M D"), returns="y cache")
def mlp_forward(x, W1, W2):
    """The block's MLP.

    Args:
        x: (B, L, d) input.
        W1: (d, m) up projection.
        W2: (m, d) down projection.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `mlp_backward` reads.
    """
    u = matmul(x, W1)  # (B, L, m)
    t, a = np.empty_like(u), np.empty_like(u)
    u2, t2, a2 = (z.reshape(-1, z.shape[-1]) for z in (u, t, a))
    for r in _blocks(*u2.shape):
        ub, tb, ab = u2[r], t2[r], a2[r]
        np.multiply(ub, ub, out=tb)  # t = tanh(c (u + 0.044715 u^3))
        tb *= 0.044715
        tb += 1.0
        tb *= ub
        tb *= _C
        np.tanh(tb, out=tb)
        np.add(tb, 1.0, out=ab)  # a = u/2 (1 + t)
        ab *= ub
        ab *= 0.5  # eq. (gelu)
    return matmul(a, W2), Cache(("mlp", x.shape, x, u, t, a, W1, W2))  # eq. (mlp)


@boundary(cache=cache_of("mlp"), dy=ACTS, returns="dx dW1 dW2")
def mlp_backward(dy, cache):
    """Gradients of the MLP.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `mlp_forward`.

    Returns:
        ``(dx, dW1, dW2)``.
    """
    _, _, x, u, t, a, W1, W2 = cache
    dW2 = weight_grad(a, dy)  # (m, d) eq. (mlp_grad)
    du = matmul(dy, W2.T)  # (B, L, m): da, then du in place
    u2, t2, du2 = (z.reshape(-1, z.shape[-1]) for z in (u, t, du))
    work = np.empty((2, max(1, CHUNK // u2.shape[1]), u2.shape[1]))
    for r in _blocks(*u2.shape):
        ub, tb = u2[r], t2[r]
        g, w = work[0, : ub.shape[0]], work[1, : ub.shape[0]]
        # eq. (gelu_grad) as (1 + t)/2 (1 + u (1 - t) c (1 + 3 0.044715 u^2))
        np.multiply(ub, ub, out=g)
        g *= 3 * 0.044715 * _C
        g += _C  # c (1 + 3 0.044715 u^2)
        g *= ub
        g *= np.subtract(1.0, tb, out=w)
        g += 1.0
        g *= np.add(tb, 1.0, out=w)
        g *= 0.5  # gelu'(u)
        du2[r] *= g  # dloss/du = da gelu'(u)
    return matmul(du, W1.T), weight_grad(x, du), dW2  # eq. (mlp_grad)

r"""The MLP of a block: a linear map up, GELU, a linear map down (no biases).

    u = x W1,  a = gelu(u),  y = a W2                                        eq. (mlp)
    gelu(u) = u/2 (1 + tanh(c (u + 0.044715 u^3))),  c = sqrt(2/pi)          eq. (gelu)

Backward:

    dW2 = a^T dy,   da = dy W2^T                                             eq. (mlp_grad)
    gelu'(u) = (1 + t)/2 + u/2 (1 - t^2) c (1 + 3 0.044715 u^2),  t = tanh(.)   eq. (gelu_grad)
    du = da gelu'(u),   dW1 = x^T du,   dx = du W1^T                         eq. (mlp_grad)

The tanh form of GELU is GPT-2's (Hendrycks and Gimpel 2016); the forward caches `u`, `t`, `a`.
"""

import numpy as np

from minirl_lm.nn.checks import grad_args, mlp_args

_C = np.sqrt(2.0 / np.pi)


def mlp_forward(x, W1, W2):
    """The block's MLP.

    Args:
        x: (B, L, d) input.
        W1: (d, m) up projection.
        W2: (m, d) down projection.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `mlp_backward` reads.
    """
    x, W1, W2 = mlp_args(x, W1, W2)
    return _forward(x, W1, W2)


def _mm(x, W):
    """(B, L, k) @ (k, n) as one 2-D product (NumPy runs a 3-D one as B small ones): (B, L, n)."""
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(x.shape[:-1] + (W.shape[1],))


def _forward(x, W1, W2):
    u = _mm(x, W1)  # (B, L, m)
    t = u * u  # (B, L, m), then in place: t = tanh(c (u + 0.044715 u^3))
    t *= 0.044715
    t += 1.0
    t *= u
    t *= _C
    np.tanh(t, out=t)
    a = t + 1.0  # (B, L, m), then in place: a = u/2 (1 + t)
    a *= u
    a *= 0.5  # eq. (gelu)
    return _mm(a, W2), ("mlp", x.shape, x, u, t, a, W1, W2)  # eq. (mlp)


def mlp_backward(dy, cache):
    """Gradients of the MLP.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `mlp_forward`.

    Returns:
        ``(dx, dW1, dW2)``.
    """
    dy, cache = grad_args(dy, cache, "mlp")
    return _backward(dy, cache)


def _backward(dy, cache):
    _, _, x, u, t, a, W1, W2 = cache
    d, m = W1.shape
    dW2 = a.reshape(-1, m).T @ dy.reshape(-1, d)  # (m, d) eq. (mlp_grad)
    da = _mm(dy, W2.T)  # (B, L, m)
    # eq. (gelu_grad) as (1 + t)/2 (1 + u (1 - t) c (1 + 3 0.044715 u^2)), in place: two (B, L, m)
    # buffers instead of a dozen temporaries (each a fresh allocation of B L m floats)
    du = u * u  # (B, L, m)
    du *= 3 * 0.044715 * _C
    du += _C  # c (1 + 3 0.044715 u^2)
    du *= u
    w = np.subtract(1.0, t)  # (B, L, m)
    du *= w
    du += 1.0
    du *= np.add(t, 1.0, out=w)
    du *= 0.5  # gelu'(u)
    du *= da  # (B, L, m) dloss/du
    dW1 = x.reshape(-1, d).T @ du.reshape(-1, m)  # (d, m) eq. (mlp_grad)
    return _mm(du, W1.T), dW1, dW2

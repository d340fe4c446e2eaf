r"""The value head: a linear map from the final-norm hidden state to one scalar per position.

PPO's critic shares the policy's trunk: the hidden state `h_t` that gives the next-token
distribution at the state `s_t = (x, y_<t)` gives its value too,

    v(s_t) = h_t . w + c                     w (d,), c (1,)                 eq. (value_head)

Backward, for a loss with `dv = dloss/dv (B, T)`:

    dw = sum_{b,t} dv[b, t] h[b, t],   dc = sum_{b,t} dv[b, t]
    dh[b, t] = dv[b, t] w                                                    eq. (value_grad)

In the model the trunk receives the LM head's `dh` and this one, added: the policy's loss and the
value loss are one loss of the shared parameters (eq. (model_grad)). The forward caches `h` and
`w`, what the backward needs.
"""

import numpy as np

from minirl_lm.boundary import array, boundary
from minirl_lm.nn.layer import ACTS, Cache, cache_of

__all__ = ["value_forward", "value_backward"]


@boundary(h=ACTS, w=array("D"), c=array("1"), returns="v cache")
def value_forward(h, w, c):
    """Values of every position.

    Args:
        h: (B, L, d) hidden states (the final norm's output).
        w: (d,) weights.
        c: (1,) bias.

    Returns:
        ``(v, cache)``: v (B, L) and the cache `value_backward` reads.
    """
    return h @ w + c[0], Cache(("value", h.shape[:2], h, w))  # (B, L) eq. (value_head)


@boundary(cache=cache_of("value", "B L"), dy=array("B L"), returns="dh dw dc")
def value_backward(dy, cache):
    """Gradients of the value head.

    Args:
        dy: (B, L) gradient of the loss in the values, `dv`.
        cache: from `value_forward`.

    Returns:
        ``(dh, dw, dc)``: (B, L, d), (d,) and (1,).
    """
    _, _, h, w = cache
    dw = np.einsum("bl,bld->d", dy, h)  # (d,) eq. (value_grad)
    dc = np.array([dy.sum()])  # (1,)
    dh = dy[:, :, None] * w  # (B, L, d)
    return dh, dw, dc

r"""A pre-norm transformer block: two residual branches, attention then the MLP.

    x1 = x + attn(rmsnorm(x; ln1); qkv, proj)                                eq. (block_attn)
    y  = x1 + mlp(rmsnorm(x1; ln2); fc, out)                                 eq. (block_mlp)

Backward: a residual passes its gradient through unchanged and adds the branch's,

    dx1 = dy + rmsnorm_backward(mlp_backward(dy))                            eq. (block_grad)
    dx  = dx1 + rmsnorm_backward(attention_backward(dx1))                    eq. (block_grad)

The parameters of one block are a dict with the keys ``ln1, qkv, proj, ln2, fc, out``.
"""

from minirl_lm.nn import attention, mlp, norm
from minirl_lm.nn.checks import block_args, grad_args

EPS = 1e-5  # RMSNorm's eps in every block


def block_forward(x, p, n_head):
    """One pre-norm block.

    Args:
        x: (B, L, d) the residual stream.
        p: the block's parameters, a dict: ``ln1`` (d,), ``qkv`` (d, 3d), ``proj`` (d, d),
            ``ln2`` (d,), ``fc`` (d, m), ``out`` (m, d).
        n_head: heads of the attention, a divisor of d.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `block_backward` reads.
    """
    x, p, n_head = block_args(x, p, n_head)
    return _forward(x, p, n_head)


def _forward(x, p, n_head):
    h1, c1 = norm._forward(x, p["ln1"], EPS)
    a, ca = attention._forward(h1, p["qkv"], p["proj"], n_head)
    x1 = x + a  # (B, L, d) eq. (block_attn)
    h2, c2 = norm._forward(x1, p["ln2"], EPS)
    m, cm = mlp._forward(h2, p["fc"], p["out"])
    return x1 + m, ("block", x.shape, c1, ca, c2, cm)  # eq. (block_mlp)


def block_backward(dy, cache):
    """Gradients of one block.

    Args:
        dy: (B, L, d) gradient of the loss in the block's output.
        cache: from `block_forward`.

    Returns:
        ``(dx, grads)``: dx (B, L, d) and a dict of the parameters' gradients.
    """
    dy, cache = grad_args(dy, cache, "block")
    return _backward(dy, cache)


def _backward(dy, cache):
    _, _, c1, ca, c2, cm = cache
    g = {}
    dh2, g["fc"], g["out"] = mlp._backward(dy, cm)
    dx1_branch, g["ln2"] = norm._backward(dh2, c2)
    dx1 = dy + dx1_branch  # eq. (block_grad)
    dh1, g["qkv"], g["proj"] = attention._backward(dx1, ca)
    dx_branch, g["ln1"] = norm._backward(dh1, c1)
    return dx1 + dx_branch, g  # eq. (block_grad)


def _step(x, p, n_head, kv, pos):
    """The block on new positions with the attention's key/value cache (generation)."""
    x1 = x + attention._step(norm._forward(x, p["ln1"], EPS)[0], p["qkv"], p["proj"], n_head, kv, pos)
    return x1 + mlp._forward(norm._forward(x1, p["ln2"], EPS)[0], p["fc"], p["out"])[0]

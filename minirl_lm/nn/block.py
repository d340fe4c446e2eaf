r"""A pre-norm transformer block: two residual branches, attention then the MLP.

    x1 = x + attn(rmsnorm(x; ln1); qkv, proj)                                eq. (block_attn)
    y  = x1 + mlp(rmsnorm(x1; ln2); fc, out)                                 eq. (block_mlp)

Backward: a residual passes its gradient through unchanged and adds the branch's,

    dx1 = dy + rmsnorm_backward(mlp_backward(dy))                            eq. (block_grad)
    dx  = dx1 + rmsnorm_backward(attention_backward(dx1))                    eq. (block_grad)

The parameters of one block are a dict with the keys ``ln1, qkv, proj, ln2, fc, out``.
`block_forward` and `block_backward` check their arguments and run `forward` and `backward`, the
trusted cores the model calls; `forward(..., start)` gives the outputs of positions `start..L-1`
only (attention reads every position's key and value; the rest of the block runs on the rows
asked for), which is all the model reads of its last block.
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
    return forward(*block_args(x, p, n_head))


def forward(x, p, n_head, start=0):
    """`block_forward` without checks, for the positions start..L-1: y (B, L - start, d)."""
    h1, c1 = norm.forward(x, p["ln1"], EPS)
    a, ca = attention.forward(h1, p["qkv"], p["proj"], n_head, start)
    x1 = a
    x1 += x[:, start:]  # (B, L - start, d) eq. (block_attn)
    h2, c2 = norm.forward(x1, p["ln2"], EPS)
    y, cm = mlp.forward(h2, p["fc"], p["out"])
    y += x1  # eq. (block_mlp)
    return y, ("block", y.shape, c1, ca, c2, cm, start)


def block_backward(dy, cache):
    """Gradients of one block.

    Args:
        dy: (B, L, d) gradient of the loss in the block's output.
        cache: from `block_forward`.

    Returns:
        ``(dx, grads)``: dx (B, L, d) and a dict of the parameters' gradients.
    """
    return backward(*grad_args(dy, cache, "block"))


def backward(dy, cache):
    """`block_backward` without checks (any `start` of `forward`)."""
    _, _, c1, ca, c2, cm, start = cache
    g = {}
    dh2, g["fc"], g["out"] = mlp.backward(dy, cm)
    dx1, g["ln2"] = norm.backward(dh2, c2)
    dx1 += dy  # (B, L - start, d) eq. (block_grad)
    dh1, g["qkv"], g["proj"] = attention.backward(dx1, ca)
    dx, g["ln1"] = norm.backward(dh1, c1)  # (B, L, d)
    dx[:, start:] += dx1  # eq. (block_grad)
    return dx, g


def step(x, p, n_head, kv, pos, start=0):
    """The block on new positions with the attention's key/value cache (generation): the
    outputs of positions pos + start .. pos + L - 1. No checks (`generate` checks its arguments)."""
    x1 = attention.step(norm.forward(x, p["ln1"], EPS)[0], p["qkv"], p["proj"], n_head, kv, pos, start)
    x1 += x[:, start:]
    y = mlp.forward(norm.forward(x1, p["ln2"], EPS)[0], p["fc"], p["out"])[0]
    y += x1
    return y

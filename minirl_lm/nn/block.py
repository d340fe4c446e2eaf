r"""A pre-norm transformer block: two residual branches, attention then the MLP.

    x1 = x + attn(rmsnorm(x; ln1); qkv, proj)                                eq. (block_attn)
    y  = x1 + mlp(rmsnorm(x1; ln2); fc, out)                                 eq. (block_mlp)

Backward: a residual passes its gradient through unchanged and adds the branch's,

    dx1 = dy + rmsnorm_backward(mlp_backward(dy))                            eq. (block_grad)
    dx  = dx1 + rmsnorm_backward(attention_backward(dx1))                    eq. (block_grad)

The parameters of one block are a dict with the keys ``ln1, qkv, proj, ln2, fc, out``. The model
calls `block_forward.core` and `block_backward.core`, the bodies without the declared checks;
`block_forward(..., start=s)` gives the outputs of positions `s..L-1` only (attention reads every
position's key and value; the rest of the block runs on the rows asked for), which is all the
model reads of its last block. `block_step` is the block over a key/value cache (generation).
"""

from minirl_lm.boundary import COUNT, array, boundary, number
from minirl_lm.nn.attention import attention_backward, attention_forward, attention_step
from minirl_lm.nn.layer import (
    ACTS,
    KV,
    START,
    Arrays,
    Cache,
    cache_of,
    heads_divide_width,
    kv_fits,
    start_before_end,
)
from minirl_lm.nn.mlp import mlp_backward, mlp_forward
from minirl_lm.nn.norm import rmsnorm_backward, rmsnorm_forward

__all__ = ["EPS", "BLOCK_KEYS", "block_forward", "block_backward", "block_step"]

EPS = 1e-5  # RMSNorm's eps in every block
BLOCK_KEYS = ("ln1", "qkv", "proj", "ln2", "fc", "out")  # one block's parameters
_KINDS = {"ln1": array("D"), "proj": array("D D"), "ln2": array("D"), "fc": array("D M"), "out": array("M D")}


def _block_params(p, name, dims):
    """A block's parameter dict (float64 copies): ``ln1`` (d,), ``qkv`` (d, 3d), ``proj``
    (d, d), ``ln2`` (d,), ``fc`` (d, m), ``out`` (m, d), with d the width already read."""
    if not isinstance(p, dict) or set(p) != set(BLOCK_KEYS):
        got = f"the keys {sorted(map(str, p))}" if isinstance(p, dict) else type(p).__name__
        raise TypeError(f"{name}: expected a dict with the keys {BLOCK_KEYS}, got {got}")
    kinds = {**_KINDS, "qkv": array(f"D {3 * dims['D']}")}
    return {k: kinds[k](p[k], f"{name}: {k}", dims) for k in BLOCK_KEYS}


@boundary(
    x=ACTS,
    p=_block_params,
    n_head=COUNT,
    start=START,
    where=[heads_divide_width, start_before_end],
    returns="y cache",
)
def block_forward(x, p, n_head, *, start=0):
    """One pre-norm block.

    Args:
        x: (B, L, d) the residual stream.
        p: the block's parameters, a dict: ``ln1`` (d,), ``qkv`` (d, 3d), ``proj`` (d, d),
            ``ln2`` (d,), ``fc`` (d, m), ``out`` (m, d).
        n_head: heads of the attention, a divisor of d.
        start: the first position whose output is computed.

    Returns:
        ``(y, cache)``: y (B, L - start, d) and the cache `block_backward` reads.
    """
    h1, c1 = rmsnorm_forward.core(x, p["ln1"], EPS)
    a, ca = attention_forward.core(h1, p["qkv"], p["proj"], n_head, start=start)
    x1 = a
    x1 += x[:, start:]  # (B, L - start, d) eq. (block_attn)
    h2, c2 = rmsnorm_forward.core(x1, p["ln2"], EPS)
    y, cm = mlp_forward.core(h2, p["fc"], p["out"])
    y += x1  # eq. (block_mlp)
    return y, Cache(("block", y.shape, c1, ca, c2, cm, start))


@boundary(cache=cache_of("block"), dy=ACTS, returns="dx grads")
def block_backward(dy, cache):
    """Gradients of one block.

    Args:
        dy: (B, L - start, d) gradient of the loss in the block's output.
        cache: from `block_forward` (any `start`).

    Returns:
        ``(dx, grads)``: dx (B, L, d) and a dict of the parameters' gradients.
    """
    _, _, c1, ca, c2, cm, start = cache
    g = Arrays()
    dh2, g["fc"], g["out"] = mlp_backward.core(dy, cm)
    dx1, g["ln2"] = rmsnorm_backward.core(dh2, c2)
    dx1 += dy  # (B, L - start, d) eq. (block_grad)
    dh1, g["qkv"], g["proj"] = attention_backward.core(dx1, ca)
    dx, g["ln1"] = rmsnorm_backward.core(dh1, c1)  # (B, L, d)
    dx[:, start:] += dx1  # eq. (block_grad)
    return dx, g


@boundary(
    x=ACTS,
    p=_block_params,
    n_head=COUNT,
    kv=KV,
    pos=number(0, integer=True),
    start=START,
    where=[heads_divide_width, kv_fits, start_before_end],
    returns="y",
)
def block_step(x, p, n_head, kv, pos, *, start=0):
    """The block on new positions with the attention's key/value cache (generation).

    Args:
        x: (B, L, d) the positions pos .. pos + L - 1.
        p: the block's parameters, as in `block_forward`.
        n_head: as in `block_forward`.
        kv: the attention's cache, as in `attention.attention_step` (written).
        pos: the position of x's first row.
        start: the first row of x whose output is computed.

    Returns:
        y (B, L - start, d), the outputs of positions pos + start .. pos + L - 1.
    """
    h = rmsnorm_forward.core(x, p["ln1"], EPS)[0]
    x1 = attention_step.core(h, p["qkv"], p["proj"], n_head, kv, pos, start=start)
    x1 += x[:, start:]
    y = mlp_forward.core(rmsnorm_forward.core(x1, p["ln2"], EPS)[0], p["fc"], p["out"])[0]
    y += x1
    return y

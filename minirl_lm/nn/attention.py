r"""Causal multi-head self-attention, forward and backward, and one cached decoding step.

With `H` heads of size `e = d / H` (head `h` reads columns `h e .. (h+1) e - 1`):

    [q, k, v] = x Wqkv                                    (B, L, 3d)         eq. (qkv)
    s_ij = q_i . k_j / sqrt(e)  for j <= i,  -inf for j > i                 eq. (scores)
    a_i = softmax_j(s_ij)                                                    eq. (attn)
    o_i = sum_j a_ij v_j,   y = o Wo                                         eq. (attn_out)

Backward (per head; the causal zeros of `a` make every masked term vanish):

    dWo = o^T dy,   do = dy Wo^T                                             eq. (attn_out_grad)
    da_ij = do_i . v_j,   dv_j = sum_i a_ij do_i                             eq. (attn_av_grad)
    ds_ij = a_ij (da_ij - sum_k a_ik da_ik)                                  eq. (softmax_grad)
    dq_i = sum_j ds_ij k_j / sqrt(e),   dk_j = sum_i ds_ij q_i / sqrt(e)     eq. (scores_grad)
    dWqkv = x^T [dq, dk, dv],   dx = [dq, dk, dv] Wqkv^T                     eq. (qkv_grad)

The block calls `attention_forward.core` and `attention_backward.core`, the bodies without the
declared checks. `attention_forward(..., start=s)` computes the outputs of positions `s..L-1`
only (the keys and values of every position): the model's last block needs no more.
`attention_step` is the same map for new positions whose keys and values are written into a
cache of the earlier ones (generation): position i attends to positions 0..i, as in eq. (scores).
The forward caches what the backward reads (q, k, v, the softmax `a`, the heads' output `o`);
`q @ k^T` and `a @ v` are NumPy's batched products over (B, H), written straight into the layout
the next product reads.
"""

import numpy as np

from minirl_lm.boundary import COUNT, array, boundary, number
from minirl_lm.nn.layer import ACTS, KV, START, Cache, cache_of, heads_divide_width, kv_fits, start_before_end
from minirl_lm.nn.matmul import matmul, weight_grad

__all__ = ["LAYER", "attention_forward", "attention_backward", "attention_step"]

# what the forward and the step both read: the layer's input, its weights, its heads, where it starts
LAYER = dict(x=ACTS, Wqkv=array("D Q"), Wo=array("D D"), n_head=COUNT, start=START)


def _qkv_width(x, Wqkv):
    """`Wqkv` is `(d, 3d)`: the query, key and value projections side by side."""
    if Wqkv.shape[1] != 3 * x.shape[2]:
        return f"Wqkv: expected shape (d, 3d) = ({x.shape[2]}, {3 * x.shape[2]}), got {Wqkv.shape}"


def _heads(z, n_head):
    """(B, L, d) -> (B, H, L, e), a view."""
    B, L, d = z.shape
    return z.reshape(B, L, n_head, d // n_head).transpose(0, 2, 1, 3)


def _softmax_rows(s):
    """Softmax over the last axis, in place."""
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s


def _attend(q, K, V, start, out):
    """Queries q (B, H, Lq, e) at positions start.. over keys and values K, V (B, H, Lk, e);
    writes o into out (B, Lq, H, e) and returns the softmax a (B, H, Lq, Lk)."""
    s = q @ K.transpose(0, 1, 3, 2)  # (B, H, Lq, Lk) eq. (scores)
    s /= np.sqrt(q.shape[-1])
    i, j = np.arange(q.shape[2])[:, None] + start, np.arange(K.shape[2])[None, :]
    np.copyto(s, -np.inf, where=j > i)  # causal: position i sees 0..i
    a = _softmax_rows(s)  # eq. (attn)
    np.matmul(a, V, out=out.transpose(0, 2, 1, 3))  # eq. (attn_out), heads side by side
    return a


@boundary(
    **LAYER,
    where=[_qkv_width, heads_divide_width, start_before_end],
    returns="y cache",
)
def attention_forward(x, Wqkv, Wo, n_head, *, start=0):
    """Causal multi-head self-attention (no biases).

    Args:
        x: (B, L, d) input.
        Wqkv: (d, 3d) the query, key and value projections side by side.
        Wo: (d, d) output projection.
        n_head: number of heads, a divisor of d.
        start: the first position whose output is computed (every position's key and value is).

    Returns:
        ``(y, cache)``: y (B, L - start, d), the outputs of positions start..L-1, and the cache
        `attention_backward` reads.
    """
    B, L, d = x.shape
    qkv = matmul(x, Wqkv)  # (B, L, 3d) eq. (qkv): one product for q, k and v
    q, k, v = (_heads(qkv[:, :, i * d : (i + 1) * d], n_head) for i in range(3))  # (B, H, L, e) views
    q = q[:, :, start:]
    o = np.empty((B, L - start, n_head, d // n_head))  # (B, L - start, H, e)
    a = _attend(q, k, v, start, o)
    o = o.reshape(B, L - start, d)
    y = matmul(o, Wo)  # eq. (attn_out)
    return y, Cache(("attention", y.shape, x, q, k, v, a, o, Wqkv, Wo, start))


@boundary(cache=cache_of("attention"), dy=ACTS, returns="dx dWqkv dWo")
def attention_backward(dy, cache):
    """Gradients of causal self-attention.

    Args:
        dy: (B, L - start, d) gradient of the loss in the output.
        cache: from `attention_forward` (any `start`).

    Returns:
        ``(dx, dWqkv, dWo)``: dx (B, L, d) at every position (those before `start` through
        their keys and values).
    """
    _, _, x, q, k, v, a, o, Wqkv, Wo, start = cache
    (B, L, d), n_head = x.shape, q.shape[1]
    dWo = weight_grad(o, dy)  # (d, d) eq. (attn_out_grad)
    do = _heads(matmul(dy, Wo.T), n_head)  # (B, H, Lq, e)
    da = do @ v.transpose(0, 1, 3, 2)  # (B, H, Lq, L) eq. (attn_av_grad)
    dqkv = np.empty((B, L, 3, n_head, d // n_head))  # [dq, dk, dv] as the forward's qkv: (B, L, 3d)
    dq, dk, dv = (dqkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (B, H, L, e) views
    np.matmul(a.transpose(0, 1, 3, 2), do, out=dv)  # eq. (attn_av_grad)
    da -= (da * a).sum(axis=-1, keepdims=True)
    ds = np.multiply(da, a, out=da)  # (B, H, Lq, L) eq. (softmax_grad)
    scale = 1.0 / np.sqrt(d // n_head)
    np.matmul(ds, k, out=dq[:, :, start:])  # eq. (scores_grad)
    dq[:, :, :start] = 0.0  # positions before start asked nothing
    np.matmul(ds.transpose(0, 1, 3, 2), q, out=dk)  # eq. (scores_grad)
    dq *= scale
    dk *= scale
    dqkv = dqkv.reshape(B, L, 3 * d)
    return matmul(dqkv, Wqkv.T), weight_grad(x, dqkv), dWo  # eq. (qkv_grad)


@boundary(
    **LAYER,
    kv=KV,
    pos=number(0, integer=True),
    where=[_qkv_width, heads_divide_width, kv_fits, start_before_end],
    returns="y",
)
def attention_step(x, Wqkv, Wo, n_head, kv, pos, *, start=0):
    """The attention of new positions over a key/value cache of the earlier ones (generation).

    Args:
        x: (B, L, d) the positions pos .. pos + L - 1.
        Wqkv: (d, 3d) as in `attention_forward`.
        Wo: (d, d) as in `attention_forward`.
        n_head: as in `attention_forward`.
        kv: (2, B, H, max_len, e) the keys and values: positions 0 .. pos - 1 hold the earlier
            ones, and this call writes its own at pos .. pos + L - 1 (even when it then raises).
        pos: the position of x's first row.
        start: the first row of x whose output is computed.

    Returns:
        y (B, L - start, d), the outputs of positions pos + start .. pos + L - 1.
    """
    B, L, d = x.shape
    qkv = matmul(x, Wqkv)  # eq. (qkv)
    kv[0][:, :, pos : pos + L] = _heads(qkv[:, :, d : 2 * d], n_head)
    kv[1][:, :, pos : pos + L] = _heads(qkv[:, :, 2 * d :], n_head)
    q = _heads(qkv[:, :, :d], n_head)[:, :, start:]
    o = np.empty((B, L - start, n_head, d // n_head))
    _attend(q, kv[0][:, :, : pos + L], kv[1][:, :, : pos + L], pos + start, o)
    return matmul(o.reshape(B, L - start, d), Wo)  # eq. (attn_out)

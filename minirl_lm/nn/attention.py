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

`attention_forward` and `attention_backward` check their arguments and run `forward` and
`backward`, the trusted cores the block calls. `forward(..., start)` computes the outputs of
positions `start..L-1` only (the keys and values of every position): the model's last block
needs no more. `step` is the same map for new positions whose keys and values are written into
a cache of the earlier ones (generation): position i attends to positions 0..i, as in eq. (scores).
The forward caches what the backward reads (q, k, v, the softmax `a`, the heads' output `o`);
`q @ k^T` and `a @ v` are NumPy's batched products over (B, H), written straight into the layout
the next product reads.
"""

import numpy as np

from minirl_lm.nn.checks import attention_args, grad_args
from minirl_lm.nn.matmul import matmul, weight_grad


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


def attention_forward(x, Wqkv, Wo, n_head):
    """Causal multi-head self-attention (no biases).

    Args:
        x: (B, L, d) input.
        Wqkv: (d, 3d) the query, key and value projections side by side.
        Wo: (d, d) output projection.
        n_head: number of heads, a divisor of d.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `attention_backward` reads.
    """
    return forward(*attention_args(x, Wqkv, Wo, n_head))


def forward(x, Wqkv, Wo, n_head, start=0):
    """`attention_forward` without checks, for the positions start..L-1: y (B, L - start, d)."""
    B, L, d = x.shape
    qkv = matmul(x, Wqkv)  # (B, L, 3d) eq. (qkv): one product for q, k and v
    q, k, v = (_heads(qkv[:, :, i * d : (i + 1) * d], n_head) for i in range(3))  # (B, H, L, e) views
    q = q[:, :, start:]
    o = np.empty((B, L - start, n_head, d // n_head))  # (B, L - start, H, e)
    a = _attend(q, k, v, start, o)
    o = o.reshape(B, L - start, d)
    y = matmul(o, Wo)  # eq. (attn_out)
    return y, ("attention", y.shape, x, q, k, v, a, o, Wqkv, Wo, start)


def attention_backward(dy, cache):
    """Gradients of causal self-attention.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `attention_forward`.

    Returns:
        ``(dx, dWqkv, dWo)``.
    """
    return backward(*grad_args(dy, cache, "attention"))


def backward(dy, cache):
    """`attention_backward` without checks (any `start` of `forward`)."""
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


def step(x, Wqkv, Wo, n_head, kv, pos, start=0):
    """Positions pos .. pos + L - 1 of x (B, L, d), attending to the cache kv = (K, V), each
    (B, H, max_len, e), whose first pos positions hold the earlier keys and values; writes this
    call's keys and values into it. Returns y (B, L - start, d), the outputs of positions
    pos + start .. pos + L - 1. No checks (`generate` checks its arguments)."""
    B, L, d = x.shape
    qkv = matmul(x, Wqkv)  # eq. (qkv)
    kv[0][:, :, pos : pos + L] = _heads(qkv[:, :, d : 2 * d], n_head)
    kv[1][:, :, pos : pos + L] = _heads(qkv[:, :, 2 * d :], n_head)
    q = _heads(qkv[:, :, :d], n_head)[:, :, start:]
    o = np.empty((B, L - start, n_head, d // n_head))
    _attend(q, kv[0][:, :, : pos + L], kv[1][:, :, : pos + L], pos + start, o)
    return matmul(o.reshape(B, L - start, d), Wo)  # eq. (attn_out)

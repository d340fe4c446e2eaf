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

`attention_step` is the same map for new positions whose keys and values are appended to a
cache of the earlier ones (generation): position i attends to positions 0..i, as in eq. (scores).
"""

import numpy as np

from minirl_lm.nn.checks import attention_args, grad_args
from minirl_lm.nn.mlp import _mm


def _heads(z, n_head):
    """(B, L, d) -> (B, H, L, e)."""
    B, L, d = z.shape
    return z.reshape(B, L, n_head, d // n_head).transpose(0, 2, 1, 3)


def _merge(z):
    """(B, H, L, e) -> (B, L, d)."""
    B, H, L, e = z.shape
    return z.transpose(0, 2, 1, 3).reshape(B, L, H * e)


def _softmax_rows(s):
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=-1, keepdims=True)


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
    x, Wqkv, Wo, n_head = attention_args(x, Wqkv, Wo, n_head)
    return _forward(x, Wqkv, Wo, n_head)


def _forward(x, Wqkv, Wo, n_head):
    L, d = x.shape[1], x.shape[2]
    q, k, v = np.split(_mm(x, Wqkv), 3, axis=-1)  # 3 x (B, L, d) eq. (qkv)
    q, k, v = _heads(q, n_head), _heads(k, n_head), _heads(v, n_head)  # (B, H, L, e)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // n_head)  # (B, H, L, L) eq. (scores)
    s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)  # causal: -inf for j > i
    a = _softmax_rows(s)  # (B, H, L, L) eq. (attn)
    o = _merge(a @ v)  # (B, L, d)
    return _mm(o, Wo), ("attention", x.shape, x, q, k, v, a, o, Wqkv, Wo)  # eq. (attn_out)


def attention_backward(dy, cache):
    """Gradients of causal self-attention.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `attention_forward`.

    Returns:
        ``(dx, dWqkv, dWo)``.
    """
    dy, cache = grad_args(dy, cache, "attention")
    return _backward(dy, cache)


def _backward(dy, cache):
    _, (B, L, d), x, q, k, v, a, o, Wqkv, Wo = cache
    n_head = q.shape[1]
    dWo = o.reshape(-1, d).T @ dy.reshape(-1, d)  # (d, d) eq. (attn_out_grad)
    do = _heads(_mm(dy, Wo.T), n_head)  # (B, H, L, e)
    da = do @ v.transpose(0, 1, 3, 2)  # (B, H, L, L) eq. (attn_av_grad)
    dv = a.transpose(0, 1, 3, 2) @ do  # (B, H, L, e) eq. (attn_av_grad)
    ds = a * (da - (da * a).sum(axis=-1, keepdims=True))  # eq. (softmax_grad)
    scale = 1.0 / np.sqrt(d // n_head)
    dq = ds @ k * scale  # (B, H, L, e) eq. (scores_grad)
    dk = ds.transpose(0, 1, 3, 2) @ q * scale  # eq. (scores_grad)
    dqkv = np.empty((B, L, 3, n_head, d // n_head))  # (B, L, 3d) as [dq, dk, dv], head by head
    for i, g in enumerate((dq, dk, dv)):
        dqkv[:, :, i] = g.transpose(0, 2, 1, 3)  # (B, L, H, e)
    dqkv = dqkv.reshape(B, L, 3 * d)
    dWqkv = x.reshape(-1, d).T @ dqkv.reshape(-1, 3 * d)  # (d, 3d) eq. (qkv_grad)
    return _mm(dqkv, Wqkv.T), dWqkv, dWo  # eq. (qkv_grad)


def _step(x, Wqkv, Wo, n_head, kv, pos):
    """Positions pos .. pos + L - 1 of x (B, L, d), attending to the cache kv = (K, V), each
    (B, H, max_len, e), whose first pos positions hold the earlier keys and values; writes this
    call's keys and values into it. Returns y (B, L, d)."""
    L, d = x.shape[1], x.shape[2]
    q, k, v = np.split(_mm(x, Wqkv), 3, axis=-1)  # eq. (qkv)
    kv[0][:, :, pos : pos + L] = _heads(k, n_head)
    kv[1][:, :, pos : pos + L] = _heads(v, n_head)
    K, Vv = kv[0][:, :, : pos + L], kv[1][:, :, : pos + L]  # (B, H, pos + L, e)
    s = _heads(q, n_head) @ K.transpose(0, 1, 3, 2) / np.sqrt(d // n_head)  # eq. (scores)
    i, j = np.arange(L)[:, None] + pos, np.arange(pos + L)[None, :]
    s = np.where(j <= i, s, -np.inf)  # causal: position i sees 0..i
    return _mm(_merge(_softmax_rows(s) @ Vv), Wo)  # eq. (attn), eq. (attn_out)

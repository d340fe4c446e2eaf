# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/attention.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/attention.py -o DIR
# Files named below (tests/, examples/, docs/, scripts/) are files of the minirl_lm repository,
# and a page named below (the page "...") is a page of the minirl_lm documentation site.
#
# MIT License
#
# Copyright (c) 2026 the minirl_lm authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

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

import numbers

import numpy as np


__all__ = ["attention_forward", "forward", "attention_backward", "backward", "step"]


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


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/nn/matmul.py
#   The two matrix products of every layer, shaped so that each is one BLAS call.
# ----------------------------------------------------------------------------------------------


def matmul(x, W):
    """(..., k) @ (k, n) as one 2-D product."""
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(x.shape[:-1] + (W.shape[1],))


def weight_grad(x, dy):
    """The weight's gradient of `matmul`: x^T dy summed over every leading axis."""
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return x2.T @ dy2 if x2.shape[1] <= dy2.shape[1] else (dy2.T @ x2).T


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/nn/checks.py
#   The boundary of the network part: one bundle call per public function of `minirl_lm/nn/`.
# ----------------------------------------------------------------------------------------------


def _floats(x, name, ndim):
    """A finite float64 array with ``ndim`` axes, none of them empty."""
    arr = float_array(x, name, ndim=ndim)
    nonempty(arr, name)
    return arr


def _cache(cache, name, kind):
    """A cache returned by the forward ``kind``: (kind, output shape, ...)."""
    if not (isinstance(cache, tuple) and len(cache) > 2 and cache[0] == kind):
        raise TypeError(f"{name}: expected the cache returned by {kind}_forward, got {_describe(cache)}")
    return cache


def grad_args(dy, cache, kind):
    """A backward's (dy, cache): the cache of forward ``kind``, dy of the forward output's shape."""
    cache = _cache(cache, "cache", kind)
    dy = float_array(dy, "dy", shape=cache[1])
    return dy, cache


def attention_args(x, Wqkv, Wo, n_head):
    x = _floats(x, "x", 3)
    d = x.shape[2]
    n_head = int_scalar(n_head, "n_head", low=1)
    if d % n_head:
        raise ValueError(f"n_head: expected a divisor of d = {d}, got {n_head}")
    return x, float_array(Wqkv, "Wqkv", shape=(d, 3 * d)), float_array(Wo, "Wo", shape=(d, d)), n_head


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def int_scalar(x, name, low=None, high=None):
    """Return ``x`` as a Python int in ``[low, high]`` (bounds inclusive)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_describe(x)}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {x}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:  # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"  # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")

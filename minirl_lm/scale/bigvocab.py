r"""Token log-probs at a real vocabulary: from hidden states, without the (N, V) logits.

A real model hands over hidden states ``h`` (N, d), one row per token position (here N counts
token positions, ``B * T`` flattened, not prompts), and an unembedding ``W`` (V, d). The logits
``h W^T`` are (N, V): at V = 151,936 and a few thousand tokens that is gigabytes, written once
and read a few times to get N numbers. This file computes the same N log-probs, and the
gradients of a per-token loss with respect to ``h`` and ``W``, one chunk of rows at a time, so
that the largest temporary is one (chunk, V) block. Labels as in
``docs/big_vocab.md``; the row kernels are those of ``minirl_lm.kernels`` (eq. (log_softmax) and
eq. (logsoftmax_grad) of ``logprob.py``).

    z_n = W h_n                                   (V,) logits of token n     eq. (unembed)
    logp_n = z_{n, y_n} - log sum_v exp(z_{n, v})                            eq. (log_softmax)
    loss = sum_n f_n(logp_n),  g_n = d loss / d logp_n = f_n'(logp_n)        eq. (token_loss)
    G_{n, v} = g_n (1[v = y_n] - softmax(z_n)_v)                             eq. (logit_grad)
    dh_n = sum_v G_{n, v} W_v,  i.e. dh = G W                                eq. (dh_chunk)
    dW = sum_n G_n^T h_n = sum over chunks c of G_c^T h_c                    eq. (dW_chunk)

Each chunk c of rows: one product ``z_c = h_c W^T`` into a reused (chunk, V) buffer, the row
kernel for ``logp_c`` (it leaves ``exp(z - max)`` of each row in the buffer and the row's sum in
``s``), the caller's ``loss_fn`` for ``g_c``, the row kernel scaling the buffer into ``G_c``
(``g (onehot - e / s)``: no second max, no second exponential), then ``dh_c = G_c W`` and
``dW += G_c^T h_c``: three matrix products over the whole batch, the same three a materialized
computation does, and each chunk's logits and their exponentials computed once.
This needs ``g_n`` to depend on token n's log-prob and on data only (the clipped surrogate, the
KL estimators, REINFORCE, each with its aggregation weights as data). An objective that couples
tokens through the current log-probs (a sequence-level ratio) takes two passes:
``chunked_logp`` first, then ``chunked_loss_grad`` with a ``loss_fn`` returning the gradient
computed from the first pass (four products).

Memory beyond the inputs and the outputs (logp, dh, dW): the (chunk, V) buffer, plus O(chunk d +
1024 d) scratch; no other temporary of V entries per row. Padding rows (``mask == 0``) are dropped
before chunking: they cost nothing, get ``logp == 0.0``, ``dh == 0`` and contribute nothing to
``dW``.

Edge cases: no real token (an empty batch or an all-zero mask) gives logp = 0, dh = 0, dW = 0,
loss = 0.0 and never calls ``loss_fn``; V = 1 gives logp = 0 and G = 0 exactly (the only token
has probability 1). -inf logits cannot arise from finite inputs unless the product overflows;
inputs with ``d * max|h| * max|W|`` above half the dtype's largest value are refused (naming
``h``), so every logit is finite. A non-finite loss or gradient from ``loss_fn`` is a ValueError
naming ``loss_fn``. float32 inputs give float32 dh and dW (the row kernels accumulate their sums in
float64); logp is float64 either way.

Demonstration: ``python examples/bench_big_vocab.py --quick``.
"""

import numpy as np

from minirl_lm.kernels.chunk import _chunk_grad_from_exp, _chunk_logp_exp
from minirl_lm.scale.checks import chunked_args, loss_fn_result

_VBLOCK = 1024  # rows of W per block of the dW update: its (block, d) scratch stays small


def chunked_logp(h, W, tokens, mask=None, chunk=256):
    """Token log-probs ``log softmax(W h_n)[y_n]`` without the (N, V) logits.

    Args:
        h: (N, d) float32 or float64 hidden states, one row per token position.
        W: (V, d) unembedding of the dtype of h, V >= 1.
        tokens: (N,) int token ids y_n in [0, V).
        mask: (N,) 0/1, 1 on real tokens; None means all real.
        chunk: rows per block, any integer >= 1; the one (chunk, V) buffer is the peak memory.

    Returns:
        logp (N,) float64, exactly 0.0 where ``mask == 0``.

    Raises:
        TypeError, ValueError: an argument of the wrong type, shape, dtype or range; the message
            starts with its name.
    """
    h, W, tokens, real, chunk = chunked_args(h, W, tokens, mask, chunk)
    logp = np.zeros(h.shape[0])  # (N,)
    if real.size == 0:
        return logp
    R0 = min(chunk, real.size)
    z = np.empty((R0, W.shape[0]), h.dtype)  # (chunk, V): the one buffer
    s = np.empty(R0)  # (chunk,) scratch: each row's sum of exp(z - max)
    for i in range(0, real.size, chunk):
        rows = real[i : i + chunk]  # (R,) real token positions
        zr = z[: rows.size]  # (R, V)
        np.matmul(h[rows], W.T, out=zr)  # eq. (unembed)
        logp[rows] = _chunk_logp_exp(zr, tokens[rows], np.empty(rows.size), s[: rows.size])  # eq. (log_softmax)
    return logp


def chunked_loss_grad(h, W, tokens, loss_fn, mask=None, chunk=256):
    """Forward and backward of a per-token loss, fused: each chunk's logits computed once.

    Args:
        h: (N, d) float32 or float64 hidden states.
        W: (V, d) unembedding of the dtype of h, V >= 1.
        tokens: (N,) int token ids in [0, V).
        loss_fn: called once per chunk as ``loss_fn(logp, rows)`` with the chunk's log-probs
            ``logp`` (R,) float64 and their positions ``rows`` (R,) int64 in [0, N) (real tokens
            only); returns ``(loss, dloss_dlogp)``, a finite number and a finite (R,) array.
            The total loss is the sum over chunks, eq. (token_loss).
        mask: (N,) 0/1, 1 on real tokens; None means all real.
        chunk: rows per block, any integer >= 1.

    Returns:
        ``(loss, logp, dh, dW)``: the float loss, logp (N,) float64 (0.0 at padding), dh (N, d)
        and dW (V, d) in the dtype of h (dh is 0 at padding).

    Raises:
        TypeError, ValueError: a bad argument (named first in the message), or ``loss_fn``
            returning a non-finite loss or gradient, or a wrong shape (named ``loss_fn``).
    """
    h, W, tokens, real, chunk = chunked_args(h, W, tokens, mask, chunk, loss_fn)
    (N, d), V = h.shape, W.shape[0]
    logp = np.zeros(N)  # (N,)
    dh = np.zeros((N, d), h.dtype)  # (N, d)
    if real.size == 0:
        return 0.0, logp, dh, np.zeros((V, d), h.dtype)
    dW = np.empty((V, d), h.dtype)  # (V, d), written by the first chunk
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow raises below instead
        loss = _fused_loop(h, W, tokens, real, chunk, loss_fn, logp, dh, dW)
    extremes = (dh.max(initial=0.0), dh.min(initial=0.0), dW.max(initial=0.0), dW.min(initial=0.0))
    if not all(np.isfinite(x) for x in (loss,) + extremes):  # d = 0: no entry, 0.0
        raise ValueError(
            f"loss_fn: expected gradients that keep the loss, dh and dW finite in "
            f"{h.dtype}, got an overflow (loss {loss})"
        )
    return loss, logp, dh, dW


def _fused_loop(h, W, tokens, real, chunk, loss_fn, logp, dh, dW):
    """The chunk loop of ``chunked_loss_grad``: fills logp, dh, dW; returns the loss."""
    V, d = W.shape
    R0 = min(chunk, real.size)
    z = np.empty((R0, V), h.dtype)  # (chunk, V): the one buffer
    s = np.empty(R0)  # (chunk,) each row's sum of exp(z - max)
    dhr = np.empty((R0, d), h.dtype)  # (chunk, d)
    scratch = np.empty((min(_VBLOCK, V), d), h.dtype)  # (block, d) for the dW update
    loss = 0.0
    for i in range(0, real.size, chunk):
        rows = real[i : i + chunk]  # (R,)
        R = rows.size
        hr, yr, zr = h[rows], tokens[rows], z[:R]  # (R, d), (R,), (R, V)
        np.matmul(hr, W.T, out=zr)  # eq. (unembed): product 1
        lp = _chunk_logp_exp(zr, yr, np.empty(R), s[:R])  # (R,) eq. (log_softmax); zr := exp(z - m)
        logp[rows] = lp
        part, g = loss_fn_result(loss_fn(lp.copy(), rows), rows)  # eq. (token_loss)
        loss += part
        _chunk_grad_from_exp(zr, yr, g, s[:R])  # zr := G_c, eq. (logit_grad)
        dh[rows] = np.matmul(zr, W, out=dhr[:R])  # eq. (dh_chunk): product 2
        _add_outer(dW, zr, hr, scratch, first=(i == 0))  # eq. (dW_chunk): product 3
    return loss


def _add_outer(dW, G, hr, scratch, first):
    """dW += G^T hr (first: dW = G^T hr), in blocks of rows of dW so the scratch stays small."""
    V = dW.shape[0]
    for v0 in range(0, V, _VBLOCK):
        v1 = min(V, v0 + _VBLOCK)
        if first:
            np.matmul(G[:, v0:v1].T, hr, out=dW[v0:v1])  # (block, d)
        else:
            s = scratch[: v1 - v0]  # (block, d)
            np.matmul(G[:, v0:v1].T, hr, out=s)
            dW[v0:v1] += s

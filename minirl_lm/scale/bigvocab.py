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
``h``), so every logit is finite. What ``loss_fn`` returns is read like an argument: anything but
a finite loss and a finite (R,) gradient is an error naming ``loss_fn``. A loss, dh or dW beyond
the dtype's range (a huge but finite gradient) is the one overflow error, naming
``chunked_loss_grad``. float32 inputs give float32 dh and dW (the row kernels accumulate their sums
in float64); logp is float64 either way.

The arguments are declared with ``minirl_lm.boundary``, with two kinds of this file: ``h`` and
``W`` are read as they are (float32 or float64, no float64 copy of the big arrays: the engine's
``array`` would make one), and the result of ``chunked_loss_grad`` is checked by its extremes
(``finite`` on the max and min of dh and dW, no float64 copy of a (V, d) float32 gradient).

Demonstration: ``python examples/bench_big_vocab.py --quick``.
"""

import numbers

import numpy as np

from minirl_lm.boundary import COUNT, array, boundary, finite, function, optional
from minirl_lm.kernels.chunk import _chunk_grad_from_exp, _chunk_logp_exp

__all__ = ["chunked_logp", "chunked_loss_grad", "add_outer", "VBLOCK"]

VBLOCK = 1024  # rows of W per block of the dW update: its (block, d) scratch stays small


def _float_matrix(rows, cols, min_rows=0, dtype_of=None):
    """A 2-D float32 or float64 NumPy array (no list form, no cast: these are the big arrays),
    finite, of shape `(rows, cols)` (letters; `rows` at least `min_rows` long), in the dtype of
    the argument `dtype_of` if given; C order (a copy only if it is not). Read with max and min:
    no temporary of its size."""

    def read(x, name, dims):
        if not isinstance(x, np.ndarray) or x.dtype not in (np.float32, np.float64):
            got = f"{x.dtype} array" if isinstance(x, np.ndarray) else type(x).__name__
            raise TypeError(f"{name}: expected a float32 or float64 numpy array, got {got}")
        if dtype_of is not None and x.dtype != dims[f"{dtype_of}.dtype"]:
            raise TypeError(
                f"{name}: expected the dtype of {dtype_of} ({dims[f'{dtype_of}.dtype']}), got {x.dtype} "
                f"(no silent cast: convert one of them)"
            )
        want = tuple(dims.get(k, k) for k in (rows, cols))
        if (
            x.ndim != 2
            or x.shape[0] < min_rows
            or any(w != n for w, n in zip(want, x.shape) if isinstance(w, int))
        ):
            more = f" with {rows} >= {min_rows}" if min_rows else ""
            raise ValueError(f"{name}: expected shape ({', '.join(map(str, want))}){more}, got {x.shape}")
        hi, lo = (float(x.max()), float(x.min())) if x.size else (0.0, 0.0)  # no temporary
        if not (np.isfinite(hi) and np.isfinite(lo)):
            raise ValueError(
                f"{name}: expected finite values, got {int((~np.isfinite(x)).sum())} NaN or inf entries"
            )
        dims.update({rows: x.shape[0], cols: x.shape[1], f"{name}.dtype": x.dtype})
        return np.ascontiguousarray(x)

    return read


def _vocabulary_ids(x, name, dims):
    """`(N,)` integer token ids in `[0, V)`, V the rows of `W` (a bool array is not one)."""
    if getattr(x, "dtype", None) == np.bool_:
        raise TypeError(f"{name}: expected an integer array of ids, got an array of dtype bool")
    return array("N", integer=True, low=0, high=dims["V"] - 1, empty=True)(x, name, dims)


def _abs_max(x):
    return max(float(x.max()), -float(x.min())) if x.size else 0.0


def _logits_bounded(h, W):
    """Every logit is finite: `d * max|h| * max|W|` (a bound on every `|h_n . W_v|`) is at most
    half the dtype's largest value."""
    bound, top = h.shape[1] * _abs_max(h) * _abs_max(W), np.finfo(h.dtype).max / 2
    if bound > top:
        return f"h: expected d * max|h| * max|W| <= {top:.3g} (no logit overflows {h.dtype}), got {bound:.3g}"


def _buffer_fits(h, W, mask, chunk):
    """The one `(chunk, V)` buffer stays within 2**31 entries (refused before allocating)."""
    n = min(chunk, h.shape[0] if mask is None else int(mask.sum())) * W.shape[0]
    if n > 2**31:
        return f"chunk: expected a (chunk, V) buffer of at most 2**31 entries, got {n}"


def _chunk_result(out, rows):
    """What `loss_fn` returned for a chunk, read like an argument: `(loss, dloss_dlogp)` as a
    float and a finite `(R,)` float64 C-order array; anything else is an error naming `loss_fn`."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"loss_fn: expected it to return (loss, dloss_dlogp), got {type(out).__name__}")
    part, g = out
    part = part[()] if isinstance(part, np.ndarray) and part.ndim == 0 else part
    try:
        ga = np.asarray(g)  # a string is an array of kind U or S, refused below
    except (ValueError, TypeError, OverflowError):  # ragged, huge ints
        ga = None
    if (
        isinstance(part, (bool, np.bool_))
        or not isinstance(part, numbers.Real)
        or ga is None
        or ga.dtype.kind not in "fiu"
    ):
        raise TypeError(
            f"loss_fn: expected a real loss and a real (R,) dloss_dlogp, "
            f"got {type(part).__name__} and {type(g).__name__}"
        )
    if ga.shape != rows.shape:
        raise ValueError(f"loss_fn: expected dloss_dlogp of shape {rows.shape} (the chunk's logp), got {ga.shape}")
    try:
        part = float(part)
    except OverflowError:  # an int beyond float64
        part = np.inf
    g = np.ascontiguousarray(ga, dtype=np.float64)
    if not (np.isfinite(part) and np.isfinite(g).all()):
        raise ValueError(
            f"loss_fn: expected a finite loss and dloss_dlogp, got loss {part} and "
            f"{int((~np.isfinite(g)).sum())} non-finite gradient entries"
        )
    return part, g


HEAD = dict(
    h=_float_matrix("N", "D"),
    W=_float_matrix("V", "D", min_rows=1, dtype_of="h"),
    tokens=_vocabulary_ids,
    mask=optional(array("N", values=(0.0, 1.0), empty=True)),
    chunk=COUNT,
)  # both functions' arguments but loss_fn
LOSS_FN = function("loss_fn(logp, rows) -> (loss, dloss_dlogp)", 2)


@boundary(**HEAD, where=[_logits_bounded, _buffer_fits], returns="logp")
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
    real = np.arange(h.shape[0]) if mask is None else np.flatnonzero(mask)  # (R,) real positions
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


@boundary(loss_fn=LOSS_FN, **HEAD, where=[_logits_bounded, _buffer_fits], returns=None)  # checked below
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
            returning a non-finite loss or gradient, or a wrong shape (named ``loss_fn``), or a
            loss, dh or dW beyond the dtype's range (named ``chunked_loss_grad``).
    """
    real = np.arange(h.shape[0]) if mask is None else np.flatnonzero(mask)  # (R,) real positions
    (N, d), V = h.shape, W.shape[0]
    logp = np.zeros(N)  # (N,)
    dh = np.zeros((N, d), h.dtype)  # (N, d)
    if real.size == 0:
        return 0.0, logp, dh, np.zeros((V, d), h.dtype)
    dW = np.empty((V, d), h.dtype)  # (V, d), written by the first chunk
    loss = _fused_loop(h, W, tokens, real, chunk, loss_fn, logp, dh, dW)
    ends = lambda x: np.array([x.max(initial=0.0), x.min(initial=0.0)])  # noqa: E731 (NaN propagates)
    finite((loss, ends(dh), ends(dW)), "chunked_loss_grad", ["loss", "dh", "dW"], dict(h=h, W=W))
    return loss, logp, dh, dW


def _fused_loop(h, W, tokens, real, chunk, loss_fn, logp, dh, dW):
    """The chunk loop of ``chunked_loss_grad``: fills logp, dh, dW; returns the loss."""
    V, d = W.shape
    R0 = min(chunk, real.size)
    z = np.empty((R0, V), h.dtype)  # (chunk, V): the one buffer
    s = np.empty(R0)  # (chunk,) each row's sum of exp(z - max)
    dhr = np.empty((R0, d), h.dtype)  # (chunk, d)
    scratch = np.empty((min(VBLOCK, V), d), h.dtype)  # (block, d) for the dW update
    loss = 0.0
    for i in range(0, real.size, chunk):
        rows = real[i : i + chunk]  # (R,)
        R = rows.size
        hr, yr, zr = h[rows], tokens[rows], z[:R]  # (R, d), (R,), (R, V)
        np.matmul(hr, W.T, out=zr)  # eq. (unembed): product 1
        lp = _chunk_logp_exp(zr, yr, np.empty(R), s[:R])  # (R,) eq. (log_softmax); zr := exp(z - m)
        logp[rows] = lp
        part, g = _chunk_result(loss_fn(lp.copy(), rows), rows)  # eq. (token_loss)
        loss += part
        _chunk_grad_from_exp(zr, yr, g, s[:R])  # zr := G_c, eq. (logit_grad)
        dh[rows] = np.matmul(zr, W, out=dhr[:R])  # eq. (dh_chunk): product 2
        add_outer(dW, zr, hr, scratch, first=(i == 0))  # eq. (dW_chunk): product 3
    return loss


def add_outer(dW, G, hr, scratch, first):
    """dW += G^T hr (first: dW = G^T hr), in blocks of rows of dW so the scratch stays small."""
    V = dW.shape[0]
    for v0 in range(0, V, VBLOCK):
        v1 = min(V, v0 + VBLOCK)
        if first:
            np.matmul(G[:, v0:v1].T, hr, out=dW[v0:v1])  # (block, d)
        else:
            s = scratch[: v1 - v0]  # (block, d)
            np.matmul(G[:, v0:v1].T, hr, out=s)
            dW[v0:v1] += s

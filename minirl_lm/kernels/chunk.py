"""Chunks of rows (R, V): the kernels of `minirl_lm.scale.bigvocab`.

The chunked loss never forms the (N, V) logits: it multiplies a chunk of hidden states by the
unembedding, and two kernels turn that chunk (R, V) into log-probs, then in place into its
gradient. `_chunk_logp_exp` and `_chunk_grad_from_exp` are the pair the chunked loss uses: the
first leaves each row's exponentials `exp(z - m)` in the buffer and their sums in `s`, the second
scales them into the gradient, so each entry is exponentiated once (`rows._row_exp`,
`rows._row_scale`). `_chunk_logp` and `_chunk_grad_inplace` are the same results through
`rows._row_lse` / `rows._row_grad` (a max and an exponential per entry in each, and a copy back):
the dense kernels' arithmetic on the same rows (tested in tests/kernels/test_chunk.py).
"""

import numpy as np
from numba import njit

from minirl_lm.kernels.rows import _row_exp, _row_grad, _row_lse, _row_scale


# --8<-- [start:chunk_kernels]
@njit(cache=True)
def _chunk_logp_exp(z, tokens, logp, s):
    """logp[i] = log softmax(z[i])[tokens[i]], and z[i] overwritten by exp(z[i] - max z[i]).

    Fills logp (R,) and s (R,) float64, ``s[i] = sum_v exp(z[i, v] - max z[i])``, what
    ``_chunk_grad_from_exp`` needs to finish the gradient. The log-probs are those of
    ``_chunk_logp`` (the same sum, to a few ulp; bitwise on this machine). NumPy twin:
    ``logprob.token_logp``; of the buffer, ``np.exp(z - z.max(axis=1, keepdims=True))`` (tested).
    """
    for i in range(z.shape[0]):
        zy = np.float64(z[i, tokens[i]])  # read before the row is overwritten
        m, si = _row_exp(z[i])
        s[i] = si
        logp[i] = (zy - m) - np.log(si)  # eq. (log_softmax)
    return logp


@njit(cache=True)
def _chunk_grad_from_exp(e, tokens, w, s):
    """Overwrite e (R, V), left by ``_chunk_logp_exp``, with w[i] * (onehot(tokens[i]) - e[i] / s[i]).

    The gradient of ``_chunk_grad_inplace`` without recomputing the max and the exponentials
    (the same arithmetic: equal to a few ulp, bitwise on this machine; tested). NumPy twin:
    ``logprob.token_logp_backward``. Returns e.
    """
    for i in range(e.shape[0]):
        _row_scale(e[i], tokens[i], w[i], s[i])  # eq. (logsoftmax_grad)
    return e


@njit(cache=True)
def _chunk_logp(z, tokens, logp):
    """logp[i] = log softmax(z[i])[tokens[i]] for every row of a chunk z (R, V); fills logp (R,).

    The trusted core of ``minirl_lm.scale.bigvocab`` (every row is a real token: the caller drops
    padding before the chunk is formed). Same arithmetic as ``dense_logp`` on the (1, R, V)
    view, bit for bit (tested). NumPy twin: ``logprob.token_logp``.
    """
    for i in range(z.shape[0]):
        m, lse = _row_lse(z[i])
        logp[i] = (np.float64(z[i, tokens[i]]) - m) - lse  # eq. (log_softmax)
    return logp


@njit(cache=True)
def _chunk_grad_inplace(z, tokens, w):
    """Overwrite a chunk z (R, V) with w[i] * (onehot(tokens[i]) - softmax(z[i])); returns z.

    Each row goes through ``_row_grad`` into a scratch row, then is copied back. Passing the row
    as its own output is correct but 4x slower (measured): LLVM cannot prove input and output
    distinct and keeps the exp loop scalar. Equal to ``dense_backward`` on the (1, R, V) view to
    a few ulp (the reassociated sum may split differently at the scratch row's alignment; tested).
    NumPy twin: ``logprob.token_logp_backward``.
    """
    row = np.empty(z.shape[1], dtype=z.dtype)  # (V,) scratch, stays in cache
    for i in range(z.shape[0]):
        _row_grad(z[i], tokens[i], w[i], row)  # eq. (logsoftmax_grad)
        z[i, :] = row
    return z


# --8<-- [end:chunk_kernels]

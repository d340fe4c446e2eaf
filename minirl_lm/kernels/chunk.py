"""Chunks of rows (R, V): the two kernels of `minirl_lm.scale.bigvocab`.

The chunked loss never forms the (N, V) logits: it multiplies a chunk of hidden states by the
unembedding, and these two kernels turn that chunk (R, V) into log-probs, then in place into its
gradient. Each row goes through `rows._row_lse` / `rows._row_grad`, so a chunk's numbers are
those of the dense kernels on the same rows (tested in tests/kernels/test_chunk.py).
"""

import numpy as np
from numba import njit

from minirl_lm.kernels.rows import _row_grad, _row_lse


# --8<-- [start:chunk_kernels]
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

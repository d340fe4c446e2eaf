"""Dense logits (B, T, V): token and sequence log-probs, and their backward, fused.

```text
logp[b, t] = z_y - m - log sum_v exp(z_v - m),  m = max_v z_v          eq. (log_softmax)
seq_logp[b] = sum_t mask[b, t] logp[b, t]                             eq. (factorization)
dlogits[b, t, v] = w[b, t] (1[v = y] - softmax(z)_v)                  eq. (logsoftmax_grad)
```

NumPy twins: `logprob.token_logp` and `logprob.token_logp_backward`. No `(B, T, V)` temporary:
each row goes through `rows._row_lse` or `rows._row_grad`. Positions with `mask == 0` are never
read and get `logp == 0.0` and a zero gradient row.

- the backward's `(B, T, V)` output is allocated by NumPy in a thin Python wrapper (or passed
  as `out=`), not by numba: NumPy asks for transparent huge pages, and page faults on a fresh
  output otherwise cost more than the arithmetic.
- float32 logits: `logp` is float64, `dlogits` float32 (see `rows`).
- threads are opt-in: the `*_parallel` kernels are separate module-level `prange` functions
  (same results, bit for bit; the cache key ignores `parallel`, so one function cannot be both).
"""

import numpy as np
from numba import njit, prange

from minirl_lm.kernels.rows import _row_grad, _row_lse, sequence_logp


@njit(cache=True)
def _dense_logp(logits, tokens, mask):
    """Token and sequence log-probs from logits (B, T, V), fused: no (B, T, V) temporary.

    logits float64 or float32. Returns logp (B, T) float64, 0.0 at padding, and seq_logp (B,)
    = masked sum over t.
    """
    B, T, V = logits.shape
    logp = np.zeros((B, T))  # (B, T)
    for b in range(B):
        for t in range(T):
            if mask[b, t] != 0.0:
                m, lse = _row_lse(logits[b, t])
                logp[b, t] = (np.float64(logits[b, t, tokens[b, t]]) - m) - lse  # eq. (log_softmax)
    return logp, sequence_logp(logp, mask)  # eq. (factorization)


@njit(cache=True, parallel=True)
def _dense_logp_parallel(logits, tokens, mask):
    """``dense_logp`` with its rows spread over all of numba's threads (opt-in; same bits)."""
    B, T, V = logits.shape
    logp = np.zeros((B, T))  # (B, T)
    for i in prange(B * T):
        b, t = i // T, i % T
        if mask[b, t] != 0.0:
            m, lse = _row_lse(logits[b, t])
            logp[b, t] = (np.float64(logits[b, t, tokens[b, t]]) - m) - lse  # eq. (log_softmax)
    return logp, sequence_logp(logp, mask)  # eq. (factorization), the serial kernel's sums


def _dense_backward(logits, tokens, mask, w, out=None, parallel=False):
    """dlogits (B, T, V) = w[b, t] * mask[b, t] * (onehot(y_bt) - softmax(logits[b, t])).

    dlogits has the dtype of logits (float64 or float32). ``out``: an optional C-contiguous
    (B, T, V) array of that dtype to write into (reuse it across steps). Without it the output is
    allocated here by NumPy, not inside the kernel: NumPy asks the kernel for transparent huge
    pages on large arrays, numba's allocator does not, and a fresh 32 MB output page-faulted
    in 4 KB pages cost twice the arithmetic (measured, see docs/performance.md). ``parallel``:
    the rows in ``prange`` over all of numba's threads (opt-in; same bits).
    """
    if out is None:
        out = np.empty_like(logits)  # (B, T, V)
    kernel = _dense_backward_parallel_into if parallel else _dense_backward_into
    return kernel(logits, tokens, mask, w, out)


@njit(cache=True)
def _dense_backward_into(logits, tokens, mask, w, out):
    """The kernel of ``dense_backward``: writes every row of out (B, T, V) once, returns it."""
    B, T, V = logits.shape
    for b in range(B):
        for t in range(T):
            if mask[b, t] == 0.0:
                out[b, t, :] = 0.0
            else:
                _row_grad(logits[b, t], tokens[b, t], w[b, t], out[b, t])
    return out


@njit(cache=True, parallel=True)
def _dense_backward_parallel_into(logits, tokens, mask, w, out):
    """The kernel of ``dense_backward(..., parallel=True)``: rows in prange."""
    B, T, V = logits.shape
    for i in prange(B * T):
        b, t = i // T, i % T
        if mask[b, t] == 0.0:
            out[b, t, :] = 0.0
        else:
            _row_grad(logits[b, t], tokens[b, t], w[b, t], out[b, t])
    return out

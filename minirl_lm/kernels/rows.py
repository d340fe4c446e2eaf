"""Row helpers: one row of V logits to its max, its logsumexp, or its softmax gradient; and
`sequence_logp`, each row of a `(B, T)` logp summed over its real positions.

The dense, tabular and chunk kernels all go through these, so a row is computed the same way
(and gives the same bits) whichever kernel reads it. `_row_grad` is also split in two for a
buffer that may be overwritten (the chunks of `minirl_lm.scale.bigvocab`): `_row_exp` stores the
exponentials in place and returns their sum (the forward's logsumexp), `_row_scale` later turns
them into the gradient; the pair gives the bits of `_row_grad` with one max and one exponential
per entry instead of two.

- a max reduction `m = max(m, x)` does not vectorize; `_row_max` keeps 8 accumulators.
- two passes per row, a max then a sum of exponentials; a one-pass "online" logsumexp saves a
  read of L1 and costs a rescaling exponential per element (measured ~3x slower).
- fastmath is the subset `_FM` (no `nnan`/`ninf`, so `-inf` entries stay correct), and only on
  these row reductions, which need `reassoc` to vectorize; the callers keep their order, so that
  `(z_y - m) - lse` is not rewritten `z_y - (m + lse)` (which loses digits at `1e4` logits).
- float32 rows: the exponentials are taken in float32 by `_exp32` and every sum is accumulated
  in float64 (a sequential float32 sum over V = 32768 loses 1e-4).
- `_row_grad` computes each exponential once: `exp(z_v - m)` is written into the output row
  while it is summed, then the row is scaled by `-w / sum` (the NumPy twin exponentiates twice).
  `_row_exp` is that first loop writing into the row itself (the same index is read and written,
  so the loop still vectorizes) and `_row_scale` the scaling, so `_row_exp` then `_row_scale`
  equals `_row_grad` (the same loops; tested to a few ulp, bitwise on this machine).
"""

import numpy as np
from numba import njit

from minirl_lm.kernels.exp import _exp, _exp32

_FM = {"nsz", "arcp", "contract", "afn", "reassoc"}


@njit(cache=True, fastmath=_FM)
def _row_max(z):
    """max of a 1-D row with 8 accumulators (a single running max does not vectorize)."""
    V = z.shape[0]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = -np.inf
    n8 = V - V % 8
    for v in range(0, n8, 8):
        m0, m1 = max(m0, z[v]), max(m1, z[v + 1])
        m2, m3 = max(m2, z[v + 2]), max(m3, z[v + 3])
        m4, m5 = max(m4, z[v + 4]), max(m5, z[v + 5])
        m6, m7 = max(m6, z[v + 6]), max(m7, z[v + 7])
    for v in range(n8, V):
        m0 = max(m0, z[v])
    return max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))


@njit(cache=True, fastmath=_FM)
def _row_lse(z):
    """(m, log sum_v exp(z_v - m)) of a row with a finite entry: two passes, max then sum.

    float64 or float32 row; m and the sum are float64 either way.
    """
    m = _row_max(z)  # finite: every row has a finite entry
    return m, np.log(_row_sum_exp(z, m))  # the sum >= 1 (the max contributes exp(0))


@njit(cache=True, fastmath=_FM)
def _row_sum_exp(z, m):
    """sum_v exp(z_v - m) of a row, in float64 (float32 rows: each exponential in float32)."""
    s = 0.0
    if z.itemsize == 4:  # float32: exp in float32, sum in float64
        m32 = np.float32(m)  # exact: m is one of the entries
        for v in range(z.shape[0]):
            s += np.float64(_exp32(np.float32(z[v] - m32)))
    else:
        for v in range(z.shape[0]):
            s += _exp(z[v] - m)  # -inf - m = -inf -> exactly 0
    return s


@njit(cache=True, fastmath=_FM)
def _row_grad(z, y, wb, out):
    """out[:] = wb * (onehot(y) - softmax(z)): one exponential per entry, stored, then scaled.

    out has z's dtype; the sum is float64.
    """
    V = z.shape[0]
    m = _row_max(z)
    s = 0.0
    if z.itemsize == 4:
        m32 = np.float32(m)
        for v in range(V):
            e = _exp32(np.float32(z[v] - m32))
            out[v] = e  # exp(z_v - m), kept for the scaling pass
            s += np.float64(e)
    else:
        for v in range(V):
            e = _exp(z[v] - m)
            out[v] = e
            s += e
    c = -wb / s  # eq. (logsoftmax_grad): -w p_v = -w e_v / s
    ey = np.float64(out[y])
    for v in range(V):
        out[v] = out[v] * c
    out[y] = ey * c + wb  # eq. (logsoftmax_grad): +w 1[v = y], in float64


@njit(cache=True, fastmath=_FM)
def _row_exp(z):
    """z[:] = exp(z - m) in place, m = max(z); returns (m, s), s = sum_v exp(z_v - m) in float64.

    The first loop of ``_row_grad`` with the row as its own output: log(s) is the logsumexp of
    ``_row_lse`` and the stored row is what ``_row_scale`` turns into the gradient.
    """
    m = _row_max(z)
    s = 0.0
    if z.itemsize == 4:
        m32 = np.float32(m)
        for v in range(z.shape[0]):
            e = _exp32(np.float32(z[v] - m32))
            z[v] = e
            s += np.float64(e)
    else:
        for v in range(z.shape[0]):
            e = _exp(z[v] - m)
            z[v] = e
            s += e
    return m, s


@njit(cache=True, fastmath=_FM)
def _row_scale(e, y, wb, s):
    """e[:] = wb * (onehot(y) - e / s) in place, for e = exp(z - m) and s its sum (``_row_exp``).

    The scaling of ``_row_grad``, the same arithmetic: together they give its output.
    """
    c = -wb / s  # eq. (logsoftmax_grad): -w p_v = -w e_v / s
    ey = np.float64(e[y])
    for v in range(e.shape[0]):
        e[v] = e[v] * c
    e[y] = ey * c + wb  # eq. (logsoftmax_grad): +w 1[v = y], in float64


@njit(cache=True)
def sequence_logp(logp, mask):
    """seq_logp (B,): each row of logp (B, T) summed over its real positions, in order, eq. (factorization)."""
    B, T = logp.shape
    seq_logp = np.zeros(B)  # (B,)
    for b in range(B):
        acc = 0.0
        for t in range(T):
            if mask[b, t] != 0.0:
                acc += logp[b, t]
        seq_logp[b] = acc
    return seq_logp

"""Numba kernels: the hot core of the one primitive, fused.

Each kernel here has a NumPy twin in `minirl_lm.core.logprob` (or, for the group advantages, a
two-line NumPy expression) and is tested equal to it (`tests/kernels/test_kernels.py`). This is the only
module of the package that imports numba.

What is computed (labels as in `logprob.py` and the page "The one primitive"):

```text
logp[b, t] = z_y - m - log sum_v exp(z_v - m),  m = max_v z_v          eq. (log_softmax)
seq_logp[b] = sum_t mask[b, t] logp[b, t]                             eq. (factorization)
d logp / d z_v = 1[v = y] - softmax(z)_v                              eq. (logsoftmax_grad)
```

Contract (`CONTRIBUTING.md`): the public functions validate their inputs (C-contiguous float64 /
int64; the dense kernels also take float32 logits) and call the trusted jitted cores `_name`,
which do not re-check; the library's inner loops call those cores directly. Positions with
`mask == 0` are never read (their logits, states and tokens may hold anything), get
`logp == 0.0` and contribute nothing to any gradient. A row of logits may contain `-inf` entries
but needs one finite entry; a gathered `-inf` logit gives `logp = -inf` and a finite gradient
`w (1 - 0)` at that entry (its probability is 0). Here and below `w` is the upstream gradient
`g = dloss/dlogp`, `(B, T)`.

Why it is written this way (measured on a 2-core AVX2 machine; the page "Performance" shows
the numbers):

- numba's `np.exp` is a scalar libm call here; `_exp` below is a branch-free exp that LLVM
  vectorizes, which is what makes the fused forward faster than NumPy's SIMD exp.
- a max reduction `m = max(m, x)` does not vectorize; `_row_max` keeps 8 accumulators.
- fastmath is the subset `_FM` (no `nnan`/`ninf`, so `-inf` entries stay correct), and only on
  the row reductions that need `reassoc` to vectorize; elsewhere the order is kept, so that
  `(z_y - m) - lse` is not rewritten `z_y - (m + lse)` (which loses digits at `1e4` logits).
- the tabular kernels compute each *visited* state's logsumexp once: work `S_visited V + B T`
  instead of `B T V`. The `*_per_token` variants are the naive form, kept for the benchmark.
- the dense backward computes each exponential once: `exp(z_v - m)` is written into the output
  row while it is summed, then the row is scaled by `-w / sum` (the twin exponentiates twice).
  Its `(B, T, V)` output is allocated by NumPy in a thin Python wrapper (or passed as `out=`),
  not by numba: NumPy asks for transparent huge pages, and page faults on a fresh output
  otherwise cost more than the arithmetic.
- float32 logits (dense kernels): the exponentials are taken in float32 by `_exp32` (8 SIMD
  lanes instead of 4) and every sum is accumulated in float64; `logp` is float64, `dlogits`
  float32. Expect agreement with the float64 twin to about `1e-6`, not `1e-12`.
- threads are opt-in: `dense_logp_parallel` and `dense_backward_parallel` are separate
  module-level `prange` kernels (same results, bit for bit); nothing else starts a thread,
  because on a busy machine threads can be many times slower than one core.
- the group sums are reassociated (they vectorize); a sum of exact zeros stays exactly 0, so
  equal rewards still give a zero advantage bit for bit.
- every kernel is a module-level `@njit(cache=True)` function calling the others directly (the
  backward wrappers are plain Python): a closure or a factory-made variant defeats (or worse,
  aliases) the on-disk cache, whose key ignores the `parallel` and `fastmath` options.
"""

import numpy as np
from numba import njit, prange

from minirl_lm.core.checks import float_scalar, int_scalar

_FM = {"nsz", "arcp", "contract", "afn", "reassoc"}

# ---------------------------------------------------------------- a vectorizable exp

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238      # ln 2 split so that k * _LN2_HI is exact for |k| < 2^11
_LN2_LO = 1.9082149292705877e-10
_MAGIC = 6755399441055744.0       # 1.5 * 2^52: adding it puts an integer in the low mantissa bits
_MAGIC_BITS = 0x4338000000000000  # the bit pattern of _MAGIC


@njit(cache=True, fastmath={"contract"})
def _exp(x):
    """exp(x) for a float64 scalar, branch-free so that loops over it vectorize.

    x = k ln2 + r with k = round(x / ln2), |r| <= ln2 / 2; e^r by its degree-13 Taylor polynomial
    (truncation < 5e-18 relative); 2^k applied as two exact power-of-two factors 2^(k//2) 2^(k-k//2)
    so that the one final rounding also covers the subnormal range. x is clamped to [-746, 710]:
    exp(-inf) = 0, underflow to exactly 0.0 below -745.13, +inf above 709.78. NaN is not
    handled (the kernels never pass one). Measured error against np.exp: at most 1 ulp over
    the whole float64 range (tests/kernels/test_kernels.py::test_exp_ulp).
    """
    x = min(max(x, -746.0), 710.0)
    kf = np.floor(x * _LOG2E + 0.5)
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = 1.0 + (r + r * r * p)                       # 1 added last: the big term rounds once
    k = np.float64(kf + _MAGIC).view(np.int64) - _MAGIC_BITS
    k1 = k >> 1
    s1 = np.int64((k1 + 1023) << 52).view(np.float64)       # 2^k1, a normal number
    s2 = np.int64((k - k1 + 1023) << 52).view(np.float64)   # 2^(k - k1)
    return (p * s1) * s2


@njit(cache=True)
def _exp_array(x):
    """``_exp`` over a 1-D float64 array (for tests and benchmarks)."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])
    return out


@njit(cache=True, fastmath={"contract"})
def _exp32(x):
    """exp(x) for a float32 scalar, float32 arithmetic, branch-free (vectorizes 8 lanes wide).

    Same scheme as ``_exp``: x = k ln2 + r, e^r by Cephes' degree-5 ``expf`` polynomial, 2^k as
    two power-of-two factors. x is clamped to [-104, 89]: exp(-inf) = 0, underflow to 0, +inf
    above 88.72. Measured error against np.exp rounded to float32: at most 1 ulp over the
    float32 range (tests/kernels/test_kernels.py::test_exp32_ulp).
    """
    x = min(max(x, np.float32(-104.0)), np.float32(89.0))
    kf = np.floor(x * np.float32(1.44269504) + np.float32(0.5))
    r = (x - kf * np.float32(0.693359375)) - kf * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = np.float32(1.0) + (r + r * r * p)
    k = np.int32(kf)
    k1 = k >> 1
    s1 = np.int32((k1 + 127) << 23).view(np.float32)       # 2^k1, a normal number
    s2 = np.int32((k - k1 + 127) << 23).view(np.float32)   # 2^(k - k1)
    return (p * s1) * s2


@njit(cache=True)
def _exp32_array(x):
    """``_exp32`` over a 1-D float32 array (for tests and benchmarks)."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = _exp32(x[i])
    return out


# ---------------------------------------------------------------- row helpers (V entries)

@njit(cache=True, fastmath=_FM)
def _row_max(z):
    """max of a 1-D row with 8 accumulators (a single running max does not vectorize)."""
    V = z.shape[0]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = -np.inf
    n8 = V - V % 8
    for v in range(0, n8, 8):
        m0 = max(m0, z[v]); m1 = max(m1, z[v + 1]); m2 = max(m2, z[v + 2]); m3 = max(m3, z[v + 3])
        m4 = max(m4, z[v + 4]); m5 = max(m5, z[v + 5]); m6 = max(m6, z[v + 6]); m7 = max(m7, z[v + 7])
    for v in range(n8, V):
        m0 = max(m0, z[v])
    return max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))


@njit(cache=True, fastmath=_FM)
def _row_lse(z):
    """(m, log sum_v exp(z_v - m)) of a row with a finite entry: two passes, max then sum.

    float64 or float32 row; m and the sum are float64 either way.
    """
    m = _row_max(z)                                 # finite: every row has a finite entry
    s = 0.0
    if z.itemsize == 4:                             # float32: exp in float32, sum in float64
        m32 = np.float32(m)                         # exact: m is one of the entries
        for v in range(z.shape[0]):
            s += np.float64(_exp32(np.float32(z[v] - m32)))
    else:
        for v in range(z.shape[0]):
            s += _exp(z[v] - m)                     # -inf - m = -inf -> exactly 0
    return m, np.log(s)                             # s >= 1 (the max contributes exp(0))


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
            out[v] = e                              # exp(z_v - m), kept for the scaling pass
            s += np.float64(e)
    else:
        for v in range(V):
            e = _exp(z[v] - m)
            out[v] = e
            s += e
    c = -wb / s                                     # eq. (logsoftmax_grad): -w p_v = -w e_v / s
    ey = np.float64(out[y])
    for v in range(V):
        out[v] = out[v] * c
    out[y] = ey * c + wb                            # eq. (logsoftmax_grad): +w 1[v = y], in float64


# ---------------------------------------------------------------- dense logits (B, T, V)

@njit(cache=True)
def _dense_logp(logits, tokens, mask):
    """Token and sequence log-probs from logits (B, T, V), fused: no (B, T, V) temporary.

    logits float64 or float32. Returns logp (B, T) float64, 0.0 at padding, and seq_logp (B,)
    = masked sum over t.
    """
    B, T, V = logits.shape
    logp = np.zeros((B, T))                         # (B, T)
    seq_logp = np.zeros(B)                          # (B,)
    for b in range(B):
        acc = 0.0
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            m, lse = _row_lse(logits[b, t])
            logp[b, t] = (np.float64(logits[b, t, tokens[b, t]]) - m) - lse  # eq. (log_softmax)
            acc += logp[b, t]                                   # eq. (factorization)
        seq_logp[b] = acc
    return logp, seq_logp


@njit(cache=True, parallel=True)
def _dense_logp_parallel(logits, tokens, mask):
    """``dense_logp`` with its rows spread over all of numba's threads (opt-in; same bits)."""
    B, T, V = logits.shape
    logp = np.zeros((B, T))                         # (B, T)
    for i in prange(B * T):
        b, t = i // T, i % T
        if mask[b, t] != 0.0:
            m, lse = _row_lse(logits[b, t])
            logp[b, t] = (np.float64(logits[b, t, tokens[b, t]]) - m) - lse  # eq. (log_softmax)
    seq_logp = np.zeros(B)                          # (B,), summed in the serial kernel's order
    for b in range(B):
        acc = 0.0
        for t in range(T):
            if mask[b, t] != 0.0:
                acc += logp[b, t]                   # eq. (factorization)
        seq_logp[b] = acc
    return logp, seq_logp


def _dense_backward(logits, tokens, mask, w, out=None):
    """dlogits (B, T, V) = w[b, t] * mask[b, t] * (onehot(y_bt) - softmax(logits[b, t])).

    dlogits has the dtype of logits (float64 or float32). ``out``: an optional C-contiguous
    (B, T, V) array of that dtype to write into (reuse it across steps). Without it the output is
    allocated here by NumPy, not inside the kernel: NumPy asks the kernel for transparent huge
    pages on large arrays, numba's allocator does not, and a fresh 32 MB output page-faulted
    in 4 KB pages cost twice the arithmetic (measured, see docs/performance.md).
    """
    if out is None:
        out = np.empty_like(logits)                 # (B, T, V)
    return _dense_backward_into(logits, tokens, mask, w, out)


def _dense_backward_parallel(logits, tokens, mask, w, out=None):
    """``dense_backward`` with its rows spread over all of numba's threads (opt-in; same bits)."""
    if out is None:
        out = np.empty_like(logits)                 # (B, T, V)
    return _dense_backward_parallel_into(logits, tokens, mask, w, out)


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
    """The kernel of ``dense_backward_parallel``: rows in prange."""
    B, T, V = logits.shape
    for i in prange(B * T):
        b, t = i // T, i % T
        if mask[b, t] == 0.0:
            out[b, t, :] = 0.0
        else:
            _row_grad(logits[b, t], tokens[b, t], w[b, t], out[b, t])
    return out


# ---------------------------------------------------------------- tabular policy theta (S, V)

@njit(cache=True)
def _visited_lse(theta, states, mask):
    """(visited (S,) bool, m (S,), lse (S,)) of each visited row: one logsumexp per state."""
    S = theta.shape[0]
    B, T = states.shape
    visited = np.zeros(S, dtype=np.bool_)
    for b in range(B):
        for t in range(T):
            if mask[b, t] != 0.0:
                visited[states[b, t]] = True
    m = np.zeros(S)                                 # (S,)
    lse = np.zeros(S)                               # (S,)
    for s in range(S):
        if visited[s]:
            m[s], lse[s] = _row_lse(theta[s])
    return visited, m, lse


@njit(cache=True)
def _tabular_logp(theta, states, tokens, mask):
    """logp (B, T), seq_logp (B,) for the softmax table theta (S, V) at states (B, T).

    Each visited state's logsumexp is computed once: work S_visited * V + B * T.
    """
    B, T = states.shape
    visited, m, lse = _visited_lse(theta, states, mask)
    logp = np.zeros((B, T))                         # (B, T)
    seq_logp = np.zeros(B)                          # (B,)
    for b in range(B):
        acc = 0.0
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            s = states[b, t]
            logp[b, t] = (theta[s, tokens[b, t]] - m[s]) - lse[s]  # eq. (log_softmax)
            acc += logp[b, t]                                  # eq. (factorization)
        seq_logp[b] = acc
    return logp, seq_logp


@njit(cache=True)
def _tabular_backward(theta, states, tokens, mask, w):
    """dtheta (S, V): the scatter of w[b, t] (onehot(y_bt) - pi(.|s_bt)) into row s_bt.

    Per state: c[s] = sum of w over its real tokens and the onehot part accumulate in one pass
    over the tokens; then dtheta[s] = onehot_part - c[s] * softmax(theta[s]) for visited rows
    only (eq. (logsoftmax_grad) summed over the tokens sharing s). Unvisited rows stay 0.
    """
    S, V = theta.shape
    B, T = states.shape
    visited, m, lse = _visited_lse(theta, states, mask)
    dtheta = np.zeros((S, V))                       # (S, V)
    c = np.zeros(S)                                 # (S,)
    for b in range(B):
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            s = states[b, t]
            dtheta[s, tokens[b, t]] += w[b, t]      # onehot part
            c[s] += w[b, t]
    for s in range(S):
        if visited[s]:
            cs, ms, ls = c[s], m[s], lse[s]
            row = theta[s]
            for v in range(V):
                dtheta[s, v] -= cs * _exp((row[v] - ms) - ls)   # - c[s] * pi(v|s)
    return dtheta


@njit(cache=True)
def _tabular_logp_per_token(theta, states, tokens, mask):
    """``tabular_logp`` recomputing the logsumexp at every token (B * T * V work)."""
    B, T = states.shape
    logp = np.zeros((B, T))                         # (B, T)
    seq_logp = np.zeros(B)                          # (B,)
    for b in range(B):
        acc = 0.0
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            s = states[b, t]
            m, lse = _row_lse(theta[s])
            logp[b, t] = (theta[s, tokens[b, t]] - m) - lse
            acc += logp[b, t]
        seq_logp[b] = acc
    return logp, seq_logp


@njit(cache=True)
def _tabular_backward_per_token(theta, states, tokens, mask, w):
    """``tabular_backward`` scattering a full softmax row per token (B * T * V work)."""
    S, V = theta.shape
    B, T = states.shape
    dtheta = np.zeros((S, V))                       # (S, V)
    for b in range(B):
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            s = states[b, t]
            row = theta[s]
            m, lse = _row_lse(row)
            wb = w[b, t]
            for v in range(V):
                dtheta[s, v] -= wb * _exp((row[v] - m) - lse)
            dtheta[s, tokens[b, t]] += wb
    return dtheta


# ---------------------------------------------------------------- group advantages on r (N, K)

@njit(cache=True, fastmath=_FM)
def _group_shift(r, n):
    """(r0, mean_d) with the group mean = r0 + mean_d, r0 = r[n, 0], mean_d = mean(r[n] - r0):
    K = 1 and equal rewards give a deviation of exactly 0.0 (a plain sum / K can miss r by an
    ulp). The sum may be reassociated (it vectorizes): a sum of exact zeros is 0 in any order."""
    K = r.shape[1]
    r0 = r[n, 0]
    acc = 0.0
    for k in range(K):
        acc += r[n, k] - r0
    return r0, acc / K


@njit(cache=True, fastmath=_FM)
def _sum_sq(d):
    """sum_k d_k^2 of a row, reassociated so that it vectorizes."""
    ss = 0.0
    for k in range(d.shape[0]):
        ss += d[k] * d[k]
    return ss


@njit(cache=True)
def _group_centred(r):
    """A = r - mean_k r: (N, K) -> (N, K). K = 1 or equal rewards: exactly 0.0."""
    N, K = r.shape
    out = np.empty((N, K))                          # (N, K)
    for n in range(N):
        r0, mean_d = _group_shift(r, n)
        for k in range(K):
            out[n, k] = (r[n, k] - r0) - mean_d     # eq. (pg_centred)
    return out


@njit(cache=True)
def _group_standardized(r, eps, ddof):
    """A = (r - mean) / (std + eps), std with ``ddof`` (0 population, 1 Bessel): (N, K).

    A zero deviation gives exactly 0.0 (so K = 1 and equal rewards give 0.0 even at eps = 0);
    with K - ddof <= 0 the std is taken as 0. The deviations are written once, the per-group
    1 / (std + eps) is taken in a loop over groups (sqrt and division vectorize across groups,
    not within one), then the deviations are scaled in place.
    """
    N, K = r.shape
    out = np.empty((N, K))                          # (N, K) deviations, then advantages
    ss = np.empty(N)                                # (N,)
    for n in range(N):
        r0, mean_d = _group_shift(r, n)
        for k in range(K):
            out[n, k] = (r[n, k] - r0) - mean_d
        ss[n] = _sum_sq(out[n])
    dof = max(K - ddof, 1)                          # K - ddof <= 0 only at K = 1: ss = 0
    for n in range(N):
        denom = np.sqrt(ss[n] / dof) + eps
        ss[n] = 1.0 / denom if denom > 0.0 else 0.0  # denom = 0 only when every d is 0
    for n in range(N):
        c = ss[n]
        for k in range(K):
            out[n, k] = out[n, k] * c               # eq. (pg_normalized)
    return out


@njit(cache=True)
def _group_loo(r):
    """A_k = r_k - mean of the other K - 1 rewards = K / (K - 1) * (r_k - mean): (N, K).

    The caller guarantees K >= 2 (leave-one-out at K = 1 is undefined). Equal rewards: 0.0.
    """
    N, K = r.shape
    c = K / (K - 1.0)
    out = np.empty((N, K))                          # (N, K)
    for n in range(N):
        r0, mean_d = _group_shift(r, n)
        for k in range(K):
            out[n, k] = ((r[n, k] - r0) - mean_d) * c  # eq. (pg_loo)
    return out


# ---------------------------------------------------------------- chunks of rows (R, V)

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
        logp[i] = (np.float64(z[i, tokens[i]]) - m) - lse      # eq. (log_softmax)
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
    row = np.empty(z.shape[1], dtype=z.dtype)                 # (V,) scratch, stays in cache
    for i in range(z.shape[0]):
        _row_grad(z[i], tokens[i], w[i], row)                 # eq. (logsoftmax_grad)
        z[i, :] = row
    return z
# --8<-- [end:chunk_kernels]

# ---------------------------------------------------------------- public entry points, validated
#
# The jitted cores above (``_name``) trust their inputs: an id out of range reads outside the
# table, a shape mismatch can crash the interpreter. The library's inner loops call them on
# arrays they built and checked themselves. The public functions below keep the cores' names
# and signatures and check, in O(B T) (or O(N K)) work beside the O(B T V) of the kernel:
# types, dtypes, shapes, C-contiguity, 0/1 masks, ids in range at the real positions, finite
# weights; then they check the result (a NaN or +inf logit, or an all -inf row, gives a NaN
# that reaches the gathered entry of every output row, so an O(B T) look at those entries
# finds it). A bad input is a ValueError/TypeError naming the argument; nothing non-finite is
# returned except the documented logp = -inf of a gathered -inf logit.

@njit(cache=True)
def _all_finite(x):
    """True iff every entry of the 1-D array x is finite (no fastmath: NaN must stay NaN)."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(cache=True)
def _bad_mask(mask):
    """Number of mask entries that are neither 0.0 nor 1.0 (one pass, O(B T))."""
    n = 0
    for b in range(mask.shape[0]):
        for t in range(mask.shape[1]):
            x = mask[b, t]
            n += not (x == 0.0 or x == 1.0)
    return n


@njit(cache=True)
def _bad_id(ids, mask, high):
    """Flat position b * T + t of the first id outside [0, high) at a real position
    (mask != 0), or -1 if none (O(B T))."""
    for b in range(ids.shape[0]):
        for t in range(ids.shape[1]):
            if mask[b, t] != 0.0 and (ids[b, t] < 0 or ids[b, t] >= high):
                return b * ids.shape[1] + t
    return -1


@njit(cache=True)
def _bad_value(x, mask):
    """True iff a real position (mask != 0) of x (B, T) is NaN or +-inf (O(B T))."""
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            if mask[b, t] != 0.0 and not np.isfinite(x[b, t]):
                return True
    return False


@njit(cache=True)
def _nan_at(x, mask):
    """True iff a real position (mask != 0) of x (B, T) is NaN (O(B T))."""
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            if mask[b, t] != 0.0 and x[b, t] != x[b, t]:
                return True
    return False


@njit(cache=True)
def _nan_row(out, tokens, mask):
    """True iff a real row of out (B, T, V) has a NaN or +inf at its own token (O(B T))."""
    for b in range(out.shape[0]):
        for t in range(out.shape[1]):
            if mask[b, t] != 0.0:
                g = out[b, t, tokens[b, t]]
                if g != g or g == np.inf:
                    return True
    return False


def _array(x, name, ndim, dtypes):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array of dtype "
                        f"{' or '.join(np.dtype(d).name for d in dtypes)}, got {type(x).__name__}")
    if x.dtype not in [np.dtype(d) for d in dtypes]:
        raise TypeError(f"{name}: expected dtype {' or '.join(np.dtype(d).name for d in dtypes)}"
                        f" (convert with np.ascontiguousarray(x, dtype=...)), got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, "
                         f"got shape {x.shape}")
    if 0 in x.shape:
        raise ValueError(f"{name}: expected every axis of length >= 1, got shape {x.shape}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array (np.ascontiguousarray), "
                         f"got strides {x.strides}")
    return x


def _batch(tokens, mask, shape, tokens_name="tokens"):
    """Check mask (B, T) float64 0/1 and tokens (B, T) int64 against ``shape``; returns the
    mask (0 at padding, 1 at the real positions)."""
    _array(mask, "mask", 2, (np.float64,))
    if mask.shape != shape:
        raise ValueError(f"mask: expected shape {shape}, got {mask.shape}")
    if _bad_mask(mask):
        raise ValueError("mask: expected only 0.0 and 1.0")
    _array(tokens, tokens_name, 2, (np.int64,))
    if tokens.shape != shape:
        raise ValueError(f"{tokens_name}: expected shape {shape} (that of mask), got {tokens.shape}")
    return mask


def _ids(x, real, name, high):
    at = _bad_id(x, real, high)
    if at != -1:
        raise ValueError(f"{name}: expected ids in [0, {high}) at the real positions, got "
                         f"{x.flat[at]} at {np.unravel_index(at, x.shape)}")


def _weights(w, real, shape):
    _array(w, "w", 2, (np.float64,))
    if w.shape != shape:
        raise ValueError(f"w: expected shape {shape} (that of mask), got {w.shape}")
    if _bad_value(w, real):
        raise ValueError("w: expected finite weights at the real positions, got NaN or inf")


def _dense_args(logits, tokens, mask):
    _array(logits, "logits", 3, (np.float64, np.float32))
    B, T, V = logits.shape
    real = _batch(tokens, mask, (B, T))
    _ids(tokens, real, "tokens", V)
    return real


def _no_nan_rows(logp, real, name):
    """Raise naming ``name`` if a real position's log-prob is NaN (a -inf one is a gathered
    -inf logit, documented; +inf cannot come from a row with a finite entry)."""
    if _nan_at(logp, real):
        raise ValueError(f"{name}: expected rows with a finite entry and no NaN or +inf at the "
                         f"real positions, got a row whose result is NaN")


def exp_array(x):
    """The vectorizable `_exp` over an array (for tests and benchmarks).

    Args:
        x: `(n,)` float64, C-contiguous, no NaN.

    Returns:
        `(n,)` float64 `exp(x)`.

    Raises:
        ValueError: `x` holds a NaN or is not a 1-D float64 array.
    """
    _array(x, "x", 1, (np.float64,))
    if np.isnan(x).any():
        raise ValueError("x: expected no NaN")
    return _exp_array(x)


def exp32_array(x):
    """The float32 `_exp32` over an array (for tests and benchmarks).

    Args:
        x: `(n,)` float32, C-contiguous, no NaN.

    Returns:
        `(n,)` float32 `exp(x)`.

    Raises:
        ValueError: `x` holds a NaN or is not a 1-D float32 array.
    """
    _array(x, "x", 1, (np.float32,))
    if np.isnan(x).any():
        raise ValueError("x: expected no NaN")
    return _exp32_array(x)


def dense_logp(logits, tokens, mask):
    """Token and sequence log-probs from dense logits, fused: no `(B, T, V)` temporary.

    Validated; the trusted core is `_dense_logp`.

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.

    Returns:
        `(logp, seq_logp)`: `logp` `(B, T)` float64, 0.0 at padding; `seq_logp` `(B,)`, the
        masked sum over `t`.
    """
    real = _dense_args(logits, tokens, mask)
    logp, seq = _dense_logp(logits, tokens, mask)
    _no_nan_rows(logp, real, "logits")
    return logp, seq


def dense_logp_parallel(logits, tokens, mask):
    """`dense_logp` with its rows spread over all of numba's threads (opt-in; same bits).

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.

    Returns:
        `(logp (B, T), seq_logp (B,))`, bit for bit those of `dense_logp`.
    """
    real = _dense_args(logits, tokens, mask)
    logp, seq = _dense_logp_parallel(logits, tokens, mask)
    _no_nan_rows(logp, real, "logits")
    return logp, seq


def _out_check(out, logits):
    if not isinstance(out, np.ndarray) or out.dtype != logits.dtype or out.shape != logits.shape:
        raise ValueError(f"out: expected a {logits.dtype} array of shape {logits.shape}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} of shape "
                         f"{getattr(out, 'shape', None)}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out: expected a writeable C-contiguous array")
    if np.shares_memory(out, logits):
        raise ValueError("out: expected an array not sharing memory with logits")


def _dense_backward_checked(core, logits, tokens, mask, w, out):
    real = _dense_args(logits, tokens, mask)
    _weights(w, real, mask.shape)
    if out is None:
        out = np.empty_like(logits)                 # (B, T, V)
    else:
        _out_check(out, logits)
    core(logits, tokens, mask, w, out)
    if _nan_row(out, tokens, real):
        raise ValueError("logits: expected rows with a finite entry and no NaN or +inf at the "
                         "real positions, got a row whose result is NaN")
    return out


def dense_backward(logits, tokens, mask, w, out=None):
    """The backward of `dense_logp`: `dlogits[b, t] = w[b, t] mask[b, t] (onehot(y_bt) - softmax(logits[b, t]))`.

    Without `out` the output is allocated here by NumPy, not inside the kernel: NumPy asks the
    kernel for transparent huge pages on large arrays, numba's allocator does not, and a fresh
    32 MB output page-faulted in 4 KB pages cost twice the arithmetic (measured on the page
    "Performance"). Validated; the trusted core is `_dense_backward_into`. A call that raises
    after the kernel ran, on a NaN row, has written `out`.

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`, finite at real positions.
        out: optional C-contiguous `(B, T, V)` array of the logits' dtype to write into (reuse
            it across steps).

    Returns:
        `(B, T, V)` `dlogits`, of the logits' dtype (`out` itself when given).
    """
    return _dense_backward_checked(_dense_backward_into, logits, tokens, mask, w, out)


def dense_backward_parallel(logits, tokens, mask, w, out=None):
    """`dense_backward` with its rows spread over all of numba's threads (opt-in; same bits).

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`.
        out: optional `(B, T, V)` output array of the logits' dtype.

    Returns:
        `(B, T, V)` `dlogits`, bit for bit those of `dense_backward`.
    """
    return _dense_backward_checked(_dense_backward_parallel_into, logits, tokens, mask, w, out)


def dense_backward_into(logits, tokens, mask, w, out):
    """`dense_backward` writing into a given output array.

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`.
        out: C-contiguous `(B, T, V)` array of the logits' dtype.

    Returns:
        `out`, holding `dlogits`.
    """
    return _dense_backward_checked(_dense_backward_into, logits, tokens, mask, w, out)


def dense_backward_parallel_into(logits, tokens, mask, w, out):
    """`dense_backward_parallel` writing into a given output array.

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`.
        out: C-contiguous `(B, T, V)` array of the logits' dtype.

    Returns:
        `out`, holding `dlogits`.
    """
    return _dense_backward_checked(_dense_backward_parallel_into, logits, tokens, mask, w, out)


def _tabular_args(theta, states, tokens, mask):
    _array(theta, "theta", 2, (np.float64,))
    S, V = theta.shape
    _array(states, "states", 2, (np.int64,))
    real = _batch(tokens, mask, states.shape)
    _ids(states, real, "states", S)
    _ids(tokens, real, "tokens", V)
    return real


def _tabular_fwd(core, theta, states, tokens, mask):
    real = _tabular_args(theta, states, tokens, mask)
    logp, seq = core(theta, states, tokens, mask)
    _no_nan_rows(logp, real, "theta")
    return logp, seq


def _tabular_bwd(core, theta, states, tokens, mask, w):
    real = _tabular_args(theta, states, tokens, mask)
    _weights(w, real, mask.shape)
    dtheta = core(theta, states, tokens, mask, w)
    g = dtheta[states, tokens]                                    # (B, T) each token's own entry
    if _bad_value(g, real):
        with np.errstate(over="ignore"):
            name = "w" if not np.isfinite(np.abs(w[real != 0]).sum()) else "theta"
        raise ValueError(f"{name}: expected {'weights whose sums are finite' if name == 'w' else 'rows with a finite entry and no NaN or +inf'}, "
                         f"got a non-finite gradient")
    return dtheta


def tabular_logp(theta, states, tokens, mask):
    """Token and sequence log-probs of a softmax table at the visited states.

    Each visited state's logsumexp is computed once: work `S_visited V + B T`. Validated; the
    trusted core is `_tabular_logp`.

    Args:
        theta: `(S, V)` float64 logits, C-contiguous.
        states: `(B, T)` int64 state ids in `[0, S)` at real positions.
        tokens: `(B, T)` int64 token ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.

    Returns:
        `(logp, seq_logp)`: `(B, T)`, 0.0 at padding, and `(B,)`.
    """
    return _tabular_fwd(_tabular_logp, theta, states, tokens, mask)


def tabular_logp_per_token(theta, states, tokens, mask):
    """`tabular_logp` recomputing the logsumexp at every token (`B T V` work; for the benchmark).

    Args:
        theta: `(S, V)` float64 logits.
        states: `(B, T)` int64 state ids.
        tokens: `(B, T)` int64 token ids.
        mask: `(B, T)` float64 0/1.

    Returns:
        `(logp (B, T), seq_logp (B,))`.
    """
    return _tabular_fwd(_tabular_logp_per_token, theta, states, tokens, mask)


def tabular_backward(theta, states, tokens, mask, w):
    """`dtheta`: the scatter of `w[b, t] (onehot(y_bt) - pi(. | s_bt))` into row `s_bt`.

    Validated; the trusted core is `_tabular_backward`.

    Args:
        theta: `(S, V)` float64 logits, C-contiguous.
        states: `(B, T)` int64 state ids in `[0, S)` at real positions.
        tokens: `(B, T)` int64 token ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, right-padded.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`, finite at real positions.

    Returns:
        `(S, V)` float64 `dtheta`.
    """
    return _tabular_bwd(_tabular_backward, theta, states, tokens, mask, w)


def tabular_backward_per_token(theta, states, tokens, mask, w):
    """`tabular_backward` scattering a full softmax row per token (`B T V` work; for the benchmark).

    Args:
        theta: `(S, V)` float64 logits.
        states: `(B, T)` int64 state ids.
        tokens: `(B, T)` int64 token ids.
        mask: `(B, T)` float64 0/1.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`.

    Returns:
        `(S, V)` float64 `dtheta`.
    """
    return _tabular_bwd(_tabular_backward_per_token, theta, states, tokens, mask, w)


def _group_checked(core, r, *args):
    _array(r, "r", 2, (np.float64,))
    out = core(r, *args)
    if not _all_finite(out.reshape(-1)):
        raise ValueError("r: expected finite rewards whose group deviations are finite, got a "
                         "non-finite advantage")
    return out


def group_centred(r):
    """Centred group advantages `A = R - mean_k R`; `K = 1` or equal rewards give 0.0.

    Args:
        r: `(N, K)` float64 rewards, C-contiguous.

    Returns:
        `(N, K)` advantages.
    """
    return _group_checked(_group_centred, r)


def group_standardized(r, eps, ddof):
    """Standardized group advantages `A = (R - mean) / (std + xi)`.

    Validated; the trusted core is `_group_standardized`.

    Args:
        r: `(N, K)` float64 rewards, C-contiguous.
        eps: the stabilizer `xi`, a finite float `>= 0`.
        ddof: the int 0 (population std) or 1 (Bessel).

    Returns:
        `(N, K)` advantages.
    """
    eps = float_scalar(eps, "eps", low=0.0)
    ddof = int_scalar(ddof, "ddof", low=0, high=1)
    return _group_checked(_group_standardized, r, eps, ddof)


def group_loo(r):
    """Leave-one-out advantages `A_k = R_k - mean of the other K - 1 rewards`.

    Args:
        r: `(N, K)` float64 rewards with `K >= 2`, C-contiguous.

    Returns:
        `(N, K)` advantages.

    Raises:
        ValueError: `K < 2`, naming `r`.
    """
    _array(r, "r", 2, (np.float64,))
    if r.shape[1] < 2:
        raise ValueError(f"r: expected K >= 2 (leave-one-out at K = 1 is undefined), got "
                         f"shape {r.shape}")
    return _group_checked(_group_loo, r)

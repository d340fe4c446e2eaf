"""Numba kernels of the group advantages on rewards r (N, K), for examples/benchmark.py only.

The library's advantages (`minirl_lm.pg.advantages`) are NumPy: an objective file imports NumPy
and the checks only, and at the sizes RL uses (N K rewards a step, not N K V logits) the
advantages are a small share of a step. These kernels measure what compiling them would buy
(the benchmark's section `adv`); their NumPy twins are beside them and
tests/examples/test_benchmark.py holds the two equal (and the edge cases bit for bit: K = 1 and
equal rewards give exactly 0.0).

The group sums are reassociated (they vectorize); a sum of exact zeros stays exactly 0, so equal
rewards still give a zero advantage bit for bit. Module-level `@njit(cache=True)` functions
calling each other directly, as in `minirl_lm/kernels/` (the cache trap). The cores trust their
input: C-contiguous float64 r (N, K) with N, K >= 1 (K >= 2 for `_group_loo`).
"""

import numpy as np
from numba import njit

_FM = {"nsz", "arcp", "contract", "afn", "reassoc"}  # as minirl_lm/kernels/rows.py: no nnan/ninf


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
    out = np.empty((N, K))  # (N, K)
    for n in range(N):
        r0, mean_d = _group_shift(r, n)
        for k in range(K):
            out[n, k] = (r[n, k] - r0) - mean_d  # eq. (pg_centred)
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
    out = np.empty((N, K))  # (N, K) deviations, then advantages
    ss = np.empty(N)  # (N,)
    for n in range(N):
        r0, mean_d = _group_shift(r, n)
        for k in range(K):
            out[n, k] = (r[n, k] - r0) - mean_d
        ss[n] = _sum_sq(out[n])
    dof = max(K - ddof, 1)  # K - ddof <= 0 only at K = 1: ss = 0
    for n in range(N):
        denom = np.sqrt(ss[n] / dof) + eps
        ss[n] = 1.0 / denom if denom > 0.0 else 0.0  # denom = 0 only when every d is 0
    for n in range(N):
        c = ss[n]
        for k in range(K):
            out[n, k] = out[n, k] * c  # eq. (pg_normalized)
    return out


@njit(cache=True)
def _group_loo(r):
    """A_k = r_k - mean of the other K - 1 rewards = K / (K - 1) * (r_k - mean): (N, K).

    The caller guarantees K >= 2 (leave-one-out at K = 1 is undefined). Equal rewards: 0.0.
    """
    N, K = r.shape
    c = K / (K - 1.0)
    out = np.empty((N, K))  # (N, K)
    for n in range(N):
        r0, mean_d = _group_shift(r, n)
        for k in range(K):
            out[n, k] = ((r[n, k] - r0) - mean_d) * c  # eq. (pg_loo)
    return out


# ---------------------------------------------------------------- the NumPy twins


def np_centred(r):
    """A = r - mean_k r, eq. (pg_centred)."""
    return r - r.mean(axis=1, keepdims=True)


def np_standardized(r, eps=1e-8, ddof=0):
    """A = (r - mean) / (std + eps), eq. (pg_normalized)."""
    return (r - r.mean(axis=1, keepdims=True)) / (r.std(axis=1, ddof=ddof, keepdims=True) + eps)


def np_loo(r):
    """A_k = r_k - mean of the other K - 1 rewards, eq. (pg_loo)."""
    return r - (r.sum(axis=1, keepdims=True) - r) / (r.shape[1] - 1)

"""Group advantages on rewards r (N, K): centred, standardized, leave-one-out (temporary home)."""

import numpy as np
from numba import njit

from minirl_lm.kernels.rows import _FM


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

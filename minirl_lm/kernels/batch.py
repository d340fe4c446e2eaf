"""The joint outcome of a batch: per-prompt marginals of batch-statistic scalars, in one pass.

The kernel of `minirl_lm.exact.batch`. Prompt n's group takes outcome i_n (M_n of them) with
probability P[n, i_n]; the batch statistics are sums over the prompts of per-outcome stats
(`cnt`, `S1`, `S2`, `ntok`), and the update's scalars a, b, e are functions of those sums
(eq. (exact_batch_scalars) in `minirl_lm/exact/batch.py`). The kernel walks every joint outcome
once, with an odometer over the prompts, and accumulates

    W[n, f, i] = sum over joint outcomes with i_n = i of  prod_n' P[n', i_n'] * f(a, b, e)

for f in (a, b, e, a a, b b, e e, a b, a e, b e) (the first 3 only when `nf == 3`). NumPy twin:
`minirl_lm.exact.batch._marginals_numpy` (tested equal in tests/kernels/test_batch.py); the
kernel needs no array of the joint's size. The core trusts its input (the boundary is
`minirl_lm.exact.batch.batch_moments`).
"""

import numpy as np
from numba import njit

KINDS = ("none", "batch_std", "whiten")  # the scalar rules, by code 0, 1, 2


@njit(cache=True)
def _scalars(kind, token_mean, eps, cnt, S1, S2, ntok):
    """(a, b, e) of one joint outcome, eq. (exact_batch_scalars)."""
    z = 1.0 / max(ntok, 1.0) if token_mean else 1.0
    s, mu = 1.0, 0.0
    if kind == 1:  # batch std of the rewards, population
        var = max(S2 - S1 * S1 / cnt, 0.0) / cnt
        s = 1.0 / (np.sqrt(var) + eps)
    elif kind == 2:  # whitening over the tokens, ddof 1, eps under the root
        mu = S1 / max(cnt, 1.0)
        var = max(S2 - S1 * mu, 0.0) / max(cnt - 1.0, 1.0)
        s = 1.0 / np.sqrt(var + eps) if var > 0 else 0.0
    return z * s, z * s * mu, z


@njit(cache=True)
def _batch_marginals(P, stats, sizes, kind, token_mean, eps, nf):
    """W (N, nf, M_max) from P (N, M_max) and stats (N, 4, M_max) [cnt, S1, S2, ntok], padded."""
    N = sizes.shape[0]
    W = np.zeros((N, nf, P.shape[1]))
    idx = np.zeros(N, np.int64)
    vals = np.empty(9)
    total = 1
    for n in range(N):
        total *= sizes[n]
    for _ in range(total):
        p, cnt, S1, S2, nt = 1.0, 0.0, 0.0, 0.0, 0.0
        for n in range(N):
            i = idx[n]
            p = p * P[n, i]
            cnt += stats[n, 0, i]
            S1 += stats[n, 1, i]
            S2 += stats[n, 2, i]
            nt += stats[n, 3, i]
        if p != 0.0:
            a, b, e = _scalars(kind, token_mean, eps, cnt, S1, S2, nt)
            vals[0], vals[1], vals[2] = a, b, e
            vals[3], vals[4], vals[5] = a * a, b * b, e * e
            vals[6], vals[7], vals[8] = a * b, a * e, b * e
            for n in range(N):
                for f in range(nf):
                    W[n, f, idx[n]] += p * vals[f]
        n = N - 1  # the odometer: the last prompt turns fastest
        while n >= 0:
            idx[n] += 1
            if idx[n] < sizes[n]:
                break
            idx[n] = 0
            n -= 1
    return W

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
_FM = {"nsz", "contract", "reassoc"}  # sums reassociate (they vectorize); sqrt and division exact


@njit(cache=True, fastmath=_FM)
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


@njit(cache=True, fastmath=_FM)
def _batch_marginals(P, stats, sizes, kind, token_mean, eps, nf):
    """W (N, nf, M_max) from P (N, M_max) and stats (N, 4, M_max) [cnt, S1, S2, ntok], padded.

    An odometer over the outer prompts 0..N-2 keeps running prefix products and sums (only the
    levels that turned are recomputed); the last prompt is the inner loop, whose sum is added
    once to each outer prompt's entry: work ~2 nf per joint point, not N nf.
    """
    N = sizes.shape[0]
    L = N - 1  # the inner prompt
    W = np.zeros((N, nf, P.shape[1]))
    idx = np.zeros(N, np.int64)
    pre_p = np.ones(N + 1)  # pre_p[n]: product of P over prompts < n
    pre_s = np.zeros((N + 1, 4))  # pre_s[n]: stats summed over prompts < n
    vals = np.empty(9)
    acc = np.empty(9)
    outer = 1
    for n in range(L):
        outer *= sizes[n]
    level = 0  # the first level whose prefix is stale
    for _ in range(outer):
        for n in range(level, L):
            i = idx[n]
            pre_p[n + 1] = pre_p[n] * P[n, i]
            for k in range(4):
                pre_s[n + 1, k] = pre_s[n, k] + stats[n, k, i]
        for f in range(nf):
            acc[f] = 0.0
        if pre_p[L] != 0.0:
            for i in range(sizes[L]):
                p = pre_p[L] * P[L, i]
                if p == 0.0:
                    continue
                a, b, e = _scalars(
                    kind,
                    token_mean,
                    eps,
                    pre_s[L, 0] + stats[L, 0, i],
                    pre_s[L, 1] + stats[L, 1, i],
                    pre_s[L, 2] + stats[L, 2, i],
                    pre_s[L, 3] + stats[L, 3, i],
                )
                vals[0], vals[1], vals[2] = a, b, e
                vals[3], vals[4], vals[5] = a * a, b * b, e * e
                vals[6], vals[7], vals[8] = a * b, a * e, b * e
                for f in range(nf):
                    x = p * vals[f]
                    W[L, f, i] += x
                    acc[f] += x
            for n in range(L):
                for f in range(nf):
                    W[n, f, idx[n]] += acc[f]
        n = L - 1  # the odometer over the outer prompts: the last one turns fastest
        while n >= 0:
            idx[n] += 1
            if idx[n] < sizes[n]:
                break
            idx[n] = 0
            n -= 1
        level = max(n, 0)
    return W

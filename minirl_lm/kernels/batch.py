"""Batch-statistic scalars summed over the other prompts: the kernels of `minirl_lm.exact.batch`.

Prompt n's group takes outcome i_n with probability P[n, i_n]; the batch statistics are sums over
the prompts of per-outcome stats (`cnt`, `S1`, `S2`, `ntok`), and the update's scalars a, b, e
are functions of those sums (eq. (exact_batch_scalars) in `minirl_lm/exact/batch.py`). Two
kernels accumulate

    W[n, f, i] = sum over joint outcomes with i_n = i of  prod_n' P[n', i_n'] * f(a, b, e)

for f in (a, b, e, a a, b b, e e, a b, a e, b e) (the first 3 only when `nf == 3`):

- `_batch_marginals` walks every joint outcome once, with an odometer over the prompts (NumPy
  twin: `minirl_lm.exact.batch._marginals_numpy`);
- `_grid_marginals` sums one prompt's statistic values against the law of the other prompts'
  summed statistics, eq. (exact_batch_conv): `h[f, j] = sum_k pz[k] f(V[:, j] + Z[:, k])`
  (NumPy twin: `minirl_lm.exact.batch._grid_numpy`).

Both evaluate the scalars a row at a time (`_scalar_rows`; the walk's first moment fuses them
with its sums, `_walk_row`) in branch-free loops that LLVM vectorizes, with the formulas of
`_scalars` operation for operation. Tested equal to their twins
in tests/kernels/test_batch.py. The cores trust their input (the boundary is
`minirl_lm.exact.batch.batch_moments`).
"""

import numpy as np
from numba import njit

KINDS = ("none", "batch_std", "whiten")  # the scalar rules, by code 0, 1, 2
# sums reassociate (they vectorize); no "contract": an FMA in S2 - S1 mu would keep the rounding of
# S2's squares, a variance of ~1e-18 (so a scale of ~1/sqrt(eps)) where the twin has exactly 0
_FM = {"nsz", "reassoc"}


@njit(cache=True, fastmath=_FM, error_model="numpy")
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


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _scalar_rows(kind, token_mean, eps, base, st, m, out):
    """out[:, i] = (a, b, e) of the statistics `base + st[:, i]`, i < m; base (4,), st (4, >= m).

    `_scalars` for a row of batches: the same operations in the same order (the sums
    `base[k] + st[k, i]` are the walk's), the branches on kind and token_mean outside the loops.
    """
    c0, a0, q0, n0 = base[0], base[1], base[2], base[3]
    if kind == 0:
        for i in range(m):
            out[0, i] = 1.0
            out[1, i] = 0.0
    elif kind == 1:
        for i in range(m):
            cnt = c0 + st[0, i]
            S1 = a0 + st[1, i]
            var = max((q0 + st[2, i]) - S1 * S1 / cnt, 0.0) / cnt
            out[0, i] = 1.0 / (np.sqrt(var) + eps)
            out[1, i] = 0.0
    else:
        for i in range(m):
            cnt = c0 + st[0, i]
            S1 = a0 + st[1, i]
            mu = S1 / max(cnt, 1.0)
            var = max((q0 + st[2, i]) - S1 * mu, 0.0) / max(cnt - 1.0, 1.0)
            out[0, i] = 1.0 / np.sqrt(var + eps) if var > 0 else 0.0
            out[1, i] = mu
    if token_mean:
        for i in range(m):
            z = 1.0 / max(n0 + st[3, i], 1.0)
            a = z * out[0, i]
            out[0, i] = a
            out[1, i] = a * out[1, i]
            out[2, i] = z
    else:
        for i in range(m):
            out[1, i] = out[0, i] * out[1, i]
            out[2, i] = 1.0


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _accumulate(w, sc, m, nf, row, acc):
    """row[f, i] += w[i] f_i and acc[f] += sum_i w[i] f_i, f_i the fields of sc[:, i] (a, b, e)."""
    a0 = a1 = a2 = 0.0
    for i in range(m):
        x0, x1, x2 = w[i] * sc[0, i], w[i] * sc[1, i], w[i] * sc[2, i]
        row[0, i] += x0
        row[1, i] += x1
        row[2, i] += x2
        a0 += x0
        a1 += x1
        a2 += x2
    acc[0], acc[1], acc[2] = a0, a1, a2
    if nf == 9:
        a3 = a4 = a5 = a6 = a7 = a8 = 0.0
        for i in range(m):
            a, b, e = sc[0, i], sc[1, i], sc[2, i]
            x3, x4, x5 = w[i] * (a * a), w[i] * (b * b), w[i] * (e * e)
            x6, x7, x8 = w[i] * (a * b), w[i] * (a * e), w[i] * (b * e)
            row[3, i] += x3
            row[4, i] += x4
            row[5, i] += x5
            row[6, i] += x6
            row[7, i] += x7
            row[8, i] += x8
            a3 += x3
            a4 += x4
            a5 += x5
            a6 += x6
            a7 += x7
            a8 += x8
        acc[3], acc[4], acc[5], acc[6], acc[7], acc[8] = a3, a4, a5, a6, a7, a8


@njit(cache=True, fastmath=_FM, error_model="numpy", inline="always")
def _add(i, w, a, b, e, row):
    """row[:, i] += w[i] (a, b, e); returns the three terms."""
    x0, x1, x2 = w[i] * a, w[i] * b, w[i] * e
    row[0, i] += x0
    row[1, i] += x1
    row[2, i] += x2
    return x0, x1, x2


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _walk_row(kind, token_mean, eps, base, st, m, w, row, acc):
    """`_scalar_rows` then `_accumulate` with nf = 3, in one pass: the same numbers (a, b, e)
    by the same operations, added to row[:, i] and summed into acc[:3] without a store between
    (one loop per kind, so that each vectorizes)."""
    c0, a0, q0, n0 = base[0], base[1], base[2], base[3]
    t0 = t1 = t2 = 0.0
    if kind == 1:
        for i in range(m):
            cnt = c0 + st[0, i]
            S1 = a0 + st[1, i]
            var = max((q0 + st[2, i]) - S1 * S1 / cnt, 0.0) / cnt
            s = 1.0 / (np.sqrt(var) + eps)
            e = 1.0 / max(n0 + st[3, i], 1.0) if token_mean else 1.0
            a = e * s if token_mean else s
            x0, x1, x2 = _add(i, w, a, a * 0.0, e, row)
            t0 += x0
            t1 += x1
            t2 += x2
    elif kind == 2:
        for i in range(m):
            cnt = c0 + st[0, i]
            S1 = a0 + st[1, i]
            mu = S1 / max(cnt, 1.0)
            var = max((q0 + st[2, i]) - S1 * mu, 0.0) / max(cnt - 1.0, 1.0)
            s = 1.0 / np.sqrt(var + eps) if var > 0 else 0.0
            e = 1.0 / max(n0 + st[3, i], 1.0) if token_mean else 1.0
            a = e * s if token_mean else s
            x0, x1, x2 = _add(i, w, a, a * mu, e, row)
            t0 += x0
            t1 += x1
            t2 += x2
    else:
        for i in range(m):
            e = 1.0 / max(n0 + st[3, i], 1.0) if token_mean else 1.0
            a = e * 1.0 if token_mean else 1.0
            x0, x1, x2 = _add(i, w, a, a * 0.0, e, row)
            t0 += x0
            t1 += x1
            t2 += x2
    acc[0], acc[1], acc[2] = t0, t1, t2


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _sum_fields(w, sc, m, nf, acc):
    """acc[f] = sum_i w[i] f_i, f_i the fields of sc[:, i] (a, b, e): `_accumulate` without a row."""
    a0 = a1 = a2 = 0.0
    for i in range(m):
        a0 += w[i] * sc[0, i]
        a1 += w[i] * sc[1, i]
        a2 += w[i] * sc[2, i]
    acc[0], acc[1], acc[2] = a0, a1, a2
    if nf == 9:
        a3 = a4 = a5 = a6 = a7 = a8 = 0.0
        for i in range(m):
            a, b, e = sc[0, i], sc[1, i], sc[2, i]
            a3 += w[i] * (a * a)
            a4 += w[i] * (b * b)
            a5 += w[i] * (e * e)
            a6 += w[i] * (a * b)
            a7 += w[i] * (a * e)
            a8 += w[i] * (b * e)
        acc[3], acc[4], acc[5], acc[6], acc[7], acc[8] = a3, a4, a5, a6, a7, a8


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _batch_marginals(P, stats, sizes, kind, token_mean, eps, nf):
    """W (N, nf, M_max) from P (N, M_max) and stats (N, 4, M_max) [cnt, S1, S2, ntok], padded.

    An odometer over the outer prompts 0..N-2 keeps running prefix products and sums (only the
    levels that turned are recomputed); the last prompt is the inner loop, whose sum is added
    once to each outer prompt's entry: work ~2 nf per joint point, not N nf.
    """
    N = sizes.shape[0]
    L = N - 1  # the inner prompt
    m = sizes[L]
    W = np.zeros((N, nf, P.shape[1]))
    idx = np.zeros(N, np.int64)
    pre_p = np.ones(N + 1)  # pre_p[n]: product of P over prompts < n
    pre_s = np.zeros((N + 1, 4))  # pre_s[n]: stats summed over prompts < n
    sc = np.empty((3, m))  # (a, b, e) of each inner outcome
    w = np.empty(m)
    acc = np.zeros(9)
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
        if pre_p[L] != 0.0:
            for i in range(m):
                w[i] = pre_p[L] * P[L, i]
            if nf == 3:
                _walk_row(kind, token_mean, eps, pre_s[L], stats[L], m, w, W[L], acc)
            else:
                _scalar_rows(kind, token_mean, eps, pre_s[L], stats[L], m, sc)
                _accumulate(w, sc, m, nf, W[L], acc)
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


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _grid_marginals(V, Z, pz, kind, token_mean, eps, nf):
    """h (nf, u): h[f, j] = sum_k pz[k] f(V[:, j] + Z[:, k]), eq. (exact_batch_conv).

    V (4, u): one prompt's distinct statistic values; Z (4, nz), pz (nz,): the law of the other
    prompts' summed statistics. Work u nz evaluations of the scalars.
    """
    u, nz = V.shape[1], Z.shape[1]
    h = np.zeros((nf, u))
    sc = np.empty((3, nz))
    acc = np.zeros(9)
    base = np.empty(4)
    for j in range(u):
        for k in range(4):
            base[k] = V[k, j]
        _scalar_rows(kind, token_mean, eps, base, Z, nz, sc)
        _sum_fields(pz, sc, nz, nf, acc)
        for f in range(nf):
            h[f, j] = acc[f]
    return h

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/exact/groups.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/exact/groups.py -o DIR
# Files named below (tests/, examples/, docs/, scripts/) are files of the minirl_lm repository,
# and a page named below (the page "...") is a page of the minirl_lm documentation site.
#
# MIT License
#
# Copyright (c) 2026 the minirl_lm authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

"""Groups of K i.i.d. responses: the multinomial law of a group and the moments of its update.

K responses drawn i.i.d. from `p` over R responses form a multiset; its probability is

    P(counts n_1..n_R) = K! / (n_1! ... n_R!) prod_r p_r^{n_r}                     (exact_multinomial)

so an expectation over a group is a finite sum over the `C(R + K - 1, K)` multisets, not over
the `R^K` ordered draws. A group's update is linear in per-token coefficients on fixed basis
vectors (the scores of `minirl_lm.exact.scores`, or any other per-token vectors, such as the
entropy's gradient): with `C_m` the coefficients of multiset `m` summed onto its distinct
responses and `Phi` the basis stacked as rows,

    E[g] = (sum_m P_m C_m) Phi,    E|g|^2 = sum_m P_m C_m (Phi Phi^T) C_m^T        (exact_group)

(the Gram matrix `Phi Phi^T` is computed once). `iid_moments` takes the other road for a
bilinear update `g = sum_{k,j} c[k, j] R_j S_k`: its second moment depends only on which of the
four indices coincide, so it needs no list of groups at all.

    $ python examples/atlas.py --K 4    # every configuration's exact moments at K = 4
"""

import functools
import itertools
import math
import numbers

import numpy as np


__all__ = ["multisets", "group_law", "group_moments", "group_updates", "ordered_groups",
    "iid_moments"]


@functools.lru_cache(maxsize=64)
def _multisets(R, K):
    Y = np.array(list(itertools.combinations_with_replacement(range(R), K)), dtype=np.int64)  # (M, K)
    counts = np.stack([(Y == y).sum(1) for y in range(R)], 1)  # (M, R)
    coef = np.array([math.factorial(K) / np.prod([math.factorial(c) for c in row]) for row in counts])  # (M,)
    for a in (Y, counts, coef):
        a.setflags(write=False)  # cached: shared by every caller
    return Y, counts, coef


def multisets(R, K):
    """Every multiset of K responses out of R, and its multinomial coefficient.

    Args:
        R: number of distinct responses, >= 1.
        K: group size, >= 1.

    Returns:
        `(Y, counts, coef)`: `(M, K)` int64 sorted index tuples, `(M, R)` int64 counts, `(M,)`
        float64 `K! / prod n_r!`, `M = C(R + K - 1, K)`. Read-only (cached).
    """
    R, K = law_args(R, K)
    return _multisets(R, K)


def group_law(p, K):
    """The multisets of K i.i.d. draws from each row of `p`, and their probabilities.

    Args:
        p: `(R,)` or `(N, R)` probabilities, each row summing to 1.
        K: group size, >= 1.

    Returns:
        `(Y, P)`: `(M, K)` int64 multisets and `(M,)` or `(N, M)` float64 probabilities,
        eq. (exact_multinomial).
    """
    p, K = law_args(p, K, probs=True)
    return _group_law(p, K)


def _group_law(p, K):
    Y, _, coef = _multisets(p.shape[-1], K)
    return Y, coef * np.prod(p[..., Y], axis=-1)  # (M,) or (N, M), eq. (exact_multinomial)


def group_moments(P, Y, coefs, bases, second=True):
    """`E[g]` and `E|g|^2` of a group's update `g = sum_f sum_{k,t} coefs[f][m, k, t] bases[f][Y[m, k], t]`.

    Eq. (exact_group). `coefs[f]` gives, for multiset `m`, the coefficient of slot `k`'s token `t`
    on basis family `f` (for instance the score and the entropy's gradient); equal responses in a
    group share their basis vectors, so the coefficients are summed onto distinct responses first.

    Args:
        P: `(M,)` probabilities of the multisets (summing to at most 1: a law conditioned on an
            event that may fail, such as a filter, sums below 1).
        Y: `(M, K)` int response indices in `[0, R)`.
        coefs: a list of F `(M, K, T)` finite coefficient arrays.
        bases: a list of F `(R, T, D)` finite basis arrays.
        second: also compute `E|g|^2` (else it is returned as 0.0).

    Returns:
        `(mean, second)`: `(D,)` float64 `E[g]` and the float `E|g|^2`.
    """
    P, Y, coefs, bases = group_args(P, Y, coefs, bases, second)
    return _group_moments(P, Y, coefs, bases, second)


def _stack(Y, coefs, bases):
    """The coefficients summed onto distinct responses, C (M, F R T), and the basis Phi (F R T, D)."""
    R, T, D = bases[0].shape
    onehot = (Y[:, :, None] == np.arange(R)).astype(float)  # (M, K, R)
    C = np.concatenate([np.einsum("mkr,mkt->mrt", onehot, c).reshape(len(Y), R * T) for c in coefs], 1)
    return C, np.concatenate([b.reshape(R * T, D) for b in bases], 0)


def group_updates(Y, coefs, bases):
    """Every multiset's update on each basis family: `(F, M, D)`, eq. (exact_group).

    Family f's update of multiset m is `sum_{k,t} coefs[f][m, k, t] bases[f][Y[m, k], t]`; the
    families are kept apart (sum over the first axis for the whole update), so one call gives
    the several parts of an update (the advantage-weighted scores, the plain scores, a
    penalty). Summed slot by slot over the gathered basis `(M, K, T, D)`, not through the Gram
    form of `group_moments`: for small bases as fast, and the summation order of the atlas's
    first exact code, which its rounding-set fixed points reproduce bit for bit.

    Args:
        Y: `(M, K)` int response indices in `[0, R)`.
        coefs: a list of F `(M, K, T)` finite coefficient arrays.
        bases: a list of F `(R, T, D)` finite basis arrays.

    Returns:
        `(F, M, D)` float64.
    """
    _, Y, coefs, bases = group_args(_NONE, Y, coefs, bases)
    return _group_updates(Y, coefs, bases)


def _group_updates(Y, coefs, bases):
    return np.stack([np.einsum("mkt,mktd->md", c, b[Y]) for c, b in zip(coefs, bases)])  # (F, M, D)


def _group_moments(P, Y, coefs, bases, second=True):
    C, Phi = _stack(Y, coefs, bases)
    mean = (P @ C) @ Phi  # (D,) eq. (exact_group)
    if not second:
        return mean, 0.0
    CG = C @ (Phi @ Phi.T)  # (M, F R T)
    return mean, float(P @ (CG * C).sum(1))


def ordered_groups(logq, prompt, K):
    """Every ordered K-tuple of responses of one prompt, and its probability under i.i.d. draws.

    Args:
        logq: `(B,)` log-probabilities of the responses (sequence log-probs `log q(y|x)`), each
            prompt's probabilities summing to 1; `-inf` for a response that cannot occur.
        prompt: `(B,)` int prompt index of each response, in `[0, N)`.
        K: tuple size, >= 1.

    Returns:
        `(idx, prob)`: `(O, K)` int64 response indices (prompt-major, then lexicographic) and
        `(O,)` float64 `exp(sum_k logq[idx_k])`; `O = sum_x R_x^K`.
    """
    logq, prompt, K = ordered_args(logq, prompt, K)
    idx = []
    for x in range(int(prompt.max()) + 1):
        rows = np.flatnonzero(prompt == x)
        grids = np.meshgrid(*[rows] * K, indexing="ij")
        idx.append(np.stack([g.ravel() for g in grids], 1))
    idx = np.concatenate(idx, 0)  # (O, K)
    return idx, np.exp(logq[idx].sum(axis=1))


def iid_moments(p, R, Sc, c):
    """Exact `E[g]` and `E|g|^2` of `g = sum_{k,j} c[k, j] R_j S_k` over K i.i.d. draws.

    `E[R_j R_j' S_k . S_k']` depends only on which of `(k, j, k', j')` coincide: each block of
    equal indices is one draw, contributing `E[R^n]`, `E[R^n S]` or `E[R^n |S|^2]`, and the
    blocks are independent. No group is listed: work `K^4 + 16 M D`.

    Args:
        p: `(M,)` probabilities of the outcomes of one draw, summing to 1.
        R: `(M,)` finite scalar of each outcome (a reward).
        Sc: `(M, D)` finite vector of each outcome (a score).
        c: `(K, K)` finite coefficients.

    Returns:
        `(first, second)`: `(D,)` float64 `E[g]` and the float `E|g|^2`.
    """
    p, R, Sc, c = iid_args(p, R, Sc, c)
    return _iid_moments(p, R, Sc, c)


def _iid_moments(p, R, Sc, c):
    K = c.shape[0]
    ER = lambda n: p @ R**n  # noqa: E731
    ERS = lambda n: (p * R**n) @ Sc  # noqa: E731
    ERSS = lambda n: (p * R**n) @ (Sc * Sc).sum(1)  # noqa: E731
    idx = np.stack(np.meshgrid(*[np.arange(K)] * 4, indexing="ij"), -1).reshape(-1, 4)
    coef = c[idx[:, 0], idx[:, 1]] * c[idx[:, 2], idx[:, 3]]  # slots: S_k, R_j, S_k', R_j'
    eq = (idx[:, :, None] == idx[:, None, :]).reshape(len(idx), 16) @ (1 << np.arange(16))
    second = 0.0
    for pat in np.unique(eq):
        rep = idx[np.argmax(eq == pat)]
        val, vecs = 1.0, []
        for lab in np.unique(rep):
            slots = np.flatnonzero(rep == lab)
            nS, nR = np.isin(slots, (0, 2)).sum(), np.isin(slots, (1, 3)).sum()
            if nS == 0:
                val *= ER(nR)
            elif nS == 1:
                vecs.append(ERS(nR))
            else:
                val *= ERSS(nR)
        second += coef[eq == pat].sum() * val * (vecs[0] @ vecs[1] if vecs else 1.0)
    ES = p @ Sc
    first = np.trace(c) * ERS(1) + (c.sum() - np.trace(c)) * ER(1) * ES
    return first, float(second)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`
# ----------------------------------------------------------------------------------------------


def flag(x, name):
    """Return ``x`` if it is a bool (Python or NumPy), else a TypeError naming ``name``."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool (True or False), got {_describe(x)}")
    return bool(x)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/exact/checks.py
#   The boundary of the exact engine: one bundle call per public function of `minirl_lm/exact/`.
# ----------------------------------------------------------------------------------------------


_NONE = object()  # an argument a bundle's caller does not have (None is a bad value)


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def law_args(p, K, probs=False):
    """A group size K >= 1 and either a response count R >= 1 or `(R,)`/`(N, R)` probabilities."""
    if probs:
        p = prob_table(p, "p")
        if p.ndim not in (1, 2):
            raise ValueError(f"p: expected a (R,) or (N, R) array, got {_describe(p)}")
    else:
        p = int_scalar(p, "R", low=1)
    return p, int_scalar(K, "K", low=1, high=64)


def group_args(P, Y, coefs, bases, second=True):
    """`(M,)` multiset probabilities (sum <= 1; `_NONE`: no law), `(M, K)` response ids, F `(M,
    K, T)` coefficient and F `(R, T, D)` basis arrays."""
    if P is not _NONE:  # group_updates: no law
        P = float_array(P, "P", ndim=1)
        nonempty(P, "P")
        if (P < 0).any() or P.sum() > 1.0 + 1e-9:
            raise ValueError(
                f"P: expected probabilities >= 0 summing to at most 1, got min {P.min()}, sum {P.sum()}"
            )
    for name, seq in (("coefs", coefs), ("bases", bases)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise TypeError(f"{name}: expected a non-empty list of arrays, got {_describe(seq)}")
    if len(coefs) != len(bases):
        raise ValueError(f"coefs: expected one array per basis ({len(bases)}), got {len(coefs)}")
    bases = [float_array(b, "bases", ndim=3) for b in bases]
    R, T, D = bases[0].shape
    if any(b.shape != (R, T, D) for b in bases):
        raise ValueError(f"bases: expected arrays of one shape {(R, T, D)}, got {[b.shape for b in bases]}")
    Y = int_array(Y, "Y", ndim=2, low=0, high=R)
    nonempty(Y, "Y")
    if P is not _NONE and Y.shape[0] != P.size:
        raise ValueError(f"Y: expected {P.size} rows (one per entry of P), got {Y.shape[0]}")
    coefs = [float_array(c, "coefs", shape=Y.shape + (T,)) for c in coefs]
    flag(second, "second")
    return P, Y, coefs, bases


def ordered_args(logq, prompt, K):
    """`(B,)` log-probabilities (-inf allowed), `(B,)` prompt ids whose probabilities each sum to
    1, K >= 1."""
    logq = float_array(logq, "logq", ndim=1, allow_neginf=True)
    nonempty(logq, "logq")
    prompt = int_array(prompt, "prompt", shape=logq.shape, low=0)
    with np.errstate(over="ignore"):
        mass = np.bincount(prompt, np.exp(logq))
    if not np.allclose(mass, 1.0, rtol=0.0, atol=1e-9):
        raise ValueError(f"logq: expected probabilities summing to 1 per prompt, got sums {mass}")
    return logq, prompt, int_scalar(K, "K", low=1, high=8)


def iid_args(p, R, Sc, c):
    """`(M,)` probabilities, `(M,)` scalars, `(M, D)` vectors, `(K, K)` coefficients."""
    p = prob_table(p, "p", ndim=1)
    R = float_array(R, "R", shape=p.shape)
    Sc = float_array(Sc, "Sc", ndim=2, shape=(p.size, None))
    c = float_array(c, "c", ndim=2)
    if c.shape[0] != c.shape[1] or c.shape[0] > 16 or c.size == 0:
        raise ValueError(f"c: expected a square (K, K) array with 1 <= K <= 16, got {_describe(c)}")
    return p, R, Sc, c


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def int_scalar(x, name, low=None, high=None):
    """Return ``x`` as a Python int in ``[low, high]`` (bounds inclusive)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_describe(x)}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {x}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(
            f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
            f"to {float(s.ravel()[int(np.argmax(bad))])!r}"
        )
    return p


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:  # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"  # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")

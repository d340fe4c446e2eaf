# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/embed.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/embed.py -o DIR
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

r"""Token and position embeddings: the network's first layer, forward and backward.

    x[b, i] = wte[ids[b, i]] + wpe[i]                                   eq. (embed)
    dwte[v] = sum over (b, i) with ids[b, i] = v of dx[b, i]            eq. (embed_grad)
    dwpe[i] = sum_b dx[b, i]                                            eq. (embed_grad)

A row of `wte` gets the sum of the gradients of every position that holds its token (a
scatter-add: tokens repeat); `wpe` rows past the sequence's length get zero.
"""

import numpy as np


__all__ = ["embed_forward", "forward", "embed_backward", "backward"]


def embed_forward(wte, wpe, ids):
    """Token plus position embedding.

    Args:
        wte: (V, d) token embeddings.
        wpe: (max_len, d) position embeddings.
        ids: (B, L) int token ids in [0, V), L <= max_len.

    Returns:
        ``(x, cache)``: x (B, L, d) float64 and the cache `embed_backward` reads.
    """
    return forward(*embed_args(wte, wpe, ids))


def forward(wte, wpe, ids):
    """`embed_forward` without checks."""
    L = ids.shape[1]
    x = wte[ids]  # (B, L, d)
    x += wpe[:L]  # eq. (embed)
    return x, ("embed", x.shape, ids, wte.shape[0], wpe.shape[0])


def embed_backward(dy, cache):
    """Gradients of the embedding tables.

    Args:
        dy: (B, L, d) gradient of the loss in the embedding's output.
        cache: what `embed_forward` returned beside its output.

    Returns:
        ``(dwte, dwpe)``, (V, d) and (max_len, d).
    """
    return backward(*grad_args(dy, cache, "embed"))


def backward(dy, cache):
    """`embed_backward` without checks."""
    _, (B, L, d), ids, V, max_len = cache
    dwte = np.zeros((V, d))
    np.add.at(dwte, ids.ravel(), dy.reshape(-1, d))  # eq. (embed_grad): scatter-add over positions
    dwpe = np.zeros((max_len, d))
    dwpe[:L] = dy.sum(axis=0)  # eq. (embed_grad)
    return dwte, dwpe


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/nn/checks.py
#   The boundary of the network part: one bundle call per public function of `minirl_lm/nn/`.
# ----------------------------------------------------------------------------------------------


def _floats(x, name, ndim):
    """A finite float64 array with ``ndim`` axes, none of them empty."""
    arr = float_array(x, name, ndim=ndim)
    nonempty(arr, name)
    return arr


def _dim(name, arr, axis, n, what):
    if arr.shape[axis] != n:
        raise ValueError(f"{name}: expected {what} = {n} on axis {axis}, got shape {arr.shape}")


def _cache(cache, name, kind):
    """A cache returned by the forward ``kind``: (kind, output shape, ...)."""
    if not (isinstance(cache, tuple) and len(cache) > 2 and cache[0] == kind):
        raise TypeError(f"{name}: expected the cache returned by {kind}_forward, got {_describe(cache)}")
    return cache


def grad_args(dy, cache, kind):
    """A backward's (dy, cache): the cache of forward ``kind``, dy of the forward output's shape."""
    cache = _cache(cache, "cache", kind)
    dy = float_array(dy, "dy", shape=cache[1])
    return dy, cache


# -- embed.py
def embed_args(wte, wpe, ids):
    wte, wpe = _floats(wte, "wte", 2), _floats(wpe, "wpe", 2)
    _dim("wpe", wpe, 1, wte.shape[1], "d (from wte)")
    ids = int_array(ids, "ids", ndim=2, low=0, high=wte.shape[0])
    nonempty(ids, "ids")
    if ids.shape[1] > wpe.shape[0]:
        raise ValueError(f"ids: expected at most max_len = {wpe.shape[0]} positions, got {ids.shape[1]}")
    return wte, wpe, ids


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


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


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


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

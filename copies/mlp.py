# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/mlp.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/mlp.py -o DIR
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

r"""The MLP of a block: a linear map up, GELU, a linear map down (no biases).

    u = x W1,  a = gelu(u),  y = a W2                                        eq. (mlp)
    gelu(u) = u/2 (1 + tanh(c (u + 0.044715 u^3))),  c = sqrt(2/pi)          eq. (gelu)

Backward:

    dW2 = a^T dy,   da = dy W2^T                                             eq. (mlp_grad)
    gelu'(u) = (1 + t)/2 + u/2 (1 - t^2) c (1 + 3 0.044715 u^2),  t = tanh(.)   eq. (gelu_grad)
    du = da gelu'(u),   dW1 = x^T du,   dx = du W1^T                         eq. (mlp_grad)

The tanh form of GELU is GPT-2's (Hendrycks and Gimpel 2016); the forward caches `u`, `t`, `a`
(as llm.c caches the pre-activation and the activation). `mlp_forward` and `mlp_backward` check
their arguments and run `forward` and `backward`, the trusted cores the block calls.

The GELU and its derivative run over blocks of `CHUNK` entries, in place: each operation of the
formula reads and writes a block that stays in the core's cache (a whole (B L, 4d) array does not
at d = 256, and every fresh temporary of that size is written to cold memory); the backward
writes `du` over `da`. Elementwise, so the numbers are the same bit for bit as on whole arrays.
"""

import numpy as np


__all__ = ["mlp_forward", "forward", "mlp_backward", "backward"]


_C = np.sqrt(2.0 / np.pi)
CHUNK = 16384  # entries of a block of the elementwise GELU: 128 KiB of float64


def _blocks(n_rows, width):
    """Row slices covering n_rows rows in blocks of about CHUNK entries."""
    rows = max(1, CHUNK // width)
    return [slice(i, i + rows) for i in range(0, n_rows, rows)]


def mlp_forward(x, W1, W2):
    """The block's MLP.

    Args:
        x: (B, L, d) input.
        W1: (d, m) up projection.
        W2: (m, d) down projection.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `mlp_backward` reads.
    """
    return forward(*mlp_args(x, W1, W2))


def forward(x, W1, W2):
    """`mlp_forward` without checks."""
    u = matmul(x, W1)  # (B, L, m)
    t, a = np.empty_like(u), np.empty_like(u)
    u2, t2, a2 = (z.reshape(-1, z.shape[-1]) for z in (u, t, a))
    for r in _blocks(*u2.shape):
        ub, tb, ab = u2[r], t2[r], a2[r]
        np.multiply(ub, ub, out=tb)  # t = tanh(c (u + 0.044715 u^3))
        tb *= 0.044715
        tb += 1.0
        tb *= ub
        tb *= _C
        np.tanh(tb, out=tb)
        np.add(tb, 1.0, out=ab)  # a = u/2 (1 + t)
        ab *= ub
        ab *= 0.5  # eq. (gelu)
    return matmul(a, W2), ("mlp", x.shape, x, u, t, a, W1, W2)  # eq. (mlp)


def mlp_backward(dy, cache):
    """Gradients of the MLP.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `mlp_forward`.

    Returns:
        ``(dx, dW1, dW2)``.
    """
    return backward(*grad_args(dy, cache, "mlp"))


def backward(dy, cache):
    """`mlp_backward` without checks."""
    _, _, x, u, t, a, W1, W2 = cache
    dW2 = weight_grad(a, dy)  # (m, d) eq. (mlp_grad)
    du = matmul(dy, W2.T)  # (B, L, m): da, then du in place
    u2, t2, du2 = (z.reshape(-1, z.shape[-1]) for z in (u, t, du))
    work = np.empty((2, max(1, CHUNK // u2.shape[1]), u2.shape[1]))
    for r in _blocks(*u2.shape):
        ub, tb = u2[r], t2[r]
        g, w = work[0, : ub.shape[0]], work[1, : ub.shape[0]]
        # eq. (gelu_grad) as (1 + t)/2 (1 + u (1 - t) c (1 + 3 0.044715 u^2))
        np.multiply(ub, ub, out=g)
        g *= 3 * 0.044715 * _C
        g += _C  # c (1 + 3 0.044715 u^2)
        g *= ub
        g *= np.subtract(1.0, tb, out=w)
        g += 1.0
        g *= np.add(tb, 1.0, out=w)
        g *= 0.5  # gelu'(u)
        du2[r] *= g  # dloss/du = da gelu'(u)
    return matmul(du, W1.T), weight_grad(x, du), dW2  # eq. (mlp_grad)


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/nn/matmul.py
#   The two matrix products of every layer, shaped so that each is one BLAS call.
# ----------------------------------------------------------------------------------------------


def matmul(x, W):
    """(..., k) @ (k, n) as one 2-D product."""
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(x.shape[:-1] + (W.shape[1],))


def weight_grad(x, dy):
    """The weight's gradient of `matmul`: x^T dy summed over every leading axis."""
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return x2.T @ dy2 if x2.shape[1] <= dy2.shape[1] else (dy2.T @ x2).T


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


def mlp_args(x, W1, W2):
    x = _floats(x, "x", 3)
    W1 = _floats(W1, "W1", 2)
    _dim("W1", W1, 0, x.shape[2], "d (from x)")
    return x, W1, float_array(W2, "W2", shape=(W1.shape[1], x.shape[2]))


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

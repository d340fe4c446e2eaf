# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/norm.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/norm.py -o DIR
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

r"""RMSNorm: each position's vector divided by its root mean square, times a learned gain.

    r = (mean_j x_j^2 + eps)^(-1/2)                 the reciprocal rms       eq. (rms)
    xhat_j = x_j r,   y_j = g_j xhat_j                                       eq. (rmsnorm)

Backward, for one position (d entries), with `dxhat_j = dy_j g_j`:

    dg_j = sum over positions of dy_j xhat_j                                 eq. (rmsnorm_dg)
    dr/dx_j = -x_j r^3 / d
    dx_j = r dxhat_j - xhat_j r mean_k(dxhat_k xhat_k)                       eq. (rmsnorm_dx)

(Zhang and Sennrich 2019; no mean subtraction, no bias.) The forward caches `xhat` and `r`, what
the backward needs (llm.c caches LayerNorm's mean and rstd the same way). `rmsnorm_forward` and
`rmsnorm_backward` check their arguments and run `forward` and `backward`, the trusted cores the
other layers call.
"""

import numbers

import numpy as np


__all__ = ["rmsnorm_forward", "forward", "rmsnorm_backward", "backward"]


def rmsnorm_forward(x, g, eps=1e-5):
    """RMSNorm over the last axis.

    Args:
        x: (B, L, d) input.
        g: (d,) gain.
        eps: > 0, added to the mean square.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `rmsnorm_backward` reads.
    """
    return forward(*norm_args(x, g, eps))


def forward(x, g, eps):
    """`rmsnorm_forward` without checks."""
    y = x * x  # (B, L, d) a work buffer, then the output
    r = 1.0 / np.sqrt(y.mean(axis=-1, keepdims=True) + eps)  # (B, L, 1) eq. (rms)
    xhat = x * r  # (B, L, d)
    return np.multiply(xhat, g, out=y), ("rmsnorm", x.shape, xhat, r, g)  # eq. (rmsnorm)


def rmsnorm_backward(dy, cache):
    """Gradients of RMSNorm.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `rmsnorm_forward`.

    Returns:
        ``(dx, dg)``: (B, L, d) and (d,).
    """
    return backward(*grad_args(dy, cache, "rmsnorm"))


def backward(dy, cache):
    """`rmsnorm_backward` without checks."""
    _, _, xhat, r, g = cache
    work = dy * xhat  # (B, L, d)
    dg = work.sum(axis=(0, 1))  # (d,) eq. (rmsnorm_dg)
    dx = dy * g  # (B, L, d) dxhat, then dx in place
    m = np.multiply(dx, xhat, out=work).mean(axis=-1, keepdims=True)
    dx -= np.multiply(xhat, m, out=work)
    dx *= r  # eq. (rmsnorm_dx)
    return dx, dg


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/nn/checks.py
#   The boundary of the network part: one bundle call per public function of `minirl_lm/nn/`.
# ----------------------------------------------------------------------------------------------


def _floats(x, name, ndim):
    """A finite float64 array with ``ndim`` axes, none of them empty."""
    arr = float_array(x, name, ndim=ndim)
    nonempty(arr, name)
    return arr


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


# -- norm.py, attention.py, mlp.py
def norm_args(x, g, eps):
    x = _floats(x, "x", 3)
    g = float_array(g, "g", shape=(x.shape[2],))
    return x, g, float_scalar(eps, "eps", 0.0, low_open=True)


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


def float_scalar(x, name, low=None, high=None, low_open=False):
    """Return ``x`` as a finite Python float, ``>= low`` (``> low`` if low_open), ``<= high``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_describe(x)}")
    x = _float(x, name, "a finite number")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name}: expected a number {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected a number <= {high}, got {x}")
    return x


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


def _float(x, name, expected):
    """A checked real number as a finite Python float (an int beyond float64 is not finite)."""
    try:
        x = float(x)
    except OverflowError:
        raise ValueError(
            f"{name}: expected {expected}, got an integer of {int(x).bit_length()} bits, beyond float64"
        ) from None
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected {expected}, got {x}")
    return x

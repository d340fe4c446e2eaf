# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/value.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/value.py -o DIR
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

r"""The value head: a linear map from the final-norm hidden state to one scalar per position.

PPO's critic shares the policy's trunk: the hidden state `h_t` that gives the next-token
distribution at the state `s_t = (x, y_<t)` gives its value too,

    v(s_t) = h_t . w + c                     w (d,), c (1,)                 eq. (value_head)

Backward, for a loss with `dv = dloss/dv (B, T)`:

    dw = sum_{b,t} dv[b, t] h[b, t],   dc = sum_{b,t} dv[b, t]
    dh[b, t] = dv[b, t] w                                                    eq. (value_grad)

In the model the trunk receives the LM head's `dh` and this one, added: the policy's loss and the
value loss are one loss of the shared parameters (eq. (model_grad)). The forward caches `h` and
`w`, what the backward needs.
"""

import numpy as np


__all__ = ["value_forward", "forward", "value_backward", "backward"]


def value_forward(h, w, c):
    """Values of every position.

    Args:
        h: (B, L, d) hidden states (the final norm's output).
        w: (d,) weights.
        c: (1,) bias.

    Returns:
        ``(v, cache)``: v (B, L) and the cache `value_backward` reads.
    """
    return forward(*value_args(h, w, c))


def forward(h, w, c):
    """`value_forward` without checks."""
    return h @ w + c[0], ("value", h.shape[:2], h, w)  # (B, L) eq. (value_head)


def value_backward(dy, cache):
    """Gradients of the value head.

    Args:
        dy: (B, L) gradient of the loss in the values, `dv`.
        cache: from `value_forward`.

    Returns:
        ``(dh, dw, dc)``: (B, L, d), (d,) and (1,).
    """
    return backward(*grad_args(dy, cache, "value"))


def backward(dv, cache):
    """`value_backward` without checks."""
    _, _, h, w = cache
    dw = np.einsum("bl,bld->d", dv, h)  # (d,) eq. (value_grad)
    dc = np.array([dv.sum()])  # (1,)
    dh = dv[:, :, None] * w  # (B, L, d)
    return dh, dw, dc


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


# -- value.py
def value_args(h, w, c):
    h = _floats(h, "h", 3)
    return h, float_array(w, "w", shape=(h.shape[2],)), float_array(c, "c", shape=(1,))


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

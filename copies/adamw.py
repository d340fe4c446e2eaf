# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/adamw.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/adamw.py -o DIR
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

r"""AdamW by hand: Adam's moment estimates with the weight decay decoupled from them.

For each parameter array `p` with gradient `g`, at step `n = 1, 2, ...`:

    m <- beta1 m + (1 - beta1) g,   u <- beta2 u + (1 - beta2) g^2           eq. (adam_moments)
    mhat = m / (1 - beta1^n),   uhat = u / (1 - beta2^n)                     eq. (adam_bias)
    p <- p - lr (mhat / (sqrt(uhat) + eps) + weight_decay p)                 eq. (adamw)

(Kingma and Ba 2015; Loshchilov and Hutter 2019: the decay multiplies `lr` but not the
adaptive scale. PyTorch's `AdamW` decays first, `p <- p (1 - lr wd)`, then takes the Adam step
from the decayed `p`; the two agree to first order in `lr wd`, and exactly at `wd = 0`.)
"""

import numbers

import numpy as np


__all__ = ["AdamW"]


class AdamW:
    """The optimizer's state for one dict of parameters, updated in place by `step`.

    Args:
        params: dict of float64 arrays (a model's ``params``), updated in place.
        lr: step size >= 0.
        beta1: the first moment's decay, in [0, 1].
        beta2: the second moment's decay, in [0, 1].
        eps: > 0, added to the root of the second moment.
        weight_decay: >= 0, decoupled.
    """

    def __init__(self, params, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = adamw_args(
            params, lr, beta1, beta2, eps, weight_decay
        )
        self.params = params
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.u = {k: np.zeros_like(v) for k, v in params.items()}
        self.n = 0

    def step(self, grads):
        """One AdamW step.

        Args:
            grads: dict with the keys of ``params``, each array of its parameter's shape.
        """
        grads = adamw_grads(self.params, grads)  # checked whole before the first write
        self.n += 1
        b1, b2 = self.beta1, self.beta2
        c1, c2 = 1.0 - b1**self.n, 1.0 - b2**self.n
        for k, p in self.params.items():
            g = grads[k]
            self.m[k] = b1 * self.m[k] + (1.0 - b1) * g  # eq. (adam_moments)
            self.u[k] = b2 * self.u[k] + (1.0 - b2) * g * g  # eq. (adam_moments)
            step = (self.m[k] / c1) / (np.sqrt(self.u[k] / c2) + self.eps)  # eq. (adam_bias)
            p -= self.lr * (step + self.weight_decay * p)  # eq. (adamw)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/nn/checks.py
#   The boundary of the network part: one bundle call per public function of `minirl_lm/nn/`.
# ----------------------------------------------------------------------------------------------


# -- adamw.py
def adamw_args(params, lr, beta1, beta2, eps, weight_decay):
    if not isinstance(params, dict) or not params:
        raise TypeError(f"params: expected a non-empty dict of float64 arrays, got {_describe(params)}")
    for k, v in params.items():
        if not (isinstance(v, np.ndarray) and v.dtype == np.float64):
            raise TypeError(f"params: expected float64 arrays (updated in place), got {_describe(v)} at {k!r}")
    return (
        float_scalar(lr, "lr", 0.0),
        float_scalar(beta1, "beta1", 0.0, 1.0),
        float_scalar(beta2, "beta2", 0.0, 1.0),
        float_scalar(eps, "eps", 0.0, low_open=True),
        float_scalar(weight_decay, "weight_decay", 0.0),
    )


def adamw_grads(params, grads):
    """grads: a dict with the keys of params, each finite and of its parameter's shape."""
    if not isinstance(grads, dict) or set(grads) != set(params):
        raise TypeError(f"grads: expected a dict with the keys of params, got {_describe(grads)}")
    return {k: float_array(grads[k], "grads", shape=params[k].shape) for k in params}


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

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/core/logprob.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/core/logprob.py -o DIR
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

r"""The one primitive: token log-probs, their masked sum, and the one derivative.

Every objective of the chapter is a function of per-token log-probs, and every gradient reaches
the policy through one derivative. This file is the NumPy reference for both; the Numba kernels
(`minirl_lm.kernels`) are tested equal to it.

Factorization. Transitions are deterministic (concatenation), so a response's probability is the
product of its next-token probabilities:

```text
log pi(y | x) = sum_{t=1}^{|y|} log pi(y_t | x, y_<t)                 eq. (factorization)
```

In a padded batch, `seq_logp[b] = sum_t mask[b, t] logp[b, t]`: a masked *sum*. Dividing by the
length instead (`masked_mean`) is a different quantity, not a normalization of the same one.

Log-softmax. With logits `z` (one row of `V` entries) and `m = max_v z_v`, the log-sum-exp is
`m + log sum_v exp(z_v - m)`: `m` is subtracted inside every exponential and added back once, so

```text
log softmax(z)_y = z_y - m - log sum_v exp(z_v - m)                   eq. (log_softmax)
```

(the shift changes nothing mathematically and keeps every `exp` in `(0, 1]`; `-inf` entries give
`exp(-inf) = 0`; `m` is finite because a row must have a finite entry).

Its gradient. Write `p = softmax(z)`, `p_v = exp(z_v) / sum_u exp(z_u)`. Then

```text
d/dz_v [z_y - log sum_u exp(z_u)] = 1[v = y] - exp(z_v) / sum_u exp(z_u)
                                  = 1[v = y] - p_v                    eq. (logsoftmax_grad)
```

so the backward of `logp[b, t]` with upstream gradient `dlogp[b, t]` is
`dlogits[b, t, :] = dlogp[b, t] mask[b, t] (onehot(y_bt) - p)`.

Edge cases, defined and tested: padding positions get `logp == 0.0` exactly and a zero gradient
(whatever `dlogp` holds there); a token whose logit is `-inf` has probability 0 and log-prob
`-inf` where it is gathered, and its gradient is the finite limit `dlogp (1 - 0)` at that entry
(eq. (logsoftmax_grad) holds with `p_y = 0`), so the backward never produces NaN.

Demonstration: `python examples/logprob.py`.
"""

import numpy as np


__all__ = ["log_softmax", "masked_sum", "masked_mean", "token_logp", "token_logp_backward"]


def log_softmax(logits):
    """Stable log-softmax over the last axis, eq. (log_softmax).

    Args:
        logits: `(..., V)` logits; entries may be `-inf` (impossible tokens), every row needs
            at least one finite entry.

    Returns:
        `(..., V)` log-probabilities.
    """
    return _log_softmax(logits_any(logits))


def masked_sum(x, mask):
    """The masked sum `sum_t mask[b, t] x[b, t]`, eq. (factorization).

    Args:
        x: `(B, T)` values; padding entries are ignored, even if `-inf`.
        mask: `(B, T)` 0/1 float mask.

    Returns:
        `(B,)` sums over the real tokens of each row.
    """
    x, mask = values_mask(x, mask)
    return np.where(mask > 0, x, 0.0).sum(axis=-1)  # (B,)  eq. (factorization)


def masked_mean(x, mask):
    """The per-sequence mean over real tokens, `masked_sum / length`.

    A response of length 0 (all padding) gets 0.0: it contributes nothing.

    Args:
        x: `(B, T)` values; padding entries are ignored.
        mask: `(B, T)` 0/1 float mask.

    Returns:
        `(B,)` means over the real tokens of each row.
    """
    x, mask = values_mask(x, mask)
    lengths = mask.sum(axis=-1)  # (B,)
    total = np.where(mask > 0, x, 0.0).sum(axis=-1)  # (B,)
    return np.where(lengths > 0, total / np.maximum(lengths, 1.0), 0.0)


def token_logp(logits, tokens, mask):
    """Token log-probs and sequence log-probs of the sampled tokens.

    Args:
        logits: `(B, T, V)`; `logits[b, t - 1]` are the next-token logits at `s_t`, before
            emitting `tokens[b, t - 1] = y_t`.
        tokens: `(B, T)` int in `[0, V)` (padding positions too).
        mask: `(B, T)` 0/1 float mask, right-padded.

    Returns:
        `(logp, seq_logp)`: `logp` `(B, T)`, exactly 0.0 at padding; `seq_logp` `(B,)`, the
        masked sum over `t`.
    """
    logits, tokens, mask = logits_batch(logits, tokens, mask)
    logp_all = _log_softmax(logits)  # (B, T, V)
    logp = np.take_along_axis(logp_all, tokens[..., None], axis=-1)[..., 0]  # (B, T) gather
    logp = np.where(mask > 0, logp, 0.0)  # (B, T), 0.0 at padding
    seq_logp = logp.sum(axis=-1)  # (B,)  eq. (factorization)
    return logp, seq_logp


def token_logp_backward(logits, tokens, mask, dlogp):
    """The backward of `token_logp`'s `logp`, eq. (logsoftmax_grad).

    `dlogits[b, t, v] = dlogp[b, t] mask[b, t] (1[v = y_bt] - softmax(logits[b, t])_v)`.

    Args:
        logits: `(B, T, V)` logits, as given to `token_logp`.
        tokens: `(B, T)` int in `[0, V)`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        dlogp: `(B, T)` finite upstream gradient `g = dloss/dlogp`; padding entries are ignored.

    Returns:
        `(B, T, V)` `dlogits`.
    """
    logits, tokens, mask, dlogp = logits_batch(logits, tokens, mask, dlogp)
    w = np.where(mask > 0, dlogp, 0.0)  # (B, T)
    p = np.exp(_log_softmax(logits))  # (B, T, V), exp(-inf) = 0
    dlogits = -w[..., None] * p  # (B, T, V) eq. (logsoftmax_grad): -w p_v
    np.put_along_axis(
        dlogits, tokens[..., None], np.take_along_axis(dlogits, tokens[..., None], axis=-1) + w[..., None], axis=-1
    )  # eq. (logsoftmax_grad): +w 1[v = y]
    return dlogits


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def log_softmax_ops(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The boundary of the log-prob primitive, the tabular policy and the kernels' NumPy twins:
# ----------------------------------------------------------------------------------------------


_NO_DLOGP = object()


def logit_rows(z, name="logits"):
    """Raise unless the checked float array ``z`` has a last axis of V >= 1 entries and a finite
    entry in every row (a row of -inf only has no softmax)."""
    if z.ndim < 1 or z.shape[-1] == 0:
        raise ValueError(f"{name}: expected a last axis of V >= 1 entries, got shape {z.shape}")
    dead = ~np.isfinite(z).any(axis=-1)
    if dead.any():
        idx = tuple(int(i) for i in np.argwhere(dead)[0])
        raise ValueError(
            f"{name}: expected a finite entry in every row (-inf everywhere has no "
            f"softmax), got {int(dead.sum())} all -inf rows, the first at {idx}"
        )
    return z


def logits_any(logits):
    """Logits (..., V) of any shape, non-empty, -inf allowed, a finite entry in every row."""
    z = float_array(logits, "logits", allow_neginf=True)
    if z.size == 0:
        raise ValueError(f"logits: expected a non-empty array, got shape {z.shape}")
    return logit_rows(z)


def logits_batch(logits, tokens, mask, dlogp=_NO_DLOGP):
    """(logits (B, T, V), tokens (B, T) ids in [0, V), a 0/1 mask (B, T), holes allowed), and
    with ``dlogp`` also the upstream gradient (B, T), finite."""
    logits = logit_rows(float_array(logits, "logits", ndim=3, allow_neginf=True))
    B, T, V = logits.shape
    tokens = int_array(tokens, "tokens", ndim=2, shape=(B, T), low=0, high=V)
    mask = mask_array(mask, "mask", shape=(B, T))
    if dlogp is _NO_DLOGP:
        return logits, tokens, mask
    dlogp = float_array(dlogp, "dlogp", ndim=2)
    same_shape("tokens", tokens, "dlogp", dlogp)
    return logits, tokens, mask, dlogp


def values_mask(x, mask):
    """(x (B, T) float, -inf allowed; a 0/1 mask of its shape, holes allowed)."""
    x = float_array(x, "x", ndim=2, allow_neginf=True)
    return x, mask_array(mask, "mask", shape=x.shape)


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


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


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

_log_softmax = log_softmax_ops  # `from minirl_lm.core.ops import log_softmax as _log_softmax`

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/core/ops.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/core/ops.py -o DIR
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

"""The small pieces every objective shares, one definition each.

Trusted cores: each takes arguments already read at a public boundary (the declarations of
`minirl_lm.boundary`) and does the arithmetic only. The estimator files import them; their
standalone copies inline them.

- `AGGS`, `agg_weights`: the loss aggregations as per-token weights `w`, eq. (pg_agg) of the
  REINFORCE page (`minirl_lm.pg.reinforce.token_weights` is the checked entry).
- `adv_tokens`: one advantage per response, or one per token, as a `(B, T)` array.
- `log_ratio`: the masked log-ratio `logp - logp_other`, exactly 0 at padding.
- `sigmoid`, `log_softmax`: stable at both tails.
- `AGGREGATION`: the declaration of `agg` and `max_len` (`boundary`), shared by every loss.

Imports NumPy only.
"""

import numbers

import numpy as np


__all__ = ["AGGS", "AGGREGATION", "agg_weights", "adv_tokens", "log_ratio", "sigmoid", "log_softmax"]

AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant", "token_sum")


def agg_weights(mask, agg, max_len=None):
    """Per-token weights `w` (B, T) of aggregation `agg` over a checked 0/1 `mask` (B, T), eq.
    (pg_agg).

    Any 0/1 mask: a row's length `|y_b| = sum_t mask[b, t]` counts its trained tokens wherever
    they sit, so a row with holes (untrained positions inside it) gets the weights of its
    compacted row (holes removed, the trained tokens moved left in order), scattered back.
    `max_len` is the `T_max` of `"constant"` (default: the padded width `T`), already checked to
    be at least the largest `|y_b|`; compaction invariance holds at a given `max_len` (the
    default is the same for the compacted rows when they keep the width `T`)."""
    B, T = mask.shape
    if agg == "token_sum":
        return mask.copy()  # (B, T) no normalizer at all
    if agg == "seq_sum":
        return mask / B  # (B, T)
    lengths = mask.sum(axis=1, keepdims=True)  # (B, 1) |y_b|
    if agg == "token_mean":
        return mask / max(lengths.sum(), 1.0)  # (B, T)
    if agg == "seq_mean_token_mean":
        return mask / (B * np.maximum(lengths, 1.0))  # (B, T) length 0: 0 / 1
    return mask / (B * (T if max_len is None else max_len))  # (B, T) "constant"


def adv_tokens(adv, mask):
    """A checked advantage of shape (B,) or (B, T) as (B, T): a (B,) advantage is put on every
    column (padding is weighted 0 by the caller's `w`, or multiply by `mask`)."""
    if adv.ndim == 1:
        return np.broadcast_to(adv[:, None], mask.shape)  # (B, T)
    return adv


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# the declared boundary: from minirl_lm/boundary.py --------------------------------------------
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.


def number(low=-np.inf, high=np.inf, low_open=False, integer=False, high_open=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`; an end is
    excluded with `low_open` or `high_open`."""
    noun = "an integer" if integer else "a number"
    show = lambda b: f"{b}" if isinstance(b, int) else f"{b:g}"  # noqa: E731  an int bound in full
    bounds = [f"{'>' if low_open else '>='} {show(low)}"] if low > -np.inf else []
    bounds += [f"{'<' if high_open else '<='} {show(high)}"] if high < np.inf else []

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not integer and not np.isfinite(v):  # an int is finite however large
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

    return read


def one_of(options):
    """One of `options` (compared by equality; True is not 1)."""

    def read(x, name, dims):
        try:
            ok = not isinstance(x, bool) and x in set(options)
        except TypeError:
            raise TypeError(f"{name}: expected one of {list(options)}, got unhashable {_show(x)}") from None
        if not ok:
            raise ValueError(f"{name}: expected one of {list(options)}, got {x!r}"[:200])
        return x

    return read


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


COUNT = number(1, integer=True)  # an integer >= 1
MAX_LEN = optional(COUNT)  # T_max of agg="constant": None or an int >= 1


def longest_response(mask, agg, max_len):
    """`max_len`, the `T_max` of `agg="constant"`, is at least the longest response (its trained
    tokens, holes not counted)."""
    n = int(mask.sum(axis=1).max())
    if agg == "constant" and max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

AGGREGATION = dict(agg=one_of(AGGS), max_len=MAX_LEN, where=[longest_response])  # eq. (pg_agg)

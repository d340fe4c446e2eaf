# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/shaping.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/shaping.py -o DIR
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

"""Sampling and reward shaping: DAPO's dynamic sampling, its overlong penalty, truncation masks.

Dynamic sampling (DAPO; verl `algorithm.filter_groups`). A group whose rewards are all equal
has zero group-relative advantage: it is dropped and the prompt resampled until a group with
some spread comes. verl drops a group when it has more than one response and its rewards have
std 0 (a group of one is kept). If each prompt is resampled until accepted, the kept group is
drawn from the distribution conditioned on acceptance, and since dropped groups carried a zero
update, the expected update of prompt x is its unconditioned expected update divided by the
acceptance probability. For a 0/1 reward with success probability p = P(r = 1 | x):

    E[update | kept] = E[update] / (1 - p^K - (1-p)^K)                          eq. (dapo_reweight)

so hard and easy prompts (p near 0 or 1) are weighted up. (When instead the batch is filled
from a stream of prompts, as verl does, each prompt enters in proportion to its acceptance
probability, which cancels the factor: the update is the unfiltered one times a global scale.)

Overlong reward shaping (DAPO; verl reward manager "dapo", `overlong_buffer.len`,
`overlong_buffer.penalty_factor`), with L_max the length cap, L_buf the buffer and |y| the
response length:

    r_len(y) = min(-(|y| - (L_max - L_buf)) / L_buf * penalty_factor, 0)        eq. (overlong)

added to the reward: 0 up to L_max - L_buf, falling linearly to -penalty_factor at L_max.

Truncation masking (TRL `mask_truncated_completions`): a response that hit the length cap
without emitting EOS is truncated; its mask row is zeroed, so it is left out of the loss (and of
a token count that normalizes it). An empty response (length 0) is not truncated.

Imports NumPy and minirl_lm.core.checks only.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
filter_groups     verl algorithm.filter_groups.enable; OpenRLHF --algo.dynamic_filtering_enable,
                  --algo.dynamic_filtering_range (0 1)
overlong_penalty  verl reward manager dapo, overlong_buffer.len, .penalty_factor; OpenRLHF
                  --reward.overlong_buffer_len (None), --reward.overlong_penalty_factor (1)
mask_truncated    TRL mask_truncated_completions (False)
```
"""

import numbers

import numpy as np


__all__ = ["filter_groups", "acceptance_probability", "resample_factor", "overlong_penalty",
    "truncated", "mask_truncated"]


def filter_groups(rewards):
    """Which groups dynamic sampling keeps: rewards `(N, K)` -> bool `(N,)`.

    A group is dropped when K > 1 and all its rewards are equal (std 0); K = 1 keeps every group
    (as verl does; its group-relative advantage is 0 anyway).
    """
    r = reward_groups(rewards)  # (N, K), N, K >= 1
    if r.shape[1] == 1:
        return np.ones(r.shape[0], dtype=bool)
    return r.max(axis=1) != r.min(axis=1)  # (N,) some spread


def acceptance_probability(p, K):
    """P(a group of K 0/1 rewards is not all equal) = 1 - p^K - (1-p)^K, for p in [0, 1]."""
    p, K = acceptance_args(p, K)
    return _acceptance(p, K)


def _acceptance(p, K):
    """`acceptance_probability` on checked arguments."""
    return 1.0 - p**K - (1.0 - p) ** K if K > 1 else 1.0  # K = 1: every group kept


def resample_factor(p, K):
    """The factor of eq. (dapo_reweight), 1 / (1 - p^K - (1-p)^K), for a 0/1 reward.

    Raises ValueError when no group can be accepted (p = 0 or p = 1 with K >= 2: resampling
    never ends). K = 1 gives 1 (nothing is filtered).
    """
    # a = P(kept) > 0, else a ValueError naming p (resampling would never end)
    return 1.0 / resampling(_acceptance(*acceptance_args(p, K)), p, K)  # eq. (dapo_reweight)


def overlong_penalty(lengths, max_len, buffer_len, penalty_factor=1.0):
    """DAPO's soft overlong penalty, eq. (overlong): lengths `(B,)` -> additive rewards `(B,)`.

    The length `|y|` is the response's extent, every token it occupies (tool outputs inside it
    included), not its number of trained tokens: the cap L_max bounds what the response fills
    of the context, tool outputs too, and verl's DAPO reward manager reads the length off the
    attention mask (`verl/workers/reward_manager/dapo.py`, commit 003364bc), not off the loss
    mask. For a right-padded mask both are `mask.sum(axis=1)`; for a mask with holes pass the
    last trained position + 1 (when the response ends on a trained token), not the sum.

    Args:
        lengths (np.ndarray): `(B,)` response lengths, integers in `[0, max_len]`.
        max_len (int or None): the length cap L_max, `>= 1`.
        buffer_len (int): L_buf, in `[1, max_len]`.
        penalty_factor (float): `>= 0`; the penalty at |y| = L_max.
    """
    L, max_len, buffer_len, f = overlong_args(lengths, max_len, buffer_len, penalty_factor)
    exceed = L - (max_len - buffer_len)  # (B,) > 0 in the buffer
    # eq. (overlong); the min before the product, so a long way below the buffer cannot overflow
    return np.minimum(-exceed, 0) / buffer_len * f + 0.0  # +0.0: no -0.0


def truncated(tokens, mask, eos):
    """Which responses hit the cap without EOS: tokens, mask `(B, T)` -> bool `(B,)`.

    A row is truncated when it is non-empty and its last real token is not `eos`. With holes in
    the mask that is the token at the row's last trained position (the last 1 of the row), the
    same token as in the compacted row.
    """
    tokens, mask, eos = truncation_args(tokens, mask, eos)
    return _truncated(tokens, mask, eos)


def _truncated(tokens, mask, eos):
    """`truncated` on checked arguments."""
    real = mask > 0  # (B, T)
    at = mask.shape[1] - 1 - np.argmax(real[:, ::-1], axis=1)  # (B,) last trained position
    last = tokens[np.arange(len(at)), at]  # (B,) last real token (any token for an empty row)
    return real.any(axis=1) & (last != eos)


def mask_truncated(tokens, mask, eos):
    """The mask `(B, T)` with truncated rows zeroed (TRL `mask_truncated_completions`)."""
    tokens, mask, eos = truncation_args(tokens, mask, eos)
    return mask * (~_truncated(tokens, mask, eos))[:, None]  # (B, T)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/validate.py
#   The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py` not
# ----------------------------------------------------------------------------------------------


def reward_groups(rewards):
    """Rewards ``(N, K)`` of dynamic sampling: finite, N, K >= 1 (no bound on |r|)."""
    r = float_array(rewards, "rewards", ndim=2)
    if r.shape[1] < 1:
        raise ValueError(f"rewards: expected K >= 1 responses per prompt, got shape {r.shape}")
    return nonempty(r, "rewards")  # N >= 1 groups


def acceptance_args(p, K):
    """``(p, K)``: a probability in [0, 1] and a group size >= 1."""
    return float_scalar(p, "p", low=0.0, high=1.0), int_scalar(K, "K", low=1)


def overlong_args(lengths, max_len, buffer_len, penalty_factor):
    """``(lengths (B,) int64 in [0, max_len], max_len, buffer_len, penalty_factor)``; max_len <=
    2**62 so that the lengths' arithmetic stays within int64."""
    max_len = int_scalar(max_len, "max_len", low=1, high=2**62)
    buffer_len = int_scalar(buffer_len, "buffer_len", low=1, high=max_len)
    L = int_array(lengths, "lengths", ndim=1, low=0, high=max_len + 1)
    return L, max_len, buffer_len, float_scalar(penalty_factor, "penalty_factor", low=0.0)


def truncation_args(tokens, mask, eos):
    """``(tokens (B, T) int64 ids >= 0, mask (B, T), eos >= 0)``."""
    mask = mask_array(mask, "mask")
    tokens = int_array(tokens, "tokens", ndim=2, low=0)
    same_shape("mask", mask, "tokens", tokens)
    return tokens, mask, int_scalar(eos, "eos", low=0)


def resampling(a, p, K):
    """The acceptance probability ``a`` of dynamic sampling if > 0 (else resampling never ends)."""
    if a <= 0:
        raise ValueError(
            f"p: expected 0 < p < 1 (at p = {p} every group of K = {K} has equal "
            f"rewards and resampling never ends)"
        )
    return a


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

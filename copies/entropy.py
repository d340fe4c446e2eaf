# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/entropy.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/entropy.py -o DIR
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

"""The entropy bonus: a whole-distribution term, with its own backward on the table.

At a state s with pi = softmax(theta[s]) the entropy is

    H(s) = -sum_v pi_v log pi_v                                                 eq. (entropy)

(0 log 0 = 0 for a -inf logit). It needs every entry of the row, not only the sampled token's
log-prob, so it does not fit the `(loss, dloss_dlogp)` contract of the objectives; its gradient
goes straight to the table. With d pi_u / d theta_v = pi_u (1[u = v] - pi_v),

    dH(s) / dtheta[s, v] = -sum_u (log pi_u + 1) pi_u (1[u = v] - pi_v)
                         = -pi_v (log pi_v + H(s))                              eq. (entropy_grad)

The bonus as the frameworks ship it (verl `actor.entropy_coeff`, TRL `entropy_coef`): the
entropy of every visited state, averaged with the loss aggregation weights w of eq. (pg_agg)
(token_mean by default, TRL's "mean per-token entropy"), subtracted from the loss:

    L_H = -sum_{b,t} w[b,t] H(s_bt)                                             eq. (entropy_bonus)
    dL_H / dtheta[s, :] = -(sum_{(b,t): s_bt = s} w[b,t]) dH(s)/dtheta[s, :]

The visited states are data: the gradient does not flow through which states were visited.
On a response of several tokens that is not the gradient of the entropy of the response
distribution H(pi(.|x)) = E[sum_t H(s_t)] (which also moves the visitation); on one-token
responses it is. The caller multiplies L_H by the coefficient c and adds it to the policy loss.
A response of length 0 visits no state and contributes nothing. Imports NumPy and
minirl_lm.core (checks, ops) only; tests/pg/test_entropy.py checks the gradient by finite
differences.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
entropy_bonus x coefficient  TRL entropy_coef (0.0); verl actor.entropy_coeff (0); OpenRLHF
                             --actor.entropy_coef (None: off), always the token mean over the
                             batch's action tokens, whatever --actor.loss_agg_mode
```
"""

import numbers

import numpy as np


__all__ = ["entropy_table", "entropy_grad_table", "entropy_bonus"]


def _log_pi(theta):
    """log pi (S, V) of checked logits; a logit more than float64's range below its row's
    maximum is a probability of exactly 0 (log pi = -inf), as it is in the limit."""
    with np.errstate(over="ignore"):  # theta - max: -inf, not a warning
        return log_softmax(theta)  # (S, V) eq. (log_softmax)


def _entropy(logpi):
    """(pi (S, V), H (S,)) of log pi, 0 log 0 = 0, eq. (entropy)."""
    pi = np.exp(logpi)  # (S, V)
    plogp = np.where(pi > 0, pi * np.where(pi > 0, logpi, 0.0), 0.0)  # 0 log 0 = 0
    return pi, -plogp.sum(axis=1)  # (S,) eq. (entropy)


def _entropy_grad(pi, logpi, H):
    """dH(s)/dtheta[s, v] = -pi_v (log pi_v + H(s)) (S, V), 0 where pi_v = 0, eq. (entropy_grad)."""
    return -np.where(pi > 0, pi * (np.where(pi > 0, logpi, 0.0) + H[:, None]), 0.0)


def entropy_table(theta):
    """H(s) for every row of a logit table: theta `(S, V)` -> `(S,)`, eq. (entropy)."""
    _, H = _entropy(_log_pi(logit_table(theta)))
    return H


def entropy_grad_table(theta):
    """dH(s)/dtheta[s, v] for every row: theta `(S, V)` -> `(S, V)`, eq. (entropy_grad).

    Entries with probability 0 (a -inf logit) get 0, the limit of `-pi_v (log pi_v + H)`.
    """
    logpi = _log_pi(logit_table(theta))  # (S, V)
    pi, H = _entropy(logpi)
    return _entropy_grad(pi, logpi, H)  # (S, V)


def entropy_bonus(theta, states, mask, agg="token_mean", max_len=None):
    """The entropy bonus as a loss term and its gradient on the table, eq. (entropy_bonus).

    Args:
        theta (np.ndarray): `(S, V)` logits of the policy.
        states (np.ndarray): `(B, T)` int state id of every token (`Rollout.states`).
        mask (np.ndarray): `(B, T)` 0/1; holes allowed (untrained positions inside a row).
        agg (str): the aggregation weights w (token_mean: the mean per-token entropy).
        max_len (int or None): the constant of agg="constant".

    Returns:
        result (tuple): `(loss, dtheta (S, V))` with loss = `-sum w H(s_bt)`; descend on it (with a
            coefficient c) to raise the entropy of the visited states.
    """
    theta, states, mask, max_len = entropy_args(theta, states, mask, agg, max_len, AGGS)
    logpi = _log_pi(theta)  # (S, V)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    pi, H = _entropy(logpi)  # (S, V), (S,)
    loss = -(w * H[states]).sum()  # eq. (entropy_bonus)
    c = np.zeros(logpi.shape[0])  # (S,) sum of w per state
    np.add.at(c, states, w)
    return float(loss), -c[:, None] * _entropy_grad(pi, logpi, H)  # (S, V)


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant", "token_sum")


def agg_weights(mask, agg, max_len=None):
    """Per-token weights `w` (B, T) of aggregation `agg` over a checked 0/1 `mask` (B, T), eq.
    (pg_agg)."""
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


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/checks.py
#   The boundary of the policy-gradient part, token level: one bundle call per public function
# ----------------------------------------------------------------------------------------------


def aggregation(mask, agg, max_len, aggs):
    """Check ``agg`` (one of ``aggs``) and ``max_len`` for a checked mask; returns max_len."""
    choice(agg, "agg", aggs)
    max_len = None if max_len is None else int_scalar(max_len, "max_len", low=1)  # any agg
    n = mask.sum(axis=1).max()  # the most trained tokens in a row (holes not counted)
    if agg == "constant" and max_len is not None and max_len < n:
        raise ValueError(f"max_len: expected >= the longest response ({int(n)} trained tokens), got {max_len}")
    return max_len


def logit_table(theta, name="theta"):
    """``(S, V)`` logits, non-empty, -inf allowed, a finite entry in every row."""
    theta = nonempty(float_array(theta, name, ndim=2, allow_neginf=True), name)
    if not np.isfinite(theta.max(axis=1)).all():
        raise ValueError(f"{name}: expected a finite entry in every row, got an all -inf row")
    return theta


def entropy_args(theta, states, mask, agg, max_len, aggs):
    """The arguments of the entropy bonus: ``(theta, states (B, T), mask, max_len)``."""
    theta = logit_table(theta)
    mask = mask_array(mask, "mask")
    states = int_array(states, "states", ndim=2, low=0, high=theta.shape[0])
    same_shape("mask", mask, "states", states)
    return theta, states, mask, aggregation(mask, agg, max_len, aggs)


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


def choice(x, name, options):
    """Raise unless ``x`` is one of ``options`` (an unhashable ``x`` is a TypeError naming it)."""
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"{name}: expected one of {sorted(options, key=str)}, got unhashable {_describe(x)}"
        ) from None
    if isinstance(x, bool) or x not in options:  # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
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

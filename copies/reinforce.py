# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/reinforce.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/reinforce.py -o DIR
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

"""REINFORCE, the score-function estimator, in its two views, as an objective of token log-probs.

With terminal reward `R(x, y)`, `gamma = 1` and a prompt-dependent baseline `b(x)`, the token view
and the sequence (bandit) view are one estimator, sample for sample, because `log pi(y|x)` is the
sum of the token log-probs:

```text
token view     grad_hat = sum_t (R - b(x)) grad log pi(y_t | x, y_<t)     eq. (pg_token)
bandit view    grad_hat = (R - b(x)) grad log pi(y | x)                    eq. (pg_sequence)
```

As losses (minimized, `loss = -objective`) over a batch of `B` responses:

```text
reinforce_loss           loss = -sum_{b,t} w[b,t] A[b,t] logp[b,t]        eq. (pg_token)
                         dloss/dlogp[b,t] = -w[b,t] A[b,t]
sequence_reinforce_loss  loss = -(1/B) sum_b A_b seq_logp_b                eq. (pg_sequence)
                         dloss/dseq_logp_b = -A_b / B
```

A per-token advantage `A[b,t]` (a critic, GAE, per-token KL shaping, discounting) is allowed in
the token view only; it is where the two views part ways.

The per-token weights `w` (`token_weights`) are the loss aggregation, eq. (pg_agg). With `|y_b|`
the number of real tokens of response `b`, `B` responses, `T_max` a constant length (`max_len`):

| `agg` | `w[b, t]` on a real token | what it means |
|---|---|---|
| `seq_sum` | `1/B` | the estimator itself, averaged over the batch. Every token counts once: a long response moves `theta` in proportion to its length. |
| `token_mean` | `1/sum_b |y_b|` | every real token of the batch counts the same; a response's total weight is `|y_b| / (all tokens)`, so long responses still weigh more, and the scale depends on the batch's lengths. |
| `seq_mean_token_mean` | `1/(B |y_b|)` | each response weighs `1/B` in total whatever its length: a token of a short response weighs more than a token of a long one (GRPO's original form; the length bias Dr. GRPO points out: a long wrong answer is penalized less per token). |
| `constant` | `1/(B T_max)` | `seq_sum` divided by a constant (Dr. GRPO, `T_max = max_len`): unbiased, no length-dependent weight. |
| `token_sum` | `1` | no normalizer at all (verl's `token-sum`): `B` times `seq_sum`, so the step grows with the batch; the learning rate carries the whole scale. |

Padding has `w = 0`, so the gradient is 0 there; a response of length 0 contributes nothing (no
division by zero: its weights are 0). One default for every loss of the library and for
`token_weights`: `agg="token_mean"` (the frameworks' default too, below).

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
agg="token_mean" (default)  TRL loss_type="dapo" (default) or "bnpo"; verl
                            actor.loss_agg_mode="token-mean" (default); OpenRLHF
                            --actor.loss_agg_mode token-mean (default)
agg="seq_sum"               TRL loss_type="luspo"; verl "seq-mean-token-sum"; OpenRLHF: none
agg="seq_mean_token_mean"   TRL "grpo"; verl "seq-mean-token-mean"; OpenRLHF seq-mean-token-mean
                            (verl's seq-mean modes and OpenRLHF's divide by the rows with a real
                            token, not by B)
agg="constant", max_len     TRL "dr_grpo" (T_max = max_completion_length); verl
                            "seq-mean-token-sum-norm" (T_max = loss_scale_factor, or the padded
                            width T when null, the default); OpenRLHF: none
agg="token_sum"             verl "token-sum" (the masked sum, no normalizer; times the
                            data-parallel size, verl/trainer/ppo/core_algos.py:1176-1180);
                            TRL, OpenRLHF: none
```
"""

import numbers

import numpy as np


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------
# minirl_lm/pg/reinforce.py itself
# ----------------------------------------------------------------------------------------------


def token_weights(mask, agg="token_mean", max_len=None):
    """Per-token weights `w` of the loss aggregation, eq. (pg_agg).

    The checked entry of `minirl_lm.core.ops.agg_weights` (the one definition, which the
    estimators call on their own checked masks).

    Any 0/1 mask is accepted. A 0 between 1s is a hole: a position inside a response that is
    not trained (a tool output; what TRL's `tool_mask` or verl's multi-turn `response_mask`
    holds). `|y_b|` is the number of trained tokens of row `b` (`mask.sum(axis=1)`), wherever
    they sit, so the weights of a row with holes are those of its compacted row (holes removed,
    the trained tokens moved left in order) scattered back, for every `agg`; every token-level
    objective built on them inherits it (loss and gradient).

    Args:
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        agg: one of `"seq_sum"`, `"token_mean"`, `"seq_mean_token_mean"`, `"constant"`,
            `"token_sum"`.
        max_len: the constant `T_max` of `"constant"` (default: the padded width `T`); must be
            at least the longest response, the largest `|y_b|` (trained tokens, holes not
            counted). Compaction keeps the weights at a given `max_len`; the default is the
            compacted batch's too when its rows keep the width `T`.

    Returns:
        `(B, T)` weights, 0 at padding.

    Raises:
        ValueError: an unknown `agg`, or `max_len` shorter than the longest response (its
            trained tokens).
    """
    mask, max_len = token_agg(mask, agg, max_len, AGGS)
    return agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)


def reinforce_loss(logp, adv, mask, agg="token_mean", max_len=None):
    """Token-view REINFORCE loss, eq. (pg_token): `loss = -sum_{b,t} w[b,t] A[b,t] logp[b,t]`.

    Args:
        logp: `(B, T)` token log-probs.
        adv: `(B,)` one advantage per response, or `(B, T)` one per token.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        agg: the aggregation of `token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient `-w A`, 0 at padding.

    Raises:
        ValueError: a non-finite loss (naming `logp`), or a bad argument. The gradient `-w A`
            is always finite: every weight is in `[0, 1]` and `A` is finite.
    """
    logp, mask, adv, max_len = token_batch({"logp": logp}, mask, adv, agg, max_len, AGGS)
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    with np.errstate(over="ignore", invalid="ignore"):
        loss = -(w * A * logp).sum()  # eq. (pg_token)
        # backward: d loss / d logp[b, t] = -w[b, t] A[b, t]   (0 at padding: w = 0)
        dloss_dlogp = -w * A  # (B, T) finite: 0 <= w <= 1
    return finite_result((float(loss), dloss_dlogp), "logp", "the loss -sum w A logp")


def sequence_reinforce_loss(seq_logp, adv):
    """Bandit-view REINFORCE loss, eq. (pg_sequence): `loss = -(1/B) sum_b A_b seq_logp_b`.

    The policy spreads `dloss_dseq[b]` onto every real token of response `b`
    (`d seq_logp / d logp[b, t] = mask[b, t]`).

    Args:
        seq_logp: `(B,)` sequence log-probs `log pi(y_b | x_b)`.
        adv: `(B,)` one advantage per response.

    Returns:
        `(loss, dloss_dseq)`: a float and the `(B,)` gradient `-A / B`.

    Raises:
        ValueError: an empty batch, mismatched shapes or a non-finite result.
    """
    s, a = sequence_batch(seq_logp, adv)  # (B,) each
    B = s.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        loss = -(a * s).sum() / B  # eq. (pg_sequence)
        # backward: d loss / d seq_logp_b = -A_b / B
        dloss_dseq = -a / B  # (B,)
    return finite_result((float(loss), dloss_dseq), "seq_logp", "the loss -(1/B) sum A seq_logp")


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/checks.py
#   The boundary of the policy-gradient part, token level: one bundle call per public function
# ----------------------------------------------------------------------------------------------


_UNSET = object()  # an argument the bundle was not given (None is an input to reject)


def token_batch(logps, mask, adv=_UNSET, agg=_UNSET, max_len=None, aggs=(), per_token=True):
    """Check a token-level batch; returns ``(*arrays, mask, adv, max_len)``.

    logps: ``{name: array}`` of ``(B, T)`` arrays (log-probs, weights), the first one the
        shape the others and the 0/1 ``mask`` (holes allowed) must have;
    adv: ``(B,)``, or ``(B, T)`` too if ``per_token`` (returned as given, None if not passed);
    agg: one of ``aggs`` (unchecked if not passed); max_len: None or an int >= 1, and for
        ``"constant"`` at least the longest response (the most trained tokens in a row).
    """
    names = list(logps)
    arrays = [float_array(logps[n], n, ndim=2) for n in names]
    mask = mask_array(mask, "mask")
    for n, a in zip(names[1:] + ["mask"], arrays[1:] + [mask]):
        same_shape(names[0], arrays[0], n, a)
    A = None if adv is _UNSET else advantage(adv, mask, per_token)
    if agg is not _UNSET:
        max_len = aggregation(mask, agg, max_len, aggs)
    return (*arrays, mask, A, max_len)


def advantage(adv, mask, per_token=True):
    """``adv`` as float64 of shape ``(B,)`` (or ``(B, T)`` if ``per_token``) for a checked mask."""
    A = float_array(adv, "adv")
    if A.shape != (mask.shape[0],) and not (per_token and A.shape == mask.shape):
        want = f"({mask.shape[0]},)" + (f" or {mask.shape}" if per_token else "")
        raise ValueError(f"adv: expected shape {want}, got {A.shape}")
    return A


def aggregation(mask, agg, max_len, aggs):
    """Check ``agg`` (one of ``aggs``) and ``max_len`` for a checked mask; returns max_len."""
    choice(agg, "agg", aggs)
    max_len = None if max_len is None else int_scalar(max_len, "max_len", low=1)  # any agg
    n = mask.sum(axis=1).max()  # the most trained tokens in a row (holes not counted)
    if agg == "constant" and max_len is not None and max_len < n:
        raise ValueError(f"max_len: expected >= the longest response ({int(n)} trained tokens), got {max_len}")
    return max_len


def sequence_batch(seq_logp, adv):
    """``(seq_logp, adv)``: two non-empty ``(B,)`` float arrays of one shape."""
    s = float_array(seq_logp, "seq_logp", ndim=1)
    a = float_array(adv, "adv", ndim=1)
    same_shape("seq_logp", s, "adv", a)
    return nonempty(s, "seq_logp"), a


def token_agg(mask, agg, max_len, aggs):
    """``(mask, max_len)`` of the aggregation weights."""
    mask = mask_array(mask, "mask")
    return mask, aggregation(mask, agg, max_len, aggs)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it.

    ndim:  required number of dimensions (None: any).
    shape: required shape; a None entry matches any length.
    finite: reject NaN and +-inf; with ``allow_neginf`` a -inf entry is allowed
        (log-probabilities of impossible tokens), NaN and +inf never are.
    """
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


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted).

    Any 0/1 pattern by default: a 0 between 1s is a hole, a position the token-level objectives
    do not train (a tool output; TRL's ``tool_mask``, verl's multi-turn ``response_mask``); on
    such a row they give the loss and gradient of the compacted row (holes removed).
    prefix: ``(what, where)`` for a caller that reads the rows as prefixes (GAE, returns, the
    critic): right padding is required, and the error names ``what`` and ``where`` holes go.
    """
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


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is finite;
    else raise a ValueError naming ``name``, the argument that drove the overflow.

    Call it on what a public function is about to return, computed under
    ``np.errstate(over="ignore", invalid="ignore", divide="ignore")``: an overflow is never
    returned as inf or NaN. ``name`` and ``what`` are strings (a programming error otherwise).
    """
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


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

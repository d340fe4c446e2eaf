# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/clip.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/clip.py -o DIR
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

"""The token-level clipped ratio (PPO surrogate), as an objective of token log-probs.

For each real token, with `rho_t = pi(y_t | s_t) / pi_old(y_t | s_t) = exp(logp - logp_old)`:

```text
f_t  = min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps_high) A_t)        eq. (ppo_clip)
loss = -sum_{b,t} w[b,t] f[b,t]        (w: the aggregation weights, eq. (pg_agg))
```

Symmetric by default (`eps_high = eps`); `eps_high > eps` is "clip-higher" (DAPO). There is no
dual clip here (a floor `c A_t` for `A_t < 0`; see the page "Where to go next").

Gradient, by hand. `d rho / d logp = rho`. The min picks one branch:

- unclipped branch active (`rho A <= clip(rho) A`): `d f / d logp = rho A`;
- clipped branch active (`clip(rho) A < rho A`): the clipped value is constant in `logp`, so 0.
  For `A > 0` that is `rho > 1 + eps_high`, for `A < 0` `rho < 1 - eps`: the ratio already
  moved far enough in the direction the advantage pushes, and the token stops pulling.

Ties: inside the clip range both branches are equal and the gradient is `rho A`. Exactly at a
boundary (`rho = 1 + eps_high` with `A > 0`, or `1 - eps` with `A < 0`) `f` has a kink; we take
the unclipped one-sided derivative `rho A` there (the left/right derivatives are `rho A` and 0).

At `rho = 1` (`logp == logp_old`: the first optimizer step on a fresh batch) the gradient is
`-w A`, exactly REINFORCE's (`reinforce.reinforce_loss` with the same aggregation).

Padding and extreme ratios. The log-ratio is masked before the exp, so whatever finite values
`logp` and `logp_old` hold at padding (`rho = 1` there) the gradient there is exactly 0. A token
with `A = 0` contributes exactly 0 to the loss and the gradient, even where `rho` overflows.
`rho = exp(logp - logp_old)` overflows float64 for `logp - logp_old > ~709.78` (`pi_old` gave
the token probability `< e^-709`); then:

- `A > 0`: `min(rho A, (1 + eps_high) A) = (1 + eps_high) A`, finite, and its gradient is 0
  (clipped); returned as such;
- `A < 0`: the true minimum is the unclipped `rho A = -inf` (loss `+inf`). That (or any other
  non-finite loss or gradient, e.g. `rho A` overflowing for a finite `rho`) is rejected with a
  ValueError naming `logp`, instead of returning `inf` to an optimizer. `clip_fraction` never
  raises: such a token is unclipped, an `A > 0` one with `rho = inf` is clipped.

The aggregation weights are `core.ops.agg_weights`, eq. (pg_agg), the one definition of them
(`reinforce.token_weights` is its checked entry; a standalone copy of this file,
`scripts/standalone.py`, inlines it). `clipped_surrogate` is the checked entry of `_surrogate`, the
trusted core GRPO calls.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
eps (0.2)         TRL epsilon (0.2); verl actor.clip_ratio_low (0.2); OpenRLHF --actor.eps_clip
                  (0.2)
eps_high (= eps)  TRL epsilon_high; verl actor.clip_ratio_high (0.2); OpenRLHF
                  --actor.eps_clip_low_high LOW HIGH
agg               as in reinforce.py
(no dual clip)    TRL delta (None); verl actor.clip_ratio_c (3.0: always on); OpenRLHF
                  --actor.dual_clip (None)
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


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


# ----------------------------------------------------------------------------------------------
# minirl_lm/pg/clip.py itself
# ----------------------------------------------------------------------------------------------


def _branches(logp, logp_old, A, mask, eps, eps_high):
    """rho, the unclipped and the clipped branch (B, T); rho = 1 at padding, both branches 0
    where A = 0 (no 0 * inf), rho = inf where it overflows."""
    with np.errstate(over="ignore"):  # overflow to inf is handled
        u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
        rho = np.exp(u)  # (B, T) rho_t; inf if u > ~709.78
        surr1 = np.multiply(rho, A, out=np.zeros_like(rho), where=A != 0)  # (B, T) unclipped
        surr2 = np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A  # (B, T) clipped
    return rho, surr1, surr2


def clipped_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
    """PPO clipped surrogate loss, eq. (ppo_clip): `loss = -sum_{b,t} w[b,t] f[b,t]`.

    Args:
        logp: `(B, T)` token log-probs under the policy being trained, `pi`.
        logp_old: `(B, T)` token log-probs under `pi_old`, the policy that sampled.
        adv: `(B,)` one advantage per response, or `(B, T)`.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        eps: the clip range `epsilon`, in `(0, 1]`.
        eps_high: the upper clip range `epsilon_high` (default `eps`).
        agg: the aggregation of `reinforce.token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient, `-w rho A` on unclipped real
        tokens, 0 elsewhere.

    Raises:
        ValueError: a non-finite surrogate (named after `logp`), or a bad argument.
    """
    logp, logp_old, mask, adv, eps, eps_high, max_len = clip_objective(
        logp, logp_old, adv, mask, eps, eps_high, agg, max_len, AGGS
    )
    return _surrogate(logp, logp_old, adv_tokens(adv, mask), mask, eps, eps_high, agg, max_len)


def _surrogate(logp, logp_old, A, mask, eps, eps_high, agg, max_len, guard=True):
    """`clipped_surrogate` on checked arguments, A (B, T); `guard=False` returns a non-finite
    result as it is (for a caller that names its own culprit: GRPO's later epochs name lr)."""
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho, surr1, surr2 = _branches(logp, logp_old, A, mask, eps, eps_high)
    f = np.minimum(surr1, surr2)  # (B, T) eq. (ppo_clip)
    with np.errstate(over="ignore"):  # a sum beyond float64: below
        loss = -(w * f).sum()
    # backward: d f / d logp = rho A where the unclipped branch is active (ties included), else 0
    unclipped = surr1 <= surr2  # (B, T)
    df_dlogp = np.where(unclipped, surr1, 0.0)  # (B, T) d rho / d logp = rho
    dloss_dlogp = -w * df_dlogp  # (B, T) 0 at padding
    # f is finite wherever df_dlogp is (df_dlogp is f or 0), and at padding rho = 1, so f = A
    if guard:
        finite_surrogate(f, surr1, logp, logp_old, A)  # each token, else names logp
        # every token is finite (so is the gradient, w <= 1); only their weighted sum can overflow
        finite_result(loss, "adv", "the weighted sum of the surrogate over tokens")
    return float(loss), dloss_dlogp


def clip_fraction(logp, logp_old, adv, mask, eps=0.2, eps_high=None):
    """The fraction of real tokens whose gradient the clip zeroes (clipped branch strictly smaller).

    A token with `A = 0` is never counted.

    Args:
        logp: `(B, T)` token log-probs under `pi`.
        logp_old: `(B, T)` token log-probs under `pi_old`.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 float mask.
        eps: the clip range `epsilon`.
        eps_high: the upper clip range (default `eps`).

    Returns:
        A float in `[0, 1]`; 0.0 for a batch without real tokens.
    """
    logp, logp_old, mask, adv, eps, eps_high, _ = clip_objective(
        logp, logp_old, adv, mask, eps, eps_high, "token_mean", None, AGGS
    )
    return _clip_fraction(logp, logp_old, adv_tokens(adv, mask), mask, eps, eps_high)


def _clip_fraction(logp, logp_old, A, mask, eps, eps_high):
    """`clip_fraction` on checked arguments, A (B, T)."""
    _, surr1, surr2 = _branches(logp, logp_old, A, mask, eps, eps_high)
    clipped = surr2 < surr1  # (B, T); at padding rho = 1: never
    n = mask.sum()
    return float(clipped.sum() / n) if n > 0 else 0.0


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


def clip_range(eps, eps_high):
    """``(eps, eps_high)``: eps in (0, 1], eps_high > 0 (default eps)."""
    eps = float_scalar(eps, "eps", low=0.0, low_open=True, high=1.0)
    return eps, (eps if eps_high is None else float_scalar(eps_high, "eps_high", low=0.0, low_open=True))


def clip_objective(logp, logp_old, adv, mask, eps, eps_high, agg, max_len, aggs):
    """The arguments of the clipped surrogate: ``(logp, logp_old, mask, adv, eps, eps_high,
    max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    eps, eps_high = clip_range(eps, eps_high)
    return logp, logp_old, mask, adv, eps, eps_high, aggregation(mask, agg, max_len, aggs)


def finite_surrogate(f, surr1, logp, logp_old, A):
    """The clipped surrogate's guard: every token's ``f`` (B, T) finite, else a ValueError
    naming logp at the first token whose ``rho A`` overflowed."""
    bad = ~np.isfinite(f)  # (B, T) real tokens only
    if bad.any():
        b, t = (int(i[0]) for i in np.nonzero(bad))
        raise ValueError(
            f"logp: expected logp - logp_old small enough that the surrogate is finite; at "
            f"[{b}, {t}] logp - logp_old = {float(logp[b, t]) - float(logp_old[b, t])} with A = "
            f"{float(A[b, t])} gives rho A = {float(surr1[b, t])} (rho = exp(logp - logp_old) "
            f"overflows float64 beyond ~709.78; with A < 0 the unclipped branch -inf is the "
            f"minimum)"
        )
    return f


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

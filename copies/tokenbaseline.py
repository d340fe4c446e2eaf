# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/tokenbaseline.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/tokenbaseline.py -o DIR
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

"""The optimal token baseline: a baseline per position, weighted by the squared score.

For a one-token response the estimator `(R - b) grad log pi(y)` is unbiased for any `b` that
does not depend on `y`; its variance (the trace of its covariance) is

```text
Var(b) = E[(R - b)^2 ||s||^2] - ||grad J||^2,     s = grad_theta log pi(y) = onehot(y) - pi
b*     = E[R ||s||^2] / E[||s||^2]                                           eq. (otb)
||s||^2 = 1 - 2 pi(y) + sum_v pi(v)^2                                       eq. (otb_score)
```

(`Var` is a quadratic in `b`; `b*` its minimum, so its variance is the lowest of every constant
baseline: the group mean `E[R]` included, which is `b*` only when `R` and `||s||^2` are
uncorrelated.) `||s||^2` is the squared norm of the softmax score in the logits of the
token's state: large for unlikely tokens, 0 for a deterministic state.

For a response of several tokens, verl's estimator gives each position `t` its own baseline,
with the cumulative score `W_t = sum_{j <= t} ||s_j||^2` of the path so far as the weight, over
the `K` responses of the group:

```text
B_t = sum_k G_{k,t} W_{k,t} m_{k,t} / (sum_k W_{k,t} m_{k,t} + w_eps)
A_{k,t} = (G_{k,t} - B_t) m_{k,t},        G_{k,t} = R_k (the outcome reward)  eq. (otb_group)
```

`m` the mask; positions are columns (right padding). With `zero_tail`, a longest response longer
than every other one of its group gets `B_t = 0` past the second-longest (its tail has no
others to average). A group of one (`K = 1`) gets no baseline, `A = R` (verl). Like the group
mean, `B_t` uses the response's own reward: at finite `K` it is a biased baseline (exactly as
`mean` against `loo` in `advantages.py`); eq. (otb) is the population quantity it estimates,
and the minimal variance is a claim about that one (tested by enumeration).

`sum_pi_sq` is `sum_v pi_old(v | s_t)^2` per token (B, T), computed where the logits are (the
policy: `(probs ** 2).sum(-1)` at each visited state), `logp_old` the sampled token's log-prob.

Demonstrated on the baselines page (docs/baselines.md, section "The optimal token baseline").

Read from verl 0.9.1 `algorithm.adv_estimator="optimal_token_baseline"`
(verl/trainer/ppo/core_algos.py:872-988, `compute_optimal_token_baseline_advantage`;
`handle_zero_tail` True, epsilon 1e-8; the rollout IS weights `rho^2` on `W`: not here).
"""

import numbers

import numpy as np


__all__ = ["otb_advantages"]


def otb_advantages(rewards, mask, logp_old, sum_pi_sq, K, w_eps=1e-8, zero_tail=True):
    """Advantages (B, T) with the optimal token baseline of each group, eq. (otb_group).

    Args:
        rewards: `(B,)` outcome rewards, `B = N*K` rows prompt-major.
        mask: `(B, T)` 0/1, right-padded (a position is a column).
        logp_old: `(B, T)` log-probs of the sampled tokens (`<= 0` on trained tokens).
        sum_pi_sq: `(B, T)` `sum_v pi(v|s_t)^2` at each token's state, in `[pi(y_t)^2, 1]`.
        K: the group size, dividing `B`.
        w_eps: the stabilizer of the denominator (verl's 1e-8), `>= 0`.
        zero_tail: zero the baseline of a group's unique longest response past the second-longest.

    Returns:
        `(B, T)` advantages, 0 at padding.
    """
    r, mask, p, s2, K, w_eps = otb_args(rewards, mask, logp_old, sum_pi_sq, K, w_eps)
    B, T = mask.shape
    N = B // K
    G = r[:, None] * mask  # (B, T) G_t = R on every trained token
    W = np.cumsum((1.0 - 2.0 * p + s2) * mask, axis=1)  # (B, T) eq. (otb_score), summed to t
    if K == 1:
        return G  # no others: no baseline
    Gg, Wg, mg = (x.reshape(N, K, T) for x in (G, W, mask))  # (N, K, T)
    num = (Gg * Wg * mg).sum(axis=1)  # (N, T)
    den = (Wg * mg).sum(axis=1) + w_eps  # (N, T)
    base = np.divide(num, den, out=np.zeros_like(num), where=den > 0)  # (N, T) eq. (otb_group)
    base = np.repeat(base[:, None, :], K, axis=1)  # (N, K, T)
    if zero_tail:
        L = mg.sum(axis=2)  # (N, K) lengths
        srt = np.sort(L, axis=1)  # (N, K)
        for n in np.nonzero((srt[:, -1] > srt[:, -2]))[0]:
            base[n, int(np.argmax(L[n])), int(srt[n, -2]) :] = 0.0  # the unique longest's tail
    return ((Gg - base) * mg).reshape(B, T)  # (B, T)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/validate.py
#   The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py` not
# ----------------------------------------------------------------------------------------------


def otb_args(rewards, mask, logp_old, sum_pi_sq, K, w_eps):
    """``(r (B,), mask, p (B, T), s2 (B, T), K, w_eps)`` of the optimal token baseline: B a
    multiple of K, logp_old <= 0 on the trained tokens, ``sum_pi_sq`` in [p^2, 1] there."""
    mask = mask_array(mask, "mask")
    B = mask.shape[0]
    r = float_array(rewards, "rewards", ndim=1, shape=(B,))
    lp = float_array(logp_old, "logp_old", shape=mask.shape)
    s2 = float_array(sum_pi_sq, "sum_pi_sq", shape=mask.shape)
    K = int_scalar(K, "K", low=1)
    if B == 0 or B % K:
        raise ValueError(f"K: expected a divisor of the batch size B = {B} (groups of K rows), got {K}")
    on = mask > 0
    if (lp[on] > 0).any():
        raise ValueError(f"logp_old: expected log-probs <= 0 on the trained tokens, got max {lp[on].max():g}")
    p = np.exp(np.minimum(lp, 0.0))  # (B, T)
    if ((s2 < p * p * (1 - 1e-12)) | (s2 > 1.0 + 1e-12))[on].any():
        raise ValueError("sum_pi_sq: expected sum_v pi(v|s)^2 in [pi(y|s)^2, 1] on the trained tokens")
    return r, mask, p, s2, K, float_scalar(w_eps, "w_eps", low=0.0)


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

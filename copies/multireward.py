# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/multireward.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/multireward.py -o DIR
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

"""Several rewards per response: GDPO's decoupled normalization.

Rewards come as an `(N, K, M)` array: `N` prompts, `K` responses each, `M` rewards per response
(correctness and format, say), with weights `c_m` (default 1). GRPO standardizes the weighted sum;
GDPO (arXiv:2601.05242) standardizes each reward in its group first, then sums:

```text
sum then standardize   A_k = standardize_k( sum_m c_m R_{k,m} )              eq. (pg_normalized)
GDPO                   A_k = sum_m c_m (R_{k,m} - mean_m) / (std_m + xi)     eq. (gdpo)
                       optionally whitened over the batch:
                       A <- (A - mean(A)) / (std(A) + xi_batch)              eq. (gdpo_batch)
```

with `mean_m`, `std_m` the mean and std of reward `m` over the group (`advantages.standardized`,
the same `std_eps` and `ddof`). What decoupling buys, per reward and exactly (tested):

- adding a constant to reward `m` changes nothing (each reward is centred in its own group);
- scaling reward `m` by `a > 0` changes nothing with `std_eps = 0` (its unit is divided out;
  with `std_eps > 0`, up to the stabilizer); in the sum-then-standardize form a reward with a
  larger spread drowns the others, and two rewards of the same spread but different
  correlations give the same sum for different pairs;
- a reward constant in a group contributes exactly 0 there, not NaN: the group is ranked by the
  other rewards alone. Summed first, a constant reward changes nothing either; the difference is
  the groups where it varies.

A group with every reward constant has `A = 0`. No gradient flows through the rewards.

Demonstrated on the baselines page (docs/baselines.md, section "Several rewards: GDPO").

Read from the released code (defaults in parentheses are theirs):

```text
gdpo weights, std_eps,    TRL 1.16.0 multi_objective_aggregation="normalize_then_sum"
ddof 1, batch_eps         (trl/trainer/grpo_trainer.py:2790-2799: nanstd (Bessel) + 1e-4 per
                          reward, reward_weights, then the batch: (A - mean) / (nanstd + 1e-4));
                          verl 0.9.1 algorithm.adv_estimator="gdpo" (verl/trainer/ppo/core_algos.py
                          :361-468: GRPO's advantage per reward key (torch.std + 1e-6), weighted
                          sum, then masked_whiten over the batch's tokens); NeMo-RL
                          GDPOAdvantageEstimator (nemo_rl/algorithms/advantage_estimator.py @
                          7ea279abfb (2026-08-22): an optional leave-one-out baseline per reward,
                          / (std + 1e-6) where std > 0, then the batch's (A - mean) / std)
```
"""

import numbers

import numpy as np


__all__ = ["gdpo"]


def gdpo(rewards, weights=None, std_eps=1e-8, ddof=0, batch_eps=None):
    """GDPO advantages (N, K), eq. (gdpo): each reward standardized in its group, then summed.

    Args:
        rewards: `(N, K, M)` rewards, `M >= 1` per response.
        weights: `(M,)` weights `c_m` of the sum (default ones).
        std_eps: the stabilizer `xi` of each group's std.
        ddof: 0 (population std) or 1 (Bessel, the frameworks').
        batch_eps: None (no batch step), or the stabilizer of eq. (gdpo_batch): the summed
            advantages whitened over all `N*K` responses (TRL: 1e-4 with `ddof=1`).

    Returns:
        `(N, K)` advantages; a reward constant in a group adds exactly 0 there.
    """
    r, c, std_eps, ddof, batch_eps = gdpo_args(rewards, weights, std_eps, ddof, batch_eps, REWARD_MAX)
    N, K, M = r.shape
    Z = np.stack([_standardized(r[:, :, m], std_eps, ddof) for m in range(M)], axis=2)  # (N, K, M)
    A = (Z * c).sum(axis=2)  # (N, K) eq. (gdpo)
    if batch_eps is not None:
        A = _standardized(A.reshape(1, N * K), batch_eps, ddof).reshape(N, K)  # eq. (gdpo_batch)
    return A


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/pg/advantages.py
#   Baselines: the group of K responses to one prompt is its own baseline.
# ----------------------------------------------------------------------------------------------


REWARD_MAX = 1e150  # |rewards| bound: the standardized baseline squares the spread


def _group_mean(r):
    """Mean of each group, (N, 1); exactly the common value when a group's rewards are equal."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


def _standardized(r, std_eps, ddof):
    """`standardized` on checked arguments."""
    c = r - _group_mean(r)  # (N, K)
    dof = max(r.shape[1] - ddof, 1)  # K = 1, ddof = 1: c == 0, so std = 0
    ss = (c * c).sum(axis=1, keepdims=True)  # (N, 1)
    std = np.sqrt(ss / dof)  # (N, 1)
    # c*c underflows (subnormal or 0) below ~1e-154; rescale groups whose sum of squares is
    # under 1e-290 (|c| < ~1e-145: never an ordinary group), leaving all others bit-identical
    tiny = (ss < 1e-290) & (c != 0).any(axis=1, keepdims=True)  # (N, 1)
    if np.count_nonzero(tiny):
        s = np.where(tiny, np.abs(c).max(axis=1, keepdims=True), 1.0)  # (N, 1)
        cs = c / s  # (N, K)
        std = np.where(tiny, s * np.sqrt((cs * cs).sum(axis=1, keepdims=True) / dof), std)
    denom = std + std_eps  # (N, 1)
    if std_eps > 0:  # denom > 0 everywhere
        return c / denom  # eq. (pg_normalized)
    # eq. (pg_normalized); a zero spread with std_eps = 0 gives 0, not 0/0
    return np.divide(c, denom, out=np.zeros_like(c), where=denom > 0)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/validate.py
#   The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py`
# ----------------------------------------------------------------------------------------------


def whitening(std_eps, ddof):
    """``(std_eps, ddof)`` of a std or variance: the stabilizer std_eps >= 0, ddof the int 0 or 1."""
    return float_scalar(std_eps, "std_eps", low=0.0), int_scalar(ddof, "ddof", low=0, high=1)


def group_rewards(rewards, bound, name="rewards"):
    """Rewards ``(N, K)``, N, K >= 1, finite, every ``|r| <= bound`` (the advantages' domain)."""
    r = float_array(rewards, name, ndim=2)
    if r.shape[1] < 1:
        raise ValueError(f"{name}: expected K >= 1 responses per prompt (shape (N, K)), got shape {r.shape}")
    if r.shape[0] < 1:
        raise ValueError(f"{name}: expected N >= 1 prompts (shape (N, K)), got shape {r.shape}")
    if np.abs(r).max() > bound:
        raise ValueError(
            f"{name}: expected |r| <= {bound:g} (the standardized baseline "
            f"squares the spread, which overflows float64 beyond ~1e154), got max "
            f"|r| = {np.abs(r).max():g}"
        )
    return r


def gdpo_args(rewards, weights, std_eps, ddof, batch_eps, bound):
    """``(r (N, K, M), weights (M,), std_eps, ddof, batch_eps)`` of GDPO: M >= 1 rewards per
    response, each within the advantages' domain; batch_eps None (no batch whitening) or >= 0."""
    r = float_array(rewards, "rewards", ndim=3)
    if min(r.shape) < 1:
        raise ValueError(f"rewards: expected shape (N, K, M) with N, K, M >= 1, got {r.shape}")
    group_rewards(r.reshape(r.shape[0], -1), bound)  # the bound on |R|
    M = r.shape[2]
    w = np.ones(M) if weights is None else float_array(weights, "weights", ndim=1, shape=(M,))
    std_eps, ddof = whitening(std_eps, ddof)
    return r, w, std_eps, ddof, None if batch_eps is None else float_scalar(batch_eps, "batch_eps", low=0.0)


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

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/targets.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/targets.py -o DIR
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

"""Advantages for another target than the expected reward: maximum likelihood (MaxRL) and pass@k.

Rewards come as `(N, K)` groups, as in `advantages.py`, and the update these advantages feed is
`g = (1/K) sum_k A_k grad log pi(y_k | x)` (MaxRL) or `g = sum_k A_k grad log pi(y_k | x)`
(pass@k). Each function returns `(N, K)` advantages; no gradient flows through them (rewards are
data).

MaxRL (Tajwar et al. 2026, arXiv:2602.02710): the group mean in the denominator instead of the spread,

```text
A_k = (R_k - mean(R)) / mean(R)   if mean(R) > 0,   0 otherwise         eq. (maxrl)
```

For binary rewards, with `p = P(R = 1 | x)` the pass rate, `E[g] = grad J_{K-1}` exactly, where

```text
J_n = -sum_{i=1}^{n} (1 - p)^i / i,     grad J_n = ((1 - (1 - p)^n) / p) grad p   eq. (maxrl_target)
```

is the truncation at order `n` of `log p = -sum_{i>=1} (1 - p)^i / i`: `K = 1` gives 0 (a group
of one has `A = 0`), `K = 2` the gradient of `p` itself, and `K -> inf` the maximum-likelihood
gradient `grad p / p`, which weighs a prompt by `1/p`: hard prompts count more. (Derivation: the
term `R_k / mean(R)` gives `K grad p E[1 / (1 + Bin(K-1, p))] = ((1 - (1-p)^K) / p) grad p`;
the `-1`, taken only when some `R = 1`, gives `-(1-p)^{K-1} grad p`.) For other rewards the
expectation is no truncation of anything; the function still requires `R >= 0`.

pass@k (for `k = K`, arXiv:2503.19595 as verl cites it; for `k <= K`, the unbiased estimator of
Pass@K Policy Optimization, Walder and Karkhanis 2025, identifier not checked here): the target
is `pass@k = E[max(R_1, ..., R_k)]` (for binary rewards the chance
that one of `k` responses passes), and the advantage of member `i` is its marginal contribution
to the max, averaged over the `C(K, k)` subsets of the group that contain it:

```text
A_i = (1 / C(K, k)) sum_{S ∋ i, |S| = k} ( max_S R - max_{S - {i}} R )     eq. (passk)
    = (1 / C(K, k)) ( C(m, k-1) R_(m) - sum_{j < m} C(j, k-2) R_(j) )
```

with `R_(0) <= ... <= R_(K-1)` the sorted rewards, `m` the rank of `i` (ties in index order),
and `max` of the empty set 0. `max_{S - {i}}` does not depend on `y_i`, so it is a baseline, and
`E[sum_i A_i grad log pi(y_i)] = grad pass@k` exactly. At `k = K` only the best response has a
nonzero advantage, `R_max - R_second`; at `k = 1` it is `R_i / K`, REINFORCE without a
baseline. A group whose best reward is shared has `A = 0` at `k = K` (no single response made
the max). `std_eps` (verl's default normalization) divides by the Bessel std of the group plus
`std_eps`: no longer an unbiased gradient of anything.

Demonstrated on the baselines page (docs/baselines.md, sections "MaxRL" and "pass@k").

Read from the released code (defaults in parentheses are theirs):

```text
maxrl               prime-rl src/prime_rl/orchestrator/algo/max_rl.py (MaxRLAlgorithm.score_group,
                    mean <= 0: zeros) at commit 559b44772e (2026-08-21); TRL 1.16.0 MaxRLTrainer
                    (experimental): unverified
passk_advantages    verl 0.9.1 algorithm.adv_estimator="grpo_passk" (verl/trainer/ppo/core_algos.py
  k = K, std_eps    :472-536: r_max - r_second_max on the best response, divided by torch.std + 1e-6
                    when algorithm.norm_adv_by_std_in_grpo (True)); k < K: none
```
"""

from math import comb
import numbers

import numpy as np


__all__ = ["maxrl", "passk_advantages"]


def maxrl(rewards):
    """MaxRL advantages (N, K), eq. (maxrl): `(R - mean) / mean`, 0 for a group of mean 0.

    Args:
        rewards: `(N, K)` rewards, every `R >= 0`.

    Returns:
        `(N, K)` advantages; a group of equal rewards gives exactly 0.
    """
    r = maxrl_args(rewards, REWARD_MAX)
    mean = _group_mean(r)  # (N, 1), exactly the common value of an equal group
    return np.divide(r - mean, mean, out=np.zeros_like(r), where=mean > 0)  # (N, K) eq. (maxrl)


def passk_advantages(rewards, k, std_eps=None):
    """pass@k advantages (N, K), eq. (passk): each response's share of `max` over `k`-subsets.

    Args:
        rewards: `(N, K)` rewards.
        k: the `k` of pass@k, `1 <= k <= K`.
        std_eps: None (the unbiased form), or divide each group by its Bessel std plus
            `std_eps` (verl's `norm_adv_by_std_in_grpo=True`, with 1e-6).

    Returns:
        `(N, K)` advantages, to be used as `sum_k A_k grad log pi(y_k)` (no `1/K`).
    """
    r, k, std_eps = passk_args(rewards, k, std_eps, REWARD_MAX)
    N, K = r.shape
    order = np.argsort(r, axis=1, kind="stable")  # (N, K) ties in index order
    rs = np.take_along_axis(r, order, axis=1)  # (N, K) sorted ascending
    c1 = np.array([comb(m, k - 1) for m in range(K)], dtype=float) / comb(K, k)  # (K,)
    c2 = np.array([comb(j, k - 2) if k >= 2 else 0 for j in range(K)], dtype=float) / comb(K, k)
    below = np.zeros_like(rs)  # (N, K) sum_{j < m} C(j, k-2) R_(j), exclusive prefix sums
    below[:, 1:] = np.cumsum(rs * c2, axis=1)[:, :-1]
    a_sorted = c1 * rs - below  # (N, K) eq. (passk)
    A = np.empty_like(r)
    np.put_along_axis(A, order, a_sorted, axis=1)  # back to the group's order
    if std_eps is not None:
        c = r - _group_mean(r)  # (N, K)
        std = np.sqrt((c * c).sum(axis=1, keepdims=True) / max(K - 1, 1))  # (N, 1) Bessel
        A = np.divide(A, std + std_eps, out=np.zeros_like(A), where=std + std_eps > 0)
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


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/validate.py
#   The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py` not
# ----------------------------------------------------------------------------------------------


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


def maxrl_args(rewards, bound):
    """Rewards ``(N, K)`` of MaxRL: group_rewards' and every ``R >= 0`` (the mean is a rate)."""
    r = group_rewards(rewards, bound)
    if r.min() < 0:
        raise ValueError(
            f"rewards: expected R >= 0 (MaxRL divides by the group's mean reward), got min {r.min():g}"
        )
    return r


def passk_args(rewards, k, std_eps, bound):
    """``(r (N, K), k in [1, K], std_eps None or >= 0)`` of the pass@k advantages."""
    r = group_rewards(rewards, bound)
    k = int_scalar(k, "k", low=1, high=r.shape[1])
    return r, k, None if std_eps is None else float_scalar(std_eps, "std_eps", low=0.0)


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

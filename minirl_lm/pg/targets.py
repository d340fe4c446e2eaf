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

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults:

```text
maxrl               prime-rl MaxRLAlgorithm.score_group (mean <= 0: zeros); TRL MaxRLTrainer
                    (experimental): unverified
passk_advantages    verl algorithm.adv_estimator="grpo_passk" (r_max - r_second_max on the best
  k = K, std_eps    response, divided by torch.std + 1e-6 when algorithm.norm_adv_by_std_in_grpo
                    (True)); k < K: none
```
"""

import sys
from math import comb

import numpy as np

from minirl_lm.boundary import NONNEGATIVE, array, boundary, number, optional
from minirl_lm.pg.advantages import bounded_rewards, group_mean

__all__ = ["maxrl", "passk_advantages"]


def _k_within_group(rewards, k):
    """`k` is at most the group size `K`."""
    if k > rewards.shape[1]:
        return f"k: expected an integer <= {rewards.shape[1]} (the group size K), got {k}"


def _over(counts, total):
    """`counts / total` (K,) of Python integers, each rounded to float64 and then divided; where
    `total` is beyond float64 (C(1100, 550) is), the exact quotients, each at most 1, rounded."""
    if total <= sys.float_info.max:  # an exact comparison of an int with a float
        return np.array(counts, dtype=float) / total
    return np.array([c / total for c in counts])


@boundary(rewards=array("N K", low=0.0), where=[bounded_rewards])
def maxrl(rewards):
    """MaxRL advantages (N, K), eq. (maxrl): `(R - mean) / mean`, 0 for a group of mean 0.

    Args:
        rewards: `(N, K)` rewards, every `R >= 0`.

    Returns:
        `(N, K)` advantages; a group of equal rewards gives exactly 0.
    """
    mean = group_mean(rewards)  # (N, 1), exactly the common value of an equal group
    return np.divide(rewards - mean, mean, out=np.zeros_like(rewards), where=mean > 0)  # (N, K) eq. (maxrl)


@boundary(
    rewards=array("N K"),
    k=number(1, integer=True),
    std_eps=optional(NONNEGATIVE),
    where=[bounded_rewards, _k_within_group],
)
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
    r = rewards
    N, K = r.shape
    order = np.argsort(r, axis=1, kind="stable")  # (N, K) ties in index order
    rs = np.take_along_axis(r, order, axis=1)  # (N, K) sorted ascending
    c1 = _over([comb(m, k - 1) for m in range(K)], comb(K, k))  # (K,)
    c2 = _over([comb(j, k - 2) if k >= 2 else 0 for j in range(K)], comb(K, k))  # (K,)
    below = np.zeros_like(rs)  # (N, K) sum_{j < m} C(j, k-2) R_(j), exclusive prefix sums
    below[:, 1:] = np.cumsum(rs * c2, axis=1)[:, :-1]
    a_sorted = c1 * rs - below  # (N, K) eq. (passk)
    A = np.empty_like(r)
    np.put_along_axis(A, order, a_sorted, axis=1)  # back to the group's order
    if std_eps is not None:
        c = r - group_mean(r)  # (N, K)
        std = np.sqrt((c * c).sum(axis=1, keepdims=True) / max(K - 1, 1))  # (N, 1) Bessel
        A = np.divide(A, std + std_eps, out=np.zeros_like(A), where=std + std_eps > 0)
    return A

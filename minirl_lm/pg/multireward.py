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

Every `|R| <= 1e150` (`advantages.REWARD_MAX`: a std squares the spread); a weighted sum beyond
float64 is a ValueError naming `gdpo` and the range of its inputs.

Names in the frameworks (`docs/next.md` has their versions, files and defaults):

```text
gdpo weights, std_eps,    TRL multi_objective_aggregation="normalize_then_sum" (nanstd (Bessel)
ddof 1, batch_eps         + 1e-4 per reward, reward_weights, then the batch: (A - mean) /
                          (nanstd + 1e-4)); verl algorithm.adv_estimator="gdpo" (GRPO's
                          advantage per reward key (torch.std + 1e-6), weighted sum, then
                          masked_whiten over the batch's tokens); NeMo-RL GDPOAdvantageEstimator
                          (an optional leave-one-out baseline per reward, / (std + 1e-6) where
                          std > 0, then the batch's (A - mean) / std)
```
"""

import numpy as np

from minirl_lm.boundary import DDOF, NONNEGATIVE, array, boundary, optional
from minirl_lm.pg.advantages import REWARD_MAX, standardized

__all__ = ["gdpo"]


@boundary(
    rewards=array("N K M", low=-REWARD_MAX, high=REWARD_MAX),
    weights=optional(array("M")),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    batch_eps=optional(NONNEGATIVE),
    returns="A",
)
def gdpo(rewards, *, weights=None, std_eps=1e-8, ddof=0, batch_eps=None):
    """GDPO advantages (N, K), eq. (gdpo): each reward standardized in its group, then summed.

    Args:
        rewards: `(N, K, M)` rewards, `M >= 1` per response, every `|R| <= 1e150`.
        weights: `(M,)` weights `c_m` of the sum (default ones).
        std_eps: the stabilizer `xi >= 0` of each group's std.
        ddof: 0 (population std) or 1 (Bessel, the frameworks').
        batch_eps: None (no batch step), or the stabilizer `>= 0` of eq. (gdpo_batch): the
            summed advantages whitened over all `N*K` responses (TRL: 1e-4 with `ddof=1`).

    Returns:
        `(N, K)` advantages; a reward constant in a group adds exactly 0 there.

    Raises:
        ValueError: a bad argument (named), or advantages beyond float64 (large weights; named
            after the function, with the range of its inputs).
    """
    N, K, M = rewards.shape
    c = np.ones(M) if weights is None else weights  # (M,)
    Z = np.stack([standardized.core(rewards[:, :, m], std_eps, ddof) for m in range(M)], axis=2)  # (N, K, M)
    A = (Z * c).sum(axis=2)  # (N, K) eq. (gdpo)
    if batch_eps is not None:
        A = standardized.core(A.reshape(1, N * K), batch_eps, ddof).reshape(N, K)  # eq. (gdpo_batch)
    return A

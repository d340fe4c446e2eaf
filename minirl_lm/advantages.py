"""Baselines: the group of K responses to one prompt is its own baseline.

Rewards come as an `(N, K)` array: `N` prompts, `K` sampled responses each (row `n` of the array
is the group of prompt `n`; flattened prompt-major it is rows `n*K .. n*K + K - 1` of a `(B,)`
batch). With `R_k` the reward of member `k`:

```text
none          A_k = R_k                                               eq. (pg_vanilla)
mean          A_k = R_k - mean(R)                                     eq. (pg_centred)
standardized  A_k = (R_k - mean(R)) / (std(R) + xi)                   eq. (pg_normalized)
loo           A_k = R_k - (1/(K-1)) sum_{j != k} R_j                  eq. (pg_loo)
                  = (K / (K-1)) (R_k - mean(R))
```

The stabilizer `xi` is the argument `eps` of `standardized` and `advantages` (a different
quantity from the clip range `epsilon` of `clip.py`).

The update these weights feed is `(1/K) sum_k A_k grad log pi(y_k | x)`. Over the draws of a
group, `E[centred update] = ((K-1)/K) grad J`: `R_k` is part of its own baseline, so the term
`R_k grad log pi(y_k)` is shrunk by `1/K` (self-inclusion bias); leave-one-out removes `R_k`
from its baseline and is unbiased. Standardizing divides by a random spread and is not a scaled
gradient in general.

Defined edge cases (no gradient here: rewards are data):

- a group of equal rewards gives `A = 0` exactly (the mean of such a group is taken as the
  common value itself, because `np.mean` of identical floats can differ from them in the last
  bit);
- `K = 1` is a group of equal rewards: centred and standardized advantages are bitwise 0, so the
  update vanishes identically. With the Bessel std (`ddof=1`) the `K = 1` spread is `0/0`; it is
  defined as 0 here, so the advantage is `0 / (0 + xi) = 0` as well;
- leave-one-out at `K = 1` has no "others" and raises ValueError.

Deviation from the textbook form: leave-one-out is computed as `(K/(K-1)) (R_k - mean)`, the
same number algebraically (to rounding), so that equal rewards give exactly 0.

Population std (`ddof=0`) is the default; `ddof=1` is what TRL and verl use (TRL
`trl/trainer/utils.py` `nanstd` @ `f2cd57710a` (2026-07-24); verl
`verl/trainer/ppo/core_algos.py` `compute_grpo_outcome_advantage` @ `1dda039b9c` (2026-08-22);
the page "Where to go next" maps the rest). `ddof` is the int 0 or 1 (not a bool, not a float).

Domain: rewards are `(N, K)` with `K >= 1` and every `|R| <= 1e150` (`REWARD_MAX`), for all four
baselines; anything else raises ValueError naming `rewards`. The bound keeps the arithmetic
finite: the standardized baseline squares the spread `(R - mean)^2`, which overflows float64
(max about `1.8e308`) for spreads beyond about `1e154`, and a group mean sums `K` rewards; at
`1e150` both stay finite for any practical `K` (up to about `4e7`). Inside the domain, a group
whose squared spread underflows (sum of `(R - mean)^2 < 1e-290`, i.e. `|R - mean| < 1e-145` or
so) has its std computed on the rescaled deviations, so a tiny spread with `eps = 0` still
standardizes to unit scale instead of to 0. Neither guard changes the arithmetic of ordinary
inputs.
"""

import numpy as np

from minirl_lm.checks import choice, float_array, float_scalar, int_scalar, mask_array

BASELINES = ("none", "mean", "standardized", "loo")
REWARD_MAX = 1e150      # |rewards| bound: the standardized baseline squares the spread


def _rewards(rewards):
    """Validate rewards (N, K): finite, K >= 1, |r| <= REWARD_MAX; returns float64 (N, K)."""
    r = float_array(rewards, "rewards", ndim=2)
    if r.shape[1] < 1:
        raise ValueError(f"rewards: expected K >= 1 responses per prompt (shape (N, K)), "
                         f"got shape {r.shape}")
    if r.shape[0] < 1:
        raise ValueError(f"rewards: expected N >= 1 prompts (shape (N, K)), got shape {r.shape}")
    if r.size and np.abs(r).max() > REWARD_MAX:
        raise ValueError(f"rewards: expected |r| <= {REWARD_MAX:g} (the standardized baseline "
                         f"squares the spread, which overflows float64 beyond ~1e154), got max "
                         f"|r| = {np.abs(r).max():g}")
    return r


def _group_mean(r):
    """Mean of each group, (N, 1); exactly the common value when a group's rewards are equal."""
    mean = r.mean(axis=1, keepdims=True)                       # (N, 1)
    equal = (r.max(axis=1, keepdims=True) == r.min(axis=1, keepdims=True))
    return np.where(equal, r[:, :1], mean)                     # (N, 1)


def no_baseline(rewards):
    """No baseline, eq. (pg_vanilla): `A = R`.

    Args:
        rewards: `(N, K)` rewards.

    Returns:
        `(N, K)` advantages (a copy of the rewards).
    """
    r = _rewards(rewards)
    return r.copy()


def centred(rewards):
    """The group mean as baseline, eq. (pg_centred): `A = R - mean of the group`.

    Args:
        rewards: `(N, K)` rewards.

    Returns:
        `(N, K)` advantages; exactly 0 for a group of equal rewards.
    """
    r = _rewards(rewards)
    return r - _group_mean(r)                                  # (N, K)


def standardized(rewards, eps=1e-8, ddof=0):
    """Group-standardized advantages, eq. (pg_normalized): `A = (R - mean) / (std + xi)`.

    Args:
        rewards: `(N, K)` rewards.
        eps: the stabilizer `xi >= 0`.
        ddof: 0 for the population std (default), 1 for the Bessel std (defined as 0 at
            `K = 1`).

    Returns:
        `(N, K)` advantages; exactly 0 for a group of equal rewards.
    """
    r = _rewards(rewards)
    eps = float_scalar(eps, "eps", low=0.0)
    ddof = int_scalar(ddof, "ddof", low=0, high=1)
    c = r - _group_mean(r)                                     # (N, K)
    dof = max(r.shape[1] - ddof, 1)                            # K = 1, ddof = 1: c == 0, so std = 0
    ss = (c * c).sum(axis=1, keepdims=True)                    # (N, 1)
    std = np.sqrt(ss / dof)                                    # (N, 1)
    # c*c underflows (subnormal or 0) below ~1e-154; rescale groups whose sum of squares is
    # under 1e-290 (|c| < ~1e-145: never an ordinary group), leaving all others bit-identical
    if ss.min() < 1e-290 and (tiny := (ss < 1e-290) & (c != 0).any(axis=1, keepdims=True)).any():
        s = np.where(tiny, np.abs(c).max(axis=1, keepdims=True), 1.0)      # (N, 1)
        cs = c / s                                             # (N, K)
        std = np.where(tiny, s * np.sqrt((cs * cs).sum(axis=1, keepdims=True) / dof), std)
    denom = std + eps                                          # (N, 1)
    # eq. (pg_normalized); a zero spread with eps = 0 gives 0, not 0/0
    return np.divide(c, denom, out=np.zeros_like(c), where=denom > 0)


def leave_one_out(rewards):
    """Leave-one-out advantages, eq. (pg_loo): `A_k = R_k - mean of the other K - 1 rewards`.

    Args:
        rewards: `(N, K)` rewards with `K >= 2`.

    Returns:
        `(N, K)` advantages.

    Raises:
        ValueError: `K < 2`, naming `rewards`.
    """
    r = _rewards(rewards)
    K = r.shape[1]
    if K < 2:
        raise ValueError(f"rewards: leave-one-out needs K >= 2 responses per prompt "
                         f"(no others to average at K = 1), got shape {r.shape}")
    return (K / (K - 1)) * (r - _group_mean(r))                # eq. (pg_loo)


def advantages(rewards, baseline="standardized", eps=1e-8, ddof=0):
    """Group advantages with the chosen baseline.

    Args:
        rewards: `(N, K)` rewards.
        baseline: `"none"`, `"mean"`, `"standardized"` or `"loo"`.
        eps: the stabilizer `xi` of `"standardized"` (checked whatever the baseline).
        ddof: 0 or 1, the std of `"standardized"` (checked whatever the baseline).

    Returns:
        `(N, K)` advantages.

    Raises:
        ValueError: an unknown baseline, `"loo"` with `K = 1`, or bad rewards.
    """
    choice(baseline, "baseline", BASELINES)
    eps = float_scalar(eps, "eps", low=0.0)
    ddof = int_scalar(ddof, "ddof", low=0, high=1)
    if baseline == "none":
        return no_baseline(rewards)
    if baseline == "mean":
        return centred(rewards)
    if baseline == "loo":
        return leave_one_out(rewards)
    return standardized(rewards, eps=eps, ddof=ddof)


def broadcast(adv, mask):
    """Put each response's advantage on every one of its real tokens.

    Args:
        adv: `(B,)` advantages, or `(N, K)` (flattened prompt-major to `B = N*K`).
        mask: `(B, T)` 0/1 float mask.

    Returns:
        `(B, T)` per-token advantages, 0 at padding.
    """
    mask = mask_array(mask, "mask")
    a = float_array(adv, "adv")
    if a.ndim not in (1, 2):
        raise ValueError(f"adv: expected shape (B,) or (N, K), got {a.shape}")
    if a.ndim == 2:
        a = a.reshape(-1)
    if a.shape != (mask.shape[0],):
        raise ValueError(f"adv: expected {mask.shape[0]} advantages (one per row of mask), "
                         f"got shape {np.shape(adv)}")
    return a[:, None] * mask                                   # (B, T)


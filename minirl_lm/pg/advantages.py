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

The stabilizer `xi` is the argument `std_eps` of every function here (`eps` is the clip range
`epsilon` of `clip.py`, never this one).

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

Population std (`ddof=0`) is the default; `ddof=1` is what TRL and verl use (TRL's `nanstd`,
verl's `torch.std` in `compute_grpo_outcome_advantage`). `ddof` is the int 0 or 1 (not a bool,
not a float).

Domain: rewards are `(N, K)` with `K >= 1` and every `|R| <= 1e150` (`REWARD_MAX`), for all four
baselines; anything else raises ValueError naming `rewards`. The bound keeps the arithmetic
finite: the standardized baseline squares the spread `(R - mean)^2`, which overflows float64
(max about `1.8e308`) for spreads beyond about `1e154`, and a group mean sums `K` rewards; at
`1e150` both stay finite for any practical `K` (up to about `4e7`). Inside the domain, a group
whose squared spread underflows (sum of `(R - mean)^2 < 1e-290`, i.e. `|R - mean| < 1e-145` or
so) has its std computed on the rescaled deviations, so a tiny spread with `std_eps = 0` still
standardizes to unit scale instead of to 0. Neither guard changes the arithmetic of ordinary
inputs.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
K                         TRL num_generations (8); verl rollout.n (1); OpenRLHF
                          --rollout.n_samples_per_prompt (1; rloo, reinforce_baseline, group_norm
                          and dr_grpo assert it is > 1)
"standardized"            TRL scale_rewards="group"; verl adv_estimator=grpo; OpenRLHF
                          --algo.advantage.estimator group_norm
std_eps (1e-8)            TRL 1e-4; verl epsilon=1e-6; OpenRLHF 1e-9 (none is a setting)
ddof (0)                  TRL, verl and OpenRLHF: 1 (Bessel)
"mean"                    TRL scale_rewards="none"; verl norm_adv_by_std_in_grpo=False; OpenRLHF
                          dr_grpo (reinforce_baseline: then whitened over the batch)
"loo"                     TRL RLOOTrainer; verl adv_estimator=rloo (or rloo_vectorized); OpenRLHF
                          rloo
reinforce_pp              verl adv_estimator=reinforce_plus_plus; OpenRLHF reinforce
batch_std (1e-4, ddof=1)  TRL scale_rewards="batch"
```
"""

import numpy as np

from minirl_lm.boundary import DDOF, MASK, NONNEGATIVE, array, boundary, number, one_of, padded

__all__ = ["BASELINES", "REWARD_MAX", "bounded_rewards", "group_mean"]
__all__ += ["no_baseline", "centred", "standardized", "leave_one_out", "advantages"]
__all__ += ["broadcast", "reinforce_pp", "reinforce_pp_baseline", "remax", "opo", "batch_std"]

BASELINES = ("none", "mean", "standardized", "loo")
REWARD_MAX = 1e150  # |rewards| bound: the standardized baseline squares the spread


def bounded_rewards(rewards, greedy_rewards=None):
    """Every `|R| <= REWARD_MAX`, the advantages' domain (the standardized baseline squares the
    spread); ReMax's greedy rewards too."""
    if (m := np.abs(rewards).max()) > REWARD_MAX:
        return (
            f"rewards: expected |r| <= {REWARD_MAX:g} (the standardized baseline squares the spread, "
            f"which overflows float64 beyond ~1e154), got max |r| = {m:g}"
        )
    if greedy_rewards is not None and (m := np.abs(greedy_rewards).max()) > REWARD_MAX:
        return f"greedy_rewards: expected |r| <= {REWARD_MAX:g}, got max {m:g}"


def _others(rewards, baseline="loo"):
    """Leave-one-out has `K >= 2` rewards per group to average."""
    if baseline == "loo" and rewards.shape[1] < 2:
        return f"rewards: leave-one-out needs K >= 2 responses per prompt (others to average), got {rewards.shape}"


def group_mean(r):
    """Mean of each group of checked rewards `(N, K)`, `(N, 1)`; exactly the common value when
    a group's rewards are equal (`np.mean` of identical floats can differ from them)."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


@boundary(rewards=array("N K"), where=[bounded_rewards])
def no_baseline(rewards):
    """No baseline, eq. (pg_vanilla): `A = R`.

    Args:
        rewards: `(N, K)` rewards.

    Returns:
        `(N, K)` advantages (a copy of the rewards).
    """
    return rewards  # eq. (pg_vanilla); the engine's copy


@boundary(rewards=array("N K"), where=[bounded_rewards])
def centred(rewards):
    """The group mean as baseline, eq. (pg_centred): `A = R - mean of the group`.

    Args:
        rewards: `(N, K)` rewards.

    Returns:
        `(N, K)` advantages; exactly 0 for a group of equal rewards.
    """
    return advantages.core(rewards, "mean")


@boundary(rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[bounded_rewards])
def standardized(rewards, std_eps=1e-8, ddof=0):
    """Group-standardized advantages, eq. (pg_normalized): `A = (R - mean) / (std + xi)`.

    Args:
        rewards: `(N, K)` rewards.
        std_eps: the stabilizer `xi >= 0`.
        ddof: 0 for the population std (default), 1 for the Bessel std (defined as 0 at
            `K = 1`).

    Returns:
        `(N, K)` advantages; exactly 0 for a group of equal rewards.
    """
    c = rewards - group_mean(rewards)  # (N, K)
    dof = max(rewards.shape[1] - ddof, 1)  # K = 1, ddof = 1: c == 0, so std = 0
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


@boundary(rewards=array("N K"), where=[bounded_rewards, _others])
def leave_one_out(rewards):
    """Leave-one-out advantages, eq. (pg_loo): `A_k = R_k - mean of the other K - 1 rewards`.

    Args:
        rewards: `(N, K)` rewards with `K >= 2`.

    Returns:
        `(N, K)` advantages.

    Raises:
        ValueError: `K < 2`, naming `rewards`.
    """
    return advantages.core(rewards, "loo")


@boundary(
    rewards=array("N K"),
    baseline=one_of(BASELINES),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[bounded_rewards, _others],
)
def advantages(rewards, baseline="standardized", std_eps=1e-8, ddof=0):
    """Group advantages with the chosen baseline.

    Args:
        rewards: `(N, K)` rewards.
        baseline: `"none"`, `"mean"`, `"standardized"` or `"loo"`.
        std_eps: the stabilizer `xi` of `"standardized"` (checked whatever the baseline).
        ddof: 0 or 1, the std of `"standardized"` (checked whatever the baseline).

    Returns:
        `(N, K)` advantages.

    Raises:
        ValueError: an unknown baseline, `"loo"` with `K = 1`, or bad rewards.
    """
    if baseline == "none":
        return rewards.copy()  # eq. (pg_vanilla); not the caller's array (GRPO returns both)
    if baseline == "standardized":
        return standardized.core(rewards, std_eps, ddof)
    c = rewards - group_mean(rewards)  # (N, K) eq. (pg_centred)
    K = rewards.shape[1]
    return c if baseline == "mean" else (K / (K - 1)) * c  # eq. (pg_loo)


def _one_per_row(adv, mask):
    """One advantage per row of the mask."""
    if adv.size != mask.shape[0]:
        return f"adv: expected {mask.shape[0]} advantages (one per row of mask), got shape {adv.shape}"


@boundary(mask=MASK, adv=array("B", "N K"), where=[_one_per_row])
def broadcast(adv, mask):
    """Put each response's advantage on every one of its real tokens.

    Args:
        adv: `(B,)` advantages, or `(N, K)` (flattened prompt-major to `B = N*K`).
        mask: `(B, T)` 0/1 float mask.

    Returns:
        `(B, T)` per-token advantages, 0 at padding.
    """
    return adv.reshape(-1, 1) * mask  # (B, T)


# ---- the frameworks' other advantages: REINFORCE++, ReMax, OPO, batch std ---------------------
#
#     reinforce_pp           A_{b,t} = whiten_batch(G_{b,t}),  G_{b,t} = sum_{t' >= t} gamma^(t'-t) r_{b,t'}
#                                                                                  eq. (rpp)
#     reinforce_pp_baseline  A_{b,t} = whiten_batch(r_b - mean_group(r))         eq. (rpp_baseline)
#     remax                  A_k = r_k - R(x, y_greedy(x))                         eq. (remax)
#     opo                    A_k = r_k - sum_j |y_j| r_j / sum_j |y_j|             eq. (opo)
#     batch_std              A_k = (r_k - mean_group(r)) / (std_batch(r) + std_eps)    eq. (pg_batch_std)
#
# whiten_batch(x) = (x - m) / sqrt(v + std_eps) with m, v the mean and variance of x over every real
# token of the batch (v with ddof), std_eps inside the square root. Batch statistics couple the
# prompts: the advantage of one response depends on the rewards of every other prompt of the
# batch, so the expected update of one prompt is no longer a function of that prompt alone.


def _whiten_tokens(x, mask, std_eps, ddof):
    """(x - mean) / sqrt(var + std_eps) over the real tokens of a (B, T) array; 0 at padding.

    No real token, or every real value equal: exactly 0 (so past that test M >= 2 > ddof). A
    `var + std_eps` beyond float64 (a spread past ~1e154) is taken on the scale of the largest
    deviation, where it is finite: the whitened values are at most sqrt(M) in size.
    """
    real = mask > 0  # (B, T)
    M = int(real.sum())
    if M == 0 or x[real].max() == x[real].min():
        return np.zeros_like(x)
    m = x[real].sum() / M  # token mean over the batch
    c = np.where(real, x - m, 0.0)  # (B, T)
    s = np.abs(c).max()  # scale: c*c cannot overflow
    var = s * s * ((c / s) ** 2).sum() / (M - ddof)  # eq. (rpp); M >= 2 > ddof here
    if np.isfinite(var + std_eps):
        return c / np.sqrt(var + std_eps)  # (B, T)
    return (c / s) / np.sqrt(((c / s) ** 2).sum() / (M - ddof) + std_eps / s / s)  # on the scale s


_returns_to_go = padded(  # the returns to go sum over the later tokens of a row
    "REINFORCE++'s returns to go (a sum over the later tokens)",
    "minirl_lm.multiturn.values.returns_actions (mask: every token of the row, action_mask: the trained ones)",
)


def _one_row_per_response(rewards, mask):
    """The mask has one row per response, `B = N*K`, prompt-major."""
    if mask.shape[0] != rewards.size:
        return f"mask: expected {rewards.size} rows (one per response, B = N*K), got shape {mask.shape}"


@boundary(
    mask=MASK,
    token_rewards=array("B T"),
    gamma=number(0.0, 1.0),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[_returns_to_go],
    returns="A",
)
def reinforce_pp(token_rewards, mask, gamma=1.0, std_eps=1e-8, ddof=1):
    """REINFORCE++ advantages (B, T), eq. (rpp): returns to go, whitened over the batch's tokens.

    ```text
    G_{b,t} = r_{b,t} + gamma G_{b,t+1},  G = 0 after the last real token
    A_{b,t} = (G_{b,t} - m) / sqrt(v + std_eps),  m, v over every real token of the batch
    ```

    Args:
        token_rewards: `(B, T)` per-token rewards, the KL folded per token (for instance
            `critic.per_token_rewards`); values at padding are ignored.
        mask: `(B, T)` 0/1, right-padded (the returns sum over the later tokens).
        gamma: discount in `[0, 1]`.
        std_eps: `>= 0`, added to the variance inside the square root (verl: `1e-8`).
        ddof: 0 or 1; 1 is the Bessel variance verl uses (the default here).

    Returns:
        `(B, T)` advantages, 0 at padding. A batch with no real token, or whose returns are all
        equal, gives exactly 0; a single real token with `ddof=1` has variance 0 (defined here;
        verl raises) and advantage 0.

    Raises:
        ValueError: a bad argument (named; a mask with holes too), or returns to go beyond
            float64 (named after the function, with the range of its inputs).
    """
    G = np.zeros_like(token_rewards)  # (B, T) returns to go
    acc = np.zeros(token_rewards.shape[0])  # (B,)
    for t in range(token_rewards.shape[1] - 1, -1, -1):
        acc = (token_rewards[:, t] + gamma * acc) * mask[:, t]  # eq. (rpp): G_t = r_t + gamma G_{t+1}
        G[:, t] = acc
    return _whiten_tokens(G, mask, std_eps, ddof)  # an inf return: a NaN advantage, reported


@boundary(
    rewards=array("N K"),
    mask=MASK,
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[bounded_rewards, _one_row_per_response],
    returns="A",
)
def reinforce_pp_baseline(rewards, mask, std_eps=1e-8, ddof=1):
    """REINFORCE++-baseline advantages (B, T), eq. (rpp_baseline): group mean off, then whitened.

    ```text
    A_{b,t} = whiten_batch(r_b - mean_group(r))   on every real token of response b
    ```

    Args:
        rewards: `(N, K)` sequence rewards, prompt-major (row `b = n*K + k` of mask).
        mask: `(B, T)` 0/1 with `B = N*K`; holes allowed (the statistics are over the trained
            tokens, wherever they sit).
        std_eps: as in `reinforce_pp` (verl: `1e-8`, inside the square root).
        ddof: as in `reinforce_pp` (verl: 1, the Bessel variance).

    Returns:
        `(B, T)` advantages, 0 at padding. K = 1 gives exactly 0 (the centred advantage of a
        group of one is 0; verl instead takes the group mean as 0 at K = 1, so its advantage is
        the whitened raw reward); equal rewards in every group give exactly 0.
    """
    c = advantages.core(rewards, "mean").ravel()  # (B,) eq. (pg_centred)
    return _whiten_tokens(c[:, None] * mask, mask, std_eps, ddof)  # eq. (rpp_baseline)


@boundary(rewards=array("N K"), greedy_rewards=array("N"), where=[bounded_rewards])
def remax(rewards, greedy_rewards):
    """ReMax advantages (N, K), eq. (remax): the baseline is the reward of the greedy response.

    Args:
        rewards: `(N, K)` rewards of the sampled responses.
        greedy_rewards: `(N,)` reward of each prompt's greedy (argmax-decoded) response.

    Returns:
        `(N, K)` advantages `r - r_greedy`. The baseline does not depend on the samples, so the
        update is unbiased for every K, K = 1 included; a sample equal to the greedy reward gets
        exactly 0.
    """
    return rewards - greedy_rewards[:, None]  # eq. (remax)


@boundary(rewards=array("N K"), lengths=array("N K", low=0.0), where=[bounded_rewards], returns="A")
def opo(rewards, lengths):
    """OPO advantages (N, K), eq. (opo): the group baseline weighted by response length.

    ```text
    A_k = r_k - sum_j |y_j| r_j / sum_j |y_j|
    ```

    Args:
        rewards: `(N, K)` sequence rewards.
        lengths: `(N, K)` response lengths `|y|` (real tokens), `>= 0`.

    Returns:
        `(N, K)` advantages. K = 1 and equal rewards give exactly 0 (verl takes the baseline as
        0 at K = 1, so its advantage is the raw reward). A group whose responses are all empty
        (total length 0) falls back to the plain group mean; empty responses carry no token, so
        their advantage never reaches the gradient.

    Raises:
        ValueError: a bad argument (named), or lengths so large that the weighted baseline
            overflows (named after the function).
    """
    tot = lengths.sum(axis=1, keepdims=True)  # (N, 1)
    weighted = (lengths * rewards).sum(axis=1, keepdims=True) / np.maximum(tot, 1e-300)  # (N, 1)
    base = np.where(tot > 0, weighted, rewards.mean(axis=1, keepdims=True))  # (N, 1) eq. (opo)
    equal = rewards.max(axis=1, keepdims=True) == rewards.min(axis=1, keepdims=True)
    base = np.where(equal, rewards[:, :1], base)  # exactly the common value
    return rewards - base  # (N, K)


@boundary(rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[bounded_rewards])
def batch_std(rewards, std_eps=1e-8, ddof=0):
    """Batch-std advantages (N, K), eq. (pg_batch_std): group mean off, one std for the batch.

    ```text
    A_k = (r_k - mean_group(r)) / (std(all N*K rewards) + std_eps)
    ```

    TRL `scale_rewards="batch"` is `std_eps=1e-4, ddof=1`. Every prompt's advantage is divided by
    the same number, so the direction within a batch is the mean-centred one; over the draws the
    divisor depends on every prompt's rewards.

    Args:
        rewards: `(N, K)` rewards, `|r| <= REWARD_MAX`.
        std_eps: the stabilizer `xi >= 0`, added to the batch's std.
        ddof: 0 for the population std (default), 1 for the Bessel std.

    Returns:
        A (np.ndarray): `(N, K)`; K = 1 and equal rewards within every group give exactly 0. A batch
            of one reward with `ddof=1` has std defined as 0 (as TRL does).
    """
    c = rewards - group_mean(rewards)  # (N, K) eq. (pg_centred)
    flat = rewards.ravel()
    if flat.max() == flat.min():  # every reward equal: c == 0
        return np.zeros_like(c)
    dev = flat - flat.mean()  # two rewards differ: some dev != 0
    s = np.abs(dev).max()  # scale > 0: dev*dev cannot overflow
    # flat.size >= 2 > ddof; the largest |dev / s| is 1, so std >= s / sqrt(N K) > 0
    std = s * np.sqrt(((dev / s) ** 2).sum() / (flat.size - ddof))
    return c / (std + std_eps)  # eq. (pg_batch_std)

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
  non-finite loss or gradient, e.g. `rho A` overflowing for a finite `rho`, or a weighted sum
  beyond float64) is rejected with a ValueError naming `clipped_surrogate`, what overflowed and
  the range of its inputs, instead of returning `inf` to an optimizer. `clip_fraction` never
  raises: such a token is unclipped, an `A > 0` one with `rho = inf` is clipped.

The aggregation weights are `core.ops.agg_weights`, eq. (pg_agg), the one definition of them
(`reinforce.token_weights` is its checked entry; a standalone copy of this file,
`scripts/standalone.py`, inlines it). Each public function declares its arguments with
`boundary` (the engine checks them, and the result, once); its body is the math, and
`clipped_surrogate.core` and `clip_fraction.core` are those bodies, which GRPO calls on its own
checked arguments.

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

import numpy as np

from minirl_lm.boundary import ADVANTAGE, EPS, EPS_HIGH, MASK, TOKENS, boundary
from minirl_lm.core.ops import AGGREGATION, adv_tokens, agg_weights, log_ratio

__all__ = ["CLIP", "clipped_surrogate", "clip_fraction"]

CLIP = dict(logp=TOKENS, logp_old=TOKENS, adv=ADVANTAGE, mask=MASK, eps=EPS, eps_high=EPS_HIGH)  # both declare it


def branches(logp, logp_old, A, mask, eps, eps_high):
    """rho, the unclipped and the clipped branch (B, T) of read arguments, A (B, T); rho = 1 at
    padding, both branches 0 where A = 0 (no 0 * inf), rho = inf where it overflows."""
    with np.errstate(over="ignore"):  # overflow to inf is handled
        u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
        rho = np.exp(u)  # (B, T) rho_t; inf if u > ~709.78
        surr1 = np.multiply(rho, A, out=np.zeros_like(rho), where=A != 0)  # (B, T) unclipped
        surr2 = np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A  # (B, T) clipped
    return rho, surr1, surr2


@boundary(**CLIP, **AGGREGATION, returns="loss dloss_dlogp")
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
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    f = np.minimum(surr1, surr2)  # (B, T) eq. (ppo_clip)
    with np.errstate(over="ignore"):  # a sum beyond float64 is inf
        loss = -(w * f).sum()
    # backward: d f / d logp = rho A where the unclipped branch is active (ties included), else 0
    df_dlogp = np.where(surr1 <= surr2, surr1, 0.0)  # (B, T) d rho / d logp = rho
    return float(loss), -w * df_dlogp  # (B, T) 0 at padding


@boundary(**CLIP)
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
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    clipped = surr2 < surr1  # (B, T); at padding rho = 1: never
    n = mask.sum()
    return float(clipped.sum() / n) if n > 0 else 0.0

"""The clip family beyond PPO: dual-clip, sequence-level ratios (GSPO), clipped IS weights (CISPO).

`clip.py` is the token-level PPO surrogate and its page; these three variants are read beside
the off-policy page rather than the PPO one. Same conventions as `clip.py`: an
objective of token log-probs returning `(loss, dloss_dlogp)`, with `rho_t = exp(logp - logp_old)`
(masked before the exp, so padding has rho = 1 and gradient 0) and the aggregation weights `w`
of eq. (pg_agg) (`core.ops.agg_weights`; `reinforce.token_weights` is its checked entry).

Dual-clip (Ye et al. 2020; verl's `clip_ratio_c`, default 3.0), for a real token:

```text
f1_t = min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps_high) A_t)         eq. (ppo_clip)
f_t  = max(f1_t, c A_t)  if A_t < 0,   f1_t  otherwise,   c > 1          eq. (dual_clip)
```

For A < 0 and rho > max(c, 1 + eps_high) the PPO term rho A is unbounded below (a bad token
that became much more likely); the dual clip caps its loss at c |A| and its gradient is 0.
c <= 1 is rejected: the cap would then already act at rho = 1 (nothing has moved yet) and
zero the gradient of every negative-advantage token on the first epoch.
Gradient: rho A where the unclipped branch is the active one (ties included), else 0.

Sequence-level ratios (GSPO, Zheng et al. 2025), one ratio per response, `|y_b|` its length:

```text
s_b = exp( (1/|y_b|) sum_t (logp - logp_old) )   geometric mean     eq. (gspo_ratio)
S_b = exp( sum_t (logp - logp_old) )             product            eq. (gspo_ratio)
f_b = min(s_b A_b, clip(s_b, 1 - eps, 1 + eps_high) A_b)
loss = -(1/B) sum_b f_b                                              eq. (gspo)
```

d s_b / d logp[b, t] = s_b / |y_b| (geometric) or S_b (product) on every real token: one
response moves as a whole, clipped or not. The product of |y| token ratios drifts like a
random walk in log space, so for long responses it leaves any [1 - eps, 1 + eps] at once and
the whole batch is clipped; the geometric mean keeps the scale of one token ratio. A response
of length 0 contributes nothing.

LUSPO (length-unbiased sequence policy optimization, arXiv:2602.05261): GSPO's clipped sequence term weighted by
the response's length, as TRL sums the broadcast sequence loss over its tokens (seq-sum):

```text
loss = -(1/B) sum_b |y_b| f_b                                        eq. (luspo)
dloss/dlogp[b, t] = -(1/B) s_b A_b  on every real token, if unclipped (geometric ratio)
```

GSPO's `1/|y_b|` in `ds_b/dlogp` cancels the length weight: every token of an unclipped response
gets the whole sequence term, as in REINFORCE with `seq_sum`, which it equals at `s = 1`.

CISPO (MiniMax-M1): the clipped ratio as a stop-gradient weight on log pi,

```text
loss = -sum_{b,t} w[b,t] sg[clip(rho_t, rho_min, rho_max)] A_t logp_t     eq. (cispo)
dloss/dlogp = -w sg[clip(rho)] A                    (no token ever loses its gradient)
```

TRL (`loss_type="cispo"`): rho_min = None (no lower bound), rho_max = `epsilon_high` itself
(ScaleRL recommends 5.0). verl (`policy_loss.loss_mode="cispo"`): rho_min = 1 - clip_ratio_low,
rho_max = 1 + clip_ratio_high. rho_max < 1 (or rho_min > 1) is rejected: the weight at rho = 1
would no longer be 1 and the first epoch would not be REINFORCE.

A non-finite result from finite input (the product ratio overflowing with A < 0, say) is a
ValueError naming the function and the range of its inputs, as in `clip.py`; each public function
declares its arguments with `boundary`. Demonstrated by `python examples/off_policy.py` (the
bypass rows).

Names in the frameworks (`docs/next.md` in the minirl_lm repository has their versions, files
and defaults); the values in parentheses are their defaults, not results of this library.

```text
dual_clip_surrogate c (3.0)  TRL delta (None); verl actor.clip_ratio_c (3.0); OpenRLHF
                             --actor.dual_clip (None: off)
gspo_surrogate               TRL importance_sampling_level="sequence"; verl
                             policy_loss.loss_mode="gspo" with loss_agg_mode="seq-mean-token-mean"
                             (GSPO follows loss_agg_mode in the released code; an earlier
                             commit used seq-mean-token-mean whatever loss_agg_mode said);
                             OpenRLHF --actor.policy_loss_type gspo (the ratio is the exp of the
                             mean token log-ratio; each sequence's token mean, whatever
                             --actor.loss_agg_mode)
sequence_ratio "product"     TRL loss_type="vespo" (in a detached weight, not a clip)
luspo_surrogate              TRL loss_type="luspo" with importance_sampling_level="sequence"
                             (the (B, 1) loss summed over the mask, then the batch mean); verl,
                             OpenRLHF: none
cispo_loss rho_max (5.0)     TRL loss_type="cispo" (the cap is epsilon_high); verl
                             policy_loss.loss_mode="cispo" ([1 - clip_ratio_low, 1 +
                             clip_ratio_high], [0.8, 1.2] at the defaults); OpenRLHF: none
```
"""

import numpy as np

from minirl_lm.boundary import ADVANTAGE, EPS, EPS_HIGH, MASK, TOKENS, array, boundary, number, one_of, optional
from minirl_lm.core.ops import AGGREGATION, adv_tokens, agg_weights, log_ratio
from minirl_lm.pg.clip import CLIP, branches

__all__ = [
    "RATIOS",
    "dual_clip_surrogate",
    "sequence_ratio",
    "ratio_scale",
    "gspo_surrogate",
    "luspo_surrogate",
    "cispo_loss",
]

RATIOS = ("geometric", "product")
RATIO = dict(logp=TOKENS, logp_old=TOKENS, mask=MASK)  # the arrays of a sequence ratio
SEQUENCE = dict(logp=TOKENS, logp_old=TOKENS, adv=array("B"), mask=MASK, eps=EPS, eps_high=EPS_HIGH)


def _dual_clip_bound(c, name, dims):
    """The dual-clip bound `c > 1`, a kind: with `c <= 1` the cap would already act at `rho = 1`."""
    c = number()(c, name, dims)
    if c <= 1.0:
        raise ValueError(
            f"{name}: expected a number > 1 (the dual clip caps the loss of an A < 0 "
            f"token at c |A| once rho > c; with c <= 1 it would already cap tokens "
            f"at rho = 1, where nothing has moved, and zero their gradient), got {c}"
        )
    return c


@boundary(**CLIP, c=_dual_clip_bound, **AGGREGATION, returns="loss dloss_dlogp")
def dual_clip_surrogate(
    logp, logp_old, adv, mask, *, eps=0.2, eps_high=None, c=3.0, agg="token_mean", max_len=None
):
    """Dual-clip PPO loss, eq. (dual_clip).

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) or (B, T) advantages.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        eps: the PPO clip range `[1 - eps, 1 + eps_high]`, `eps` in `(0, 1]`.
        eps_high: see `eps` (default `eps`).
        c: the dual-clip bound, `c > 1` (verl's `clip_ratio_c`, default 3.0).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`, a float and a (B, T) array (0 at padding).

    Raises:
        ValueError: a bad argument (named; `c <= 1` says why), or a non-finite loss or gradient
            (named after the function, with the range of its inputs).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)  # (B, T) rho A, clip(rho) A
    f1 = np.minimum(surr1, surr2)  # (B, T) eq. (ppo_clip)
    dual = (A < 0) & (c * A > f1)  # (B, T) the cap is active
    f = np.where(dual, c * A, f1)  # (B, T) eq. (dual_clip)
    loss = -(w * f).sum()
    # backward: rho A on the unclipped branch (ties: unclipped), 0 where either clip is active
    active = (surr1 <= surr2) & ~dual  # (B, T)
    return float(loss), -w * np.where(active, surr1, 0.0)  # (B, T)


@boundary(**RATIO, ratio=one_of(RATIOS), returns="s")
def sequence_ratio(logp, logp_old, mask, ratio="geometric"):
    """Per-response ratio `s` (B,), eq. (gspo_ratio): the geometric mean or the product.

    The sum and the length `|y_b|` run over the trained tokens of a row (holes skipped), so a
    row with holes has its compacted row's ratio. A response of length 0 has ratio 1.
    `d s_b / d logp[b, t]` is `s_b / |y_b|` (geometric) or `s_b` (product) on every trained token.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        mask: (B, T) 0/1; holes allowed.
        ratio: "geometric" (GSPO) or "product".

    Returns:
        `(B,)` ratios.

    Raises:
        ValueError: a bad argument (named), or a ratio beyond float64 (the product of long
            responses, or a mean log-ratio beyond ~709.78), named after the function, never inf
            or NaN (`gspo_surrogate` clips an infinite ratio with A > 0 to a finite loss).
    """
    u = log_ratio(logp, logp_old, mask).sum(axis=1)  # (B,) log prod_t rho_t
    return np.exp(u * ratio_scale(mask, ratio))  # (B,) eq. (gspo_ratio)


def ratio_scale(mask, ratio):
    """`(1/s) d s_b / d logp[b, t]` on a trained token: `1/|y_b|` (B,) for the geometric mean
    (1 for an empty row), 1.0 for the product."""
    return 1.0 / np.maximum(mask.sum(axis=1), 1.0) if ratio == "geometric" else 1.0


def _sequence_surrogate(logp, logp_old, A, mask, eps, eps_high, ratio, length):
    """The clipped sequence-ratio term of read arguments, each response's term weighted by
    `length` (B,): GSPO's (ones) and LUSPO's (`|y_b|`)."""
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    B = mask.shape[0]
    s = sequence_ratio.core(logp, logp_old, mask, ratio)  # (B,) eq. (gspo_ratio)
    scale = ratio_scale(mask, ratio)  # (B,) or 1.0
    real = mask.sum(axis=1) > 0  # (B,) empty responses add 0
    surr1 = np.multiply(s, A, out=np.zeros_like(s), where=(A != 0) & real)  # (B,)
    surr2 = np.clip(s, 1.0 - eps, 1.0 + eps_high) * A * real  # (B,)
    f = np.minimum(surr1, surr2) * length  # (B,) eq. (gspo), eq. (luspo)
    loss = -f.sum() / B
    # backward: d f_b / d logp[b, t] = length_b s_b A_b * scale_b on every real token, if unclipped
    df = np.where(surr1 <= surr2, surr1 * scale * length, 0.0)  # (B,)
    return float(loss), -(df / B)[:, None] * mask  # (B, T)


@boundary(**SEQUENCE, ratio=one_of(RATIOS), returns="loss dloss_dlogp")
def gspo_surrogate(logp, logp_old, adv, mask, *, eps=0.2, eps_high=None, ratio="geometric"):
    """GSPO loss, eq. (gspo): the clipped surrogate on one ratio per response.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) one advantage per response.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        eps: clip range `[1 - eps, 1 + eps_high]` of the sequence ratio (defaults as
            in `clip.py`; the GSPO paper reports ranges of order 1e-4 for the geometric mean,
            unverified here).
        eps_high: see `eps`.
        ratio: "geometric" (GSPO) or "product", eq. (gspo_ratio).

    Returns:
        `(loss, dloss_dlogp)`: loss `-(1/B) sum_b f_b`, gradient (B, T), 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    return _sequence_surrogate(logp, logp_old, adv, mask, eps, eps_high, ratio, np.ones(len(adv)))


@boundary(**SEQUENCE, returns="loss dloss_dlogp")
def luspo_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=None):
    """LUSPO loss, eq. (luspo): GSPO's clipped term of each response times its length `|y_b|`.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) one advantage per response.
        mask: (B, T) 0/1; holes allowed (`|y_b|` counts the trained tokens).
        eps: clip range `[1 - eps, 1 + eps_high]` of the geometric-mean ratio.
        eps_high: see `eps` (default `eps`).

    Returns:
        `(loss, dloss_dlogp)`: loss `-(1/B) sum_b |y_b| f_b`, gradient (B, T), 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    return _sequence_surrogate(logp, logp_old, adv, mask, eps, eps_high, "geometric", mask.sum(axis=1))


@boundary(
    logp=TOKENS,
    logp_old=TOKENS,
    adv=ADVANTAGE,
    mask=MASK,
    rho_min=optional(number(0.0, 1.0)),
    rho_max=number(1.0),
    **AGGREGATION,
    returns="loss dloss_dlogp",
)
def cispo_loss(logp, logp_old, adv, mask, *, rho_min=None, rho_max=5.0, agg="token_mean", max_len=None):
    """CISPO loss, eq. (cispo): REINFORCE weighted by the stop-gradient clipped ratio.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) or (B, T) advantages.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        rho_min: lower bound of the weight, in `[0, 1]`, or None for none (TRL).
        rho_max: upper bound, `>= 1` (TRL: `epsilon_high`; verl: `1 + clip_ratio_high`).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`, a float and a (B, T) array (0 at padding).

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho = np.exp(log_ratio(logp, logp_old, mask))  # (B, T) may be inf: clipped next
    wclip = np.minimum(rho, rho_max) if rho_min is None else np.clip(rho, rho_min, rho_max)
    coef = w * wclip * A  # (B, T) sg[clip(rho)] A w
    loss = -(coef * logp).sum()  # eq. (cispo)
    return float(loss), -coef  # (B, T) the weight is data

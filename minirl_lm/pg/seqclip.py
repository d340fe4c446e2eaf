"""The clip family beyond PPO: dual-clip, sequence-level ratios (GSPO), clipped IS weights (CISPO).

Why a file of its own: `clip.py` is the token-level PPO surrogate and its page; these three
variants, with their hand-derived gradients, would take it well past ~300 lines, and each is
read beside the off-policy page rather than the PPO one. Same conventions as `clip.py`: an
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

Non-finite results (the product ratio overflowing with A < 0, say) raise ValueError naming
logp, as in `clip.py`. Demonstrated by `python examples/off_policy.py` (the bypass rows).

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
dual_clip_surrogate c (3.0)  TRL delta (None); verl actor.clip_ratio_c (3.0); OpenRLHF
                             --actor.dual_clip (None: off)
gspo_surrogate               TRL importance_sampling_level="sequence"; verl
                             policy_loss.loss_mode="gspo" with loss_agg_mode="seq-mean-token-mean"
                             (at 0.9.1 GSPO follows loss_agg_mode, default token-mean; at commit
                             1dda039b9c it used seq-mean-token-mean whatever loss_agg_mode said);
                             OpenRLHF --actor.policy_loss_type gspo (the ratio is the exp of the
                             mean token log-ratio; each sequence's token mean, whatever
                             --actor.loss_agg_mode)
sequence_ratio "product"     TRL loss_type="vespo" (in a detached weight, not a clip)
luspo_surrogate              TRL loss_type="luspo" with importance_sampling_level="sequence"
                             (trl/trainer/grpo_trainer.py:3112-3119, 3175-3182: the (B, 1)
                             loss summed over the mask, then the batch mean); verl, OpenRLHF:
                             none
cispo_loss rho_max (5.0)     TRL loss_type="cispo" (the cap is epsilon_high); verl
                             policy_loss.loss_mode="cispo" ([1 - clip_ratio_low, 1 +
                             clip_ratio_high], [0.8, 1.2] at the defaults); OpenRLHF: none
```
"""

import numpy as np

from minirl_lm.core.ops import AGGS, adv_tokens, agg_weights, log_ratio
from minirl_lm.pg.checks import cispo_args, dual_clip_args, finite_among, gspo_args, ratio_args

RATIOS = ("geometric", "product")


def _finite(loss, grad, what):
    """The finite guard of the three losses: a non-finite loss or gradient names logp."""
    if not (np.isfinite(loss) and np.isfinite(grad).all()):
        raise ValueError(
            f"logp: expected logp - logp_old small enough that the {what} is "
            f"finite, got a non-finite loss or gradient (the ratio overflows "
            f"float64 beyond exp(~709.78))"
        )


def _rho(logp, logp_old, mask):
    """rho_t = exp(logp - logp_old) (B, T), 1 at padding, inf where it overflows."""
    with np.errstate(over="ignore"):
        return np.exp(log_ratio(logp, logp_old, mask))  # (B, T) eq. (ratio)


def dual_clip_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=None, c=3.0, agg="token_mean", max_len=None):
    """Dual-clip PPO loss, eq. (dual_clip).

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) or (B, T) advantages.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        eps: the PPO clip range `[1 - eps, 1 + eps_high]` (eps_high defaults to eps).
        eps_high: see `eps`.
        c: the dual-clip bound, `c > 1` (verl's `clip_ratio_c`, default 3.0).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`, a float and a (B, T) array (0 at padding).

    Raises:
        ValueError: `c <= 1` (the cap would act at rho = 1, before anything moved), bad
            shapes or values, or a non-finite result.
    """
    logp, logp_old, mask, adv, eps, eps_high, c, max_len = dual_clip_args(
        logp, logp_old, adv, mask, eps, eps_high, c, agg, max_len, AGGS
    )
    if c <= 1.0:
        raise ValueError(
            f"c: expected a number > 1 (the dual clip caps the loss of an A < 0 "
            f"token at c |A| once rho > c; with c <= 1 it would already cap tokens "
            f"at rho = 1, where nothing has moved, and zero their gradient), got {c}"
        )
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho = _rho(logp, logp_old, mask)  # (B, T) eq. (ratio)
    with np.errstate(over="ignore", invalid="ignore"):  # inf: rejected by _finite
        surr1 = np.multiply(rho, A, out=np.zeros_like(rho), where=A != 0)  # (B, T) rho A
        surr2 = np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A  # (B, T)
        f1 = np.minimum(surr1, surr2)  # (B, T) eq. (ppo_clip)
        dual = (A < 0) & (c * A > f1)  # (B, T) the cap is active
        f = np.where(dual, c * A, f1)  # (B, T) eq. (dual_clip)
        loss = -(w * f).sum()
    # backward: rho A on the unclipped branch (ties: unclipped), 0 where either clip is active
    active = (surr1 <= surr2) & ~dual  # (B, T)
    dloss_dlogp = -w * np.where(active, surr1, 0.0)  # (B, T)
    _finite(loss, dloss_dlogp, "dual-clip surrogate")
    return float(loss), dloss_dlogp


def sequence_ratio(logp, logp_old, mask, ratio="geometric"):
    """Per-response ratio (B,), eq. (gspo_ratio): the geometric mean or the product.

    logp, logp_old, mask are (B, T). The sum and the length `|y_b|` run over the trained tokens
    of a row (holes skipped), so a row with holes has its compacted row's ratio. A response of
    length 0 has ratio 1. A ratio beyond float64
    (the product of long responses, or a mean log-ratio beyond ~709.78) is a ValueError naming the
    log-prob of largest magnitude, never inf or NaN (`gspo_surrogate` clips an infinite ratio
    with A > 0 to a finite loss).
    """
    logp, logp_old, mask = ratio_args(logp, logp_old, mask, ratio, RATIOS)
    s = _seq_ratio(logp, logp_old, mask, ratio)[0]  # (B,)
    return finite_among(s, f"the {ratio} sequence ratio", {"logp": logp, "logp_old": logp_old})


def _seq_ratio(logp, logp_old, mask, ratio):
    """(s (B,), ds/dlogp per real token (B, 1)) on checked inputs."""
    with np.errstate(over="ignore", invalid="ignore"):  # +-inf, NaN: callers reject them
        u = log_ratio(logp, logp_old, mask).sum(axis=1)  # (B,) log prod_t rho_t
        scale = 1.0 / np.maximum(mask.sum(axis=1), 1.0) if ratio == "geometric" else np.ones(len(u))
        s = np.exp(u * scale)  # (B,) eq. (gspo_ratio)
    return s, scale


def gspo_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=None, ratio="geometric"):
    """GSPO loss, eq. (gspo): the clipped surrogate on one ratio per response.

    Args:
        logp: (B, T) token log-probs under pi_theta and pi_old.
        logp_old: see `logp`.
        adv: (B,) one advantage per response.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        eps: clip range `[1 - eps, 1 + eps_high]` of the sequence ratio (defaults as
            in `clip.py`; the GSPO paper reports ranges of order 1e-4 for the geometric mean,
            unverified here).
        eps_high: see `eps`.
        ratio: "geometric" (GSPO) or "product", eq. (gspo_ratio).

    Returns:
        `(loss, dloss_dlogp)`: loss `-(1/B) sum_b f_b`, gradient (B, T), 0 at padding.
    """
    logp, logp_old, mask, A, eps, eps_high = gspo_args(logp, logp_old, adv, mask, eps, eps_high, ratio, RATIOS)
    return _gspo(logp, logp_old, A, mask, eps, eps_high, ratio, np.ones(len(A)))


def _gspo(logp, logp_old, A, mask, eps, eps_high, ratio, length):
    """`gspo_surrogate` on checked arguments, each response's term weighted by `length` (B,)."""
    B = max(mask.shape[0], 1)
    s, scale = _seq_ratio(logp, logp_old, mask, ratio)  # (B,), (B,)
    real = mask.sum(axis=1) > 0  # (B,) empty responses add 0
    with np.errstate(over="ignore", invalid="ignore"):  # inf, NaN: rejected by _finite
        surr1 = np.multiply(s, A, out=np.zeros_like(s), where=(A != 0) & real)  # (B,)
        surr2 = np.clip(s, 1.0 - eps, 1.0 + eps_high) * A * real  # (B,)
        f = np.minimum(surr1, surr2) * length  # (B,) eq. (gspo), eq. (luspo)
        loss = -f.sum() / B
        # backward: d f_b / d logp[b, t] = length_b s_b A_b * scale_b on every real token, if unclipped
        df = np.where(surr1 <= surr2, surr1 * scale * length, 0.0)  # (B,)
        dloss_dlogp = -(df / B)[:, None] * mask  # (B, T)
    _finite(loss, dloss_dlogp, f"{ratio} sequence-ratio surrogate")
    return float(loss), dloss_dlogp


def luspo_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=None):
    """LUSPO loss, eq. (luspo): GSPO's clipped term of each response times its length `|y_b|`.

    Args:
        logp: (B, T) token log-probs under pi_theta and pi_old.
        logp_old: see `logp`.
        adv: (B,) one advantage per response.
        mask: (B, T) 0/1; holes allowed (`|y_b|` counts the trained tokens).
        eps: clip range `[1 - eps, 1 + eps_high]` of the geometric-mean ratio.
        eps_high: see `eps` (default `eps`).

    Returns:
        `(loss, dloss_dlogp)`: loss `-(1/B) sum_b |y_b| f_b`, gradient (B, T), 0 at padding.
    """
    logp, logp_old, mask, A, eps, eps_high = gspo_args(
        logp, logp_old, adv, mask, eps, eps_high, "geometric", RATIOS
    )
    return _gspo(logp, logp_old, A, mask, eps, eps_high, "geometric", mask.sum(axis=1))


def cispo_loss(logp, logp_old, adv, mask, rho_min=None, rho_max=5.0, agg="token_mean", max_len=None):
    """CISPO loss, eq. (cispo): REINFORCE weighted by the stop-gradient clipped ratio.

    Args:
        logp: (B, T) token log-probs under pi_theta and pi_old.
        logp_old: see `logp`.
        adv: (B,) or (B, T) advantages.
        mask: (B, T) 0/1; holes allowed (untrained positions inside a row).
        rho_min: lower bound of the weight, `<= 1`, or None for none (TRL).
        rho_max: upper bound, `>= 1` (TRL: `epsilon_high`; verl: `1 + clip_ratio_high`).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`, a float and a (B, T) array (0 at padding).
    """
    logp, logp_old, mask, adv, rho_min, rho_max, max_len = cispo_args(
        logp, logp_old, adv, mask, rho_min, rho_max, agg, max_len, AGGS
    )
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho = _rho(logp, logp_old, mask)  # (B, T) may be inf: clipped next
    wclip = np.minimum(rho, rho_max) if rho_min is None else np.clip(rho, rho_min, rho_max)
    with np.errstate(over="ignore", invalid="ignore"):  # inf: rejected by _finite
        coef = w * wclip * A  # (B, T) sg[clip(rho)] A w
        loss = -(coef * logp).sum()  # eq. (cispo)
        dloss_dlogp = -coef  # (B, T) the weight is data
    _finite(loss, dloss_dlogp, "CISPO loss")
    return float(loss), dloss_dlogp

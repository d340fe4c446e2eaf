"""Trust regions without the hard clip: SAPO's soft gate, DPPO's divergence masks, GMPO's
geometric mean, VESPO's Gamma weight.

`clip.py` and `seqclip.py` hold the clipped ratio and its family (dual clip, GSPO, CISPO); the
four objectives here keep the update near `pi_old` by other means. Same conventions: an
objective of token log-probs returning `(loss, dloss_dlogp)`, `rho_t = exp(logp - logp_old)`
masked before the exp, `w` the aggregation weights of eq. (pg_agg), `|y_b|` the trained tokens of
row `b` (holes skipped), `sg[.]` a stop-gradient (a weight on data).

SAPO (arXiv:2511.20347), a smooth gate of temperature `tau` instead of the clip:

```text
gate(rho; tau) = (4 / tau) sigmoid(tau (rho - 1)),   tau = tau_pos if A > 0 else tau_neg
loss = -sum_{b,t} w gate(rho_t; tau_t) A_t                                  eq. (sapo)
d gate / d logp = 4 sigmoid(z) sigmoid(-z) rho,   z = tau (rho - 1)
```

At rho = 1 the slope is 4 (1/4) 1 = 1: the first epoch is REINFORCE. Far from rho = 1 the slope
decays like `rho e^{-tau |rho - 1|}`: no token's gradient is ever exactly 0, none survives a
large move. `tau_neg > tau_pos` closes the gate faster for negative advantages.

DPPO (arXiv:2602.04879), a mask on the divergence of each token from `pi_old`, and a truncated,
detached ratio (the loss of CISPO, eq. (cispo), times the mask):

```text
TV:  keep_t = (p_t - p_old,t <= delta_high)  if A_t > 0,  (p_t - p_old,t >= -delta)  else
KL:  D_t    = p_old log(p_old / p) + (1 - p_old) log((1 - p_old + 1e-8) / (1 - p + 1e-8))
     keep_t = (D_t <= delta_high or p <= p_old)  if A_t > 0,
              (D_t <= delta or p >= p_old)       else                       eq. (dppo_mask)
loss = -sum_{b,t} w keep_t sg[min(rho_t, c)] A_t logp_t                     eq. (dppo)
dloss/dlogp = -w keep sg[min(rho, c)] A
```

with `p = exp(logp)` the token's probability (not its ratio): a token loses its gradient once
its probability has moved by more than `delta` in the direction its advantage pushes, whatever
its ratio (a ratio of 10 on a token of probability 1e-4 moves it by 9e-4). The `1e-8` of the KL
is the framework's (it keeps `p = 1` finite). A large `c` (1e300): no truncation (prime-rl); verl
clamps the log-ratio to [-20, 20] before `min(rho, c)`, so there any `c` above `e^20` is `e^20`.

GMPO (arXiv:2507.20673), the geometric mean of the token ratios, each clipped in log space
against the direction of its advantage:

```text
u_t   = logp_t - logp_old,t
ubar_t = sign(A) min(sign(A) u_t, sign(A) clip(u_t, -eps, eps_high))
g_b   = exp( (1/|y_b|) sum_t ubar_t )
loss  = -(1/B) sum_b g_b A_b                                                eq. (gmpo)
dloss/dlogp[b, t] = -(1/B) A_b g_b / |y_b|   where u_t is not clipped, else 0
```

Clipped: `u_t > eps_high` with `A > 0`, `u_t < -eps` with `A < 0` (a tie is unclipped). `eps` is
a bound on the log-ratio here (verl's `clip_ratio`, read as `|log rho| <= 0.2`).

VESPO (arXiv:2602.10693), the product sequence ratio inside a Gamma-shaped detached weight:

```text
W_b   = exp( sum_t u_t )                              (eq. (gspo_ratio), product)
phi_b = exp( lam + k log W_b - lam W_b )  (phi(1) = 1)                      eq. (vespo_weight)
        k, lam = k_pos, lam_pos if A_b >= 0 else k_neg, lam_neg
loss  = -sum_{b,t} w sg[phi_b] A_b logp_t                                   eq. (vespo)
dloss/dlogp = -w phi_b A_b
```

`phi` peaks at `W = k / lam` and vanishes at both `W -> 0` and `W -> inf`: a response the policy
moved far from `pi_old` either way stops pulling. TRL clamps each `u_t` to [-20, 20], `log W` to
[log 1e-8, 20] and `lam` to at least 1e-4; here `phi` is computed without them. The clamps change
`phi` wherever a token's `|u_t|` passes 20 (one response with log-ratios -25 and +15: TRL's `W` is
`e^-5`, ours `e^-10`), whatever the size of `phi`. Where `lam` or `k` are near float64's
largest number the three terms of `log phi` overflow one by one; their sum is then taken scaled
by `max(lam, k)`, so `phi` is 0 where it underflows and an overflow is reported, never NaN.

A non-finite result from finite input (a gate `4 / tau` beyond float64, a `phi` beyond it) is a
ValueError naming the function and the range of its inputs; each public function declares its
arguments with `boundary`. Demonstrated on the clip page (docs/clip.md, section "Trust regions
without the clip").

Names in the frameworks (`docs/next.md` has their defaults, file and line, and the runs against
the released code; `docs/conformance.md` the documented differences):

```text
sapo_loss   TRL loss_type="sapo"; verl policy_loss.loss_mode="sapo"
dppo_loss   verl loss_mode="dppo_tv" / "dppo_kl"; prime-rl's default loss (TV, no truncation)
gmpo_loss   verl loss_mode="geo_mean"
vespo_loss  TRL loss_type="vespo"
```
"""

import numpy as np

from minirl_lm.boundary import (
    ADVANTAGE,
    MASK,
    NONNEGATIVE,
    POSITIVE,
    TOKENS,
    array,
    boundary,
    number,
    one_of,
    optional,
)
from minirl_lm.core.ops import AGGREGATION, adv_tokens, agg_weights, log_ratio, sigmoid

__all__ = ["DIVERGENCES", "sapo_loss", "dppo_mask", "dppo_loss", "gmpo_loss", "vespo_weight", "vespo_loss"]

DIVERGENCES = ("tv", "kl")
TOKEN = dict(logp=TOKENS, logp_old=TOKENS, adv=ADVANTAGE, mask=MASK)  # one advantage per token or row
SEQUENCE = dict(logp=TOKENS, logp_old=TOKENS, adv=array("B"), mask=MASK)  # one advantage per row
DPPO_MASK = dict(divergence=one_of(DIVERGENCES), delta=POSITIVE, delta_high=optional(POSITIVE))
VESPO = dict(k_pos=NONNEGATIVE, lam_pos=POSITIVE, k_neg=NONNEGATIVE, lam_neg=POSITIVE)  # shapes, rates


# ---- SAPO: the soft gate


@boundary(**TOKEN, tau_pos=POSITIVE, tau_neg=POSITIVE, **AGGREGATION, returns="loss dloss_dlogp")
def sapo_loss(logp, logp_old, adv, mask, *, tau_pos=1.0, tau_neg=1.05, agg="seq_mean_token_mean", max_len=None):
    """SAPO loss, eq. (sapo): the smooth gate `(4/tau) sigmoid(tau (rho - 1))` times `A`.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) or (B, T) advantages.
        mask: (B, T) 0/1; holes allowed.
        tau_pos: the gate's temperature for `A > 0`, `> 0`.
        tau_neg: the temperature for `A <= 0`, `> 0`.
        agg: the aggregation of eq. (pg_agg) (the frameworks use per-sequence token means).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the (B, T) gradient `-w 4 sigmoid(z) sigmoid(-z) rho A`.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs: a `tau` so small that `4 / tau` overflows).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    tau = np.where(A > 0, tau_pos, tau_neg)  # (B, T)
    u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
    z = tau * (np.exp(u) - 1.0)  # (B, T); rho = inf: z = inf, the gate is 4 / tau
    gate = 4.0 / tau * sigmoid(z)  # (B, T) eq. (sapo)
    loss = -(w * gate * A).sum()
    # backward: d gate / d logp = (4/tau) sigma'(z) tau rho, in logs so rho = inf gives 0
    dgate = 4.0 * np.exp(-np.logaddexp(0.0, -z) - np.logaddexp(0.0, z) + u)  # (B, T)
    return float(loss), -w * dgate * A  # (B, T)


# ---- DPPO: the divergence masks


@boundary(**TOKEN, **DPPO_MASK, returns="keep")
def dppo_mask(logp, logp_old, adv, mask, *, divergence="tv", delta=0.2, delta_high=None):
    """The tokens DPPO keeps, eq. (dppo_mask): (B, T) of 1.0 (kept) and 0.0 (masked or padding).

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) or (B, T) advantages (the side of the bound: A > 0 is bounded above).
        mask: (B, T) 0/1; holes allowed.
        divergence: "tv" (the move `p - p_old` of the token's probability) or "kl" (the KL of
            the two Bernoulli distributions `(p_old, 1 - p_old)` and `(p, 1 - p)`).
        delta: the bound for `A <= 0`, `> 0`.
        delta_high: the bound for `A > 0` (default `delta`).

    Returns:
        (B, T) 0/1 weights: 1.0 on the kept trained tokens.

    Raises:
        ValueError: a bad argument (named).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    delta_high = delta if delta_high is None else delta_high
    p, p_old = np.exp(logp), np.exp(logp_old)  # (B, T) probabilities, in [0, 1] for log-probs <= 0
    if divergence == "tv":
        up, down = p - p_old <= delta_high, p - p_old >= -delta  # (B, T)
    else:
        D = p_old * (logp_old - logp) + (1.0 - p_old) * np.log((1.0 - p_old + 1e-8) / (1.0 - p + 1e-8))
        up, down = (D <= delta_high) | (p <= p_old), (D <= delta) | (p >= p_old)  # (B, T)
    return np.where(A > 0, up, down) * mask  # (B, T) eq. (dppo_mask)


@boundary(**TOKEN, **DPPO_MASK, c=number(1.0), **AGGREGATION, returns="loss dloss_dlogp")
def dppo_loss(
    logp,
    logp_old,
    adv,
    mask,
    *,
    divergence="tv",
    delta=0.2,
    delta_high=None,
    c=3.0,
    agg="token_mean",
    max_len=None,
):
    """DPPO loss, eq. (dppo): the detached truncated ratio on the tokens of eq. (dppo_mask).

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) or (B, T) advantages.
        mask: (B, T) 0/1; holes allowed.
        divergence: "tv" or "kl", see `dppo_mask`.
        delta: see `dppo_mask`.
        delta_high: see `dppo_mask`.
        c: the truncation of the detached ratio, `>= 1` (1e300: none).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the (B, T) gradient `-w keep min(rho, c) A`.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    keep = dppo_mask.core(
        logp, logp_old, A, mask, divergence=divergence, delta=delta, delta_high=delta_high
    )  # (B, T) eq. (dppo_mask)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    wt = np.minimum(np.exp(log_ratio(logp, logp_old, mask)), c)  # (B, T) sg[min(rho, c)], data
    coef = np.multiply(w * wt * A, keep, out=np.zeros_like(wt), where=keep > 0)  # (B, T)
    loss = -(coef * logp).sum()  # eq. (dppo)
    return float(loss), -coef


# ---- GMPO: the geometric mean, clipped in log space


@boundary(**SEQUENCE, eps=POSITIVE, eps_high=optional(POSITIVE), returns="loss dloss_dlogp")
def gmpo_loss(logp, logp_old, adv, mask, eps=0.2, eps_high=None):
    """GMPO loss, eq. (gmpo): `-(1/B) sum_b A_b exp(mean_t ubar_t)`.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) one advantage per response.
        mask: (B, T) 0/1; holes allowed.
        eps: the lower bound `-eps` of the log-ratio, `> 0`.
        eps_high: the upper bound (default `eps`).

    Returns:
        `(loss, dloss_dlogp)`: a float and the (B, T) gradient; a row of length 0 adds 0.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    eps_high = eps if eps_high is None else eps_high
    B = mask.shape[0]
    n = mask.sum(axis=1)  # (B,) |y_b|
    u = log_ratio(logp, logp_old, mask)  # (B, T)
    sgn = np.sign(adv)[:, None]  # (B, 1)
    clipped = ((sgn > 0) & (u > eps_high)) | ((sgn < 0) & (u < -eps))  # (B, T) against A's push
    ubar = np.where(clipped, np.clip(u, -eps, eps_high), u) * (sgn != 0) * mask  # (B, T)
    g = np.exp(ubar.sum(axis=1) / np.maximum(n, 1.0))  # (B,) the geometric mean
    f = np.multiply(g, adv, out=np.zeros_like(g), where=(adv != 0) & (n > 0))  # (B,)
    loss = -f.sum() / B  # eq. (gmpo)
    # backward: d g_b / d logp[b, t] = g_b / |y_b| on the unclipped tokens
    return float(loss), -(f / (B * np.maximum(n, 1.0)))[:, None] * (mask * ~clipped)  # (B, T)


# ---- VESPO: the Gamma weight of the product ratio


@boundary(**SEQUENCE, **VESPO, returns="phi")
def vespo_weight(logp, logp_old, adv, mask, *, k_pos=2.0, lam_pos=3.0, k_neg=3.0, lam_neg=2.0):
    """The weight `phi_b` (B,) of eq. (vespo_weight), `phi = 1` at `W = 1`.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) advantages (their sign picks `k, lam`).
        mask: (B, T) 0/1; holes allowed.
        k_pos: the shape `k >= 0` for `A >= 0`.
        lam_pos: the rate `lam > 0` for `A >= 0`.
        k_neg: `k` for `A < 0`.
        lam_neg: `lam` for `A < 0`.

    Returns:
        `(B,)` weights in `[0, max phi]`: 0 where `W` or `phi` underflows.

    Raises:
        ValueError: a bad argument (named), or a `phi` beyond float64 (named after the function,
            with the range of its inputs), never inf or NaN.
    """
    logW = log_ratio(logp, logp_old, mask).sum(axis=1)  # (B,) log prod_t rho_t
    W = np.exp(logW)  # (B,) eq. (gspo_ratio), product; inf beyond ~709.78
    k = np.where(adv >= 0, k_pos, k_neg)  # (B,)
    lam = np.where(adv >= 0, lam_pos, lam_neg)  # (B,)
    log_phi = lam + np.where(k > 0, k * logW, 0.0) - lam * W  # (B,) eq. (vespo_weight)
    # lam, k near float64's max: the terms overflow one by one; the same sum scaled by s
    s = np.maximum(np.maximum(lam, k), 1.0)  # (B,)
    scaled = s * ((lam / s) * (1.0 - W) + np.where(k > 0, (k / s) * logW, 0.0))  # (B,)
    log_phi = np.where(np.isfinite(log_phi), log_phi, scaled)  # (B,)
    return np.exp(np.nan_to_num(log_phi, nan=-np.inf))  # (B,) NaN only from W = inf: phi = 0


@boundary(**SEQUENCE, **VESPO, **AGGREGATION, returns="loss dloss_dlogp")
def vespo_loss(
    logp, logp_old, adv, mask, *, k_pos=2.0, lam_pos=3.0, k_neg=3.0, lam_neg=2.0, agg="token_mean", max_len=None
):
    """VESPO loss, eq. (vespo): REINFORCE weighted by the detached `phi_b` of `vespo_weight`.

    Args:
        logp: (B, T) token log-probs under pi_theta.
        logp_old: (B, T) token log-probs under pi_old.
        adv: (B,) advantages.
        mask: (B, T) 0/1; holes allowed.
        k_pos: see `vespo_weight`.
        lam_pos: see `vespo_weight`.
        k_neg: see `vespo_weight`.
        lam_neg: see `vespo_weight`.
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the (B, T) gradient `-w phi_b A_b`.

    Raises:
        ValueError: a bad argument (named), or a non-finite `phi`, loss or gradient (named after
            the function, with the range of its inputs).
    """
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    phi = vespo_weight.core(
        logp, logp_old, adv, mask, k_pos=k_pos, lam_pos=lam_pos, k_neg=k_neg, lam_neg=lam_neg
    )  # (B,) data
    coef = w * (phi * adv)[:, None]  # (B, T) sg[phi] A w
    loss = -(coef * logp).sum()  # eq. (vespo)
    return float(loss), -coef

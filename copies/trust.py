# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/trust.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/trust.py -o DIR
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

"""Trust regions without the hard clip: SAPO's soft gate, DPPO's divergence masks, GMPO's
geometric mean, VESPO's Gamma weight.

Why a file of its own: `clip.py` and `seqclip.py` hold the clipped ratio and its family (dual
clip, GSPO, CISPO); the four objectives here keep the update near `pi_old` by other means, and
with their hand-derived gradients would take `seqclip.py` past 400 lines. Same conventions: an
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
`e^-5`, ours `e^-10`), whatever the size of `phi`.

Non-finite results raise ValueError naming logp. Demonstrated on the clip page (docs/clip.md,
section "Trust regions without the clip").

Names in the frameworks (`docs/next.md` has their defaults, file and line, and the runs against
the released code; `docs/conformance.md` the documented differences):

```text
sapo_loss   TRL loss_type="sapo"; verl policy_loss.loss_mode="sapo"
dppo_loss   verl loss_mode="dppo_tv" / "dppo_kl"; prime-rl's default loss (TV, no truncation)
gmpo_loss   verl loss_mode="geo_mean"
vespo_loss  TRL loss_type="vespo"
```
"""

import numbers

import numpy as np


__all__ = ["sapo_loss", "dppo_mask", "dppo_loss", "gmpo_loss", "vespo_weight", "vespo_loss"]


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


AGGS = ("seq_sum", "token_mean", "seq_mean_token_mean", "constant", "token_sum")


def agg_weights(mask, agg, max_len=None):
    """Per-token weights `w` (B, T) of aggregation `agg` over a checked 0/1 `mask` (B, T), eq.
    (pg_agg)."""
    B, T = mask.shape
    if agg == "token_sum":
        return mask.copy()  # (B, T) no normalizer at all
    if agg == "seq_sum":
        return mask / B  # (B, T)
    lengths = mask.sum(axis=1, keepdims=True)  # (B, 1) |y_b|
    if agg == "token_mean":
        return mask / max(lengths.sum(), 1.0)  # (B, T)
    if agg == "seq_mean_token_mean":
        return mask / (B * np.maximum(lengths, 1.0))  # (B, T) length 0: 0 / 1
    return mask / (B * (T if max_len is None else max_len))  # (B, T) "constant"


def adv_tokens(adv, mask):
    """A checked advantage of shape (B,) or (B, T) as (B, T): a (B,) advantage is put on every
    column (padding is weighted 0 by the caller's `w`, or multiply by `mask`)."""
    if adv.ndim == 1:
        return np.broadcast_to(adv[:, None], mask.shape)  # (B, T)
    return adv


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


# ----------------------------------------------------------------------------------------------
# minirl_lm/pg/trust.py itself
# ----------------------------------------------------------------------------------------------


DIVERGENCES = ("tv", "kl")
# the domains of the numbers, (low, low_open, None allowed): tau, delta, lam > 0; c >= 1; k >= 0
SAPO = {"tau_pos": (0.0, True, False), "tau_neg": (0.0, True, False)}
DPPO_MASK = {"delta": (0.0, True, False), "delta_high": (0.0, True, True)}
DPPO = {**DPPO_MASK, "c": (1.0, False, False)}
GMPO = {"eps": (0.0, True, False), "eps_high": (0.0, True, True)}
VESPO = {k: (0.0, k[0] == "l", False) for k in ("k_pos", "lam_pos", "k_neg", "lam_neg")}


def _rho(logp, logp_old, mask):
    """(u, rho) (B, T): the masked log-ratio and its exp (inf where it overflows)."""
    u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
    with np.errstate(over="ignore"):
        return u, np.exp(u)  # (B, T) eq. (ratio)


def _finite(loss, grad, what, logp, logp_old):
    """The finite guard: names the log-prob array of largest magnitude."""
    return finite_among((float(loss), grad), what, {"logp": logp, "logp_old": logp_old})


# ---- SAPO: the soft gate


def sapo_loss(logp, logp_old, adv, mask, tau_pos=1.0, tau_neg=1.05, agg="seq_mean_token_mean", max_len=None):
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
    """
    logp, logp_old, mask, adv, max_len, tau_pos, tau_neg = trust_args(
        logp, logp_old, adv, mask, agg, max_len, AGGS, SAPO, (tau_pos, tau_neg)
    )
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    tau = np.where(A > 0, tau_pos, tau_neg)  # (B, T)
    u, rho = _rho(logp, logp_old, mask)
    with np.errstate(over="ignore", invalid="ignore"):  # rho = inf: z = inf, the gate is 4 / tau
        z = tau * (rho - 1.0)  # (B, T)
        gate = 4.0 / tau * sigmoid(z)  # (B, T) eq. (sapo)
        loss = -(w * gate * A).sum()
        # backward: d gate / d logp = (4/tau) sigma'(z) tau rho, in logs so rho = inf gives 0
        dgate = 4.0 * np.exp(-np.logaddexp(0.0, -z) - np.logaddexp(0.0, z) + u)  # (B, T)
        dloss_dlogp = -w * dgate * A  # (B, T)
    return _finite(loss, dloss_dlogp, "SAPO loss", logp, logp_old)


# ---- DPPO: the divergence masks


def dppo_mask(logp, logp_old, adv, mask, divergence="tv", delta=0.2, delta_high=None):
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
    """
    logp, logp_old, mask, adv, _, delta, delta_high = trust_args(
        logp, logp_old, adv, mask, None, None, (), DPPO_MASK, (delta, delta_high)
    )
    choice(divergence, "divergence", DIVERGENCES)
    return _keep(
        logp, logp_old, adv_tokens(adv, mask), mask, divergence, delta, delta if delta_high is None else delta_high
    )


def _keep(logp, logp_old, A, mask, divergence, delta, delta_high):
    """`dppo_mask` on checked arguments (B, T)."""
    p, p_old = np.exp(logp), np.exp(logp_old)  # (B, T) probabilities, in [0, 1] for log-probs <= 0
    if divergence == "tv":
        up, down = p - p_old <= delta_high, p - p_old >= -delta  # (B, T)
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            D = p_old * (logp_old - logp) + (1.0 - p_old) * np.log((1.0 - p_old + 1e-8) / (1.0 - p + 1e-8))
        up, down = (D <= delta_high) | (p <= p_old), (D <= delta) | (p >= p_old)  # (B, T)
    return np.where(A > 0, up, down) * mask  # (B, T) eq. (dppo_mask)


def dppo_loss(
    logp, logp_old, adv, mask, divergence="tv", delta=0.2, delta_high=None, c=3.0, agg="token_mean", max_len=None
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
    """
    logp, logp_old, mask, adv, max_len, delta, delta_high, c = trust_args(
        logp, logp_old, adv, mask, agg, max_len, AGGS, DPPO, (delta, delta_high, c)
    )
    choice(divergence, "divergence", DIVERGENCES)
    A = adv_tokens(adv, mask)  # (B, T)
    keep = _keep(logp, logp_old, A, mask, divergence, delta, delta if delta_high is None else delta_high)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho = _rho(logp, logp_old, mask)[1]  # (B, T) data
    wt = np.minimum(rho, c)  # (B, T) sg[min(rho, c)]
    with np.errstate(over="ignore", invalid="ignore"):
        coef = np.multiply(w * wt * A, keep, out=np.zeros_like(rho), where=keep > 0)  # (B, T)
        loss = -(coef * logp).sum()  # eq. (dppo)
    return _finite(loss, -coef, "DPPO loss", logp, logp_old)


# ---- GMPO: the geometric mean, clipped in log space


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
    """
    logp, logp_old, mask, A, _, eps, eps_high = trust_args(
        logp, logp_old, adv, mask, None, None, (), GMPO, (eps, eps_high), False
    )
    eps_high = eps if eps_high is None else eps_high
    B = mask.shape[0]
    n = mask.sum(axis=1)  # (B,) |y_b|
    u = _rho(logp, logp_old, mask)[0]  # (B, T)
    sgn = np.sign(A)[:, None]  # (B, 1)
    clipped = ((sgn > 0) & (u > eps_high)) | ((sgn < 0) & (u < -eps))  # (B, T) against A's push
    ubar = np.where(clipped, np.clip(u, -eps, eps_high), u) * (sgn != 0) * mask  # (B, T)
    with np.errstate(over="ignore", invalid="ignore"):
        g = np.exp(ubar.sum(axis=1) / np.maximum(n, 1.0))  # (B,) the geometric mean
        f = np.multiply(g, A, out=np.zeros_like(g), where=(A != 0) & (n > 0))  # (B,)
        loss = -f.sum() / max(B, 1)  # eq. (gmpo)
        # backward: d g_b / d logp[b, t] = g_b / |y_b| on the unclipped tokens
        dloss_dlogp = -(f / (max(B, 1) * np.maximum(n, 1.0)))[:, None] * (mask * ~clipped)  # (B, T)
    return _finite(loss, dloss_dlogp, "GMPO loss", logp, logp_old)


# ---- VESPO: the Gamma weight of the product ratio


def vespo_weight(logp, logp_old, adv, mask, k_pos=2.0, lam_pos=3.0, k_neg=3.0, lam_neg=2.0):
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
    """
    logp, logp_old, mask, A, _, *kl = trust_args(
        logp, logp_old, adv, mask, None, None, (), VESPO, (k_pos, lam_pos, k_neg, lam_neg), False
    )
    return _phi(logp, logp_old, A, mask, *kl)


def _phi(logp, logp_old, A, mask, k_pos, lam_pos, k_neg, lam_neg):
    """`vespo_weight` on checked arguments (B,); 0 where `W` under- or overflows."""
    logW = _rho(logp, logp_old, mask)[0].sum(axis=1)  # (B,) log prod_t rho_t
    k = np.where(A >= 0, k_pos, k_neg)  # (B,)
    lam = np.where(A >= 0, lam_pos, lam_neg)  # (B,)
    with np.errstate(over="ignore", invalid="ignore"):
        log_phi = lam + np.where(k > 0, k * logW, 0.0) - lam * np.exp(logW)  # (B,) eq. (vespo_weight)
        return np.exp(np.nan_to_num(log_phi, nan=-np.inf))  # (B,) in [0, max phi]


def vespo_loss(
    logp, logp_old, adv, mask, k_pos=2.0, lam_pos=3.0, k_neg=3.0, lam_neg=2.0, agg="token_mean", max_len=None
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
    """
    logp, logp_old, mask, A, max_len, *kl = trust_args(
        logp, logp_old, adv, mask, agg, max_len, AGGS, VESPO, (k_pos, lam_pos, k_neg, lam_neg), False
    )
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    coef = w * (_phi(logp, logp_old, A, mask, *kl) * A)[:, None]  # (B, T) sg[phi] A w
    with np.errstate(over="ignore", invalid="ignore"):
        loss = -(coef * logp).sum()  # eq. (vespo)
    return _finite(loss, -coef, "VESPO loss", logp, logp_old)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/checks.py
#   The boundary of the policy-gradient part, token level: one bundle call per public function
# ----------------------------------------------------------------------------------------------


_UNSET = object()  # an argument the bundle was not given (None is an input to reject)


def token_batch(logps, mask, adv=_UNSET, agg=_UNSET, max_len=None, aggs=(), per_token=True):
    """Check a token-level batch; returns ``(*arrays, mask, adv, max_len)``. logps: ``{name:
    array}`` of ``(B, T)`` arrays (log-probs, weights), the first one the shape the others and
    the 0/1 ``mask`` (holes allowed) must have; adv: ``(B,)``, or ``(B, T)`` too if
    ``per_token`` (returned as given, None if not passed); agg: one of ``aggs`` (unchecked if
    not passed); max_len: None or an int >= 1, and for ``"constant"`` at least the longest
    response (the most trained tokens in a row)."""
    names = list(logps)
    arrays = [float_array(logps[n], n, ndim=2) for n in names]
    mask = mask_array(mask, "mask")
    for n, a in zip(names[1:] + ["mask"], arrays[1:] + [mask]):
        same_shape(names[0], arrays[0], n, a)
    A = None if adv is _UNSET else advantage(adv, mask, per_token)
    if agg is not _UNSET:
        max_len = aggregation(mask, agg, max_len, aggs)
    return (*arrays, mask, A, max_len)


def advantage(adv, mask, per_token=True):
    """``adv`` as float64 of shape ``(B,)`` (or ``(B, T)`` if ``per_token``) for a checked mask."""
    A = float_array(adv, "adv")
    if A.shape != (mask.shape[0],) and not (per_token and A.shape == mask.shape):
        want = f"({mask.shape[0]},)" + (f" or {mask.shape}" if per_token else "")
        raise ValueError(f"adv: expected shape {want}, got {A.shape}")
    return A


def aggregation(mask, agg, max_len, aggs):
    """Check ``agg`` (one of ``aggs``) and ``max_len`` for a checked mask; returns max_len."""
    choice(agg, "agg", aggs)
    max_len = None if max_len is None else int_scalar(max_len, "max_len", low=1)  # any agg
    n = mask.sum(axis=1).max()  # the most trained tokens in a row (holes not counted)
    if agg == "constant" and max_len is not None and max_len < n:
        raise ValueError(f"max_len: expected >= the longest response ({int(n)} trained tokens), got {max_len}")
    return max_len


def finite_among(value, what, arrays):
    """``finite_result(value, name, what)`` for a value (or a flat tuple) computed from several
    ``arrays`` (``{name: array}``), the ``name`` picked only on failure: the array of largest
    magnitude, the input that drove the overflow (a log-prob of 1e308, not the ordinary one it
    was subtracted from; the first name on a tie)."""
    if all(np.isfinite(v).all() for v in (value if isinstance(value, tuple) else (value,))):
        return value
    big = {n: float(np.abs(a).max(initial=0.0)) for n, a in arrays.items()}
    return finite_result(value, max(big, key=big.get), what)


def trust_args(logp, logp_old, adv, mask, agg, max_len, aggs, domains, values, per_token=True):
    """The arguments of a trust-region objective (trust.py): ``(logp, logp_old, mask, adv,
    max_len, *values)``; ``domains`` maps each number's name to ``(low, low_open, optional)``,
    ``values`` the numbers in that order (an optional one may be None: off); ``aggs=()``: no
    agg."""
    logp, logp_old, mask, adv, _ = token_batch(
        {"logp": logp, "logp_old": logp_old}, mask, adv, per_token=per_token
    )
    vals = [
        None if v is None and o else float_scalar(v, n, low=lo, low_open=op)
        for (n, (lo, op, o)), v in zip(domains.items(), values)
    ]
    return (logp, logp_old, mask, adv, aggregation(mask, agg, max_len, aggs) if aggs else None, *vals)


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


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


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


def choice(x, name, options):
    """Raise unless ``x`` is one of ``options`` (an unhashable ``x`` is a TypeError naming it)."""
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"{name}: expected one of {sorted(options, key=str)}, got unhashable {_describe(x)}"
        ) from None
    if isinstance(x, bool) or x not in options:  # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is
    finite; else raise a ValueError naming ``name``, the argument that drove the overflow."""
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


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

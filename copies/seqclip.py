# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/seqclip.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/seqclip.py -o DIR
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

import numbers

import numpy as np


__all__ = ["dual_clip_surrogate", "sequence_ratio", "gspo_surrogate", "luspo_surrogate",
    "cispo_loss"]


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


def clip_range(eps, eps_high):
    """``(eps, eps_high)``: eps in (0, 1], eps_high > 0 (default eps)."""
    eps = float_scalar(eps, "eps", low=0.0, low_open=True, high=1.0)
    return eps, (eps if eps_high is None else float_scalar(eps_high, "eps_high", low=0.0, low_open=True))


def finite_among(value, what, arrays):
    """``finite_result(value, name, what)`` for a value (or a flat tuple) computed from several
    ``arrays`` (``{name: array}``), the ``name`` picked only on failure: the array of largest
    magnitude, the input that drove the overflow (a log-prob of 1e308, not the ordinary one it
    was subtracted from; the first name on a tie)."""
    if all(np.isfinite(v).all() for v in (value if isinstance(value, tuple) else (value,))):
        return value
    big = {n: float(np.abs(a).max(initial=0.0)) for n, a in arrays.items()}
    return finite_result(value, max(big, key=big.get), what)


def dual_clip_args(logp, logp_old, adv, mask, eps, eps_high, c, agg, max_len, aggs):
    """The arguments of the dual-clip surrogate: clip_objective's and a finite ``c`` (its domain
    ``c > 1`` is the estimator's own rule, checked in seqclip.py)."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    eps, eps_high = clip_range(eps, eps_high)
    c = float_scalar(c, "c")
    return logp, logp_old, mask, adv, eps, eps_high, c, aggregation(mask, agg, max_len, aggs)


def ratio_args(logp, logp_old, mask, ratio, ratios):
    """The arguments of a sequence ratio: ``(logp, logp_old, mask)``."""
    logp, logp_old, mask, _, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask)
    choice(ratio, "ratio", ratios)
    return logp, logp_old, mask


def gspo_args(logp, logp_old, adv, mask, eps, eps_high, ratio, ratios):
    """The arguments of GSPO: ``(logp, logp_old, mask, adv (B,), eps, eps_high)``."""
    logp, logp_old, mask, A, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv, per_token=False)
    eps, eps_high = clip_range(eps, eps_high)
    choice(ratio, "ratio", ratios)
    return logp, logp_old, mask, A, eps, eps_high


def cispo_args(logp, logp_old, adv, mask, rho_min, rho_max, agg, max_len, aggs):
    """The arguments of CISPO: ``(logp, logp_old, mask, adv, rho_min, rho_max, max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    rho_max = float_scalar(rho_max, "rho_max", low=1.0)
    rho_min = None if rho_min is None else float_scalar(rho_min, "rho_min", low=0.0, high=1.0)
    return logp, logp_old, mask, adv, rho_min, rho_max, aggregation(mask, agg, max_len, aggs)


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

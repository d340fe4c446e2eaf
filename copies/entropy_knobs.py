# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/entropy_knobs.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/entropy_knobs.py -o DIR
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

"""Entropy: why it collapses (the identity), and the knobs the frameworks ship against it.

**The identity.** At a state s with `pi = softmax(theta[s])` and `H = -sum_v pi_v log pi_v`,
eq. (entropy_grad) of `pg/entropy.py` gives `dH/dtheta_v = -pi_v (log pi_v + H)`. A step
`delta` on the row's logits changes the entropy, to first order, by

```text
dH1 = sum_v delta_v dH/dtheta_v = -(E[delta log pi] - E[delta] E[log pi])
    = -Cov_{v ~ pi}(log pi_v, delta_v)                                        eq. (ent_identity)
```

(`H = -E[log pi]`). Along `theta + s delta`, `d log pi_v / ds = delta_v - E[delta]` (the
centred step `delta~`) and `d pi_v / ds = pi_v delta~_v`; differentiating `-E[delta~ log pi]`
once more (`dE[delta]/ds = Var(delta)`, `E[log pi + H] = 0`) gives the second-order term

```text
dH2 = -1/2 (Var_pi(delta) + Cov_pi(log pi, delta~^2))                         eq. (ent_second)
```

so `H(theta + delta) - H(theta) = dH1 + dH2 + O(|delta|^3)`, and the relative error of the
first-order prediction falls linearly in the step size. The natural-gradient step moves the
logits by `delta = eta A` (A the advantage of each action under pi), so
`dH1 = -eta Cov(log pi, A)`; the vanilla step moves them by `delta = eta pi A`, so
`dH1 = -eta Cov(log pi, pi A)`. Entropy falls when likely actions have positive advantage: they
dominate the covariance.

**The knobs**, each an objective of token log-probs (or a weight on one), `loss = -sum w f`:

```text
c_t   = (A_t - mean A)(logp_t - mean logp)   means over the batch's tokens  eq. (cov_term)
Clip-Cov: a uniformly random subset of m = max(floor(ratio n), 1) tokens (n trained tokens)
      among those with lb < c_t < ub whose clip is not active loses its gradient:
      f_t = corr_t min(rho A, clip(rho) A), corr_t in {0, 1}                 eq. (clip_cov)
      expected over the selection: corr_t = 1 - min(m, n_band) / n_band in the band
KL-Cov: the top max(floor(ratio n), 1) tokens by c_t get a penalty, no clip anywhere:
      f_t = rho A - k |logp - logp_old| on them, rho A elsewhere              eq. (kl_cov)
entropy mask: f_t = keep_t min(rho A, clip(rho) A), keep_t = 1[H(s_t) >= q], q the
      (1 - rho_H) quantile (linear) of the trained tokens' entropies; w unchanged  eq. (ent_mask)
adaptive coefficient: c' = clip(c + delta_c sign(H_target - H), c_min, c_max) (+ at equality);
      the bonus applied next step is c' if H <= H_target else 0               eq. (ent_adaptive)
```

Gradients, by hand: `d rho / d logp = rho`, the clipped branch is constant, and a detached
selection (corr, the top set, keep) is data: `g_t = -w_t corr_t rho A` (unclipped branch),
`g_t = -w_t (rho A - k sign(logp - logp_old))` for KL-Cov's top set (`sign(0) = 0`, the
subgradient autograd takes: on the first step of a batch, `rho = 1`, KL-Cov is plain REINFORCE).

Randomness: Clip-Cov with an `rng` draws the subset (explicit, seeded); with `rng=None` it returns
the exact expectation over the selection (each band token kept with probability `1 - m'/n_band`).
Ties of KL-Cov's top set go to the first token in row-major order.

TRL's entropy mask takes the quantile of the entropies cast to float32 and compares the float64
entropies with it: a token tied at the threshold whose float32 value rounds up is dropped (every
token tied at 1.1, say); `entropy_mask` takes the quantile in float64 and keeps it.

Names in the frameworks (`docs/next.md` has their defaults, file and line, and the runs against
the released code):

```text
clip_cov_loss          verl actor.policy_loss.loss_mode="clip_cov"
kl_cov_loss            verl loss_mode="kl_cov"
entropy_masked_loss    TRL top_entropy_quantile
adaptive_entropy_coef  TRL use_adaptive_entropy
```

    $ python examples/entropy.py     # the identity checked exactly, every knob side by side
"""

import numbers

import numpy as np


__all__ = ["entropy_step", "cov_terms", "clip_cov_loss", "kl_cov_loss", "entropy_mask",
    "entropy_masked_loss", "adaptive_entropy_coef"]


# ---- the identity ----------------------------------------------------------------------------
def entropy_step(theta, delta):
    """The exact entropy change of a logit step and its first- and second-order predictions.

    Args:
        theta: `(S, V)` logits (`-inf` for impossible tokens).
        delta: `(S, V)` finite step on the logits (ignored where theta is `-inf`).

    Returns:
        `(exact, first, second)`: `(S,)` each; `exact = H(theta + delta) - H(theta)`,
        `first` eq. (ent_identity), `second` eq. (ent_second).
    """
    theta = logit_table(theta)
    delta = entropy_step_args(theta, delta)
    with np.errstate(over="ignore", invalid="ignore"):  # -inf logits: pi = 0, handled below
        lp = log_softmax(theta)  # (S, V)
        lp1 = log_softmax(theta + delta)  # (S, V)
    pi, pi1 = np.exp(lp), np.exp(lp1)
    lp, lp1 = np.where(pi > 0, lp, 0.0), np.where(pi1 > 0, lp1, 0.0)  # 0 log 0 = 0
    d = np.where(pi > 0, delta, 0.0)  # (S, V)
    H, H1 = -(pi * lp).sum(1), -(pi1 * lp1).sum(1)  # (S,) eq. (entropy)
    dc = d - (pi * d).sum(1, keepdims=True)  # (S, V) centred step delta~
    first = -(pi * lp * dc).sum(1)  # eq. (ent_identity): -Cov(log pi, delta)
    lc = np.where(pi > 0, lp + H[:, None], 0.0)  # (S, V) log pi centred
    second = -0.5 * ((pi * dc**2).sum(1) + (pi * lc * dc**2).sum(1))  # eq. (ent_second)
    return finite_result((H1 - H, first, second), "delta", "the entropy change")


# ---- the covariance term and Clip-Cov --------------------------------------------------------
def _cov(logp, A, mask):
    n = mask.sum()
    Ab = (A * mask).sum() / max(n, 1.0)  # masked mean of the advantage
    lb = (logp * mask).sum() / max(n, 1.0)  # masked mean of the (detached) log-probs
    return (A - Ab) * (logp - lb) * mask  # (B, T) eq. (cov_term), 0 at padding


def cov_terms(logp, adv, mask):
    """The centred covariance term of every token, eq. (cov_term): `(B, T)`, 0 at padding.

    Args:
        logp: `(B, T)` token log-probs.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 (holes allowed).
    """
    logp, mask, A, _ = token_batch({"logp": logp}, mask, adv)
    return finite_result(_cov(logp, adv_tokens(A, mask), mask), "adv", "the covariance term")


def clip_cov_loss(
    logp, logp_old, adv, mask, ratio=2e-4, cov_lb=1.0, cov_ub=5.0, eps=0.2, eps_high=None,
    agg="token_mean", max_len=None, rng=None,
):  # fmt: skip
    """Clip-Cov, eq. (clip_cov): the clipped surrogate with a random band of tokens detached.

    Args:
        logp: `(B, T)` token log-probs under pi_theta.
        logp_old: `(B, T)` token log-probs under pi_old.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 (holes allowed).
        ratio: fraction of trained tokens to detach, in (0, 1].
        cov_lb: the band's lower end, `cov_lb < c_t < cov_ub` (eq. (cov_term)).
        cov_ub: the band's upper end, `> cov_lb`.
        eps: the clip range's lower side (eq. (ppo_clip)).
        eps_high: its upper side (None: eps).
        agg: the aggregation weights (eq. (pg_agg)).
        max_len: the constant of agg="constant".
        rng: `np.random.Generator` to draw the subset, or None for the expectation over it.

    Returns:
        `(loss, dloss_dlogp (B, T), corr (B, T))`: corr the weight kept on each token (0/1 when
        drawn, its expectation when `rng` is None).
    """
    logp, logp_old, mask, A, eps, eps_high, max_len = clip_objective(
        logp, logp_old, adv, mask, eps, eps_high, agg, max_len, AGGS
    )
    ratio, cov_lb, cov_ub = clip_cov_args(ratio, cov_lb, cov_ub, rng)
    A = adv_tokens(A, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    f = np.minimum(surr1, surr2)  # (B, T) eq. (ppo_clip)
    clipped = (surr2 < surr1) & (mask > 0)  # the clip is active: never selected
    c = _cov(logp, A, mask)  # (B, T) eq. (cov_term)
    band = (c > cov_lb) & (c < cov_ub) & (mask > 0) & ~clipped  # (B, T)
    m = max(int(ratio * mask.sum()), 1)  # tokens to detach
    nb = int(band.sum())
    corr = np.ones_like(logp)  # (B, T)
    if nb and rng is None:
        corr[band] = 1.0 - min(m, nb) / nb  # eq. (clip_cov), expected over the subset
    elif nb:
        idx = np.flatnonzero(band)[rng.permutation(nb)[: min(m, nb)]]
        corr.flat[idx] = 0.0  # eq. (clip_cov), one draw
    loss = -(w * corr * f).sum()
    dloss_dlogp = -w * corr * np.where(surr1 <= surr2, surr1, 0.0)  # (B, T) d rho/d logp = rho
    return finite_result((float(loss), dloss_dlogp, corr), "logp", "the Clip-Cov surrogate")


# ---- KL-Cov ----------------------------------------------------------------------------------
def kl_cov_loss(logp, logp_old, adv, mask, ratio=2e-4, kl_coef=1.0, agg="token_mean", max_len=None):
    """KL-Cov, eq. (kl_cov): the unclipped surrogate, `|logp - logp_old|` on the top tokens by c_t.

    Args:
        logp: `(B, T)` token log-probs under pi_theta.
        logp_old: `(B, T)` token log-probs under pi_old.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 (holes allowed).
        ratio: fraction of trained tokens penalized, in (0, 1] (at least one token).
        kl_coef: the penalty's coefficient k >= 0.
        agg: the aggregation weights (eq. (pg_agg)).
        max_len: the constant of agg="constant".

    Returns:
        `(loss, dloss_dlogp (B, T), top (B, T))`: top the 0/1 set of penalized tokens.
    """
    logp, logp_old, mask, A, max_len = token_batch(
        {"logp": logp, "logp_old": logp_old}, mask, adv, agg, max_len, AGGS
    )
    ratio, kl_coef = kl_cov_args(ratio, kl_coef)
    A = adv_tokens(A, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
    with np.errstate(over="ignore"):
        rho = np.exp(u)  # (B, T)
    c = _cov(logp, A, mask)  # (B, T) eq. (cov_term)
    top = np.zeros_like(logp)  # (B, T)
    n = int(mask.sum())
    if n:
        idx = np.flatnonzero(mask > 0)
        k = max(1, int(n * ratio))
        top.flat[idx[np.argsort(-c.flat[idx], kind="stable")[:k]]] = 1.0  # ties: first token
    with np.errstate(over="ignore", invalid="ignore"):
        f = rho * A - kl_coef * top * np.abs(u)  # (B, T) eq. (kl_cov)
        loss = -(w * f).sum()
        dloss_dlogp = -w * (rho * A - kl_coef * top * np.sign(u))  # (B, T) sign(0) = 0
    return finite_result((float(loss), dloss_dlogp, top), "logp", "the KL-Cov surrogate")


# ---- entropy-quantile masking ----------------------------------------------------------------
def _keep(entropies, mask, rho_h):
    if rho_h >= 1.0 or not mask.any():
        return mask.copy() if rho_h >= 1.0 else np.zeros_like(mask)
    q = np.quantile(entropies[mask > 0], 1.0 - rho_h)  # linear, as torch.quantile
    return ((entropies * mask >= q) & (mask > 0)).astype(float)  # (B, T) eq. (ent_mask)


def entropy_mask(entropies, mask, rho_h=0.2):
    """The tokens kept by entropy-quantile masking, eq. (ent_mask): `(B, T)` 0/1.

    Args:
        entropies: `(B, T)` entropy `H(s_t)` of the policy at each token's state, `>= 0`.
        mask: `(B, T)` 0/1 (holes allowed).
        rho_h: the kept top fraction in [0, 1] (1 keeps every trained token).
    """
    entropies, mask, rho_h = mask_args(entropies, mask, rho_h)
    return _keep(entropies, mask, rho_h)


def entropy_masked_loss(
    logp, logp_old, adv, mask, entropies, rho_h=0.2, eps=0.2, eps_high=None, agg="token_mean", max_len=None
):
    """The clipped surrogate trained on the high-entropy tokens only, eq. (ent_mask).

    Args:
        logp: `(B, T)` token log-probs under pi_theta.
        logp_old: `(B, T)` token log-probs under pi_old.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 (holes allowed).
        entropies: `(B, T)` `H(s_t)` per token (data: no gradient flows through the selection).
        rho_h: the kept top fraction in [0, 1].
        eps: the clip range's lower side.
        eps_high: its upper side (None: eps).
        agg: the aggregation weights, computed on the whole mask.
        max_len: the constant of agg="constant".

    Returns:
        `(loss, dloss_dlogp (B, T), keep (B, T))`.
    """
    logp, logp_old, mask, A, eps, eps_high, max_len = clip_objective(
        logp, logp_old, adv, mask, eps, eps_high, agg, max_len, AGGS
    )
    entropies, _, rho_h = mask_args(entropies, mask, rho_h, shape=logp.shape)
    A = adv_tokens(A, mask)  # (B, T)
    keep = _keep(entropies, mask, rho_h)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg), on every trained token
    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    loss = -(w * keep * np.minimum(surr1, surr2)).sum()  # eq. (ent_mask)
    dloss_dlogp = -w * keep * np.where(surr1 <= surr2, surr1, 0.0)  # (B, T)
    return finite_result((float(loss), dloss_dlogp, keep), "logp", "the masked surrogate")


# ---- the adaptive coefficient ----------------------------------------------------------------
def adaptive_entropy_coef(coef, entropy, target=0.2, delta=0.005, coef_min=0.0, coef_max=1.0):
    """One step of the adaptive entropy coefficient, eq. (ent_adaptive).

    Args:
        coef: the current coefficient c.
        entropy: the mean per-token entropy H measured on this step's batch, `>= 0`.
        target: H_target `>= 0`.
        delta: the step delta_c `>= 0`.
        coef_min: the lower bound, `>= 0`.
        coef_max: the upper bound, `>= coef_min`.

    Returns:
        `(next_coef, applied)`: the coefficient after the step, and the one the next step's loss
        applies (`next_coef` if `entropy <= target`, else 0.0).
    """
    coef, entropy, target, delta, lo, hi = adaptive_args(coef, entropy, target, delta, coef_min, coef_max)
    low = entropy <= target  # below target: raise the coefficient
    nxt = min(coef + delta, hi) if low else max(coef - delta, lo)  # eq. (ent_adaptive)
    return float(nxt), float(nxt) if low else 0.0


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


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# part 2: from minirl_lm/pg/clip.py
#   The token-level clipped ratio (PPO surrogate), as an objective of token log-probs.
# ----------------------------------------------------------------------------------------------


def branches(logp, logp_old, A, mask, eps, eps_high):
    """rho, the unclipped and the clipped branch (B, T) of read arguments, A (B, T); rho = 1 at
    padding, both branches 0 where A = 0 (no 0 * inf), rho = inf where it overflows."""
    with np.errstate(over="ignore"):  # overflow to inf is handled
        u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
        rho = np.exp(u)  # (B, T) rho_t; inf if u > ~709.78
        surr1 = np.multiply(rho, A, out=np.zeros_like(rho), where=A != 0)  # (B, T) unclipped
        surr2 = np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A  # (B, T) clipped
    return rho, surr1, surr2


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


def clip_objective(logp, logp_old, adv, mask, eps, eps_high, agg, max_len, aggs):
    """The arguments of the clipped surrogate: ``(logp, logp_old, mask, adv, eps, eps_high,
    max_len)``."""
    logp, logp_old, mask, adv, _ = token_batch({"logp": logp, "logp_old": logp_old}, mask, adv)
    eps, eps_high = clip_range(eps, eps_high)
    return logp, logp_old, mask, adv, eps, eps_high, aggregation(mask, agg, max_len, aggs)


def logit_table(theta, name="theta"):
    """``(S, V)`` logits, non-empty, -inf allowed, a finite entry in every row."""
    theta = nonempty(float_array(theta, name, ndim=2, allow_neginf=True), name)
    if not np.isfinite(theta.max(axis=1)).all():
        raise ValueError(f"{name}: expected a finite entry in every row, got an all -inf row")
    return theta


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/validate.py
#   The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py` not
# ----------------------------------------------------------------------------------------------


# ---- pg/entropy_knobs.py (after the token batch's own bundle in pg/checks.py) ----------------
def entropy_step_args(theta, delta):
    """``delta``: a finite step of the shape of the checked logits ``theta`` ``(S, V)``."""
    delta = float_array(delta, "delta", ndim=2)
    same_shape("theta", theta, "delta", delta)
    return delta


def clip_cov_args(ratio, lb, ub, rng):
    """Clip-Cov's own arguments: ratio in (0, 1], cov_lb < cov_ub, rng a Generator or None."""
    ratio = float_scalar(ratio, "ratio", low=0.0, low_open=True, high=1.0)
    lb, ub = float_scalar(lb, "cov_lb"), float_scalar(ub, "cov_ub")
    if not lb < ub:
        raise ValueError(f"cov_ub: expected > cov_lb = {lb}, got {ub}")
    if rng is not None:
        rng_check(rng, "rng")
    return ratio, lb, ub


def kl_cov_args(ratio, kl_coef):
    """KL-Cov's own arguments: ratio in (0, 1], kl_coef >= 0."""
    return float_scalar(ratio, "ratio", low=0.0, low_open=True, high=1.0), float_scalar(
        kl_coef, "kl_coef", low=0.0
    )


def mask_args(entropies, mask, rho_h, shape=None):
    """Token entropies ``(B, T)`` >= 0 at trained tokens, the 0/1 mask, rho_h in [0, 1]."""
    entropies = float_array(entropies, "entropies", ndim=2, shape=shape)
    mask = mask_array(mask, "mask")
    same_shape("entropies", entropies, "mask", mask)
    if (entropies[mask > 0] < 0).any():
        raise ValueError(f"entropies: expected >= 0 at trained tokens, got {entropies[mask > 0].min()}")
    return entropies, mask, float_scalar(rho_h, "rho_h", low=0.0, high=1.0)


def adaptive_args(coef, entropy, target, delta, coef_min, coef_max):
    """The controller's scalars: coef, entropy, target, delta >= 0; 0 <= coef_min <= coef_max."""
    names = ("coef", "entropy", "target", "delta", "coef_min", "coef_max")
    vals = [float_scalar(v, n, low=0.0) for v, n in zip((coef, entropy, target, delta, coef_min, coef_max), names)]
    if vals[5] < vals[4]:
        raise ValueError(f"coef_max: expected >= coef_min = {vals[4]}, got {vals[5]}")
    return vals


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


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_describe(rng)}"
        )
    return rng


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

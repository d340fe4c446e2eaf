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

import numpy as np

from minirl_lm.boundary import (
    ADVANTAGE,
    MASK,
    MAX_LEN,
    NONNEGATIVE,
    TOKENS,
    array,
    boundary,
    generator,
    longest_response,
    number,
    one_of,
    optional,
)
from minirl_lm.core.ops import AGGS, adv_tokens, agg_weights, log_ratio, log_softmax
from minirl_lm.pg.clip import CLIP, branches
from minirl_lm.pg.entropy import LOGITS

__all__ = ["entropy_step", "cov_terms", "clip_cov_loss", "kl_cov_loss", "entropy_mask", "entropy_masked_loss"]
__all__ += ["adaptive_entropy_coef"]

AGG = dict(agg=one_of(AGGS), max_len=MAX_LEN)  # with the relation longest_response
RATIO = number(0.0, 1.0, low_open=True)  # a fraction of the trained tokens, in (0, 1]
FRACTION = number(0.0, 1.0)  # rho_h, in [0, 1]


# ---- the identity ----------------------------------------------------------------------------
@boundary(theta=LOGITS, delta=array("S V"), returns="exact first second")
def entropy_step(theta, delta):
    """The exact entropy change of a logit step and its first- and second-order predictions.

    Args:
        theta: `(S, V)` logits (`-inf` for impossible tokens).
        delta: `(S, V)` finite step on the logits (ignored where theta is `-inf`).

    Returns:
        `(exact, first, second)`: `(S,)` each; `exact = H(theta + delta) - H(theta)`,
        `first` eq. (ent_identity), `second` eq. (ent_second).
    """
    lp = log_softmax(theta)  # (S, V)
    lp1 = log_softmax(theta + delta)  # (S, V)
    pi, pi1 = np.exp(lp), np.exp(lp1)
    lp, lp1 = np.where(pi > 0, lp, 0.0), np.where(pi1 > 0, lp1, 0.0)  # 0 log 0 = 0
    d = np.where(pi > 0, delta, 0.0)  # (S, V)
    H, H1 = -(pi * lp).sum(1), -(pi1 * lp1).sum(1)  # (S,) eq. (entropy)
    dc = d - (pi * d).sum(1, keepdims=True)  # (S, V) centred step delta~
    first = -(pi * lp * dc).sum(1)  # eq. (ent_identity): -Cov(log pi, delta)
    lc = lp + H[:, None]  # (S, V) log pi centred (weighted by pi: 0 where pi = 0)
    second = -0.5 * ((pi * dc**2).sum(1) + (pi * lc * dc**2).sum(1))  # eq. (ent_second)
    return H1 - H, first, second


# ---- the covariance term and Clip-Cov --------------------------------------------------------
def _cov(logp, A, mask):
    n = mask.sum()
    Ab = (A * mask).sum() / max(n, 1.0)  # masked mean of the advantage
    lb = (logp * mask).sum() / max(n, 1.0)  # masked mean of the (detached) log-probs
    return (A - Ab) * (logp - lb) * mask  # (B, T) eq. (cov_term), 0 at padding


@boundary(logp=TOKENS, adv=ADVANTAGE, mask=MASK, returns="c")
def cov_terms(logp, adv, mask):
    """The centred covariance term of every token, eq. (cov_term): `(B, T)`, 0 at padding.

    Args:
        logp: `(B, T)` token log-probs.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 (holes allowed).
    """
    return _cov(logp, adv_tokens(adv, mask), mask)


def _band(cov_lb, cov_ub):
    """The band `cov_lb < c_t < cov_ub` is not empty."""
    if not cov_lb < cov_ub:
        return f"cov_ub: expected > cov_lb = {cov_lb}, got {cov_ub}"


@boundary(
    **CLIP,
    ratio=RATIO,
    cov_lb=number(),
    cov_ub=number(),
    **AGG,
    rng=optional(generator),
    where=[_band, longest_response],
    returns="loss dloss_dlogp corr",
)
def clip_cov_loss(
    logp, logp_old, adv, mask, *, ratio=2e-4, cov_lb=1.0, cov_ub=5.0, eps=0.2, eps_high=None,
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
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
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
    return float(loss), dloss_dlogp, corr


# ---- KL-Cov ----------------------------------------------------------------------------------
@boundary(
    logp=TOKENS,
    logp_old=TOKENS,
    adv=ADVANTAGE,
    mask=MASK,
    ratio=RATIO,
    kl_coef=NONNEGATIVE,
    **AGG,
    where=[longest_response],
    returns="loss dloss_dlogp top",
)
def kl_cov_loss(logp, logp_old, adv, mask, *, ratio=2e-4, kl_coef=1.0, agg="token_mean", max_len=None):
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
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
    rho = np.exp(u)  # (B, T)
    c = _cov(logp, A, mask)  # (B, T) eq. (cov_term)
    top = np.zeros_like(logp)  # (B, T)
    n = int(mask.sum())
    if n:
        idx = np.flatnonzero(mask > 0)
        k = max(1, int(n * ratio))
        top.flat[idx[np.argsort(-c.flat[idx], kind="stable")[:k]]] = 1.0  # ties: first token
    f = rho * A - kl_coef * top * np.abs(u)  # (B, T) eq. (kl_cov)
    loss = -(w * f).sum()
    dloss_dlogp = -w * (rho * A - kl_coef * top * np.sign(u))  # (B, T) sign(0) = 0
    return float(loss), dloss_dlogp, top


# ---- entropy-quantile masking ----------------------------------------------------------------
def _keep(entropies, mask, rho_h):
    if not mask.any():
        return np.zeros_like(mask)  # no trained token: nothing kept
    q = np.quantile(entropies[mask > 0], 1.0 - rho_h)  # linear, as torch.quantile; rho_h = 1: the min
    return ((entropies >= q) & (mask > 0)).astype(float)  # (B, T) eq. (ent_mask)


def _entropies(entropies, mask):
    """Entropies are `>= 0` where trained."""
    if (entropies[mask > 0] < 0).any():
        return f"entropies: expected >= 0 at trained tokens, got {entropies[mask > 0].min()}"


@boundary(entropies=TOKENS, mask=MASK, rho_h=FRACTION, where=[_entropies])
def entropy_mask(entropies, mask, rho_h=0.2):
    """The tokens kept by entropy-quantile masking, eq. (ent_mask): `(B, T)` 0/1.

    Args:
        entropies: `(B, T)` entropy `H(s_t)` of the policy at each token's state, `>= 0`.
        mask: `(B, T)` 0/1 (holes allowed).
        rho_h: the kept top fraction in [0, 1] (1 keeps every trained token).
    """
    return _keep(entropies, mask, rho_h)


@boundary(
    **CLIP,
    entropies=TOKENS,
    rho_h=FRACTION,
    **AGG,
    where=[_entropies, longest_response],
    returns="loss dloss_dlogp keep",
)
def entropy_masked_loss(
    logp, logp_old, adv, mask, entropies, *, rho_h=0.2, eps=0.2, eps_high=None, agg="token_mean", max_len=None
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
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    keep = _keep(entropies, mask, rho_h)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg), on every trained token
    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    loss = -(w * keep * np.minimum(surr1, surr2)).sum()  # eq. (ent_mask)
    dloss_dlogp = -w * keep * np.where(surr1 <= surr2, surr1, 0.0)  # (B, T)
    return float(loss), dloss_dlogp, keep


# ---- the adaptive coefficient ----------------------------------------------------------------
def _coef_bounds(coef_min, coef_max):
    """The clamp `[coef_min, coef_max]` is not empty."""
    if coef_max < coef_min:
        return f"coef_max: expected >= coef_min = {coef_min}, got {coef_max}"


@boundary(
    coef=NONNEGATIVE,
    entropy=NONNEGATIVE,
    target=NONNEGATIVE,
    delta=NONNEGATIVE,
    coef_min=NONNEGATIVE,
    coef_max=NONNEGATIVE,
    where=[_coef_bounds],
    returns="next_coef applied",
)
def adaptive_entropy_coef(coef, entropy, target=0.2, delta=0.005, coef_min=0.0, coef_max=1.0):
    """One step of the adaptive entropy coefficient, eq. (ent_adaptive).

    Args:
        coef: the current coefficient c, `>= 0`.
        entropy: the mean per-token entropy H measured on this step's batch, `>= 0`.
        target: H_target `>= 0`.
        delta: the step delta_c `>= 0`.
        coef_min: the lower bound, `>= 0`.
        coef_max: the upper bound, `>= coef_min`.

    Returns:
        `(next_coef, applied)`: the coefficient after the step, and the one the next step's loss
        applies (`next_coef` if `entropy <= target`, else 0.0).
    """
    low = entropy <= target  # below target: raise the coefficient
    nxt = min(coef + delta, coef_max) if low else max(coef - delta, coef_min)  # eq. (ent_adaptive)
    return float(nxt), float(nxt) if low else 0.0

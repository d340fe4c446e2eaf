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

import functools
import inspect
import numbers

import numpy as np


__all__ = ["entropy_step", "cov_terms", "clip_cov_loss", "kl_cov_loss", "entropy_mask", "entropy_masked_loss"]
__all__ += ["adaptive_entropy_coef"]


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


def entropy_mask(entropies, mask, rho_h=0.2):
    """The tokens kept by entropy-quantile masking, eq. (ent_mask): `(B, T)` 0/1.

    Args:
        entropies: `(B, T)` entropy `H(s_t)` of the policy at each token's state, `>= 0`.
        mask: `(B, T)` 0/1 (holes allowed).
        rho_h: the kept top fraction in [0, 1] (1 keeps every trained token).
    """
    return _keep(entropies, mask, rho_h)


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


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


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


# part 2: from minirl_lm/pg/clip.py ------------------------------------------------------------
#   The token-level clipped ratio (PPO surrogate), as an objective of token log-probs.


def branches(logp, logp_old, A, mask, eps, eps_high):
    """rho, the unclipped and the clipped branch (B, T) of read arguments, A (B, T); rho = 1 at
    padding, both branches 0 where A = 0 (no 0 * inf), rho = inf where it overflows."""
    with np.errstate(over="ignore"):  # overflow to inf is handled
        u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
        rho = np.exp(u)  # (B, T) rho_t; inf if u > ~709.78
        surr1 = np.multiply(rho, A, out=np.zeros_like(rho), where=A != 0)  # (B, T) unclipped
        surr2 = np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A  # (B, T) clipped
    return rho, surr1, surr2


# part 3: from minirl_lm/pg/entropy.py ---------------------------------------------------------
#   The entropy bonus: a whole-distribution term, with its own backward on the table.


# the declared boundary: from minirl_lm/boundary.py --------------------------------------------
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.


def boundary(where=(), returns="", args=None, **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`)."""
    kinds = {**kinds, **(args or {})}

    def declare(f):
        sig = inspect.signature(f)
        rules = [(r, list(inspect.signature(r).parameters)) for r in where]

        @functools.wraps(f)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a, dims = bound.arguments, {}
            for name, read in kinds.items():
                a[name] = read(a[name], name, dims)
            for rule, params in rules:
                if (msg := rule(**{p: a[p] for p in params if p in a})) is not None:
                    raise ValueError(msg)
            with np.errstate(all="ignore"):
                out = f(*bound.args, **bound.kwargs)
            if returns is None:
                return out
            numeric = {n: a[n] for n in kinds if isinstance(a[n], (float, np.ndarray))}  # not ints, options
            return finite(out, f.__name__, returns.split(), numeric)

        checked.core, checked.kinds = f, dict(kinds)  # the body, and what it declares
        checked.returns = returns.split() if returns else None  # the results' names, if declared
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of
    `inputs`."""
    leaves = [_flat(v) for v in (out if isinstance(out, tuple) else (out,))]  # one per result
    bad = [i for i, v in enumerate(leaves) if not np.isfinite(v).all()]
    if not bad:
        return out
    what = " and ".join(names[i] if i < len(names) else f"result {i}" for i in bad)
    kind = "NaN" if any(np.isnan(leaves[i]).any() for i in bad) else "inf"
    given = ", ".join(
        f"{n} in [{np.min(v):g}, {np.max(v):g}]" if np.ndim(v) else f"{n} = {v:g}"
        for n, v in inputs.items()
        if v is not None
    )
    raise ValueError(f"{fname}: expected a finite {what}, got {kind} (beyond float64) from {given}")


def _flat(v):
    """Every number of a result (a number, an array, or a tuple of them, nested) as one array."""
    if isinstance(v, (tuple, list)):
        return np.concatenate([_flat(u) for u in v]) if v else np.zeros(0)
    return np.asarray(v, dtype=np.float64).ravel()


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False, neginf=False):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T") or
    fixed lengths ("B 2"), its entries finite, among `values` if given, in `[low, high]` (or
    `(low, high]` with `low_open`)."""
    shapes = [s.split() for s in shapes]

    def fits(s, shape, dims):
        return len(s) == len(shape) and all(
            (int(k) == n) if k.isdigit() else dims.get(k, n) == n for k, n in zip(s, shape)
        )

    def read(x, name, dims):
        try:
            a = None if isinstance(x, (str, bytes)) else np.asarray(x)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, huge ints
            a = None
        if a is None or a.dtype.kind not in ("iub" if integer else "fiub"):  # float, int, uint, bool
            noun = "an integer array" if integer else "a real-valued array"
            raise TypeError(f"{name}: expected {noun}, got {_show(x)}")
        a = np.array(a, dtype=np.int64 if integer else np.float64)  # a copy: the caller's is never written
        ok = [s for s in shapes if fits(s, a.shape, dims)]
        if not ok:
            want = " or ".join(str(tuple(dims.get(k, int(k) if k.isdigit() else k) for k in s)) for s in shapes)
            raise ValueError(f"{name}: expected shape {want.replace(chr(39), '')}, got {a.shape}")
        if 0 in a.shape and not empty:
            raise ValueError(
                f"{name}: expected a non-empty array (every axis of length >= 1), got shape {a.shape}"
            )
        dims.update((k, n) for k, n in zip(ok[0], a.shape) if not k.isdigit())
        all_finite = integer or np.isfinite(a).all()  # one pass on the good path
        if not all_finite and np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if not all_finite and (inf := np.isposinf(a) if neginf else np.isinf(a)).any():
            want = "finite values or -inf (no +inf)" if neginf else "finite values (no +-inf)"
            raise ValueError(f"{name}: expected {want}, got {int(inf.sum())} such entries")
        if neginf and not all_finite and (dead := np.isneginf(a).all(axis=-1)).any():  # -inf entries
            raise ValueError(
                f"{name}: expected a finite entry in every row (-inf everywhere has no softmax), got "
                f"{int(dead.sum())} all -inf rows, the first at {tuple(int(i) for i in np.argwhere(dead)[0])}"
            )
        if values is not None and not (among := functools.reduce(np.logical_or, [a == v for v in values])).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {a[~among].flat[0].item()!r}")
        if low is not None and a.size and ((a <= low) if low_open else (a < low)).any():
            raise ValueError(
                f"{name}: expected entries {'>' if low_open else '>='} {low:g}, got min {a.min().item()!r}"
            )
        if high is not None and a.size and (a > high).any():
            raise ValueError(f"{name}: expected entries <= {high:g}, got max {a.max().item()!r}")
        return a

    return read


def number(low=-np.inf, high=np.inf, low_open=False, integer=False, high_open=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`; an end is
    excluded with `low_open` or `high_open`."""
    noun = "an integer" if integer else "a number"
    show = lambda b: f"{b}" if isinstance(b, int) else f"{b:g}"  # noqa: E731  an int bound in full
    bounds = [f"{'>' if low_open else '>='} {show(low)}"] if low > -np.inf else []
    bounds += [f"{'<' if high_open else '<='} {show(high)}"] if high < np.inf else []

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not integer and not np.isfinite(v):  # an int is finite however large
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

    return read


def one_of(options):
    """One of `options` (compared by equality; True is not 1)."""

    def read(x, name, dims):
        try:
            ok = not isinstance(x, bool) and x in set(options)
        except TypeError:
            raise TypeError(f"{name}: expected one of {list(options)}, got unhashable {_show(x)}") from None
        if not ok:
            raise ValueError(f"{name}: expected one of {list(options)}, got {x!r}"[:200])
        return x

    return read


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def generator(rng, name, dims):
    """A `np.random.Generator`, the one source of every draw."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_show(rng)}"
        )
    return rng


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)
ADVANTAGE = array("B", "B T")  # one advantage per response, or one per token
MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed
EPS = number(0.0, 1.0, low_open=True)  # a clip range in (0, 1]
EPS_HIGH = optional(number(0.0, low_open=True))  # an upper clip range > 0, None: the lower one


NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1
MAX_LEN = optional(COUNT)  # T_max of agg="constant": None or an int >= 1


def longest_response(mask, agg, max_len):
    """`max_len`, the `T_max` of `agg="constant"`, is at least the longest response (its trained
    tokens, holes not counted)."""
    n = int(mask.sum(axis=1).max())
    if agg == "constant" and max_len is not None and max_len < n:
        return f"max_len: expected >= the longest response ({n} trained tokens), got {max_len}"


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

CLIP = dict(logp=TOKENS, logp_old=TOKENS, adv=ADVANTAGE, mask=MASK, eps=EPS, eps_high=EPS_HIGH)  # both declare it
LOGITS = array("S V", neginf=True)  # a logit table: -inf allowed (a token of probability 0)
AGG = dict(agg=one_of(AGGS), max_len=MAX_LEN)  # with the relation longest_response
RATIO = number(0.0, 1.0, low_open=True)  # a fraction of the trained tokens, in (0, 1]
FRACTION = number(0.0, 1.0)  # rho_h, in [0, 1]

entropy_step = boundary(theta=LOGITS, delta=array("S V"), returns="exact first second")(entropy_step)

cov_terms = boundary(logp=TOKENS, adv=ADVANTAGE, mask=MASK, returns="c")(cov_terms)

clip_cov_loss = boundary(
    **CLIP,
    ratio=RATIO,
    cov_lb=number(),
    cov_ub=number(),
    **AGG,
    rng=optional(generator),
    where=[_band, longest_response],
    returns="loss dloss_dlogp corr",
)(clip_cov_loss)

kl_cov_loss = boundary(
    logp=TOKENS,
    logp_old=TOKENS,
    adv=ADVANTAGE,
    mask=MASK,
    ratio=RATIO,
    kl_coef=NONNEGATIVE,
    **AGG,
    where=[longest_response],
    returns="loss dloss_dlogp top",
)(kl_cov_loss)

entropy_mask = boundary(entropies=TOKENS, mask=MASK, rho_h=FRACTION, where=[_entropies])(entropy_mask)

entropy_masked_loss = boundary(
    **CLIP,
    entropies=TOKENS,
    rho_h=FRACTION,
    **AGG,
    where=[_entropies, longest_response],
    returns="loss dloss_dlogp keep",
)(entropy_masked_loss)

adaptive_entropy_coef = boundary(
    coef=NONNEGATIVE,
    entropy=NONNEGATIVE,
    target=NONNEGATIVE,
    delta=NONNEGATIVE,
    coef_min=NONNEGATIVE,
    coef_max=NONNEGATIVE,
    where=[_coef_bounds],
    returns="next_coef applied",
)(adaptive_entropy_coef)

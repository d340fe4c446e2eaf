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

import functools
import inspect
import numbers

import numpy as np


__all__ = ["DIVERGENCES", "sapo_loss", "dppo_mask", "dppo_loss", "gmpo_loss", "vespo_weight", "vespo_loss"]

DIVERGENCES = ("tv", "kl")


# ---- SAPO: the soft gate


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


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)
ADVANTAGE = array("B", "B T")  # one advantage per response, or one per token
MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


POSITIVE = number(0.0, low_open=True)
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

AGGREGATION = dict(agg=one_of(AGGS), max_len=MAX_LEN, where=[longest_response])  # eq. (pg_agg)
TOKEN = dict(logp=TOKENS, logp_old=TOKENS, adv=ADVANTAGE, mask=MASK)  # one advantage per token or row
SEQUENCE = dict(logp=TOKENS, logp_old=TOKENS, adv=array("B"), mask=MASK)  # one advantage per row
DPPO_MASK = dict(divergence=one_of(DIVERGENCES), delta=POSITIVE, delta_high=optional(POSITIVE))
VESPO = dict(k_pos=NONNEGATIVE, lam_pos=POSITIVE, k_neg=NONNEGATIVE, lam_neg=POSITIVE)  # shapes, rates

sapo_loss = boundary(
    **TOKEN, tau_pos=POSITIVE, tau_neg=POSITIVE, **AGGREGATION, returns="loss dloss_dlogp"
)(sapo_loss)

dppo_mask = boundary(**TOKEN, **DPPO_MASK, returns="keep")(dppo_mask)

dppo_loss = boundary(**TOKEN, **DPPO_MASK, c=number(1.0), **AGGREGATION, returns="loss dloss_dlogp")(dppo_loss)

gmpo_loss = boundary(**SEQUENCE, eps=POSITIVE, eps_high=optional(POSITIVE), returns="loss dloss_dlogp")(gmpo_loss)

vespo_weight = boundary(**SEQUENCE, **VESPO, returns="phi")(vespo_weight)

vespo_loss = boundary(**SEQUENCE, **VESPO, **AGGREGATION, returns="loss dloss_dlogp")(vespo_loss)

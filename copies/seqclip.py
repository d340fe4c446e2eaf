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

import functools
import inspect
import numbers

import numpy as np


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
EPS = number(0.0, 1.0, low_open=True)  # a clip range in (0, 1]
EPS_HIGH = optional(number(0.0, low_open=True))  # an upper clip range > 0, None: the lower one


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
CLIP = dict(logp=TOKENS, logp_old=TOKENS, adv=ADVANTAGE, mask=MASK, eps=EPS, eps_high=EPS_HIGH)  # both declare it
RATIO = dict(logp=TOKENS, logp_old=TOKENS, mask=MASK)  # the arrays of a sequence ratio
SEQUENCE = dict(logp=TOKENS, logp_old=TOKENS, adv=array("B"), mask=MASK, eps=EPS, eps_high=EPS_HIGH)

dual_clip_surrogate = boundary(
    **CLIP, c=_dual_clip_bound, **AGGREGATION, returns="loss dloss_dlogp"
)(dual_clip_surrogate)

sequence_ratio = boundary(**RATIO, ratio=one_of(RATIOS), returns="s")(sequence_ratio)

gspo_surrogate = boundary(**SEQUENCE, ratio=one_of(RATIOS), returns="loss dloss_dlogp")(gspo_surrogate)

luspo_surrogate = boundary(**SEQUENCE, returns="loss dloss_dlogp")(luspo_surrogate)

cispo_loss = boundary(
    logp=TOKENS,
    logp_old=TOKENS,
    adv=ADVANTAGE,
    mask=MASK,
    rho_min=optional(number(0.0, 1.0)),
    rho_max=number(1.0),
    **AGGREGATION,
    returns="loss dloss_dlogp",
)(cispo_loss)

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/clip.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/clip.py -o DIR
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

"""The token-level clipped ratio (PPO surrogate), as an objective of token log-probs.

For each real token, with `rho_t = pi(y_t | s_t) / pi_old(y_t | s_t) = exp(logp - logp_old)`:

```text
f_t  = min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps_high) A_t)        eq. (ppo_clip)
loss = -sum_{b,t} w[b,t] f[b,t]        (w: the aggregation weights, eq. (pg_agg))
```

Symmetric by default (`eps_high = eps`); `eps_high > eps` is "clip-higher" (DAPO). There is no
dual clip here (a floor `c A_t` for `A_t < 0`; see the page "Where to go next").

Gradient, by hand. `d rho / d logp = rho`. The min picks one branch:

- unclipped branch active (`rho A <= clip(rho) A`): `d f / d logp = rho A`;
- clipped branch active (`clip(rho) A < rho A`): the clipped value is constant in `logp`, so 0.
  For `A > 0` that is `rho > 1 + eps_high`, for `A < 0` `rho < 1 - eps`: the ratio already
  moved far enough in the direction the advantage pushes, and the token stops pulling.

Ties: inside the clip range both branches are equal and the gradient is `rho A`. Exactly at a
boundary (`rho = 1 + eps_high` with `A > 0`, or `1 - eps` with `A < 0`) `f` has a kink; we take
the unclipped one-sided derivative `rho A` there (the left/right derivatives are `rho A` and 0).

At `rho = 1` (`logp == logp_old`: the first optimizer step on a fresh batch) the gradient is
`-w A`, exactly REINFORCE's (`reinforce.reinforce_loss` with the same aggregation).

Padding and extreme ratios. The log-ratio is masked before the exp, so whatever finite values
`logp` and `logp_old` hold at padding (`rho = 1` there) the gradient there is exactly 0. A token
with `A = 0` contributes exactly 0 to the loss and the gradient, even where `rho` overflows.
`rho = exp(logp - logp_old)` overflows float64 for `logp - logp_old > ~709.78` (`pi_old` gave
the token probability `< e^-709`); then:

- `A > 0`: `min(rho A, (1 + eps_high) A) = (1 + eps_high) A`, finite, and its gradient is 0
  (clipped); returned as such;
- `A < 0`: the true minimum is the unclipped `rho A = -inf` (loss `+inf`). That (or any other
  non-finite loss or gradient, e.g. `rho A` overflowing for a finite `rho`, or a weighted sum
  beyond float64) is rejected with a ValueError naming `clipped_surrogate`, what overflowed and
  the range of its inputs, instead of returning `inf` to an optimizer. `clip_fraction` never
  raises: such a token is unclipped, an `A > 0` one with `rho = inf` is clipped.

The aggregation weights are `core.ops.agg_weights`, eq. (pg_agg), the one definition of them
(`reinforce.token_weights` is its checked entry; a standalone copy of this file,
`scripts/standalone.py`, inlines it). Each public function declares its arguments with
`boundary` (the engine checks them, and the result, once); its body is the math, and
`clipped_surrogate.core` and `clip_fraction.core` are those bodies, which GRPO calls on its own
checked arguments.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
eps (0.2)         TRL epsilon (0.2); verl actor.clip_ratio_low (0.2); OpenRLHF --actor.eps_clip
                  (0.2)
eps_high (= eps)  TRL epsilon_high; verl actor.clip_ratio_high (0.2); OpenRLHF
                  --actor.eps_clip_low_high LOW HIGH
agg               as in reinforce.py
(no dual clip)    TRL delta (None); verl actor.clip_ratio_c (3.0: always on); OpenRLHF
                  --actor.dual_clip (None)
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["CLIP", "clipped_surrogate", "clip_fraction"]


def branches(logp, logp_old, A, mask, eps, eps_high):
    """rho, the unclipped and the clipped branch (B, T) of read arguments, A (B, T); rho = 1 at
    padding, both branches 0 where A = 0 (no 0 * inf), rho = inf where it overflows."""
    with np.errstate(over="ignore"):  # overflow to inf is handled
        u = log_ratio(logp, logp_old, mask)  # (B, T) 0 at padding
        rho = np.exp(u)  # (B, T) rho_t; inf if u > ~709.78
        surr1 = np.multiply(rho, A, out=np.zeros_like(rho), where=A != 0)  # (B, T) unclipped
        surr2 = np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A  # (B, T) clipped
    return rho, surr1, surr2


def clipped_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
    """PPO clipped surrogate loss, eq. (ppo_clip): `loss = -sum_{b,t} w[b,t] f[b,t]`.

    Args:
        logp: `(B, T)` token log-probs under the policy being trained, `pi`.
        logp_old: `(B, T)` token log-probs under `pi_old`, the policy that sampled.
        adv: `(B,)` one advantage per response, or `(B, T)`.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        eps: the clip range `epsilon`, in `(0, 1]`.
        eps_high: the upper clip range `epsilon_high` (default `eps`).
        agg: the aggregation of `reinforce.token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient, `-w rho A` on unclipped real
        tokens, 0 elsewhere.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    rho, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    f = np.minimum(surr1, surr2)  # (B, T) eq. (ppo_clip)
    with np.errstate(over="ignore"):  # a sum beyond float64 is inf
        loss = -(w * f).sum()
    # backward: d f / d logp = rho A where the unclipped branch is active (ties included), else 0
    df_dlogp = np.where(surr1 <= surr2, surr1, 0.0)  # (B, T) d rho / d logp = rho
    return float(loss), -w * df_dlogp  # (B, T) 0 at padding


def clip_fraction(logp, logp_old, adv, mask, eps=0.2, eps_high=None):
    """The fraction of real tokens whose gradient the clip zeroes (clipped branch strictly smaller).

    A token with `A = 0` is never counted.

    Args:
        logp: `(B, T)` token log-probs under `pi`.
        logp_old: `(B, T)` token log-probs under `pi_old`.
        adv: `(B,)` or `(B, T)` advantages.
        mask: `(B, T)` 0/1 float mask.
        eps: the clip range `epsilon`.
        eps_high: the upper clip range (default `eps`).

    Returns:
        A float in `[0, 1]`; 0.0 for a batch without real tokens.
    """
    A = adv_tokens(adv, mask)  # (B, T)
    eps_high = eps if eps_high is None else eps_high  # symmetric by default
    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)
    clipped = surr2 < surr1  # (B, T); at padding rho = 1: never
    n = mask.sum()
    return float(clipped.sum() / n) if n > 0 else 0.0


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

clipped_surrogate = boundary(**CLIP, **AGGREGATION, returns="loss dloss_dlogp")(clipped_surrogate)

clip_fraction = boundary(**CLIP)(clip_fraction)

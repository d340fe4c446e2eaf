# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/klsequence.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/klsequence.py -o DIR
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

"""The bias-corrected KL with a sequence-level ratio: TRL's broadcast `s_b`.

`kl.kl_penalty_is`, eq. (kl_is), weighs each token's k3 by its own ratio
`rho_t = pi(y_t|s_t) / pi_old(y_t|s_t)`. With `importance_sampling_level="sequence"`, TRL
multiplies every token's k3 by the response's geometric-mean ratio instead (the same `coef_1`
its GSPO term uses), and the ratio is not detached:

```text
s_b  = exp( (1/|y_b|) sum_t (logp - logp_old) )                  eq. (gspo_ratio), geometric
loss = sum_{b,t} w[b,t] s_b k3_t,    k3_t = exp(-u_t) + u_t - 1,  u_t = logp_t - logp_ref,t
                                                                  eq. (kl_is_seq)
dloss/dlogp[b, t] = w[b,t] s_b (1 - exp(-u_t))  +  (s_b / |y_b|) sum_t' w[b,t'] k3_t'
```

The second term is the ratio's own gradient, spread over every trained token of the row: a
token's KL term moves the log-probs of the whole response. Under `pi_old`, `E[rho_t k3_t]` is the
k3 of `pi` at each visited state (per-token importance sampling is exact per state), while
`E[s_b k3_t]` is not: `s_b` mixes the ratios of the other tokens of the response, so the
broadcast penalty estimates neither `KL(pi || pi_ref)` nor its gradient without bias once
`pi != pi_old`. At `pi = pi_old` (`s_b = 1`) both equal `kl_penalty`'s k3 and its derivative
plus the term above (`(1/|y_b|) sum w k3`, which the per-token version does not have: the
gradient of `rho_t` at `rho_t = 1` is `k3_t` on its own token only).

A response of length 0 contributes nothing. A non-finite result from finite input is a
ValueError naming the function and the range of its inputs. Demonstrated on the KL page
(docs/kl.md, section "The sequence-level ratio in the bias-corrected KL").

Names in the frameworks (`docs/next.md` has the versions and files):

```text
kl_penalty_is_sequence  TRL use_bias_correction_kl=True with importance_sampling_level="sequence"
                        (the ratio coef_1 of shape (B, 1), per_token_kl * coef_1, not detached);
                        verl, OpenRLHF: none
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["kl_penalty_is_sequence"]


def kl_penalty_is_sequence(logp, logp_old, logp_ref, mask, agg="token_mean", max_len=None):
    """k3 weighted by the broadcast geometric-mean sequence ratio, eq. (kl_is_seq) (TRL).

    Args:
        logp: `(B, T)` log-probs of the policy being trained (carries the gradient, also through
            the ratio).
        logp_old: `(B, T)` log-probs of the policy that sampled the tokens (data).
        logp_ref: `(B, T)` reference log-probs (data).
        mask: `(B, T)` 0/1; holes allowed (`|y_b|` counts the trained tokens).
        agg: the aggregation of eq. (pg_agg).
        max_len: see `agg`.

    Returns:
        `(loss, dloss_dlogp (B, T))`.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function, with the range of its inputs).
    """
    s = sequence_ratio.core(logp, logp_old, mask, "geometric")  # (B,) eq. (gspo_ratio)
    scale = ratio_scale(mask, "geometric")  # (B,) 1/|y_b|
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    k, dk = kl_per_token.core(logp, logp_ref, mask, "k3")  # (B, T) eq. (kl_k3)
    row = (w * k).sum(axis=1)  # (B,) sum_t w k3
    loss = (s * row).sum()  # eq. (kl_is_seq)
    # backward: the k3 of the token, then the ratio's: d s_b / d logp[b, t] = s_b / |y_b|
    return float(loss), s[:, None] * (w * dk) + (s * scale * row)[:, None] * mask  # (B, T)


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


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


# part 2: from minirl_lm/pg/kl.py --------------------------------------------------------------
#   KL to the frozen reference: per-token estimators, their two placements, and the exact KL.


ESTIMATORS = ("k1", "k2", "k3")


def kl_per_token(logp, logp_ref, mask, estimator="k3"):
    """The per-token estimate `k` of `KL(pi || pi_ref)` and its derivative `dk/dlogp`."""
    u = log_ratio(logp, logp_ref, mask)  # (B, T) 0 at padding
    if estimator == "k1":
        return u, mask.copy()  # eq. (kl_k1); dk1 = 1
    if estimator == "k2":
        return 0.5 * u * u, u  # eq. (kl_k2); dk2 = u
    return _k3(u), -np.expm1(-u) * mask  # eq. (kl_k3); dk3 = 1 - exp(-u)


def _k3(u):
    """exp(-u) - 1 + u to ~1e-14 relative error: expm1(-u) + u, and near 0 (where the two cancel)
    its Taylor series u^2/2 - u^3/6 + ... to u^8 (truncation below 1e-17 relative)."""
    small = np.abs(u) < 0.05  # (B, T) each branch only where used
    k = np.empty_like(u)  # (B, T)
    us = u[small]
    c = 1.0 / 40320.0
    for n in (5040.0, 720.0, 120.0, 24.0, 6.0, 2.0):  # Horner, innermost term first
        c = 1.0 / n - us * c
    k[small] = us * us * c
    ul = u[~small]
    k[~small] = np.expm1(-ul) + ul  # inf for u < ~-709.78: rejected
    return k


# part 3: from minirl_lm/pg/seqclip.py ---------------------------------------------------------
#   The clip family beyond PPO: dual-clip, sequence-level ratios (GSPO), clipped IS weights (CISPO).


RATIOS = ("geometric", "product")


def sequence_ratio(logp, logp_old, mask, ratio="geometric"):
    """Per-response ratio `s` (B,), eq. (gspo_ratio): the geometric mean or the product."""
    u = log_ratio(logp, logp_old, mask).sum(axis=1)  # (B,) log prod_t rho_t
    return np.exp(u * ratio_scale(mask, ratio))  # (B,) eq. (gspo_ratio)


def ratio_scale(mask, ratio):
    """`(1/s) d s_b / d logp[b, t]` on a trained token: `1/|y_b|` (B,) for the geometric mean (1
    for an empty row), 1.0 for the product."""
    return 1.0 / np.maximum(mask.sum(axis=1), 1.0) if ratio == "geometric" else 1.0


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


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


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
ESTIMATOR = one_of(ESTIMATORS)
KL = dict(logp=TOKENS, logp_ref=TOKENS, mask=MASK, estimator=ESTIMATOR)  # a per-token estimate
RATIO = dict(logp=TOKENS, logp_old=TOKENS, mask=MASK)  # the arrays of a sequence ratio

kl_penalty_is_sequence = boundary(
    logp=TOKENS, logp_old=TOKENS, logp_ref=TOKENS, mask=MASK, **AGGREGATION, returns="loss dloss_dlogp"
)(kl_penalty_is_sequence)

kl_per_token = boundary(**KL, returns="k dk")(kl_per_token)

sequence_ratio = boundary(**RATIO, ratio=one_of(RATIOS), returns="s")(sequence_ratio)

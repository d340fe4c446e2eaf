# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/reinforce.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/reinforce.py -o DIR
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

"""REINFORCE, the score-function estimator, in its two views, as an objective of token log-probs.

With terminal reward `R(x, y)`, `gamma = 1` and a prompt-dependent baseline `b(x)`, the token view
and the sequence (bandit) view are one estimator, sample for sample, because `log pi(y|x)` is the
sum of the token log-probs:

```text
token view     grad_hat = sum_t (R - b(x)) grad log pi(y_t | x, y_<t)     eq. (pg_token)
bandit view    grad_hat = (R - b(x)) grad log pi(y | x)                    eq. (pg_sequence)
```

As losses (minimized, `loss = -objective`) over a batch of `B` responses:

```text
reinforce_loss           loss = -sum_{b,t} w[b,t] A[b,t] logp[b,t]        eq. (pg_token)
                         dloss/dlogp[b,t] = -w[b,t] A[b,t]
sequence_reinforce_loss  loss = -(1/B) sum_b A_b seq_logp_b                eq. (pg_sequence)
                         dloss/dseq_logp_b = -A_b / B
```

A per-token advantage `A[b,t]` (a critic, GAE, per-token KL shaping, discounting) is allowed in
the token view only; it is where the two views part ways.

The per-token weights `w` (`token_weights`) are the loss aggregation, eq. (pg_agg). With `|y_b|`
the number of real tokens of response `b`, `B` responses, `T_max` a constant length (`max_len`):

| `agg` | `w[b, t]` on a real token | what it means |
|---|---|---|
| `seq_sum` | `1/B` | the estimator itself, averaged over the batch. Every token counts once: a long response moves `theta` in proportion to its length. |
| `token_mean` | `1/sum_b |y_b|` | every real token of the batch counts the same; a response's total weight is `|y_b| / (all tokens)`, so long responses still weigh more, and the scale depends on the batch's lengths. |
| `seq_mean_token_mean` | `1/(B |y_b|)` | each response weighs `1/B` in total whatever its length: a token of a short response weighs more than a token of a long one (GRPO's original form; the length bias Dr. GRPO points out: a long wrong answer is penalized less per token). |
| `constant` | `1/(B T_max)` | `seq_sum` divided by a constant (Dr. GRPO, `T_max = max_len`): unbiased, no length-dependent weight. |
| `token_sum` | `1` | no normalizer at all (verl's `token-sum`): `B` times `seq_sum`, so the step grows with the batch; the learning rate carries the whole scale. |

Padding has `w = 0`, so the gradient is 0 there; a response of length 0 contributes nothing (no
division by zero: its weights are 0). One default for every loss of the library and for
`token_weights`: `agg="token_mean"` (the frameworks' default too, below).

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
agg="token_mean" (default)  TRL loss_type="dapo" (default) or "bnpo"; verl
                            actor.loss_agg_mode="token-mean" (default); OpenRLHF
                            --actor.loss_agg_mode token-mean (default)
agg="seq_sum"               TRL loss_type="luspo"; verl "seq-mean-token-sum"; OpenRLHF: none
agg="seq_mean_token_mean"   TRL "grpo"; verl "seq-mean-token-mean"; OpenRLHF seq-mean-token-mean
                            (verl's seq-mean modes and OpenRLHF's divide by the rows with a real
                            token, not by B)
agg="constant", max_len     TRL "dr_grpo" (T_max = max_completion_length); verl
                            "seq-mean-token-sum-norm" (T_max = loss_scale_factor, or the padded
                            width T when null, the default); OpenRLHF: none
agg="token_sum"             verl "token-sum" (the masked sum, no normalizer; times the
                            data-parallel size); TRL, OpenRLHF: none
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["AGGS", "token_weights", "reinforce_loss", "sequence_reinforce_loss"]


def token_weights(mask, agg="token_mean", max_len=None):
    """Per-token weights `w` of the loss aggregation, eq. (pg_agg).

    The checked entry of `minirl_lm.core.ops.agg_weights` (the one definition, which the
    estimators call on their own checked masks).

    Any 0/1 mask is accepted. A 0 between 1s is a hole: a position inside a response that is
    not trained (a tool output; what TRL's `tool_mask` or verl's multi-turn `response_mask`
    holds). `|y_b|` is the number of trained tokens of row `b` (`mask.sum(axis=1)`), wherever
    they sit, so the weights of a row with holes are those of its compacted row (holes removed,
    the trained tokens moved left in order) scattered back, for every `agg`; every token-level
    objective built on them inherits it (loss and gradient).

    Args:
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        agg: one of `"seq_sum"`, `"token_mean"`, `"seq_mean_token_mean"`, `"constant"`,
            `"token_sum"`.
        max_len: the constant `T_max` of `"constant"` (default: the padded width `T`); must be
            at least the longest response, the largest `|y_b|` (trained tokens, holes not
            counted). Compaction keeps the weights at a given `max_len`; the default is the
            compacted batch's too when its rows keep the width `T`.

    Returns:
        `(B, T)` weights, 0 at padding.

    Raises:
        ValueError: an unknown `agg`, or `max_len` shorter than the longest response (its
            trained tokens).
    """
    return agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)


def reinforce_loss(logp, adv, mask, agg="token_mean", max_len=None):
    """Token-view REINFORCE loss, eq. (pg_token): `loss = -sum_{b,t} w[b,t] A[b,t] logp[b,t]`.

    Args:
        logp: `(B, T)` token log-probs.
        adv: `(B,)` one advantage per response, or `(B, T)` one per token.
        mask: `(B, T)` 0/1 float mask; holes allowed (untrained positions inside a row).
        agg: the aggregation of `token_weights`.
        max_len: the constant `T_max` of `agg="constant"`.

    Returns:
        `(loss, dloss_dlogp)`: a float and the `(B, T)` gradient `-w A`, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss (named after the function, with
            the range of its inputs). The gradient `-w A` is always finite: every weight is in
            `[0, 1]` and `A` is finite.
    """
    A = adv_tokens(adv, mask)  # (B, T)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    loss = -(w * A * logp).sum()  # eq. (pg_token)
    # backward: d loss / d logp[b, t] = -w[b, t] A[b, t]   (0 at padding: w = 0)
    return float(loss), -w * A  # (B, T)


def sequence_reinforce_loss(seq_logp, adv):
    """Bandit-view REINFORCE loss, eq. (pg_sequence): `loss = -(1/B) sum_b A_b seq_logp_b`.

    The policy spreads `dloss_dseq[b]` onto every real token of response `b`
    (`d seq_logp / d logp[b, t] = mask[b, t]`).

    Args:
        seq_logp: `(B,)` sequence log-probs `log pi(y_b | x_b)`.
        adv: `(B,)` one advantage per response.

    Returns:
        `(loss, dloss_dseq)`: a float and the `(B,)` gradient `-A / B`.

    Raises:
        ValueError: an empty batch, mismatched shapes or a non-finite result.
    """
    B = seq_logp.shape[0]
    loss = -(adv * seq_logp).sum() / B  # eq. (pg_sequence)
    # backward: d loss / d seq_logp_b = -A_b / B
    return float(loss), -adv / B  # (B,)


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

token_weights = boundary(mask=MASK, **AGGREGATION)(token_weights)

reinforce_loss = boundary(
    logp=TOKENS, adv=ADVANTAGE, mask=MASK, **AGGREGATION, returns="loss dloss_dlogp"
)(reinforce_loss)

sequence_reinforce_loss = boundary(
    seq_logp=array("B"), adv=array("B"), returns="loss dloss_dseq"
)(sequence_reinforce_loss)

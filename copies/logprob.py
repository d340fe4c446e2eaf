# minirl_lm 0.1.0: a self-contained copy of minirl_lm/core/logprob.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/core/logprob.py -o DIR
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

r"""The one primitive: token log-probs, their masked sum, and the one derivative.

Every objective of the chapter is a function of per-token log-probs, and every gradient reaches
the policy through one derivative. This file is the NumPy reference for both; the Numba kernels
(`minirl_lm.kernels`) are tested equal to it.

Factorization. Transitions are deterministic (concatenation), so a response's probability is the
product of its next-token probabilities:

```text
log pi(y | x) = sum_{t=1}^{|y|} log pi(y_t | x, y_<t)                 eq. (factorization)
```

In a padded batch, `seq_logp[b] = sum_t mask[b, t] logp[b, t]`: a masked *sum*. Dividing by the
length instead (`masked_mean`) is a different quantity, not a normalization of the same one.

Log-softmax. With logits `z` (one row of `V` entries) and `m = max_v z_v`, the log-sum-exp is
`m + log sum_v exp(z_v - m)`: `m` is subtracted inside every exponential and added back once, so

```text
log softmax(z)_y = z_y - m - log sum_v exp(z_v - m)                   eq. (log_softmax)
```

(the shift changes nothing mathematically and keeps every `exp` in `(0, 1]`; `-inf` entries give
`exp(-inf) = 0`; `m` is finite because a row must have a finite entry).

Its gradient. Write `p = softmax(z)`, `p_v = exp(z_v) / sum_u exp(z_u)`. Then

```text
d/dz_v [z_y - log sum_u exp(z_u)] = 1[v = y] - exp(z_v) / sum_u exp(z_u)
                                  = 1[v = y] - p_v                    eq. (logsoftmax_grad)
```

so the backward of `logp[b, t]` with upstream gradient `dlogp[b, t]` is
`dlogits[b, t, :] = dlogp[b, t] mask[b, t] (onehot(y_bt) - p)`.

Edge cases, defined and tested: padding positions get `logp == 0.0` exactly and a zero gradient
(whatever `dlogp` holds there); a token whose logit is `-inf` has probability 0 and log-prob
`-inf` where it is gathered, and its gradient is the finite limit `dlogp (1 - 0)` at that entry
(eq. (logsoftmax_grad) holds with `p_y = 0`), so the backward never produces NaN.

Demonstration: `python examples/logprob.py`.
"""

import functools
import inspect

import numpy as np


__all__ = ["log_softmax", "masked_sum", "masked_mean", "token_logp", "token_logp_backward"]


def _in_vocab(logits, tokens):
    """Every token id (padding too) is a column of the logits: `tokens < V`."""
    if (tokens >= logits.shape[-1]).any():
        return f"tokens: expected ids in [0, {logits.shape[-1]}) (V, the logits' last axis), got {tokens.max()}"


def log_softmax(logits):
    """Stable log-softmax over the last axis, eq. (log_softmax).

    Args:
        logits: `(..., V)` logits; entries may be `-inf` (impossible tokens), every row needs
            at least one finite entry.

    Returns:
        `(..., V)` log-probabilities.
    """
    return _log_softmax(logits)


def masked_sum(x, mask):
    """The masked sum `sum_t mask[b, t] x[b, t]`, eq. (factorization).

    Args:
        x: `(B, T)` values, finite or `-inf`; padding entries are ignored, even if `-inf`.
        mask: `(B, T)` 0/1 float mask; holes allowed.

    Returns:
        `(B,)` sums over the real tokens of each row (`-inf` where a real entry is `-inf`).
    """
    return np.where(mask > 0, x, 0.0).sum(axis=-1)  # (B,)  eq. (factorization)


def masked_mean(x, mask):
    """The per-sequence mean over real tokens, `masked_sum / length`.

    A response of length 0 (all padding) gets 0.0: it contributes nothing.

    Args:
        x: `(B, T)` values, finite or `-inf`; padding entries are ignored.
        mask: `(B, T)` 0/1 float mask; holes allowed.

    Returns:
        `(B,)` means over the real tokens of each row (`-inf` where a real entry is `-inf`).
    """
    lengths = mask.sum(axis=-1)  # (B,)
    total = np.where(mask > 0, x, 0.0).sum(axis=-1)  # (B,)
    return total / np.maximum(lengths, 1.0)  # a row of padding only: 0.0 / 1.0


def token_logp(logits, tokens, mask):
    """Token log-probs and sequence log-probs of the sampled tokens.

    Args:
        logits: `(B, T, V)`; `logits[b, t - 1]` are the next-token logits at `s_t`, before
            emitting `tokens[b, t - 1] = y_t`.
        tokens: `(B, T)` int in `[0, V)` (padding positions too).
        mask: `(B, T)` 0/1 float mask; holes allowed (each token is gathered on its own).

    Returns:
        `(logp, seq_logp)`: `logp` `(B, T)`, exactly 0.0 at padding, `-inf` at a real token
        whose logit is `-inf`; `seq_logp` `(B,)`, the masked sum over `t`.
    """
    logp_all = _log_softmax(logits)  # (B, T, V)
    logp = np.take_along_axis(logp_all, tokens[..., None], axis=-1)[..., 0]  # (B, T) gather
    logp = np.where(mask > 0, logp, 0.0)  # (B, T), 0.0 at padding
    seq_logp = logp.sum(axis=-1)  # (B,)  eq. (factorization)
    return logp, seq_logp


def token_logp_backward(logits, tokens, mask, dlogp):
    """The backward of `token_logp`'s `logp`, eq. (logsoftmax_grad).

    `dlogits[b, t, v] = dlogp[b, t] mask[b, t] (1[v = y_bt] - softmax(logits[b, t])_v)`.

    Args:
        logits: `(B, T, V)` logits, as given to `token_logp`.
        tokens: `(B, T)` int in `[0, V)`.
        mask: `(B, T)` 0/1 float mask; holes allowed.
        dlogp: `(B, T)` finite upstream gradient `g = dloss/dlogp`; padding entries are ignored.

    Returns:
        `(B, T, V)` `dlogits`, finite.
    """
    w = np.where(mask > 0, dlogp, 0.0)  # (B, T)
    p = np.exp(_log_softmax(logits))  # (B, T, V), exp(-inf) = 0
    dlogits = -w[..., None] * p  # (B, T, V) eq. (logsoftmax_grad): -w p_v
    np.put_along_axis(
        dlogits, tokens[..., None], np.take_along_axis(dlogits, tokens[..., None], axis=-1) + w[..., None], axis=-1
    )  # eq. (logsoftmax_grad): +w 1[v = y]
    return dlogits


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def log_softmax_ops(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# input checks: from minirl_lm/core/validate.py ------------------------------------------------
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`


def logits(*shapes):
    """Logits: a float64 array (a fresh copy) of one of `shapes` ("..." first: any leading axes),
    the last axis V >= 1; entries finite or `-inf` (an impossible token), every row (last
    axis) with a finite entry (a row of `-inf` only has no softmax): `array`'s `neginf`."""

    def read(x, name, dims):
        ndim = np.ndim(x) if _regular(x) else 0  # else: the array kind says what came
        return array(*[_expand(s, ndim) for s in shapes], neginf=True)(x, name, dims)

    return read


def _regular(x):
    try:
        np.asarray(x)
    except (ValueError, TypeError, OverflowError):  # ragged, huge ints: the array kind says what
        return False
    return True


def _expand(shape, ndim):
    """`shape` with its "..." (if any) as the leading letters `_0 _1 ...` that make `ndim` axes."""
    rest = shape.split()
    lead = [f"_{i}" for i in range(max(ndim - len(rest) + 1, 0))] if "..." in rest else []
    return " ".join(a for k in rest for a in (lead if k == "..." else [k]))


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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

VALUES = logits("B T")  # (B, T) values; -inf allowed (a log-prob of an impossible token)
TOKEN_IDS = array("B T", integer=True, low=0)  # (B, T) token ids, below V: `_in_vocab`

log_softmax = boundary(logits=logits("... V"), returns=None)(log_softmax)  # -inf where a logit is -inf

masked_sum = boundary(x=VALUES, mask=MASK, returns=None)(masked_sum)  # -inf where a real entry is -inf

masked_mean = boundary(x=VALUES, mask=MASK, returns=None)(masked_mean)  # -inf where a real entry is -inf

token_logp = boundary(
    logits=logits("B T V"), tokens=TOKEN_IDS, mask=MASK, where=[_in_vocab], returns=None
)(token_logp)  # -inf: see below

token_logp_backward = boundary(
    logits=logits("B T V"), tokens=TOKEN_IDS, mask=MASK, dlogp=TOKENS, where=[_in_vocab], returns="dlogits"
)(token_logp_backward)

_log_softmax = log_softmax_ops  # `from minirl_lm.core.ops import log_softmax as _log_softmax`

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/entropy.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/entropy.py -o DIR
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

"""The entropy bonus: a whole-distribution term, with its own backward on the table.

At a state s with pi = softmax(theta[s]) the entropy is

    H(s) = -sum_v pi_v log pi_v                                                 eq. (entropy)

(0 log 0 = 0 for a -inf logit). It needs every entry of the row, not only the sampled token's
log-prob, so it does not fit the `(loss, dloss_dlogp)` contract of the objectives; its gradient
goes straight to the table. With d pi_u / d theta_v = pi_u (1[u = v] - pi_v),

    dH(s) / dtheta[s, v] = -sum_u (log pi_u + 1) pi_u (1[u = v] - pi_v)
                         = -pi_v (log pi_v + H(s))                              eq. (entropy_grad)

The bonus as the frameworks ship it (verl `actor.entropy_coeff`, TRL `entropy_coef`): the
entropy of every visited state, averaged with the loss aggregation weights w of eq. (pg_agg)
(token_mean by default, TRL's "mean per-token entropy"), subtracted from the loss:

    L_H = -sum_{b,t} w[b,t] H(s_bt)                                             eq. (entropy_bonus)
    dL_H / dtheta[s, :] = -(sum_{(b,t): s_bt = s} w[b,t]) dH(s)/dtheta[s, :]

The visited states are data: the gradient does not flow through which states were visited.
On a response of several tokens that is not the gradient of the entropy of the response
distribution H(pi(.|x)) = E[sum_t H(s_t)] (which also moves the visitation); on one-token
responses it is. The caller multiplies L_H by the coefficient c and adds it to the policy loss.
A response of length 0 visits no state and contributes nothing. tests/pg/test_entropy.py checks
the gradient by finite differences. `LOGITS` is the declaration of a logit table (`-inf` allowed),
shared with `entropy_knobs.py` and `kl.py`.

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults, not results of this library.

```text
entropy_bonus x coefficient  TRL entropy_coef (0.0); verl actor.entropy_coeff (0); OpenRLHF
                             --actor.entropy_coef (None: off), always the token mean over the
                             batch's action tokens, whatever --actor.loss_agg_mode
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["LOGITS", "entropy_table", "entropy_grad_table", "entropy_bonus"]


def _entropy(logpi):
    """(pi (S, V), H (S,)) of log pi, 0 log 0 = 0, eq. (entropy)."""
    pi = np.exp(logpi)  # (S, V)
    plogp = np.where(pi > 0, pi * np.where(pi > 0, logpi, 0.0), 0.0)  # 0 log 0 = 0
    return pi, -plogp.sum(axis=1)  # (S,) eq. (entropy)


def _entropy_grad(pi, logpi, H):
    """dH(s)/dtheta[s, v] = -pi_v (log pi_v + H(s)) (S, V), 0 where pi_v = 0, eq. (entropy_grad)."""
    return -np.where(pi > 0, pi * (np.where(pi > 0, logpi, 0.0) + H[:, None]), 0.0)


def entropy_table(theta):
    """H(s) for every row of a logit table, eq. (entropy).

    Args:
        theta: `(S, V)` logits, finite or `-inf` (a token of probability 0), every row with a
            finite entry. A logit more than float64's range below its row's maximum is a
            probability of exactly 0 (log pi = -inf), as it is in the limit.

    Returns:
        H, `(S,)`.
    """
    _, H = _entropy(log_softmax(theta))
    return H


def entropy_grad_table(theta):
    """dH(s)/dtheta[s, v] for every row, eq. (entropy_grad).

    Args:
        theta: `(S, V)` logits, finite or `-inf` (a token of probability 0), every row with a
            finite entry.

    Returns:
        dH, `(S, V)`; entries with probability 0 (a -inf logit) get 0, the limit of
        `-pi_v (log pi_v + H)`.
    """
    logpi = log_softmax(theta)  # (S, V)
    pi, H = _entropy(logpi)
    return _entropy_grad(pi, logpi, H)  # (S, V)


def _states_in_table(theta, states):
    """Every state id is a row of the table."""
    if states.max() >= theta.shape[0]:
        return f"states: expected ids < {theta.shape[0]} (the rows of theta), got max {states.max()}"


def entropy_bonus(theta, states, mask, agg="token_mean", max_len=None):
    """The entropy bonus as a loss term and its gradient on the table, eq. (entropy_bonus).

    Args:
        theta: `(S, V)` logits of the policy (`-inf` for impossible tokens).
        states: `(B, T)` int state id of every token (`Rollout.states`), rows of `theta`.
        mask: `(B, T)` 0/1; holes allowed (untrained positions inside a row).
        agg: the aggregation weights w (token_mean: the mean per-token entropy).
        max_len: the constant of agg="constant".

    Returns:
        `(loss, dtheta (S, V))` with loss = `-sum w H(s_bt)`; descend on it (with a coefficient
        c) to raise the entropy of the visited states.
    """
    logpi = log_softmax(theta)  # (S, V)
    w = agg_weights(mask, agg, max_len)  # (B, T) eq. (pg_agg)
    pi, H = _entropy(logpi)  # (S, V), (S,)
    loss = -(w * H[states]).sum()  # eq. (entropy_bonus)
    c = np.zeros(logpi.shape[0])  # (S,) sum of w per state
    np.add.at(c, states, w)
    return float(loss), -c[:, None] * _entropy_grad(pi, logpi, H)  # (S, V)


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


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


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

LOGITS = array("S V", neginf=True)  # a logit table: -inf allowed (a token of probability 0)

entropy_table = boundary(theta=LOGITS, returns="H")(entropy_table)

entropy_grad_table = boundary(theta=LOGITS, returns="dH")(entropy_grad_table)

entropy_bonus = boundary(
    theta=LOGITS,
    mask=MASK,
    states=array("B T", integer=True, low=0),
    agg=one_of(AGGS),
    max_len=MAX_LEN,
    where=[_states_in_table, longest_response],
    returns="loss dtheta",
)(entropy_bonus)

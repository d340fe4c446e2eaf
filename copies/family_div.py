# minirl_lm 0.1.0: a self-contained copy of minirl_lm/direct/family_div.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/direct/family_div.py -o DIR
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

"""The f-divergence scores of f-DPO and TR-DPO's soft reference update, gradients by hand.

**f-DPO.** Replacing `KL(pi || pi_ref)` in the regularized objective by an f-divergence
`D_f(pi || pi_ref) = E_{pi_ref} f(pi / pi_ref)` changes the implicit reward from
`beta log(pi / pi_ref)` to `beta f'(pi / pi_ref)`. On the sequence log-ratio `h = log pi(y|x) -
log pi_ref(y|x)` (`t = e^h`) the score `s(h) = f'(e^h)` of each divergence, and its derivative:

```text
reverse_kl        f'(t) = log t + 1 (the 1 cancels)   s = h                        ds/dh = 1
forward_kl        f'(t) = 1 - 1/t                     s = 1 - e^(-h)               ds/dh = e^(-h)
js_divergence     f'(t) = log(2t / (t + 1))           s = log 2 + log sigma(h)     ds/dh = sigma(-h)
alpha_divergence  f'(t) = (t^(a-1) - 1) / (a - 1)     s = (e^((a-1) h) - 1)/(a-1)  ds/dh = e^((a-1) h)
                                                                                   eq. (f_score)
```

(`a` is the argument `alpha`, TRL's `f_alpha_divergence_coef`; at `|a - 1| < 1e-6` the score is
`h`, as TRL falls back to reverse_kl.) The margin of a pair is `s(h_c) - s(h_r)`; `family.py`
puts it into the losses that TRL allows an f-divergence for. Deviation from TRL: the exponent of
the alpha score is not clamped at 80 (TRL clamps it so that float32 stays finite); float64 only
fails beyond about 709, and then the loss that uses the score raises (its one finite check).

**TR-DPO.** The reference is not frozen: every `tau` optimizer steps it is pulled towards the
policy, in parameters, `theta_ref <- (1 - alpha) theta_ref + alpha theta`, eq. (tr_dpo_sync). On
a tabular softmax that is a per-state geometric mixture of the two next-token distributions.
An entry that is `-inf` (an impossible token) in either table stays `-inf` unless its weight is
0.

Names in TRL (defaults in parentheses; `docs/next.md` keeps the version and the files):

```text
divergence          TRL DPOConfig.f_divergence_type ("reverse_kl")
alpha               TRL DPOConfig.f_alpha_divergence_coef (0.5)
sync_reference      TRL DPOConfig.sync_ref_model (False), ref_model_mixup_alpha (0.6),
                    ref_model_sync_steps (512): SyncRefModelCallback._sync_target_model
```

Demonstrated by `python examples/preferences.py` (the rows fdpo_* and tr_dpo).
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["DIVERGENCES", "f_score", "sync_reference"]

DIVERGENCES = ("reverse_kl", "forward_kl", "js_divergence", "alpha_divergence")


def f_score(h, divergence, alpha=0.5):
    """The score `s(h)` of an f-divergence and `ds/dh`, eq. (f_score), at the log-ratios `h`.

    Args:
        h: `(P,)` sequence log-ratios `log pi(y|x) - log pi_ref(y|x)`.
        divergence: one of `DIVERGENCES`.
        alpha: the alpha-divergence's coefficient (a real number; `|alpha - 1| < 1e-6` is
            reverse_kl).

    Returns:
        `(s, ds_dh)`: two `(P,)` arrays.

    Raises:
        ValueError: a bad argument (named), or a score beyond float64 (named after the function).
    """
    if divergence == "forward_kl":
        return -np.expm1(-h), np.exp(-h)  # s = 1 - 1/t;  ds/dh = e^(-h) = 1/t
    if divergence == "js_divergence":
        return np.log(2.0) - np.logaddexp(0.0, -h), sigmoid(-h)  # log 2 + log sigma(h)
    if divergence == "alpha_divergence" and abs(alpha - 1.0) >= 1e-6:
        t = (alpha - 1.0) * h  # (P,)
        return np.expm1(t) / (alpha - 1.0), np.exp(t)  # ds/dh = e^((a-1) h)
    return h, np.ones_like(h)  # reverse_kl (and alpha = 1)


def _mix_keeps_a_finite_entry(theta_ref, theta, mixup):
    """Strictly between 0 and 1 the mix is finite only where both tables are: every row keeps one."""
    if 0.0 < mixup < 1.0 and (dead := ~(np.isfinite(theta_ref) & np.isfinite(theta)).any(axis=1)).any():
        row = int(np.flatnonzero(dead)[0])
        return (
            f"theta: expected a finite entry where theta_ref has one, in every row (the mix at mixup = {mixup:g} "
            f"is -inf where either is), got row {row} with none in common"
        )


def sync_reference(theta_ref, theta, mixup):
    """TR-DPO's soft update of the reference, eq. (tr_dpo_sync): `(1 - alpha) theta_ref + alpha theta`.

    Args:
        theta_ref: `(S, V)` the reference's logits (`-inf` for an impossible token allowed; every
            row with a finite entry).
        theta: `(S, V)` the policy's logits (`-inf` allowed; every row with a finite entry, and for
            `0 < mixup < 1` one where `theta_ref` is finite too, so that the mix stays a policy).
        mixup: `alpha` in `[0, 1]` (TRL's `ref_model_mixup_alpha`); 0 keeps the reference,
            1 copies the policy.

    Returns:
        `(S, V)` the new reference logits (a new array; the inputs are not written). An entry
        is `-inf` where a table with a positive weight has `-inf` (its result may hold `-inf`:
        not checked for finiteness); never NaN or `+inf`.
    """
    a = (1.0 - mixup) * theta_ref if mixup < 1.0 else np.zeros_like(theta)  # (S, V) a weight 0 drops -inf
    b = mixup * theta if mixup > 0.0 else np.zeros_like(theta)  # (S, V)
    return a + b  # eq. (tr_dpo_sync); -inf + finite = -inf, -inf + -inf = -inf: no NaN


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)


f_score = boundary(h=array("P"), divergence=one_of(DIVERGENCES), alpha=number(), returns="s ds_dh")(f_score)

sync_reference = boundary(
    theta_ref=array("S V", neginf=True),
    theta=array("S V", neginf=True),
    mixup=number(0.0, 1.0),
    where=[_mix_keeps_a_finite_entry],
    returns=None,
)(sync_reference)

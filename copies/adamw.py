# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/adamw.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/adamw.py -o DIR
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

r"""AdamW by hand: Adam's moment estimates with the weight decay decoupled from them.

For each parameter array `p` with gradient `g`, at step `n = 1, 2, ...`:

    m <- beta1 m + (1 - beta1) g,   u <- beta2 u + (1 - beta2) g^2           eq. (adam_moments)
    mhat = m / (1 - beta1^n),   uhat = u / (1 - beta2^n)                     eq. (adam_bias)
    p <- p - lr (mhat / (sqrt(uhat) + eps) + weight_decay p)                 eq. (adamw)

(Kingma and Ba 2015; Loshchilov and Hutter 2019: the decay multiplies `lr` but not the
adaptive scale. PyTorch's `AdamW` decays first, `p <- p (1 - lr wd)`, then takes the Adam step
from the decayed `p`; the two agree to first order in `lr wd`, and exactly at `wd = 0`.)

A step computes every new moment and parameter first and writes them only when all are finite:
a step that raises (a bad gradient, a parameter made read-only since, a square `g^2` or an update
beyond float64) changes neither the parameters nor the optimizer's state.
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["AdamW"]


def _parameters(params, name, dims):
    """A non-empty dict of float64 arrays, finite and writable: updated in place, so not copied."""
    if not isinstance(params, dict) or not params:
        got = "an empty dict" if isinstance(params, dict) else type(params).__name__
        raise TypeError(f"{name}: expected a non-empty dict of float64 arrays, got {got}")
    for k, v in params.items():
        if (bad := _unfit(v)) is not None:
            kind = TypeError if bad.startswith("a ") else ValueError
            raise kind(f"{name}: expected finite, writable float64 arrays (updated in place), got {bad} at {k!r}")
    return params


def _unfit(v):
    """What makes `v` no parameter array, or None."""
    if not (isinstance(v, np.ndarray) and v.dtype == np.float64):
        return f"a {v.dtype} array" if isinstance(v, np.ndarray) else f"a {type(v).__name__}"
    if not v.flags.writeable:
        return "read-only values"
    if not np.isfinite(v).all():
        return "NaN or inf"


def _gradients(grads, name, dims):
    """A dict of finite real arrays of any shape. A finite float64 ndarray is taken as it is (the
    step only reads it: no copy on the training loop's path); anything else, a subclass included
    (an `np.matrix` would turn `g * g` into a matrix product), is read by `array`."""
    if not isinstance(grads, dict):
        raise TypeError(f"{name}: expected a dict of arrays with the keys of params, got {type(grads).__name__}")
    return {
        k: g
        if type(g) is np.ndarray and g.dtype == np.float64 and np.isfinite(g).all()
        else array(_any_shape(g), empty=True)(g, f"{name}: {k!r}", {})
        for k, g in grads.items()
    }


def _any_shape(g):
    """Shape letters for whatever number of axes `g` has (the array kind says what a ragged or
    non-numeric value is)."""
    try:
        return " ".join(f"A{i}" for i in range(np.ndim(g)))
    except (ValueError, TypeError):
        return "A0"


def _fit(self, grads):
    """`grads` has the keys and shapes of the parameters, which are still writable and finite."""
    if set(grads) != set(self.params):
        return f"grads: expected the keys {sorted(self.params)}, got {sorted(grads)}"
    for k, p in self.params.items():
        if grads[k].shape != p.shape:
            return f"grads: expected shape {p.shape} at {k!r}, got {grads[k].shape}"
        if not p.flags.writeable:
            return f"params: expected finite, writable float64 arrays, got read-only values at {k!r}"


class AdamW:
    """The optimizer's state for one dict of parameters, updated in place by `step`.

    Args:
        params: dict of writable, finite float64 arrays (a model's ``params``), updated in place.
        lr: step size >= 0.
        beta1: the first moment's decay, in [0, 1].
        beta2: the second moment's decay, in [0, 1].
        eps: > 0, added to the root of the second moment.
        weight_decay: >= 0, decoupled.
    """

    def __init__(self, params, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = lr, beta1, beta2, eps, weight_decay
        self.params = params
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.u = {k: np.zeros_like(v) for k, v in params.items()}
        self.n = 0

    def step(self, grads):
        """One AdamW step.

        Args:
            grads: dict with the keys of ``params``, each array of its parameter's shape.

        Raises:
            ValueError: a bad gradient (named), or a moment or parameter beyond float64 (named
                after the method, with the range of the gradients and parameters); nothing is
                written then.
        """
        b1, b2, n = self.beta1, self.beta2, self.n + 1
        c1, c2 = 1.0 - b1**n, 1.0 - b2**n
        m, u, delta = {}, {}, {}
        for k, p in self.params.items():
            g = grads[k]
            m[k] = b1 * self.m[k] + (1.0 - b1) * g  # eq. (adam_moments)
            u[k] = b2 * self.u[k] + (1.0 - b2) * g * g  # eq. (adam_moments)
            step = (m[k] / c1) / (np.sqrt(u[k] / c2) + self.eps)  # eq. (adam_bias)
            delta[k] = self.lr * (step + self.weight_decay * p)  # eq. (adamw): p <- p - delta
        ranges = {"grads": Arrays(grads), "params": Arrays(self.params)}  # read only for a message
        finite(
            tuple(u.values()) + tuple(delta.values()), "AdamW.step", [f"u[{k!r}]" for k in u] + list(delta), ranges
        )
        for k, p in self.params.items():
            p -= delta[k]  # in place: the caller's arrays
        self.m, self.u, self.n = m, u, n


# part 1: from minirl_lm/nn/layer.py -----------------------------------------------------------
#   What the layers share: the activations' kind, the cache a forward keeps for its backward, and


class Arrays(dict):
    """Arrays by name (gradients, parameters). As an array (what the result check reads) it is
    the smallest and the largest entry of each: NaN or inf anywhere shows in them."""

    def __array__(self, dtype=None, copy=None):
        return np.array([f(g) for g in self.values() for f in (np.min, np.max) if np.size(g)], dtype=dtype)


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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

UNIT = number(0.0, 1.0)  # a moment's decay in [0, 1]
OPTIONS = dict(lr=NONNEGATIVE, beta1=UNIT, beta2=UNIT, eps=POSITIVE, weight_decay=NONNEGATIVE)

AdamW.__init__ = boundary(params=_parameters, **OPTIONS, returns=None)(AdamW.__init__)

AdamW.step = boundary(grads=_gradients, where=[_fit], returns=None)(AdamW.step)  # checked before it commits

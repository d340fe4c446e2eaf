# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/layer.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/layer.py -o DIR
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

"""What the layers share: the activations' kind, the cache a forward keeps for its backward, and
the relations of widths and positions.

Every layer's `*_forward` returns `(y, cache)` and its `*_backward(dy, cache)` reads the cache,
as llm.c's layers do. A `Cache` reads as a tuple `(layer, output shape, arrays...)`; the declared
result check reads the layer's output `y` and passes over the cache (its arrays are the
intermediates the output was computed from). A dict of gradients is an `Arrays`, which the check
reads through its extremes. `cache_of(layer)` is the kind of a backward's
`cache`: it fixes the shape letters of `dy` from the forward's output.

(A result the check skips, and a dict of arrays, are features the engine of `minirl_lm.boundary`
could have; here a `Cache` converts to an empty array, which is finite, and `Arrays` to its
extremes.)
"""

import functools
import numbers

import numpy as np


# minirl_lm/nn/layer.py itself -----------------------------------------------------------------


__all__ = [
    "ACTS",
    "KV",
    "START",
    "Cache",
    "Arrays",
    "cache_of",
    "heads_divide_width",
    "ids_in",
    "kv_fits",
    "start_before_end",
]


class Cache:
    """What a forward keeps for its backward: `(layer, output shape, arrays...)`, read as a tuple."""

    def __init__(self, items):
        self.items = tuple(items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def __array__(self, dtype=None, copy=None):
        return np.empty(0, dtype=dtype)  # nothing for the result check to read


class Arrays(dict):
    """Arrays by name (gradients, parameters). As an array (what the result check reads) it is
    the smallest and the largest entry of each: NaN or inf anywhere shows in them."""

    def __array__(self, dtype=None, copy=None):
        return np.array([f(g) for g in self.values() for f in (np.min, np.max) if np.size(g)], dtype=dtype)


def cache_of(layer, output="B L D"):
    """The kind of the cache returned by `{layer}_forward`, whose output has the shape letters
    `output` (a later `dy` of those letters must match it)."""
    letters = output.split()

    def read(c, name, dims):
        if not (isinstance(c, Cache) and len(c) > 2 and c[0] == layer):
            got = f"a cache of {c[0]}_forward" if isinstance(c, Cache) and c else f"{type(c).__name__}"
            raise TypeError(f"{name}: expected the cache returned by {layer}_forward, got {got}")
        dims.update(zip(letters, c[1]))
        return c

    return read


def heads_divide_width(x, n_head):
    """`n_head` divides the width `d` of `x` (heads of `d / n_head` columns each)."""
    if x.shape[-1] % n_head:
        return f"n_head: expected a divisor of d = {x.shape[-1]}, got {n_head}"


def start_before_end(x, start):
    """`start` is a position of `x` (B, L, d): at least one output is computed."""
    if start >= x.shape[1]:
        return f"start: expected a position < L = {x.shape[1]}, got {start}"


def KV(kv, name, dims):
    """The key/value cache, written in place: a writable float64 array (not copied)."""
    if not (isinstance(kv, np.ndarray) and kv.dtype == np.float64 and kv.ndim == 5 and kv.flags.writeable):
        got = f"shape {kv.shape}, {kv.dtype}" if isinstance(kv, np.ndarray) else type(kv).__name__
        raise TypeError(f"{name}: expected a writable float64 array (2, B, H, max_len, e), got {got}")
    return kv


def kv_fits(x, n_head, kv, pos):
    """`kv` holds `(K, V)` of `x`'s rows and heads, with room for positions pos .. pos + L - 1."""
    (B, L, d), n = x.shape, kv.shape[3]
    if kv.shape != (2, B, n_head, n, d // n_head):
        return f"kv: expected shape (2, B, H, max_len, e) = {(2, B, n_head, n, d // n_head)}, got {kv.shape}"
    if pos + L > n:
        return f"pos: expected pos + L <= {n} (the cache's positions), got {pos} + {L}"


def ids_in(name, ids, V):
    """None if every id of `ids` is below the vocabulary size `V`, else the message naming `name`."""
    if ids.size and ids.max() >= V:
        return f"{name}: expected ids < {V}, got max {ids.max()}"


# the declared boundary: from minirl_lm/boundary.py --------------------------------------------
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.


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


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

ACTS = array("B L D")  # (B, L, d): the residual stream and every layer's input and output
START = number(0, integer=True)  # the first position whose output is computed

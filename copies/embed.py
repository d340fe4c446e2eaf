# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/embed.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/embed.py -o DIR
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

r"""Token and position embeddings: the network's first layer, forward and backward.

    x[b, i] = wte[ids[b, i]] + wpe[i]                                   eq. (embed)
    dwte[v] = sum over (b, i) with ids[b, i] = v of dx[b, i]            eq. (embed_grad)
    dwpe[i] = sum_b dx[b, i]                                            eq. (embed_grad)

A row of `wte` gets the sum of the gradients of every position that holds its token (a
scatter-add: tokens repeat); `wpe` rows past the sequence's length get zero.
"""

import functools
import inspect

import numpy as np


__all__ = ["embed_forward", "embed_backward"]


def _ids_fit(wte, wpe, ids):
    """`ids` are rows of `wte`, and at most `max_len` positions (the rows of `wpe`)."""
    if ids.shape[1] > wpe.shape[0]:
        return f"ids: expected at most max_len = {wpe.shape[0]} positions, got {ids.shape[1]}"
    return ids_in("ids", ids, wte.shape[0])


def embed_forward(wte, wpe, ids):
    """Token plus position embedding.

    Args:
        wte: (V, d) token embeddings.
        wpe: (max_len, d) position embeddings.
        ids: (B, L) int token ids in [0, V), L <= max_len.

    Returns:
        ``(x, cache)``: x (B, L, d) float64 and the cache `embed_backward` reads.
    """
    L = ids.shape[1]
    x = wte[ids]  # (B, L, d)
    x += wpe[:L]  # eq. (embed)
    return x, Cache(("embed", x.shape, ids, wte.shape[0], wpe.shape[0]))


def embed_backward(dy, cache):
    """Gradients of the embedding tables.

    Args:
        dy: (B, L, d) gradient of the loss in the embedding's output.
        cache: what `embed_forward` returned beside its output.

    Returns:
        ``(dwte, dwpe)``, (V, d) and (max_len, d).
    """
    _, (B, L, d), ids, V, max_len = cache
    dwte = np.zeros((V, d))
    np.add.at(dwte, ids.ravel(), dy.reshape(-1, d))  # eq. (embed_grad): scatter-add over positions
    dwpe = np.zeros((max_len, d))
    dwpe[:L] = dy.sum(axis=0)  # eq. (embed_grad)
    return dwte, dwpe


# part 1: from minirl_lm/nn/layer.py -----------------------------------------------------------
#   What the layers share: the activations' kind, the cache a forward keeps for its backward, and


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


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

ACTS = array("B L D")  # (B, L, d): the residual stream and every layer's input and output

embed_forward = boundary(
    wte=array("V D"),
    wpe=array("M D"),
    ids=array("B L", integer=True, low=0),
    where=[_ids_fit],
    returns="x cache",
)(embed_forward)

embed_backward = boundary(cache=cache_of("embed"), dy=ACTS, returns="dwte dwpe")(embed_backward)

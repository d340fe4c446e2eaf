# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/mlp.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/mlp.py -o DIR
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

r"""The MLP of a block: a linear map up, GELU, a linear map down (no biases).

    u = x W1,  a = gelu(u),  y = a W2                                        eq. (mlp)
    gelu(u) = u/2 (1 + tanh(c (u + 0.044715 u^3))),  c = sqrt(2/pi)          eq. (gelu)

Backward:

    dW2 = a^T dy,   da = dy W2^T                                             eq. (mlp_grad)
    gelu'(u) = (1 + t)/2 + u/2 (1 - t^2) c (1 + 3 0.044715 u^2),  t = tanh(.)   eq. (gelu_grad)
    du = da gelu'(u),   dW1 = x^T du,   dx = du W1^T                         eq. (mlp_grad)

The tanh form of GELU is GPT-2's (Hendrycks and Gimpel 2016); the forward caches `u`, `t`, `a`
(as llm.c caches the pre-activation and the activation). The block calls `mlp_forward.core` and
`mlp_backward.core`, the bodies without the declared checks.

The GELU and its derivative run over blocks of `CHUNK` entries, in place: each operation of the
formula reads and writes a block that stays in the core's cache (a whole (B L, 4d) array does not
at d = 256, and every fresh temporary of that size is written to cold memory); the backward
writes `du` over `da`. Elementwise, so the numbers are the same bit for bit as on whole arrays.
"""

import functools
import inspect

import numpy as np


__all__ = ["CHUNK", "mlp_forward", "mlp_backward"]

_C = np.sqrt(2.0 / np.pi)
CHUNK = 16384  # entries of a block of the elementwise GELU: 128 KiB of float64


def _blocks(n_rows, width):
    """Row slices covering n_rows rows in blocks of about CHUNK entries."""
    rows = max(1, CHUNK // width)
    return [slice(i, i + rows) for i in range(0, n_rows, rows)]


def mlp_forward(x, W1, W2):
    """The block's MLP.

    Args:
        x: (B, L, d) input.
        W1: (d, m) up projection.
        W2: (m, d) down projection.

    Returns:
        ``(y, cache)``: y (B, L, d) and the cache `mlp_backward` reads.
    """
    u = matmul(x, W1)  # (B, L, m)
    t, a = np.empty_like(u), np.empty_like(u)
    u2, t2, a2 = (z.reshape(-1, z.shape[-1]) for z in (u, t, a))
    for r in _blocks(*u2.shape):
        ub, tb, ab = u2[r], t2[r], a2[r]
        np.multiply(ub, ub, out=tb)  # t = tanh(c (u + 0.044715 u^3))
        tb *= 0.044715
        tb += 1.0
        tb *= ub
        tb *= _C
        np.tanh(tb, out=tb)
        np.add(tb, 1.0, out=ab)  # a = u/2 (1 + t)
        ab *= ub
        ab *= 0.5  # eq. (gelu)
    return matmul(a, W2), Cache(("mlp", x.shape, x, u, t, a, W1, W2))  # eq. (mlp)


def mlp_backward(dy, cache):
    """Gradients of the MLP.

    Args:
        dy: (B, L, d) gradient of the loss in the output.
        cache: from `mlp_forward`.

    Returns:
        ``(dx, dW1, dW2)``.
    """
    _, _, x, u, t, a, W1, W2 = cache
    dW2 = weight_grad(a, dy)  # (m, d) eq. (mlp_grad)
    du = matmul(dy, W2.T)  # (B, L, m): da, then du in place
    u2, t2, du2 = (z.reshape(-1, z.shape[-1]) for z in (u, t, du))
    work = np.empty((2, max(1, CHUNK // u2.shape[1]), u2.shape[1]))
    for r in _blocks(*u2.shape):
        ub, tb = u2[r], t2[r]
        g, w = work[0, : ub.shape[0]], work[1, : ub.shape[0]]
        # eq. (gelu_grad) as (1 + t)/2 (1 + u (1 - t) c (1 + 3 0.044715 u^2))
        np.multiply(ub, ub, out=g)
        g *= 3 * 0.044715 * _C
        g += _C  # c (1 + 3 0.044715 u^2)
        g *= ub
        g *= np.subtract(1.0, tb, out=w)
        g += 1.0
        g *= np.add(tb, 1.0, out=w)
        g *= 0.5  # gelu'(u)
        du2[r] *= g  # dloss/du = da gelu'(u)
    return matmul(du, W1.T), weight_grad(x, du), dW2  # eq. (mlp_grad)


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


# part 2: from minirl_lm/nn/matmul.py ----------------------------------------------------------
#   The two matrix products of every layer, shaped so that each is one BLAS call.


def matmul(x, W):
    """(..., k) @ (k, n) as one 2-D product."""
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(x.shape[:-1] + (W.shape[1],))


def weight_grad(x, dy):
    """The weight's gradient of `matmul`: x^T dy summed over every leading axis."""
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return x2.T @ dy2 if x2.shape[1] <= dy2.shape[1] else (dy2.T @ x2).T


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

mlp_forward = boundary(x=ACTS, W1=array("D M"), W2=array("M D"), returns="y cache")(mlp_forward)

mlp_backward = boundary(cache=cache_of("mlp"), dy=ACTS, returns="dx dW1 dW2")(mlp_backward)

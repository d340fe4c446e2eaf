# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/attention.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/attention.py -o DIR
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

r"""Causal multi-head self-attention, forward and backward, and one cached decoding step.

With `H` heads of size `e = d / H` (head `h` reads columns `h e .. (h+1) e - 1`):

    [q, k, v] = x Wqkv                                    (B, L, 3d)         eq. (qkv)
    s_ij = q_i . k_j / sqrt(e)  for j <= i,  -inf for j > i                 eq. (scores)
    a_i = softmax_j(s_ij)                                                    eq. (attn)
    o_i = sum_j a_ij v_j,   y = o Wo                                         eq. (attn_out)

Backward (per head; the causal zeros of `a` make every masked term vanish):

    dWo = o^T dy,   do = dy Wo^T                                             eq. (attn_out_grad)
    da_ij = do_i . v_j,   dv_j = sum_i a_ij do_i                             eq. (attn_av_grad)
    ds_ij = a_ij (da_ij - sum_k a_ik da_ik)                                  eq. (softmax_grad)
    dq_i = sum_j ds_ij k_j / sqrt(e),   dk_j = sum_i ds_ij q_i / sqrt(e)     eq. (scores_grad)
    dWqkv = x^T [dq, dk, dv],   dx = [dq, dk, dv] Wqkv^T                     eq. (qkv_grad)

The block calls `attention_forward.core` and `attention_backward.core`, the bodies without the
declared checks. `attention_forward(..., start=s)` computes the outputs of positions `s..L-1`
only (the keys and values of every position): the model's last block needs no more.
`attention_step` is the same map for new positions whose keys and values are written into a
cache of the earlier ones (generation): position i attends to positions 0..i, as in eq. (scores).
The forward caches what the backward reads (q, k, v, the softmax `a`, the heads' output `o`);
`q @ k^T` and `a @ v` are NumPy's batched products over (B, H), written straight into the layout
the next product reads.
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["LAYER", "attention_forward", "attention_backward", "attention_step"]

# what the forward and the step both read: the layer's input, its weights, its heads, where it starts


def _qkv_width(x, Wqkv):
    """`Wqkv` is `(d, 3d)`: the query, key and value projections side by side."""
    if Wqkv.shape[1] != 3 * x.shape[2]:
        return f"Wqkv: expected shape (d, 3d) = ({x.shape[2]}, {3 * x.shape[2]}), got {Wqkv.shape}"


def _heads(z, n_head):
    """(B, L, d) -> (B, H, L, e), a view."""
    B, L, d = z.shape
    return z.reshape(B, L, n_head, d // n_head).transpose(0, 2, 1, 3)


def _softmax_rows(s):
    """Softmax over the last axis, in place."""
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s


def _attend(q, K, V, start, out):
    """Queries q (B, H, Lq, e) at positions start.. over keys and values K, V (B, H, Lk, e);
    writes o into out (B, Lq, H, e) and returns the softmax a (B, H, Lq, Lk)."""
    s = q @ K.transpose(0, 1, 3, 2)  # (B, H, Lq, Lk) eq. (scores)
    s /= np.sqrt(q.shape[-1])
    i, j = np.arange(q.shape[2])[:, None] + start, np.arange(K.shape[2])[None, :]
    np.copyto(s, -np.inf, where=j > i)  # causal: position i sees 0..i
    a = _softmax_rows(s)  # eq. (attn)
    np.matmul(a, V, out=out.transpose(0, 2, 1, 3))  # eq. (attn_out), heads side by side
    return a


def attention_forward(x, Wqkv, Wo, n_head, *, start=0):
    """Causal multi-head self-attention (no biases).

    Args:
        x: (B, L, d) input.
        Wqkv: (d, 3d) the query, key and value projections side by side.
        Wo: (d, d) output projection.
        n_head: number of heads, a divisor of d.
        start: the first position whose output is computed (every position's key and value is).

    Returns:
        ``(y, cache)``: y (B, L - start, d), the outputs of positions start..L-1, and the cache
        `attention_backward` reads.
    """
    B, L, d = x.shape
    qkv = matmul(x, Wqkv)  # (B, L, 3d) eq. (qkv): one product for q, k and v
    q, k, v = (_heads(qkv[:, :, i * d : (i + 1) * d], n_head) for i in range(3))  # (B, H, L, e) views
    q = q[:, :, start:]
    o = np.empty((B, L - start, n_head, d // n_head))  # (B, L - start, H, e)
    a = _attend(q, k, v, start, o)
    o = o.reshape(B, L - start, d)
    y = matmul(o, Wo)  # eq. (attn_out)
    return y, Cache(("attention", y.shape, x, q, k, v, a, o, Wqkv, Wo, start))


def attention_backward(dy, cache):
    """Gradients of causal self-attention.

    Args:
        dy: (B, L - start, d) gradient of the loss in the output.
        cache: from `attention_forward` (any `start`).

    Returns:
        ``(dx, dWqkv, dWo)``: dx (B, L, d) at every position (those before `start` through
        their keys and values).
    """
    _, _, x, q, k, v, a, o, Wqkv, Wo, start = cache
    (B, L, d), n_head = x.shape, q.shape[1]
    dWo = weight_grad(o, dy)  # (d, d) eq. (attn_out_grad)
    do = _heads(matmul(dy, Wo.T), n_head)  # (B, H, Lq, e)
    da = do @ v.transpose(0, 1, 3, 2)  # (B, H, Lq, L) eq. (attn_av_grad)
    dqkv = np.empty((B, L, 3, n_head, d // n_head))  # [dq, dk, dv] as the forward's qkv: (B, L, 3d)
    dq, dk, dv = (dqkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (B, H, L, e) views
    np.matmul(a.transpose(0, 1, 3, 2), do, out=dv)  # eq. (attn_av_grad)
    da -= (da * a).sum(axis=-1, keepdims=True)
    ds = np.multiply(da, a, out=da)  # (B, H, Lq, L) eq. (softmax_grad)
    scale = 1.0 / np.sqrt(d // n_head)
    np.matmul(ds, k, out=dq[:, :, start:])  # eq. (scores_grad)
    dq[:, :, :start] = 0.0  # positions before start asked nothing
    np.matmul(ds.transpose(0, 1, 3, 2), q, out=dk)  # eq. (scores_grad)
    dq *= scale
    dk *= scale
    dqkv = dqkv.reshape(B, L, 3 * d)
    return matmul(dqkv, Wqkv.T), weight_grad(x, dqkv), dWo  # eq. (qkv_grad)


def attention_step(x, Wqkv, Wo, n_head, kv, pos, *, start=0):
    """The attention of new positions over a key/value cache of the earlier ones (generation).

    Args:
        x: (B, L, d) the positions pos .. pos + L - 1.
        Wqkv: (d, 3d) as in `attention_forward`.
        Wo: (d, d) as in `attention_forward`.
        n_head: as in `attention_forward`.
        kv: (2, B, H, max_len, e) the keys and values: positions 0 .. pos - 1 hold the earlier
            ones, and this call writes its own at pos .. pos + L - 1 (even when it then raises).
        pos: the position of x's first row.
        start: the first row of x whose output is computed.

    Returns:
        y (B, L - start, d), the outputs of positions pos + start .. pos + L - 1.
    """
    B, L, d = x.shape
    qkv = matmul(x, Wqkv)  # eq. (qkv)
    kv[0][:, :, pos : pos + L] = _heads(qkv[:, :, d : 2 * d], n_head)
    kv[1][:, :, pos : pos + L] = _heads(qkv[:, :, 2 * d :], n_head)
    q = _heads(qkv[:, :, :d], n_head)[:, :, start:]
    o = np.empty((B, L - start, n_head, d // n_head))
    _attend(q, kv[0][:, :, : pos + L], kv[1][:, :, : pos + L], pos + start, o)
    return matmul(o.reshape(B, L - start, d), Wo)  # eq. (attn_out)


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


COUNT = number(1, integer=True)  # an integer >= 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

ACTS = array("B L D")  # (B, L, d): the residual stream and every layer's input and output
START = number(0, integer=True)  # the first position whose output is computed
# what the forward and the step both read: the layer's input, its weights, its heads, where it starts
LAYER = dict(x=ACTS, Wqkv=array("D Q"), Wo=array("D D"), n_head=COUNT, start=START)

attention_forward = boundary(
    **LAYER,
    where=[_qkv_width, heads_divide_width, start_before_end],
    returns="y cache",
)(attention_forward)

attention_backward = boundary(cache=cache_of("attention"), dy=ACTS, returns="dx dWqkv dWo")(attention_backward)

attention_step = boundary(
    **LAYER,
    kv=KV,
    pos=number(0, integer=True),
    where=[_qkv_width, heads_divide_width, kv_fits, start_before_end],
    returns="y",
)(attention_step)

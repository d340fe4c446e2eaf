# minirl_lm 0.1.0: a self-contained copy of minirl_lm/exact/tree.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/exact/tree.py -o DIR
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

"""Sums and products along a response, by recursion over the prefix tree: no list of responses.

A response is a path from a prompt's root state to a terminal prefix, drawn token by token from
`q(.|s)`. Two kinds of expectation along the path need only the tree:

    E[sum_t f(s_t, y_t)] = sum_s d(s) sum_y q(y|s) f(s, y),
        d(root) = 1,  d(child(s, y)) = d(s) q(y|s)                                (tree_sum)
    E[prod_t h(s_t, y_t)] = U(root),
        U(s) = sum_y q(y|s) h(s, y) U(child(s, y)),  U(terminal) = 1              (tree_product)

The first is forward (the occupancy `d`), the second backward. Both touch each state once, by
levels: work `S V`, whatever the number of responses (there are `~V^T` of them at length T). The
sequence-level KL of a sampler to the policy is a (tree_sum), with `f = log q / pi`; the second
moment of the sequence importance weight `W = prod_t pi/mu` under `mu` is a (tree_product), with
`h = (pi / mu)^2`: it is what makes the sequence ratio's variance explode with length.

    $ python examples/off_policy.py --max-len 8
"""

import numpy as np


__all__ = ["children", "tree_sum", "tree_product"]


def children(mdp):
    """The prefix tree of a token MDP as a table: `child[s, y]` = the id of `s . y`, or -1.

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.

    Returns:
        `(child, roots)`: `(S, V)` int64 (-1 where `s . y` is terminal) and `(N,)` int64, the
        root state of each prompt.
    """
    mdp = children_args(mdp)
    child = np.full((mdp.S, mdp.V), -1, np.int64)
    for s, (n, prefix) in enumerate(mdp.all_states()):
        for y in range(mdp.V):
            nxt = prefix + (y,)
            if not mdp.is_terminal(nxt):
                child[s, y] = mdp.state_id(n, nxt)
    roots = np.array([mdp.state_id(n, ()) for n in range(mdp.N)], np.int64)
    return child, roots


def _levels(child, roots):
    """The states by depth: a list of int64 arrays, the roots first."""
    out, level = [], roots
    while level.size:
        out.append(level)
        nxt = child[level].ravel()
        level = nxt[nxt >= 0]
    return out


def tree_sum(child, roots, q, f):
    """`E[sum_t f(s_t, y_t)]` per prompt, responses drawn from `q`, eq. (tree_sum).

    Args:
        child: `(S, V)` int64 child table, as `children` returns it.
        roots: `(N,)` int64 root states, as `children` returns them.
        q: `(S, V)` probabilities `q(.|s)`, rows summing to 1.
        f: `(S, V)` per-token values; entries with `q = 0` are ignored (they may be inf).

    Returns:
        `(N,)` float64, one expectation per prompt.
    """
    child, roots, q, f = tree_args(child, roots, q, f, "f")
    return _tree_sum(child, roots, q, f)


def _tree_sum(child, roots, q, f):
    S, V = q.shape
    N = roots.size
    d = np.zeros((N, S))  # (N, S) occupancy per prompt
    d[np.arange(N), roots] = 1.0
    qf = np.where(q > 0, q * np.where(q > 0, f, 0.0), 0.0)  # (S, V) q f, 0 where q = 0
    for level in _levels(child, roots):
        kids = child[level]  # (L, V)
        live = kids >= 0
        mass = d[:, level, None] * q[level]  # (N, L, V) eq. (tree_sum): d(child) = d(s) q(y|s)
        d[:, kids[live]] = mass[:, live]  # one parent per child
    return d @ qf.sum(axis=1)  # (N,)


def tree_product(child, roots, q, h):
    """`E[prod_t h(s_t, y_t)]` per prompt, responses drawn from `q`, eq. (tree_product).

    Args:
        child: `(S, V)` int64 child table, as `children` returns it.
        roots: `(N,)` int64 root states, as `children` returns them.
        q: `(S, V)` probabilities `q(.|s)`, rows summing to 1.
        h: `(S, V)` finite per-token factors (entries with `q = 0` are ignored).

    Returns:
        `(N,)` float64, one expectation per prompt.
    """
    child, roots, q, h = tree_args(child, roots, q, h, "h")
    return _tree_product(child, roots, q, h)


def _tree_product(child, roots, q, h):
    U = np.ones(q.shape[0])  # (S,) U(s), filled from the leaves up
    qh = np.where(q > 0, q * h, 0.0)  # (S, V)
    for level in reversed(_levels(child, roots)):
        kids = child[level]  # (L, V)
        below = np.where(kids >= 0, U[np.maximum(kids, 0)], 1.0)  # U(terminal) = 1
        U[level] = (qh[level] * below).sum(axis=1)  # eq. (tree_product)
    return U[roots]


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/exact/checks.py
#   The boundary of the exact engine: one bundle call per public function of `minirl_lm/exact/`.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def children_args(mdp):
    """A token MDP whose states are enumerated (a tree table needs every state); by the names
    `children` calls, so a copy's TokenMDP and the package's both pass."""
    need = ("S", "V", "N", "ids", "all_states", "is_terminal", "state_id")
    missing = [a for a in need if not hasattr(mdp, a)]
    if missing:
        raise TypeError(f"mdp: expected a TokenMDP, got {_describe(mdp)} without {', '.join(missing)}")
    if mdp.ids != "enumerate":
        raise ValueError(f"mdp: expected ids='enumerate' (every state listed), got {mdp.ids!r}")
    return mdp


def tree_args(child, roots, q, f, name):
    """A `(S, V)` child table with ids in `[-1, S)`, `(N,)` roots, `(S, V)` probabilities and
    `(S, V)` values, finite wherever `q > 0`."""
    q = prob_table(q, "q", ndim=2)
    child = int_array(child, "child", shape=q.shape, low=-1, high=q.shape[0])
    roots = int_array(roots, "roots", ndim=1, low=0, high=q.shape[0])
    nonempty(roots, "roots")
    f = float_array(f, name, shape=q.shape, finite=False)
    if np.isnan(f).any() or not np.isfinite(f[q > 0]).all():
        raise ValueError(f"{name}: expected finite values wherever q > 0, got a NaN or inf")
    return child, roots, q, np.where(q > 0, f, 0.0)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(
            f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
            f"to {float(s.ravel()[int(np.argmax(bad))])!r}"
        )
    return p


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:  # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"  # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")

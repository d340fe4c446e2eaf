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

The child table must be a forest under the roots (each state the child of at most one entry, no
root a child): a table with a cycle is refused, so the recursion always ends.

    $ python examples/off_policy.py --max-len 8
"""

import functools
import inspect

import numpy as np


__all__ = ["allowing_inf", "children", "tree_sum", "tree_product"]


def allowing_inf(kind, signs=(-1.0, 1.0)):
    """The kind `kind`, with infinite entries of the listed signs let through (values the body
    ignores, such as those where `q = 0`; a relation says where they may be)."""

    def read(x, name, dims):
        try:
            a = np.asarray(x)  # a str or bytes gives no float array
        except (ValueError, TypeError, OverflowError):
            a = None
        if a is None or a.dtype.kind != "f":
            return kind(x, name, dims)
        inf = np.isinf(a) & np.isin(np.sign(a), signs)
        out = kind(np.where(inf, 0.0, a), name, dims)
        out[inf] = a[inf]
        return out

    return read


def _enumerated(mdp):
    """A tree table needs every state listed."""
    if mdp.ids != "enumerate":
        return f"mdp: expected ids='enumerate' (every state listed), got {mdp.ids!r}"


def children(mdp):
    """The prefix tree of a token MDP as a table: `child[s, y]` = the id of `s . y`, or -1.

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.

    Returns:
        `(child, roots)`: `(S, V)` int64 (-1 where `s . y` is terminal) and `(N,)` int64, the
        root state of each prompt.
    """
    child = np.full((mdp.S, mdp.V), -1, np.int64)
    for s, (n, prefix) in enumerate(mdp.all_states()):
        for y in range(mdp.V):
            nxt = prefix + (y,)
            if not mdp.is_terminal(nxt):
                child[s, y] = mdp.state_id(n, nxt)
    roots = np.array([mdp.state_id(n, ()) for n in range(mdp.N)], np.int64)
    return child, roots


def _a_forest(child, roots, q):
    """`child` holds ids in `[-1, S)`, `roots` in `[0, S)`, and under the roots a forest: each
    state the child of at most one entry and no root a child, so no path comes back (no cycle)."""
    S = q.shape[0]
    for name, ids in (("child", child), ("roots", roots)):
        if ids.max() >= S:
            return f"{name}: expected ids < {S} (the states of q), got max {ids.max()}"
    parents = np.bincount(child[child >= 0], minlength=S)  # (S,)
    if (parents > 1).any():
        s = int(np.argmax(parents))
        return (
            f"child: expected a tree (each state the child of one entry), got state {s} the child of {parents[s]}"
        )
    if parents[roots].any():
        r = int(roots[np.flatnonzero(parents[roots])[0]])
        return f"child: expected a tree (no root a child), got root {r} as a child: a cycle"


def _finite_where_drawn(name, q, values):
    """The values `name` are finite wherever `q > 0` (where a response can draw them)."""
    if not np.isfinite(values[q > 0]).all():
        s, y = np.argwhere((q > 0) & ~np.isfinite(values))[0]
        return f"{name}: expected finite values wherever q > 0, got {values[s, y]} at ({s}, {y})"


def _f_where_drawn(q, f):
    return _finite_where_drawn("f", q, f)


def _h_where_drawn(q, h):
    return _finite_where_drawn("h", q, h)


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
        child: `(S, V)` int64 child table, as `children` returns it (a forest under the roots).
        roots: `(N,)` int64 root states, as `children` returns them.
        q: `(S, V)` probabilities `q(.|s)`, rows summing to 1.
        f: `(S, V)` per-token values; entries with `q = 0` are ignored (they may be inf).

    Returns:
        `(N,)` float64, one expectation per prompt.
    """
    S, V = q.shape
    N = roots.size
    d = np.zeros((N, S))  # (N, S) occupancy per prompt
    d[np.arange(N), roots] = 1.0
    qf = q * np.where(q > 0, f, 0.0)  # (S, V) q f, 0 where q = 0
    for level in _levels(child, roots):
        kids = child[level]  # (L, V)
        live = kids >= 0
        mass = d[:, level, None] * q[level]  # (N, L, V) eq. (tree_sum): d(child) = d(s) q(y|s)
        d[:, kids[live]] = mass[:, live]  # one parent per child
    return d @ qf.sum(axis=1)  # (N,)


def tree_product(child, roots, q, h):
    """`E[prod_t h(s_t, y_t)]` per prompt, responses drawn from `q`, eq. (tree_product).

    The arguments `child`, `roots` and `q` are those of `tree_sum`.

    Args:
        h: `(S, V)` per-token factors, finite where `q > 0` (entries with `q = 0` are ignored).

    Returns:
        `(N,)` float64, one expectation per prompt.
    """
    U = np.ones(q.shape[0])  # (S,) U(s), filled from the leaves up
    qh = q * np.where(q > 0, h, 0.0)  # (S, V) q h, 0 where q = 0
    for level in reversed(_levels(child, roots)):
        kids = child[level]  # (L, V)
        below = np.where(kids >= 0, U[np.maximum(kids, 0)], 1.0)  # U(terminal) = 1
        U[level] = (qh[level] * below).sum(axis=1)  # eq. (tree_product)
    return U[roots]


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


def simplex(*shapes):
    """Probabilities: a float64 array of one of `shapes`, entries >= 0, each row (last axis)
    summing to 1 within 1e-9 (stricter than `Generator.choice`'s ~1.5e-8, so a table that
    passes here is one `rng.choice` accepts)."""
    entries = array(*shapes, low=0.0)

    def read(x, name, dims):
        p = entries(x, name, dims)
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
            worst = float(s.ravel()[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing to {worst!r}")
        return p

    return read


def has(what, members):
    """Any object with `members`, a string of names (`"logp() theta"`: `logp()` a method, `theta`
    an attribute), whatever its type: what the body uses of it; `what` says what fits."""
    members = members.split()

    def lacks(x, m):
        return not callable(getattr(x, m[:-2], None)) if m.endswith("()") else not hasattr(x, m)

    def read(x, name, dims):
        if missing := [m.rstrip("()") for m in members if lacks(x, m)]:
            raise TypeError(
                f"{name}: expected {what} (with {', '.join(members)}), "
                f"got {type(x).__name__} without {', '.join(missing)}"
            )
        return x

    return read


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

TOKEN_MDP = has("a TokenMDP", "S V N ids all_states() is_terminal() state_id()")
TREE = dict(child=array("S V", integer=True, low=-1), roots=array("N", integer=True, low=0), q=simplex("S V"))
_OFF_SUPPORT = allowing_inf(array("S V"))  # values per (s, y); inf where q = 0 is ignored

children = boundary(mdp=TOKEN_MDP, where=[_enumerated], returns="child roots")(children)

tree_sum = boundary(**TREE, f=_OFF_SUPPORT, where=[_a_forest, _f_where_drawn], returns="expectations")(tree_sum)

tree_product = boundary(
    **TREE, h=_OFF_SUPPORT, where=[_a_forest, _h_where_drawn], returns="expectations"
)(tree_product)

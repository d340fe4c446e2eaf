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

import numpy as np

from minirl_lm.boundary import array, boundary, has, simplex

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


TOKEN_MDP = has("a TokenMDP", "S V N ids all_states() is_terminal() state_id()")


def _enumerated(mdp):
    """A tree table needs every state listed."""
    if mdp.ids != "enumerate":
        return f"mdp: expected ids='enumerate' (every state listed), got {mdp.ids!r}"


@boundary(mdp=TOKEN_MDP, where=[_enumerated], returns="child roots")
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


TREE = dict(child=array("S V", integer=True, low=-1), roots=array("N", integer=True, low=0), q=simplex("S V"))
_OFF_SUPPORT = allowing_inf(array("S V"))  # values per (s, y); inf where q = 0 is ignored


def _levels(child, roots):
    """The states by depth: a list of int64 arrays, the roots first."""
    out, level = [], roots
    while level.size:
        out.append(level)
        nxt = child[level].ravel()
        level = nxt[nxt >= 0]
    return out


@boundary(**TREE, f=_OFF_SUPPORT, where=[_a_forest, _f_where_drawn], returns="expectations")
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


@boundary(**TREE, h=_OFF_SUPPORT, where=[_a_forest, _h_where_drawn], returns="expectations")
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

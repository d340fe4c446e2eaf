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

from minirl_lm.exact.checks import children_args, tree_args


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

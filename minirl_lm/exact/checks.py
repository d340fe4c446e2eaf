"""The boundary of the exact engine: one bundle call per public function of `minirl_lm/exact/`.
Built on `core/checks.py`; NumPy only."""

import numpy as np

from minirl_lm.core.checks import (
    choice,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    nonempty,
    prob_table,
)
from minirl_lm.core.validate import flag

KINDS = ("none", "batch_std", "whiten")
_NONE = object()  # an argument a bundle's caller does not have (None is a bad value)


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def score_args(probs, states, tokens, mask, coef=_NONE):
    """A `(S, V)` probability table, `(B, T)` ids into it, a 0/1 mask (holes allowed) and, if
    given, `(B, T)` finite coefficients."""
    probs = prob_table(probs, "probs", ndim=2)
    mask = mask_array(mask, "mask")
    states = int_array(states, "states", shape=mask.shape, low=0, high=probs.shape[0])
    tokens = int_array(tokens, "tokens", shape=mask.shape, low=0, high=probs.shape[1])
    if coef is _NONE:
        return probs, states, tokens, mask
    return probs, states, tokens, mask, float_array(coef, "coef", shape=mask.shape)


def draw_args(q, coef, probs, states, tokens, mask):
    """`draw_moments`' arguments: `score_args`, `(B,)` row probabilities, and no state visited
    twice by a row (so its scores are orthogonal)."""
    probs, states, tokens, mask, coef = score_args(probs, states, tokens, mask, coef)
    q = prob_table(q, "q", shape=(mask.shape[0],))
    seen = np.where(mask > 0, states, -1 - np.arange(mask.shape[1]))  # padding never collides
    srt = np.sort(seen, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
    if dup.any():
        b = int(np.flatnonzero(dup.any(axis=1))[0])
        raise ValueError(
            f"states: expected each row to visit a state at most once (a path in the prefix tree), "
            f"row {b} visits state {int(srt[b, 1:][dup[b]][0])} twice"
        )
    return q, coef, probs, states, tokens, mask


def law_args(p, K, probs=False):
    """A group size K >= 1 and either a response count R >= 1 or `(R,)`/`(N, R)` probabilities."""
    if probs:
        p = prob_table(p, "p")
        if p.ndim not in (1, 2):
            raise ValueError(f"p: expected a (R,) or (N, R) array, got {_describe(p)}")
    else:
        p = int_scalar(p, "R", low=1)
    return p, int_scalar(K, "K", low=1, high=64)


def group_args(P, Y, coefs, bases, second=True):
    """`(M,)` multiset probabilities (sum <= 1; `_NONE`: no law), `(M, K)` response ids, F `(M, K, T)` coefficient
    and F `(R, T, D)` basis arrays."""
    if P is not _NONE:  # group_updates: no law
        P = float_array(P, "P", ndim=1)
        nonempty(P, "P")
        if (P < 0).any() or P.sum() > 1.0 + 1e-9:
            raise ValueError(
                f"P: expected probabilities >= 0 summing to at most 1, got min {P.min()}, sum {P.sum()}"
            )
    for name, seq in (("coefs", coefs), ("bases", bases)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise TypeError(f"{name}: expected a non-empty list of arrays, got {_describe(seq)}")
    if len(coefs) != len(bases):
        raise ValueError(f"coefs: expected one array per basis ({len(bases)}), got {len(coefs)}")
    bases = [float_array(b, "bases", ndim=3) for b in bases]
    R, T, D = bases[0].shape
    if any(b.shape != (R, T, D) for b in bases):
        raise ValueError(f"bases: expected arrays of one shape {(R, T, D)}, got {[b.shape for b in bases]}")
    Y = int_array(Y, "Y", ndim=2, low=0, high=R)
    nonempty(Y, "Y")
    if P is not _NONE and Y.shape[0] != P.size:
        raise ValueError(f"Y: expected {P.size} rows (one per entry of P), got {Y.shape[0]}")
    coefs = [float_array(c, "coefs", shape=Y.shape + (T,)) for c in coefs]
    flag(second, "second")
    return P, Y, coefs, bases


def ordered_args(logq, prompt, K):
    """`(B,)` log-probabilities (-inf allowed), `(B,)` prompt ids whose probabilities each sum
    to 1, K >= 1."""
    logq = float_array(logq, "logq", ndim=1, allow_neginf=True)
    nonempty(logq, "logq")
    prompt = int_array(prompt, "prompt", shape=logq.shape, low=0)
    with np.errstate(over="ignore"):
        mass = np.bincount(prompt, np.exp(logq))
    if not np.allclose(mass, 1.0, rtol=0.0, atol=1e-9):
        raise ValueError(f"logq: expected probabilities summing to 1 per prompt, got sums {mass}")
    return logq, prompt, int_scalar(K, "K", low=1, high=8)


def iid_args(p, R, Sc, c):
    """`(M,)` probabilities, `(M,)` scalars, `(M, D)` vectors, `(K, K)` coefficients."""
    p = prob_table(p, "p", ndim=1)
    R = float_array(R, "R", shape=p.shape)
    Sc = float_array(Sc, "Sc", ndim=2, shape=(p.size, None))
    c = float_array(c, "c", ndim=2)
    if c.shape[0] != c.shape[1] or c.shape[0] > 16 or c.size == 0:
        raise ValueError(f"c: expected a square (K, K) array with 1 <= K <= 16, got {_describe(c)}")
    return p, R, Sc, c


def batch_args(P, stats, parts, kind, token_mean, eps, second, kernel):
    """N groups: `(M_n,)` probabilities, `(4, M_n)` statistics, `(M_n, D)` triples; kind, eps."""
    for name, seq in (("P", P), ("stats", stats), ("parts", parts)):
        if not isinstance(seq, (list, tuple)) or not seq:
            raise TypeError(f"{name}: expected a non-empty list with one entry per prompt, got {_describe(seq)}")
    if not len(P) == len(stats) == len(parts):
        raise ValueError(
            f"stats: expected one entry per prompt ({len(P)}), got {len(stats)} and {len(parts)} parts"
        )
    P = [prob_table(p, "P", ndim=1) for p in P]
    stats = [float_array(s, "stats", shape=(4, p.size)) for s, p in zip(stats, P)]
    if any((s[0] <= 0).any() for s in stats):
        raise ValueError("stats: expected a count cnt > 0 in row 0 of every prompt's statistics")
    D, out = None, []
    for p, triple in zip(P, parts):
        if not isinstance(triple, (list, tuple)) or len(triple) != 3:
            raise TypeError(f"parts: expected a (P_n, Q_n, Rg_n) triple per prompt, got {_describe(triple)}")
        checked = []
        for x in triple:  # one width D for every part of every prompt
            checked.append(float_array(x, "parts", ndim=2, shape=(p.size, D)))
            D = checked[-1].shape[1]
        out.append(tuple(checked))
    total = float(np.prod([float(p.size) for p in P]))
    if total > 1e9:
        raise ValueError(f"P: expected a joint outcome of at most 1e9 points, got {total:.3g}")
    for name, x in (("token_mean", token_mean), ("second", second), ("kernel", kernel)):
        flag(x, name)
    return P, stats, out, choice(kind, "kind", KINDS), float_scalar(eps, "eps", low=0.0, low_open=True)


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

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/exact/scores.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/exact/scores.py -o DIR
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

"""Updates linear in per-token coefficients, and their exact moments over one draw.

On a tabular softmax `pi(.|s) = softmax(theta[s])` the gradient of a token's log-prob is the
score, non-zero in one row only:

    d log pi(y_t|s_t) / d theta[s, v] = 1[s = s_t] (1[v = y_t] - pi(v|s_t))         (exact_score)

Every update the library builds from a response is `g = sum_t c_t score_t`, with per-token
coefficients `c` (minus `dloss/dlogp` times the batch size, the advantage times a weight, ...):

    g(y) = sum_t c_t(y) (e_{y_t} - pi(.|s_t))   in row s_t                          (exact_linear)

Its moments when one response `b` is drawn with probability `q_b` need no dense score array. A
response visits each state at most once (a path in the prefix tree, or an episode whose
observation tokens move it to fresh states), so its per-token scores sit in distinct rows and
are orthogonal:

    |g_b|^2 = sum_t c_bt^2 (1 - 2 pi(y_t|s_t) + |pi(.|s_t)|^2)                      (exact_norm)
    E[g] = sum_b q_b g_b,   tr Cov[g] = sum_b q_b |g_b|^2 - |E[g]|^2                (exact_moments)

`E[g]` is a scatter into the table (work `B T + S V`), so a response set of any length whose
list fits in memory is cheap; `token_scores` and `row_updates` are the dense forms for the small
tasks that want the vectors themselves (`(B, T, S V)` and `(B, S V)`).

    $ python examples/off_policy.py --max-len 8   # the off-policy lab at 8 tokens, exactly
"""

import numpy as np


__all__ = ["token_scores", "row_updates", "draw_moments"]


def token_scores(probs, states, tokens, mask):
    """The score of every token, dense: `(B, T, S*V)`, zero at padding, eq. (exact_score).

    Args:
        probs: `(S, V)` probabilities `pi(.|s)`, rows summing to 1.
        states: `(B, T)` int ids of `s_t` in `[0, S)`.
        tokens: `(B, T)` int ids of `y_t` in `[0, V)`.
        mask: `(B, T)` 0/1 float mask (any pattern: holes are tokens the policy did not emit).

    Returns:
        `(B, T, S*V)` float64 `d log pi(y_t|s_t) / d theta`, flattened row-major over `(S, V)`.
    """
    probs, states, tokens, mask = score_args(probs, states, tokens, mask)
    return _token_scores(probs, states, tokens, mask)


def _token_scores(probs, states, tokens, mask):
    S, V = probs.shape
    B, T = mask.shape
    out = np.zeros((B, T, S, V))  # (B, T, S, V)
    b, t = np.indices((B, T))
    out[b, t, states] = -probs[states]  # - pi(.|s_t), eq. (exact_score)
    out[b, t, states, tokens] += 1.0  # + e_{y_t}
    out *= mask[:, :, None, None]
    return out.reshape(B, T, S * V)


def row_updates(probs, states, tokens, mask, coef):
    """`g_b = sum_t coef[b, t] score[b, t]` of every row, dense: `(B, S*V)`, eq. (exact_linear).

    Args:
        probs: `(S, V)` probabilities `pi(.|s)`, rows summing to 1.
        states: `(B, T)` int ids of `s_t` in `[0, S)`.
        tokens: `(B, T)` int ids of `y_t` in `[0, V)`.
        mask: `(B, T)` 0/1 float mask (holes allowed).
        coef: `(B, T)` finite per-token coefficients (ignored at padding).

    Returns:
        `(B, S*V)` float64, one update per row.
    """
    probs, states, tokens, mask, coef = score_args(probs, states, tokens, mask, coef)
    return _row_updates(probs, states, tokens, mask, coef)


def _row_updates(probs, states, tokens, mask, coef):
    S, V = probs.shape
    B = mask.shape[0]
    G = np.zeros((B, S, V))  # (B, S, V)
    b, t = np.nonzero(mask > 0)
    w = coef[b, t]
    np.add.at(G, (b, states[b, t], tokens[b, t]), w)  # e_{y_t}
    np.add.at(G, (b, states[b, t]), -w[:, None] * probs[states[b, t]])  # - pi(.|s_t)
    return G.reshape(B, S * V)


# --8<-- [start:draw]
def draw_moments(q, coef, probs, states, tokens, mask):
    """`E[g]` and `tr Cov[g]` of `g = g_b` for one row `b` drawn with probability `q_b`.

    Eq. (exact_moments), by (exact_norm): work `O(B T + S V)`, no dense score array. Each row
    must visit each state at most once (true of every path in a prefix tree); a row that visits a
    state twice is refused, since its scores would not be orthogonal.

    Args:
        q: `(B,)` probabilities of the rows, summing to 1 (a row of probability 0 is allowed).
        coef: `(B, T)` finite per-token coefficients of each row's update.
        probs: `(S, V)` probabilities `pi(.|s)`, rows summing to 1.
        states: `(B, T)` int ids of `s_t` in `[0, S)`; no row visits a state twice.
        tokens: `(B, T)` int ids of `y_t` in `[0, V)`.
        mask: `(B, T)` 0/1 float mask (holes allowed).

    Returns:
        `(mean, var)`: `(S, V)` float64 `E[g]` and the float `tr Cov[g] >= 0`.
    """
    q, coef, probs, states, tokens, mask = draw_args(q, coef, probs, states, tokens, mask)
    return _draw_moments(q, coef, probs, states, tokens, mask)


def _draw_moments(q, coef, probs, states, tokens, mask):
    c = coef * mask  # (B, T)
    w = q[:, None] * c  # (B, T) the draw's weight on each token's score
    mean = np.zeros(probs.shape)  # (S, V)
    np.add.at(mean, (states, tokens), w)  # e_{y_t}
    mean -= np.bincount(states.ravel(), w.ravel(), minlength=probs.shape[0])[:, None] * probs  # - pi(.|s)
    sq = (probs * probs).sum(axis=1)  # (S,) |pi(.|s)|^2
    norm = 1.0 - 2.0 * probs[states, tokens] + sq[states]  # (B, T) |score_t|^2, eq. (exact_norm)
    second = float(q @ (c * c * norm).sum(axis=1))  # E|g|^2
    return mean, max(second - float((mean * mean).sum()), 0.0)  # eq. (exact_moments)


# --8<-- [end:draw]


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/exact/checks.py
#   The boundary of the exact engine: one bundle call per public function of `minirl_lm/exact/`.
# ----------------------------------------------------------------------------------------------


_NONE = object()  # an argument a bundle's caller does not have (None is a bad value)


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


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


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


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
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

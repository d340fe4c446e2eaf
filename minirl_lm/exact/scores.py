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

from minirl_lm.boundary import MASK, TOKENS, array, boundary, simplex

__all__ = ["token_scores", "row_updates", "draw_moments"]

IDS = array("B T", integer=True, low=0)


def _ids_in_table(probs, states, tokens):
    """State ids index the rows of `probs`, token ids its columns."""
    for name, ids, n, what in (("states", states, probs.shape[0], "S"), ("tokens", tokens, probs.shape[1], "V")):
        if ids.max() >= n:
            return f"{name}: expected ids < {what} = {n} (the shape of probs), got max {ids.max()}"


def _one_visit(states, mask):
    """Each row visits a state at most once (a path in the prefix tree), so its scores are
    orthogonal; a repeat at padding does not count."""
    seen = np.where(mask > 0, states, -1 - np.arange(mask.shape[1]))  # (B, T) padding never collides
    srt = np.sort(seen, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)  # (B, T - 1)
    if dup.any():
        b = int(np.flatnonzero(dup.any(axis=1))[0])
        return (
            f"states: expected each row to visit a state at most once (a path in the prefix tree), "
            f"row {b} visits state {int(srt[b, 1:][dup[b]][0])} twice"
        )


SCORES = dict(probs=simplex("S V"), mask=MASK, states=IDS, tokens=IDS)  # the mask fixes (B, T)


@boundary(**SCORES, where=[_ids_in_table], returns="scores")
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
    S, V = probs.shape
    B, T = mask.shape
    out = np.zeros((B, T, S, V))  # (B, T, S, V)
    b, t = np.indices((B, T))
    out[b, t, states] = -probs[states]  # - pi(.|s_t), eq. (exact_score)
    out[b, t, states, tokens] += 1.0  # + e_{y_t}
    out *= mask[:, :, None, None]
    return out.reshape(B, T, S * V)


@boundary(**SCORES, coef=TOKENS, where=[_ids_in_table], returns="updates")
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
    S, V = probs.shape
    B = mask.shape[0]
    G = np.zeros((B, S, V))  # (B, S, V)
    b, t = np.nonzero(mask > 0)
    w = coef[b, t]
    np.add.at(G, (b, states[b, t], tokens[b, t]), w)  # e_{y_t}
    np.add.at(G, (b, states[b, t]), -w[:, None] * probs[states[b, t]])  # - pi(.|s_t)
    return G.reshape(B, S * V)


# --8<-- [start:draw]
@boundary(**SCORES, coef=TOKENS, q=simplex("B"), where=[_ids_in_table, _one_visit], returns="mean var")
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

    Raises:
        ValueError: a bad argument (named), or a moment beyond float64 (named after the
            function, with the range of its inputs).
    """
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

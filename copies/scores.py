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

import functools
import inspect

import numpy as np


__all__ = ["token_scores", "row_updates", "draw_moments"]


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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

IDS = array("B T", integer=True, low=0)
SCORES = dict(probs=simplex("S V"), mask=MASK, states=IDS, tokens=IDS)  # the mask fixes (B, T)

token_scores = boundary(**SCORES, where=[_ids_in_table], returns="scores")(token_scores)

row_updates = boundary(**SCORES, coef=TOKENS, where=[_ids_in_table], returns="updates")(row_updates)

draw_moments = boundary(
    **SCORES, coef=TOKENS, q=simplex("B"), where=[_ids_in_table, _one_visit], returns="mean var"
)(draw_moments)

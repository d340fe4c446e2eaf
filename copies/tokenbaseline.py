# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/tokenbaseline.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/tokenbaseline.py -o DIR
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

"""The optimal token baseline: a baseline per position, weighted by the squared score.

For a one-token response the estimator `(R - b) grad log pi(y)` is unbiased for any `b` that
does not depend on `y`; its variance (the trace of its covariance) is

```text
Var(b) = E[(R - b)^2 ||s||^2] - ||grad J||^2,     s = grad_theta log pi(y) = onehot(y) - pi
b*     = E[R ||s||^2] / E[||s||^2]                                           eq. (otb)
||s||^2 = 1 - 2 pi(y) + sum_v pi(v)^2                                       eq. (otb_score)
```

(`Var` is a quadratic in `b`; `b*` its minimum, so its variance is the lowest of every constant
baseline: the group mean `E[R]` included, which is `b*` only when `R` and `||s||^2` are
uncorrelated.) `||s||^2` is the squared norm of the softmax score in the logits of the
token's state: large for unlikely tokens, 0 for a deterministic state.

For a response of several tokens, verl's estimator gives each position `t` its own baseline,
with the cumulative score `W_t = sum_{j <= t} ||s_j||^2` of the path so far as the weight, over
the `K` responses of the group:

```text
B_t = sum_k G_{k,t} W_{k,t} m_{k,t} / (sum_k W_{k,t} m_{k,t} + w_eps)
A_{k,t} = (G_{k,t} - B_t) m_{k,t},        G_{k,t} = R_k (the outcome reward)  eq. (otb_group)
```

`m` the mask; positions are columns (right padding). With `zero_tail`, a longest response longer
than every other one of its group gets `B_t = 0` past the second-longest (its tail has no
others to average). A group of one (`K = 1`) gets no baseline, `A = R` (verl). Like the group
mean, `B_t` uses the response's own reward: at finite `K` it is a biased baseline (exactly as
`mean` against `loo` in `advantages.py`); eq. (otb) is the population quantity it estimates,
and the minimal variance is a claim about that one (tested by enumeration).

`sum_pi_sq` is `sum_v pi_old(v | s_t)^2` per token (B, T), computed where the logits are (the
policy: `(probs ** 2).sum(-1)` at each visited state), `logp_old` the sampled token's log-prob.

Demonstrated on the baselines page (docs/baselines.md, section "The optimal token baseline").

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository):

```text
otb_advantages   verl algorithm.adv_estimator="optimal_token_baseline" (handle_zero_tail True,
                 epsilon 1e-8; its rollout IS weights rho^2 on W: not here)
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["otb_advantages"]


def _groups_of_K(mask, K):
    """`K` divides the batch: `B = N*K` rows, prompt-major."""
    if mask.shape[0] % K:
        return f"K: expected a divisor of the batch size B = {mask.shape[0]} (groups of K rows), got {K}"


def _log_probs(logp_old, mask):
    """The sampled tokens' log-probs are `<= 0` where trained."""
    if (logp_old[mask > 0] > 0).any():
        return f"logp_old: expected log-probs <= 0 on the trained tokens, got max {logp_old[mask > 0].max():g}"


def _sums_of_squares(logp_old, sum_pi_sq, mask):
    """`sum_v pi(v|s)^2` lies in `[pi(y|s)^2, 1]` where trained (to rounding)."""
    p = np.exp(np.minimum(logp_old, 0.0))  # (B, T)
    if ((sum_pi_sq < p * p * (1 - 1e-12)) | (sum_pi_sq > 1.0 + 1e-12))[mask > 0].any():
        return "sum_pi_sq: expected sum_v pi(v|s)^2 in [pi(y|s)^2, 1] on the trained tokens"


def otb_advantages(rewards, mask, logp_old, sum_pi_sq, K, w_eps=1e-8, zero_tail=True):
    """Advantages (B, T) with the optimal token baseline of each group, eq. (otb_group).

    Args:
        rewards: `(B,)` outcome rewards, `B = N*K` rows prompt-major.
        mask: `(B, T)` 0/1, right-padded (a position is a column; a mask with holes is refused).
        logp_old: `(B, T)` log-probs of the sampled tokens (`<= 0` on trained tokens).
        sum_pi_sq: `(B, T)` `sum_v pi(v|s_t)^2` at each token's state, in `[pi(y_t)^2, 1]`.
        K: the group size, dividing `B`.
        w_eps: the stabilizer of the denominator (verl's 1e-8), `>= 0`.
        zero_tail: True or False: zero the baseline of a group's unique longest response past
            the second-longest.

    Returns:
        `(B, T)` advantages, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a result beyond float64 (named after the function).
    """
    B, T = mask.shape
    p = np.exp(np.minimum(logp_old, 0.0))  # (B, T) pi(y_t); padding may hold any finite garbage
    G = rewards[:, None] * mask  # (B, T) G_t = R on every trained token
    W = np.cumsum((1.0 - 2.0 * p + sum_pi_sq) * mask, axis=1)  # (B, T) eq. (otb_score), summed to t
    if K == 1:
        return G  # no others: no baseline
    Gg, Wg, mg = (x.reshape(-1, K, T) for x in (G, W, mask))  # (N, K, T)
    num = (Gg * Wg * mg).sum(axis=1)  # (N, T)
    den = (Wg * mg).sum(axis=1) + w_eps  # (N, T)
    base = np.divide(num, den, out=np.zeros_like(num), where=den > 0)  # (N, T) eq. (otb_group)
    base = np.repeat(base[:, None, :], K, axis=1)  # (N, K, T)
    if zero_tail:  # past the second-longest, the longest has no others (a tie: only padding)
        L = mg.sum(axis=2)  # (N, K) lengths
        second = np.sort(L, axis=1)[:, -2]  # (N,)
        base[np.arange(len(L)), np.argmax(L, axis=1)] *= np.arange(T) < second[:, None]  # (N, T)
    return ((Gg - base) * mg).reshape(B, T)  # (B, T)


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


def right_padded(shape, what, where):
    """A 0/1 float mask of `shape` whose rows are prefixes (1s then 0s), as `what` reads them; a
    mask with holes is refused, and the message says `where` such a mask goes."""
    mask = array(shape, values=(0.0, 1.0))

    def read(x, name, dims):
        m = mask(x, name, dims)
        rises = (m[:, 1:] > m[:, :-1]).any(axis=1)  # (B,) a 1 after a 0
        if rises.any():
            row = int(np.flatnonzero(rises)[0])
            col = int(np.flatnonzero(m[row, 1:] > m[row, :-1])[0]) + 1  # its first 1 after a 0
            shown = (
                f"is {m[row].astype(int).tolist()}" if m.shape[1] <= 20 else f"has a 1 after a 0 at column {col}"
            )
            raise ValueError(
                f"{name}: expected right padding (1s then 0s in each row) for {what}, row {row} {shown}; a "
                f"mask with holes (tool outputs) is accepted by the token-level objectives; here use {where}"
            )
        return m

    return read


def padded(what, where):
    """The relation form of `right_padded`, on an argument `mask` (B, T) already read."""
    read = right_padded("B T", what, where)

    def rule(mask):
        read(mask, "mask", {})  # raises, or the mask is right-padded

    return rule


def flag(x, name, dims):
    """True or False (a NumPy bool too; not 0 or 1)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_show(x)}")
    return bool(x)


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


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

_columns = padded(  # a position is a column (a baseline per column of the group)
    "the optimal token baseline (a position is a column: a baseline per column of the group)",
    "minirl_lm.multiturn.env.action_view to compact the rows (scatter puts results back)",
)

otb_advantages = boundary(
    mask=MASK,
    rewards=array("B"),
    logp_old=TOKENS,
    sum_pi_sq=TOKENS,
    K=COUNT,
    w_eps=NONNEGATIVE,
    zero_tail=flag,
    where=[_columns, _groups_of_K, _log_probs, _sums_of_squares],
)(otb_advantages)

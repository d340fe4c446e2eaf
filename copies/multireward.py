# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/multireward.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/multireward.py -o DIR
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

"""Several rewards per response: GDPO's decoupled normalization.

Rewards come as an `(N, K, M)` array: `N` prompts, `K` responses each, `M` rewards per response
(correctness and format, say), with weights `c_m` (default 1). GRPO standardizes the weighted sum;
GDPO (arXiv:2601.05242) standardizes each reward in its group first, then sums:

```text
sum then standardize   A_k = standardize_k( sum_m c_m R_{k,m} )              eq. (pg_normalized)
GDPO                   A_k = sum_m c_m (R_{k,m} - mean_m) / (std_m + xi)     eq. (gdpo)
                       optionally whitened over the batch:
                       A <- (A - mean(A)) / (std(A) + xi_batch)              eq. (gdpo_batch)
```

with `mean_m`, `std_m` the mean and std of reward `m` over the group (`advantages.standardized`,
the same `std_eps` and `ddof`). What decoupling buys, per reward and exactly (tested):

- adding a constant to reward `m` changes nothing (each reward is centred in its own group);
- scaling reward `m` by `a > 0` changes nothing with `std_eps = 0` (its unit is divided out;
  with `std_eps > 0`, up to the stabilizer); in the sum-then-standardize form a reward with a
  larger spread drowns the others, and two rewards of the same spread but different
  correlations give the same sum for different pairs;
- a reward constant in a group contributes exactly 0 there, not NaN: the group is ranked by the
  other rewards alone. Summed first, a constant reward changes nothing either; the difference is
  the groups where it varies.

A group with every reward constant has `A = 0`. No gradient flows through the rewards.

Demonstrated on the baselines page (docs/baselines.md, section "Several rewards: GDPO").

Every `|R| <= 1e150` (`advantages.REWARD_MAX`: a std squares the spread); a weighted sum beyond
float64 is a ValueError naming `gdpo` and the range of its inputs.

Names in the frameworks (`docs/next.md` has their versions, files and defaults):

```text
gdpo weights, std_eps,    TRL multi_objective_aggregation="normalize_then_sum" (nanstd (Bessel)
ddof 1, batch_eps         + 1e-4 per reward, reward_weights, then the batch: (A - mean) /
                          (nanstd + 1e-4)); verl algorithm.adv_estimator="gdpo" (GRPO's
                          advantage per reward key (torch.std + 1e-6), weighted sum, then
                          masked_whiten over the batch's tokens); NeMo-RL GDPOAdvantageEstimator
                          (an optional leave-one-out baseline per reward, / (std + 1e-6) where
                          std > 0, then the batch's (A - mean) / std)
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = ["gdpo"]


def gdpo(rewards, *, weights=None, std_eps=1e-8, ddof=0, batch_eps=None):
    """GDPO advantages (N, K), eq. (gdpo): each reward standardized in its group, then summed.

    Args:
        rewards: `(N, K, M)` rewards, `M >= 1` per response, every `|R| <= 1e150`.
        weights: `(M,)` weights `c_m` of the sum (default ones).
        std_eps: the stabilizer `xi >= 0` of each group's std.
        ddof: 0 (population std) or 1 (Bessel, the frameworks').
        batch_eps: None (no batch step), or the stabilizer `>= 0` of eq. (gdpo_batch): the
            summed advantages whitened over all `N*K` responses (TRL: 1e-4 with `ddof=1`).

    Returns:
        `(N, K)` advantages; a reward constant in a group adds exactly 0 there.

    Raises:
        ValueError: a bad argument (named), or advantages beyond float64 (large weights; named
            after the function, with the range of its inputs).
    """
    N, K, M = rewards.shape
    c = np.ones(M) if weights is None else weights  # (M,)
    Z = np.stack([standardized.core(rewards[:, :, m], std_eps, ddof) for m in range(M)], axis=2)  # (N, K, M)
    A = (Z * c).sum(axis=2)  # (N, K) eq. (gdpo)
    if batch_eps is not None:
        A = standardized.core(A.reshape(1, N * K), batch_eps, ddof).reshape(N, K)  # eq. (gdpo_batch)
    return A


# part 1: from minirl_lm/pg/advantages.py ------------------------------------------------------
#   Baselines: the group of K responses to one prompt is its own baseline.


REWARD_MAX = 1e150  # |rewards| bound: the standardized baseline squares the spread


def bounded_rewards(rewards, greedy_rewards=None):
    """Every `|R| <= REWARD_MAX`, the advantages' domain (the standardized baseline squares the
    spread); ReMax's greedy rewards too."""
    if (m := np.abs(rewards).max()) > REWARD_MAX:
        return (
            f"rewards: expected |r| <= {REWARD_MAX:g} (the standardized baseline squares the spread, "
            f"which overflows float64 beyond ~1e154), got max |r| = {m:g}"
        )
    if greedy_rewards is not None and (m := np.abs(greedy_rewards).max()) > REWARD_MAX:
        return f"greedy_rewards: expected |r| <= {REWARD_MAX:g}, got max {m:g}"


def group_mean(r):
    """Mean of each group of checked rewards `(N, K)`, `(N, 1)`; exactly the common value when a
    group's rewards are equal (`np.mean` of identical floats can differ from them)."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


def standardized(rewards, std_eps=1e-8, ddof=0):
    """Group-standardized advantages, eq. (pg_normalized): `A = (R - mean) / (std + xi)`."""
    c = rewards - group_mean(rewards)  # (N, K)
    dof = max(rewards.shape[1] - ddof, 1)  # K = 1, ddof = 1: c == 0, so std = 0
    ss = (c * c).sum(axis=1, keepdims=True)  # (N, 1)
    std = np.sqrt(ss / dof)  # (N, 1)
    # c*c underflows (subnormal or 0) below ~1e-154; rescale groups whose sum of squares is
    # under 1e-290 (|c| < ~1e-145: never an ordinary group), leaving all others bit-identical
    tiny = (ss < 1e-290) & (c != 0).any(axis=1, keepdims=True)  # (N, 1)
    if np.count_nonzero(tiny):
        s = np.where(tiny, np.abs(c).max(axis=1, keepdims=True), 1.0)  # (N, 1)
        cs = c / s  # (N, K)
        std = np.where(tiny, s * np.sqrt((cs * cs).sum(axis=1, keepdims=True) / dof), std)
    denom = std + std_eps  # (N, 1)
    if std_eps > 0:  # denom > 0 everywhere
        return c / denom  # eq. (pg_normalized)
    # eq. (pg_normalized); a zero spread with std_eps = 0 gives 0, not 0/0
    return np.divide(c, denom, out=np.zeros_like(c), where=denom > 0)


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


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


NONNEGATIVE = number(0.0)


DDOF = number(0, 1, integer=True)  # a std's delta degrees of freedom: population 0, Bessel 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)


gdpo = boundary(
    rewards=array("N K M", low=-REWARD_MAX, high=REWARD_MAX),
    weights=optional(array("M")),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    batch_eps=optional(NONNEGATIVE),
    returns="A",
)(gdpo)

standardized = boundary(
    rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[bounded_rewards]
)(standardized)

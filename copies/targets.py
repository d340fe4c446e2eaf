# minirl_lm 0.1.0: a self-contained copy of minirl_lm/pg/targets.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/pg/targets.py -o DIR
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

"""Advantages for another target than the expected reward: maximum likelihood (MaxRL) and pass@k.

Rewards come as `(N, K)` groups, as in `advantages.py`, and the update these advantages feed is
`g = (1/K) sum_k A_k grad log pi(y_k | x)` (MaxRL) or `g = sum_k A_k grad log pi(y_k | x)`
(pass@k). Each function returns `(N, K)` advantages; no gradient flows through them (rewards are
data).

MaxRL (Tajwar et al. 2026, arXiv:2602.02710): the group mean in the denominator instead of the spread,

```text
A_k = (R_k - mean(R)) / mean(R)   if mean(R) > 0,   0 otherwise         eq. (maxrl)
```

For binary rewards, with `p = P(R = 1 | x)` the pass rate, `E[g] = grad J_{K-1}` exactly, where

```text
J_n = -sum_{i=1}^{n} (1 - p)^i / i,     grad J_n = ((1 - (1 - p)^n) / p) grad p   eq. (maxrl_target)
```

is the truncation at order `n` of `log p = -sum_{i>=1} (1 - p)^i / i`: `K = 1` gives 0 (a group
of one has `A = 0`), `K = 2` the gradient of `p` itself, and `K -> inf` the maximum-likelihood
gradient `grad p / p`, which weighs a prompt by `1/p`: hard prompts count more. (Derivation: the
term `R_k / mean(R)` gives `K grad p E[1 / (1 + Bin(K-1, p))] = ((1 - (1-p)^K) / p) grad p`;
the `-1`, taken only when some `R = 1`, gives `-(1-p)^{K-1} grad p`.) For other rewards the
expectation is no truncation of anything; the function still requires `R >= 0`.

pass@k (for `k = K`, arXiv:2503.19595 as verl cites it; for `k <= K`, the unbiased estimator of
Pass@K Policy Optimization, Walder and Karkhanis 2025, identifier not checked here): the target
is `pass@k = E[max(R_1, ..., R_k)]` (for binary rewards the chance
that one of `k` responses passes), and the advantage of member `i` is its marginal contribution
to the max, averaged over the `C(K, k)` subsets of the group that contain it:

```text
A_i = (1 / C(K, k)) sum_{S ∋ i, |S| = k} ( max_S R - max_{S - {i}} R )     eq. (passk)
    = (1 / C(K, k)) ( C(m, k-1) R_(m) - sum_{j < m} C(j, k-2) R_(j) )
```

with `R_(0) <= ... <= R_(K-1)` the sorted rewards, `m` the rank of `i` (ties in index order),
and `max` of the empty set 0. `max_{S - {i}}` does not depend on `y_i`, so it is a baseline, and
`E[sum_i A_i grad log pi(y_i)] = grad pass@k` exactly. At `k = K` only the best response has a
nonzero advantage, `R_max - R_second`; at `k = 1` it is `R_i / K`, REINFORCE without a
baseline. A group whose best reward is shared has `A = 0` at `k = K` (no single response made
the max). `std_eps` (verl's default normalization) divides by the Bessel std of the group plus
`std_eps`: no longer an unbiased gradient of anything.

Demonstrated on the baselines page (docs/baselines.md, sections "MaxRL" and "pass@k").

Names in the frameworks (their versions, files and the runs against them: `docs/next.md` in the
minirl_lm repository); in parentheses their defaults:

```text
maxrl               prime-rl MaxRLAlgorithm.score_group (mean <= 0: zeros); TRL MaxRLTrainer
                    (experimental): unverified
passk_advantages    verl algorithm.adv_estimator="grpo_passk" (r_max - r_second_max on the best
  k = K, std_eps    response, divided by torch.std + 1e-6 when algorithm.norm_adv_by_std_in_grpo
                    (True)); k < K: none
```
"""

from math import comb
import functools
import inspect
import numbers
import sys

import numpy as np


__all__ = ["maxrl", "passk_advantages"]


def _k_within_group(rewards, k):
    """`k` is at most the group size `K`."""
    if k > rewards.shape[1]:
        return f"k: expected an integer <= {rewards.shape[1]} (the group size K), got {k}"


def _over(counts, total):
    """`counts / total` (K,) of Python integers, each rounded to float64 and then divided; where
    `total` is beyond float64 (C(1100, 550) is), the exact quotients, each at most 1, rounded."""
    if total <= sys.float_info.max:  # an exact comparison of an int with a float
        return np.array(counts, dtype=float) / total
    return np.array([c / total for c in counts])


def maxrl(rewards):
    """MaxRL advantages (N, K), eq. (maxrl): `(R - mean) / mean`, 0 for a group of mean 0.

    Args:
        rewards: `(N, K)` rewards, every `R >= 0`.

    Returns:
        `(N, K)` advantages; a group of equal rewards gives exactly 0.
    """
    mean = group_mean(rewards)  # (N, 1), exactly the common value of an equal group
    return np.divide(rewards - mean, mean, out=np.zeros_like(rewards), where=mean > 0)  # (N, K) eq. (maxrl)


def passk_advantages(rewards, k, std_eps=None):
    """pass@k advantages (N, K), eq. (passk): each response's share of `max` over `k`-subsets.

    Args:
        rewards: `(N, K)` rewards.
        k: the `k` of pass@k, `1 <= k <= K`.
        std_eps: None (the unbiased form), or divide each group by its Bessel std plus
            `std_eps` (verl's `norm_adv_by_std_in_grpo=True`, with 1e-6).

    Returns:
        `(N, K)` advantages, to be used as `sum_k A_k grad log pi(y_k)` (no `1/K`).
    """
    r = rewards
    N, K = r.shape
    order = np.argsort(r, axis=1, kind="stable")  # (N, K) ties in index order
    rs = np.take_along_axis(r, order, axis=1)  # (N, K) sorted ascending
    c1 = _over([comb(m, k - 1) for m in range(K)], comb(K, k))  # (K,)
    c2 = _over([comb(j, k - 2) if k >= 2 else 0 for j in range(K)], comb(K, k))  # (K,)
    below = np.zeros_like(rs)  # (N, K) sum_{j < m} C(j, k-2) R_(j), exclusive prefix sums
    below[:, 1:] = np.cumsum(rs * c2, axis=1)[:, :-1]
    a_sorted = c1 * rs - below  # (N, K) eq. (passk)
    A = np.empty_like(r)
    np.put_along_axis(A, order, a_sorted, axis=1)  # back to the group's order
    if std_eps is not None:
        c = r - group_mean(r)  # (N, K)
        std = np.sqrt((c * c).sum(axis=1, keepdims=True) / max(K - 1, 1))  # (N, 1) Bessel
        A = np.divide(A, std + std_eps, out=np.zeros_like(A), where=std + std_eps > 0)
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


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)


maxrl = boundary(rewards=array("N K", low=0.0), where=[bounded_rewards])(maxrl)

passk_advantages = boundary(
    rewards=array("N K"),
    k=number(1, integer=True),
    std_eps=optional(NONNEGATIVE),
    where=[bounded_rewards, _k_within_group],
)(passk_advantages)

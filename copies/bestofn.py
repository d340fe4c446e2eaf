# minirl_lm 0.1.0: a self-contained copy of minirl_lm/select/bestofn.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/select/bestofn.py -o DIR
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

"""Best-of-N over a finite response set: its exact law, reward, win rate, KL, and the frontier.

Best-of-N draws `y_1..y_N ~ pi(.|x)` i.i.d. and returns the one of largest reward `R(x, y)`.
Ties are broken uniformly at random among the draws that reach the maximum (the same in law as
"the first of them in draw order", since the draws are exchangeable). On a finite response set
with `F(y) = P_pi(R <= R(x, y))`, `F(y-) = P_pi(R < R(x, y))` and `p(y) = F(y) - F(y-)` the
mass of `y`'s reward level, the maximum lands on `y`'s level with probability
`F(y)^N - F(y-)^N`; given that, the kept draw is one of the draws at that level, and those are
i.i.d. from `pi` restricted to the level, so each tied response gets its share `pi(y) / p(y)`:

```text
pi_N(y|x) = pi(y|x) (F(y)^N - F(y-)^N) / p(y)                                  eq. (bon_law)
```

(computed as `F^N (1 - (F-/F)^N) = -F^N expm1(N log1p(-p/F))`: no cancellation when the level
is thin). The ratio `pi_N / pi` is constant on a level, so the KL is a sum over levels:

```text
KL(pi_N || pi) = sum_y pi_N(y) log[(F(y)^N - F(y-)^N) / p(y)]                 eq. (bon_kl)
              <= log N - (N - 1)/N                                             eq. (bon_kl_bound)
```

The bound is the widely quoted value of the KL; Beirami et al. (2024) show it is an upper bound
for a finite set, reached only in the limit of no ties and vanishing masses (a continuum of
distinct rewards). The win rate against one draw `y' ~ pi`, ties counted half:

```text
W_N = P(R(y) > R(y')) + 1/2 P(R(y) = R(y')) = sum_y pi_N(y) (F(y-) + p(y)/2)  eq. (bon_win)
```

which is `N / (N + 1)` for a continuum of distinct rewards (an upper bound, Beirami et al.
2024) and `1/2` when every response earns the same.

The frontier. At a KL budget, the tilted optimum `pi*` of `minirl_lm/values/optimum.py`
eq. (kl_optimum) earns the most reward of any policy (it maximizes `E R - beta KL`, so a policy
with no more KL cannot earn more), best-of-N included. `matched_optimum` finds the `beta` whose
`pi*` spends a given KL, `E_x KL(pi*(.|x) || pi(.|x))`, by bisection on `log(1/beta)`: with
`t = 1/beta` the KL `t E_{pi*} R - log E_pi exp(t R)` has derivative `t Var_{pi*}(R) >= 0` in
`t`, so it rises from 0 (`beta = inf`, `pi* = pi`) to the KL of `pi` restricted to each prompt's
best reward level (`beta -> 0`), eq. (kl_match).

Tables in, not log-probs: these functions need whole distributions, and have no gradient (they
are analysis, like the tilted optimum). Demonstrated by `python examples/best_of_n.py`.

Names in the frameworks: best-of-N is a sampling procedure around a generator and a reward
model, not a loss; see the page "Best-of-N and rejection sampling" for which settings produce it.
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = [
    "N_MAX",
    "best_of_n",
    "best_of_n_reward",
    "win_rate",
    "best_of_n_kl",
    "kl_bound",
    "kl_ceiling",
    "matched_optimum",
]

N_MAX = 10**6  # best-of-N: beyond it F^N underflows to the top level for any row worth printing


def _prompt_law(weights, P):
    return np.full(P, 1.0 / P) if weights is None else weights  # (P,) uniform by default


def _levels(pi, reward):
    """F(y), F(y-) and p(y) = F(y) - F(y-) of every response, row-wise: (P, Y) each.

    One sort a row: the masses of a level are summed among themselves (np.add.reduceat), so a
    thin level keeps its relative precision, and F = F- + p >= p in floating point too."""
    F_minus, p_level = np.empty(pi.shape), np.empty(pi.shape)  # (P, Y)
    for n in range(pi.shape[0]):
        order = np.argsort(reward[n], kind="stable")  # (Y,)
        rs = reward[n, order]  # (Y,) sorted rewards
        new = np.r_[True, rs[1:] != rs[:-1]]  # (Y,) first of its level
        level = np.cumsum(new) - 1  # (Y,) the level of each sorted response
        mass = np.add.reduceat(pi[n, order], np.flatnonzero(new))  # (L,) P(R = level)
        below = np.r_[0.0, np.cumsum(mass)[:-1]]  # (L,) P(R < level)
        F_minus[n, order], p_level[n, order] = below[level], mass[level]
    return F_minus + p_level, F_minus, p_level


def _level_ratio(F, p_level, N):
    """log[(F^N - F-^N) / p] on the support (p > 0), eq. (bon_law) / pi; -inf elsewhere."""
    out = np.full(F.shape, -np.inf)  # (P, Y)
    on = p_level > 0
    if N == 1:  # pi_1 = pi exactly (the formula gives it to rounding)
        out[on] = 0.0
        return out
    with np.errstate(divide="ignore"):  # F- = 0: log1p(-1) = -inf, expm1(-inf) = -1
        gap = -np.expm1(N * np.log1p(-p_level[on] / F[on]))  # 1 - (F-/F)^N
    out[on] = N * np.log(F[on]) + np.log(gap) - np.log(p_level[on])
    return out


def _bon(pi, reward, N):
    """Trusted core of `best_of_n`: (pi_N (P, Y), log ratio (P, Y), F- (P, Y), p (P, Y))."""
    F, F_minus, p_level = _levels(pi, reward)
    log_ratio = _level_ratio(F, p_level, N)  # (P, Y) log pi_N / pi on a level
    q = np.where(pi > 0, pi * np.exp(log_ratio), 0.0)  # (P, Y) eq. (bon_law)
    return q, log_ratio, F_minus, p_level


def best_of_n(pi, reward, N):
    """The law of best-of-N, ties broken uniformly at random, eq. (bon_law).

    Args:
        pi: `(P, Y)` the base policy over a finite response set, rows summing to 1.
        reward: `(P, Y)` rewards `R(x, y)`; equal values are ties.
        N: the number of draws, in `[1, 10**6]`.

    Returns:
        `(P, Y)` probabilities `pi_N(y|x)`, 0 off the support of `pi`.
    """
    return _bon(pi, reward, N)[0]


def best_of_n_reward(pi, reward, N, weights=None):
    """The expected reward of best-of-N, `sum_x mu_0(x) sum_y pi_N(y|x) R(x, y)`.

    Args:
        pi: `(P, Y)` the base policy, rows summing to 1.
        reward: `(P, Y)` rewards.
        N: the number of draws, in `[1, 10**6]`.
        weights: `(P,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float expected reward.
    """
    q = _bon(pi, reward, N)[0]  # (P, Y)
    return float(_prompt_law(weights, pi.shape[0]) @ (q * reward).sum(axis=1))


def win_rate(pi, reward, N, weights=None):
    """The win rate of best-of-N against one draw of `pi`, ties counted half, eq. (bon_win).

    Arguments as `best_of_n_reward`.

    Returns:
        The float `P(R(y_N) > R(y')) + P(R(y_N) = R(y')) / 2`, averaged over `mu_0`.
    """
    q, _, F_minus, p_level = _bon(pi, reward, N)
    return float(_prompt_law(weights, pi.shape[0]) @ (q * (F_minus + 0.5 * p_level)).sum(axis=1))  # eq. (bon_win)


def best_of_n_kl(pi, reward, N, weights=None):
    """The exact `sum_x mu_0(x) KL(pi_N(.|x) || pi(.|x))`, eq. (bon_kl).

    Arguments as `best_of_n_reward`.

    Returns:
        The float KL, at most `log N - (N - 1)/N`.
    """
    q, log_ratio, _, _ = _bon(pi, reward, N)
    per_x = (q * np.where(q > 0, log_ratio, 0.0)).sum(axis=1)  # (P,) eq. (bon_kl)
    return float(_prompt_law(weights, pi.shape[0]) @ per_x)


def kl_bound(N):
    """The widely quoted best-of-N KL, `log N - (N - 1)/N`: an upper bound, eq. (bon_kl_bound).

    Args:
        N: the number of draws, in `[1, 10**6]`.

    Returns:
        The float bound.
    """
    return float(np.log(N) - (N - 1) / N)


def _kl_at(pi, reward, w, s):
    """E_x KL(pi*_t || pi) at t = 1/beta = exp(s), and pi*_t: (float, (P, Y))."""
    log_star, _ = tilt.core(pi, reward, float(np.exp(-s)))  # (P, Y) log pi*, -inf off support
    star = np.exp(log_star)  # (P, Y)
    on = star > 0
    d = np.zeros_like(star)
    d[on] = star[on] * (log_star[on] - np.log(pi[on]))  # (P, Y) pi* log(pi*/pi)
    return float(w @ d.sum(axis=1)), star


def kl_ceiling(pi, reward, weights=None):
    """The KL of `pi` restricted to each prompt's best reward level: the supremum of the KL of
    best-of-N (as N grows) and of the tilted optimum (as beta -> 0), `E_x -log P_pi(R = max R)`.

    Args:
        pi: `(P, Y)` the base policy, rows summing to 1.
        reward: `(P, Y)` rewards.
        weights: `(P,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float ceiling.
    """
    top = np.where(pi > 0, reward, -np.inf).max(axis=1, keepdims=True)  # (P, 1)
    return float(_prompt_law(weights, pi.shape[0]) @ -np.log(np.where(reward == top, pi, 0.0).sum(axis=1)))


def matched_optimum(pi, reward, kl, weights=None):
    """The tilted optimum `pi*` whose KL from `pi` equals `kl`, eq. (kl_match).

    Bisection on `s = log(1/beta)` (the KL rises with `s`) to the resolution of float64.

    Args:
        pi: `(P, Y)` the base (reference) policy, rows summing to 1.
        reward: `(P, Y)` rewards.
        kl: the target `E_x KL(pi* || pi)`, in `[0, kl_ceiling(pi, reward))`.
        weights: `(P,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        `(beta, pi_star)`: the float `beta` (`inf` at `kl = 0`, where `pi* = pi`; else in
        `[e^-60, e^60]`) and the `(P, Y)` table.

    Raises:
        ValueError: `kl` at or above the ceiling (no `beta > 0` spends it).
    """
    w = _prompt_law(weights, pi.shape[0])  # (P,)
    if kl == 0.0:
        return float("inf"), pi  # the boundary's copy
    lo, hi = -60.0, 60.0  # beta from e^60 (the KL ~ e^-120 Var R) down to e^-60
    kl_hi, _ = _kl_at(pi, reward, w, hi)
    if not kl < kl_hi:
        raise ValueError(
            f"kl: expected a KL below the ceiling E_x -log P_pi(R = max R) = {kl_hi:.6g} "
            f"(the tilted optimum's limit as beta -> 0), got {kl:g}"
        )
    for _ in range(200):  # the interval halves: 120 * 2^-200 is far below float64's step
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _kl_at(pi, reward, w, mid)[0] < kl else (lo, mid)
    s = 0.5 * (lo + hi)
    _, star = _kl_at(pi, reward, w, s)
    return float(np.exp(-s)), star  # beta in [e^-60, e^60]: finite


# part 1: from minirl_lm/values/optimum.py -----------------------------------------------------
#   The KL-regularized (tilted) optimum: closed form, backward _induction, exploit threshold.


def tilt(pi_ref, q, beta):
    """Row-wise log of `pi_ref * exp(q / beta)` normalized, and its log-normalizer times beta,
    eq. (kl_optimum), stably."""
    support = pi_ref > 0  # (.., Y)
    m = np.where(support, q, -np.inf).max(axis=-1, keepdims=True)  # (.., 1) best reward on support
    # -inf off support, set directly: log 0 + (q - m) / beta would be -inf + inf = NaN where an
    # off-support reward exceeds m and overflows (q - m) / beta. Never log 0: the log is taken on
    # the support only, and the sum below is >= 1 (its largest term is exp(0)) or NaN.
    with np.errstate(over="ignore", invalid="ignore"):  # q holding overflowed soft values (the tree)
        t = np.broadcast_to((q - m) / beta, support.shape)  # (.., Y)
        a = np.full(support.shape, -np.inf)
        a[support] = np.log(pi_ref[support]) + t[support]
        a_max = a.max(axis=-1, keepdims=True)  # (.., 1), 0 or log pi_ref: finite
        log_z = a_max + np.log(np.exp(a - a_max).sum(axis=-1, keepdims=True))  # (.., 1)
        v = m + beta * log_z  # eq. (kl_optimum): beta log Z
    return a - log_z, v[..., 0]  # log pi*, V


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


POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

TABLES = dict(pi=simplex("P Y"), reward=array("P Y"))  # a base policy, rewards of its shape
PROMPTS = optional(simplex("P"))  # the prompt law mu_0; None: uniform
DRAWS = number(1, N_MAX, integer=True)  # N
BON = dict(**TABLES, N=DRAWS, weights=PROMPTS)  # the law of best-of-N, averaged over the prompts

best_of_n = boundary(**TABLES, N=DRAWS, returns="pi_N")(best_of_n)

best_of_n_reward = boundary(**BON, returns="reward")(best_of_n_reward)

win_rate = boundary(**BON, returns="win_rate")(win_rate)

best_of_n_kl = boundary(**BON, returns="kl")(best_of_n_kl)

kl_bound = boundary(N=DRAWS, returns="bound")(kl_bound)

kl_ceiling = boundary(**TABLES, weights=PROMPTS, returns="ceiling")(kl_ceiling)

matched_optimum = boundary(**TABLES, kl=NONNEGATIVE, weights=PROMPTS, returns=None)(matched_optimum)  # beta = inf at kl = 0, documented

tilt = boundary(pi_ref=simplex("Y", "N Y"), q=array("Y", "N Y"), beta=POSITIVE, returns=None)(tilt)

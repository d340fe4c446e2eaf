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

import numbers

import numpy as np


__all__ = ["best_of_n", "best_of_n_reward", "win_rate", "best_of_n_kl", "kl_bound", "kl_ceiling",
    "matched_optimum"]


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
    pi, reward, N, _ = bon_args(pi, reward, N)
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
    pi, reward, N, w = bon_args(pi, reward, N, weights)
    q = _bon(pi, reward, N)[0]
    return float(w @ (q * reward).sum(axis=1))


def win_rate(pi, reward, N, weights=None):
    """The win rate of best-of-N against one draw of `pi`, ties counted half, eq. (bon_win).

    Args:
        pi: `(P, Y)` the base policy, rows summing to 1.
        reward: `(P, Y)` rewards.
        N: the number of draws, in `[1, 10**6]`.
        weights: `(P,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float `P(R(y_N) > R(y')) + P(R(y_N) = R(y')) / 2`, averaged over `mu_0`.
    """
    pi, reward, N, w = bon_args(pi, reward, N, weights)
    q, _, F_minus, p_level = _bon(pi, reward, N)
    return float(w @ (q * (F_minus + 0.5 * p_level)).sum(axis=1))  # eq. (bon_win)


def best_of_n_kl(pi, reward, N, weights=None):
    """The exact `sum_x mu_0(x) KL(pi_N(.|x) || pi(.|x))`, eq. (bon_kl).

    Args:
        pi: `(P, Y)` the base policy, rows summing to 1.
        reward: `(P, Y)` rewards.
        N: the number of draws, in `[1, 10**6]`.
        weights: `(P,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float KL, at most `log N - (N - 1)/N`.
    """
    pi, reward, N, w = bon_args(pi, reward, N, weights)
    q, log_ratio, _, _ = _bon(pi, reward, N)
    per_x = (q * np.where(q > 0, log_ratio, 0.0)).sum(axis=1)  # (P,) eq. (bon_kl)
    return float(w @ per_x)


def kl_bound(N):
    """The widely quoted best-of-N KL, `log N - (N - 1)/N`: an upper bound, eq. (bon_kl_bound).

    Args:
        N: the number of draws, in `[1, 10**6]`.

    Returns:
        The float bound.
    """
    N = bound_args(N)
    return float(np.log(N) - (N - 1) / N)


def _kl_at(pi, reward, w, s):
    """E_x KL(pi*_t || pi) at t = 1/beta = exp(s), and pi*_t: (float, (P, Y))."""
    log_star, _ = _tilt(pi, reward, float(np.exp(-s)))  # (P, Y) log pi*, -inf off support
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
    pi, reward, w = table_args(pi, reward, weights)
    top = np.where(pi > 0, reward, -np.inf).max(axis=1, keepdims=True)  # (P, 1)
    return float(w @ -np.log(np.where(reward == top, pi, 0.0).sum(axis=1)))


def matched_optimum(pi, reward, kl, weights=None):
    """The tilted optimum `pi*` whose KL from `pi` equals `kl`, eq. (kl_match).

    Bisection on `s = log(1/beta)` (the KL rises with `s`) to the resolution of float64.

    Args:
        pi: `(P, Y)` the base (reference) policy, rows summing to 1.
        reward: `(P, Y)` rewards.
        kl: the target `E_x KL(pi* || pi)`, in `[0, kl_ceiling(pi, reward))`.
        weights: `(P,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        `(beta, pi_star)`: the float `beta` (`inf` at `kl = 0`, where `pi* = pi`) and the
        `(P, Y)` table.

    Raises:
        ValueError: `kl` at or above the ceiling (no `beta > 0` spends it).
    """
    pi, reward, kl, w = match_args(pi, reward, kl, weights)
    if kl == 0.0:
        return float("inf"), pi.copy()
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
    return finite_result(float(np.exp(-s)), "kl", "beta"), star


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/values/optimum.py
#   The KL-regularized (tilted) optimum: closed form, backward induction, exploit threshold.
# ----------------------------------------------------------------------------------------------


def _tilt(pi_ref, q, beta):
    """Row-wise log of pi_ref * exp(q / beta) and its log-normalizer times beta, stably."""
    support = pi_ref > 0  # (.., Y)
    m = np.where(support, q, -np.inf).max(axis=-1, keepdims=True)  # (.., 1) best reward on support
    # Overflow: q - m, (q - m) / beta, beta * log_z. inf - inf: q holding overflowed soft values
    # (the tree). Never log 0: the log is taken on the support only, and the sum below is >= 1
    # (its largest term is exp(0)) or NaN.
    with np.errstate(over="ignore", invalid="ignore"):
        # -inf off support, set directly: log 0 + (q - m) / beta would be -inf + inf = NaN
        # where an off-support reward exceeds m and overflows (q - m) / beta
        t = np.broadcast_to((q - m) / beta, support.shape)  # (.., Y)
        a = np.full(support.shape, -np.inf)
        a[support] = np.log(pi_ref[support]) + t[support]
        a_max = a.max(axis=-1, keepdims=True)  # (.., 1), 0 or log pi_ref: finite
        log_z = a_max + np.log(np.exp(a - a_max).sum(axis=-1, keepdims=True))  # (.., 1)
        v = m + beta * log_z  # eq. (kl_optimum): beta log Z
    return a - log_z, v[..., 0]  # log pi*, V


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/select/checks.py
#   The boundary of the select part: the bundles of `select/bestofn.py` (best-of-N over a finite
# ----------------------------------------------------------------------------------------------


N_MAX = 10**6  # best-of-N: beyond it F^N underflows to the top level for any row worth printing


def table_args(pi, reward, weights=None):
    """An `(P, Y)` probability table, rewards of its shape, the prompt weights `mu_0`."""
    pi = prob_table(pi, "pi", ndim=2)
    reward = float_array(reward, "reward", shape=pi.shape)
    return pi, reward, mu0_weights(weights, pi.shape[0])


def bon_args(pi, reward, N, weights=None):
    """`table_args` and the number of draws `N` in `[1, N_MAX]`."""
    pi, reward, w = table_args(pi, reward, weights)
    return pi, reward, int_scalar(N, "N", low=1, high=N_MAX), w


def bound_args(N):
    """The number of draws `N` in `[1, N_MAX]`."""
    return int_scalar(N, "N", low=1, high=N_MAX)


def match_args(pi, reward, kl, weights=None):
    """`table_args` and a target KL `>= 0`."""
    pi, reward, w = table_args(pi, reward, weights)
    return pi, reward, float_scalar(kl, "kl", low=0.0), w


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/values/checks.py
#   The boundary of the values part: the bundles of `values/critic.py` (values over prefixes,
# ----------------------------------------------------------------------------------------------


def mu0_weights(weights, N):
    """`(N,)` prompt weights mu_0, rows of a distribution, uniform by default."""
    if weights is None:
        return np.full(N, 1.0 / N)
    return prob_table(weights, "weights", shape=(N,), ndim=1)


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


def int_scalar(x, name, low=None, high=None):
    """Return ``x`` as a Python int in ``[low, high]`` (bounds inclusive)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_describe(x)}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {x}")
    return x


def float_scalar(x, name, low=None, high=None, low_open=False):
    """Return ``x`` as a finite Python float, ``>= low`` (``> low`` if low_open), ``<= high``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_describe(x)}")
    x = _float(x, name, "a finite number")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name}: expected a number {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected a number <= {high}, got {x}")
    return x


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


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is
    finite; else raise a ValueError naming ``name``, the argument that drove the overflow."""
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


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


def _float(x, name, expected):
    """A checked real number as a finite Python float (an int beyond float64 is not finite)."""
    try:
        x = float(x)
    except OverflowError:
        raise ValueError(
            f"{name}: expected {expected}, got an integer of {int(x).bit_length()} bits, beyond float64"
        ) from None
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected {expected}, got {x}")
    return x

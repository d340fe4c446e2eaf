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

import numpy as np

from minirl_lm.boundary import NONNEGATIVE, array, boundary, number, optional, simplex
from minirl_lm.values.optimum import _tilt

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
TABLES = dict(pi=simplex("P Y"), reward=array("P Y"))  # a base policy, rewards of its shape
PROMPTS = optional(simplex("P"))  # the prompt law mu_0; None: uniform
DRAWS = number(1, N_MAX, integer=True)  # N
BON = dict(**TABLES, N=DRAWS, weights=PROMPTS)  # the law of best-of-N, averaged over the prompts


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


@boundary(**TABLES, N=DRAWS, returns="pi_N")
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


@boundary(**BON, returns="reward")
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


@boundary(**BON, returns="win_rate")
def win_rate(pi, reward, N, weights=None):
    """The win rate of best-of-N against one draw of `pi`, ties counted half, eq. (bon_win).

    Arguments as `best_of_n_reward`.

    Returns:
        The float `P(R(y_N) > R(y')) + P(R(y_N) = R(y')) / 2`, averaged over `mu_0`.
    """
    q, _, F_minus, p_level = _bon(pi, reward, N)
    return float(_prompt_law(weights, pi.shape[0]) @ (q * (F_minus + 0.5 * p_level)).sum(axis=1))  # eq. (bon_win)


@boundary(**BON, returns="kl")
def best_of_n_kl(pi, reward, N, weights=None):
    """The exact `sum_x mu_0(x) KL(pi_N(.|x) || pi(.|x))`, eq. (bon_kl).

    Arguments as `best_of_n_reward`.

    Returns:
        The float KL, at most `log N - (N - 1)/N`.
    """
    q, log_ratio, _, _ = _bon(pi, reward, N)
    per_x = (q * np.where(q > 0, log_ratio, 0.0)).sum(axis=1)  # (P,) eq. (bon_kl)
    return float(_prompt_law(weights, pi.shape[0]) @ per_x)


@boundary(N=DRAWS, returns="bound")
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
    log_star, _ = _tilt(pi, reward, float(np.exp(-s)))  # (P, Y) log pi*, -inf off support
    star = np.exp(log_star)  # (P, Y)
    on = star > 0
    d = np.zeros_like(star)
    d[on] = star[on] * (log_star[on] - np.log(pi[on]))  # (P, Y) pi* log(pi*/pi)
    return float(w @ d.sum(axis=1)), star


@boundary(**TABLES, weights=PROMPTS, returns="ceiling")
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


@boundary(**TABLES, kl=NONNEGATIVE, weights=PROMPTS, returns=None)  # beta = inf at kl = 0, documented
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

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/select/rejection.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/select/rejection.py -o DIR
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

"""Rejection sampling fine-tuning: expert iteration, RAFT, STaR, and what its step ascends.

Sample `K` responses per prompt, keep the accepted ones, take a maximum-likelihood step on them
(expert iteration, Anthony et al. 2017; STaR, Zelikman et al. 2022, keeps the verified
rationales; RAFT, Dong et al. 2023, keeps the best of each group). `accepted` marks the kept
rows, eq. (rft_accept):

```text
rule "verified":  a_k = 1[R(x, y_k) >= threshold]          (a verifier: threshold 1)
rule "best":      a_k = 1 for the first draw of the group with the group's largest reward
```

The loss, for `N` groups of `K` rows (row `n*K + k` is draw `k` of prompt `n`), with
`A_n = sum_k a_k` the number kept:

```text
L = -(1/N) sum_n c_n sum_k a_k sum_t mask[k, t] logp[k, t]                       eq. (rft_loss)
c_n = 1/A_n   (norm "accepted": a mean over the kept responses; 0 when A_n = 0)
c_n = 1/K     (norm "group": a mean over the whole group)
dL/dlogp[k, t] = -(1/N) c_n a_k mask[k, t]
```

What the step ascends. Write `s(y) = grad log pi(y|x)` and, for a binary verifier, `p(x) =
P_pi(R = 1 | x)` the prompt's success. Since `grad p = E_pi[R s]`,

```text
E_{y ~ pi | R = 1}[s(y)] = E_pi[R s] / p = grad p / p = grad log p(x)            eq. (rft_identity)
```

so a step on accepted responses ascends the log of each prompt's success, not the success: per
prompt it is REINFORCE's `grad p` weighted by `1/p`, the hard prompts most (DAPO's dynamic
sampling reweights by `1 / P(mixed group)` instead, `pg/shaping.py`). With `K` draws and the
mean over the kept ones the identity holds given `A_n = m >= 1` (the kept draws are then `m`
i.i.d. draws of `pi | R = 1`), and the step is 0 when `A_n = 0`, so exactly

```text
E[-grad_x L] = (1/N) (1 - (1 - p)^K) grad log p = (1/N) f_K(p) grad p,
f_K(p) = (1 - (1 - p)^K) / p = sum_{j<K} (1 - p)^j                              eq. (rft_finite_k)
```

short of `grad log p` by the probability that no draw is accepted, and finite at `p = 0`. The
norm "group" gives `(1/N) grad p` exactly, at every `K` (it is REINFORCE with the 0/1 reward and
no baseline), eq. (rft_group). The rule "best" keeps one draw a group, the best-of-K draw, so its
step is the score at a best-of-K sample: `(1/N) (pi_K - pi)` on the softmax logits of a finite
response set (`pi_K` of eq. (bon_law), `best_of_n`), a cross-entropy step towards best-of-K,
eq. (raft_top1) (divided by `K` with the norm "group").

`expected_update` computes the exact expectation for any rule, norm and reward through the
multinomial law of a group (`minirl_lm.exact.groups`, eq. (exact_multinomial)): the update is
linear in the per-slot coefficients, and the slots of a sorted multiset stand for every order of
its draws, so "the first best draw" puts `1/(number of tied best slots)` on each of them.
`closed_form_update` is eqs. (rft_finite_k), (rft_group) and (raft_top1); the tests check both
against a brute-force sum over every ordered tuple of draws.

    $ python examples/best_of_n.py    # the identity, then RFT against GRPO and REINFORCE

Names in the frameworks: see the page "Best-of-N and rejection sampling".
"""

import functools
import itertools
import math
import numbers

import numpy as np


__all__ = ["accepted", "rejection_loss", "expected_update", "closed_form_update"]


def accepted(reward, K, rule="verified", threshold=1.0):
    """Which responses a rejection-sampling step keeps, eq. (rft_accept).

    Args:
        reward: `(B,)` rewards, `B = N*K`, grouped prompt-major.
        K: responses per prompt, dividing `B`.
        rule: `"verified"` (`R >= threshold`) or `"best"` (the first draw of each group with the
            group's largest reward: one per group).
        threshold: the verifier's pass mark (rule `"verified"`).

    Returns:
        `(B,)` float64 0/1.
    """
    reward, K, rule, threshold = accept_args(reward, K, rule, threshold)
    if rule == "verified":
        return (reward >= threshold).astype(np.float64)
    r = reward.reshape(-1, K)  # (N, K)
    a = np.zeros(r.shape)  # (N, K)
    a[np.arange(r.shape[0]), r.argmax(axis=1)] = 1.0  # argmax: the first of the tied best
    return a.ravel()


def rejection_loss(logp, mask, accept, K, norm="accepted"):
    """The maximum-likelihood loss on the kept responses and its gradient, eq. (rft_loss).

    Args:
        logp: `(B, T)` token log-probs `log pi(y_t | s_t)`.
        mask: `(B, T)` 0/1 mask of the trained tokens (holes allowed).
        accept: `(B,)` 0/1, from `accepted`.
        K: responses per prompt, dividing `B` (row `n*K + k` is draw `k` of prompt `n`).
        norm: `"accepted"` (mean over the kept responses of a group, 0 if none) or `"group"`
            (sum over the kept ones divided by K).

    Returns:
        `(loss, dloss_dlogp)`: the float loss and its `(B, T)` gradient.
    """
    logp, mask, accept, K, norm = rejection_args(logp, mask, accept, K, norm)
    a = accept.reshape(-1, K)  # (N, K)
    N = a.shape[0]
    if norm == "accepted":
        n_kept = a.sum(axis=1, keepdims=True)  # (N, 1) A_n
        c = np.divide(1.0, n_kept, out=np.zeros_like(n_kept), where=n_kept > 0)  # (N, 1) 1/A_n
    else:
        c = np.full((N, 1), 1.0 / K)  # (N, 1)
    w = (c * a).reshape(-1, 1) / N  # (B, 1) (1/N) c_n a_k
    dlogp = -w * mask  # (B, T) eq. (rft_loss): dL/dlogp = -(1/N) c_n a_k mask
    loss = float((dlogp * logp).sum())  # L = sum dL/dlogp * logp: the loss is linear in logp
    return finite_result((loss, dlogp), "logp", "the loss")


def _slot_coefs(rv, K, rule, norm, threshold):
    """Per-slot coefficients (M, K) of the ascent update for every multiset's rewards rv (M, K)."""
    if rule == "verified":
        a = (rv >= threshold).astype(np.float64)  # (M, K)
    else:
        best = rv == rv.max(axis=1, keepdims=True)  # (M, K) the tied best slots
        a = best / best.sum(axis=1, keepdims=True)  # (M, K) the first of them, in law: 1/ties each
    if norm == "group":
        return a / K
    n_kept = (rv >= threshold).sum(axis=1, keepdims=True) if rule == "verified" else 1  # (M, 1) A_n
    return np.divide(a, n_kept, out=np.zeros_like(a), where=np.broadcast_to(n_kept, a.shape) > 0)


def expected_update(pi, reward, K, rule="verified", norm="accepted", threshold=1.0):
    """The exact `E[-grad_theta L]` of eq. (rft_loss) on softmax logits over a finite response set.

    `pi(.|x) = softmax(theta[x])` over `Y` responses, one group of `K` i.i.d. draws a prompt,
    every multiset of the group weighted by its multinomial probability, eq. (exact_multinomial).

    Args:
        pi: `(N, Y)` the policy, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        K: responses per prompt, `C(Y + K - 1, K) <= 200000`.
        rule: `"verified"` or `"best"`, as in `accepted`.
        norm: `"accepted"` or `"group"`, as in `rejection_loss`.
        threshold: the verifier's pass mark.

    Returns:
        `(N, Y)` the expected ascent direction on `theta`.
    """
    pi, reward, K, rule, norm, threshold = update_args(pi, reward, K, rule, norm, threshold)
    N, Y = pi.shape
    out = np.zeros((N, Y))
    for n in range(N):
        Yg, P = _group_law(pi[n], K)  # (M, K) multisets, (M,) eq. (exact_multinomial)
        coef = _slot_coefs(reward[n, Yg], K, rule, norm, threshold)[:, :, None]  # (M, K, 1)
        scores = (np.eye(Y) - pi[n])[:, None, :]  # (Y, 1, Y) grad log pi(y) = e_y - pi, T = 1
        g = _group_updates(Yg, [coef], [scores])[0]  # (M, Y) each multiset's update
        out[n] = P @ g / N  # (Y,)
    return finite_result(out, "reward", "the expected update")


def closed_form_update(pi, reward, K, rule="verified", norm="accepted", threshold=1.0):
    """Eqs. (rft_finite_k), (rft_group), (raft_top1): the exact expected update in closed form.

    Rule `"verified"`: `(1/N) f_K(p) pi (s - p)` with `s = 1[R >= threshold]`, `p = E_pi s` and
    `f_K(p) = sum_{j<K} (1 - p)^j` (norm `"accepted"`) or `f_K = 1` (norm `"group"`). Rule
    `"best"`: `(1/N) (pi_K - pi)`, divided by `K` with the norm `"group"`.

    Args:
        pi: `(N, Y)` the policy, rows summing to 1.
        reward: `(N, Y)` rewards.
        K: responses per prompt.
        rule: `"verified"` or `"best"`.
        norm: `"accepted"` or `"group"`.
        threshold: the verifier's pass mark.

    Returns:
        `(N, Y)` the expected ascent direction on `theta`, equal to `expected_update`.
    """
    pi, reward, K, rule, norm, threshold = update_args(pi, reward, K, rule, norm, threshold, False)
    N = pi.shape[0]
    if rule == "best":
        q = _bon(pi, reward, K)[0]  # (N, Y) eq. (bon_law) at N = K
        return (q - pi) / (N * (K if norm == "group" else 1))  # eq. (raft_top1)
    s = (reward >= threshold).astype(np.float64)  # (N, Y)
    p = (pi * s).sum(axis=1, keepdims=True)  # (N, 1) success
    grad_p = pi * (s - p)  # (N, Y) d p / d theta = pi (s - p)
    if norm == "group":
        return grad_p / N  # eq. (rft_group)
    f = sum((1.0 - p) ** j for j in range(K))  # (N, 1) f_K(p) = (1 - (1 - p)^K) / p
    return f * grad_p / N  # eq. (rft_finite_k)


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/exact/groups.py
#   Groups of K i.i.d. responses: the multinomial law of a group and the moments of its update.
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _multisets(R, K):
    Y = np.array(list(itertools.combinations_with_replacement(range(R), K)), dtype=np.int64)  # (M, K)
    counts = np.stack([(Y == y).sum(1) for y in range(R)], 1)  # (M, R)
    coef = np.array([math.factorial(K) / np.prod([math.factorial(c) for c in row]) for row in counts])  # (M,)
    for a in (Y, counts, coef):
        a.setflags(write=False)  # cached: shared by every caller
    return Y, counts, coef


def _group_law(p, K):
    Y, _, coef = _multisets(p.shape[-1], K)
    return Y, coef * np.prod(p[..., Y], axis=-1)  # (M,) or (N, M), eq. (exact_multinomial)


def _group_updates(Y, coefs, bases):
    return np.stack([np.einsum("mkt,mktd->md", c, b[Y]) for c, b in zip(coefs, bases)])  # (F, M, D)


# ----------------------------------------------------------------------------------------------
# part 2: from minirl_lm/select/bestofn.py
#   Best-of-N over a finite response set: its exact law, reward, win rate, KL, and the frontier.
# ----------------------------------------------------------------------------------------------


def _levels(pi, reward):
    """F(y), F(y-) and p(y) = F(y) - F(y-) of every response, row-wise: (P, Y) each."""
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


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/select/checks.py
#   The boundary of the select part: the bundles of `select/bestofn.py` (best-of-N over a finite
# ----------------------------------------------------------------------------------------------


N_MAX = 10**6  # best-of-N: beyond it F^N underflows to the top level for any row worth printing
GROUPS_MAX = 200_000  # the exact update enumerates C(Y + K - 1, K) multisets per prompt
RULES = {"verified", "best"}
NORMS = {"accepted", "group"}


def table_args(pi, reward, weights=None):
    """An `(P, Y)` probability table, rewards of its shape, the prompt weights `mu_0`."""
    pi = prob_table(pi, "pi", ndim=2)
    reward = float_array(reward, "reward", shape=pi.shape)
    return pi, reward, mu0_weights(weights, pi.shape[0])


def accept_args(reward, K, rule, threshold):
    """`(B,)` rewards in groups of K (B a multiple of K), the rule, the verifier's threshold."""
    reward = float_array(reward, "reward", ndim=1)
    nonempty(reward, "reward")
    K = _group_size(K, reward.size, "reward")
    return reward, K, choice(rule, "rule", RULES), float_scalar(threshold, "threshold")


def rejection_args(logp, mask, accept, K, norm):
    """`(B, T)` token log-probs and their 0/1 mask (holes allowed), `(B,)` 0/1 acceptances,
    groups of K, the normalization."""
    mask = mask_array(mask, "mask")
    logp = float_array(logp, "logp", shape=mask.shape)
    nonempty(logp, "logp")
    accept = float_array(accept, "accept", shape=(mask.shape[0],))
    if not np.isin(accept, (0.0, 1.0)).all():
        bad = float(accept[~np.isin(accept, (0.0, 1.0))][0])
        raise ValueError(f"accept: expected 0/1 acceptances, got {bad!r}")
    K = _group_size(K, mask.shape[0], "mask")
    return logp, mask, accept, K, choice(norm, "norm", NORMS)


def update_args(pi, reward, K, rule, norm, threshold, enumerate_groups=True):
    """`table_args`, a group size K (whose multisets stay below `GROUPS_MAX` a prompt when they
    are enumerated; else `K <= N_MAX`), the rule, the normalization, the threshold."""
    pi, reward, _ = table_args(pi, reward)
    K = int_scalar(K, "K", low=1, high=N_MAX)
    M = math.comb(pi.shape[1] + K - 1, K) if enumerate_groups else 0  # the multisets of a group
    if M > GROUPS_MAX:
        raise ValueError(
            f"K: expected at most {GROUPS_MAX} groups of K a prompt, got C({pi.shape[1]} + {K} - 1, {K}) = {M}"
        )
    rule = choice(rule, "rule", RULES)
    norm = choice(norm, "norm", NORMS)
    return pi, reward, K, rule, norm, float_scalar(threshold, "threshold")


def _group_size(K, B, what):
    K = int_scalar(K, "K", low=1)
    if B % K:
        raise ValueError(f"K: expected a group size dividing the {B} rows of {what}, got {K}")
    return K


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


def choice(x, name, options):
    """Raise unless ``x`` is one of ``options`` (an unhashable ``x`` is a TypeError naming it)."""
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"{name}: expected one of {sorted(options, key=str)}, got unhashable {_describe(x)}"
        ) from None
    if isinstance(x, bool) or x not in options:  # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
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

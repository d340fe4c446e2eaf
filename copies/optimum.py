# minirl_lm 0.1.0: a self-contained copy of minirl_lm/values/optimum.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/values/optimum.py -o DIR
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

"""The KL-regularized (tilted) optimum: closed form, backward induction, exploit threshold.

The KL-regularized objective of a policy `pi` against the frozen reference `pi_ref`, for
prompts `x ~ mu_0` and a reward `R(x, y)`, is

```text
J(pi) = E_x [ E_{y~pi(.|x)} R(x, y) - beta KL(pi(.|x) || pi_ref(.|x)) ]        eq. (kl_objective)
```

and for `beta > 0` its maximizer is the reference tilted by the reward:

```text
pi*(y|x) = pi_ref(y|x) exp(R(x, y) / beta) / Z(x),
Z(x) = sum_y pi_ref(y|x) exp(R(x, y) / beta),                                  eq. (kl_optimum)
J(pi*) = E_x beta log Z(x),     J(pi*) - J(pi) = beta E_x KL(pi || pi*).
```

(The last line is the proof: `J(pi) = E_x [beta log Z(x) - beta KL(pi || pi*)]`.)

Tiny beta. As `beta -> 0`, `pi*` puts all its mass on the responses of largest reward among the
support of `pi_ref`, split between them in proportion to `pi_ref`. The code subtracts the row's
largest reward before dividing by `beta`, so tied rewards give exactly 0 and `pi_ref` breaks the
tie to rounding even at `beta = 1e-6`; `beta = 0` itself (the argmax, no KL) is rejected:
`beta > 0`.

Multi-token responses, terminal reward. On the prefix tree of a `TokenMDP` the same optimum is
a per-state policy, by backward induction over soft values (the soft Bellman equation with
deterministic transitions `s ∘ a`, concatenation):

```text
q(s, a) = R(x, y)          if s ∘ a is terminal (EOS or the length cap), y = the response
        = v(s ∘ a)         otherwise
v(s) = beta log sum_a pi_ref(a|s) exp(q(s, a) / beta)                           eq. (soft_bellman)
pi*(a|s) = pi_ref(a|s) exp((q(s, a) - v(s)) / beta)
```

The product of `pi*(a|s)` along a response telescopes to `pi_ref(y|x) exp(R(x, y)/beta) / Z(x)`
with `v(x) = beta log Z(x)`: the tree optimum is the closed form on whole responses.

The exploit threshold, eq. (exploit_threshold). On a prompt where a hedge earns reward gap
`dR` over an honest answer and the reference puts log-odds `dl_ref` against it
(`dl_ref = log pi_ref(honest) - log pi_ref(hedge)`), the tilted optimum's odds are
`pi*(hedge) / pi*(honest) = exp(-dl_ref + dR / beta)`: the hedge is preferred to any one honest
answer iff `beta < dR / dl_ref`. (Whether it also holds the majority of the mass depends on how
many honest answers share the rest; the page "The loophole" computes both.)

Probability tables in, not log-probs: these functions need whole distributions. The tree
functions (`soft_values`, `tilted_optimum_tree`, `kl_objective_tree`) take a `TokenMDP` with
`ids="enumerate"` and use its prefix enumeration (`S`, `V`, `prompts`, `prefix_of`,
`state_id`, `step`, `is_terminal`); they do not import `minirl_lm.core.mdp`. Demonstrated by
`pytest tests/values/test_optimum.py`. Imports NumPy and `minirl_lm.core.checks` only.

No knob: the tilted optimum and its exploit threshold are analysis, not a training option in
TRL, verl or OpenRLHF.

Names in the frameworks: none. The tilted optimum and its exploit threshold are analysis, not
a setting of TRL 1.16.0, verl 0.9.1 or OpenRLHF 0.11.2.
"""

import inspect
import numbers

import numpy as np


__all__ = ["tilted_optimum", "kl_objective", "optimal_value", "soft_values", "tilted_optimum_tree",
    "kl_objective_tree", "exploit_threshold", "hedge_odds"]


def _tilt(pi_ref, q, beta):
    """Row-wise log of pi_ref * exp(q / beta) and its log-normalizer times beta, stably.

    For a finite `q` (rewards; the tree's `q` once checked) `log pi*` is in `[-inf, 0]`: on the
    support `a = log pi_ref + (q - m) / beta <= a_max`, finite at the best reward, and
    `log_z >= a_max`; off it `-inf`. So `pi* = exp(log pi*)` is always in `[0, 1]`.
    """
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


# ---------------------------------------------------------------- one-token responses (bandit)


def tilted_optimum(pi_ref, reward, beta):
    """The tilted optimum `pi*(y|x) = pi_ref(y|x) exp(R(x, y)/beta) / Z(x)`, eq. (kl_optimum).

    Args:
        pi_ref: `(N, Y)` probabilities, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        beta: `> 0`.

    Returns:
        `(N, Y)` probabilities, 0 off the support of `pi_ref`.
    """
    pi_ref, reward, beta, _ = bandit_args(pi_ref, reward, beta)
    log_pi_star, _ = _tilt(pi_ref, reward, beta)
    return np.exp(log_pi_star)  # (N, Y), 0 off support


def kl_objective(pi, pi_ref, reward, beta, weights=None):
    """The objective `J(pi) = sum_x mu_0(x) [E_pi R - beta KL(pi || pi_ref)]`, eq. (kl_objective).

    `0 log 0 = 0`; mass of `pi` where `pi_ref = 0` makes the KL infinite and `J = -inf`.

    Args:
        pi: `(N, Y)` probabilities, rows summing to 1.
        pi_ref: `(N, Y)` probabilities, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        beta: `>= 0`.
        weights: `(N,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float `J(pi)`.
    """
    pi, pi_ref, reward, beta, w = objective_args(pi, pi_ref, reward, beta, weights)
    if beta > 0 and ((pi > 0) & (pi_ref == 0)).any():
        return -np.inf
    pos = (pi > 0) & (beta > 0)  # beta = 0: no KL term at all
    log_ratio = np.zeros_like(pi)  # (N, Y)
    log_ratio[pos] = np.log(pi[pos]) - np.log(pi_ref[pos])
    with np.errstate(over="ignore", invalid="ignore"):
        e_r = w @ (pi * reward).sum(axis=1)  # E_pi r
        per_x = (pi * (reward - beta * log_ratio)).sum(axis=1)  # (N,) eq. (kl_objective)
        out = float(w @ per_x)
    return finite_stages((e_r, "reward", "E_pi r"), (out, "beta", "J(pi)"))


def optimal_value(pi_ref, reward, beta, weights=None):
    """The maximum of eq. (kl_objective), `J(pi*) = sum_x mu_0(x) beta log E_{pi_ref} exp(R(x, y)/beta)`.

    Args:
        pi_ref: `(N, Y)` probabilities, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        beta: `> 0`.
        weights: `(N,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float `J(pi*)`.
    """
    pi_ref, reward, beta, w = bandit_args(pi_ref, reward, beta, weights)
    _, v = _tilt(pi_ref, reward, beta)  # (N,)
    with np.errstate(over="ignore", invalid="ignore"):
        out = float(w @ v)
    return finite_result(out, largest(beta=beta, reward=reward), "J(pi*) = beta log Z")


# ---------------------------------------------------------------- the prefix tree, eq. (soft_bellman)


def _induction(mdp, grader, backup):
    """Backward induction on the prefix tree: q(s, a) from the children, v(s) = backup(s, q(s, .))."""
    values = np.zeros(mdp.S)  # (S,)
    q = np.zeros((mdp.S, mdp.V))  # (S, V)
    for s in range(mdp.S - 1, -1, -1):  # ids are level by level: deepest first
        n, prefix = mdp.prefix_of(s)
        for a in range(mdp.V):
            child = mdp.step(prefix, a)  # s.a: concatenation
            if mdp.is_terminal(child):
                q[s, a] = _reward(grader, mdp.prompts[n], child)  # terminal V = r
            else:
                q[s, a] = values[mdp.state_id(n, child)]
        values[s] = backup(s, q[s])
    return values, q


def soft_values(mdp, pi_ref, grader, beta):
    """Soft values by backward induction on the prefix tree of `mdp`, eq. (soft_bellman).

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.
        pi_ref: `(S, V)` per-state probabilities.
        grader: `grader(prompt, response) -> R(x, y)` (response: a tuple of token ids, EOS
            included).
        beta: `> 0`.

    Returns:
        `(values, q)`: `(S,)` soft values `v(s)` (at the prompts' root states,
        `beta log Z(x)`) and `(S, V)` soft action values `q(s, a)`.
    """
    pi_ref, beta = tree_args(mdp, pi_ref, grader, beta)
    return finite_result(_soft_values(mdp, pi_ref, grader, beta), "beta", "the soft values")


def _soft_values(mdp, pi_ref, grader, beta):
    """Trusted core of `soft_values`: (values (S,), q (S, V)), eq. (soft_bellman)."""
    return _induction(mdp, grader, lambda s, q_s: _tilt(pi_ref[s], q_s, beta)[1])


def tilted_optimum_tree(mdp, pi_ref, grader, beta):
    """The per-state optimal policy `pi*(a|s) = pi_ref(a|s) exp((q(s, a) - v(s))/beta)`.

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.
        pi_ref: `(S, V)` per-state probabilities.
        grader: `grader(prompt, response) -> R(x, y)`.
        beta: `> 0`.

    Returns:
        `(S, V)` probabilities.
    """
    pi_ref, beta = tree_args(mdp, pi_ref, grader, beta)
    _, q = finite_result(_soft_values(mdp, pi_ref, grader, beta), "beta", "the soft values")
    log_pi_star, _ = _tilt(pi_ref, q, beta)  # normalizer = V(s), row-wise
    return np.exp(log_pi_star)  # q is finite: see _tilt


def kl_objective_tree(mdp, pi, pi_ref, grader, beta, weights=None):
    """Eq. (kl_objective) for a per-state policy `pi` on the prefix tree of `mdp`.

    Policy evaluation with the per-token KL,
    `v(s) = sum_a pi(a|s) [q(s, a) - beta log(pi(a|s)/pi_ref(a|s))]`, whose root values sum the
    token KLs into `KL(pi(.|x) || pi_ref(.|x))` over whole responses. At `tilted_optimum_tree`
    it equals the mean of the root soft values.

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.
        pi: `(S, V)` per-state probabilities.
        pi_ref: `(S, V)` per-state probabilities.
        grader: `grader(prompt, response) -> R(x, y)`.
        beta: `>= 0`.
        weights: `(N,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float `J(pi)`.
    """
    pi, pi_ref, beta, w = tree_objective_args(mdp, pi, pi_ref, grader, beta, weights)
    pos = (pi > 0) & (beta > 0)
    log_ratio = np.zeros_like(pi)  # (S, V), 0 log 0 = 0
    with np.errstate(divide="ignore"):  # pi_ref = 0 < pi: KL = +inf
        log_ratio[pos] = np.log(pi[pos]) - np.log(pi_ref[pos])

    def backup(s, q_s):  # actions pi never takes add 0
        with np.errstate(invalid="ignore", over="ignore"):
            return np.where(pi[s] > 0, pi[s] * (q_s - beta * log_ratio[s]), 0.0).sum()

    values, _ = _induction(mdp, grader, backup)
    roots = [mdp.state_id(n, ()) for n in range(mdp.N)]
    with np.errstate(invalid="ignore", over="ignore"):
        out = float(w @ values[roots])
    if out == -np.inf and not np.isnan(values).any() and (np.isposinf(log_ratio)).any():
        return out  # pi > 0 = pi_ref: KL = +inf
    return finite_result(out, "beta", "J(pi)")


def _reward(grader, prompt, response):
    return real_result(grader(prompt, response), "grader", f" (a finite reward) for response {response}")


# ---------------------------------------------------------------- the exploit threshold


def exploit_threshold(gap, log_odds):
    """The `beta` below which the tilted optimum prefers the hedge to any one honest answer.

    `dR / dl_ref`, eq. (exploit_threshold).

    Args:
        gap: the reward gap `dR > 0` of the hedge over an honest answer.
        log_odds: the reference log-odds `dl_ref > 0` against the hedge,
            `log pi_ref(honest) - log pi_ref(hedge)`.

    Returns:
        The float threshold.
    """
    gap, log_odds = threshold_args(gap, log_odds)
    drove = "gap" if gap * log_odds >= 1.0 else "log_odds"  # the farther from 1 in log scale
    return finite_result(gap / log_odds, drove, "g / l")  # Python floats: inf, no warning


def hedge_odds(gap, log_odds, beta):
    """The odds `pi*(hedge) / pi*(honest) = exp(-dl_ref + dR / beta)` at the tilted optimum.

    Greater than 1 iff `beta < dR / dl_ref`.

    Args:
        gap: the reward gap `dR` of the hedge over an honest answer.
        log_odds: the reference log-odds `dl_ref` against the hedge.
        beta: `> 0`.

    Returns:
        The float odds.

    Raises:
        ValueError: the odds overflow, named after the argument that drove it (a tiny `beta`,
            a huge `gap` or `log_odds`).
    """
    gap, log_odds, beta = odds_args(gap, log_odds, beta)
    t = gap / beta  # Python floats: +-inf, no warning
    # the exponent is finite or +-inf, never NaN (t is finite or +-inf, log_odds finite)
    with np.errstate(over="ignore"):  # tiny beta: odds overflow
        odds = float(np.exp(-log_odds + t))
    # the larger term of the exponent drove it; within t, the farther of gap and beta from 1
    drove = "log_odds" if abs(log_odds) >= abs(t) else "gap" if abs(gap) * beta >= 1.0 else "beta"
    return finite_result(odds, drove, "the odds")


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`
# ----------------------------------------------------------------------------------------------


def largest(**named):
    """The name of the argument of largest magnitude (the first on a tie): the one that drove an
    overflow of an expression they all enter."""
    best, size = None, -1.0
    for name, value in named.items():
        m = float(np.max(np.abs(value), initial=0.0))
        if best is None or m > size:
            best, size = name, m
    return best


def finite_stages(*stages):
    """`finite_result` on each `(value, name, what)` stage in turn (the order the values were
    computed in, so the first to overflow is named); returns the last stage's value."""
    for value, name, what in stages:
        finite_result(value, name, what)
    return stages[-1][0]


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/values/checks.py
#   The boundary of the values part: the bundles of `values/critic.py` (values over prefixes,
# ----------------------------------------------------------------------------------------------


def mu0_weights(weights, N):
    """`(N,)` prompt weights mu_0, rows of a distribution, uniform by default."""
    if weights is None:
        return np.full(N, 1.0 / N)
    return prob_table(weights, "weights", shape=(N,), ndim=1)


def bandit_args(pi_ref, reward, beta, weights=None):
    """An `(N, Y)` probability table, rewards of its shape, beta `> 0`, the prompt weights."""
    pi_ref = prob_table(pi_ref, "pi_ref", ndim=2)
    reward = float_array(reward, "reward", shape=pi_ref.shape)
    beta = float_scalar(beta, "beta", low=0.0, low_open=True)
    return pi_ref, reward, beta, mu0_weights(weights, pi_ref.shape[0])


def objective_args(pi, pi_ref, reward, beta, weights):
    """Two `(N, Y)` probability tables, rewards of their shape, beta `>= 0`, the weights."""
    pi = prob_table(pi, "pi", ndim=2)
    pi_ref = prob_table(pi_ref, "pi_ref", shape=pi.shape, ndim=2)
    reward = float_array(reward, "reward", shape=pi.shape)
    beta = float_scalar(beta, "beta", low=0.0)
    return pi, pi_ref, reward, beta, mu0_weights(weights, pi.shape[0])


def tree_args(mdp, pi_ref, grader, beta, beta_zero=False):
    """An enumerated TokenMDP, an `(S, V)` table on its states, a grader, beta (`>= 0` with
    `beta_zero`, else `> 0`)."""
    if getattr(mdp, "ids", None) != "enumerate":
        raise TypeError(
            f"mdp: expected a TokenMDP with ids='enumerate', got {type(mdp).__name__}"
            f" with ids={getattr(mdp, 'ids', None)!r}"
        )
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    pi_ref = prob_table(pi_ref, "pi_ref", shape=(mdp.S, mdp.V), ndim=2)
    return pi_ref, float_scalar(beta, "beta", low=0.0, low_open=not beta_zero)


def tree_objective_args(mdp, pi, pi_ref, grader, beta, weights):
    """`kl_objective_tree`'s arguments: `tree_args` with beta `>= 0`, then pi and the weights."""
    pi_ref, beta = tree_args(mdp, pi_ref, grader, beta, beta_zero=True)
    pi = prob_table(pi, "pi", shape=pi_ref.shape, ndim=2)
    return pi, pi_ref, beta, mu0_weights(weights, mdp.N)


def threshold_args(gap, log_odds):
    """The reward gap and the reference log-odds of the exploit threshold, both `> 0`."""
    return (
        float_scalar(gap, "gap", low=0.0, low_open=True),
        float_scalar(log_odds, "log_odds", low=0.0, low_open=True),
    )


def odds_args(gap, log_odds, beta):
    """The reward gap and the reference log-odds (any real numbers), beta `> 0`."""
    return (
        float_scalar(gap, "gap"),
        float_scalar(log_odds, "log_odds"),
        float_scalar(beta, "beta", low=0.0, low_open=True),
    )


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


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming ``name`` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    return _float(value, name, f"a finite number{context}")


def callable_check(f, name, nargs, call="f(...)"):
    """Raise unless ``f`` is a callable that accepts ``nargs`` positional arguments."""
    if not callable(f) or isinstance(f, type):
        raise TypeError(f"{name}: expected a callable {call}, got {_describe(f)}")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # builtins without a signature
        return f
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise TypeError(
            f"{name}: expected a callable {call} taking {nargs} positional arguments, got one with signature {sig}"
        ) from None
    return f


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

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/multiturn/values.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/multiturn/values.py -o DIR
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

"""Values with chance nodes: backward induction, the soft optimum, returns and GAE over actions.

Backward induction on the tree of a `MultiTurnMDP`. At a policy state s the world is unknown; its
posterior given the prefix is P(w | s) proportional to prior(w) prod_{spans in s} P(o | w) (the
policy's factors cancel). For an action a that ends a turn with reward r(w), eq. (chance_bellman):

    q(s, a) = sum_w P(w | s) r(w) + C(s, a)
    C(s, a) = v(s.a)                        if the turn goes on
            = 0                             if the episode ends
            = sum_o P(o | s.a) v(s.a.o)     after a call: a chance node, an expectation
    P(o | s.a) = sum_w P(w | s) P(o | w)

and the policy state backs up its actions one of two ways:

    v^pi(s) = sum_a pi(a | s) q(s, a)                                       policy evaluation
    v*(s)   = beta log sum_a pi_ref(a | s) exp(q(s, a) / beta)             eq. (soft_bellman)
    pi*(a | s) = pi_ref(a | s) exp((q(s, a) - v*(s)) / beta)

The soft optimum maximizes `J(pi) = E[R - beta sum_{action tokens} log(pi / pi_ref)]`; at a
chance node nothing is chosen, so the max becomes an expectation. The gap

```text
J(pi*) - J(pi) = beta KL(P_pi(tau) || P_pi*(tau)) >= 0
```

holds with the environment's factors cancelling in the ratio: it is the distance to the optimum
the example prints.

Returns and GAE over action tokens. Rewards sit on policy tokens; the recursion runs over the
action mask and skips the environment's tokens, carrying the running return, the next value and
the running advantage across an observation span, eq. (gae_carry):

    delta_t = r_t + gamma v(s_t') - v(s_t),   A_t = delta_t + gamma lam A_t'

where t' is the next *policy* token of the row. `carry=False` is the bug: the recursion restarts
(running return, next value and running advantage set to 0) at every masked position, so a turn
before an observation never sees the rewards or values after it. Both return 0 off the action
mask. Imports NumPy, minirl_lm.core.checks and minirl_lm.values.optimum (the tilt of one state's row).
"""

import numbers

import numpy as np


__all__ = ["policy_values", "soft_optimum", "kl_objective", "gae_actions", "returns_actions",
    "turn_values"]


def _posterior(loglik):
    """P(w | s) from log prior + log likelihood (W,); an unreachable prefix gets the uniform."""
    if not np.isfinite(loglik).any():
        return np.full(loglik.size, 1.0 / loglik.size)
    p = np.exp(loglik - loglik.max())  # (W,)
    return p / p.sum()


def _induction(env, backup):
    """Q (S, V) and V (S,) over the policy states, children first; chance rows stay 0."""
    values, q = np.zeros(env.S), np.zeros((env.S, env.V))
    for s in range(env.S - 1, -1, -1):  # ids: parents before children
        if not env.is_policy[s]:
            continue
        post = _posterior(env.loglik[s])  # (W,) P(w | s)
        for a, (r, kind, nxt) in enumerate(env.children[s]):
            qa = post @ r  # expected reward of the turn
            if kind == "turn":
                qa += values[nxt]
            elif kind == "env":  # eq. (chance_bellman): expectation
                for m, _, s2 in nxt:
                    qa += (post @ env.p_obs[:, m]) * values[s2]
            q[s, a] = qa
        values[s] = backup(s, q[s])
    return values, q


def policy_values(env, probs):
    """v^pi (S,) and q^pi (S, V) of the per-state policy `probs` (S, V), eq. (chance_bellman).

    Values at chance states are 0 (unused); v^pi at state 0 is the expected return E R.
    """
    probs = mt_table(env, probs, "probs")
    with np.errstate(over="ignore", invalid="ignore"):
        values, q = _induction(env, lambda s, q_s: probs[s] @ q_s)
    return finite_result((values, q), "env", "the expected return of its turn rewards")


def soft_optimum(env, pi_ref, beta):
    """Soft-optimal policy by backward induction with chance nodes, eq. (soft_bellman).

    Args:
        env: a `MultiTurnMDP`.
        pi_ref: `(S, V)` reference probabilities.
        beta: KL coefficient > 0.

    Returns:
        `(values (S,), q (S, V), pi_star (S, V))`; `values[0]` is `J(pi*)`. Rows of chance states
        of `pi_star` are copies of `pi_ref` (the policy never writes there).
    """
    pi_ref, beta = mt_soft_args(env, pi_ref, beta)
    backup = lambda s, q_s: _tilt(pi_ref[s][None], q_s[None], beta)[1][0]  # noqa: E731
    with np.errstate(over="ignore", invalid="ignore"):
        values, q = _induction(env, backup)  # eq. (soft_bellman)
    pi_star = pi_ref.copy()
    for s in np.flatnonzero(env.is_policy):
        pi_star[s] = np.exp(_tilt(pi_ref[s][None], q[s][None], beta)[0][0])  # pi_ref e^{(Q-V)/beta}
    name = "beta" if np.isfinite(q).all() else "env"  # q overflows with the rewards alone
    return finite_result((values, q, pi_star), name, "the soft values")


def kl_objective(env, probs, pi_ref, beta):
    """J(pi) = E[R - beta sum over action tokens of log(pi / pi_ref)], by induction.

    `probs`, `pi_ref`: `(S, V)`; `beta >= 0`. A token pi writes where pi_ref is 0 makes J = -inf
    (at `beta = 0`, J = E R whatever the supports); any other overflow (a huge beta) is a
    ValueError naming `beta`.
    """
    probs, pi_ref, beta = mt_kl_args(env, probs, pi_ref, beta)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lr = np.where(probs > 0, np.log(np.where(probs > 0, probs, 1)) - np.log(pi_ref), 0.0)
        pen = beta * lr if beta > 0 else np.zeros_like(lr)  # beta = 0: J = E R, supports aside

        def backup(s, q_s):
            return np.where(probs[s] > 0, probs[s] * (q_s - pen[s]), 0.0).sum()

        J = float(_induction(env, backup)[0][0])
    if J == -np.inf and ((probs > 0) & (pi_ref == 0)).any():  # pi writes where pi_ref cannot
        return J
    return finite_result(J, "beta", "J(pi) = E[R - beta log(pi / pi_ref)]")


# ---- returns and GAE over the action mask -------------------------------------------------------
def _recursion(values, rewards, act, c_next, c_acc, carry):
    """Right to left: A_t = r_t + c_next V' - V_t + c_acc A', primes over the next policy token."""
    B, T = act.shape
    out = np.zeros((B, T))
    nxt, acc = np.zeros(B), np.zeros(B)  # (B,) V(s_t'), A_t'
    for t in range(T - 1, -1, -1):
        on = act[:, t] > 0
        new = rewards[:, t] + c_next * nxt - values[:, t] + c_acc * acc  # eq. (gae_carry)
        keep = 1.0 if carry else 0.0  # carry: skip; bug: restart at 0
        acc = np.where(on, new, keep * acc)
        nxt = np.where(on, values[:, t], keep * nxt)
        out[:, t] = np.where(on, acc, 0.0)
    return out


def _scan(values, rewards, act, c_next, c_acc, carry):
    """The recursion, and its overflow named: the rewards if they overflow it alone."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = _recursion(values, rewards, act, c_next, c_acc, carry)
        if np.isfinite(out).all():
            return out
        alone = np.isfinite(_recursion(0 * values, rewards, act, c_next, c_acc, carry)).all()
    return finite_result(out, "values" if alone else "rewards", "the recursion (gae_carry)")


def gae_actions(values, rewards, mask, action_mask, gamma=1.0, lam=1.0, carry=True):
    """GAE over the policy tokens of multi-turn rows, eq. (gae_carry): (B, T).

    Args:
        values: `(B, T)` critic value v(s_t) at every position (read on policy tokens only).
        rewards: `(B, T)` per-token rewards, 0 off the action mask.
        mask: `(B, T)` trajectory tokens, right-padded.
        action_mask: `(B, T)` policy tokens.
        gamma: in [0, 1].
        lam: see `gamma`.
        carry: True carries across observation spans; False restarts at every masked
            position (the bug this module measures).
    """
    values, rewards, act, gamma, lam, carry = action_gae_args(
        values, rewards, mask, action_mask, gamma, lam, carry
    )
    return _scan(values, rewards, act, gamma, gamma * lam, bool(carry))


def returns_actions(rewards, mask, action_mask, gamma=1.0, carry=True):
    """Reward to go G_t over the policy tokens, (B, T); carry=False restarts at masked positions."""
    rewards, act, gamma, carry = action_returns_args(rewards, mask, action_mask, gamma, carry)
    return _scan(np.zeros(act.shape), rewards, act, 0.0, gamma, bool(carry))


def turn_values(values, states, mask, action_mask):
    """V at the first policy state of each token's turn, on every policy token: (B, T).

    values: `(S,)`; states, mask, action_mask: `(B, T)`. A turn starts at the first policy token
    of a row and at the first policy token after an observation span.
    """
    values, states, mask, act = turn_values_args(values, states, mask, action_mask)
    out, cur = np.zeros(mask.shape), np.zeros(mask.shape[0])
    prev = np.zeros(mask.shape[0])  # action_mask at t - 1 (0 before t = 0)
    for t in range(mask.shape[1]):
        start = (act[:, t] > 0) & (prev == 0)
        cur = np.where(start, values[states[:, t]], cur)
        out[:, t] = cur * act[:, t]
        prev = act[:, t]
    return out


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
# input checks: from minirl_lm/multiturn/checks.py
#   The boundary of the multi-turn part: one bundle call per public function of
# ----------------------------------------------------------------------------------------------


# -- multi-turn episodes (minirl_lm/multiturn/)
# the trajectory mask covers every token of an episode (right-padded); the holes go in action_mask
TRAJECTORY = (
    "the trajectory mask (every token of the episode)",
    "action_mask for the policy's tokens (0 where the environment wrote)",
)


MT_ATTRS = ("children", "is_policy", "loglik", "p_obs", "S", "V")  # what a MultiTurnMDP has


def mt_table(env, p, name):
    """An (S, V) probability table of a MultiTurnMDP (duck-typed), rows summing to 1."""
    _duck(env, "env", MT_ATTRS, "a MultiTurnMDP")
    return prob_table(p, name, shape=(env.S, env.V))  # rows summing to 1 within 1e-9


def mt_kl_args(env, probs, pi_ref, beta):
    """(probs, pi_ref, beta >= 0) of the multi-turn KL objective."""
    probs = mt_table(env, probs, "probs")
    return probs, mt_table(env, pi_ref, "pi_ref"), float_scalar(beta, "beta", low=0.0)


def mt_soft_args(env, pi_ref, beta):
    """(pi_ref, beta > 0) of the multi-turn soft optimum."""
    pi_ref = mt_table(env, pi_ref, "pi_ref")
    return pi_ref, float_scalar(beta, "beta", low=0.0, low_open=True)


def _bool_arg(x, name):
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(x).__name__} {x!r}")
    return bool(x)


def _action_mask(action_mask, mask):
    act = float_array(action_mask, "action_mask", shape=mask.shape)
    if ((act != 0) & (act != 1)).any() or (act > mask).any():
        raise ValueError("action_mask: expected 0/1 entries, 1 only where mask is 1")
    return act


def _action_rewards(rewards, mask, action_mask):
    mask = mask_array(mask, "mask", prefix=TRAJECTORY)
    act = _action_mask(action_mask, mask)
    rewards = float_array(rewards, "rewards", shape=mask.shape)
    if (rewards * (1 - act) != 0).any():
        raise ValueError("rewards: expected rewards on policy tokens only (0 where action_mask is 0)")
    return rewards, mask, act


def action_returns_args(rewards, mask, action_mask, gamma, carry):
    """returns_actions' arguments: (rewards, act, gamma, carry), rewards 0 off the action mask."""
    rewards, mask, act = _action_rewards(rewards, mask, action_mask)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    return rewards, act, gamma, _bool_arg(carry, "carry")


def action_gae_args(values, rewards, mask, action_mask, gamma, lam, carry):
    """gae_actions' arguments: (values, rewards, act, gamma, lam, carry)."""
    rewards, mask, act = _action_rewards(rewards, mask, action_mask)
    values = float_array(values, "values", shape=mask.shape)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    lam = float_scalar(lam, "lam", low=0.0, high=1.0)
    return values, rewards, act, gamma, lam, _bool_arg(carry, "carry")


def turn_values_args(values, states, mask, action_mask):
    """turn_values' arguments: values (S,), states, mask, action_mask (B, T)."""
    values = float_array(values, "values", ndim=1)
    mask = mask_array(mask, "mask", prefix=TRAJECTORY)
    states = int_array(states, "states", shape=mask.shape, low=0, high=values.size)
    return values, states, mask, _action_mask(action_mask, mask)


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


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
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


def _duck(obj, name, attrs, what):
    if not all(hasattr(obj, a) for a in attrs):
        raise TypeError(f"{name}: expected {what}, got {type(obj).__name__}")
    return obj

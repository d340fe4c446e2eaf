# minirl_lm 0.1.0: a self-contained copy of minirl_lm/reward/prm.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/reward/prm.py -o DIR
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

"""Process reward models: a score per step (per turn) of a multi-turn episode, and its use as reward.

An outcome reward model scores a whole episode; a process reward model (PRM) scores each step.
On a `MultiTurnMDP` a step is a turn: the policy tokens up to the one that ends it (a call, EOS
or the length cap), so a step is the pair `(s, a)` of the state before that last token and the
token. The PRM here is tabular, a logit `r_phi(s, a)` per step, and its labels are Math-Shepherd's
hard estimates (Wang et al. 2024): a step is labelled with the outcome `o_b` in [0, 1] of the
episode it was taken in (a verifier's "the final answer is right"). Per episode `b` of weight
`w_b` and its steps `k`:

```text
loss = sum_b w_b sum_k [softplus(r_phi(s_k, a_k)) - o_b r_phi(s_k, a_k)] + l2 |r_phi|^2 / 2    eq. (prm_loss)
dloss/dr_phi(s, a) = sum over steps at (s, a) of w_b (sigma(r_phi(s, a)) - o_b) + l2 r_phi(s, a)
```

The fit is separable, one convex problem per step `(s, a)`: with `n = sum w_b` and
`k = sum w_b o_b` over the steps taken at `(s, a)`, the stationarity is

```text
n sigma(r) - k + l2 r = 0,      at l2 = 0:  p(s, a) = sigma(r) = k / n        eq. (prm_fit)
```

so with episodes weighted by their probability under the sampling policy `pi` the PRM is the
probability that the outcome is right given the step, the outcome's value `Q^pi(s, a)`. A step
never taken (`n = 0`) keeps `r = 0`, `p = 1/2`.

Used as a reward, per turn, eq. (prm_reward):

```text
direct:    r_k = p(s_k, a_k)                        a sum over turns: more turns, more reward
progress:  r_k = p(s_k, a_k) - p(s_{k-1}, a_{k-1}),  p(s_0, a_0) = 0
```

Progress telescopes, `sum_k r_k = p(last step)`, and the last step's label is the outcome's
conditional expectation given the whole observable episode; so with the exact fit (the episode
law in `weights`, `l2 = 0`) the soft optimum under progress rewards is the soft optimum under
the outcome (the rewards differ by a potential, Ng et al. 1999). Direct rewards pay for every
turn and move the optimum toward more turns. `process_env` builds the environment whose turn
rewards are these, so `multiturn/values.py` (`soft_optimum`, `policy_values`) runs on them.

Demonstrated by `python examples/reward_models.py`. Imports NumPy, `minirl_lm.core` and the
part's checks (which read the multi-turn environment's duck type).

Names in the frameworks: none. TRL 1.16.0's wheel has no process-reward trainer (its
`trl/trainer/` holds `reward_trainer.py` only), and OpenRLHF 0.11.2's wheel has no PRM trainer
(`openrlhf/trainer/rm_trainer.py` only); verl 0.9.1 not read for this (unverified).
"""

import copy
import numbers

import numpy as np


__all__ = ["prm_data", "prm_loss", "fit_prm", "process_rewards", "process_env"]


def _ends_turn(env, s, a):
    kids = env.children[s]  # (reward, kind, next) per token
    _, kind, _ = kids[a]
    return kind != "turn"


def prm_data(env, ep, outcome):
    """The steps of each episode and their labels, Math-Shepherd's hard estimates.

    Args:
        env: a `MultiTurnMDP`.
        ep: `Episodes` of `env` (`rollout` or `all_episodes`).
        outcome: `(B,)` each episode's outcome label in [0, 1].

    Returns:
        `(steps, labels)`, both `(B, T)`: 1.0 at the last policy token of each turn, and
        `outcome[b]` there (0 elsewhere).
    """
    env, ep, o = prm_data_args(env, ep, outcome)
    on = ep.action_mask > 0  # (B, T)
    steps = np.zeros(ep.mask.shape)  # (B, T)
    for b, t in zip(*np.nonzero(on)):
        steps[b, t] = float(_ends_turn(env, int(ep.states[b, t]), int(ep.tokens[b, t])))
    return steps, steps * o[:, None]  # (B, T) eq. (prm_loss): every step gets the outcome


def prm_loss(r_phi, states, tokens, steps, labels, weights=None):
    """The PRM's cross-entropy on the steps, eq. (prm_loss) at `l2 = 0`, and dloss/dr_phi.

    Args:
        r_phi: `(S, V)` logits, one per step `(s, a)`.
        states: `(B, T)` state ids.
        tokens: `(B, T)` token ids.
        steps: `(B, T)` 0/1, 1 at the steps (`prm_data`).
        labels: `(B, T)` labels in [0, 1] (read at the steps).
        weights: `(B,)` episode weights, default `1/B`.

    Returns:
        `(loss, dr_phi)`: a float and the `(S, V)` gradient.
    """
    r_phi, s, a, steps, lab, w = prm_loss_args(r_phi, states, tokens, steps, labels, weights)
    with np.errstate(over="ignore", invalid="ignore"):
        r = r_phi[s, a]  # (B, T)
        c = w[:, None] * steps  # (B, T) each step's weight
        loss = float((c * (np.logaddexp(0.0, r) - lab * r)).sum())  # eq. (prm_loss)
        g = c * (sigmoid(r) - lab)  # (B, T) d/dr = sigma(r) - o
    dr_phi = np.zeros_like(r_phi)  # (S, V)
    np.add.at(dr_phi, (s, a), g)  # scatter: a step taken twice accumulates
    return finite_result((loss, dr_phi), "r_phi", "the loss")


def fit_prm(env, states, tokens, steps, labels, weights=None, l2=0.0):
    """The minimizer of eq. (prm_loss) over the table, eq. (prm_fit), as probabilities.

    Args:
        env: the `MultiTurnMDP` (its table shape `(S, V)`).
        states: `(B, T)` state ids.
        tokens: `(B, T)` token ids.
        steps: `(B, T)` 0/1 steps (`prm_data`).
        labels: `(B, T)` labels.
        weights: `(B,)` episode weights, default `1/B` (the law of the episodes: exact).
        l2: the ridge coefficient `>= 0` on the logits.

    Returns:
        `(S, V)` `p(s, a) = sigma(r_phi(s, a))`; `1/2` where no step was taken.
    """
    env, s, a, steps, lab, w, l2 = fit_prm_args(env, states, tokens, steps, labels, weights, l2)
    c = w[:, None] * steps  # (B, T)
    n, k = np.zeros((env.S, env.V)), np.zeros((env.S, env.V))
    np.add.at(n, (s, a), c)  # (S, V) eq. (prm_fit): the weight of each step
    np.add.at(k, (s, a), c * lab)  # (S, V) and of its right outcomes
    if l2 == 0.0:
        return np.where(n > 0, k / np.where(n > 0, n, 1.0), 0.5)  # eq. (prm_fit) at l2 = 0
    lo, hi = -n / l2, n / l2  # f(lo) <= 0 <= f(hi) for f(r) = n sigma(r) - k + l2 r
    with np.errstate(over="ignore"):
        for _ in range(200):  # bisection: f increases; halving 2 n / l2 to below rounding
            mid = (lo + hi) / 2
            up = n * sigmoid(mid) - k + l2 * mid > 0
            lo, hi = np.where(up, lo, mid), np.where(up, mid, hi)
    return finite_result(sigmoid((lo + hi) / 2), "l2", "the fitted PRM")


def process_rewards(env, p_step, mode="progress"):
    """Per-step rewards `(S, V)` of eq. (prm_reward) from the PRM's `p_step`; 0 inside turns.

    Args:
        env: a `MultiTurnMDP`.
        p_step: `(S, V)` step scores in [0, 1] (`fit_prm`).
        mode: `"direct"` or `"progress"`.

    Returns:
        `(S, V)` rewards, nonzero only at the steps `(s, a)` that end a turn.
    """
    env, p, _ = process_args(env, p_step, mode, None)
    return _step_rewards(env, p, mode)


def _step_rewards(env, p, mode):
    prev = np.zeros(env.S)  # p of the step before each policy state, 0 at the root
    out = np.zeros((env.S, env.V))  # (S, V)
    for s in np.flatnonzero(env.is_policy):  # ids: a parent before its children
        for a, (_, kind, nxt) in enumerate(env.children[s]):
            if kind == "turn":
                prev[nxt] = prev[s]
                continue
            out[s, a] = p[s, a] - (prev[s] if mode == "progress" else 0.0)  # eq. (prm_reward)
            if kind == "env":
                for _, _, s2 in nxt:
                    prev[s2] = p[s, a]
    return out


def process_env(env, p_step, mode="progress", extra=None):
    """A copy of `env` whose turn rewards are the PRM's, eq. (prm_reward), plus `extra`.

    The PRM sees the observable prefix, not the hidden world: each turn's reward is the same in
    every world. The copy's `children` (what `rollout`, `all_episodes` and `multiturn/values.py`
    read) carry the new rewards; `env` is not changed.

    Args:
        env: a `MultiTurnMDP`.
        p_step: `(S, V)` step scores in [0, 1].
        mode: `"direct"` or `"progress"`.
        extra: `(S, V)` a reward added at each step (a call's price), default 0.

    Returns:
        a `MultiTurnMDP`.
    """
    env, p, extra = process_args(env, p_step, mode, extra)
    r = _step_rewards(env, p, mode) + extra  # (S, V)
    new = copy.copy(env)
    new.children = {
        s: [
            (np.zeros(env.W) if kind == "turn" else np.full(env.W, r[s, a]), kind, nxt)
            for a, (_, kind, nxt) in enumerate(kids)
        ]
        for s, kids in env.children.items()
    }
    return new


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


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


def _episode_row(env, b, tokens, states, n):
    """Parse row b (its n real tokens) as a trajectory of env: the (T,) policy-token mask."""
    want, s, t = np.zeros(tokens.size), 0, 0
    while t < n:
        a = int(tokens[t])
        if states[t] != s:
            raise ValueError(f"states: row {b}, position {t}: expected state {s}, got {states[t]}")
        want[t] = 1.0
        _, kind, nxt = env.children[s][a]
        t += 1
        if kind == "end":
            break
        if kind == "turn":
            s = nxt
            continue
        hit = [(chance, s2) for m, chance, s2 in nxt if tuple(tokens[t : t + len(chance)]) == env.spans[m]]
        if not hit or t + len(hit[0][0]) > n:
            raise ValueError(
                f"tokens: row {b}, position {t}: expected an observation "
                f"span {env.spans} after the call, got {tokens[t:n].tolist()}"
            )
        (chance, s), got = hit[0], states[t : t + len(hit[0][0])]
        for i in np.flatnonzero(got != np.array(chance)):  # the chance nodes' ids
            raise ValueError(f"states: row {b}, position {t + i}: expected state {chance[i]}, got {got[i]}")
        t += len(chance)
    if t != n:
        raise ValueError(f"mask: row {b}: the episode ends at position {t}, but the mask has {n} real tokens")
    return want


def episodes(env, ep, attrs=("states", "tokens", "mask", "action_mask", "rewards")):
    """Validate a batch of episodes against the environment (MultiTurnMDP.check): every row
    parses as a trajectory (tokens and states, chance nodes included), and action_mask is 1
    exactly on the policy's tokens."""
    if not all(hasattr(ep, a) for a in attrs):  # an Episodes (duck-typed: copies)
        raise TypeError(f"ep: expected an Episodes batch (from rollout or all_episodes), got {type(ep).__name__}")
    mask = mask_array(ep.mask, "mask", prefix=TRAJECTORY)
    B, T = mask.shape
    tokens = int_array(ep.tokens, "tokens", shape=(B, T), low=0, high=env.V)
    states = int_array(ep.states, "states", shape=(B, T), low=0, high=env.S)
    act = float_array(ep.action_mask, "action_mask", shape=(B, T))
    float_array(ep.rewards, "rewards", shape=(B, T))
    for b in range(B):
        n = int(mask[b].sum())
        if n == 0:
            raise ValueError(f"mask: row {b} is empty; every episode has at least one token")
        want = _episode_row(env, b, tokens[b], states[b], n)
        bad = np.flatnonzero(act[b] != want)
        if bad.size:
            t = int(bad[0])
            what = (
                "holds an observation token (written by the environment)"
                if mask[b, t] and not want[t]
                else "holds a policy token"
                if want[t]
                else "is padding"
            )
            raise ValueError(
                f"action_mask: row {b}, position {t} {what}, expected {int(want[t])}, got {float(act[b, t])!r}"
            )
    return ep


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/reward/checks.py
#   The boundary of the reward-model part: one bundle call per public function of `reward/bt.py`
# ----------------------------------------------------------------------------------------------


def _weights(weights, P):
    """`(P,)` nonnegative weights, `1/P` each (the mean) by default."""
    if weights is None:
        return np.full(P, 1.0 / P)
    w = float_array(weights, "weights", shape=(P,))
    if (w < 0).any():
        raise ValueError(f"weights: expected nonnegative weights, got min {w.min()}")
    return w


def _env(env):
    _duck(env, "env", MT_ATTRS, "a MultiTurnMDP")
    return env


def step_args(env, ep):
    """A `MultiTurnMDP` and a batch of its episodes."""
    return _env(env), episodes(_env(env), ep)


def prm_data_args(env, ep, outcome):
    """`prm_data`'s arguments: the episodes and one outcome label in [0, 1] per episode."""
    env, ep = step_args(env, ep)
    return env, ep, _labels_named(outcome, "outcome", ep.mask.shape[0])


def _labels_named(y, name, B):
    y = float_array(y, name, shape=(B,))
    if ((y < 0) | (y > 1)).any():
        raise ValueError(f"{name}: expected labels in [0, 1], got min {y.min()}, max {y.max()}")
    return y


def prm_loss_args(r_phi, states, tokens, steps, labels, weights):
    """`prm_loss`'s arguments: an `(S, V)` logit table and `(B, T)` steps with their labels."""
    r_phi = float_array(r_phi, "r_phi", ndim=2)
    S, V = r_phi.shape
    steps = mask_array(steps, "steps")
    states = int_array(states, "states", shape=steps.shape, low=0, high=S)
    tokens = int_array(tokens, "tokens", shape=steps.shape, low=0, high=V)
    labels = float_array(labels, "labels", shape=steps.shape)
    if ((labels < 0) | (labels > 1)).any():
        raise ValueError(f"labels: expected labels in [0, 1], got min {labels.min()}, max {labels.max()}")
    if steps.shape[0] == 0:
        raise ValueError("steps: expected at least one episode, got 0 rows")
    return r_phi, states, tokens, steps, labels, _weights(weights, steps.shape[0])


def fit_prm_args(env, states, tokens, steps, labels, weights, l2):
    """`fit_prm`'s arguments: the table is the environment's `(S, V)`; `l2 >= 0`."""
    env = _env(env)
    _, states, tokens, steps, labels, w = prm_loss_args(
        np.zeros((env.S, env.V)), states, tokens, steps, labels, weights
    )
    return env, states, tokens, steps, labels, w, float_scalar(l2, "l2", low=0.0)


def process_args(env, p_step, mode, extra):
    """`process_env`'s arguments: `(S, V)` step scores in [0, 1], the mode, `(S, V)` extras."""
    env = _env(env)
    p = float_array(p_step, "p_step", shape=(env.S, env.V))
    if ((p < 0) | (p > 1)).any():
        raise ValueError(f"p_step: expected probabilities in [0, 1], got min {p.min()}, max {p.max()}")
    choice(mode, "mode", {"direct", "progress"})
    extra = np.zeros((env.S, env.V)) if extra is None else float_array(extra, "extra", shape=(env.S, env.V))
    return env, p, extra


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

# minirl_lm 0.1.0: a self-contained copy of minirl_lm/values/critic.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/values/critic.py -o DIR
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

"""The token-MDP view: a tabular critic over prefixes, TD errors, GAE, per-token KL shaping.

Each token is an action `a_t = y_t` taken in the state `s_t = (x, y_<t)`, `t = 1, ..., |y|`;
the response ends in the terminal state `s_{|y|+1}`, whose value is 0. A critic `v(s)` is a
table over state ids, `values`, shape `(S,)`. Arrays are `(B, T)`; column `t - 1` holds step `t`.

Per-token KL shaping (the reward PPO-based RLHF optimizes): at every real token `t` of a
response,

```text
r_t = -beta (log pi(y_t|s_t) - log pi_ref(y_t|s_t)) + 1[t = |y|] R(x, y)      eq. (kl_shaped_reward)
```

TD error, GAE and Monte-Carlo returns, with `v(s_{|y|+1}) = 0` at the terminal state:

```text
delta_t = r_t + gamma v(s_{t+1}) - v(s_t)                                      eq. (td_error)
A_t = delta_t + gamma lam A_{t+1},  A_{|y|+1} = 0                              eq. (gae)
G_t = r_t + gamma G_{t+1},          G_{|y|+1} = 0                              eq. (mc_return)
```

Two identities the tests check: `lam = 1` gives `A_t = G_t - v(s_t)` (the sum telescopes),
`lam = 0` gives `A_t = delta_t`. With `v = 0`, `gamma = lam = 1` and the terminal reward alone,
`A_t = R(x, y)` at every token: one response-level weight on every token's score, the bandit
view. A nonzero `v`, `lam < 1`, `gamma < 1` or the per-token KL gives different tokens different
advantages: only the token MDP can say what those mean. GAE here is not whitened (verl whitens
it over the batch's tokens; the page "Where to go next" cites the code).

Critic fitting. The value loss over the real tokens of the batch, `M = sum(mask)` of them:

```text
loss_v = (1 / M) sum_{b,t} mask 0.5 (v(s_bt) - target_bt)^2                  eq. (value_loss)
dloss_v / dv[s] = (1 / M) sum over (b, t) with s_bt = s of mask (v(s_bt) - target_bt)
```

(a scatter into `s`), with targets `G_t` (Monte Carlo) or `r_t + gamma v(s_{t+1})` (TD(0), held
fixed: a semi-gradient). A response of length 0 (an all-padding row) gets no reward, no TD
error, no advantage, no loss.

Inputs are per-token arrays `(B, T)` with the mask; `values` is an `(S,)` table. Demonstrated by
`pytest tests/values/test_critic.py`. Imports NumPy, `minirl_lm.core.checks` and `minirl_lm.core.ops` only.

Names in the frameworks, read from the released code of TRL 1.16.0, verl 0.9.1 and OpenRLHF
0.11.2 (`docs/next.md` in the minirl_lm repository maps the rest, file by file); the values in
parentheses are their defaults at those versions, not results of this library.

```text
gae gamma, lam (1, 1)    verl algorithm.gamma, algorithm.lam (1.0, 1.0), adv_estimator=gae
                         (whitened); OpenRLHF --algo.advantage.gamma, --algo.advantage.lambd (1,
                         1), estimator gae (whitened over the batch's tokens); TRL GRPO: no
                         critic
clipped_value_loss clip  verl critic.cliprange_value (0.5); OpenRLHF --critic.value_clip (0.5)
per_token_rewards        verl algorithm.use_kl_in_reward; OpenRLHF the default (the KL in the
                         reward)
```
"""

import numbers

import numpy as np


__all__ = ["per_token_rewards", "td_errors", "gae", "monte_carlo_returns", "value_loss",
    "fit_values", "clipped_value_loss"]


def per_token_rewards(terminal_reward, logp, logp_ref, mask, beta):
    """KL-shaped per-token rewards `r_t`, eq. (kl_shaped_reward).

    The KL term is treated as data (no gradient through it), as in PPO-based RLHF.

    Args:
        terminal_reward: `(B,)` sequence rewards `R(x, y)`, added at each row's last real token.
        logp: `(B, T)` token log-probs under `pi`.
        logp_ref: `(B, T)` token log-probs under `pi_ref`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        beta: the KL coefficient, `>= 0`.

    Returns:
        `(B, T)` per-token rewards, 0 at padding.
    """
    R, logp, logp_ref, mask, beta = reward_args(terminal_reward, logp, logp_ref, mask, beta)
    with np.errstate(over="ignore", invalid="ignore"):
        u = log_ratio(logp, logp_ref, mask)  # (B, T), 0 at padding
        r = -beta * u  # (B, T) eq. (kl_shaped_reward)
        out = r.copy()
        lengths = mask.sum(axis=1).astype(np.int64)  # (B,)
        rows = np.flatnonzero(lengths > 0)  # length 0: nothing at all
        out[rows, lengths[rows] - 1] += R[rows]  # score at the last real token
    return finite_stages(
        (u, "logp", "logp - logp_ref"),
        (r, largest(beta=beta, logp=u), "beta (logp - logp_ref)"),
        (out, largest(terminal_reward=R, logp=r), "the last token's reward"),
    )


def td_errors(values, states, rewards, mask, gamma=1.0):
    """TD errors `delta_t = r_t + gamma v(s_{t+1}) - v(s_t)`, eq. (td_error); `v(terminal) = 0`.

    Args:
        values: `(S,)` the critic's table `v`.
        states: `(B, T)` int state ids `s_t`.
        rewards: `(B, T)` per-token rewards `r_t`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.

    Returns:
        `(B, T)` TD errors, 0 at padding.
    """
    values, states, rewards, mask, gamma = td_args(values, states, rewards, mask, gamma)
    with np.errstate(over="ignore"):
        out = _td(values, states, rewards, mask, gamma)
    return finite_result(out, largest(values=values, rewards=rewards), "delta = r + gamma V(s') - V(s)")


def _td(values, states, rewards, mask, gamma):
    """Trusted core of `td_errors`: (B, T) TD errors of checked arrays."""
    v = values[states] * mask  # (B, T) V(s_t), 0 at padding
    v_next = np.zeros_like(v)  # (B, T) V(s_{t+1})
    v_next[:, :-1] = v[:, 1:]  # 0 after the last real token
    return (rewards + gamma * v_next - v) * mask  # eq. (td_error)


def gae(deltas, mask, gamma=1.0, lam=1.0):
    """GAE advantages `A_t = delta_t + gamma lam A_{t+1}`, eq. (gae) (not whitened).

    Args:
        deltas: `(B, T)` TD errors, from `td_errors`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.
        lam: GAE's `lambda`, in `[0, 1]`.

    Returns:
        `(B, T)` advantages, 0 at padding.
    """
    deltas, mask, gamma, lam = discounted_args(deltas, mask, "deltas", gamma, lam)
    with np.errstate(over="ignore"):
        out = _backward_sum(deltas * mask, mask, gamma * lam)
    return finite_result(out, "deltas", "the discounted sum")


def monte_carlo_returns(rewards, mask, gamma=1.0):
    """Monte-Carlo returns `G_t = r_t + gamma G_{t+1}`, eq. (mc_return).

    Args:
        rewards: `(B, T)` per-token rewards `r_t`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.

    Returns:
        `(B, T)` returns, 0 at padding.
    """
    rewards, mask, gamma, _ = discounted_args(rewards, mask, "rewards", gamma)
    with np.errstate(over="ignore"):
        out = _backward_sum(rewards * mask, mask, gamma)
    return finite_result(out, "rewards", "the discounted sum")


def _backward_sum(x, mask, c):
    """Trusted core of eqs. (gae) and (mc_return): out_t = x_t + c out_{t+1}, 0 at padding."""
    out = np.zeros_like(x)  # (B, T)
    acc = np.zeros(x.shape[0])  # (B,) the sum from t+1 on
    for t in range(x.shape[1] - 1, -1, -1):  # right to left
        acc = (x[:, t] + c * acc) * mask[:, t]  # padding resets to 0
        out[:, t] = acc
    return out


def value_loss(values, states, targets, mask):
    """Mean squared value error over real tokens and its gradient on the table, eq. (value_loss).

    An all-padding batch has loss 0 and gradient 0.

    Args:
        values: `(S,)` the critic's table `v`.
        states: `(B, T)` int state ids.
        targets: `(B, T)` regression targets.
        mask: `(B, T)` 0/1 float mask, right-padded.

    Returns:
        `(loss, dvalues)`: a float and the `(S,)` gradient.
    """
    values, states, targets, mask = critic_batch(values, states, targets, mask, "targets")
    with np.errstate(over="ignore", invalid="ignore"):
        out = _value_loss(values, states, targets, mask)
    return finite_result(out, largest(targets=targets, values=values), "the squared error (V(s) - target)^2")


def _value_loss(values, states, targets, mask):
    """Trusted core of eq. (value_loss): (loss, dvalues (S,)) of checked arrays."""
    M = max(mask.sum(), 1.0)  # real tokens
    err = (values[states] - targets) * mask  # (B, T) V(s_t) - target_t
    loss = 0.5 * np.sum(err * err) / M  # eq. (value_loss)
    dvalues = np.zeros_like(values)  # (S,)
    np.add.at(dvalues, states, err / M)  # d/dV(s_t) = err / M, scattered
    return float(loss), dvalues


def fit_values(values, states, rewards, mask, gamma=1.0, lr=0.5, target="mc"):
    """One gradient step of the tabular critic on eq. (value_loss).

    Args:
        values: `(S,)` the critic's table `v` (not modified).
        states: `(B, T)` int state ids.
        rewards: `(B, T)` per-token rewards `r_t`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.
        lr: the step size, `> 0`.
        target: `"mc"` regresses `v(s_t)` on `G_t`; `"td0"` on `r_t + gamma v(s_{t+1})` from
            the current table (held fixed).

    Returns:
        `(new_values, loss)`: the `(S,)` updated table and the loss before the step.
    """
    values, states, rewards, mask, gamma, lr, target = fit_values_args(
        values, states, rewards, mask, gamma, lr, target
    )
    with np.errstate(over="ignore"):
        if target == "mc":
            y = _backward_sum(rewards * mask, mask, gamma)  # (B, T) eq. (mc_return)
        else:
            y = _td(values, states, rewards, mask, gamma) + values[states] * mask  # r + gamma V(s')
        loss, dvalues = _value_loss(values, states, y, mask)
        new = values - lr * dvalues
    err = "the squared error (V(s) - target)^2"
    finite_stages(
        (y, largest(rewards=rewards, values=values), "the regression targets"),
        ((loss, dvalues), largest(rewards=y, values=values), err),
        (new, "lr", "values - lr * dvalues"),
    )
    return new, loss


def clipped_value_loss(vpreds, values_old, returns, mask, clip):
    """PPO's clipped value loss over real tokens and its gradient, eq. (value_clip).

    ```text
    v_clip = clip(vpred, v_old - c, v_old + c)
    L = (1 / M) sum_{b,t} mask 0.5 max((vpred - G)^2, (v_clip - G)^2)
    dL/dvpred = (1 / M) (vpred - G)  where the first branch is the max (ties included),
                0                    where the clipped branch is strictly larger
    ```

    The clipped branch can only be strictly larger when vpred is outside the clip range, where
    `v_clip` is a constant: that is why its gradient is 0.

    Args:
        vpreds (np.ndarray): `(B, T)` values predicted by the critic being trained.
        values_old (np.ndarray): `(B, T)` values of the critic that scored the batch (data).
        returns (np.ndarray): `(B, T)` targets G (data).
        mask (np.ndarray): `(B, T)`.
        clip (float): the range c, `> 0` (verl `critic.cliprange_value`, default 0.5).

    Returns:
        result (tuple): `(loss, dloss_dvpred (B, T))`, 0 at padding; an all-padding batch gives
            `(0.0, 0)`. Scatter `dloss_dvpred` into a value table with `np.add.at(dvalues, states,
            d)`.
    """
    v, v_old, G, mask, clip = clipped_value_args(vpreds, values_old, returns, mask, clip)
    M = max(mask.sum(), 1.0)
    with np.errstate(over="ignore", invalid="ignore"):  # an inf error is rejected below
        v_clip = np.clip(v, v_old - clip, v_old + clip)  # (B, T); a bound may be +-inf
        l1 = (v - G) ** 2  # (B, T) unclipped
        l2 = (v_clip - G) ** 2  # (B, T) clipped
        loss = 0.5 * (np.maximum(l1, l2) * mask).sum() / M  # eq. (value_clip)
    squared_error_finite(l1, l2, loss, v, v_old, G)
    dloss = np.where(l1 >= l2, v - G, 0.0) * mask / M  # (B, T)
    return float(loss), dloss


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


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


def culprit(*stages):
    """The name of the first `(name, value)` stage whose value is not all finite (a number, an
    array or a tuple of them); the last argument, a bare name, when every stage is."""
    *pairs, last = stages
    for name, value in pairs:
        if not all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for v in _leaves(value)):
            return name
    return last


def finite_stages(*stages):
    """`finite_result` on each `(value, name, what)` stage in turn (the order the values were
    computed in, so the first to overflow is named); returns the last stage's value."""
    for value, name, what in stages:
        finite_result(value, name, what)
    return stages[-1][0]


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/values/checks.py
#   The boundary of the values part: the bundles of `values/critic.py` (values over prefixes,
# ----------------------------------------------------------------------------------------------


CRITIC = "the critic (values over prefixes)"  # what needs right padding (mask_array's prefix)


def critic_batch(values, states, per_token, mask, name):
    """An `(S,)` value table, `(B, T)` state ids into it, a `(B, T)` array `name`, the mask
    (right-padded: a critic reads the rows as prefixes)."""
    values = float_array(values, "values", ndim=1)
    nonempty(values, "values")
    mask = mask_array(mask, "mask", prefix=(CRITIC, f"{GAE_HOLES}, or {COMPACT}"))
    states = int_array(states, "states", shape=mask.shape, low=0, high=values.size)
    per_token = float_array(per_token, name, shape=mask.shape)
    return values, states, per_token, mask


def reward_args(terminal_reward, logp, logp_ref, mask, beta):
    """`per_token_rewards`' arguments (the mask right-padded: R goes on the last real token)."""
    mask = mask_array(mask, "mask", prefix=("the terminal reward on the last real token", COMPACT))
    R = float_array(terminal_reward, "terminal_reward", shape=(mask.shape[0],))
    logp = float_array(logp, "logp", shape=mask.shape)
    logp_ref = float_array(logp_ref, "logp_ref", shape=mask.shape)
    return R, logp, logp_ref, mask, float_scalar(beta, "beta", low=0.0)


def squared_error_finite(l1, l2, loss, vpreds, values_old, returns):
    """`clipped_value_loss`'s guard: the unclipped squares `l1`, the clipped `l2` and their mean
    `loss` finite, else an error naming the largest input of the first to overflow."""
    if np.isfinite(l1).all() and np.isfinite(l2).all() and np.isfinite(loss):
        return
    name = culprit(
        (largest(vpreds=vpreds, returns=returns), l1),
        largest(vpreds=vpreds, values_old=values_old, returns=returns),
    )
    raise ValueError(f"{name}: the squared value error overflows float64")


def discounted_args(x, mask, name, gamma, lam=1.0):
    """A `(B, T)` array `name` to sum backwards under its right-padded mask, gamma and lam in [0,
    1]."""
    gae = name == "deltas"  # else the rewards of the returns to go
    what = "GAE (a sum over the later tokens)" if gae else "the returns to go (a sum over the later tokens)"
    mask = mask_array(mask, "mask", prefix=(what, GAE_HOLES if gae else RETURNS_HOLES))
    x = float_array(x, name, shape=mask.shape)
    return (x, mask, float_scalar(gamma, "gamma", low=0.0, high=1.0), float_scalar(lam, "lam", low=0.0, high=1.0))


def td_args(values, states, rewards, mask, gamma):
    """`td_errors`' arguments."""
    batch = critic_batch(values, states, rewards, mask, "rewards")
    return (*batch, float_scalar(gamma, "gamma", low=0.0, high=1.0))


def fit_values_args(values, states, rewards, mask, gamma, lr, target):
    """`fit_values`' arguments."""
    batch = td_args(values, states, rewards, mask, gamma)
    lr = float_scalar(lr, "lr", low=0.0, low_open=True)
    return (*batch, lr, choice(target, "target", {"mc", "td0"}))


def clipped_value_args(vpreds, values_old, returns, mask, clip):
    """`clipped_value_loss`' arguments."""
    mask = mask_array(mask, "mask", prefix=(CRITIC, f"{GAE_HOLES}, or {COMPACT}"))
    v = float_array(vpreds, "vpreds", shape=mask.shape)
    v_old = float_array(values_old, "values_old", shape=mask.shape)
    G = float_array(returns, "returns", shape=mask.shape)
    return v, v_old, G, mask, float_scalar(clip, "clip", low=0.0, low_open=True)


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


# where a mask with holes goes, for the callers that need right padding (mask_array's prefix)
ACTIONS = "(mask: every token of the row, action_mask: the trained ones)"
GAE_HOLES = f"minirl_lm.multiturn.values.gae_actions {ACTIONS}"
RETURNS_HOLES = f"minirl_lm.multiturn.values.returns_actions {ACTIONS}"
COMPACT = "minirl_lm.multiturn.env.action_view to compact the rows (scatter puts results back)"


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

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

import numpy as np

from minirl_lm.core.checks import finite_result
from minirl_lm.core.ops import log_ratio
from minirl_lm.core.validate import finite_stages, largest
from minirl_lm.values.checks import (
    clipped_value_args,
    critic_batch,
    discounted_args,
    fit_values_args,
    reward_args,
    squared_error_finite,
    td_args,
)


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

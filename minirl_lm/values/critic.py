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

Inputs are per-token arrays `(B, T)` with the mask, right-padded (a critic reads the rows as
prefixes); `values` is an `(S,)` table. Each public function declares its arguments with
`boundary`; its body is the math. Demonstrated by `pytest tests/values/test_critic.py`.

Names in the frameworks (`docs/next.md` keeps the versions and defaults):

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

from minirl_lm.boundary import MASK, NONNEGATIVE, POSITIVE, TOKENS, array, boundary, number, one_of, padded
from minirl_lm.core.ops import log_ratio

__all__ = [
    "per_token_rewards",
    "td_errors",
    "gae",
    "monte_carlo_returns",
    "value_loss",
    "fit_values",
    "clipped_value_loss",
]

ACTIONS = "(mask: every token of the row, action_mask: the trained ones)"
COMPACT = "minirl_lm.multiturn.env.action_view to compact the rows (scatter puts results back)"
GAE_ACTIONS, RETURNS_ACTIONS = (
    "minirl_lm.multiturn.values.gae_actions",
    "minirl_lm.multiturn.values.returns_actions",
)


_PREFIXES = padded("the critic (values over prefixes)", f"{GAE_ACTIONS} {ACTIONS}, or {COMPACT}")
_GAE = padded("GAE (a sum over the later tokens)", f"{GAE_ACTIONS} {ACTIONS}")
_RETURNS = padded("the returns to go (a sum over the later tokens)", f"{RETURNS_ACTIONS} {ACTIONS}")
_LAST_TOKEN = padded("the terminal reward on the last real token", COMPACT)
UNIT = number(0.0, 1.0)  # a discount gamma or GAE's lambda, in [0, 1]
STATES = array("B T", integer=True, low=0)  # state ids into the critic's table


def _states_in_table(states, values):
    """Every state id indexes the `(S,)` table."""
    if states.max() >= values.size:
        return f"states: expected ids < {values.size} (the table's size), got max {states.max()}"


CRITIC = dict(mask=MASK, values=array("S"), states=STATES)  # the mask first: it fixes (B, T)
ON_PREFIXES = [_PREFIXES, _states_in_table]
REWARDS = dict(mask=MASK, terminal_reward=array("B"), logp=TOKENS, logp_ref=TOKENS, beta=NONNEGATIVE)


@boundary(**REWARDS, where=[_LAST_TOKEN], returns="rewards")
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

    Raises:
        ValueError: a bad argument (named), or a non-finite reward (named after the function,
            with the range of its inputs).
    """
    u = log_ratio(logp, logp_ref, mask)  # (B, T), 0 at padding
    r = -beta * u  # (B, T) eq. (kl_shaped_reward)
    lengths = mask.sum(axis=1).astype(np.int64)  # (B,)
    rows = np.flatnonzero(lengths > 0)  # length 0: nothing at all
    r[rows, lengths[rows] - 1] += terminal_reward[rows]  # score at the last real token
    return r


@boundary(**CRITIC, rewards=TOKENS, gamma=UNIT, where=ON_PREFIXES, returns="deltas")
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

    Raises:
        ValueError: a bad argument (named), or a non-finite TD error (named after the function).
    """
    v = values[states] * mask  # (B, T) V(s_t), 0 at padding
    v_next = np.zeros_like(v)  # (B, T) V(s_{t+1})
    v_next[:, :-1] = v[:, 1:]  # 0 after the last real token
    return (rewards + gamma * v_next - v) * mask  # eq. (td_error)


def _discounted_sum(x, mask, c):
    """Eqs. (gae) and (mc_return) on read arrays: `out_t = x_t + c out_{t+1}`, 0 at padding."""
    out = np.zeros_like(x)  # (B, T)
    acc = np.zeros(x.shape[0])  # (B,) the sum from t+1 on
    for t in range(x.shape[1] - 1, -1, -1):  # right to left
        acc = (x[:, t] + c * acc) * mask[:, t]  # padding resets to 0
        out[:, t] = acc
    return out


@boundary(mask=MASK, deltas=TOKENS, gamma=UNIT, lam=UNIT, where=[_GAE], returns="advantages")
def gae(deltas, mask, gamma=1.0, lam=1.0):
    """GAE advantages `A_t = delta_t + gamma lam A_{t+1}`, eq. (gae) (not whitened).

    Args:
        deltas: `(B, T)` TD errors, from `td_errors`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.
        lam: GAE's `lambda`, in `[0, 1]`.

    Returns:
        `(B, T)` advantages, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a sum beyond float64 (named after the function).
    """
    return _discounted_sum(deltas * mask, mask, gamma * lam)  # eq. (gae)


@boundary(mask=MASK, rewards=TOKENS, gamma=UNIT, where=[_RETURNS], returns="returns")
def monte_carlo_returns(rewards, mask, gamma=1.0):
    """Monte-Carlo returns `G_t = r_t + gamma G_{t+1}`, eq. (mc_return).

    Args:
        rewards: `(B, T)` per-token rewards `r_t`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.

    Returns:
        `(B, T)` returns, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a sum beyond float64 (named after the function).
    """
    return _discounted_sum(rewards * mask, mask, gamma)  # eq. (mc_return)


@boundary(**CRITIC, targets=TOKENS, where=ON_PREFIXES, returns="loss dvalues")
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

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function).
    """
    M = max(mask.sum(), 1.0)  # real tokens
    err = (values[states] - targets) * mask  # (B, T) V(s_t) - target_t
    loss = 0.5 * np.sum(err * err) / M  # eq. (value_loss)
    dvalues = np.zeros_like(values)  # (S,)
    np.add.at(dvalues, states, err / M)  # d/dV(s_t) = err / M, scattered
    return float(loss), dvalues


FIT = dict(rewards=TOKENS, gamma=UNIT, lr=POSITIVE, target=one_of(("mc", "td0")))


@boundary(**CRITIC, **FIT, where=ON_PREFIXES, returns="new_values loss")
def fit_values(values, states, rewards, mask, *, gamma=1.0, lr=0.5, target="mc"):
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

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or step (a target beyond
            float64 makes the loss so), named after the function.
    """
    if target == "mc":
        y = monte_carlo_returns.core(rewards, mask, gamma)  # (B, T) eq. (mc_return)
    else:
        y = td_errors.core(values, states, rewards, mask, gamma) + values[states] * mask  # r + gamma V(s')
    loss, dvalues = value_loss.core(values, states, y, mask)  # eq. (value_loss)
    return values - lr * dvalues, loss


VALUE_CLIP = dict(mask=MASK, vpreds=TOKENS, values_old=TOKENS, clip=POSITIVE)


@boundary(**VALUE_CLIP, args={"returns": TOKENS}, where=[_PREFIXES], returns="loss dloss_dvpred")
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
        vpreds: `(B, T)` values predicted by the critic being trained.
        values_old: `(B, T)` values of the critic that scored the batch (data).
        returns: `(B, T)` targets G (data).
        mask: `(B, T)` 0/1 float mask, right-padded.
        clip: the range c, `> 0`.

    Returns:
        `(loss, dloss_dvpred)`: a float and the `(B, T)` gradient, 0 at padding; an all-padding
        batch gives `(0.0, 0)`. Scatter `dloss_dvpred` into a value table with
        `np.add.at(dvalues, states, d)`.

    Raises:
        ValueError: a bad argument (named), or a squared error beyond float64 (named after the
            function, with the range of its inputs).
    """
    G = returns  # (B, T) the targets
    M = max(mask.sum(), 1.0)
    v_clip = np.clip(vpreds, values_old - clip, values_old + clip)  # (B, T); a bound may be +-inf
    l1 = (vpreds - G) ** 2  # (B, T) unclipped
    l2 = (v_clip - G) ** 2  # (B, T) clipped
    loss = 0.5 * (np.maximum(l1, l2) * mask).sum() / M  # eq. (value_clip)
    dloss = np.where(l1 >= l2, vpreds - G, 0.0) * mask / M  # (B, T)
    return float(loss), dloss

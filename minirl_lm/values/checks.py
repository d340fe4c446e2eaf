"""The boundary of the values part: the bundles of `values/critic.py` (values over prefixes,
TD errors, GAE, the clipped value loss) and `values/optimum.py` (the tilted optimum, its tree
form, the exploit threshold). Built on `core/checks.py`; NumPy only."""

import numpy as np

from minirl_lm.core.checks import (
    COMPACT,
    GAE_HOLES,
    RETURNS_HOLES,
    callable_check,
    choice,
    float_array,
    float_scalar,
    int_array,
    mask_array,
    nonempty,
    prob_table,
)
from minirl_lm.core.validate import culprit, largest

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
    """A `(B, T)` array `name` to sum backwards under its right-padded mask, gamma and lam in
    [0, 1]."""
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

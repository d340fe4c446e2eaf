"""The boundary of the reward-model part: one bundle call per public function of `reward/bt.py`
and `reward/prm.py`, returning what the math trusts. Built on `core/checks.py` and the
multi-turn environment's duck type; NumPy only."""

import numpy as np

from minirl_lm.core.checks import (
    _duck,
    choice,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    prob_table,
)
from minirl_lm.multiturn.checks import MT_ATTRS, episodes


def _weights(weights, P):
    """`(P,)` nonnegative weights, `1/P` each (the mean) by default."""
    if weights is None:
        return np.full(P, 1.0 / P)
    w = float_array(weights, "weights", shape=(P,))
    if (w < 0).any():
        raise ValueError(f"weights: expected nonnegative weights, got min {w.min()}")
    return w


def _rewards(r, name, P=None):
    """`(P,)` rewards, `P >= 1`."""
    r = float_array(r, name, ndim=1, shape=None if P is None else (P,))
    if r.size == 0:
        raise ValueError(f"{name}: expected at least one entry, got shape (0,)")
    return r


def margin_args(r_chosen, r_rejected, margin, center, weights):
    """`bt_margin_loss`'s arguments: two `(P,)` rewards, the margins, the centering, weights."""
    r_c = _rewards(r_chosen, "r_chosen")
    r_r = _rewards(r_rejected, "r_rejected", r_c.size)
    m = np.zeros(r_c.size) if margin is None else float_array(margin, "margin", shape=r_c.shape)
    center = float_scalar(center, "center", low=0.0)
    return r_c, r_r, m, center, _weights(weights, r_c.size)


def _labels(label, P):
    y = float_array(label, "label", shape=(P,))
    if ((y < 0) | (y > 1)).any():
        raise ValueError(f"label: expected labels in [0, 1], got min {y.min()}, max {y.max()}")
    return y


def outcome_args(r, label, kind, weights):
    """`outcome_loss`'s arguments: `(P,)` scores, `(P,)` labels in [0, 1], the kind, weights."""
    r = _rewards(r, "r")
    y = _labels(label, r.size)
    choice(kind, "kind", {"bce", "squared"})
    return r, y, _weights(weights, r.size)


def _features(phi):
    phi = float_array(phi, "phi", ndim=3)
    if phi.size == 0:
        raise ValueError(f"phi: expected a non-empty (N, Y, F) feature array, got shape {phi.shape}")
    return phi


FIT = object()  # the `w` a fit passes: no weights yet


def _pairs(phi, prompt, chosen, rejected):
    N, Y, _ = phi.shape
    prompt = int_array(prompt, "prompt", ndim=1, low=0, high=N)
    chosen = int_array(chosen, "chosen", shape=prompt.shape, low=0, high=Y)
    rejected = int_array(rejected, "rejected", shape=prompt.shape, low=0, high=Y)
    if prompt.size == 0:
        raise ValueError("prompt: expected at least one pair, got shape (0,)")
    return prompt, chosen, rejected


def linear_bt_args(w, phi, prompt, chosen, rejected, margin, center, weights, l2):
    """`linear_bt_loss`'s (and `fit_bt`'s, `w=FIT`) arguments."""
    phi = _features(phi)
    if w is not FIT:
        w = float_array(w, "w", shape=(phi.shape[2],))
    prompt, chosen, rejected = _pairs(phi, prompt, chosen, rejected)
    P = prompt.size
    m = np.zeros(P) if margin is None else float_array(margin, "margin", shape=(P,))
    center = float_scalar(center, "center", low=0.0)
    l2 = float_scalar(l2, "l2", low=0.0)
    return w, phi, prompt, chosen, rejected, m, center, _weights(weights, P), l2


def linear_outcome_args(w, phi, prompt, response, label, kind, weights, l2):
    """`linear_outcome_loss`'s (and `fit_outcome`'s, `w=FIT`) arguments."""
    phi = _features(phi)
    if w is not FIT:
        w = float_array(w, "w", shape=(phi.shape[2],))
    N, Y, _ = phi.shape
    prompt = int_array(prompt, "prompt", ndim=1, low=0, high=N)
    response = int_array(response, "response", shape=prompt.shape, low=0, high=Y)
    if prompt.size == 0:
        raise ValueError("prompt: expected at least one response, got shape (0,)")
    y = _labels(label, prompt.size)
    choice(kind, "kind", {"bce", "squared"})
    l2 = float_scalar(l2, "l2", low=0.0)
    return w, phi, prompt, response, y, _weights(weights, prompt.size), l2


def fit_bt_args(phi, prompt, chosen, rejected, margin, center, weights, l2, iters):
    """`fit_bt`'s arguments: `linear_bt_loss`'s without `w`, and 1..10000 Newton steps."""
    out = linear_bt_args(FIT, phi, prompt, chosen, rejected, margin, center, weights, l2)[1:]
    return (*out, int_scalar(iters, "iters", low=1, high=10000))


def fit_outcome_args(phi, prompt, response, label, kind, weights, l2, iters):
    """`fit_outcome`'s arguments: `linear_outcome_loss`'s without `w`, and the Newton steps."""
    out = linear_outcome_args(FIT, phi, prompt, response, label, kind, weights, l2)[1:]
    return (*out, int_scalar(iters, "iters", low=1, high=10000))


def pair_law_args(reward, mu, mu0):
    """`bt_pair_law`'s arguments: `(N, Y)` rewards, `(N, Y)` response law, `(N,)` prompt law."""
    reward = float_array(reward, "reward", ndim=2)
    mu = prob_table(mu, "mu", shape=reward.shape)
    N = reward.shape[0]
    mu0 = np.full(N, 1.0 / N) if mu0 is None else prob_table(mu0, "mu0", shape=(N,))
    return reward, mu, mu0


def error_args(r_hat, reward):
    """Two `(N, Y)` reward tables of one shape."""
    reward = float_array(reward, "reward", ndim=2)
    if reward.size == 0:
        raise ValueError(f"reward: expected a non-empty (N, Y) table, got shape {reward.shape}")
    return float_array(r_hat, "r_hat", shape=reward.shape), reward


def features_args(N, Y):
    """Table sizes: `N * Y` features at most 10**6."""
    N = int_scalar(N, "N", low=1, high=10**6)
    return N, int_scalar(Y, "Y", low=1, high=10**6 // N)


# ---------------------------------------------------------------- process reward models


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

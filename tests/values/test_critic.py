"""The token-MDP view: TD errors, GAE identities, KL shaping, the tabular critic's loss and fit."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from minirl_lm.values.critic import (fit_values, gae, monte_carlo_returns, per_token_rewards,
                              td_errors, value_loss)
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy


def _rollout(seed=0, K=6, max_len=4):
    mdp = TokenMDP(prompts=[0, 1], V=3, eos=0, max_len=max_len)
    rng = np.random.default_rng(seed)
    policy = TabularPolicy(rng.normal(size=(mdp.S, 3)))
    ro = mdp.rollout(policy, K, rng)
    R = rng.normal(size=ro.mask.shape[0])                      # a terminal reward per response
    return mdp, policy, ro, R


def _oracle(values, states, rewards, mask, gamma, lam):
    """Per-response loops written straight from eqs. (td_error), (gae), (mc_return)."""
    B, T = mask.shape
    delta, A, G = np.zeros((B, T)), np.zeros((B, T)), np.zeros((B, T))
    for b in range(B):
        L = int(mask[b].sum())
        for t in range(L):
            v_next = values[states[b, t + 1]] if t + 1 < L else 0.0
            delta[b, t] = rewards[b, t] + gamma * v_next - values[states[b, t]]
        for t in reversed(range(L)):
            A[b, t] = delta[b, t] + (gamma * lam * A[b, t + 1] if t + 1 < L else 0.0)
            G[b, t] = rewards[b, t] + (gamma * G[b, t + 1] if t + 1 < L else 0.0)
    return delta, A, G


@pytest.mark.parametrize("gamma,lam", [(1.0, 1.0), (0.9, 0.95), (1.0, 0.0), (0.5, 0.3)])
def test_td_gae_and_returns_match_the_loop_oracle(gamma, lam):
    mdp, _, ro, R = _rollout()
    assert (ro.lengths < ro.mask.shape[1]).any() and (ro.lengths == ro.mask.shape[1]).any()
    values = np.random.default_rng(1).normal(size=mdp.S)
    rng = np.random.default_rng(2)
    rewards = per_token_rewards(R, rng.normal(size=ro.mask.shape) * ro.mask,
                                rng.normal(size=ro.mask.shape) * ro.mask, ro.mask, 0.1)
    delta = td_errors(values, ro.states, rewards, ro.mask, gamma)
    A = gae(delta, ro.mask, gamma, lam)
    G = monte_carlo_returns(rewards, ro.mask, gamma)
    d0, A0, G0 = _oracle(values, ro.states, rewards, ro.mask, gamma, lam)
    assert max(np.abs(delta - d0).max(), np.abs(A - A0).max(), np.abs(G - G0).max()) < 1e-13


def test_gae_lam1_is_returns_minus_values_and_lam0_is_the_td_error():
    mdp, _, ro, R = _rollout(3)
    values = np.random.default_rng(4).normal(size=mdp.S)
    rewards = per_token_rewards(R, ro.mask * 0, ro.mask * 0, ro.mask, 0.0)
    for gamma in (1.0, 0.8):
        delta = td_errors(values, ro.states, rewards, ro.mask, gamma)
        G = monte_carlo_returns(rewards, ro.mask, gamma)
        A1 = gae(delta, ro.mask, gamma, 1.0)                   # the sum telescopes
        assert np.abs(A1 - (G - values[ro.states] * ro.mask)).max() < 1e-13
        np.testing.assert_array_equal(gae(delta, ro.mask, gamma, 0.0), delta)


def test_bandit_view_every_token_gets_the_terminal_reward():
    """V = 0, gamma = lam = 1, terminal reward only: A_t = R(x, y) at every real token, exactly."""
    mdp, _, ro, R = _rollout(5)
    rewards = per_token_rewards(R, np.zeros(ro.mask.shape), np.zeros(ro.mask.shape), ro.mask, 0.3)
    delta = td_errors(np.zeros(mdp.S), ro.states, rewards, ro.mask, 1.0)
    A = gae(delta, ro.mask, 1.0, 1.0)
    np.testing.assert_array_equal(A, R[:, None] * ro.mask)


def _spread(A, mask):
    # the largest within-response range of advantages over real tokens
    lo = np.where(mask > 0, A, np.inf).min(1)
    hi = np.where(mask > 0, A, -np.inf).max(1)
    return np.max(np.where(mask.sum(1) > 0, hi - lo, 0.0))


def test_token_view_differs_with_a_critic_lam_below_one_gamma_below_one_or_kl_shaping():
    mdp, policy, ro, R = _rollout(6)
    z = np.zeros(ro.mask.shape)
    terminal = per_token_rewards(R, z, z, ro.mask, 0.0)
    V0 = np.zeros(mdp.S)
    base = gae(td_errors(V0, ro.states, terminal, ro.mask), ro.mask, 1.0, 1.0)
    assert _spread(base, ro.mask) == 0.0                       # the bandit view
    V = np.random.default_rng(7).normal(size=mdp.S)
    assert _spread(gae(td_errors(V, ro.states, terminal, ro.mask), ro.mask, 1.0, 1.0), ro.mask) > 0.1
    assert _spread(gae(td_errors(V0, ro.states, terminal, ro.mask), ro.mask, 1.0, 0.5), ro.mask) > 0.1
    assert _spread(gae(td_errors(V0, ro.states, terminal, ro.mask, 0.5), ro.mask, 0.5, 1.0),
                   ro.mask) > 0.1
    logp, _ = policy.logp(ro.states, ro.tokens, ro.mask)
    shaped = per_token_rewards(R, logp, z, ro.mask, 0.2)      # a logp_ref of 0: any nonzero KL
    assert _spread(gae(td_errors(V0, ro.states, shaped, ro.mask), ro.mask, 1.0, 1.0), ro.mask) > 0.1


def test_per_token_rewards_fold_the_kl_and_skip_empty_responses():
    mask = np.array([[1, 1, 1.], [1, 0, 0], [0, 0, 0]])
    logp = np.array([[-1, -2, -0.5], [-3, 0, 0], [0, 0, 0]])
    ref = np.array([[-1.5, -1, -0.5], [-2, 0, 0], [0, 0, 0]])
    r = per_token_rewards([2.0, -1.0, 5.0], logp, ref, mask, 0.5)
    np.testing.assert_allclose(r, [[-0.25, 0.5, 2.0], [-1.0 + 0.5, 0, 0], [0, 0, 0]], atol=1e-15)
    # summed over tokens: R - beta * sum_t (logp - logp_ref), the KL folded into the reward
    np.testing.assert_allclose(r.sum(1), [2.0 - 0.5 * -0.5, -1.0 - 0.5 * -1.0, 0.0], atol=1e-15)


FD_TOL = 1e-8   # central differences, h = 1e-6, float64


def test_value_loss_gradient_matches_finite_differences():
    mdp, _, ro, R = _rollout(8)
    values = np.random.default_rng(9).normal(size=mdp.S)
    G = monte_carlo_returns(per_token_rewards(R, ro.mask * 0, ro.mask * 0, ro.mask, 0), ro.mask)
    _, g = value_loss(values, ro.states, G, ro.mask)
    fd = np.zeros(mdp.S)
    for s in range(mdp.S):
        e = np.zeros(mdp.S)
        e[s] = 1e-6
        fd[s] = (value_loss(values + e, ro.states, G, ro.mask)[0]
                 - value_loss(values - e, ro.states, G, ro.mask)[0]) / 2e-6
    assert np.abs(g - fd).max() < FD_TOL
    assert value_loss(values, ro.states, G, ro.mask * 0) == (0.0, pytest.approx(np.zeros(mdp.S)))


def test_fit_values_mc_converges_to_the_mean_return_per_state_and_td0_step_is_semi_gradient():
    mdp, _, ro, R = _rollout(10, K=20)
    rewards = per_token_rewards(R, ro.mask * 0, ro.mask * 0, ro.mask, 0.0)
    G = monte_carlo_returns(rewards, ro.mask)
    m = ro.mask > 0
    count = np.bincount(ro.states[m], minlength=mdp.S)
    mean_G = np.bincount(ro.states[m], G[m], minlength=mdp.S) / np.maximum(count, 1)
    V = np.zeros(mdp.S)
    for _ in range(3000):
        V, _ = fit_values(V, ro.states, rewards, ro.mask, 1.0, lr=float(m.sum()) / count.max())
    assert np.abs((V - mean_G)[count > 0]).max() < 1e-10
    # TD(0): the target r_t + gamma V(s_{t+1}) is held fixed
    V0 = np.random.default_rng(11).normal(size=mdp.S)
    target = td_errors(V0, ro.states, rewards, ro.mask) + V0[ro.states] * ro.mask
    V1, loss = fit_values(V0, ro.states, rewards, ro.mask, 1.0, lr=0.3, target="td0")
    l_ref, g_ref = value_loss(V0, ro.states, target, ro.mask)
    assert loss == l_ref and np.array_equal(V1, V0 - 0.3 * g_ref)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_gae_is_linear_and_zero_at_padding(seed, gamma, lam):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, size=5)
    mask = (np.arange(5)[None, :] < lengths[:, None]).astype(float)
    d1, d2 = rng.normal(size=(2, 5, 5))
    A = gae(d1 + 2 * d2, mask, gamma, lam)
    assert np.abs(A - (gae(d1, mask, gamma, lam) + 2 * gae(d2, mask, gamma, lam))).max() < 1e-12
    assert (A[mask == 0] == 0).all()


# ---------------------------------------------------------------- bad input

M = np.array([[1, 1, 0.], [1, 0, 0]])
S2 = np.zeros((2, 3), np.int64)
Z = np.zeros((2, 3))
V3 = np.zeros(3)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: td_errors(V3, S2 + 3, Z, M), ValueError, "states"),
    (lambda: td_errors(V3, S2.astype(float), Z, M), TypeError, "states"),
    (lambda: td_errors(V3, S2, Z, [[0, 1, 1.], [1, 0, 0]]), ValueError, "mask"),
    (lambda: td_errors(V3, S2, np.zeros((2, 2)), M), ValueError, "rewards"),
    (lambda: td_errors(V3, S2, Z, M, gamma=1.5), ValueError, "gamma"),
    (lambda: td_errors(np.zeros((3, 1)), S2, Z, M), ValueError, "values"),
    (lambda: gae(Z, M, 1.0, lam=-0.1), ValueError, "lam"),
    (lambda: gae(np.zeros(3), M, 1.0, 1.0), ValueError, "deltas"),
    (lambda: gae(Z, M * 2, 1.0, 1.0), ValueError, "mask"),
    (lambda: monte_carlo_returns([[np.nan, 0, 0], [0, 0, 0]], M), ValueError, "rewards"),
    (lambda: monte_carlo_returns(Z, M, gamma="1"), TypeError, "gamma"),
    (lambda: per_token_rewards(np.zeros(3), Z, Z, M, 0.1), ValueError, "terminal_reward"),
    (lambda: per_token_rewards(np.zeros(2), Z, Z, M, -0.1), ValueError, "beta"),
    (lambda: per_token_rewards(np.zeros(2), Z, np.zeros((3, 3)), M, 0.1), ValueError, "logp_ref"),
    (lambda: value_loss(V3, S2, np.zeros((1, 3)), M), ValueError, "targets"),
    (lambda: fit_values(V3, S2, Z, M, target="td1"), ValueError, "target"),
    (lambda: fit_values(V3, S2, Z, M, lr=0.0), ValueError, "lr"),
])
def test_bad_input_is_rejected_with_the_argument_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------- an overflow names its driver

from minirl_lm.values.critic import clipped_value_loss  # noqa: E402

from quiet import overflow, raises  # noqa: E402

ONE = [[1.0]]


@pytest.mark.parametrize("vpreds, values_old, returns, arg", [
    ([[0.0]], [[0.0]], [[1e308]], "returns"),          # (0 - 1e308)^2: both squares overflow
    ([[0.0]], [[1e308]], [[0.0]], "values_old"),       # v_clip = 1e308 - 0.5: the clipped one
    ([[1e308]], [[0.0]], [[0.0]], "vpreds"),
    # each square 1e308 is finite, their sum over two tokens is not
    ([[1e154, 1e154]], [[1e154, 1e154]], [[0.0, 0.0]], "vpreds"),
])
def test_clipped_value_loss_overflow_names_its_largest_input(vpreds, values_old, returns, arg):
    mask = np.ones(np.shape(vpreds))
    msg = raises(ValueError, lambda: clipped_value_loss(vpreds, values_old, returns, mask, 0.5))
    assert msg == f"{arg}: the squared value error overflows float64"


def test_per_token_rewards_overflow_of_beta_times_a_huge_log_ratio_names_logp():
    # u = -1e308 (finite), r = -2 u = 2e308: logp drove it, beta is 2
    msg = raises(ValueError, lambda: per_token_rewards([0.0], [[-1e308]], [[0.0]], ONE, 2.0))
    assert msg == overflow("logp", "beta (logp - logp_ref)")


def test_td_errors_overflow_driven_by_the_rewards_names_them():
    # delta_1 = 1.7e308 + V(s_2) = 1.7e308 + 1e308 = inf, V(s_1) = 0
    msg = raises(ValueError, lambda: td_errors([0.0, 1e308], [[0, 1]], [[1.7e308, 0.0]],
                                               [[1.0, 1.0]]))
    assert msg.startswith("rewards: ") and "delta = r + gamma V(s') - V(s)" in msg


def test_value_loss_overflow_driven_by_the_values_names_them():
    # err = 1e200 - 0: err^2 = 1e400, the value 1e200 drove it
    msg = raises(ValueError, lambda: value_loss([1e200], [[0]], [[0.0]], ONE))
    assert msg.startswith("values: ") and "the squared error (V(s) - target)^2" in msg

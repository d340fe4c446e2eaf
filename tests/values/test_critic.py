"""The token-MDP view: TD errors, GAE identities, KL shaping, the tabular critic's loss and fit,
PPO's clipped value loss; every overflow a ValueError naming its driver with no warning first,
every argument check named, per-token rewards 0 at padding, the value loss averaged over exactly
one real token, and the public defaults (gamma, lam, lr, target) against hand-computed steps."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck import fd_grad
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.values import critic
from minirl_lm.values.critic import (
    clipped_value_loss,
    fit_values,
    gae,
    monte_carlo_returns,
    per_token_rewards,
    td_errors,
    value_loss,
)
from quiet import raises, silent


def _rollout(seed=0, K=6, max_len=4):
    mdp = TokenMDP(prompts=[0, 1], V=3, eos=0, max_len=max_len)
    rng = np.random.default_rng(seed)
    policy = TabularPolicy(rng.normal(size=(mdp.S, 3)))
    ro = mdp.rollout(policy, K, rng)
    R = rng.normal(size=ro.mask.shape[0])  # a terminal reward per response
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
    rewards = per_token_rewards(
        R, rng.normal(size=ro.mask.shape) * ro.mask, rng.normal(size=ro.mask.shape) * ro.mask, ro.mask, 0.1
    )
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
        A1 = gae(delta, ro.mask, gamma, 1.0)  # the sum telescopes
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
    assert _spread(base, ro.mask) == 0.0  # the bandit view
    V = np.random.default_rng(7).normal(size=mdp.S)
    assert _spread(gae(td_errors(V, ro.states, terminal, ro.mask), ro.mask, 1.0, 1.0), ro.mask) > 0.1
    assert _spread(gae(td_errors(V0, ro.states, terminal, ro.mask), ro.mask, 1.0, 0.5), ro.mask) > 0.1
    assert _spread(gae(td_errors(V0, ro.states, terminal, ro.mask, 0.5), ro.mask, 0.5, 1.0), ro.mask) > 0.1
    logp, _ = policy.logp(ro.states, ro.tokens, ro.mask)
    shaped = per_token_rewards(R, logp, z, ro.mask, 0.2)  # a logp_ref of 0: any nonzero KL
    assert _spread(gae(td_errors(V0, ro.states, shaped, ro.mask), ro.mask, 1.0, 1.0), ro.mask) > 0.1


def test_per_token_rewards_fold_the_kl_and_skip_empty_responses():
    mask = np.array([[1, 1, 1.0], [1, 0, 0], [0, 0, 0]])
    logp = np.array([[-1, -2, -0.5], [-3, 0, 0], [0, 0, 0]])
    ref = np.array([[-1.5, -1, -0.5], [-2, 0, 0], [0, 0, 0]])
    r = per_token_rewards([2.0, -1.0, 5.0], logp, ref, mask, 0.5)
    np.testing.assert_allclose(r, [[-0.25, 0.5, 2.0], [-1.0 + 0.5, 0, 0], [0, 0, 0]], atol=1e-15)
    # summed over tokens: R - beta * sum_t (logp - logp_ref), the KL folded into the reward
    np.testing.assert_allclose(r.sum(1), [2.0 - 0.5 * -0.5, -1.0 - 0.5 * -1.0, 0.0], atol=1e-15)


FD_TOL = 1e-8  # central differences, h = 1e-6, float64


def test_value_loss_gradient_matches_finite_differences():
    mdp, _, ro, R = _rollout(8)
    values = np.random.default_rng(9).normal(size=mdp.S)
    G = monte_carlo_returns(per_token_rewards(R, ro.mask * 0, ro.mask * 0, ro.mask, 0), ro.mask)
    _, g = value_loss(values, ro.states, G, ro.mask)
    fd = np.zeros(mdp.S)
    for s in range(mdp.S):
        e = np.zeros(mdp.S)
        e[s] = 1e-6
        fd[s] = (
            value_loss(values + e, ro.states, G, ro.mask)[0] - value_loss(values - e, ro.states, G, ro.mask)[0]
        ) / 2e-6
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
        V, _ = fit_values(V, ro.states, rewards, ro.mask, gamma=1.0, lr=float(m.sum()) / count.max())
    assert np.abs((V - mean_G)[count > 0]).max() < 1e-10
    # TD(0): the target r_t + gamma V(s_{t+1}) is held fixed
    V0 = np.random.default_rng(11).normal(size=mdp.S)
    target = td_errors(V0, ro.states, rewards, ro.mask) + V0[ro.states] * ro.mask
    V1, loss = fit_values(V0, ro.states, rewards, ro.mask, gamma=1.0, lr=0.3, target="td0")
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

M = np.array([[1, 1, 0.0], [1, 0, 0]])
S2 = np.zeros((2, 3), np.int64)
Z = np.zeros((2, 3))
V3 = np.zeros(3)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: td_errors(V3, S2 + 3, Z, M), ValueError, "states"),
        (lambda: td_errors(V3, S2.astype(float), Z, M), TypeError, "states"),
        (lambda: td_errors(V3, S2, Z, [[0, 1, 1.0], [1, 0, 0]]), ValueError, "mask"),
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
    ],
)
def test_bad_input_is_rejected_with_the_argument_named(call, exc, match):
    msg = raises(exc, call)
    assert msg.startswith(match if ":" in match else f"{match}: ")


# ---- folded from tests/test_mutation_kills.py ------------------------------------------------


def test_clipped_value_loss_one_token_and_one_sided_overflow():
    loss, d = critic.clipped_value_loss([[2.0, 9.0]], [[1.0, 9.0]], [[0.0, 0.0]], [[1.0, 0.0]], 0.5)
    # v_clip = 1.5; max((2 - 0)^2, (1.5 - 0)^2) = 4 over M = 1 token
    assert loss == 2.0
    np.testing.assert_array_equal(d, [[2.0, 0.0]])
    with np.errstate(over="ignore"), pytest.raises(ValueError) as e:  # only l1 overflows
        critic.clipped_value_loss([[1e200]], [[0.0]], [[0.0]], [[1.0]], 0.2)
    assert overflowed(str(e.value), "clipped_value_loss")


def test_clipped_value_loss_overflow_raises_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:  # (1e200)^2 = inf
            critic.clipped_value_loss([[1e200]], [[0.0]], [[0.0]], [[1.0]], 0.2)
        assert overflowed(str(e.value), "clipped_value_loss")
        # the lower bound v_old - clip = -1e308 - 1e308 overflows to -inf: harmless, v = 0 is
        # inside [-inf, 0], both errors are 0
        loss, d = critic.clipped_value_loss([[0.0]], [[-1e308]], [[0.0]], [[1.0]], 1e308)
    assert loss == 0.0 and np.array_equal(d, [[0.0]])


# ---- folded from tests/test_framework_estimators.py ------------------------------------------


def masks(rng, B, T, empty=True):
    L = rng.integers(1, T + 1, size=B)
    if empty:
        L[0] = 0
    L[-1] = T
    return (np.arange(T)[None, :] < L[:, None]).astype(float), L


def test_clipped_value_loss_gradient_and_verl_definition():
    rng = np.random.default_rng(9)
    mask, _ = masks(rng, 6, 5)
    v_old = rng.normal(size=mask.shape)
    G = rng.normal(size=mask.shape)
    v = v_old + rng.uniform(-1, 1, size=mask.shape)
    c = 0.3
    # keep away from kinks (|v - v_old| = c) and ties, where the loss has no derivative
    v = np.where(np.abs(np.abs(v - v_old) - c) < 1e-3, v + 0.01, v)
    loss, d = critic.clipped_value_loss(v, v_old, G, mask, c)
    np.testing.assert_allclose(
        d, fd_grad(lambda x: critic.clipped_value_loss(x, v_old, G, mask, c)[0], v), rtol=0, atol=1e-9
    )
    vc = np.clip(v, v_old - c, v_old + c)  # verl compute_value_loss, token-mean
    want = 0.5 * (np.maximum((v - G) ** 2, (vc - G) ** 2) * mask).sum() / mask.sum()
    assert abs(loss - want) < 1e-15
    assert (d[(mask > 0) & ((vc - G) ** 2 > (v - G) ** 2)] == 0).all()


def test_clipped_value_loss_edges():
    z = np.zeros((2, 2))
    loss, d = critic.clipped_value_loss(z, z, z + 1, z, 0.5)  # all padding
    assert loss == 0.0 and not d.any()
    with pytest.raises(ValueError, match="^clip"):
        critic.clipped_value_loss(z, z, z, np.ones((2, 2)), 0.0)
    with pytest.raises(ValueError, match="^returns"):
        critic.clipped_value_loss(z, z, np.zeros((2, 3)), np.ones((2, 2)), 0.5)


# ---------------------------------------------------------------- an overflow names the function


def overflow(fname):
    """The start of the engine's one result check: the function named."""
    return f"{fname}: expected a finite "


def overflowed(msg, fname, kind="inf"):
    """The engine's one result check: the function named, the results came out `kind`."""
    return msg.startswith(f"{fname}: expected a finite ") and f", got {kind} (beyond float64) from " in msg


ONE = [[1.0]]


@pytest.mark.parametrize(
    "vpreds, values_old, returns, arg",
    [
        ([[0.0]], [[0.0]], [[1e308]], "returns"),  # (0 - 1e308)^2: both squares overflow
        ([[0.0]], [[1e308]], [[0.0]], "values_old"),  # v_clip = 1e308 - 0.5: the clipped one
        ([[1e308]], [[0.0]], [[0.0]], "vpreds"),
        # each square 1e308 is finite, their sum over two tokens is not
        ([[1e154, 1e154]], [[1e154, 1e154]], [[0.0, 0.0]], "vpreds"),
    ],
)
def test_clipped_value_loss_overflow_names_its_largest_input(vpreds, values_old, returns, arg):
    mask = np.ones(np.shape(vpreds))
    msg = raises(ValueError, lambda: clipped_value_loss(vpreds, values_old, returns, mask, 0.5))
    assert overflowed(msg, "clipped_value_loss")


def test_per_token_rewards_overflow_of_beta_times_a_huge_log_ratio_names_logp():
    # u = -1e308 (finite), r = -2 u = 2e308: logp drove it, beta is 2
    msg = raises(ValueError, lambda: per_token_rewards([0.0], [[-1e308]], [[0.0]], ONE, 2.0))
    assert overflowed(msg, "per_token_rewards")


def test_td_errors_overflow_driven_by_the_rewards_names_them():
    # delta_1 = 1.7e308 + V(s_2) = 1.7e308 + 1e308 = inf, V(s_1) = 0
    msg = raises(ValueError, lambda: td_errors([0.0, 1e308], [[0, 1]], [[1.7e308, 0.0]], [[1.0, 1.0]]))
    assert overflowed(msg, "td_errors") and "rewards in [0, 1.7e+308]" in msg


def test_value_loss_overflow_driven_by_the_values_names_them():
    # err = 1e200 - 0: err^2 = 1e400, the value 1e200 drove it
    msg = raises(ValueError, lambda: value_loss([1e200], [[0]], [[0.0]], ONE))
    assert overflowed(msg, "value_loss") and "values in [1e+200, 1e+200]" in msg


# ---------------------------------------------------------------- folded from tests/test_kills_critic.py

# ---------------------------------------------------------------- overflow: one input per call site

OVERFLOW = [
    # u = logp - logp_ref = -1e308 - 1e308 = -2e308 > max float: -inf
    (
        "per_token_rewards logp",
        lambda: per_token_rewards([0.0], [[-1e308]], [[1e308]], [[1.0]], 1.0),
        overflow("per_token_rewards"),
    ),
    # u = -100 (finite); r = -1e307 * -100 = 1e309: inf
    (
        "per_token_rewards beta",
        lambda: per_token_rewards([0.0], [[-100.0]], [[0.0]], [[1.0]], 1e307),
        overflow("per_token_rewards"),
    ),
    # u = 0 - (-1e308) = 1e308, r = -1e308 (finite); r + R = -1e308 + -1e308 = -2e308: -inf
    (
        "per_token_rewards terminal_reward",
        lambda: per_token_rewards([-1e308], [[0.0]], [[-1e308]], [[1.0]], 1.0),
        overflow("per_token_rewards"),
    ),
    # delta = 1e308 + 1 * 0 - (-1e308) = 2e308: inf
    (
        "td_errors",
        lambda: td_errors([-1e308], [[0]], [[1e308]], [[1.0]]),
        overflow("td_errors"),
    ),
    # A_2 = 1e308, A_1 = 1e308 + 1 * 1 * 1e308 = 2e308: inf
    ("gae", lambda: gae([[1e308, 1e308]], [[1.0, 1.0]]), overflow("gae")),
    # G_2 = 1e308, G_1 = 1e308 + 1 * 1e308 = 2e308: inf
    (
        "monte_carlo_returns",
        lambda: monte_carlo_returns([[1e308, 1e308]], [[1.0, 1.0]]),
        overflow("monte_carlo_returns"),
    ),
    # err = 1e308 - (-1e308) = 2e308: inf, and so is the loss
    (
        "value_loss",
        lambda: value_loss([1e308], [[0]], [[-1e308]], [[1.0]]),
        overflow("value_loss"),
    ),
    # err = 1e200 - 0 (finite); err^2 = 1e400: the loss is inf, driven by the value 1e200
    (
        "value_loss square",
        lambda: value_loss([1e200], [[0]], [[0.0]], [[1.0]]),
        overflow("value_loss"),
    ),
    # the Monte-Carlo target G_1 = 1e308 + 1e308 = 2e308: inf
    (
        "fit_values targets",
        lambda: fit_values([0.0], [[0, 0]], [[1e308, 1e308]], [[1.0, 1.0]]),
        overflow("fit_values"),
    ),
    # the TD(0) target r_1 + V(s_2) = 1e308 + 1e308 = 2e308: inf
    (
        "fit_values td0 targets",
        lambda: fit_values([1e308], [[0, 0]], [[1e308, 0.0]], [[1.0, 1.0]], target="td0"),
        overflow("fit_values"),
    ),
    # target G = -1e308 (finite); err = 1e308 - (-1e308) = 2e308: inf
    (
        "fit_values squared error",
        lambda: fit_values([1e308], [[0]], [[-1e308]], [[1.0]]),
        overflow("fit_values"),
    ),
    # err = 0 - 1e100, M = 1, dvalues = -1e100; lr * dvalues = -1e400: new value +inf
    (
        "fit_values lr",
        lambda: fit_values([0.0], [[0]], [[1e100]], [[1.0]], lr=1e300),
        overflow("fit_values"),
    ),
]


@pytest.mark.parametrize("label, call, message", OVERFLOW, ids=[o[0] for o in OVERFLOW])
def test_overflow_raises_a_value_error_naming_its_driver_and_no_warning(label, call, message):
    msg = raises(ValueError, call)
    assert msg.startswith(message) and overflowed(msg, message.split(":")[0]), msg


def test_overflow_message_sample():
    assert (
        raises(ValueError, OVERFLOW[0][1]).split(" from ")[0]
        == "per_token_rewards: expected a finite rewards, got inf (beyond float64)"
    )


def test_value_loss_overflow_at_a_padding_entry_is_a_nan_namedsilent():
    # the real token: err = 1e308 - 1e308 = 0; the padding token: V - target = 1e308 + 1e308
    # overflows to inf, times mask 0 gives NaN (an invalid operation), and the loss is NaN
    msg = raises(ValueError, lambda: value_loss([1e308], [[0, 0]], [[1e308, -1e308]], [[1.0, 0.0]]))
    assert overflowed(msg, "value_loss", "NaN")


# ---------------------------------------------------------------- argument checks, exact messages

MASK_MSG = "mask: expected only 0 and 1, got value 0.5"

BAD = [
    ("per_token_rewards mask", lambda: per_token_rewards([0.0], [[0.0]], [[0.0]], [[0.5]], 0.1), MASK_MSG),
    ("td_errors mask", lambda: td_errors([0.0], [[0]], [[0.0]], [[0.5]]), MASK_MSG),
    ("value_loss mask", lambda: value_loss([0.0], [[0]], [[0.0]], [[0.5]]), MASK_MSG),
    ("fit_values mask", lambda: fit_values([0.0], [[0]], [[0.0]], [[0.5]]), MASK_MSG),
    ("gae mask", lambda: gae([[0.0]], [[0.5]]), MASK_MSG),
    ("monte_carlo_returns mask", lambda: monte_carlo_returns([[0.0]], [[0.5]]), MASK_MSG),
    ("clipped_value_loss mask", lambda: clipped_value_loss([[0.0]], [[0.0]], [[0.0]], [[0.5]], 0.5), MASK_MSG),
    # states of the wrong shape: the id check names the shape the mask fixes
    (
        "td_errors states shape",
        lambda: td_errors([0.0, 0.0, 0.0], np.zeros(3, np.int64), np.zeros((2, 3)), np.ones((2, 3))),
        "states: expected shape (2, 3), got (3,)",
    ),
    (
        "value_loss states shape",
        lambda: value_loss([0.0], np.zeros((1, 2), np.int64), np.zeros((2, 1)), np.ones((2, 1))),
        "states: expected shape (2, 1), got (1, 2)",
    ),
    (
        "fit_values states shape",
        lambda: fit_values([0.0], np.zeros((2, 2), np.int64), np.zeros((2, 1)), np.ones((2, 1))),
        "states: expected shape (2, 1), got (2, 2)",
    ),
]


@pytest.mark.parametrize("label, call, message", BAD, ids=[b[0] for b in BAD])
def test_bad_argument_message_names_the_argument(label, call, message):
    arg, rest = message.split(": ", 1)
    msg = raises(ValueError, call)
    assert msg.split(", got")[0] == message.split(", got")[0]


def test_bad_argument_message_samples():
    assert raises(ValueError, BAD[0][1]) == "mask: expected only 0 and 1, got value 0.5"
    assert raises(ValueError, BAD[-1][1]) == "states: expected shape (2, 1), got (2, 2)"


# ---------------------------------------------------------------- per-token rewards at padding


def test_per_token_rewards_are_zero_at_padding_whatever_the_logps_there():
    # real token: r = -beta (logp - logp_ref) + R = -2 * (-1 - (-2)) + 0.5 = -2 + 0.5 = -1.5;
    # padding: 0 although logp - logp_ref = -5 - 3 = -8 there
    r = per_token_rewards([0.5], [[-1.0, -5.0]], [[-2.0, 3.0]], [[1.0, 0.0]], 2.0)
    assert np.array_equal(r, [[-1.5, 0.0]])


def test_per_token_rewards_ignore_an_overflowing_difference_at_padding():
    # logp - logp_ref = -1e308 - 1e308 would overflow, but only at padding: never computed
    r = silent(lambda: per_token_rewards([1.0], [[0.0, -1e308]], [[0.0, 1e308]], [[1.0, 0.0]], 1.0))
    assert np.array_equal(r, [[1.0, 0.0]])


# ---------------------------------------------------------------- value loss over one real token


def test_value_loss_averages_over_exactly_one_real_token():
    # M = 1; err = 3 - 1 = 2; loss = 0.5 * 2^2 / 1 = 2.0; dV[0] = 2 / 1 = 2.0
    loss, d = value_loss([3.0], [[0]], [[1.0]], [[1.0]])
    assert loss == 2.0 and np.array_equal(d, [2.0])
    # a padding token does not count: the same numbers
    loss, d = value_loss([3.0], [[0, 0]], [[1.0, 7.0]], [[1.0, 0.0]])
    assert loss == 2.0 and np.array_equal(d, [2.0])


# ---------------------------------------------------------------- fit_values defaults

FV_V = [0.0, 4.0]
FV_S = [[0, 1]]
FV_R = [[1.0, 2.0]]
FV_M = [[1.0, 1.0]]


def test_fit_values_default_lr_is_one_half():
    # one token, V = 3, r = 1: G = 1, err = 2, M = 1, loss = 0.5 * 4 = 2, dV = 2
    # lr = 0.5: 3 - 0.5 * 2 = 2.0; lr = 1.0: 3 - 1 * 2 = 1.0
    new, loss = fit_values([3.0], [[0]], [[1.0]], [[1.0]])
    assert np.array_equal(new, [2.0]) and loss == 2.0
    new_half, _ = fit_values([3.0], [[0]], [[1.0]], [[1.0]], lr=0.5)
    assert np.array_equal(new_half, new)
    new_one, _ = fit_values([3.0], [[0]], [[1.0]], [[1.0]], lr=1.0)
    assert np.array_equal(new_one, [1.0])


def test_fit_values_mc_target_is_the_default_and_differs_from_td0():
    # mc: G = [1 + 2, 2] = [3, 2]; err = V - G = [0 - 3, 4 - 2] = [-3, 2], M = 2
    #     loss = 0.5 * (9 + 4) / 2 = 3.25; dV = [-1.5, 1.0]; new = V - 0.5 dV = [0.75, 3.5]
    new, loss = fit_values(FV_V, FV_S, FV_R, FV_M)
    assert loss == 3.25 and np.array_equal(new, [0.75, 3.5])
    new_mc, loss_mc = fit_values(FV_V, FV_S, FV_R, FV_M, target="mc")
    assert loss_mc == loss and np.array_equal(new_mc, new)
    # td0: target = [r_1 + V(s_2), r_2 + 0] = [1 + 4, 2] = [5, 2]; err = [-5, 2]
    #      loss = 0.5 * (25 + 4) / 2 = 7.25; dV = [-2.5, 1.0]; new = [1.25, 3.5]
    new_td, loss_td = fit_values(FV_V, FV_S, FV_R, FV_M, target="td0")
    assert loss_td == 7.25 and np.array_equal(new_td, [1.25, 3.5])


# ---------------------------------------------------------------- PPO's clipped value loss


def test_clipped_value_loss_hand_values_both_branches_and_padding():
    # c = 0.5, M = 4 real tokens (the fifth is padding holding junk); v_clip = clip(v, v_old -+ c)
    # token 1: v = 2, v_old = 1, G = 0: v_clip = 1.5, squares 4 >= 2.25: unclipped, grad 2 / M
    # token 2: v = 0, v_old = 1, G = 3: v_clip = 0.5, squares 9 >= 6.25: unclipped, grad -3 / M
    # token 3: v = 2, v_old = 0, G = 4: v_clip = 0.5 (the upper bound), 4 < 12.25: clipped, 0
    # token 4: v = -1, v_old = 0, G = -3: v_clip = -0.5 (the lower bound), 4 < 6.25: clipped, 0
    v = [[2.0, 0.0, 2.0, -1.0, 9.0]]
    v_old = [[1.0, 1.0, 0.0, 0.0, 9.0]]
    G = [[0.0, 3.0, 4.0, -3.0, -9.0]]
    mask = [[1.0, 1.0, 1.0, 1.0, 0.0]]
    loss, d = clipped_value_loss(v, v_old, G, mask, 0.5)
    assert loss == 0.5 * (4.0 + 9.0 + 12.25 + 6.25) / 4
    np.testing.assert_array_equal(d, [[2.0 / 4, -3.0 / 4, 0.0, 0.0, 0.0]])


def test_clipped_value_loss_over_one_real_token_and_over_none():
    # M = 1: loss = 0.5 (2 - 0)^2 / 1 = 2, grad 2 / 1 (v inside the band)
    loss, d = clipped_value_loss([[2.0, 5.0]], [[2.0, 0.0]], [[0.0, 0.0]], [[1.0, 0.0]], 0.5)
    assert loss == 2.0 and np.array_equal(d, [[2.0, 0.0]])
    loss, d = clipped_value_loss([[2.0]], [[2.0]], [[0.0]], [[0.0]], 0.5)  # all padding
    assert loss == 0.0 and np.array_equal(d, [[0.0]])


def test_clipped_value_loss_overflow_at_padding_is_named_silently():
    # the padding token's square (1e308)^2 is inf, times mask 0 NaN: an error, no warning
    msg = raises(
        ValueError, lambda: clipped_value_loss([[0.0, 1e308]], [[0.0, 0.0]], [[0.0, 0.0]], [[1.0, 0.0]], 0.5)
    )
    assert overflowed(msg, "clipped_value_loss", "NaN")


def test_clipped_value_loss_gradient_matches_finite_differences_away_from_the_band_edges():
    rng = np.random.default_rng(12)
    mask = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    v_old = rng.normal(size=mask.shape)
    v = v_old + rng.choice([-1.0, -0.1, 0.1, 1.0], size=mask.shape)  # |v - v_old| != c
    G = v_old + rng.normal(size=mask.shape) * 2
    _, d = clipped_value_loss(v, v_old, G, mask, 0.5)
    fd = fd_grad(lambda x: clipped_value_loss(x, v_old, G, mask, 0.5)[0], v)
    # piecewise quadratic in v: no truncation error within a branch, rounding ~ 1e-16 / 1e-6
    assert np.abs(d - fd * mask).max() < 1e-8
    real = d[mask > 0]  # both branches present
    assert (d[mask == 0] == 0).all() and (real == 0).any() and (real != 0).any()


def test_defaults_gamma_and_lam_are_one():
    mdp, _, ro, R = _rollout(13)
    values = np.random.default_rng(14).normal(size=mdp.S)
    r = per_token_rewards(R, ro.mask * 0, ro.mask * 0, ro.mask, 0.0)
    d = td_errors(values, ro.states, r, ro.mask)
    np.testing.assert_array_equal(d, td_errors(values, ro.states, r, ro.mask, 1.0))
    assert not np.array_equal(d, td_errors(values, ro.states, r, ro.mask, 0.9))
    np.testing.assert_array_equal(gae(d, ro.mask), gae(d, ro.mask, 1.0, 1.0))
    assert not np.array_equal(gae(d, ro.mask), gae(d, ro.mask, 1.0, 0.9))
    assert not np.array_equal(gae(d, ro.mask), gae(d, ro.mask, 0.9, 1.0))
    G = monte_carlo_returns(r, ro.mask)
    np.testing.assert_array_equal(G, monte_carlo_returns(r, ro.mask, 1.0))
    assert not np.array_equal(G, monte_carlo_returns(r, ro.mask, 0.9))
    new, _ = fit_values(values, ro.states, r, ro.mask)
    np.testing.assert_array_equal(new, fit_values(values, ro.states, r, ro.mask, gamma=1.0)[0])
    assert not np.array_equal(new, fit_values(values, ro.states, r, ro.mask, gamma=0.9)[0])


def test_per_token_rewards_beta_zero_times_an_overflowing_log_ratio_is_named_silently():
    # u = -1e308 - 1e308 = -inf, and 0 * -inf = NaN: the log-ratio is named, no warning
    msg = raises(ValueError, lambda: per_token_rewards([0.0], [[-1e308]], [[1e308]], ONE, 0.0))
    assert overflowed(msg, "per_token_rewards", "NaN")


def test_per_token_rewards_last_token_overflow_driven_by_the_log_ratio_names_logp():
    # r = -1 (0 - 1.5e308) = 1.5e308, R = 0.5e308: r + R = 2e308, the larger part is r
    msg = raises(ValueError, lambda: per_token_rewards([0.5e308], [[0.0]], [[1.5e308]], ONE, 1.0))
    assert overflowed(msg, "per_token_rewards")


def test_fit_values_overflow_driven_by_the_values_names_them():
    # td0: y_1 = r_1 + V(s_2) = 1e308 + 1.7e308 = inf
    msg = raises(
        ValueError, lambda: fit_values([0.0, 1.7e308], [[0, 1]], [[1e308, 0.0]], [[1.0, 1.0]], target="td0")
    )
    assert overflowed(msg, "fit_values")
    # mc: y = 0, err = 1e200: err^2 = inf, the value drove it
    msg = raises(ValueError, lambda: fit_values([1e200], [[0]], [[0.0]], ONE))
    assert overflowed(msg, "fit_values")


def test_a_mask_with_a_hole_is_refused_and_told_where_it_goes():
    assert raises(ValueError, lambda: gae([[0.0, 0.0, 0.0]], [[1, 0, 1]])) == (
        "mask: expected right padding (1s then 0s in each row) for GAE (a sum over the later tokens), "
        "row 0 is [1, 0, 1]; a mask with holes (tool outputs) is accepted by the token-level objectives; "
        "here use minirl_lm.multiturn.values.gae_actions (mask: every token of the row, action_mask: the "
        "trained ones)"
    )


def test_fit_values_td0_discounts_the_next_value_by_gamma():
    v, s, r, m = np.array([0.0, 1.0, 2.0]), np.array([[0, 1]]), np.array([[0.0, 1.0]]), np.ones((1, 2))
    y = np.array([[0.0 + 0.5 * 1.0, 1.0]])  # r_t + gamma v(s_{t+1}), 0 after the last token
    loss, dv = value_loss(v, s, y, m)
    new, got = fit_values(v, s, r, m, gamma=0.5, lr=0.5, target="td0")
    assert got == loss and new.tolist() == (v - 0.5 * dv).tolist()

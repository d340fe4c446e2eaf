"""Values with chance nodes (minirl_lm/multiturn/values.py): policy evaluation and the soft optimum
against enumerated expectations, the KL objective, returns and GAE over the action mask against
verl's and single-turn GAE, the turn values; bad input and overflow named."""

import numpy as np
import pytest
from test_env import ex  # the calculator, enumerated
from test_env import setup as episodes_of

from minirl_lm.core.policy import TabularPolicy, softmax_table
from minirl_lm.multiturn.calculator import CALL, calculator, calculator_reference
from minirl_lm.multiturn.values import (
    gae_actions,
    kl_objective,
    policy_values,
    returns_actions,
    soft_optimum,
    turn_values,
)
from minirl_lm.values.critic import gae, td_errors
from quiet import raises, silent

setup = episodes_of


def test_returns_and_gae_reject_rewards_on_observation_tokens():
    env, pol, ep, *_ = setup()
    r = ep.rewards.copy()
    r[(ep.mask > 0) & (ep.action_mask == 0)] = 1.0
    with pytest.raises(ValueError, match="^rewards: expected rewards on policy tokens only"):
        returns_actions(r, ep.mask, ep.action_mask)
    with pytest.raises(ValueError, match="^action_mask:"):
        gae_actions(np.zeros(ep.mask.shape), ep.rewards, ep.mask, ep.mask + 1.0)


# ---- values with chance nodes ----------------------------------------------------------------
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_policy_values_are_the_enumerated_expectations(q):
    env, pol, ep, (s, y, m, r, pos), p = setup(q)
    values, Q = policy_values(env, pol.probs())
    assert abs(values[0] - p @ ep.R) < 1e-12  # V^pi(x) = E R
    G = returns_actions(ep.rewards, ep.mask, ep.action_mask)
    key = (ep.states * env.V + ep.tokens)[ep.action_mask > 0]
    pt = np.broadcast_to(p[:, None], ep.mask.shape)[ep.action_mask > 0]
    cm, mass = ex.conditional_mean(pt, key, G[ep.action_mask > 0], env.S * env.V)
    assert np.abs(cm - Q.ravel())[mass > 0].max() < 1e-12  # Q(s, a) = E[G_t | s, a]


def test_soft_optimum_is_the_maximum_and_the_gap_is_a_trajectory_kl():
    env, pol, ep, (s, y, m, r, pos), p = setup(0.8)
    pi_ref = softmax_table(calculator_reference(env))
    beta = 0.1
    v_star, _, pi_star = soft_optimum(env, pi_ref, beta)
    assert abs(kl_objective(env, pi_star, pi_ref, beta) - v_star[0]) < 1e-12
    pi = pol.probs()
    gap = v_star[0] - kl_objective(env, pi, pi_ref, beta)
    _, lp = pol.logp(s, y, m)
    _, lp_star = TabularPolicy(np.log(pi_star)).logp(s, y, m)
    kl = p @ (lp - lp_star)  # env factors cancel
    assert gap > 0 and abs(gap - beta * kl) < 1e-12


def test_soft_optimum_calls_iff_the_tool_beats_guessing_by_the_cost():
    for q, calls in ((0.55, False), (0.65, True), (0.9, True)):
        env = calculator(q, cost=0.1)
        pi_ref = np.full((env.S, env.V), 1.0 / env.V)
        _, _, pi_star = soft_optimum(env, pi_ref, 1e-3)  # nearly the argmax
        assert (np.argmax(pi_star[0]) == CALL) == calls, q


# ---- returns and GAE across spans: against verl and single-turn GAE
def verl_gae(rewards, values, response_mask, gamma, lam):
    """verl compute_gae_advantage_return @ 1dda039b9c (2026-08-22), re-derived in NumPy."""
    nextvalues, lastgaelam, out = 0.0, 0.0, []
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam_ = delta + gamma * lam * lastgaelam
        nextvalues = values[:, t] * response_mask[:, t] + (1 - response_mask[:, t]) * nextvalues
        lastgaelam = lastgaelam_ * response_mask[:, t] + (1 - response_mask[:, t]) * lastgaelam
        out.append(lastgaelam)
    return np.stack(out[::-1], 1)


def reinforce_pp_returns_before_fix(rewards, response_mask, gamma):
    """verl REINFORCE++ return scan before the #7300 fix, as its PR states it, in NumPy."""
    running, out = np.zeros(rewards.shape[0]), np.zeros(rewards.shape)
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + gamma * running
        out[:, t] = running
        running = running * response_mask[:, t]
    return out


@pytest.mark.parametrize("gamma,lam", [(1.0, 1.0), (1.0, 0.9), (0.9, 0.5), (1.0, 0.0)])
def test_carried_gae_is_single_turn_gae_on_the_compact_rows_and_verls(gamma, lam):
    env, pol, ep, (s, y, m, r, pos), _ = setup()
    values = np.random.default_rng(1).normal(size=env.S)
    v_tok = values[ep.states] * ep.action_mask
    A = gae_actions(v_tok, ep.rewards, ep.mask, ep.action_mask, gamma, lam)
    compact = gae(td_errors(values, s, r, m, gamma), m, gamma, lam)
    assert np.abs(np.take_along_axis(A, pos, 1) * m - compact).max() < 1e-13
    verl = verl_gae(ep.rewards, v_tok, ep.action_mask, gamma, lam) * ep.action_mask
    assert np.abs(A - verl).max() < 1e-13
    G = returns_actions(ep.rewards, ep.mask, ep.action_mask, gamma, carry=False)
    old = reinforce_pp_returns_before_fix(ep.rewards, ep.action_mask, gamma) * ep.action_mask
    assert np.abs(G - old).max() < 1e-13


def test_carried_advantages_are_unbiased_and_reset_ones_are_not():
    env, pol, ep, (s, y, m, r, pos), p = setup()
    values, Q = policy_values(env, pol.probs())
    v_tok = values[ep.states] * ep.action_mask
    on = ep.action_mask > 0
    key = (ep.states * env.V + ep.tokens)[on]
    pt = np.broadcast_to(p[:, None], ep.mask.shape)[on]
    exact = (Q - values[:, None]).ravel()
    for carry, ok in ((True, True), (False, False)):
        for A in (
            gae_actions(v_tok, ep.rewards, ep.mask, ep.action_mask, 1.0, 0.7, carry),
            (returns_actions(ep.rewards, ep.mask, ep.action_mask, carry=carry) - v_tok) * ep.action_mask,
        ):
            cm, mass = ex.conditional_mean(pt, key, A[on], env.S * env.V)
            bias = np.abs(cm - exact)[mass > 0].max()
            assert (bias < 1e-12) if ok else (bias > 0.1)


def test_turn_values_hold_the_value_of_each_turns_first_state():
    env, pol, ep, *_ = setup()
    values = np.arange(env.S, dtype=float)
    tv = turn_values(values, ep.states, ep.mask, ep.action_mask)
    for b in (0, 100, 2000):
        starts = [t for t in range(env.T) if ep.action_mask[b, t] and (t == 0 or not ep.action_mask[b, t - 1])]
        for t in range(env.T):
            if ep.action_mask[b, t]:
                first = max(u for u in starts if u <= t)
                assert tv[b, t] == values[ep.states[b, first]]


# ---- the residue of bad input: an overflow names the function, no warning, defined edge cases
def test_kl_objective_at_a_huge_beta_is_an_error_naming_the_function():
    env = calculator(0.8, max_turns=2)
    pi = np.full((env.S, env.V), 0.2)
    ref = np.tile([0.96, 0.01, 0.01, 0.01, 0.01], (env.S, 1))
    assert np.isfinite(silent(lambda: kl_objective(env, pi, ref, 1.0)))
    assert raises(ValueError, lambda: kl_objective(env, pi, ref, 1e308)) == (
        "kl_objective: expected a finite J, got inf (beyond float64) from probs in [0.2, 0.2], "
        "pi_ref in [0.01, 0.96], beta = 1e+308"
    )


def test_kl_objective_off_the_support_of_pi_ref():
    env = calculator(0.8, max_turns=2)
    pi = np.full((env.S, env.V), 0.2)
    ref = np.tile([0.25, 0.0, 0.25, 0.25, 0.25], (env.S, 1))  # pi writes <call>, pi_ref cannot
    assert silent(lambda: kl_objective(env, pi, ref, 0.5)) == -np.inf  # as documented
    er = policy_values(env, pi)[0][0]
    assert silent(lambda: kl_objective(env, pi, ref, 0.0)) == er  # beta = 0: E R


def test_returns_and_gae_overflow_is_named():
    one = np.ones((1, 2))
    big = np.full((1, 2), 1e308)
    assert raises(ValueError, lambda: returns_actions(big, one, one)) == (
        "returns_actions: expected a finite G, got inf (beyond float64) from rewards in [1e+308, 1e+308], "
        "mask in [1, 1], action_mask in [1, 1], gamma = 1"
    )
    v = np.array([[-1e308, 1e308]])  # delta_0 = V_1 - V_0 = inf
    assert raises(ValueError, lambda: gae_actions(v, np.zeros((1, 2)), one, one)).startswith(
        "gae_actions: expected a finite advantages, got inf (beyond float64) from values in [-1e+308, 1e+308]"
    )
    assert raises(ValueError, lambda: gae_actions(np.zeros((1, 2)), big, one, one)).startswith("gae_actions:")


def test_huge_turn_rewards_overflow_the_values_named_by_the_function():
    from minirl_lm.multiturn.env import MultiTurnMDP

    env = MultiTurnMDP(
        5,
        0,
        (1,),
        [(2, 3), (2, 4)],
        [[0.5, 0.5], [0.5, 0.5]],
        [0.5, 0.5],
        lambda w, turns, done: 1e308,
        max_turns=2,
        turn_len=2,
    )
    probs = np.full((env.S, env.V), 0.2)
    assert raises(ValueError, lambda: policy_values(env, probs)).startswith(
        "policy_values: expected a finite values and q, got inf (beyond float64) from probs in [0.2, 0.2]"
    )
    assert raises(ValueError, lambda: soft_optimum(env, probs, 1.0)).startswith("soft_optimum: expected a finite")


def test_soft_optimum_at_extreme_betas_stays_finite():
    env = calculator(0.8, max_turns=2)
    pi_ref = softmax_table(calculator_reference(env))
    for beta in (5e-324, 1e-300, 1e300):
        values, q, pi_star = silent(lambda beta=beta: soft_optimum(env, pi_ref, beta))
        assert np.isfinite(values).all() and np.allclose(pi_star.sum(1), 1.0)


def test_bad_flags_and_action_masks():
    one = np.ones((1, 2))
    assert (
        raises(TypeError, lambda: gae_actions(one, one, one, one, carry=1))
        == "carry: expected True or False, got int 1"
    )
    assert (
        raises(ValueError, lambda: returns_actions(one, [[1.0, 0.0]], one))
        == "action_mask: expected 1 only where mask is 1, got 1 at row 0, position 1 where mask is 0"
    )
    assert raises(ValueError, lambda: turn_values(np.ones(2), [[0, 2]], one, one)).startswith(
        "states: expected ids < 2"
    )
    assert raises(TypeError, lambda: policy_values(None, one)).startswith(
        "env: expected a MultiTurnMDP (with children, is_policy, loglik, p_obs, spans, S, V), got NoneType"
    )


def test_the_posterior_after_unlikely_spans_is_exact_and_after_impossible_ones_uniform():
    from minirl_lm.multiturn.env import MultiTurnMDP

    # span (2, 2) has likelihoods 1e-200 and 2e-200 (log-likelihoods near -460: a posterior
    # taken without subtracting the max would underflow to 0 / 0); span (2, 3) is impossible
    env = MultiTurnMDP(
        5,
        0,
        (1,),
        [(2, 2), (2, 3), (2, 4)],
        [[1e-200, 0.0, 1 - 1e-200], [2e-200, 0.0, 1 - 2e-200]],
        [0.5, 0.5],
        lambda w, turns, done: float(w) if len(turns) == 2 else 0.0,  # the second turn earns w
        max_turns=2,
        turn_len=1,
    )
    pi = np.zeros((env.S, env.V))
    pi[:, 0] = 1.0  # EOS
    pi[0] = np.eye(5)[1]  # call first
    values, q = policy_values(env, pi)
    assert abs(values[env._index[(1, 2, 2)]] - 2 / 3) < 1e-15  # P(w = 1 | span) = 2e-200 / 3e-200
    assert values[env._index[(1, 2, 3)]] == 0.5  # never observed: the uniform posterior
    assert values[env._index[(1, 2, 4)]] == 0.5 and values[0] == 0.5


def test_kl_objective_of_a_policy_with_zeros_counts_only_its_tokens():
    env = calculator(0.9, cost=0.25, max_turns=1, turn_len=1)  # one state: every token ends it
    pi = np.array([[0.0, 0.0, 0.0, 1.0, 0.0]])  # always the digit 0: right half the time
    ref = np.full((1, 5), 0.2)
    assert abs(silent(lambda: kl_objective(env, pi, ref, 0.5)) - (0.5 - 0.5 * np.log(5))) < 1e-15
    ref = np.array([[0.0, 0.25, 0.25, 0.25, 0.25]])  # pi_ref's zero where pi is 0 too: finite
    assert abs(silent(lambda: kl_objective(env, pi, ref, 0.5)) - (0.5 - 0.5 * np.log(4))) < 1e-15


def test_kl_objective_overflowing_to_minus_inf_is_an_error_when_pi_stays_on_pi_refs_support():
    env = calculator(0.9, cost=0.25, max_turns=1, turn_len=1)
    pi = np.array([[0.0, 0.25, 0.25, 0.25, 0.25]])
    ref = np.array([[0.0, 0.97, 0.01, 0.01, 0.01]])  # a zero, but where pi is 0 too
    assert raises(ValueError, lambda: kl_objective(env, pi, ref, 1e308)) == (
        "kl_objective: expected a finite J, got inf (beyond float64) from probs in [0, 0.25], "
        "pi_ref in [0, 0.97], beta = 1e+308"
    )


def test_turn_values_by_hand_bit_for_bit():
    values = np.array([-3.0, 4.0, 6.0])
    states = [[0, 1, 2, 1, 0]]
    mask = [[1.0, 1.0, 1.0, 1.0, 0.0]]
    action_mask = [[1.0, 0.0, 0.0, 1.0, 0.0]]  # a turn, a span of two tokens, a turn, padding
    tv = turn_values(values, states, mask, action_mask)
    # each turn's first value times the action mask: -3 * 0 is -0.0 until the next turn starts
    expected = np.array([[-3.0, -0.0, -0.0, 4.0, 0.0]])
    assert tv.tolist() == expected.tolist() and (np.signbit(tv) == np.signbit(expected)).all()

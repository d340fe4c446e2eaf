"""The calculator task (minirl_lm/multiturn/calculator.py): its rewards, its tree and its reference
logits, computed by hand on the smallest settings; bad input named."""

import numpy as np
import pytest

from minirl_lm.multiturn.calculator import CALL, D0, D1, EOS, EQ, TOKENS, calculator, calculator_reference
from minirl_lm.multiturn.values import policy_values
from quiet import raises


def test_one_turn_guessing_earns_one_half_and_the_tree_is_small():
    env = calculator(0.8, max_turns=1, turn_len=2)
    assert (env.V, env.W, env.M) == (5, 2, 2) and TOKENS[CALL] == "<call>"
    assert env.S == 4 and env.is_policy.all()  # (), (=,), (0,), (1,): no chance node
    pi = np.zeros((env.S, env.V))
    pi[:, EOS] = 1.0
    pi[env._index[()], :] = [0.0, 0.0, 0.0, 0.5, 0.5]  # guess a digit, then stop
    assert policy_values(env, pi)[0][0] == 0.5


@pytest.mark.parametrize("q, cost", [(0.9, 0.1), (0.6, 0.25), (1.0, 0.0)])
def test_call_then_copy_earns_q_minus_cost(q, cost):
    env = calculator(q, cost=cost, max_turns=2, turn_len=2)
    pi = np.full((env.S, env.V), 0.0)
    pi[:, EOS] = 1.0
    pi[0] = np.eye(5)[CALL]  # call at once
    for p in env.prefixes:  # then copy the tool's digit, stop
        if len(p) == 3 and p[0] == CALL and p[1] == EQ:
            pi[env._index[p]] = np.eye(5)[p[2]]
    assert abs(policy_values(env, pi)[0][0] - (q - cost)) < 1e-15


def test_reference_logits_prefer_stopping_after_a_digit():
    env = calculator(0.8, max_turns=2)
    theta = calculator_reference(env, eq=-2.0, stop=5.0)
    assert theta.shape == (env.S, env.V)
    assert (theta[env.is_policy, EQ] == -2.0).all() and (theta[~env.is_policy] == 0).all()
    for d in (D0, D1):
        assert theta[env._index[(d,)], EOS] == 5.0
    assert theta[0, EOS] == 0.0


def test_bad_arguments_are_named():
    assert raises(ValueError, lambda: calculator(-0.1)) == "q: expected a number >= 0 and <= 1, got -0.1"
    assert raises(ValueError, lambda: calculator(0.8, cost=-1)) == "cost: expected a number >= 0, got -1.0"
    assert (
        raises(TypeError, lambda: calculator_reference(None))
        == "env: expected the calculator's MultiTurnMDP, got NoneType"
    )
    assert (
        raises(ValueError, lambda: calculator_reference(calculator(0.8), stop=np.inf))
        == "stop: expected a finite number, got inf"
    )


def test_a_call_that_closes_the_last_turn_costs_and_the_digit_before_it_still_counts():
    env = calculator(0.9, cost=0.25, max_turns=1, turn_len=2)
    pi = np.zeros((env.S, env.V))
    pi[:, CALL] = 1.0
    pi[0] = np.eye(5)[D0]  # write 0, then call: the turn cap ends the episode
    assert policy_values(env, pi)[0][0] == 0.5 - 0.25  # right in world 0, minus the call


def test_turn_len_bounds_the_tree():
    assert [calculator(0.8, max_turns=1, turn_len=n).S for n in (1, 2, 3)] == [1, 4, 13]
    assert calculator(0.8, max_turns=1, turn_len=3).T == 3


def test_reference_logits_at_stop_minus_zero_are_plus_zero():
    theta = calculator_reference(calculator(0.8, max_turns=1), eq=0.0, stop=-0.0)
    assert (theta == 0).all() and not np.signbit(theta).any()  # 0 + -0.0 is +0.0


def test_an_environment_of_another_type_is_named_by_its_type():
    assert (
        raises(TypeError, lambda: calculator_reference("env"))
        == "env: expected the calculator's MultiTurnMDP, got str"
    )

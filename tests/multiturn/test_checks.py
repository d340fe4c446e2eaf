"""The bundles of the multi-turn part (minirl_lm/multiturn/checks.py)."""

import numpy as np

from minirl_lm.multiturn import checks as MC
from quiet import raises


def test_multiturn_bundles_return_their_arguments_checked():
    from minirl_lm.core.policy import TabularPolicy
    from minirl_lm.multiturn.calculator import calculator
    from minirl_lm.multiturn.env import MultiTurnMDP

    out = MC.multiturn_args(5, 0, [1], [[2, 3], (2, 4)], [[1, 0], [0, 1]], [0.5, 0.5], lambda w, t, d: 0.0, 2, 2)
    assert out[:4] == (5, 0, (1,), [(2, 3), (2, 4)]) and out[6:] == (2, 2)
    env = calculator(0.8, max_turns=2)
    ep = env.all_episodes()
    assert MC.episodes(env, ep) is ep and MC.action_view_args(env, ep) is ep
    pol = TabularPolicy(np.zeros((env.S, env.V)))
    assert MC.multiturn_rollout_args(env, pol, 3, np.random.default_rng(0)) == 3
    x, pos, mask, T = MC.scatter_args([[1.0]], [[0]], [[1.0]], 4)
    assert (x.dtype, pos.dtype, mask.dtype, T) == (np.float64, np.int64, np.float64, 4)
    p = np.full((env.S, env.V), 0.2)
    assert MC.mt_table(env, p, "probs") is not None and MC.mt_soft_args(env, p, 1)[1] == 1.0
    assert MC.mt_kl_args(env, p, p, 0)[2] == 0.0
    assert raises(ValueError, lambda: MC.mt_soft_args(env, p, 0)) == "beta: expected a number > 0.0, got 0.0"
    one = np.ones((1, 2))
    assert MC.action_returns_args(one, one, one, 1, True)[2:] == (1.0, True)
    assert MC.action_gae_args(one, one, one, one, 1, 0, False)[3:] == (1.0, 0.0, False)
    assert MC.turn_values_args([0.0], [[0, 0]], one, one)[1].dtype == np.int64
    assert MC.calculator_args(1, 0) == (1.0, 0.0)
    assert MC.calculator_reference_args(env, MultiTurnMDP, -1, 2) == (-1.0, 2.0)

"""The bad-input battery's table, part multiturn: multi-turn (minirl_lm/multiturn/). See battery.py."""

import numpy as np
from battery_data import (
    ACTION_MASK,
    EPISODES,
    IDS,
    LOGP,
    LOGP2,
    MASK,
    MT,
    MT_POLICY,
    MT_PROBS,
    MT_REWARDS,
    RNG,
    TURN_REWARD,
    F,
    const,
)

from minirl_lm.multiturn import calculator
from minirl_lm.multiturn import env as multiturn
from minirl_lm.multiturn import values as multiturn_values
from minirl_lm.multiturn.env import MultiTurnMDP


def _multiturn(**kw):
    return MultiTurnMDP(**kw)


_multiturn.__name__ = "MultiTurnMDP"
_multiturn.__wrapped__ = MultiTurnMDP.__init__
_multiturn.kinds = MultiTurnMDP.__init__.kinds  # its declaration, matched against the row


TABLE = [
    # env.py
    F(
        _multiturn,
        V=("int1", const(5)),
        eos=("int0", const(0)),
        calls=("calls", const((1,))),
        spans=("spans", const([(2, 3), (2, 4)])),
        p_obs=("prob", lambda: np.array([[0.8, 0.2], [0.2, 0.8]])),
        prior=("prob", lambda: np.array([0.5, 0.5])),
        turn_reward=("turn_reward", const(TURN_REWARD)),
        max_turns=("turns", const(2)),
        turn_len=("turns", const(2)),
    ),
    # the methods themselves, self a fresh environment (not tried: kind None)
    F(
        MultiTurnMDP.rollout,
        self=(None, MT),
        policy=("policy", MT_POLICY),
        K=("count", const(2)),
        rng=("generator", RNG),
    ),
    F(MultiTurnMDP.check, self=(None, MT), ep=("episodes", EPISODES)),
    F(multiturn.action_view, env=("mtenv", MT), ep=("episodes", EPISODES)),
    F(multiturn.scatter, x=("float", LOGP), pos=("ids3", IDS(3)), mask=("pmask", MASK), T=("width", const(3))),
    # values.py
    F(multiturn_values.policy_values, env=("mtenv", MT), probs=("prob", MT_PROBS)),
    F(multiturn_values.soft_optimum, env=("mtenv", MT), pi_ref=("prob", MT_PROBS), beta=("pos", const(0.5))),
    F(
        multiturn_values.kl_objective,
        env=("mtenv", MT),
        probs=("prob", MT_PROBS),
        pi_ref=("prob", MT_PROBS),
        beta=("nonneg", const(0.5)),
    ),
    F(
        multiturn_values.gae_actions,
        values=("float", LOGP2),
        rewards=("float", MT_REWARDS),
        mask=("pmask", MASK),
        action_mask=("amask", ACTION_MASK),
        gamma=("unit", const(0.9)),
        lam=("unit", const(0.5)),
        carry=("flag", const(True)),
    ),
    F(
        multiturn_values.returns_actions,
        rewards=("float", MT_REWARDS),
        mask=("pmask", MASK),
        action_mask=("amask", ACTION_MASK),
        gamma=("unit", const(0.9)),
        carry=("flag", const(False)),
    ),
    F(
        multiturn_values.turn_values,
        values=("float", lambda: np.arange(6.0)),
        states=("ids6", IDS(6)),
        mask=("pmask", MASK),
        action_mask=("amask", ACTION_MASK),
    ),
    # calculator.py
    F(
        calculator.calculator,
        q=("unit", const(0.8)),
        cost=("nonneg", const(0.1)),
        max_turns=("turns", const(2)),
        turn_len=("turns", const(2)),
    ),
    F(calculator.calculator_reference, env=("mtenv", MT), eq=("real", const(-3.0)), stop=("real", const(3.0))),
]

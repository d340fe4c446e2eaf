"""What the multi-turn part's checks module still holds for its importers (minirl_lm/multiturn/checks.py)."""

import numpy as np

from minirl_lm.multiturn import checks as MC
from quiet import raises


def test_episodes_returns_a_batch_of_the_environment_and_names_what_is_wrong():
    from minirl_lm.multiturn.calculator import calculator

    env = calculator(0.8, max_turns=2)
    ep = env.all_episodes()
    assert MC.episodes(env, ep) is ep and set(MC.MT_ATTRS) <= set(vars(env))
    assert raises(TypeError, lambda: MC.episodes(env, None)).startswith("ep: expected an Episodes batch")
    ep.tokens = np.zeros_like(ep.tokens) + env.V
    assert raises(ValueError, lambda: MC.episodes(env, ep)).startswith("tokens: expected entries <= 4")

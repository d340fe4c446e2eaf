"""The calculator task: a hidden binary answer, a noisy tool, a price per call.

The smallest multi-turn task in which the tool matters. The hidden world is the answer
w in {0, 1}, uniform. Tokens (V = 5): `<eos>`, `<call>`, `=`, `0`, `1`. The policy writes turns of
at most `turn_len` tokens; `<call>` ends a turn and the tool replies with the span `= d`, d = w
with probability q. A call turn costs `cost`; when the episode ends, the last digit the policy
wrote earns 1 if it equals w. Guessing earns 1/2, one call and copying earns q - cost, and a
second call alone adds nothing (two binary votes: a tie is a coin flip), so the right first move
is to call iff q > 1/2 + cost: the right policy depends on q.

Demonstrated by `python examples/multi_turn.py`. Imports NumPy, minirl_lm.boundary and
minirl_lm.multiturn.env.
"""

import numpy as np

from minirl_lm.boundary import COUNT, NONNEGATIVE, boundary, number
from minirl_lm.multiturn.env import MultiTurnMDP

__all__ = ["EOS", "CALL", "EQ", "D0", "D1", "TOKENS", "calculator", "calculator_reference"]

EOS, CALL, EQ, D0, D1 = range(5)  # V = 5
TOKENS = ("<eos>", "<call>", "=", "0", "1")


def _calculator_env(env, name, dims):
    """The calculator's environment: a `MultiTurnMDP` of its five tokens."""
    if not isinstance(env, MultiTurnMDP) or env.V != 5:
        raise TypeError(f"{name}: expected the calculator's MultiTurnMDP, got {type(env).__name__}")
    return env


@boundary(q=number(0.0, 1.0), cost=NONNEGATIVE, max_turns=COUNT, turn_len=COUNT, returns=None)
def calculator(q, cost=0.1, max_turns=3, turn_len=2):
    """The calculator task: answer a binary question, optionally after asking a noisy tool.

    The hidden world is the answer w in {0, 1}, uniform. The policy may write `<call>`; the tool
    replies `= d` with d = w with probability q. A turn that calls costs `cost`; at the end the
    last digit the policy wrote earns 1 if it equals w. Guessing earns 1/2; one call and copying
    earns q - cost; a second call alone adds nothing (two binary votes: ties are coin flips), so
    the right first move is to call iff q > 1/2 + cost.

    Args:
        q: probability the tool is right, in [0, 1].
        cost: reward charged for each call turn, >= 0.
        max_turns: as in `MultiTurnMDP` (which bounds the tree it grows).
        turn_len: see `max_turns`.
    """

    def turn_reward(w, turns, done):
        r = -cost if turns[-1][-1] == CALL else 0.0  # the price of a call turn
        if done:
            digits = [y for turn in turns for y in turn if y in (D0, D1)]
            r += float(bool(digits) and digits[-1] == D0 + w)
        return r

    p_obs = np.array([[q, 1 - q], [1 - q, q]])  # (W, M): spans "= 0", "= 1"
    return MultiTurnMDP(5, EOS, (CALL,), [(EQ, D0), (EQ, D1)], p_obs, [0.5, 0.5], turn_reward, max_turns, turn_len)


@boundary(env=_calculator_env, eq=number(), stop=number(), returns="theta")
def calculator_reference(env, eq=-3.0, stop=3.0):
    """Reference logits `(S, V)` for the calculator, a stand-in for a pretrained model.

    Uniform, except at the two logits below. Rows of chance states are uniform. Pass
    `softmax_table` of it as pi_ref, or use it as the starting theta.

    Args:
        env: the calculator's environment, what `calculator` returns (a `MultiTurnMDP` of its
            five tokens).
        eq: a float, the logit of the tool's `=` at every policy state (the policy rarely writes
            it: default -3).
        stop: a float added to the logit of EOS right after the policy writes a digit and the turn
            goes on (it prefers to end the episode: default 3).

    Returns:
        theta, the `(S, V)` logits.
    """
    theta = np.zeros((env.S, env.V))  # (S, V)
    theta[env.is_policy, EQ] = eq
    for kids in env.children.values():
        for a, (_, kind, nxt) in enumerate(kids):
            if kind == "turn" and a in (D0, D1):  # a digit, and the turn goes on
                theta[nxt, EOS] += stop
    return theta

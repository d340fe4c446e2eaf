"""The bad-input battery's valid values: one factory per argument value the table passes
(fresh objects on every call, so a case that mutates its input cannot poison the next), and the
table's helpers `F`, `V`, `const`. See battery.py."""

import numpy as np

from minirl_lm import tasks
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.multiturn import calculator

NAN, INF = float("nan"), float("inf")
B, T = 2, 3

# ---------------------------------------------------------------- valid values


def LOGP():
    return np.array([[-1.0, -2.0, -0.5], [-0.3, -1.2, 0.0]])  # (B, T)


def LOGP2():
    return np.array([[-1.1, -1.9, -0.7], [-0.2, -1.0, 0.0]])  # (B, T)


def MASK():
    return np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])  # (B, T)


def ADV():
    return np.array([1.0, -0.5])  # (B,)


def R():
    return np.array([[1.0, 0.0], [0.5, 2.0]])  # (N, K)


def PROBS():
    return np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])  # (N, Y)


def PROBS2():
    return np.array([[0.3, 0.3, 0.4], [0.5, 0.25, 0.25]])  # (N, Y)


def THETA():
    return np.array([[0.0, 1.0, -1.0], [0.5, -np.inf, 0.2]])  # (S, V)


def MDP():
    return TokenMDP(["a", "b"], V=3, eos=0, max_len=2)  # S = 6


def POLICY():
    return TabularPolicy(np.linspace(-1, 1, 18).reshape(6, 3))


def TOY_POLICY():
    return TabularPolicy(tasks.reference_theta())


def GRADER(prompt, response):
    return float(len(response))


def RNG():
    return np.random.default_rng(0)


def ROLLOUT():
    return MDP().rollout(POLICY(), 2, np.random.default_rng(1))


def LOGITS():
    return np.random.default_rng(2).standard_normal((B, T, 4))  # (B, T, V)


def MT():
    return calculator.calculator(0.8, max_turns=2, turn_len=2)  # S = 44, V = 5


def MT_POLICY():
    return TabularPolicy(np.zeros((44, 5)))


def MT_PROBS():
    return np.full((44, 5), 0.2)  # (S, V)


def EPISODES():
    return MT().rollout(MT_POLICY(), 2, np.random.default_rng(3))


def ACTION_MASK():
    return np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])  # (B, T) a hole at (0, 1)


def MT_REWARDS():
    return np.array([[0.0, 0.0, 1.0], [0.0, 0.5, 0.0]])  # (B, T) on policy tokens


def TURN_REWARD(w, turns, done):
    return float(done and w == 0)


def JUDGE(prompt, y_a, y_b):
    return 0.5


def H():
    return np.random.default_rng(4).standard_normal((4, 3))  # (N, d)


def W_UNEMBED():
    return np.random.default_rng(5).standard_normal((4, 3))  # (V, d)


def LOSS_FN(logp, rows):
    return float(-logp.sum()), -np.ones_like(logp)


def IDS(high, shape=(B, T)):
    return lambda: np.arange(int(np.prod(shape))).reshape(shape) % high


def K_IDS(high):
    return lambda: np.ascontiguousarray(IDS(high)(), dtype=np.int64)


# ---------------------------------------------------------------- the table


def F(func, **args):
    """A public function and its arguments: name -> (kind or None (not varied), valid factory)."""
    return func, args


V = lambda f: (None, f)  # noqa: E731 (valid only)


def const(x):
    return lambda: x

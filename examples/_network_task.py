"""The task of examples/network.py: two-digit addition at the character level, its verifier, the
held-out split and the evaluation (exact accuracy; Monte Carlo KL and entropy)."""

import numpy as np

from minirl_lm.nn.generate import generate

PLUS, EQ, V, P, T = 10, 11, 12, 6, 3


def digits(n, width):
    """(N,) ints -> (N, width) digits, most significant first."""
    return np.stack([(n // 10 ** (width - 1 - i)) % 10 for i in range(width)], axis=1)


def prompts(a, b):
    """`ab+cd=` as (N, 6) token ids."""
    n = a.size
    return np.concatenate([digits(a, 2), np.full((n, 1), PLUS), digits(b, 2), np.full((n, 1), EQ)], axis=1)


def answers(a, b, carry=True):
    """The sum's three digits, units first, (N, 3); carry=False: every carry forgotten."""
    if carry:
        return digits(a + b, 3)[:, ::-1].copy()
    units, tens = (a + b) % 10, (a // 10 + b // 10) % 10
    return np.stack([units, tens, np.zeros_like(a)], axis=1)


def verifier(a, b, y):
    """Reward 1.0 iff the response is the exact sum."""
    return (y == answers(a, b)).all(axis=1).astype(np.float64)


def split(rng, n_held):
    """All 10,000 problems, shuffled: (train, held-out), each a pair of (N,) operand arrays."""
    a, b = np.divmod(rng.permutation(10000), 100)
    return (a[n_held:], b[n_held:]), (a[:n_held], b[:n_held])


def accuracy(model, a, b):
    """Exact: mean over problems of pi(y* | x)."""
    y = answers(a, b)
    return float(np.exp(model.logp(prompts(a, b), y, np.ones(y.shape))[1]).mean())


def kl_entropy(model, ref, a, b, rng):
    """Monte Carlo, one response per problem: (KL(pi || pi_ref), entropy) of whole responses."""
    x = prompts(a, b)
    y, mask, logp = generate(model, x, T, rng)
    logp_ref = ref.logp(x, y, mask)[0]
    return float((logp - logp_ref).sum(1).mean()), float(-logp.sum(1).mean())

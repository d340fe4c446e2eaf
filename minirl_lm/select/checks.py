"""The boundary of the select part: the bundles of `select/bestofn.py` (best-of-N over a finite
response set, the KL-matched tilted optimum) and `select/rejection.py` (which responses are
kept, the maximum-likelihood loss on them, its exact expected update). Built on
`core/checks.py` and the values part's prompt weights; NumPy only."""

import math

import numpy as np

from minirl_lm.core.checks import choice, float_array, float_scalar, int_scalar, mask_array, nonempty, prob_table
from minirl_lm.values.checks import mu0_weights

N_MAX = 10**6  # best-of-N: beyond it F^N underflows to the top level for any row worth printing
GROUPS_MAX = 200_000  # the exact update enumerates C(Y + K - 1, K) multisets per prompt
RULES = {"verified", "best"}
NORMS = {"accepted", "group"}


def table_args(pi, reward, weights=None):
    """An `(P, Y)` probability table, rewards of its shape, the prompt weights `mu_0`."""
    pi = prob_table(pi, "pi", ndim=2)
    reward = float_array(reward, "reward", shape=pi.shape)
    return pi, reward, mu0_weights(weights, pi.shape[0])


def bon_args(pi, reward, N, weights=None):
    """`table_args` and the number of draws `N` in `[1, N_MAX]`."""
    pi, reward, w = table_args(pi, reward, weights)
    return pi, reward, int_scalar(N, "N", low=1, high=N_MAX), w


def bound_args(N):
    """The number of draws `N` in `[1, N_MAX]`."""
    return int_scalar(N, "N", low=1, high=N_MAX)


def match_args(pi, reward, kl, weights=None):
    """`table_args` and a target KL `>= 0`."""
    pi, reward, w = table_args(pi, reward, weights)
    return pi, reward, float_scalar(kl, "kl", low=0.0), w


def accept_args(reward, K, rule, threshold):
    """`(B,)` rewards in groups of K (B a multiple of K), the rule, the verifier's threshold."""
    reward = float_array(reward, "reward", ndim=1)
    nonempty(reward, "reward")
    K = _group_size(K, reward.size, "reward")
    return reward, K, choice(rule, "rule", RULES), float_scalar(threshold, "threshold")


def rejection_args(logp, mask, accept, K, norm):
    """`(B, T)` token log-probs and their 0/1 mask (holes allowed), `(B,)` 0/1 acceptances,
    groups of K, the normalization."""
    mask = mask_array(mask, "mask")
    logp = float_array(logp, "logp", shape=mask.shape)
    nonempty(logp, "logp")
    accept = float_array(accept, "accept", shape=(mask.shape[0],))
    if not np.isin(accept, (0.0, 1.0)).all():
        bad = float(accept[~np.isin(accept, (0.0, 1.0))][0])
        raise ValueError(f"accept: expected 0/1 acceptances, got {bad!r}")
    K = _group_size(K, mask.shape[0], "mask")
    return logp, mask, accept, K, choice(norm, "norm", NORMS)


def update_args(pi, reward, K, rule, norm, threshold, enumerate_groups=True):
    """`table_args`, a group size K (whose multisets stay below `GROUPS_MAX` a prompt when they
    are enumerated; else `K <= N_MAX`), the rule, the normalization, the threshold."""
    pi, reward, _ = table_args(pi, reward)
    K = int_scalar(K, "K", low=1, high=N_MAX)
    M = math.comb(pi.shape[1] + K - 1, K) if enumerate_groups else 0  # the multisets of a group
    if M > GROUPS_MAX:
        raise ValueError(
            f"K: expected at most {GROUPS_MAX} groups of K a prompt, got C({pi.shape[1]} + {K} - 1, {K}) = {M}"
        )
    rule = choice(rule, "rule", RULES)
    norm = choice(norm, "norm", NORMS)
    return pi, reward, K, rule, norm, float_scalar(threshold, "threshold")


def _group_size(K, B, what):
    K = int_scalar(K, "K", low=1)
    if B % K:
        raise ValueError(f"K: expected a group size dividing the {B} rows of {what}, got {K}")
    return K

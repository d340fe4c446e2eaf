"""MaxRL and pass@k advantages (targets.py): what their update estimates, exactly.

The exact claims by enumeration of every group of K responses to one prompt (a softmax over V
one-token responses, V**K groups): E[(1/K) sum_k A_k grad log pi(y_k)] with MaxRL's advantages
is the gradient of the truncated likelihood J_{K-1} (binary rewards), and E[sum_i A_i grad log
pi(y_i)] with the pass@k advantages is the gradient of E[max of k rewards], both to 1e-12 (the
sums are O(1), 3**5 terms: rounding ~1e-15). Against the frameworks' lines, re-derived in NumPy.
"""

import itertools
from math import comb

import numpy as np
import pytest

from minirl_lm.pg.targets import maxrl, passk_advantages
from quiet import names


def softmax(theta):
    e = np.exp(theta - theta.max())
    return e / e.sum()


def expected_update(theta, r, K, adv, scale):
    """E[scale sum_k A_k (onehot(y_k) - pi)] over all V**K groups, exactly."""
    pi = softmax(theta)
    V = len(pi)
    E = np.zeros(V)
    for ys in itertools.product(range(V), repeat=K):
        A = adv(r[list(ys)][None, :])[0]  # (K,)
        g = sum(A[k] * (np.eye(V)[y] - pi) for k, y in enumerate(ys))
        E += np.prod(pi[list(ys)]) * scale * g
    return E


THETA = np.array([0.4, -0.3, 0.1, -1.0])


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5])
def test_maxrl_is_an_unbiased_gradient_of_the_truncated_likelihood(K):
    r = np.array([1.0, 0.0, 1.0, 0.0])
    pi = softmax(THETA)
    p = pi @ r
    grad_p = pi * r - pi * p  # d p / d theta
    want = sum((1 - p) ** (i - 1) for i in range(1, K)) * grad_p  # grad J_{K-1}, eq. (maxrl_target)
    got = expected_update(THETA, r, K, maxrl, 1.0 / K)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    if K >= 4:  # grad J_{K-1} tends to grad log p: closer at each K
        assert np.abs(got - grad_p / p).max() < np.abs(grad_p - grad_p / p).max()


def test_maxrl_edge_cases_and_prime_rl():
    """prime-rl src/prime_rl/orchestrator/algo/max_rl.py (score_group) @ 559b44772e:
    zeros if mean <= 0 else (rewards - mean) / mean."""
    r = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.3, 0.3, 0.3, 0.3], [2.0, 0.5, 0.0, 1.0]])
    A = maxrl(r)
    for row, a in zip(r, A):
        mean = row.mean()
        want = np.zeros_like(row) if mean <= 0 else (row - mean) / mean
        np.testing.assert_allclose(a, want, rtol=1e-15, atol=0)
    assert (A[1:3] == 0).all()  # no success; equal rewards: exactly 0 (not 1e-17)
    assert maxrl([[1.0]]).tolist() == [[0.0]]  # K = 1
    names("rewards", "entries >= 0", lambda: maxrl([[1.0, -1.0]]))


def passk_target_grad(theta, r, k):
    """d/dtheta E[max of k draws], from P(max <= v) = F(v)**k: d F**k = k F**(k-1) dF."""
    pi = softmax(theta)
    V = len(pi)
    score = np.eye(V) - pi  # (V, V) row y: onehot(y) - pi
    vals = np.unique(r)
    grad = np.zeros(V)
    prev_F, prev_dF = 0.0, np.zeros(V)
    for v in vals:
        below = r <= v
        F = pi[below].sum()
        dF = (pi[below, None] * score[below]).sum(axis=0)
        grad += v * (k * F ** (k - 1) * dF - (k * prev_F ** (k - 1) * prev_dF if prev_F > 0 else 0.0))
        prev_F, prev_dF = F, dF
    return grad


@pytest.mark.parametrize("K,k", [(1, 1), (2, 1), (2, 2), (3, 2), (4, 2), (4, 3), (4, 4), (5, 3)])
@pytest.mark.parametrize("rewards", ["binary", "real"])
def test_passk_is_an_unbiased_gradient_of_pass_at_k(K, k, rewards):
    r = np.array([1.0, 0.0, 0.0, 1.0]) if rewards == "binary" else np.array([0.7, -0.2, 0.7, 1.5])
    got = expected_update(THETA, r, K, lambda g: passk_advantages(g, k), 1.0)
    np.testing.assert_allclose(got, passk_target_grad(THETA, r, k), rtol=0, atol=1e-12)


def test_passk_is_the_subset_average_of_the_marginal_max():
    rng = np.random.default_rng(0)
    r = rng.integers(0, 3, size=(6, 5)).astype(float)  # ties
    for k in range(1, 6):
        A = passk_advantages(r, k)
        for n, g in enumerate(r):
            want = np.zeros(5)
            for S in itertools.combinations(range(5), k):
                for i in S:
                    rest = [g[j] for j in S if j != i]
                    want[i] += g[list(S)].max() - (max(rest) if rest else 0.0)
            np.testing.assert_allclose(A[n], want / comb(5, k), rtol=0, atol=1e-15)
    binary = np.array([[1.0, 0.0, 1.0, 0.0, 0.0]])  # c = 2 correct: C(K - c, k - 1) / C(K, k)
    np.testing.assert_allclose(passk_advantages(binary, 2)[0], [3 / 10, 0, 3 / 10, 0, 0], rtol=1e-15)


def verl_passk(scores, epsilon, norm):
    """verl 0.9.1 verl/trainer/ppo/core_algos.py:472-536 (compute_grpo_passk_outcome_advantage),
    one group: only the best response gets r_max - r_second_max (over torch.std + eps)."""
    A = np.zeros_like(scores)
    top = np.argsort(-scores, kind="stable")[:2]
    adv = scores[top[0]] - scores[top[1]]
    if norm:
        adv = adv / (np.std(scores, ddof=1) + epsilon)
    A[top[0]] = adv
    return A


def test_passk_at_k_equal_K_is_verls_grpo_passk():
    rng = np.random.default_rng(1)
    for _ in range(20):
        g = rng.normal(size=6).round(1)
        np.testing.assert_allclose(passk_advantages(g[None], 6)[0], verl_passk(g, 1e-6, False), rtol=0, atol=1e-15)
        np.testing.assert_allclose(
            passk_advantages(g[None], 6, 1e-6)[0], verl_passk(g, 1e-6, True), rtol=1e-14, atol=0
        )
    assert passk_advantages([[1.0, 1.0, 0.0]], 3).tolist() == [[0.0, 0.0, 0.0]]  # a shared best: no single max
    assert passk_advantages([[2.0, 2.0]], 2, 0.0).tolist() == [[0.0, 0.0]]  # 0 / 0 is 0
    # std_eps = 0 with a spread: divided by the Bessel std alone (std 1/sqrt(2), A = [1, 0])
    np.testing.assert_allclose(passk_advantages([[1.0, 0.0]], 2, 0.0), [[np.sqrt(2.0), 0.0]], rtol=1e-15)
    np.testing.assert_allclose(passk_advantages([[1.0, 0.0]], 2, 0.5), [[1 / (0.5**0.5 + 0.5), 0.0]], rtol=1e-15)
    names("k", "<= 3", lambda: passk_advantages([[1.0, 0.0, 1.0]], 4))
    names("std_eps", ">= 0", lambda: passk_advantages([[1.0, 0.0]], 2, -1.0))


def test_passk_gives_tied_rewards_one_advantage_in_a_large_group():
    # 40 rewards of 0 or 1: many ties; breaking them by a tiny increasing offset (index order)
    # changes the advantages by no more than the offset: tied rewards share one advantage
    r = np.random.default_rng(0).integers(0, 2, (1, 40)).astype(float)
    tied = passk_advantages(r, 5)
    by_index = passk_advantages(r + 1e-13 * np.arange(40), 5)
    np.testing.assert_allclose(tied, by_index, atol=1e-9)


def test_passk_with_binomials_beyond_int64_is_float64():
    r = np.arange(70.0)[None, :] / 70  # C(69, 34) > 2^63
    A = passk_advantages(r, 35)
    assert A.dtype == np.float64 and np.isfinite(A).all()
    # the binomials rounded to float64, then divided (not exact quotients of Python integers)
    assert A[0, [35, 36, 39, 43]].tolist() == [
        4.584212296678307e-21,
        8.480792748854815e-20,
        8.379023235868591e-17,
        9.027466534066671e-14,
    ]


def test_passk_standardizes_each_group_by_its_own_spread():
    r = np.array([[0.0, 1.0, 0.0, 1.0], [0.0, 4.0, 1.0, 2.0]])
    both = passk_advantages(r, 2, std_eps=0.0)
    for n in range(2):
        assert np.array_equal(both[n], passk_advantages(r[n : n + 1], 2, std_eps=0.0)[0])
    # a spread below std_eps still divides (by std + std_eps), it does not zero the advantages
    assert passk_advantages([[0.0, 1e-9, 0.0]], 2, std_eps=1e-8)[0, 1] > 0.06


def test_passk_breaks_ties_in_index_order_the_same_bits_everywhere():
    # five tied rewards of 1: each shares 3/56 up to rounding, and which rounding goes to which
    # response follows the index (a stable sort), not the sorting algorithm of the machine
    A = passk_advantages([[1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]], 3)
    assert A.tolist() == [
        [0.05357142857142857, 0.0, 0.05357142857142857, 0.053571428571428575, 0.0]
        + [0.05357142857142855, 0.0, 0.05357142857142855]
    ]


def test_passk_zero_spread_groups_are_exactly_zero_in_a_large_batch():
    r = np.random.default_rng(2).integers(0, 2, (32, 8)).astype(float)
    r[::3] = 1.0  # every third group without spread: 0 / 0 is 0
    A = passk_advantages(r, 2, std_eps=0.0)
    assert (A[::3] == 0).all()
    for n in range(1, 32, 3):
        assert np.array_equal(A[n], passk_advantages(r[n : n + 1], 2, std_eps=0.0)[0])


def test_passk_with_binomials_beyond_float64_is_the_exact_share():
    # C(1100, 550) ~ 1e329 is beyond float64; the coefficients are quotients of at most 1. Two
    # passing responses among 1100: each gets k (K - k) / (K (K - 1)) (the share of the k-subsets
    # where it alone is the max, net of those where the other one is), every other response 0
    K, k = 1100, 550
    r = np.zeros((1, K))
    r[0, [7, 900]] = 1.0
    A = passk_advantages(r, k)
    want = k * (K - k) / (K * (K - 1))
    np.testing.assert_allclose(A[0, [7, 900]], want, rtol=1e-14, atol=0)
    assert np.count_nonzero(A) == 2
    one = passk_advantages(np.eye(1, K, 3), k)  # one passing response: k / K exactly
    assert one[0, 3] == 0.5 and np.count_nonzero(one) == 1

"""Baselines: defined edge cases, the (K-1)/K self-inclusion bias and LOO's unbiasedness by
exact enumeration of every group of K draws."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.pg.advantages import (advantages, broadcast, centred, leave_one_out, no_baseline,
                                  standardized)


# ---- edge cases ------------------------------------------------------------------------------

@pytest.mark.parametrize("baseline", ["mean", "standardized"])
@pytest.mark.parametrize("ddof", [0, 1])
def test_k1_centred_and_standardized_are_bitwise_zero(baseline, ddof):
    r = np.random.default_rng(0).normal(size=(5, 1)) * 1e3
    A = advantages(r, baseline, ddof=ddof)
    assert A.shape == (5, 1)
    assert (A == 0).all() and not np.signbit(A).any()           # +0.0 bit pattern


def test_k1_update_is_bitwise_zero_through_the_policy():
    from minirl_lm.core.policy import TabularPolicy
    from minirl_lm.pg.reinforce import reinforce_loss
    rng = np.random.default_rng(1)
    pol = TabularPolicy(rng.normal(size=(3, 5)))
    theta0 = pol.theta.copy()
    states = np.arange(3)[:, None]                            # (B=3, T=1), K = 1 per prompt
    tokens = pol.sample(states, rng)
    mask = np.ones((3, 1))
    A = advantages(rng.normal(size=(3, 1)), "standardized").reshape(-1)
    logp, _ = pol.logp(states, tokens, mask)
    _, dlogp = reinforce_loss(logp, A, mask)
    dtheta = pol.backward(states, tokens, mask, dlogp)
    assert (dtheta == 0).all()
    pol.theta -= 2.0 * dtheta
    assert np.array_equal(pol.theta, theta0)


@pytest.mark.parametrize("value", [0.1, 1 / 3, -7.3e5, 1e-300, 0.0])
@pytest.mark.parametrize("K", [1, 2, 7, 33])
def test_equal_rewards_give_exactly_zero(value, K):
    r = np.full((2, K), value)
    outs = [centred(r), standardized(r), standardized(r, ddof=1), standardized(r, eps=0.0)]
    if K > 1:
        outs.append(leave_one_out(r))
    for A in outs:
        assert not np.isnan(A).any()
        assert (A == 0).all()


def test_mean_of_identical_floats_is_inexact_so_the_guard_matters():
    # why _group_mean special-cases equal groups: np.mean(0.1 * 7) != 0.1
    assert np.mean(np.full(7, 0.1)) != 0.1
    assert (centred(np.full((1, 7), 0.1)) == 0).all()


def test_leave_one_out_at_k1_raises():
    with pytest.raises(ValueError, match="rewards.*K >= 2"):
        leave_one_out(np.ones((3, 1)))
    with pytest.raises(ValueError, match="rewards"):
        advantages(np.ones((3, 1)), "loo")


def test_hand_values():
    r = np.array([[1.0, 0.0, 0.0, 1.0], [3.0, 1.0, 2.0, 2.0]])
    assert np.array_equal(no_baseline(r), r)
    assert np.array_equal(centred(r), [[0.5, -0.5, -0.5, 0.5], [1.0, -1.0, 0.0, 0.0]])
    assert np.allclose(standardized(r, eps=0.0), [[1, -1, -1, 1], [2 ** .5, -2 ** .5, 0, 0]],
                       rtol=0, atol=1e-15)
    s1 = np.sqrt(1 / 3)                                       # Bessel std of [1, 0, 0, 1]
    assert np.allclose(standardized(r, eps=0.0, ddof=1)[0], np.array([.5, -.5, -.5, .5]) / s1)
    assert np.allclose(leave_one_out(r), [[2 / 3, -2 / 3, -2 / 3, 2 / 3], [4 / 3, -4 / 3, 0, 0]],
                       rtol=0, atol=1e-15)


# ---- properties ------------------------------------------------------------------------------

rewards_st = st.integers(1, 5).flatmap(lambda N: st.integers(2, 8).flatmap(
    lambda K: st.lists(st.floats(-1e3, 1e3), min_size=N * K, max_size=N * K).map(
        lambda v: np.array(v).reshape(N, K))))


@settings(max_examples=60, deadline=None)
@given(rewards_st)
def test_properties(r):
    N, K = r.shape
    for b in ("none", "mean", "standardized", "loo"):
        assert advantages(r, b).shape == (N, K)
    c = centred(r)
    assert np.allclose(c.sum(axis=1), 0, atol=1e-9 * (1 + abs(r).max()) * K)
    others = (r.sum(axis=1, keepdims=True) - r) / (K - 1)     # textbook leave-one-out
    assert np.allclose(leave_one_out(r), r - others, rtol=0, atol=1e-9 * (1 + abs(r).max()))
    z = standardized(r, eps=0.0)
    spread = r.std(axis=1) > 1e-6 * (1 + abs(r).max())
    assert np.allclose(z[spread].std(axis=1), 1.0, atol=1e-9)


# ---- exact enumeration over every group of K draws -------------------------------------------

def _enumerate_updates(pi, r, K):
    """E over all groups of K iid draws y_k ~ pi of (1/K) sum_k A_k (onehot(y_k) - pi), per
    baseline; each multiset weighted by its multinomial probability."""
    V = pi.size
    E = {b: np.zeros(V) for b in ("mean", "loo", "standardized")}
    total = 0.0
    for group in itertools.combinations_with_replacement(range(V), K):
        counts = np.bincount(group, minlength=V)
        weight = math.factorial(K) / np.prod([math.factorial(c) for c in counts]) \
            * np.prod(pi ** counts)
        total += weight
        rk = r[list(group)][None, :]                          # (1, K)
        score = np.eye(V)[list(group)] - pi                   # (K, V) grad log pi(y_k)
        for b in E:
            A = advantages(rk, b)[0]                          # (K,)
            E[b] += weight * (A @ score) / K
    assert abs(total - 1.0) < 1e-12
    return E


def enumeration_errors(seed=0):
    """Max abs error of E[centred] vs ((K-1)/K) grad J and E[loo] vs grad J over K = 2..6."""
    rng = np.random.default_rng(seed)
    worst = {"mean": 0.0, "loo": 0.0}
    for K in range(2, 7):
        for V in (3, 4):
            theta = rng.normal(size=V)
            pi = np.exp(theta - theta.max())
            pi /= pi.sum()
            r = rng.normal(size=V)
            gradJ = pi * r - pi * (pi @ r)                    # sum_y pi(y) r(y) (onehot(y) - pi)
            E = _enumerate_updates(pi, r, K)
            worst["mean"] = max(worst["mean"], abs(E["mean"] - (K - 1) / K * gradJ).max())
            worst["loo"] = max(worst["loo"], abs(E["loo"] - gradJ).max())
    return worst


def test_enumeration_centred_is_shrunk_by_k_minus_1_over_k_and_loo_is_unbiased():
    worst = enumeration_errors()
    assert worst["mean"] < 1e-12, worst                        # tolerance: rounding only
    assert worst["loo"] < 1e-12, worst


def standardized_cosine(seed=3, K=3, V=4):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=V)
    pi = np.exp(theta) / np.exp(theta).sum()
    r = rng.normal(size=V)
    gradJ = pi * r - pi * (pi @ r)
    Es = _enumerate_updates(pi, r, K)["standardized"]
    cos = Es @ gradJ / np.linalg.norm(Es) / np.linalg.norm(gradJ)
    return cos, Es / gradJ


def test_standardized_update_is_not_a_scaled_gradient():
    cos, ratio = standardized_cosine()
    assert cos < 1 - 1e-6, cos
    assert ratio.max() - ratio.min() > 1e-3, ratio             # coordinate-wise ratios differ


# ---- broadcast and bad input -------------------------------------------------------------------

def test_broadcast():
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert np.array_equal(broadcast(np.array([2.0, -1.0]), mask), [[2, 2, 0], [-1, 0, 0]])
    assert np.array_equal(broadcast(np.array([[2.0, -1.0]]), mask), [[2, 2, 0], [-1, 0, 0]])


# ---- the domain: K >= 1, |r| <= 1e150, ddof an int in {0, 1} ----------------------------------

@pytest.mark.parametrize("f", [no_baseline, centred, standardized, leave_one_out,
                               lambda r: advantages(r, "standardized", ddof=1)])
def test_k0_is_rejected_naming_rewards(f):
    with pytest.raises(ValueError, match=r"rewards: expected K >= 1"):
        f(np.zeros((2, 0)))


@pytest.mark.parametrize("ddof, exc", [(True, TypeError), (False, TypeError), (1.0, TypeError),
                                       (0.0, TypeError), (-1, ValueError), (2, ValueError)])
def test_ddof_must_be_the_int_0_or_1(ddof, exc):
    with pytest.raises(exc, match="ddof"):
        standardized(np.array([[0.0, 1.0]]), ddof=ddof)
    assert np.array_equal(standardized(np.array([[0.0, 1.0]]), ddof=np.int64(1)),
                          standardized(np.array([[0.0, 1.0]]), ddof=1))


@pytest.mark.parametrize("baseline", ["none", "mean", "standardized", "loo"])
@pytest.mark.parametrize("r", [[[1e200, -1e200]], [[1e308, 1e308, -1e308]], [[0.0, 2e150]]])
def test_rewards_beyond_1e150_are_rejected(baseline, r):
    with pytest.raises(ValueError, match=r"rewards: expected \|r\| <= 1e\+150 .*squares"):
        advantages(np.array(r), baseline)


def test_edge_of_the_domain_is_finite_and_exact():
    with np.errstate(all="raise"):
        z = standardized(np.array([[1e150, -1e150], [-1e150, -1e150]]), eps=0.0)
        assert np.array_equal(z, [[1.0, -1.0], [0.0, 0.0]])
        np.testing.assert_allclose(centred(np.array([[1e150, 1e150, -1e150]])),
                                   np.array([[2e150, 2e150, -4e150]]) / 3, rtol=1e-15)
    # a spread whose square underflows still standardizes to unit scale (eps = 0)
    z = standardized(np.array([[1e-200, -1e-200], [1e-160, 3e-160]]), eps=0.0)
    np.testing.assert_allclose(z, [[1.0, -1.0], [-1.0, 1.0]], rtol=1e-15)
    z = standardized(np.array([[1e-200, 2e-200, 4e-200]]), eps=0.0, ddof=1)
    c = np.array([-4.0, -1.0, 5.0]) / 3
    np.testing.assert_allclose(z, [c / np.sqrt((c * c).sum() / 2)], rtol=1e-14)


BAD = [
    (lambda: advantages(np.ones(4)), ValueError, "rewards"),
    (lambda: advantages("abc"), TypeError, "rewards"),
    (lambda: advantages(np.array([[1.0, np.nan]])), ValueError, "rewards"),
    (lambda: advantages(np.array([[1.0, np.inf]])), ValueError, "rewards"),
    (lambda: advantages(np.ones((2, 2)), "median"), ValueError, "baseline"),
    (lambda: advantages(np.ones((2, 2)), eps=-1.0), ValueError, "eps"),
    (lambda: advantages(np.ones((2, 2)), eps="x"), TypeError, "eps"),
    (lambda: advantages(np.ones((2, 2)), ddof=2), ValueError, "ddof"),
    (lambda: leave_one_out(np.ones((2, 1))), ValueError, "rewards"),
    (lambda: centred(np.ones((2, 2, 2))), ValueError, "rewards"),
    (lambda: no_baseline(None), TypeError, "rewards"),
    (lambda: broadcast(np.ones(3), np.ones((2, 2))), ValueError, "adv"),
    (lambda: broadcast(np.ones(2), np.full((2, 2), 0.5)), ValueError, "mask"),
    (lambda: broadcast(np.ones(2), np.array([[0.0, 1.0], [1.0, 1.0]])), ValueError, "mask"),
]


@pytest.mark.parametrize("call, exc, name", BAD)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()

"""Baselines: defined edge cases, the (K-1)/K self-inclusion bias and LOO's unbiasedness by
exact enumeration of every group of K draws."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.boundary import padded
from minirl_lm.pg import advantages as adv_mod
from minirl_lm.pg.advantages import (
    advantages,
    batch_std,
    broadcast,
    centred,
    leave_one_out,
    no_baseline,
    opo,
    reinforce_pp,
    reinforce_pp_baseline,
    remax,
    standardized,
)
from quiet import names, raises, silent

# ---- edge cases ------------------------------------------------------------------------------


@pytest.mark.parametrize("baseline", ["mean", "standardized"])
@pytest.mark.parametrize("ddof", [0, 1])
def test_k1_centred_and_standardized_are_bitwise_zero(baseline, ddof):
    r = np.random.default_rng(0).normal(size=(5, 1)) * 1e3
    A = advantages(r, baseline, ddof=ddof)
    assert A.shape == (5, 1)
    assert (A == 0).all() and not np.signbit(A).any()  # +0.0 bit pattern


def test_k1_update_is_bitwise_zero_through_the_policy():
    from minirl_lm.core.policy import TabularPolicy
    from minirl_lm.pg.reinforce import reinforce_loss

    rng = np.random.default_rng(1)
    pol = TabularPolicy(rng.normal(size=(3, 5)))
    theta0 = pol.theta.copy()
    states = np.arange(3)[:, None]  # (B=3, T=1), K = 1 per prompt
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
    outs = [centred(r), standardized(r), standardized(r, ddof=1), standardized(r, std_eps=0.0)]
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
    assert np.allclose(
        standardized(r, std_eps=0.0), [[1, -1, -1, 1], [2**0.5, -(2**0.5), 0, 0]], rtol=0, atol=1e-15
    )
    s1 = np.sqrt(1 / 3)  # Bessel std of [1, 0, 0, 1]
    assert np.allclose(standardized(r, std_eps=0.0, ddof=1)[0], np.array([0.5, -0.5, -0.5, 0.5]) / s1)
    assert np.allclose(
        leave_one_out(r), [[2 / 3, -2 / 3, -2 / 3, 2 / 3], [4 / 3, -4 / 3, 0, 0]], rtol=0, atol=1e-15
    )


# ---- properties ------------------------------------------------------------------------------

rewards_st = st.integers(1, 5).flatmap(
    lambda N: st.integers(2, 8).flatmap(
        lambda K: st.lists(st.floats(-1e3, 1e3), min_size=N * K, max_size=N * K).map(
            lambda v: np.array(v).reshape(N, K)
        )
    )
)


@settings(max_examples=60, deadline=None)
@given(rewards_st)
def test_properties(r):
    N, K = r.shape
    for b in ("none", "mean", "standardized", "loo"):
        assert advantages(r, b).shape == (N, K)
    c = centred(r)
    assert np.allclose(c.sum(axis=1), 0, atol=1e-9 * (1 + abs(r).max()) * K)
    others = (r.sum(axis=1, keepdims=True) - r) / (K - 1)  # textbook leave-one-out
    assert np.allclose(leave_one_out(r), r - others, rtol=0, atol=1e-9 * (1 + abs(r).max()))
    z = standardized(r, std_eps=0.0)
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
        weight = math.factorial(K) / np.prod([math.factorial(c) for c in counts]) * np.prod(pi**counts)
        total += weight
        rk = r[list(group)][None, :]  # (1, K)
        score = np.eye(V)[list(group)] - pi  # (K, V) grad log pi(y_k)
        for b in E:
            A = advantages(rk, b)[0]  # (K,)
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
            gradJ = pi * r - pi * (pi @ r)  # sum_y pi(y) r(y) (onehot(y) - pi)
            E = _enumerate_updates(pi, r, K)
            worst["mean"] = max(worst["mean"], abs(E["mean"] - (K - 1) / K * gradJ).max())
            worst["loo"] = max(worst["loo"], abs(E["loo"] - gradJ).max())
    return worst


def test_enumeration_centred_is_shrunk_by_k_minus_1_over_k_and_loo_is_unbiased():
    worst = enumeration_errors()
    assert worst["mean"] < 1e-12, worst  # tolerance: rounding only
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
    assert ratio.max() - ratio.min() > 1e-3, ratio  # coordinate-wise ratios differ


# ---- broadcast and bad input -------------------------------------------------------------------


def test_broadcast():
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert np.array_equal(broadcast(np.array([2.0, -1.0]), mask), [[2, 2, 0], [-1, 0, 0]])
    assert np.array_equal(broadcast(np.array([[2.0, -1.0]]), mask), [[2, 2, 0], [-1, 0, 0]])


# ---- the domain: K >= 1, |r| <= 1e150, ddof an int in {0, 1} ----------------------------------


@pytest.mark.parametrize(
    "f", [no_baseline, centred, standardized, leave_one_out, lambda r: advantages(r, "standardized", ddof=1)]
)
def test_k0_is_rejected_naming_rewards(f):
    with pytest.raises(ValueError, match=r"rewards: expected a non-empty array"):
        f(np.zeros((2, 0)))


@pytest.mark.parametrize(
    "ddof, exc",
    [(True, TypeError), (False, TypeError), (1.0, TypeError), (0.0, TypeError), (-1, ValueError), (2, ValueError)],
)
def test_ddof_must_be_the_int_0_or_1(ddof, exc):
    with pytest.raises(exc, match="ddof"):
        standardized(np.array([[0.0, 1.0]]), ddof=ddof)
    assert np.array_equal(
        standardized(np.array([[0.0, 1.0]]), ddof=np.int64(1)), standardized(np.array([[0.0, 1.0]]), ddof=1)
    )


@pytest.mark.parametrize("baseline", ["none", "mean", "standardized", "loo"])
@pytest.mark.parametrize("r", [[[1e200, -1e200]], [[1e308, 1e308, -1e308]], [[0.0, 2e150]]])
def test_rewards_beyond_1e150_are_rejected(baseline, r):
    with pytest.raises(ValueError, match=r"rewards: expected \|r\| <= 1e\+150 .*squares"):
        advantages(np.array(r), baseline)


def test_edge_of_the_domain_is_finite_and_exact():
    with np.errstate(all="raise"):
        z = standardized(np.array([[1e150, -1e150], [-1e150, -1e150]]), std_eps=0.0)
        assert np.array_equal(z, [[1.0, -1.0], [0.0, 0.0]])
        np.testing.assert_allclose(
            centred(np.array([[1e150, 1e150, -1e150]])), np.array([[2e150, 2e150, -4e150]]) / 3, rtol=1e-15
        )
    # a spread whose square underflows still standardizes to unit scale (std_eps = 0)
    z = standardized(np.array([[1e-200, -1e-200], [1e-160, 3e-160]]), std_eps=0.0)
    np.testing.assert_allclose(z, [[1.0, -1.0], [-1.0, 1.0]], rtol=1e-15)
    z = standardized(np.array([[1e-200, 2e-200, 4e-200]]), std_eps=0.0, ddof=1)
    c = np.array([-4.0, -1.0, 5.0]) / 3
    np.testing.assert_allclose(z, [c / np.sqrt((c * c).sum() / 2)], rtol=1e-14)


BAD = [
    (lambda: advantages(np.ones(4)), ValueError, "rewards"),
    (lambda: advantages("abc"), TypeError, "rewards"),
    (lambda: advantages(np.array([[1.0, np.nan]])), ValueError, "rewards"),
    (lambda: advantages(np.array([[1.0, np.inf]])), ValueError, "rewards"),
    (lambda: advantages(np.ones((2, 2)), "median"), ValueError, "baseline"),
    (lambda: advantages(np.ones((2, 2)), std_eps=-1.0), ValueError, "std_eps"),
    (lambda: advantages(np.ones((2, 2)), std_eps="x"), TypeError, "std_eps"),
    (lambda: advantages(np.ones((2, 2)), ddof=2), ValueError, "ddof"),
    (lambda: leave_one_out(np.ones((2, 1))), ValueError, "rewards"),
    (lambda: centred(np.ones((2, 2, 2))), ValueError, "rewards"),
    (lambda: no_baseline(None), TypeError, "rewards"),
    (lambda: broadcast(np.ones(3), np.ones((2, 2))), ValueError, "adv"),
    (lambda: broadcast(np.ones(2), np.full((2, 2), 0.5)), ValueError, "mask"),
    (lambda: reinforce_pp(np.ones((2, 2)), np.array([[0.0, 1.0], [1.0, 1.0]])), ValueError, "mask"),
]


@pytest.mark.parametrize("call, exc, name", BAD)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


# ---- folded from tests/test_kills_advantages_checks.py ---------------------------------------


def _message(exc_type, f, *args, **kwargs):
    with pytest.raises(exc_type) as e:
        f(*args, **kwargs)
    return str(e.value)


def test_equal_group_is_exactly_zero_beside_a_spread_group():
    # np.mean([0.1, 0.1, 0.1]) = (0.1 + 0.1 + 0.1) / 3 = 0.30000000000000004 / 3
    # = 0.10000000000000002 != 0.1: only the per-group equal-rewards rule gives exactly 0. The
    # second group (max 2 above, min 0 below the first group's 0.1) has mean 1.
    r = np.array([[0.1, 0.1, 0.1], [0.0, 1.0, 2.0]])
    assert r.mean(axis=1)[0] != 0.1
    want = np.array([[0.0, 0.0, 0.0], [-1.0, 0.0, 1.0]])
    assert np.array_equal(centred(r), want)
    # loo: (K / (K - 1)) (R - mean) = 1.5 * [-1, 0, 1]
    assert np.array_equal(leave_one_out(r), np.array([[0.0, 0.0, 0.0], [-1.5, 0.0, 1.5]]))
    # standardized, std_eps = 0: the second group has std sqrt(2/3), A = [-1, 0, 1] / sqrt(2/3)
    a = standardized(r, std_eps=0.0)
    assert np.array_equal(a[0], np.zeros(3))
    np.testing.assert_allclose(a[1], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)], rtol=1e-15)


def test_standardized_eps_is_added_to_the_std():
    # rewards [0, 2]: mean 1, c = [-1, 1], population std 1; std_eps = 1: A = c / (1 + 1) = [-0.5, 0.5]
    assert np.array_equal(standardized([[0.0, 2.0]], std_eps=1.0), np.array([[-0.5, 0.5]]))
    # std_eps = 3: c / 4
    assert np.array_equal(standardized([[0.0, 2.0]], std_eps=3.0), np.array([[-0.25, 0.25]]))


def test_standardized_bessel_std_at_two_responses():
    # K = 2, ddof = 1: dof = 1, std = sqrt(((-1)^2 + 1^2) / 1) = sqrt(2); A = [-1, 1] / sqrt(2)
    a = standardized([[0.0, 2.0]], std_eps=0.0, ddof=1)
    assert np.array_equal(a, np.array([[-1.0, 1.0]]) / np.sqrt(2.0))
    # ddof = 0: std = sqrt(2 / 2) = 1, A = [-1, 1]
    assert np.array_equal(standardized([[0.0, 2.0]], std_eps=0.0, ddof=0), np.array([[-1.0, 1.0]]))


def test_standardized_rescales_a_tiny_spread_with_eps_zero():
    # c = [-1e-160, 0, 1e-160] squares to (sub)normal dust; on the rescaled deviations
    # [-1, 0, 1] the std is 1e-160 * sqrt(2/3), so A = [-1, 0, 1] / sqrt(2/3) = +-sqrt(1.5)
    a = standardized([[-1e-160, 0.0, 1e-160]], std_eps=0.0)
    np.testing.assert_allclose(a, [[-np.sqrt(1.5), 0.0, np.sqrt(1.5)]], rtol=1e-15)


def test_standardized_mixed_batch_tiny_group_and_ordinary_group():
    # row 0 is ordinary (sum of squares 0.0467 < 1 but far above 1e-290): computed directly,
    # bit-identical to that group on its own, std = sqrt(sum c^2 / 3); row 1 is tiny and uses its
    # own scale max|c| = 1e-160 (not the batch's), giving +-sqrt(1.5) as alone.
    r = np.array([[0.0, 0.1, 0.3], [-1e-160, 0.0, 1e-160]])
    a = standardized(r, std_eps=0.0)
    c0 = r[0] - r[0].mean()
    assert np.array_equal(a[0], c0 / np.sqrt((c0 * c0).sum() / 3))
    assert np.array_equal(a[0], standardized(r[:1], std_eps=0.0)[0])
    # the rescaled std of this group differs in the last bit from the direct one: only the
    # direct path gives the value pinned above
    s = np.abs(c0).max()
    assert np.sqrt((c0 * c0).sum() / 3) != s * np.sqrt(((c0 / s) ** 2).sum() / 3)
    np.testing.assert_allclose(a[1], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)], rtol=1e-15)
    assert np.array_equal(a[1], standardized(r[1:], std_eps=0.0)[0])


def test_standardized_threshold_is_strict():
    # row 1: [-y, y, -z, z] with mean 0 and sum of squares exactly the double 1e-290 (the
    # threshold): it is computed directly, std = sqrt(1e-290 / 4) = 5.0000000000000005e-146,
    # whereas the rescaled std would be 5e-146. Row 0 is a tiny group, so the rescaling runs.
    y, z = 4.6848084366072725e-146, 5.296467682549694e-146
    r = np.array([[-1e-160, 1e-160, 0.0, 0.0], [-y, y, -z, z]])
    assert ((r[1] * r[1]).sum()) == 1e-290
    assert np.sqrt(1e-290 / 4) == 5.0000000000000005e-146
    a = standardized(r, std_eps=0.0)
    assert np.array_equal(a[1], r[1] / 5.0000000000000005e-146)
    assert not np.array_equal(a[1], r[1] / 5e-146)
    # row 0: c = [-1e-160, 1e-160, 0, 0], std = 1e-160 * sqrt(2 / 4): A = c / (1e-160 sqrt(0.5))
    np.testing.assert_allclose(a[0], [-np.sqrt(2.0), np.sqrt(2.0), 0.0, 0.0], rtol=1e-15)


def test_standardized_raises_no_floating_point_condition_on_a_mixed_batch():
    # row 0 (tiny): c = +-2^-530, c^2 = 2^-1060 exact, sum/4 = 2^-1061 exact, rescaled std
    # 2^-530 sqrt(0.5): A = [-sqrt 2, sqrt 2, 0, 0]. Row 1 (ordinary): mean 0 exactly
    # (-1 + 1 + 2e-154 - 2e-154), c^2 of 2e-154 is 4e-308 (normal), std sqrt(2 / 4):
    # A = r * sqrt 2. No operation underflows, so even np.errstate(all="raise") is silent.
    t = 2.0**-530
    r = np.array([[-t, t, 0.0, 0.0], [-1.0, 1.0, 2e-154, -2e-154]])
    with np.errstate(all="raise"):
        a = standardized(r, std_eps=0.0)
    np.testing.assert_allclose(a[0], [-np.sqrt(2.0), np.sqrt(2.0), 0.0, 0.0], rtol=1e-15)
    np.testing.assert_allclose(a[1], r[1] * np.sqrt(2.0), rtol=1e-15)


def test_advantages_defaults_and_pass_through():
    r = [[0.0, 2.0, 4.0]]
    # mean 2, c = [-2, 0, 2], sum c^2 = 8; ddof 0: std = sqrt(8/3); ddof 1: std = sqrt(8/2) = 2
    default = advantages(r)
    assert np.array_equal(default, advantages(r, baseline="standardized", std_eps=1e-8, ddof=0))
    np.testing.assert_allclose(
        default, [[-2 / (np.sqrt(8 / 3) + 1e-8), 0.0, 2 / (np.sqrt(8 / 3) + 1e-8)]], rtol=1e-15
    )
    # ddof = 1 passed through: c / (2 + 1e-8)
    np.testing.assert_allclose(advantages(r, ddof=1), [[-2 / (2 + 1e-8), 0.0, 2 / (2 + 1e-8)]], rtol=1e-15)
    # std_eps = 2 passed through, ddof 1: c / (2 + 2) = [-0.5, 0, 0.5]
    assert np.array_equal(advantages(r, std_eps=2.0, ddof=1), np.array([[-0.5, 0.0, 0.5]]))
    # std_eps default matters: rewards [0, 2], std 1: [-1, 1] / (1 + 1e-8), not / (1 + 1)
    np.testing.assert_allclose(advantages([[0.0, 2.0]]), [[-1 / (1 + 1e-8), 1 / (1 + 1e-8)]], rtol=1e-15)


def test_advantages_baseline_none_is_the_rewards():
    r = np.array([[1.0, 2.0, 4.0]])
    a = advantages(r, baseline="none")
    assert np.array_equal(a, r) and a is not r
    # mean of [1, 2, 6] is 3: [-2, -1, 3]
    assert np.array_equal(advantages([[1.0, 2.0, 6.0]], baseline="mean"), np.array([[-2.0, -1.0, 3.0]]))


def test_broadcast_error_messages():
    mask = np.ones((2, 3))
    assert (
        _message(ValueError, broadcast, np.zeros((1, 1, 1)), mask)
        == "adv: expected shape (2,) or (N, K), got (1, 1, 1)"
    )
    assert _message(ValueError, broadcast, np.zeros(3), mask) == "adv: expected shape (2,) or (N, K), got (3,)"
    assert (
        _message(ValueError, broadcast, np.zeros((1, 3)), mask)
        == "adv: expected 2 advantages (one per row of mask), got shape (1, 3)"
    )
    out = broadcast([[1.0, -2.0]], np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    assert np.array_equal(out, np.array([[1.0, 1.0, 0.0], [-2.0, -0.0, -0.0]]))


def test_mask_is_named_mask_in_errors_of_the_token_advantages():
    bad = np.array([[0.5, 1.0]])
    want = "mask: expected only 0 and 1, got value 0.5"
    assert _message(ValueError, broadcast, [1.0], bad) == want
    assert _message(ValueError, reinforce_pp, np.zeros((1, 2)), bad) == want
    assert _message(ValueError, reinforce_pp_baseline, [[1.0]], bad) == want


def test_returns_to_go_need_right_padding_and_say_where_holes_go():
    """REINFORCE++ sums over the later tokens: a hole is refused, and the error names the
    function that sums over the trained tokens of a row with holes."""
    msg = _message(ValueError, reinforce_pp, np.zeros((1, 3)), [[1.0, 0.0, 1.0]])
    assert msg == (
        "mask: expected right padding (1s then 0s in each row) for REINFORCE++'s returns to go "
        "(a sum over the later tokens), row 0 is [1, 0, 1]; a mask with holes (tool outputs) is "
        "accepted by the token-level objectives; here use minirl_lm.multiturn.values.returns_actions "
        "(mask: every token of the row, action_mask: the trained ones)"
    )


def test_the_token_advantages_take_holes_as_their_compacted_rows():
    """broadcast and REINFORCE++-baseline read the mask token by token: a row with holes gives
    its compacted row's values, scattered back (the whitening sums in another order: 1e-12)."""
    mask = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0]])
    packed = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    cols = [[0, 2, 3], [1]]

    def back(x):
        out = np.zeros_like(mask)
        for b, c in enumerate(cols):
            out[b, c] = x[b, : len(c)]
        return out

    assert np.array_equal(broadcast([2.0, -1.0], mask), back(broadcast([2.0, -1.0], packed)))
    r = [[1.0, 0.0]]
    np.testing.assert_allclose(
        reinforce_pp_baseline(r, mask), back(reinforce_pp_baseline(r, packed)), rtol=1e-12, atol=0
    )


def test_batch_std_and_token_whitening_values():
    # batch_std: c = [[-1, 1]], all rewards [0, 2]: std 1 (ddof 0): c / (1 + 1) with std_eps = 1
    assert np.array_equal(batch_std([[0.0, 2.0]], std_eps=1.0), np.array([[-0.5, 0.5]]))
    # reinforce_pp_baseline, K = 2, one token each: centred [-1, 1], mean 0, Bessel var 2,
    # std_eps 2: [-1, 1] / sqrt(2 + 2) = [-0.5, 0.5]
    out = reinforce_pp_baseline([[0.0, 2.0]], np.ones((2, 1)), std_eps=2.0)
    assert np.array_equal(out, np.array([[-0.5], [0.5]]))


def test_standardized_tiny_spread_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        standardized([[-1e-160, 0.0, 1e-160], [0.0, 0.1, 0.3]], std_eps=0.0)


def test_batch_std_does_not_depend_on_memory_order():
    # the batch std is taken over the rewards flattened prompt-major (row by row), whatever the
    # memory layout of the input: a Fortran-ordered array gives the same bits as a C-ordered one
    # (summed column by column, these rewards give a std that differs in the last bit).
    r = np.array([[0.1, 0.2, 0.6], [0.4, 0.8, 0.6], [0.9, 0.7, 0.6]])
    f = np.asfortranarray(r)
    flat = r.reshape(-1)
    dev = flat - flat.mean()
    s = np.abs(dev).max()
    std = s * np.sqrt(((dev / s) ** 2).sum() / 9)
    dev_f = f - f.mean()
    assert s * np.sqrt(((dev_f / s) ** 2).sum() / 9) != std
    c = r - r.mean(axis=1, keepdims=True)
    assert np.array_equal(batch_std(r, std_eps=0.0), c / std)
    assert np.array_equal(batch_std(f, std_eps=0.0), c / std)
    assert np.array_equal(batch_std(r.T.copy().T, std_eps=0.0), c / std)


# ---- folded from tests/test_mutation_kills.py ------------------------------------------------


def test_reinforce_pp_equal_returns_and_no_real_token_give_zeros_of_the_mask_shape():
    m = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    for rew, mask in ((np.zeros((2, 3)), m), (np.ones((2, 3)), np.zeros((2, 3)))):
        a = adv_mod.reinforce_pp(rew, mask, gamma=0.0)
        assert a.shape == (2, 3) and (a == 0).all()


def test_reinforce_pp_overflow_is_named_after_the_function_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:  # 1e308 + 1e308 = inf: returns to go beyond float64
            adv_mod.reinforce_pp([[1e308, 1e308]], [[1.0, 1.0]])
        assert str(e.value).startswith("reinforce_pp: expected a finite A, got NaN")
        assert "token_rewards in [1e+308, 1e+308]" in str(e.value)
        # finite returns whose variance is beyond float64: whitened on their own scale
        big = adv_mod.reinforce_pp([[1e200, 0.0], [-1e200, 0.0]], [[1.0, 1.0], [1.0, 1.0]], gamma=0.0, std_eps=0.0)
    one = adv_mod.reinforce_pp([[1.0, 0.0], [-1.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]], gamma=0.0, std_eps=0.0)
    np.testing.assert_allclose(big, one, rtol=1e-15)


def test_reinforce_pp_defaults_by_hand():
    """gamma = 1, std_eps = 1e-8, ddof = 1: returns to go [[3, 2], [1, 0]] over 3 real tokens."""
    r = np.array([[1.0, 2.0], [1.0, 0.0]])
    m = np.array([[1.0, 1.0], [1.0, 0.0]])
    G = np.array([3.0, 2.0, 1.0])
    c = G - 2.0
    want = c / np.sqrt((c**2).sum() / 2 + 1e-8)
    a = adv_mod.reinforce_pp(r, m)
    np.testing.assert_allclose(a[m > 0], want, rtol=1e-15)
    assert a[1, 1] == 0.0
    assert (adv_mod.reinforce_pp(r, m) == adv_mod.reinforce_pp(r, m, 1.0, 1e-8, 1)).all()


def test_reinforce_pp_baseline_defaults_by_hand_and_k1():
    r = np.array([[1.0, 3.0]])  # one group of K = 2: c = [-1, 1]
    m = np.array([[1.0, 1.0], [1.0, 0.0]])
    c = np.array([-1.0, -1.0, 1.0])  # the real tokens, row by row
    want = (c - c.mean()) / np.sqrt(((c - c.mean()) ** 2).sum() / 2 + 1e-8)
    with warnings.catch_warnings():  # padding is never divided by
        warnings.simplefilter("error")
        a = adv_mod.reinforce_pp_baseline(r, m)
    np.testing.assert_allclose(a[m > 0], want, rtol=1e-14)
    assert (a == adv_mod.reinforce_pp_baseline(r, m, 1e-8, 1)).all()
    z = adv_mod.reinforce_pp_baseline([[2.0], [5.0]], m)  # K = 1: exactly 0
    assert z.shape == (2, 2) and (z == 0).all()


def test_remax_bound_is_inclusive_and_the_message_exact():
    np.testing.assert_array_equal(
        adv_mod.remax([[0.0, 1.0]], [adv_mod.REWARD_MAX]), [[-adv_mod.REWARD_MAX, 1.0 - adv_mod.REWARD_MAX]]
    )
    with pytest.raises(ValueError) as e:
        adv_mod.remax([[0.0, 1.0]], [2e150])
    assert str(e.value) == "greedy_rewards: expected |r| <= 1e+150, got max 2e+150"
    with pytest.raises(ValueError, match=r"^greedy_rewards: expected shape \(1,\), got \(1, 1\)"):
        adv_mod.remax([[0.0, 1.0]], [[0.5]])


def test_opo_baselines_by_hand():
    # total length 1: the baseline is the one non-empty response's reward
    np.testing.assert_array_equal(adv_mod.opo([[1.0, 3.0]], [[1.0, 0.0]]), [[0.0, 2.0]])
    # fractional lengths are weights: baseline (0.25*1 + 0.25*3) / 0.5 = 2
    np.testing.assert_array_equal(adv_mod.opo([[1.0, 3.0]], [[0.25, 0.25]]), [[-1.0, 1.0]])
    # all-empty group: its own mean (2), not the batch's
    np.testing.assert_array_equal(
        adv_mod.opo([[1.0, 3.0], [5.0, 9.0]], [[0.0, 0.0], [1.0, 1.0]]), [[-1.0, 1.0], [-2.0, 2.0]]
    )
    # equal rewards in a group: exactly 0, though the weighted mean has a floating residue
    a = adv_mod.opo([[0.1, 0.1], [0.0, 3.0]], [[1.0, 2.0], [1.0, 1.0]])
    assert (a[0] == 0.0).all()
    np.testing.assert_array_equal(a[1], [-1.5, 1.5])


def test_batch_std_defaults_by_hand_and_equal_batch():
    r = np.array([[0.0, 1.0]])
    want = np.array([[-0.5, 0.5]]) / (0.5 + 1e-8)  # ddof = 0: std 0.5; std_eps = 1e-8
    np.testing.assert_array_equal(adv_mod.batch_std(r), want)
    np.testing.assert_array_equal(adv_mod.batch_std(r, 0.0, 1), np.array([[-0.5, 0.5]]) / np.sqrt(0.5))
    small = adv_mod.batch_std([[0.0, 0.5], [0.25, 0.25]], std_eps=0.0)  # spread below 1
    dev = np.array([0.0, 0.5, 0.25, 0.25]) - 0.25
    np.testing.assert_allclose(small, [[-0.25, 0.25], [0.0, 0.0]] / np.sqrt((dev**2).mean()), rtol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for std_eps in (0.0, 1e-8):
            z = adv_mod.batch_std([[2.0, 2.0], [2.0, 2.0]], std_eps=std_eps)
            assert z.shape == (2, 2) and (z == 0).all()
        z = adv_mod.batch_std([[2.0]], std_eps=0.0, ddof=1)
        assert z.shape == (1, 1) and (z == 0).all()


def test_reinforce_pp_accepts_ddof_0():
    # returns to go [0, -1]: centred [0.5, -0.5], variance 0.25 with ddof = 0
    np.testing.assert_allclose(
        adv_mod.reinforce_pp([[1.0, -1.0]], np.ones((1, 2)), ddof=0),
        [[0.5, -0.5]] / np.sqrt(0.25 + 1e-8),
        rtol=1e-15,
    )
    # one group [1, 0]: centred [0.5, -0.5] on one token each, variance 0.25 with ddof = 0
    np.testing.assert_allclose(
        adv_mod.reinforce_pp_baseline([[1.0, 0.0]], [[1.0], [1.0]], ddof=0),
        [[0.5], [-0.5]] / np.sqrt(0.25 + 1e-8),
        rtol=1e-15,
    )


def test_reinforce_pp_overflowing_returns_raise_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^reinforce_pp: expected a finite A.*token_rewards in"):
            adv_mod.reinforce_pp([[1e308, 1e308]], np.ones((1, 2)))  # 1e308 + 1e308 = inf


# ---- folded from tests/test_framework_estimators.py ------------------------------------------


def masks(rng, B, T, empty=True):
    L = rng.integers(1, T + 1, size=B)
    if empty:
        L[0] = 0
    L[-1] = T
    return (np.arange(T)[None, :] < L[:, None]).astype(float), L


def verl_masked_whiten(x, m):
    """verl torch_functional.masked_whiten: mean/var with the +1e-8 denominators, Bessel var."""
    mean = (x * m).sum() / (m.sum() + 1e-8)
    var = (((x - mean) ** 2) * m).sum() / (m.sum() + 1e-8) * m.sum() / (m.sum() - 1)
    return (x - mean) / np.sqrt(var + 1e-8)


def test_reinforce_pp_matches_verl():
    rng = np.random.default_rng(0)
    mask, _ = masks(rng, 7, 5, empty=False)
    r = rng.normal(size=mask.shape) * mask
    for gamma in (1.0, 0.9):
        G = np.zeros_like(r)
        run = np.zeros(7)
        for t in reversed(range(5)):  # verl's loop, mask carries
            new = r[:, t] + gamma * run
            G[:, t] = new * mask[:, t]
            run = new * mask[:, t] + run * (1 - mask[:, t])
        want = verl_masked_whiten(G, mask) * mask
        got = reinforce_pp(r, mask, gamma=gamma)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)  # verl's +1e-8 in means


def test_reinforce_pp_baseline_matches_verl():
    rng = np.random.default_rng(1)
    N, K, T = 3, 4, 5
    mask, _ = masks(rng, N * K, T, empty=False)
    r = rng.integers(0, 3, size=(N, K)) / 2.0
    s = r.reshape(-1) - np.repeat(r.mean(axis=1), K)  # id2mean subtracted
    want = verl_masked_whiten(s[:, None] * mask, mask) * mask
    np.testing.assert_allclose(reinforce_pp_baseline(r, mask), want, rtol=1e-7, atol=1e-9)


def test_remax_matches_verl():
    rng = np.random.default_rng(2)
    mask, _ = masks(rng, 6, 4)
    r = rng.normal(size=(3, 2))
    greedy = rng.normal(size=3)
    token_r = np.zeros_like(mask)  # outcome reward on the last token
    L = mask.sum(1).astype(int)
    token_r[np.arange(6)[L > 0], L[L > 0] - 1] = r.reshape(-1)[L > 0]
    returns = np.flip(np.cumsum(np.flip(token_r * mask, -1), -1), -1)
    want = returns - np.repeat(greedy, 2)[:, None] * mask  # verl compute_remax_...
    got = remax(r, greedy).reshape(-1)[:, None] * mask
    np.testing.assert_allclose(got[L > 0], want[L > 0], rtol=0, atol=1e-15)


def test_opo_matches_verl():
    rng = np.random.default_rng(3)
    r = rng.normal(size=(4, 5))
    L = rng.integers(1, 9, size=(4, 5)).astype(float)
    bsl = (L * r).sum(1) / L.sum(1)
    np.testing.assert_allclose(opo(r, L), r - bsl[:, None], rtol=0, atol=1e-15)


def test_batch_std_matches_trl():
    rng = np.random.default_rng(4)
    r = rng.normal(size=(3, 4))
    std = r.reshape(-1).std(ddof=1)  # nanstd: Bessel over the batch
    want = (r - r.mean(1, keepdims=True)) / (std + 1e-4)
    np.testing.assert_allclose(batch_std(r, std_eps=1e-4, ddof=1), want, rtol=1e-14)


def test_batch_std_is_the_centred_direction_scaled():
    r = np.array([[0.0, 1.0, 0.5], [1.0, 1.0, 0.0]])
    a = batch_std(r)
    c = centred(r)
    ratio = a[c != 0] / c[c != 0]
    assert np.allclose(ratio, ratio[0], rtol=1e-14) and ratio[0] > 0


def test_k1_and_equal_rewards_are_exactly_zero():
    mask = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    assert not reinforce_pp_baseline(np.array([[1.0], [2.0], [3.0]]), mask).any()  # K = 1
    assert not reinforce_pp_baseline(np.full((1, 3), 0.7), mask).any()
    assert not reinforce_pp(
        np.full((3, 2), 0.3) * np.array([[0, 1], [1, 0], [0, 0]]), mask
    ).any()  # equal returns on every real token
    assert not reinforce_pp(np.zeros((3, 2)), np.zeros((3, 2))).any()  # no real token
    assert not opo(np.array([[0.3], [0.1]]), np.array([[2], [0]])).any()
    assert not opo(np.full((2, 3), 0.1), np.ones((2, 3))).any()
    assert not batch_std(np.array([[1.0], [0.0]])).any()
    assert not batch_std(np.array([[1.0, 1.0], [0.0, 0.0]])).any()
    assert not batch_std(np.array([[2.0]]), ddof=1).any()
    assert not remax(np.array([[1.0, 1.0]]), np.array([1.0])).any()


def test_empty_responses_carry_nothing():
    rng = np.random.default_rng(5)
    mask, _ = masks(rng, 6, 4)  # row 0 is empty
    A = reinforce_pp(rng.normal(size=mask.shape), mask)
    assert not A[0].any() and not A[mask == 0].any()
    A = reinforce_pp_baseline(rng.normal(size=(2, 3)), mask)
    assert not A[0].any()
    r = np.array([[1.0, 0.0, 0.5]])
    assert np.array_equal(opo(r, [[0, 0, 0]]), r - r.mean())  # all empty: plain mean
    assert np.array_equal(opo(r, [[0, 1, 1]]), r - 0.25)  # empty one has no weight


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: reinforce_pp(np.ones((2, 3)), np.ones((2, 2))), "token_rewards"),
        (lambda: reinforce_pp(np.ones((2, 2)), np.ones((2, 2)), gamma=1.5), "gamma"),
        (lambda: reinforce_pp(np.full((2, 2), np.nan), np.ones((2, 2))), "token_rewards"),
        (lambda: reinforce_pp_baseline(np.ones((2, 2)), np.ones((3, 2))), "mask"),
        (lambda: reinforce_pp_baseline(np.ones((1, 2)), np.ones((2, 2)), ddof=2), "ddof"),
        (lambda: remax(np.ones((2, 2)), np.ones(3)), "greedy_rewards"),
        (lambda: opo(np.ones((2, 2)), -np.ones((2, 2))), "lengths"),
        (lambda: opo(np.ones((2, 2)), np.ones((2, 3))), "lengths"),
        (lambda: batch_std(np.ones(4)), "rewards"),
        (lambda: batch_std(np.ones((2, 0))), "rewards"),
        (lambda: batch_std(np.ones((2, 2)), std_eps=-1.0), "std_eps"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises((ValueError, TypeError), match=f"^{name}"):
        call()


def test_whitening_a_spread_beyond_float64_is_finite_not_an_error():
    # returns to go [0, -1e300]: a variance beyond float64, whitened on the scale 1e300
    np.testing.assert_allclose(
        reinforce_pp(np.array([[1e300, -1e300]]), np.ones((1, 2))), reinforce_pp([[1.0, -1.0]], np.ones((1, 2)))
    )
    # var + std_eps beyond float64 with a finite variance: c / sqrt(var + std_eps), not 0
    c = np.array([[5e153, -5e153]])  # returns to go with gamma = 0: var = 2 * 2.5e307 / 1 = 5e307
    a = reinforce_pp(c, np.ones((1, 2)), gamma=0.0, std_eps=1.7e308)
    np.testing.assert_allclose(a, c / np.sqrt(5e307) / np.sqrt(1 + 1.7e308 / 5e307), rtol=1e-14)
    A = batch_std(np.array([[1e150, -1e150]] * 40))  # squares of the spread stay finite
    assert np.isfinite(A).all()


# ---- overflow named at its root --------------------------------------------------------------


def test_opo_lengths_beyond_float64_are_named_and_silent():
    # sum_j |y_j| r_j with |y| = 1e308 overflowed (a warning, then NaN returned)
    msg = names(
        "opo", "lengths in [1e+308, 1e+308]", lambda: opo(np.array([[1.0, 2.0]]), np.array([[1e308, 1e308]]))
    )
    assert "expected a finite A" in msg
    # large but finite lengths: the same baseline as their scaled-down version
    np.testing.assert_allclose(silent(lambda: opo([[1.0, 3.0]], [[1e300, 3e300]])), [[-1.5, 0.5]], rtol=1e-15)


# ---- the shared pieces: the group mean and the relations -------------------------------------


def test_group_mean_bounded_rewards_and_right_padded():
    r = np.array([[0.1] * 7, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]])
    assert adv_mod.group_mean(r).tolist() == [[0.1], [4.0]]  # the common value itself, not 0.1 + 1e-17
    assert adv_mod.bounded_rewards(r) is None
    assert adv_mod.bounded_rewards(r, np.array([1e150, 0.0])) is None
    assert adv_mod.bounded_rewards(np.array([[2e150]])).startswith("rewards: expected |r| <= 1e+150")
    assert adv_mod.bounded_rewards(r, np.array([2e150, 0.0])).startswith("greedy_rewards: expected |r| <= 1e+150")
    rule = padded("a sum", "elsewhere")  # the relation on an argument `mask`
    assert rule(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])) is None
    msg = raises(ValueError, lambda: rule(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])))
    assert msg.startswith("mask: expected right padding") and "row 1 is [1, 0, 1]" in msg and "elsewhere" in msg
    names("mask", "right padding", lambda: reinforce_pp(np.ones((1, 3)), [[1.0, 0.0, 1.0]]))


def test_reinforce_pp_baseline_body_never_divides_by_padding():
    # the body (a caller building on it calls .core) is silent at padding and gives the same numbers
    r, m = np.array([[1.0, 3.0]]), np.array([[1.0, 1.0], [1.0, 0.0]])
    body = silent(lambda: reinforce_pp_baseline.core(r, m, 1e-8, 1))
    assert np.array_equal(body, reinforce_pp_baseline(r, m))

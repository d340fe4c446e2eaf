"""KL estimators: gradients against finite differences, exact KL and its theta gradients, and the
on-policy facts about k1, k2, k3 by enumeration of a small table."""

import warnings
from decimal import Decimal, getcontext, localcontext

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core import ops
from minirl_lm.pg import kl
from minirl_lm.pg.kl import (
    ESTIMATORS,
    adaptive_kl_coef,
    exact_kl,
    exact_kl_grad_theta,
    exact_reverse_kl_grad_theta,
    kl_in_reward,
    kl_penalty,
    kl_penalty_is,
    kl_penalty_straight_through,
    kl_per_token,
)
from minirl_lm.pg.reinforce import AGGS, token_weights
from quiet import names
from quiet import raises as _raises
from quiet import silent as _silent


def batch(rng, B=6, T=5):
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp = -rng.uniform(0.1, 3.0, size=(B, T)) * mask
    logp_ref = -rng.uniform(0.1, 3.0, size=(B, T)) * mask
    return logp, logp_ref, mask


def softmax(theta):
    e = np.exp(theta - theta.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ---- per-token estimators ----------------------------------------------------------------------


def test_hand_values_and_stability():
    u = np.array([[0.5, -0.3, 1e-10, 0.0]])
    mask = np.array([[1.0, 1.0, 1.0, 0.0]])
    k1, d1 = kl_per_token(u, np.zeros_like(u), mask, "k1")
    k2, d2 = kl_per_token(u, np.zeros_like(u), mask, "k2")
    k3, d3 = kl_per_token(u, np.zeros_like(u), mask, "k3")
    assert np.array_equal(k1, u * mask) and np.array_equal(d1, mask)
    assert np.allclose(k2[0, :3], u[0, :3] ** 2 / 2, rtol=1e-15) and np.array_equal(d2, u * mask)
    assert np.allclose(k3[0, :2], np.exp(-u[0, :2]) - 1 + u[0, :2], rtol=1e-14)
    assert np.allclose(d3[0, :2], 1 - np.exp(-u[0, :2]), rtol=1e-14)
    assert (k3 >= 0).all() and (k3[mask == 0] == 0).all() and (d3[mask == 0] == 0).all()


def k3_relative_error():
    """Max relative error of k3 against 60-digit Decimal arithmetic, |u| in [1e-12, 30]."""
    getcontext().prec = 60
    u = np.concatenate([np.logspace(-12, 1.5, 300), -np.logspace(-12, 1.5, 300)])[None, :]
    k, _ = kl_per_token(u, np.zeros_like(u), np.ones_like(u), "k3")
    exact = np.array([float(Decimal(-x).exp() - 1 + Decimal(x)) for x in u[0].tolist()])
    return np.max(np.abs(k[0] - exact) / exact)


def test_k3_is_accurate_near_zero():
    assert k3_relative_error() < 1e-14
    # the naive form and expm1(-u) + u alone both lose digits at u = 1e-10 (k3 = 5e-21)
    assert abs((np.exp(-1e-10) - 1 + 1e-10) / 5e-21 - 1) > 1e-3
    assert abs((np.expm1(-1e-10) + 1e-10) / 5e-21 - 1) > 1e-8


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("agg", AGGS)
def test_kl_penalty_dlogp_matches_finite_differences(estimator, agg):
    rng = np.random.default_rng(0)
    logp, logp_ref, mask = batch(rng)
    _, d = kl_penalty(logp, logp_ref, mask, estimator, agg)
    g = fd_grad(lambda x: kl_penalty(x, logp_ref, mask, estimator, agg)[0], logp)
    assert np.abs(d - g).max() < 1e-9  # central FD: h^2 k''' + 1e-16/h
    assert (d[mask == 0] == 0).all()


def test_kl_penalty_theta_gradient_through_the_policy():
    from minirl_lm.core.mdp import TokenMDP
    from minirl_lm.core.policy import TabularPolicy

    rng = np.random.default_rng(1)
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3)
    pol, ref = TabularPolicy(rng.normal(size=(mdp.S, 3))), TabularPolicy(rng.normal(size=(mdp.S, 3)))
    ro = mdp.rollout(pol, 5, rng)
    logp_ref, _ = ref.logp(ro.states, ro.tokens, ro.mask)

    def loss(th):
        lp, _ = TabularPolicy(th).logp(ro.states, ro.tokens, ro.mask)
        return kl_penalty(lp, logp_ref, ro.mask)[0]

    lp, _ = pol.logp(ro.states, ro.tokens, ro.mask)
    dtheta = pol.backward(ro.states, ro.tokens, ro.mask, kl_penalty(lp, logp_ref, ro.mask)[1])
    assert np.abs(dtheta - fd_grad(loss, pol.theta.copy(), h=1e-5)).max() < 1e-9


def test_kl_in_reward():
    logp = np.array([[-1.0, -2.0, 0.0], [-0.5, 0.0, 0.0]])
    logp_ref = np.array([[-1.5, -1.0, 0.0], [-0.25, 0.0, 0.0]])
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    r = kl_in_reward(np.array([1.0, 0.0]), logp, logp_ref, mask, beta=0.5)
    assert np.allclose(r, [1.0 - 0.5 * (0.5 - 1.0), 0.0 - 0.5 * (-0.25)], rtol=0, atol=1e-15)
    assert np.array_equal(kl_in_reward(np.array([1.0, 0.0]), logp, logp_ref, mask, 0.0), [1, 0])


def test_aggregation_weights_and_shared_pieces_are_core_ops():
    assert kl.agg_weights is ops.agg_weights and kl.AGGREGATION is ops.AGGREGATION  # eq. (pg_agg), once
    assert kl.log_ratio is ops.log_ratio


# ---- exact KL and its gradients ----------------------------------------------------------------


def test_exact_kl_zeros_and_inf():
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    q = np.array([[0.25, 0.25, 0.5], [0.2, 0.3, 0.5], [0.0, 0.5, 0.5]])
    k = exact_kl(p, q)
    assert np.isclose(k[0], np.log(2), rtol=1e-15) and k[1] == 0.0 and k[2] == np.inf


def test_exact_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    theta, theta_ref = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    d = rng.uniform(0.1, 1.0, size=3)
    fwd = lambda th: d @ exact_kl(softmax(th), softmax(theta_ref))
    rev = lambda th: d @ exact_kl(softmax(theta_ref), softmax(th))
    assert np.abs(exact_kl_grad_theta(theta, theta_ref, d) - fd_grad(fwd, theta)).max() < 1e-9
    assert np.abs(exact_reverse_kl_grad_theta(theta, theta_ref, d) - fd_grad(rev, theta)).max() < 1e-9
    assert np.allclose(
        exact_kl_grad_theta(theta, theta_ref), exact_kl_grad_theta(theta, theta_ref, np.ones(3)), rtol=0, atol=0
    )


def test_exact_gradient_with_impossible_tokens():
    theta = np.array([[0.0, 1.0, -np.inf]])
    theta_ref = np.array([[0.5, 0.0, 2.0]])
    g = exact_kl_grad_theta(theta, theta_ref)
    assert np.isfinite(g).all() and g[0, 2] == 0
    with pytest.raises(ValueError, match="theta"):
        exact_reverse_kl_grad_theta(theta, theta_ref)  # pi_ref > 0 = pi: infinite


# ---- the on-policy facts, by enumeration -------------------------------------------------------


def enumeration_facts(seed=4, S=3, V=4):
    """Exact expectations over y ~ pi(.|s) of each estimator and of its per-sample gradient
    (the sample is data: gradient through logp(y) only). Returns a dict of max abs errors."""
    from minirl_lm.core.policy import TabularPolicy

    rng = np.random.default_rng(seed)
    pol, ref = TabularPolicy(rng.normal(size=(S, V))), TabularPolicy(rng.normal(size=(S, V)))
    pi, pi_ref = pol.probs(), ref.probs()
    states = np.repeat(np.arange(S), V)[:, None]  # every (s, y) once: (S*V, 1)
    tokens = np.tile(np.arange(V), S)[:, None]
    mask = np.ones((S * V, 1))
    logp, _ = pol.logp(states, tokens, mask)
    logp_ref, _ = ref.logp(states, tokens, mask)
    KL = exact_kl(pi, pi_ref)  # (S,)
    out = {}
    for est in ESTIMATORS:
        k, dk = kl_per_token(logp, logp_ref, mask, est)  # (S*V, 1)
        Ek = (pi.reshape(-1) * k[:, 0]).reshape(S, V).sum(axis=1)
        # E[grad] = sum_y pi(y|s) dk(y) (onehot(y) - pi(.|s)), summed over states
        Eg = pol.backward(states, tokens, mask, pi.reshape(-1, 1) * dk)  # (S, V)
        out[est] = (np.abs(Ek - KL).max(), Eg)
    fwd = exact_kl_grad_theta(pol.theta, ref.theta)
    rev = exact_reverse_kl_grad_theta(pol.theta, ref.theta)
    return {
        "E[k1]-KL": out["k1"][0],
        "E[k3]-KL": out["k3"][0],
        "E[k2]-KL": out["k2"][0],
        "E[grad k1]": np.abs(out["k1"][1]).max(),
        "E[grad k2]-grad KL(pi||ref)": np.abs(out["k2"][1] - fwd).max(),
        "E[grad k3]-grad KL(ref||pi)": np.abs(out["k3"][1] - rev).max(),
        "E[grad k3]-grad KL(pi||ref)": np.abs(out["k3"][1] - fwd).max(),
    }


def test_on_policy_kl_facts_by_enumeration():
    e = enumeration_facts()
    for key in (
        "E[k1]-KL",
        "E[k3]-KL",
        "E[grad k1]",
        "E[grad k2]-grad KL(pi||ref)",
        "E[grad k3]-grad KL(ref||pi)",
    ):
        assert e[key] < 1e-12, (key, e[key])  # rounding only
    assert e["E[k2]-KL"] > 1e-3  # k2 is biased for the KL
    assert e["E[grad k3]-grad KL(pi||ref)"] > 1e-3  # k3 as a loss is the reverse KL


# ---- bad input ---------------------------------------------------------------------------------

M = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
L = -np.ones((2, 3)) * M
P = np.array([[0.5, 0.5], [0.2, 0.8]])
BAD = [
    (lambda: kl_per_token(L[0], L, M), ValueError, "logp"),
    (lambda: kl_per_token(L, L[:, :2], M), ValueError, "logp_ref"),
    (lambda: kl_per_token(L, L, M[:1]), ValueError, "mask"),
    (lambda: kl_per_token(L, L, M, "k4"), ValueError, "estimator"),
    (lambda: kl_per_token(L, np.where(M > 0, -np.inf, 0.0), M), ValueError, "logp_ref"),
    (lambda: kl_penalty(L, L, M, agg="max"), ValueError, "agg"),
    (lambda: kl_penalty(L, L, M, agg="constant", max_len=1), ValueError, "max_len"),
    (lambda: kl_penalty(L, L, M * 3), ValueError, "mask"),
    (lambda: kl_in_reward(np.ones(3), L, L, M, 0.1), ValueError, "rewards"),
    (lambda: kl_in_reward(np.ones(2), L, L, M, -0.1), ValueError, "beta"),
    (lambda: kl_in_reward(np.ones(2), L, L, M, None), TypeError, "beta"),
    (lambda: exact_kl(P, P[:1]), ValueError, "q"),
    (lambda: exact_kl(P * 2, P), ValueError, "p"),
    (lambda: exact_kl(P, -P), ValueError, "q"),
    (lambda: exact_kl("p", P), TypeError, "p"),
    (lambda: exact_kl_grad_theta(np.ones(3), np.ones((1, 3))), ValueError, "theta"),
    (lambda: exact_kl_grad_theta(np.ones((1, 3)), np.ones((2, 3))), ValueError, "theta_ref"),
    (lambda: exact_kl_grad_theta(np.ones((2, 3)), np.ones((2, 3)), np.ones(3)), ValueError, "weights"),
    (lambda: exact_kl_grad_theta(np.full((1, 2), -np.inf), np.ones((1, 2))), ValueError, "theta"),
    (lambda: exact_kl_grad_theta(np.ones((1, 2)), np.array([[0.0, -np.inf]])), ValueError, "theta_ref"),
    (lambda: exact_reverse_kl_grad_theta(np.array([[np.nan, 0.0]]), np.ones((1, 2))), ValueError, "theta"),
]


@pytest.mark.parametrize("call, exc, name", BAD)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


# ---------------------------------------------------------------- extremes


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("junk", [-800.0, 800.0, -1e300, 1.7e308])
def test_garbage_at_padding_changes_nothing(estimator, junk):
    logp = np.array([[-0.5, -1.0, 0.0], [-2.0, 0.0, 0.0]])
    logp_ref = np.array([[-0.7, -0.2, 0.0], [-1.0, 0.0, 0.0]])
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    clean = kl_penalty(logp, logp_ref, mask, estimator)
    lp, lr = logp.copy(), logp_ref.copy()
    lp[mask == 0], lr[mask == 0] = junk, -junk
    with np.errstate(all="raise"):
        loss, g = kl_penalty(lp, lr, mask, estimator)
        r = kl_in_reward(np.ones(2), lp, lr, mask, 0.1)
    assert loss == clean[0] and np.array_equal(g, clean[1]) and (g[mask == 0] == 0).all()
    np.testing.assert_array_equal(r, kl_in_reward(np.ones(2), logp, logp_ref, mask, 0.1))


def test_k3_extreme_log_ratios():
    u = np.array([[1e200, 800.0, 50.0, 0.3, 1e-10, -0.3, -700.0]])
    with np.errstate(all="raise"):  # the Taylor branch is not evaluated
        k, dk = kl_per_token(u, np.zeros_like(u), np.ones_like(u), "k3")
    np.testing.assert_allclose(k[0, :4], [1e200, 799.0, 49.0 + np.exp(-50.0), np.exp(-0.3) - 1 + 0.3], rtol=1e-15)
    np.testing.assert_allclose(dk[0, :2], [1.0, 1.0], rtol=0)
    assert np.isfinite(k).all() and np.isfinite(dk).all()
    # u = -800: exp(800) - 1 - 800 exceeds float64: a ValueError naming the function and the
    # ranges of its inputs, not +inf
    msg = names(
        "kl_per_token", "expected a finite k and dk", lambda: kl_per_token([[0.0]], [[800.0]], [[1.0]], "k3")
    )
    assert msg.endswith("from logp in [0, 0], logp_ref in [800, 800], mask in [1, 1]")
    names("kl_per_token", "expected a finite k", lambda: kl_per_token([[-800.0]], [[0.0]], [[1.0]], "k3"))


def test_exact_kl_without_warnings_where_p_and_q_vanish():
    p = np.array([[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])
    q = np.array([[0.0, 0.25, 0.75], [0.0, 1.0, 0.0]])
    with np.errstate(all="raise"):  # no 0 * inf where p = q = 0
        kl = exact_kl(p, q)
    np.testing.assert_allclose(kl[0], 0.5 * np.log(2) + 0.5 * np.log(0.5 / 0.75), rtol=1e-15)
    assert kl[1] == np.inf  # p > 0 = q


def _kl_of_logits(theta, theta_ref):
    """sum_s KL(softmax(theta_s) || softmax(theta_ref_s)) on the log scale (finite logits)."""
    lp = theta - np.logaddexp.reduce(theta, axis=1, keepdims=True)
    lq = theta_ref - np.logaddexp.reduce(theta_ref, axis=1, keepdims=True)
    return (np.exp(lp) * (lp - lq)).sum()


def test_exact_gradients_at_large_logit_scales():
    # finite logits at the 1e4 scale: pi_ref underflows to 0 but log pi_ref is finite
    g = exact_kl_grad_theta([[0.0, 0.0]], [[0.0, -1e4]])
    # closed form, V = 2, pi = (1/2, 1/2), log pi_ref = (0, -1e4) to rounding:
    # KL = log(1/2) + 5e3, grad_v = pi_v (log pi_v - log pi_ref_v - KL)
    kl = np.log(0.5) + 5e3
    np.testing.assert_allclose(g, [[0.5 * (np.log(0.5) - kl), 0.5 * (np.log(0.5) + 1e4 - kl)]], rtol=1e-14)
    rng = np.random.default_rng(4)
    theta = rng.normal(size=(3, 4)) * 3
    theta_ref = rng.normal(size=(3, 4)) * 1e4
    g = exact_kl_grad_theta(theta, theta_ref)
    fd = fd_grad(lambda th: _kl_of_logits(th, theta_ref), theta, h=1e-4)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * np.abs(g).max())
    # the reverse KL: gradient pi - pi_ref, with pi underflowing to 0 on a finite logit
    g = exact_reverse_kl_grad_theta([[0.0, -1e4]], [[0.0, 0.0]])
    np.testing.assert_array_equal(g, [[0.5, -0.5]])
    g = exact_reverse_kl_grad_theta(theta_ref, theta)
    fd = fd_grad(lambda th: _kl_of_logits(theta, th), theta_ref, h=1e-4)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    # a -inf logit still makes the KL infinite and raises
    with pytest.raises(ValueError, match="theta_ref"):
        exact_kl_grad_theta([[0.0, 0.0]], [[0.0, -np.inf]])
    with pytest.raises(ValueError, match="theta"):
        exact_reverse_kl_grad_theta([[0.0, -np.inf]], [[0.0, 0.0]])


# ---- folded from tests/test_kills_kl.py ------------------------------------------------------

ONE = [[1.0]]


K3_WHAT = "k3 = exp(-u) - 1 + u (u = logp - logp_ref)"


def test_log_ratio_argument_messages_name_each_argument():
    f = kl.kl_per_token
    assert (
        _raises(ValueError, lambda: f([0.0, 0.0], [[0.0, 0.0]], [[1.0, 1.0]]))
        == "logp: expected shape (B, T), got (2,)"
    )
    assert _raises(ValueError, lambda: f([[np.nan]], [[0.0]], ONE)) == "logp: expected no NaN, got 1 NaN entries"
    names("logp_ref", "expected shape (1, 2)", lambda: f([[0.0, 0.0]], [0.0, 0.0], [[1.0, 1.0]]))
    names("logp_ref", "expected no NaN", lambda: f([[0.0]], [[np.nan]], ONE))
    assert (
        _raises(ValueError, lambda: f([[0.0, 0.0]], [[0.0, 0.0, 0.0]], [[1.0, 1.0]]))
        == "logp_ref: expected shape (1, 2), got (1, 3)"
    )
    assert (
        _raises(ValueError, lambda: f([[0.0]], [[0.0]], [[0.5]])) == "mask: expected only 0 and 1, got value 0.5"
    )
    names("mask", "expected shape (1, 2)", lambda: f([[0.0, 0.0]], [[0.0, 0.0]], [[1.0, 1.0, 1.0]]))
    # logp is read first, then logp_ref, then the mask (each value and shape in turn)
    names("logp", "expected no NaN", lambda: f([[np.nan]], [[np.nan]], [[0.5]]))
    names("logp_ref", "expected no NaN", lambda: f([[0.0]], [[np.nan]], [[0.5]]))
    names("logp_ref", "expected shape (1, 1)", lambda: f([[0.0]], [[0.0, 0.0]], [[0.5]]))


def test_log_ratio_three_dimensional_logp_is_rejected():
    z = np.zeros((1, 1, 1))
    names("logp", "expected shape (B, T)", lambda: kl.kl_per_token(z, z, ONE))
    names("logp_ref", "expected shape (1, 1)", lambda: kl.kl_per_token([[0.0]], z, ONE))


def test_kl_penalty_is_names_logp_old_in_its_checks():
    f = kl.kl_penalty_is
    names("logp_old", "expected no NaN", lambda: f([[0.0]], [[np.nan]], [[0.0]], ONE))
    names("logp_old", "expected shape (1, 1)", lambda: f([[0.0]], [[0.0, 0.0]], [[0.0]], ONE))
    names("logp_old", "expected shape (1, 1)", lambda: f([[0.0]], [0.0], [[0.0]], ONE))
    # logp_ref (through the k3 estimate) is checked before logp_old
    names("logp_ref", "expected no NaN", lambda: f([[0.0]], [[np.nan]], [[np.nan]], ONE))
    assert (
        _raises(ValueError, lambda: f([[0.0]], [[0.0]], [[0.0]], ONE, "bad"))
        == "agg: expected one of ['seq_sum', 'token_mean', 'seq_mean_token_mean', 'constant', 'token_sum'], "
        "got 'bad'"
    )


def test_log_ratio_padding_is_exactly_zero_and_never_computed():
    # padding holds log-probs whose difference overflows (1e308 - (-1e308)); it is not computed
    logp = np.array([[-1.0, 1e308], [-2.0, 5.0]])
    logp_ref = np.array([[-1.5, -1e308], [-1.0, 3.0]])
    mask = np.array([[1.0, 0.0], [1.0, 1.0]])
    for _ in range(20):  # fresh output buffers: padding stays 0
        junk = np.full((2, 2), 7.0)
        del junk
        k, dk = _silent(lambda: kl.kl_per_token(logp, logp_ref, mask, "k1"))
        assert k.tolist() == [[0.5, 0.0], [-1.0, 2.0]]  # -1 + 1.5, -2 + 1, 5 - 3
        assert dk.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    # a mask row of zeros: every entry is padding, u = 0
    k, _ = _silent(lambda: kl.kl_per_token([[3.0]], [[1.0]], [[0.0]], "k1"))
    assert k.tolist() == [[0.0]]


def test_k1_overflow_of_the_log_ratio_is_a_silent_error():
    # 1e308 - (-1e308) = 2e308 > 1.8e308: the subtraction itself overflows
    assert _raises(ValueError, lambda: kl.kl_per_token([[1e308]], [[-1e308]], ONE, "k1")) == (
        "kl_per_token: expected a finite k, got inf (beyond float64) from logp in [1e+308, 1e+308], "
        "logp_ref in [-1e+308, -1e+308], mask in [1, 1]"
    )


def test_k2_overflow_of_the_square_is_a_silent_error():
    # u = 1e200: u^2 = 1e400 overflows, u itself does not
    names("kl_per_token", "expected a finite k,", lambda: kl.kl_per_token([[1e200]], [[0.0]], ONE, "k2"))


def test_k3_overflow_of_the_exponential_is_a_silent_error():
    # u = -800: exp(800) > e^709.78 overflows
    names("kl_per_token", "expected a finite k and dk", lambda: kl.kl_per_token([[-800.0]], [[0.0]], ONE, "k3"))
    # u = -inf (the subtraction overflowed): exp(inf) + (-inf) is invalid (NaN), dk3 = -inf
    names("kl_per_token", "got NaN", lambda: kl.kl_per_token([[-1e308]], [[1e308]], ONE))


def test_kl_penalty_overflow_of_the_sum_is_a_silent_error():
    # k1 = u = 1e308 at two tokens, seq_sum with B = 1: w = 1, the sum 2e308 overflows
    call = lambda: kl.kl_penalty([[1e308, 1e308]], [[0.0, 0.0]], [[1.0, 1.0]], "k1", "seq_sum")
    names("kl_penalty", "expected a finite loss,", call)
    # 16 tokens u = +-1e308: the pairwise sum meets +inf and -inf (invalid: NaN)
    lp = np.zeros((1, 16))
    lp[0, [0, 8]], lp[0, [1, 9]] = 1e308, -1e308
    call = lambda: kl.kl_penalty(lp, np.zeros((1, 16)), np.ones((1, 16)), "k1", "seq_sum")
    assert "NaN" in names("kl_penalty", "expected a finite loss", call)


def test_kl_in_reward_overflow_of_the_sum_over_tokens_is_a_silent_error():
    f = kl.kl_in_reward
    # sum_t u_t = 1e308 + 1e308 overflows
    names(
        "kl_in_reward",
        "expected a finite rewards",
        lambda: f([1.0], [[1e308, 1e308]], [[0.0, 0.0]], [[1.0, 1.0]], 1.0),
    )
    # u = [inf, -inf] (each subtraction overflows): their sum is NaN
    assert "NaN" in names(
        "kl_in_reward",
        "expected a finite rewards",
        lambda: f([1.0], [[1e308, -1e308]], [[-1e308, 1e308]], [[1.0, 1.0]], 1.0),
    )
    # beta sum_t u_t = 1e308 * (-2): r - (-2e308) overflows
    assert names(
        "kl_in_reward", "expected a finite rewards", lambda: f([1.0], [[-2.0]], [[0.0]], ONE, 1e308)
    ).endswith("beta = 1e+308")


def test_kl_in_reward_rewards_must_be_one_dimensional():
    assert (
        _raises(ValueError, lambda: kl.kl_in_reward([[1.0]], [[0.0]], [[0.0]], ONE, 0.1))
        == "rewards: expected shape (1,), got (1, 1)"
    )
    assert (
        _raises(ValueError, lambda: kl.kl_in_reward([1.0, 2.0], [[0.0]], [[0.0]], ONE, 0.1))
        == "rewards: expected shape (1,), got (2,)"
    )


def test_kl_penalty_is_overflow_of_the_ratio_is_a_silent_error():
    # log rho = 0 - (-800) = 800: exp overflows (rho k3 = inf * 0 at k3 = 0: NaN)
    names("kl_penalty_is", "got NaN", lambda: kl.kl_penalty_is([[0.0]], [[-800.0]], [[0.0]], ONE))
    # the agg check comes before the ratio check
    assert _raises(ValueError, lambda: kl.kl_penalty_is([[0.0]], [[-800.0]], [[0.0]], ONE, "bad")).startswith(
        "agg: "
    )


def test_exact_kl_grad_theta_overflow_is_a_silent_error():
    # weights 1e308 times pi (diff - KL) of size ~2.5e4: inf
    call = lambda: kl.exact_kl_grad_theta([[0.0, 0.0]], [[0.0, -1e5]], [1e308])
    names("exact_kl_grad_theta", "expected a finite grad, got inf", call)
    # log pi = [0, -1.7e308], log pi_ref = [-1.7e308, 0]: diff = [1.7e308, -1.7e308],
    # KL = 1.7e308, diff - KL = [0, -3.4e308 -> -inf] (overflow), pi = [1, 0]: 0 * -inf is NaN
    call = lambda: kl.exact_kl_grad_theta([[0.0, -1.7e308]], [[-1.7e308, 0.0]])
    assert "NaN" in names("exact_kl_grad_theta", "expected a finite grad", call)


def _is_batch():
    # valid tokens: u = logp - logp_ref = 2, log rho = logp - logp_old = 1; padding is garbage
    logp = np.array([[0.0, 0.0], [0.0, 5.0]])
    logp_old = np.array([[-1.0, -1.0], [-1.0, 900.0]])
    logp_ref = np.array([[-2.0, -2.0], [-2.0, 123.0]])
    mask = np.array([[1.0, 1.0], [1.0, 0.0]])
    return logp, logp_old, logp_ref, mask


def test_kl_penalty_is_hand_values_with_padding_garbage():
    logp, logp_old, logp_ref, mask = _is_batch()
    loss, g = _silent(lambda: kl.kl_penalty_is(logp, logp_old, logp_ref, mask))
    # k3 = e^-2 - 1 + 2 = 1 + e^-2, dk3 = 1 - e^-2, rho = e, token_mean w = 1/3 on 3 tokens:
    # loss = 3 (1/3) e (1 + e^-2) = e + e^-1; grad = (1/3) e (k3 + dk3) = (1/3) e 2 = 2e/3
    e = np.e
    np.testing.assert_allclose(loss, e + 1.0 / e, rtol=1e-14)
    np.testing.assert_allclose(g, [[2 * e / 3, 2 * e / 3], [2 * e / 3, 0.0]], rtol=1e-14)
    assert g[1, 1] == 0.0
    # agg="constant", max_len = 4: w = 1 / (B max_len) = 1/8
    loss, g = _silent(lambda: kl.kl_penalty_is(logp, logp_old, logp_ref, mask, "constant", 4))
    np.testing.assert_allclose(loss, 3 * e * (1 + e**-2) / 8, rtol=1e-14)
    np.testing.assert_allclose(g, [[2 * e / 8, 2 * e / 8], [2 * e / 8, 0.0]], rtol=1e-14)


def test_kl_penalty_is_default_aggregation_is_token_mean():
    logp, logp_old, logp_ref, mask = _is_batch()
    loss, g = kl.kl_penalty_is(logp, logp_old, logp_ref, mask)
    loss_tm, g_tm = kl.kl_penalty_is(logp, logp_old, logp_ref, mask, "token_mean")
    assert loss == loss_tm and np.array_equal(g, g_tm)
    # seq_sum: w = 1/B = 1/2 instead of 1/3: a different answer
    loss_ss, _ = kl.kl_penalty_is(logp, logp_old, logp_ref, mask, "seq_sum")
    np.testing.assert_allclose(loss_ss, 3 * np.e * (1 + np.e**-2) / 2, rtol=1e-14)
    assert loss_ss != loss


def test_k3_series_applies_strictly_inside_005():
    # |u| = 0.05 exactly is outside the series branch: expm1(-u) + u
    for u in (0.05, -0.05):
        k, _ = kl.kl_per_token([[u]], [[0.0]], ONE, "k3")
        assert k[0, 0] == np.expm1(-u) + u


def test_k3_series_is_correctly_rounded_at_these_points():
    # the series to u^8 (coefficient 1/8! = 1/40320) gives the float64 nearest to the exact
    # exp(-u) - 1 + u here (50-digit decimal reference); the u^8 term decides the last bit
    for u in (-0.03147193, -0.02754979):
        with localcontext() as ctx:
            ctx.prec = 50
            x = Decimal(u)  # the float's exact value
            want = float((-x).exp() - 1 + x)
        k, _ = kl.kl_per_token([[u]], [[0.0]], ONE, "k3")
        assert k[0, 0] == want


def test_exact_kl_argument_messages():
    p = [[0.5, 0.5]]
    names("q", "expected shape (1, 2)", lambda: kl.exact_kl(p, [0.5, 0.5]))
    assert (
        _raises(ValueError, lambda: kl.exact_kl(p, [[0.5, 0.25, 0.25]])) == "q: expected shape (1, 2), got (1, 3)"
    )


def test_exact_kl_row_sum_tolerance_is_1e_9():
    # 1 + 5e-9 is off by more than 1e-9: rejected (numpy prints the sum as 1.)
    names(
        "p",
        "expected rows of probabilities (>= 0, summing to 1)",
        lambda: kl.exact_kl([[0.5, 0.5 + 5e-9]], [[0.5, 0.5]]),
    )
    # 1 + 5e-10 is within: accepted; KL(p || p) = sum p (log p - log p) = 0 exactly
    out = kl.exact_kl([[0.5, 0.5 + 5e-10]], [[0.5, 0.5 + 5e-10]])
    assert out.tolist() == [0.0]


def test_exact_kl_message_shows_the_first_four_row_sums():
    p = [[0.5, 0.5]] * 4 + [[1.0, 1.0]]  # the fifth row sums to 2
    msg = names(
        "p",
        "expected rows of probabilities (>= 0, summing to 1), got row sums",
        lambda: kl.exact_kl(p, [[0.5, 0.5]] * 5),
    )
    assert msg.endswith(" and min 0.5")  # the sums themselves: NumPy's print format


def test_softmax_table_argument_messages():
    for f in (kl.exact_kl_grad_theta, kl.exact_reverse_kl_grad_theta):
        names("theta_ref", "expected shape (1, 2), got (2,)", lambda: f([[0.0, 0.0]], [0.0, 0.0]))
        assert (
            _raises(ValueError, lambda: f([[0.0, 0.0]], [[0.0, 0.0, 0.0]]))
            == "theta_ref: expected shape (1, 2), got (1, 3)"
        )
        assert (
            _raises(ValueError, lambda: f(np.zeros((1, 0)), np.zeros((1, 0))))
            == "theta: expected a non-empty array (every axis of length >= 1), got shape (1, 0)"
        )
        names("weights", "expected shape (1,), got (1, 1)", lambda: f([[0.0, 0.0]], [[0.0, 0.0]], [[1.0]]))
        names("weights", "expected shape (1,)", lambda: f([[0.0, 0.0]], [[0.0, 0.0]], [1.0, 1.0]))
        assert (
            _raises(ValueError, lambda: f([[-np.inf, -np.inf]], [[0.0, 0.0]]))
            == "theta: expected a finite entry in every row (-inf everywhere has no softmax), got 1 all -inf "
            "rows, the first at (0,)"
        )
        names("theta_ref", "expected a finite entry in every row", lambda: f([[0.0, 0.0]], [[-np.inf, -np.inf]]))


def test_exact_kl_grad_theta_infinite_kl_message():
    # pi > 0 = pi_ref at the second token
    assert _raises(ValueError, lambda: kl.exact_kl_grad_theta([[0.0, 0.0]], [[0.0, -np.inf]])) == (
        "theta_ref: expected a finite logit wherever theta has one "
        "(pi_ref > 0 wherever pi > 0, else the KL is infinite)"
    )


def test_exact_reverse_kl_grad_theta_infinite_kl_message():
    # pi_ref > 0 = pi at the second token
    call = lambda: kl.exact_reverse_kl_grad_theta([[0.0, -np.inf]], [[0.0, 0.0]])
    assert _raises(ValueError, call) == (
        "theta: expected a finite logit wherever theta_ref has one "
        "(pi > 0 wherever pi_ref > 0, else the KL is infinite)"
    )


def test_exact_reverse_kl_grad_theta_extreme_weights_stay_finite_and_silent():
    # |d (pi - pi_ref)| <= |d|: the largest float weight cannot overflow
    big = np.finfo(np.float64).max
    # pi = [1, e^-1e4 = 0], pi_ref = [0, 1] (both finite KLs on the log scale)
    g = _silent(lambda: kl.exact_reverse_kl_grad_theta([[0.0, -1e4]], [[-1e4, 0.0]], [big]))
    assert g.tolist() == [[big, -big]]  # pi - pi_ref = [1, -1]


# ---- folded from tests/test_mutation_kills.py ------------------------------------------------

LOGP = np.array([[-1.0, -2.0, -0.5], [-0.3, -1.2, 0.0]])


LOGP_REF = np.array([[-1.1, -1.9, -0.7], [-0.2, -1.0, 0.0]])


MASK = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])


def _k3(u):
    return np.exp(-u) - 1.0 + u


def test_kl_straight_through_defaults_and_constant_weights_by_hand():
    u = (LOGP - LOGP_REF) * MASK
    loss, g = kl.kl_penalty_straight_through(LOGP, LOGP_REF, MASK)  # k3, token_mean
    np.testing.assert_allclose(loss, (_k3(u) * MASK).sum() / 5, rtol=1e-14)
    np.testing.assert_allclose(g, u / 5, rtol=1e-14)
    loss, g = kl.kl_penalty_straight_through(LOGP, LOGP_REF, MASK, "k1", "constant", 5)
    np.testing.assert_allclose(loss, u.sum() / 10, rtol=1e-14)  # w = mask / (B max_len)
    np.testing.assert_allclose(g, u / 10, rtol=1e-14)


def test_kl_is_by_hand_and_constant_weights():
    logp_old = LOGP + np.array([[0.1, -0.2, 0.0], [0.3, 0.0, 0.0]])
    u = (LOGP - LOGP_REF) * MASK
    rho = np.exp(LOGP - logp_old) * MASK
    k3 = _k3(u) * MASK
    dk3 = (1.0 - np.exp(-u)) * MASK
    for agg, max_len, denom in (("token_mean", None, 5.0), ("constant", 4, 8.0)):
        loss, g = kl.kl_penalty_is(LOGP, logp_old, LOGP_REF, MASK, agg, max_len)
        np.testing.assert_allclose(loss, (rho * k3).sum() / denom, rtol=1e-14)
        np.testing.assert_allclose(g, rho * (k3 + dk3) / denom, rtol=1e-14, atol=1e-17)


def test_kl_is_ignores_padding_values_and_mask_dtype():
    """Padding log-probs are never read (a huge old log-ratio there is harmless); a float32 or
    integer mask gives the bitwise float64 answer."""
    logp, logp_old = LOGP.copy(), LOGP.copy()
    logp[1, 2], logp_old[1, 2] = 0.0, -1000.0  # padding: ratio e^1000
    base = kl.kl_penalty_is(logp, LOGP, LOGP_REF, MASK)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = kl.kl_penalty_is(logp, logp_old, LOGP_REF, MASK)
    assert got[0] == base[0] and (got[1] == base[1]).all()
    m3 = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    lp = np.array([[-1.0, -2.0, -0.5], [-0.3, -1.2, -0.1], [-0.7, -0.1, -0.1]])
    lo = lp + 0.1
    ref = lp - 0.2
    want = kl.kl_penalty_is(lp, lo, ref, m3, "seq_mean_token_mean")
    for mask in (m3.astype(np.float32), m3.astype(int)):
        got = kl.kl_penalty_is(lp, lo, ref, mask, "seq_mean_token_mean")
        assert got[0] == want[0] and (got[1] == want[1]).all() and got[1].dtype == np.float64


def test_kl_is_overflow_message_is_exact_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            kl.kl_penalty_is([[0.0]], [[-800.0]], [[0.0]], [[1.0]])
    assert str(e.value) == (
        "kl_penalty_is: expected a finite loss and dloss_dlogp, got NaN (beyond float64) from logp in [0, 0], "
        "logp_ref in [0, 0], logp_old in [-800, -800], mask in [1, 1]"
    )


def test_adaptive_kl_coef_edges_by_hand():
    assert kl.adaptive_kl_coef(0.1, 0.0, 0.2, 1.0, 5.0) == 0.0  # mult exactly 0: allowed
    assert kl.adaptive_kl_coef(0.1, 0.3, 0.2, 100.0, 0.0) == 0.1  # no step: unchanged
    assert kl.adaptive_kl_coef(0.0, 0.3, 0.2, 100.0, 8.0) == 0.0  # beta = 0 stays 0
    assert kl.adaptive_kl_coef(0.5, 0.21, 0.2, 0.5, 0.5) == 0.5 * (1.0 + (0.21 / 0.2 - 1.0))
    assert kl.adaptive_kl_coef(1.0, 0.4, 0.2, 10.0, 5.0) == 1.1  # error clipped at +0.2
    with pytest.raises(ValueError) as e:
        kl.adaptive_kl_coef(0.1, 0.0, 0.2, 1.0, 6.0)
    assert str(e.value) == ("n_steps: expected n_steps <= horizon / 0.2 = 5 (else beta turns negative), got 6")


def test_kl_is_logp_old_shape_messages_are_exact():
    with pytest.raises(ValueError) as e:
        kl.kl_penalty_is(LOGP, [[0.0]], LOGP_REF, MASK)
    assert str(e.value) == "logp_old: expected shape (2, 3), got (1, 1)"
    with pytest.raises(ValueError) as e:
        kl.kl_penalty_is(LOGP, [0.0, 0.0, 0.0], LOGP_REF, MASK)
    assert str(e.value) == "logp_old: expected shape (2, 3), got (3,)"


def test_error_messages_name_the_type_of_a_non_array_argument():
    from minirl_lm.boundary import number

    with pytest.raises(TypeError) as e:
        number()("abc", "beta", {})
    assert str(e.value) == "beta: expected a real number, got str 'abc'"
    with pytest.raises(TypeError) as e:
        kl.kl_penalty_is(LOGP, [["a", "b", "c"], ["d", "e", "f"]], LOGP_REF, MASK)
    assert str(e.value).startswith("logp_old: expected a real-valued array, got list [['a', 'b', 'c']")


def test_log_ratio_mask_shape_message_and_silent_overflow():
    with pytest.raises(ValueError) as e:
        kl.kl_per_token(LOGP, LOGP_REF, [[1.0, 1.0], [1.0, 0.0]])
    assert str(e.value) == "mask: expected shape (2, 3), got (2, 2)"
    for est in ("k1", "k2", "k3"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the subtraction overflows: no warning
            with pytest.raises(ValueError) as e:
                kl.kl_per_token([[1e308]], [[-1e308]], [[1.0]], est)
        assert str(e.value).startswith("kl_per_token: expected a finite k")


def test_logit_spread_beyond_float64_is_an_error_naming_the_table():
    for theta, theta_ref, name in (
        ([[1e308, -1e308]], [[0.0, 0.0]], "theta"),
        ([[0.0, 0.0]], [[1e308, -1e308]], "theta_ref"),
    ):
        for f in (kl.exact_kl_grad_theta, kl.exact_reverse_kl_grad_theta):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with pytest.raises(ValueError) as e:
                    f(theta, theta_ref)
            assert str(e.value) == (
                f"{name}: expected the finite logits of each row within float64 of the row's maximum, "
                "got a spread beyond float64 in row 0"
            )
    # a spread within float64 is fine: 1e308 - (-7e307) = 1.7e308
    g = kl.exact_kl_grad_theta([[1e308, -7e307]], [[0.0, 0.0]])
    assert np.isfinite(g).all()


def test_log_ratio_is_exactly_zero_at_padding_whatever_is_there():
    lp = np.array([[-1.0, 1e308, -5.0]])
    ref = np.array([[-2.0, -1e308, 7.0]])
    for est in ("k1", "k2", "k3"):
        k, dk = kl.kl_per_token(lp, ref, [[1.0, 0.0, 0.0]], est)
        assert (k[0, 1:] == 0).all() and (dk[0, 1:] == 0).all()


# ---- folded from tests/test_framework_estimators.py ------------------------------------------


def masks(rng, B, T, empty=True):
    L = rng.integers(1, T + 1, size=B)
    if empty:
        L[0] = 0
    L[-1] = T
    return (np.arange(T)[None, :] < L[:, None]).astype(float), L


def kl_batch(rng, B=5, T=4):
    mask, _ = masks(rng, B, T)
    logp = -rng.uniform(0.1, 2.0, size=(B, T)) * mask
    logp_ref = -rng.uniform(0.1, 2.0, size=(B, T)) * mask
    logp_old = -rng.uniform(0.1, 2.0, size=(B, T)) * mask
    return logp, logp_old, logp_ref, mask


@pytest.mark.parametrize("est", ["k1", "k3"])
@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean"])
def test_straight_through_value_of_estimator_gradient_of_k2(est, agg):
    rng = np.random.default_rng(6)
    logp, _, logp_ref, mask = kl_batch(rng)
    loss, d = kl_penalty_straight_through(logp, logp_ref, mask, est, agg)
    assert loss == kl_penalty(logp, logp_ref, mask, est, agg)[0]  # verl: forward value
    fd = fd_grad(lambda x: kl_penalty(x, logp_ref, mask, "k2", agg)[0], logp)  # k2's gradient
    np.testing.assert_allclose(d, fd, rtol=0, atol=1e-9)  # FD error ~1e-10 (gradcheck.py)
    u = (logp - logp_ref) * mask  # verl: d/dlogp 0.5 u^2 = u
    np.testing.assert_array_equal(d, token_weights(mask, agg) * u)


def test_importance_weighted_k3_gradient_and_trl_definition():
    rng = np.random.default_rng(7)
    logp, logp_old, logp_ref, mask = kl_batch(rng)
    f = lambda x: kl_penalty_is(x, logp_old, logp_ref, mask)[0]
    loss, d = kl_penalty_is(logp, logp_old, logp_ref, mask)
    np.testing.assert_allclose(d, fd_grad(f, logp), rtol=0, atol=1e-9)
    u_trl = logp_ref - logp  # TRL: exp(ref - logp) - (ref - logp) - 1
    per_token = (np.exp(u_trl) - u_trl - 1) * np.exp(logp - logp_old)  # * coef_1
    want = (per_token * mask).sum() / mask.sum()  # token_mean
    assert abs(loss - want) < 1e-14


def test_importance_weighted_k3_at_rho_one_has_the_gradient_of_k2():
    rng = np.random.default_rng(8)
    logp, _, logp_ref, mask = kl_batch(rng)
    loss, d = kl_penalty_is(logp, logp, logp_ref, mask)  # first epoch: pi_old = pi
    assert loss == kl_penalty(logp, logp_ref, mask, "k3")[0]  # value: k3 (rho = 1 exactly)
    _, d2 = kl_penalty(logp, logp_ref, mask, "k2")  # eq. (kl_is_at_one): k3 + 1 - e^-u = u
    np.testing.assert_allclose(d, d2, rtol=0, atol=1e-15)


def test_kl_variants_errors():
    m = np.ones((1, 2))
    with pytest.raises(ValueError, match="^kl_penalty_is: expected a finite loss"):
        kl_penalty_is(np.array([[800.0, 0]]), np.zeros((1, 2)), np.zeros((1, 2)), m)
    with pytest.raises(ValueError, match="^logp_old"):
        kl_penalty_is(np.zeros((1, 2)), np.zeros((1, 3)), np.zeros((1, 2)), m)
    with pytest.raises(ValueError, match="^estimator"):
        kl_penalty_straight_through(np.zeros((1, 2)), np.zeros((1, 2)), m, "k4")


def test_adaptive_coefficient_matches_verl():
    def verl(value, kl, target, horizon, n):
        err = np.clip(kl / target - 1, -0.2, 0.2)
        return value * (1 + err * n / horizon)

    for cur in (0.0, 0.05, 0.1, 0.11, 0.5, 3.0):
        assert adaptive_kl_coef(0.001, cur, 0.1, 10000, 256) == verl(0.001, cur, 0.1, 10000, 256)
    assert adaptive_kl_coef(0.2, 0.1, 0.1, 100, 7) == 0.2  # on target: unchanged
    with pytest.raises(ValueError, match="^target_kl"):
        adaptive_kl_coef(0.1, 0.1, 0.0, 10, 1)
    with pytest.raises(ValueError, match="^n_steps"):
        adaptive_kl_coef(0.1, 0.0, 0.1, 10, 100)


# ---- overflow named at its root --------------------------------------------------------------


def test_adaptive_kl_coef_overflow_is_named_not_inf():
    # n_steps / horizon = 1 / 5e-324 overflows: it returned inf (or NaN at beta = 0)
    msg = names(
        "adaptive_kl_coef",
        "expected a finite beta, got inf",
        lambda: kl.adaptive_kl_coef(1.0, 2.0, 1.0, 5e-324, 1.0),
    )
    assert msg.endswith("from beta = 1, current_kl = 2, target_kl = 1, horizon = 4.94066e-324, n_steps = 1")
    names("adaptive_kl_coef", "got NaN", lambda: kl.adaptive_kl_coef(0.0, 2.0, 1.0, 5e-324, 1.0))
    # a finite multiplier of a huge beta
    names("adaptive_kl_coef", "beta = 1e+308", lambda: kl.adaptive_kl_coef(1e308, 2.0, 1.0, 1.0, 4.0))
    # on target, err = 0: any horizon is fine
    assert _silent(lambda: kl.adaptive_kl_coef(0.3, 1.0, 1.0, 5e-324, 1.0)) == 0.3


def test_overflow_names_the_function_and_the_ranges_of_its_inputs():
    m = np.ones((1, 2))
    big, low = np.full((1, 2), 1e308), np.full((1, 2), -1.0)
    msg = names("kl_in_reward", "expected a finite rewards", lambda: kl.kl_in_reward([1.0], low, -big, m, 0.1))
    assert msg.endswith("logp_ref in [-1e+308, -1e+308], mask in [1, 1], rewards in [1, 1], beta = 0.1")
    names("kl_in_reward", "logp in [1e+308, 1e+308]", lambda: kl.kl_in_reward([1.0], big, low, m, 0.1))
    names("kl_penalty", "logp_ref in [-1e+308, -1e+308]", lambda: kl.kl_penalty(low, -big, m, "k1", "seq_sum"))
    names(
        "kl_per_token",
        "logp_ref in [1e+200, 1e+200]",
        lambda: kl.kl_per_token(low, np.full((1, 2), 1e200), m, "k2"),
    )


def test_kl_penalty_is_product_overflow_is_named_and_silent():
    # rho = e^700 and k3 = e^705 - ... are finite; their product is not (it warned, returned inf)
    msg = names(
        "kl_penalty_is",
        "expected a finite loss,",
        lambda: kl.kl_penalty_is(
            np.zeros((1, 2)), np.full((1, 2), -700.0), np.full((1, 2), 705.0), np.ones((1, 2))
        ),
    )
    assert msg.endswith("logp_ref in [705, 705], logp_old in [-700, -700], mask in [1, 1]")


def test_kl_penalty_straight_through_sum_overflow_is_named_and_silent():
    # k1 = 1e308 at two tokens of one response, seq_sum: the sum overflows (it warned, returned inf)
    names(
        "kl_penalty_straight_through",
        "expected a finite loss,",
        lambda: kl.kl_penalty_straight_through(
            np.full((1, 2), 1e308), np.zeros((1, 2)), np.ones((1, 2)), "k1", "seq_sum"
        ),
    )


# ---- public defaults, pinned -------------------------------------------------------------------


def test_kl_defaults_are_the_documented_values():
    rng = np.random.default_rng(41)
    B, T = 5, 4
    mask = (np.arange(T)[None, :] < rng.integers(1, T + 1, (B, 1))).astype(float)
    logp, logp_ref = -rng.uniform(0.2, 2.0, (B, T)), -rng.uniform(0.2, 2.0, (B, T))
    same = lambda a, b: all(np.array_equal(x, y) for x, y in zip(a, b))
    k = kl_per_token(logp, logp_ref, mask)
    assert same(k, kl_per_token(logp, logp_ref, mask, "k3"))
    assert not same(k, kl_per_token(logp, logp_ref, mask, "k2"))
    pen = kl_penalty(logp, logp_ref, mask)
    assert same(pen, kl_penalty(logp, logp_ref, mask, "k3", "token_mean", None))
    for args in (("k1",), ("k3", "seq_sum")):
        assert not same(pen, kl_penalty(logp, logp_ref, mask, *args)), args
    st = kl.kl_penalty_straight_through(logp, logp_ref, mask)
    assert same(st, kl.kl_penalty_straight_through(logp, logp_ref, mask, "k3", "token_mean", None))
    for args in (("k1",), ("k3", "seq_sum")):
        assert not same(st, kl.kl_penalty_straight_through(logp, logp_ref, mask, *args)), args


def test_exact_kl_names_q_and_shows_exactly_the_first_four_row_sums():
    assert _raises(ValueError, lambda: kl.exact_kl([[0.5, 0.5]], [[0.5, 0.6]])).startswith(
        "q: expected rows of probabilities (>= 0, summing to 1), got row sums"
    )
    p = np.array([[0.5, 0.5]] * 4 + [[1.0, 1.0]])  # the fifth row sums to 2: not shown
    msg = _raises(ValueError, lambda: kl.exact_kl(p, np.full((5, 2), 0.5)))
    assert (
        msg
        == f"p: expected rows of probabilities (>= 0, summing to 1), got row sums {p.sum(axis=1)[:4]} and min 0.5"
    )


def test_logit_spread_is_read_per_row_and_the_message_names_the_row():
    # each row within float64 of its own maximum, though not of the other row's: accepted
    theta, theta_ref = [[1e308, 0.0], [-1e308, -1e308]], np.zeros((2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(kl.exact_kl_grad_theta(theta, theta_ref), np.zeros((2, 2)))
        assert np.array_equal(kl.exact_reverse_kl_grad_theta(theta, theta_ref), [[0.5, -0.5], [0.0, 0.0]])
    msg = _raises(ValueError, lambda: kl.exact_kl_grad_theta([[0.0, 0.0], [1e308, -1e308]], theta_ref))
    assert msg == (
        "theta: expected the finite logits of each row within float64 of the row's maximum, "
        "got a spread beyond float64 in row 1"
    )


def test_a_token_impossible_under_both_tables_is_a_finite_kl():
    # pi = pi_ref = 0 on the same token (-inf logits in both): 0 log 0 terms, no infinite KL
    theta = np.array([[0.0, 1.0, -np.inf]])
    want = exact_kl_grad_theta(theta[:, :2], theta[:, :2] - 1.0)  # the same KL without the token
    assert np.array_equal(exact_kl_grad_theta(theta, theta - 1.0), np.hstack([want, [[0.0]]]))
    assert np.array_equal(exact_reverse_kl_grad_theta(theta, theta - 1.0), np.zeros((1, 3)))

"""KL estimators: gradients against finite differences, exact KL and its theta gradients, and the
on-policy facts about k1, k2, k3 by enumeration of a small table."""

from decimal import Decimal, getcontext

import numpy as np

from minirl_lm.core import ops
import pytest

from minirl_lm.pg import kl as kl_mod
from minirl_lm.pg.kl import (ESTIMATORS, exact_kl, exact_kl_grad_theta, exact_reverse_kl_grad_theta,
                          kl_in_reward, kl_penalty, kl_per_token)
from minirl_lm.pg.reinforce import AGGS, token_weights

from gradcheck import fd_grad


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
    assert np.abs(d - g).max() < 1e-9                         # central FD: h^2 k''' + 1e-16/h
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
    assert kl_mod.agg_weights is ops.agg_weights and kl_mod.AGGS is ops.AGGS   # eq. (pg_agg), once
    assert kl_mod.log_ratio is ops.log_ratio


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
    assert np.abs(exact_reverse_kl_grad_theta(theta, theta_ref, d)
                  - fd_grad(rev, theta)).max() < 1e-9
    assert np.allclose(exact_kl_grad_theta(theta, theta_ref),
                       exact_kl_grad_theta(theta, theta_ref, np.ones(3)), rtol=0, atol=0)


def test_exact_gradient_with_impossible_tokens():
    theta = np.array([[0.0, 1.0, -np.inf]])
    theta_ref = np.array([[0.5, 0.0, 2.0]])
    g = exact_kl_grad_theta(theta, theta_ref)
    assert np.isfinite(g).all() and g[0, 2] == 0
    with pytest.raises(ValueError, match="theta"):
        exact_reverse_kl_grad_theta(theta, theta_ref)        # pi_ref > 0 = pi: infinite


# ---- the on-policy facts, by enumeration -------------------------------------------------------

def enumeration_facts(seed=4, S=3, V=4):
    """Exact expectations over y ~ pi(.|s) of each estimator and of its per-sample gradient
    (the sample is data: gradient through logp(y) only). Returns a dict of max abs errors."""
    from minirl_lm.core.policy import TabularPolicy
    rng = np.random.default_rng(seed)
    pol, ref = TabularPolicy(rng.normal(size=(S, V))), TabularPolicy(rng.normal(size=(S, V)))
    pi, pi_ref = pol.probs(), ref.probs()
    states = np.repeat(np.arange(S), V)[:, None]              # every (s, y) once: (S*V, 1)
    tokens = np.tile(np.arange(V), S)[:, None]
    mask = np.ones((S * V, 1))
    logp, _ = pol.logp(states, tokens, mask)
    logp_ref, _ = ref.logp(states, tokens, mask)
    KL = exact_kl(pi, pi_ref)                                 # (S,)
    out = {}
    for est in ESTIMATORS:
        k, dk = kl_per_token(logp, logp_ref, mask, est)       # (S*V, 1)
        Ek = (pi.reshape(-1) * k[:, 0]).reshape(S, V).sum(axis=1)
        # E[grad] = sum_y pi(y|s) dk(y) (onehot(y) - pi(.|s)), summed over states
        Eg = pol.backward(states, tokens, mask, pi.reshape(-1, 1) * dk)   # (S, V)
        out[est] = (np.abs(Ek - KL).max(), Eg)
    fwd = exact_kl_grad_theta(pol.theta, ref.theta)
    rev = exact_reverse_kl_grad_theta(pol.theta, ref.theta)
    return {"E[k1]-KL": out["k1"][0], "E[k3]-KL": out["k3"][0], "E[k2]-KL": out["k2"][0],
            "E[grad k1]": np.abs(out["k1"][1]).max(),
            "E[grad k2]-grad KL(pi||ref)": np.abs(out["k2"][1] - fwd).max(),
            "E[grad k3]-grad KL(ref||pi)": np.abs(out["k3"][1] - rev).max(),
            "E[grad k3]-grad KL(pi||ref)": np.abs(out["k3"][1] - fwd).max()}


def test_on_policy_kl_facts_by_enumeration():
    e = enumeration_facts()
    for key in ("E[k1]-KL", "E[k3]-KL", "E[grad k1]", "E[grad k2]-grad KL(pi||ref)",
                "E[grad k3]-grad KL(ref||pi)"):
        assert e[key] < 1e-12, (key, e[key])                  # rounding only
    assert e["E[k2]-KL"] > 1e-3                               # k2 is biased for the KL
    assert e["E[grad k3]-grad KL(pi||ref)"] > 1e-3            # k3 as a loss is the reverse KL


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
    (lambda: exact_kl_grad_theta(np.ones((2, 3)), np.ones((2, 3)), np.ones(3)), ValueError,
     "weights"),
    (lambda: exact_kl_grad_theta(np.full((1, 2), -np.inf), np.ones((1, 2))), ValueError, "theta"),
    (lambda: exact_kl_grad_theta(np.ones((1, 2)), np.array([[0.0, -np.inf]])), ValueError,
     "theta_ref"),
    (lambda: exact_reverse_kl_grad_theta(np.array([[np.nan, 0.0]]), np.ones((1, 2))), ValueError,
     "theta"),
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
    with np.errstate(all="raise"):                            # the Taylor branch is not evaluated
        k, dk = kl_per_token(u, np.zeros_like(u), np.ones_like(u), "k3")
    np.testing.assert_allclose(k[0, :4], [1e200, 799.0, 49.0 + np.exp(-50.0),
                                          np.exp(-0.3) - 1 + 0.3], rtol=1e-15)
    np.testing.assert_allclose(dk[0, :2], [1.0, 1.0], rtol=0)
    assert np.isfinite(k).all() and np.isfinite(dk).all()
    # u = -800: exp(800) - 1 - 800 exceeds float64: a ValueError naming logp, not +inf
    # named after the log-prob that drove it: the huge one
    with pytest.raises(ValueError, match=r"^logp_ref: .*finite"):
        kl_per_token([[0.0]], [[800.0]], [[1.0]], "k3")
    with pytest.raises(ValueError, match=r"^logp: .*finite"):
        kl_per_token([[-800.0]], [[0.0]], [[1.0]], "k3")


def test_exact_kl_without_warnings_where_p_and_q_vanish():
    p = np.array([[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])
    q = np.array([[0.0, 0.25, 0.75], [0.0, 1.0, 0.0]])
    with np.errstate(all="raise"):                            # no 0 * inf where p = q = 0
        kl = exact_kl(p, q)
    np.testing.assert_allclose(kl[0], 0.5 * np.log(2) + 0.5 * np.log(0.5 / 0.75), rtol=1e-15)
    assert kl[1] == np.inf                                    # p > 0 = q


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
    np.testing.assert_allclose(g, [[0.5 * (np.log(0.5) - kl), 0.5 * (np.log(0.5) + 1e4 - kl)]],
                               rtol=1e-14)
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

"""Bradley-Terry and DPO: gradients vs finite differences, stability, stationarity at the tilted
optimum; hand-computed single pairs, IPO's target 1/(2 beta), zero pair weights, the defaults, the
bounds of n_pairs and the strict comparison of the Bradley-Terry coin; every argument check and
every reachable overflow named (the inf and the NaN kind), silently."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gradcheck import fd_grad
from minirl_lm.direct import dpo
from minirl_lm.direct.dpo import bradley_terry_loss, bt_sample_preferences, dpo_loss, reward_table_loss, token_grad
from minirl_lm.values.optimum import tilted_optimum
from quiet import raises, silent

FD_TOL = 1e-8  # central differences, h = 1e-6, float64: error ~ h^2 * f''' + eps / h ~ 1e-10


def test_bradley_terry_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    r_c, r_r = rng.normal(size=7) * 3, rng.normal(size=7) * 3
    _, (d_c, d_r) = bradley_terry_loss(r_c, r_r)
    err_c = np.abs(d_c - fd_grad(lambda x: bradley_terry_loss(x, r_r)[0], r_c)).max()
    err_r = np.abs(d_r - fd_grad(lambda x: bradley_terry_loss(r_c, x)[0], r_r)).max()
    assert max(err_c, err_r) < FD_TOL


def test_reward_table_gradient_matches_finite_differences_with_repeated_pairs():
    rng = np.random.default_rng(1)
    r_phi = rng.normal(size=(3, 4))
    prompt = np.array([0, 0, 1, 2, 2, 0])
    chosen = np.array([1, 1, 0, 3, 2, 2])  # pairs 0 and 1 repeat
    rejected = np.array([2, 2, 3, 0, 3, 1])
    _, d = reward_table_loss(r_phi, prompt, chosen, rejected)
    fd = fd_grad(lambda t: reward_table_loss(t, prompt, chosen, rejected)[0], r_phi)
    assert np.abs(d - fd).max() < FD_TOL
    assert d[1, 1] == 0.0 and d[1, 2] == 0.0  # untouched entries get nothing


@pytest.mark.parametrize("variant,ls", [("dpo", 0.0), ("ipo", 0.0), ("conservative", 0.1), ("conservative", 0.5)])
@pytest.mark.parametrize("weighted", [False, True])
def test_dpo_gradient_matches_finite_differences(variant, ls, weighted):
    rng = np.random.default_rng(2)
    P = 6
    lc, lr, lrc, lrr = (rng.normal(size=P) * 2 - 5 for _ in range(4))
    w = rng.random(P) if weighted else None
    beta = 0.3
    f = lambda a, b: dpo_loss(a, b, lrc, lrr, beta, variant=variant, label_smoothing=ls, weights=w)[0]
    loss, (dc, dr) = dpo_loss(lc, lr, lrc, lrr, beta, variant=variant, label_smoothing=ls, weights=w)
    err = max(
        np.abs(dc - fd_grad(lambda x: f(x, lr), lc)).max(), np.abs(dr - fd_grad(lambda x: f(lc, x), lr)).max()
    )
    assert err < FD_TOL * max(1.0, loss)  # rounding error of FD scales with |loss|


def test_dpo_gradient_reaches_tokens_through_the_mask():
    rng = np.random.default_rng(3)
    mask = np.array([[1, 1, 1.0], [1, 0, 0], [1, 1, 0], [0, 0, 0]])
    logp = rng.normal(size=mask.shape) * mask
    ref = rng.normal(size=mask.shape) * mask

    def loss(lp):
        s = (lp * mask).sum(1)
        return dpo_loss(s[:2], s[2:], (ref * mask).sum(1)[:2], (ref * mask).sum(1)[2:], 0.7)[0]

    s = (logp * mask).sum(1)
    _, (dc, dr) = dpo_loss(s[:2], s[2:], (ref * mask).sum(1)[:2], (ref * mask).sum(1)[2:], 0.7)
    dlogp = token_grad(np.concatenate([dc, dr]), mask)
    assert np.abs(dlogp - fd_grad(loss, logp)).max() < FD_TOL
    assert (dlogp[mask == 0] == 0).all()


@pytest.mark.parametrize("margin", [1e3, 1e5, 1e300])
def test_dpo_is_finite_at_extreme_margins(margin):
    h = np.array([margin, -margin])
    zeros = np.zeros(2)
    loss, (dc, dr) = dpo_loss(h, zeros, zeros, zeros, 1.0)
    assert loss == margin / 2  # mean(softplus(-m), softplus(m)) = m/2
    np.testing.assert_array_equal(dc, [0.0, -0.5])  # saturated: -beta sigma(-z) / P
    np.testing.assert_array_equal(dr, [0.0, 0.5])
    loss, (dc, _) = dpo_loss(h, zeros, zeros, zeros, 1.0, variant="conservative", label_smoothing=0.1)
    assert np.isfinite(loss)
    np.testing.assert_allclose(dc, [0.1 / 2, -0.9 / 2], rtol=1e-15)  # (sigma(z) - 1 + ls) / P
    lb, (bc, br) = bradley_terry_loss(h, zeros)
    assert lb == margin / 2 and np.isfinite(bc).all() and np.isfinite(br).all()
    if margin < 1e150:  # IPO is a square: finite below 1e154
        loss, (dc, _) = dpo_loss(h, zeros, zeros, zeros, 1.0, variant="ipo")
        assert np.isfinite(loss) and np.isfinite(dc).all()


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.float64, 5, elements=st.floats(-50, 50)),
    arrays(np.float64, 5, elements=st.floats(-50, 50)),
    st.floats(0.01, 10),
)
def test_conservative_with_zero_smoothing_is_dpo_and_swapping_flips_the_margin(a, b, beta):
    z = np.zeros(5)
    l0, (d0, _) = dpo_loss(a, b, z, z, beta)
    l1, (d1, _) = dpo_loss(a, b, z, z, beta, variant="conservative", label_smoothing=0.0)
    assert l0 == l1 and np.array_equal(d0, d1)
    # softplus(-m) - softplus(m) = -m: the swapped pair's loss differs by the mean margin
    lab, _ = bradley_terry_loss(a, b)
    lba, _ = bradley_terry_loss(b, a)
    assert lab - lba == pytest.approx(-(a - b).mean(), abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, 4, elements=st.floats(-30, 30)), st.floats(0.01, 0.5), st.floats(0.1, 3))
def test_conservative_gradient_vanishes_at_a_finite_margin(h, ls, beta):
    """dl/dz = sigma(z) - (1 - ls): label smoothing stops the margin at z = log((1 - ls) / ls)."""
    z0 = np.zeros(4)
    _, (dc, _) = dpo_loss(h, z0, z0, z0, beta, variant="conservative", label_smoothing=ls)
    expect = beta * (1 / (1 + np.exp(-beta * h)) - (1 - ls)) / 4
    np.testing.assert_allclose(dc, expect, rtol=1e-12, atol=1e-15)
    h_star = np.full(4, np.log((1 - ls) / ls) / beta)
    _, (dc, _) = dpo_loss(h_star, z0, z0, z0, beta, variant="conservative", label_smoothing=ls)
    assert np.abs(dc).max() < 1e-15


# ---------------------------------------------------------------- the population DPO loss


def population_dpo(theta, log_pi_ref, reward, mu, beta):
    """Exact population DPO loss and its gradient on theta (N, Y), one-token responses.

    Pairs (x, a, b) with weight mu_0(x) mu(a|x) mu(b|x) (mu_0 uniform); a is chosen with
    probability sigma(r_a - r_b) (Bradley-Terry at temperature 1), b otherwise.
    """
    N, Y = theta.shape
    log_pi = theta - np.log(np.exp(theta).sum(1, keepdims=True))
    x, a, b = (g.ravel() for g in np.meshgrid(np.arange(N), np.arange(Y), np.arange(Y), indexing="ij"))
    pw = mu[x, a] * mu[x, b] / N
    p_ab = 1 / (1 + np.exp(-(reward[x, a] - reward[x, b])))
    # both labels of every pair: chosen a with weight pw p_ab, chosen b with weight pw (1 - p_ab)
    xs = np.concatenate([x, x])
    c = np.concatenate([a, b])
    r = np.concatenate([b, a])
    w = np.concatenate([pw * p_ab, pw * (1 - p_ab)])
    loss, (dc, dr) = dpo_loss(log_pi[xs, c], log_pi[xs, r], log_pi_ref[xs, c], log_pi_ref[xs, r], beta, weights=w)
    # chain rule through the softmax: d log pi(y|x) / d theta[x, v] = 1[v = y] - pi(v|x)
    pi = np.exp(log_pi)
    dtheta = np.zeros_like(theta)
    for d, y in ((dc, c), (dr, r)):
        np.add.at(dtheta, (xs, y), d)
        np.add.at(dtheta, xs, -d[:, None] * pi[xs])
    return loss, dtheta


def _task():
    pi_ref = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.15, 0.1]])
    reward = np.array([[1.0, 0.0, 0.5, -0.3], [0.2, 2.0, -1.0, 0.0]])
    mu = np.array([[0.25, 0.25, 0.25, 0.25], [0.4, 0.1, 0.2, 0.3]])
    return pi_ref, reward, mu


def test_population_dpo_gradient_matches_finite_differences():
    pi_ref, reward, mu = _task()
    theta = np.random.default_rng(4).normal(size=pi_ref.shape)
    _, g = population_dpo(theta, np.log(pi_ref), reward, mu, 0.5)
    fd = fd_grad(lambda t: population_dpo(t, np.log(pi_ref), reward, mu, 0.5)[0], theta)
    assert np.abs(g - fd).max() < FD_TOL


@pytest.mark.parametrize("beta", [0.2, 1.0, 3.0])
def test_tilted_optimum_is_a_stationary_point_of_population_dpo(beta):
    """DPO's implicit reward beta log(pi*/pi_ref) = r - beta log Z: every pair's gradient cancels."""
    pi_ref, reward, mu = _task()
    theta_star = np.log(tilted_optimum(pi_ref, reward, beta))
    _, g = population_dpo(theta_star, np.log(pi_ref), reward, mu, beta)
    assert np.abs(g).max() < 1e-12
    # elsewhere it is not stationary: at the reference, and at the optimum of another beta
    for theta in (np.log(pi_ref), np.log(tilted_optimum(pi_ref, reward, 2 * beta))):
        _, g = population_dpo(theta, np.log(pi_ref), reward, mu, beta)
        assert np.abs(g).max() > 1e-3


def test_population_dpo_stationarity_does_not_depend_on_the_sampling_distribution():
    pi_ref, reward, _ = _task()
    theta_star = np.log(tilted_optimum(pi_ref, reward, 0.5))
    for seed in range(5):
        mu = np.random.default_rng(seed).dirichlet(np.ones(4), size=2)
        _, g = population_dpo(theta_star, np.log(pi_ref), reward, mu, 0.5)
        assert np.abs(g).max() < 1e-12


# ---------------------------------------------------------------- preference sampling


def test_bt_sample_preferences_matches_bradley_terry_probabilities():
    reward = np.array([[0.0, 1.0, -1.0]])
    mu = np.array([[0.5, 0.3, 0.2]])
    x, c, r = bt_sample_preferences(reward, mu, 200_000, np.random.default_rng(5))
    assert (x == 0).all() and c.dtype == np.int64
    ab = ((c == 1) & (r == 0)) | ((c == 0) & (r == 1))  # the pair {0, 1}
    frac = ((c == 1) & ab).sum() / ab.sum()
    p = 1 / (1 + np.exp(-1.0))
    assert abs(frac - p) < 4 * np.sqrt(p * (1 - p) / ab.sum())
    # the pair frequency follows mu(a) mu(b): P({0, 1}) = 2 * 0.5 * 0.3
    assert abs(ab.mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / ab.size)


def test_bt_sample_preferences_is_deterministic_given_the_seed():
    reward, mu = np.zeros((3, 4)), np.full((3, 4), 0.25)
    a = bt_sample_preferences(reward, mu, 50, np.random.default_rng(7))
    b = bt_sample_preferences(reward, mu, 50, np.random.default_rng(7))
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_ties_are_kept_documented_and_contribute_no_gradient():
    import minirl_lm.direct.dpo as dpo_mod

    assert "Ties are kept" in dpo_mod.bt_sample_preferences.__doc__
    reward = np.array([[0.0, 1.0, -1.0], [2.0, 0.0, 0.5]])
    mu = np.array([[0.5, 0.3, 0.2], [0.6, 0.2, 0.2]])
    n = 100_000
    x, c, r = bt_sample_preferences(reward, mu, n, np.random.default_rng(11))
    tie = c == r
    p_tie = (mu**2).sum(axis=1).mean()  # P(a == b), prompts uniform
    assert abs(tie.mean() - p_tie) < 4 * np.sqrt(p_tie * (1 - p_tie) / n)
    # on a table the tie pairs add log 2 to the loss (per pair) and nothing to the gradient
    r_phi = np.random.default_rng(12).normal(size=(2, 3))
    loss, g = reward_table_loss(r_phi, x, c, r)
    loss_nt, g_nt = reward_table_loss(r_phi, x[~tie], c[~tie], r[~tie])
    P, P_nt = n, int((~tie).sum())
    np.testing.assert_allclose(loss * P, loss_nt * P_nt + (P - P_nt) * np.log(2), rtol=1e-12)
    np.testing.assert_allclose(g * P, g_nt * P_nt, rtol=1e-10)  # rounding of 1e5 sums


def test_saturated_dpo_gradient_is_beta_over_p():
    import minirl_lm.direct.dpo as dpo_mod

    assert "+-beta / P" in dpo_mod.__doc__ and "exactly 0 or +-beta." not in dpo_mod.__doc__
    beta, h = 0.3, np.array([1e4, -1e4, 1e4, -1e4])
    z = np.zeros(4)
    _, (dc, dr) = dpo_loss(h, z, z, z, beta)
    np.testing.assert_array_equal(dc, [0.0, -beta / 4, 0.0, -beta / 4])
    np.testing.assert_array_equal(dr, -dc)


# ---------------------------------------------------------------- bad input

Z3 = np.zeros(3)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: bradley_terry_loss(Z3, np.zeros(2)), ValueError, "r_rejected"),
        (lambda: bradley_terry_loss([np.nan, 0, 0], Z3), ValueError, "r_chosen"),
        (lambda: bradley_terry_loss(np.zeros(0), np.zeros(0)), ValueError, "r_chosen"),
        (lambda: bradley_terry_loss("abc", Z3), TypeError, "r_chosen"),
        (lambda: reward_table_loss(np.zeros(3), [0], [0], [1]), ValueError, "r_phi"),
        (lambda: reward_table_loss(np.zeros((2, 3)), [2], [0], [1]), ValueError, "prompt"),
        (lambda: reward_table_loss(np.zeros((2, 3)), [0], [3], [1]), ValueError, "chosen"),
        (lambda: reward_table_loss(np.zeros((2, 3)), [0], [0], [0.5]), TypeError, "rejected"),
        (
            lambda: reward_table_loss(np.zeros((2, 3)), np.zeros(0, int), np.zeros(0, int), np.zeros(0, int)),
            ValueError,
            "prompt",
        ),
        (lambda: dpo_loss(Z3, Z3, Z3, Z3, 0.0), ValueError, "beta"),
        (lambda: dpo_loss(Z3, Z3, Z3, Z3, -1.0), ValueError, "beta"),
        (lambda: dpo_loss(Z3, Z3, Z3, np.zeros(4), 1.0), ValueError, "seq_logp_ref_r"),
        (lambda: dpo_loss(Z3, [np.inf, 0, 0], Z3, Z3, 1.0), ValueError, "seq_logp_r"),
        (lambda: dpo_loss(Z3, Z3, Z3, Z3, 1.0, variant="kto"), ValueError, "variant"),
        (lambda: dpo_loss(Z3, Z3, Z3, Z3, 1.0, variant="dpo", label_smoothing=0.1), ValueError, "label_smoothing"),
        (
            lambda: dpo_loss(Z3, Z3, Z3, Z3, 1.0, variant="conservative", label_smoothing=0.7),
            ValueError,
            "label_smoothing",
        ),
        (lambda: dpo_loss(Z3, Z3, Z3, Z3, 1.0, weights=[1, -1, 1]), ValueError, "weights"),
        (lambda: dpo_loss(Z3, Z3, Z3, Z3, 1.0, weights=[1, 1]), ValueError, "weights"),
        (lambda: token_grad(Z3, np.ones((2, 2))), ValueError, "mask"),
        (lambda: token_grad(Z3, [[0, 2], [1, 1], [1, 1]]), ValueError, "mask"),
        (
            lambda: bt_sample_preferences(np.zeros((2, 3)), np.full((2, 3), 0.5), 4, np.random.default_rng(0)),
            ValueError,
            "mu",
        ),
        (
            lambda: bt_sample_preferences(np.zeros((2, 3)), np.full((2, 3), 1 / 3), 0, np.random.default_rng(0)),
            ValueError,
            "n_pairs",
        ),
        (lambda: bt_sample_preferences(np.zeros((2, 3)), np.full((2, 3), 1 / 3), 4, 0), TypeError, "rng"),
        (
            lambda: bt_sample_preferences(
                np.zeros((2, 3)), np.full((2, 3), 1 / 3), 4, np.random.default_rng(0), mu0=[1.0]
            ),
            ValueError,
            "mu0",
        ),
    ],
)
def test_bad_input_is_rejected_with_the_argument_named(call, exc, match):
    msg = raises(exc, call)
    assert msg.startswith(match if ":" in match else f"{match}: ")


# ---- folded from tests/test_mutation_kills.py ------------------------------------------------


def test_conservative_dpo_without_smoothing_is_dpo_bitwise_even_on_overflow():
    # beta h = 1e308 * 2 overflows to +inf: -log sigma(+inf) = 0 exactly, and no 0 * inf
    for args in (([1.0], [-1.0], [0.0], [0.0], 1e308), ([0.3, -2.0], [0.1, 0.5], [0.2, 0.0], [-0.4, 0.1], 0.7)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            want = dpo.dpo_loss(*args)
            got = dpo.dpo_loss(*args, variant="conservative", label_smoothing=0.0)
        assert got[0] == want[0]
        assert all(np.array_equal(g, w) for g, w in zip(got[1], want[1]))


# ---------------------------------------------------------------- an overflow names the function


def overflows(fname, call, kind="inf"):
    """The message of the one overflow error of `call()`: it names the function `fname`, the
    kind of the non-finite value and the ranges of the inputs (the engine guesses no driver)."""
    msg = raises(ValueError, call)
    assert msg.startswith(f"{fname}: expected a finite ") and f", got {kind} (beyond float64) from " in msg, msg
    return msg


DRIVER = [
    # two margins of -1.2e308, each finite, whose softplus sum 2.4e308 overflows the mean
    (
        "reward_table mean",
        lambda: reward_table_loss([[-6e307, 6e307]], [0, 0], [0, 0], [1, 1]),
        "reward_table_loss",
    ),
    # m = 0 - 1e308 per pair: the mean of two softplus(1e308) overflows
    ("bradley_terry rejected", lambda: bradley_terry_loss([0.0, 0.0], [1e308, 1e308]), "bradley_terry_loss"),
    # l = log 2 per pair, w l = 1.18e308 each: their sum, and only it, overflows
    (
        "dpo weights",
        lambda: dpo_loss(np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2), 1.0, weights=[1.7e308, 1.7e308]),
        "dpo_loss",
    ),
    # IPO at beta = 1: e = h - 1/2 = 1e200, e^2 = inf
    ("ipo margin", lambda: dpo_loss([1e200], [0.0], [0.0], [0.0], 1.0, variant="ipo"), "dpo_loss"),
    # IPO at beta = 5e-324: the target 1/(2 beta) is inf
    ("ipo target", lambda: dpo_loss([-1.0], [0.0], [0.0], [0.0], 5e-324, variant="ipo"), "dpo_loss"),
    # h = -1e308 - 1.7e308 = -inf: -log sigma(-inf) = inf
    ("dpo margin r", lambda: dpo_loss([-1e308], [1.7e308], [0.0], [0.0], 1.0), "dpo_loss"),
    # h = (0 - 1.7e308) - (0 + 1.7e308) = -inf
    ("dpo margin ref", lambda: dpo_loss([0.0], [0.0], [1.7e308], [-1.7e308], 1.0), "dpo_loss"),
]


@pytest.mark.parametrize("label, call, fname", DRIVER, ids=[d[0] for d in DRIVER])
def test_an_overflow_names_the_function(label, call, fname):
    overflows(fname, call)


def test_bt_sample_preferences_n_pairs_is_bounded_before_any_allocation():
    rng = np.random.default_rng(0)
    msg = raises(ValueError, lambda: bt_sample_preferences([[0.0, 0.0]], [[0.5, 0.5]], 2**63, rng))
    assert msg == "n_pairs: expected an integer >= 1 and <= 1152921504606846975, got 9223372036854775808"
    assert raises(ValueError, lambda: bt_sample_preferences([[0.0, 0.0]], [[0.5, 0.5]], 2**62, rng)).startswith(
        "n_pairs: expected an integer >= 1 and <="
    )
    assert rng.random() == np.random.default_rng(0).random()  # nothing drawn


def test_bt_sample_preferences_margin_beyond_float64_is_a_silent_certain_win():
    # R(x, 0) - R(x, 1) = 2e308 = inf: sigma = 1, response 0 always wins, no warning
    x, c, r = silent(lambda: bt_sample_preferences([[1e308, -1e308]], [[0.5, 0.5]], 40, np.random.default_rng(1)))
    apart = c != r
    assert apart.any() and (c[apart] == 0).all() and (r[apart] == 1).all()


# ---------------------------------------------------------------- hand-computed answers
# (folded from tests/test_kills_dpo_reinforce.py)


def test_bradley_terry_single_pair_exact():
    # m = 0: loss = log(1 + e^0) = log 2; d_chosen = -sigma(0) / 1 = -0.5, d_rejected = +0.5
    loss, (d_c, d_r) = bradley_terry_loss([0.0], [0.0])
    assert loss == math.log(2.0)
    assert np.array_equal(d_c, [-0.5]) and np.array_equal(d_r, [0.5])


def test_bradley_terry_margin_overflow_to_plus_inf_is_a_silent_zero():
    # m = +inf: softplus(-inf) = 0 and sigma(-inf) = 0, the loss and gradient are exactly 0
    loss, (d_c, d_r) = silent(lambda: bradley_terry_loss([1e308], [-1e308]))
    assert loss == 0.0 and np.array_equal(d_c, [0.0]) and np.array_equal(d_r, [0.0])


def test_reward_table_loss_exact_on_one_pair():
    # m = 2 - 0 = 2: loss = softplus(-2); the chosen entry gets -sigma(-2), the rejected +sigma(-2)
    loss, d = reward_table_loss([[2.0, 0.0, 5.0]], [0], [0], [1])
    s = 1 / (1 + math.exp(2.0))
    assert loss == pytest.approx(math.log1p(math.exp(-2.0)), rel=1e-15)
    np.testing.assert_allclose(d, [[-s, s, 0.0]], rtol=1e-15)


def test_dpo_zero_pair_weight_is_allowed_and_drops_the_pair():
    # h = 0 on both pairs: l = log 2, dl/dh = beta * -sigma(0) = -0.5; weights (0, 1)
    z = [0.0, 0.0]
    loss, (dc, dr) = dpo_loss(z, z, z, z, 1.0, weights=[0.0, 1.0])
    assert loss == math.log(2.0)
    assert np.array_equal(dc, [0.0, -0.5]) and np.array_equal(dr, [0.0, 0.5])


def test_ipo_regresses_h_onto_one_over_two_beta():
    # h = 3, beta = 1/4: target 1/(2 beta) = 2, e = 1, loss = e^2 = 1, dl/dh = 2 e = 2 (P = 1)
    loss, (dc, dr) = dpo_loss([3.0], [0.0], [0.0], [0.0], 0.25, variant="ipo")
    assert loss == 1.0 and np.array_equal(dc, [2.0]) and np.array_equal(dr, [-2.0])
    # h = 0, beta = 1/4: e = -2, loss = 4, dl/dh = -4
    loss, (dc, dr) = dpo_loss([0.0], [0.0], [0.0], [0.0], 0.25, variant="ipo")
    assert loss == 4.0 and np.array_equal(dc, [-4.0]) and np.array_equal(dr, [4.0])


def test_dpo_saturated_margin_is_a_silent_exact_zero():
    # z = beta h = 1e308 * 2 overflows to +inf: -log sigma(+inf) = 0, sigma(-inf) = 0,
    # the gradient beta * -0 = -0: finite, returned, no warning
    loss, (dc, dr) = silent(lambda: dpo_loss([2.0], [0.0], [0.0], [0.0], 1e308))
    assert loss == 0.0 and np.array_equal(dc, [0.0]) and np.array_equal(dr, [0.0])


def test_dpo_defaults_are_dpo_without_smoothing_and_the_mean_over_pairs():
    rng = np.random.default_rng(8)
    lc, lr, lrc, lrr = (rng.normal(size=3) for _ in range(4))
    base = dpo_loss(lc, lr, lrc, lrr, 0.7)
    for other in (dpo_loss(lc, lr, lrc, lrr, 0.7, variant="dpo", label_smoothing=0.0, weights=np.full(3, 1 / 3)),):
        assert base[0] == other[0] and np.array_equal(base[1][0], other[1][0])
    assert base[0] != dpo_loss(lc, lr, lrc, lrr, 0.7, variant="ipo")[0]
    assert base[0] != dpo_loss(lc, lr, lrc, lrr, 0.7, weights=[1.0, 0.0, 0.0])[0]


def test_token_grad_exact():
    out = token_grad([2.0, -1.0], [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert np.array_equal(out, [[2.0, 2.0, 0.0], [-1.0, 0.0, 0.0]])


def test_bt_sample_preferences_n_pairs_at_least_one():
    x, c, r = bt_sample_preferences(np.zeros((1, 2)), [[0.5, 0.5]], 1, np.random.default_rng(0))
    assert x.shape == c.shape == r.shape == (1,) and x[0] == 0


def test_bt_sample_preferences_prompts_follow_mu0_uniform_by_default():
    reward, mu = np.zeros((2, 2)), np.full((2, 2), 0.5)
    given = bt_sample_preferences(reward, mu, 50, np.random.default_rng(4), mu0=[0.0, 1.0])
    assert np.array_equal(given[0], np.ones(50))  # prompt 0 has probability 0
    default = bt_sample_preferences(reward, mu, 50, np.random.default_rng(4))
    uniform = bt_sample_preferences(reward, mu, 50, np.random.default_rng(4), mu0=[0.5, 0.5])
    for d, u in zip(default, uniform):
        assert np.array_equal(d, u)
    assert 0 < default[0].sum() < 50  # both prompts drawn


def test_bt_coin_is_strict_a_draw_equal_to_sigma_goes_to_b():
    # Draw order (documented): x ~ mu0, a ~ mu[x], b ~ mu[x], then u ~ U[0, 1) and a wins iff
    # u < sigma(R(x, a) - R(x, b)). With seed 3, N = 1, Y = 2 and mu = (1/2, 1/2): a = 0, b = 1.
    r = np.random.default_rng(3)
    r.choice(1, size=1, p=[1.0])
    a, b = r.choice(2, size=1, p=[0.5, 0.5])[0], r.choice(2, size=1, p=[0.5, 0.5])[0]
    u = r.random(1)[0]
    assert (a, b) == (0, 1)
    d = math.log(u / (1.0 - u))  # the logit of u
    # sigma(d) == u exactly: bradley_terry_loss([0], [d]) has d_rejected = sigma(0 - (-d))
    assert bradley_terry_loss([0.0], [d])[1][1][0] == u
    x, c, rj = bt_sample_preferences([[d, 0.0]], [[0.5, 0.5]], 1, np.random.default_rng(3))
    assert (x[0], c[0], rj[0]) == (0, 1, 0)  # u < u is false: b wins
    x, c, rj = bt_sample_preferences([[d + 1e-9, 0.0]], [[0.5, 0.5]], 1, np.random.default_rng(3))
    assert (x[0], c[0], rj[0]) == (0, 0, 1)  # sigma just above u: a wins


# ---------------------------------------------------------------- messages: the argument first

MESSAGES = [
    # (label, call, exception, argument, fragment)
    (
        "bt ndim",
        lambda: bradley_terry_loss([0.0], [[0.0]]),
        ValueError,
        "r_rejected",
        "expected shape (1,), got (1, 1)",
    ),
    (
        "bt scalar",
        lambda: bradley_terry_loss([0.0], 0.0),
        ValueError,
        "r_rejected",
        "expected shape (1,), got ()",
    ),
    (
        "bt shape",
        lambda: bradley_terry_loss([0.0, 0.0], [0.0]),
        ValueError,
        "r_rejected",
        "expected shape (2,), got (1,)",
    ),
    (
        "bt empty",
        lambda: bradley_terry_loss([], []),
        ValueError,
        "r_chosen",
        "expected a non-empty array (every axis of length >= 1), got shape (0,)",
    ),
    (
        "table empty",
        lambda: reward_table_loss([[0.0]], *[np.array([], dtype=np.int64)] * 3),
        ValueError,
        "prompt",
        "expected a non-empty array (every axis of length >= 1), got shape (0,)",
    ),
    (
        "dpo ndim r",
        lambda: dpo_loss([0.0], [[0.0]], [0.0], [0.0], 1.0),
        ValueError,
        "seq_logp_r",
        "expected shape (1,), got (1, 1)",
    ),
    (
        "dpo ndim ref_c",
        lambda: dpo_loss([0.0], [0.0], [[0.0]], [0.0], 1.0),
        ValueError,
        "seq_logp_ref_c",
        "expected shape (1,), got (1, 1)",
    ),
    (
        "dpo ndim ref_r",
        lambda: dpo_loss([0.0], [0.0], [0.0], [[0.0]], 1.0),
        ValueError,
        "seq_logp_ref_r",
        "expected shape (1,), got (1, 1)",
    ),
    (
        "dpo shape r",
        lambda: dpo_loss([0.0, 0.0], [0.0], [0.0, 0.0], [0.0, 0.0], 1.0),
        ValueError,
        "seq_logp_r",
        "expected shape (2,), got (1,)",
    ),
    (
        "dpo shape ref_c",
        lambda: dpo_loss([0.0, 0.0], [0.0, 0.0], [0.0], [0.0, 0.0], 1.0),
        ValueError,
        "seq_logp_ref_c",
        "expected shape (2,), got (1,)",
    ),
    (
        "dpo shape ref_r",
        lambda: dpo_loss([0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0], 1.0),
        ValueError,
        "seq_logp_ref_r",
        "expected shape (2,), got (1,)",
    ),
    ("dpo empty", lambda: dpo_loss([], [], [], [], 1.0), ValueError, "seq_logp_c", "expected a non-empty array"),
    (
        "dpo weights",
        lambda: dpo_loss([0.0] * 2, [0.0] * 2, [0.0] * 2, [0.0] * 2, 1.0, weights=[-1.0, 1.0]),
        ValueError,
        "weights",
        "expected entries >= 0, got min -1.0",
    ),
    (
        "dpo smoothing",
        lambda: dpo_loss([0.0], [0.0], [0.0], [0.0], 1.0, variant="ipo", label_smoothing=0.1),
        ValueError,
        "label_smoothing",
        "expected 0 unless variant='conservative', got 0.1 with variant='ipo'",
    ),
    (
        "grad mask",
        lambda: token_grad([1.0, 2.0], [[1.0, 1.0]]),
        ValueError,
        "mask",
        "expected shape (2, T), got (1, 2)",
    ),
    (
        "bt mu",
        lambda: bt_sample_preferences(np.zeros((1, 2)), [[0.5, 0.25, 0.25]], 1, np.random.default_rng(0)),
        ValueError,
        "mu",
        "expected shape (1, 2), got (1, 3)",
    ),
    (
        "bt mu0",
        lambda: bt_sample_preferences(
            np.zeros((2, 2)), np.full((2, 2), 0.5), 1, np.random.default_rng(0), mu0=[0.5, 0.25, 0.25]
        ),
        ValueError,
        "mu0",
        "expected shape (2,), got (3,)",
    ),
    (
        "bt n_pairs",
        lambda: bt_sample_preferences(np.zeros((1, 2)), [[0.5, 0.5]], 0, np.random.default_rng(0)),
        ValueError,
        "n_pairs",
        "expected an integer >= 1 and <= 1152921504606846975, got 0",
    ),
]


@pytest.mark.parametrize("label, call, exc, arg, fragment", MESSAGES, ids=[m[0] for m in MESSAGES])
def test_bad_input_message_names_the_argument(label, call, exc, arg, fragment):
    msg = raises(exc, call)
    assert msg.startswith(f"{arg}: {fragment}")


def test_message_samples_one_per_template():
    assert raises(ValueError, MESSAGES[0][1]) == "r_rejected: expected shape (1,), got (1, 1)"
    assert raises(ValueError, MESSAGES[2][1]) == "r_rejected: expected shape (2,), got (1,)"
    assert raises(ValueError, MESSAGES[3][1]) == (
        "r_chosen: expected a non-empty array (every axis of length >= 1), got shape (0,)"
    )
    want = "n_pairs: expected an integer >= 1 and <= 1152921504606846975, got 0"
    assert raises(ValueError, MESSAGES[-1][1]) == want
    assert raises(ValueError, MESSAGES[-3][1]) == "mu: expected shape (1, 2), got (1, 3)"
    # the overflow template: m = -1e308 - 1e308 = -inf, softplus(-m) = inf
    assert raises(ValueError, lambda: bradley_terry_loss([-1e308], [1e308])) == (
        "bradley_terry_loss: expected a finite loss, got inf (beyond float64) from "
        "r_chosen in [-1e+308, -1e+308], r_rejected in [1e+308, 1e+308]"
    )


OVERFLOWS = [
    # (label, call, function, kind): every reachable overflow, silently an error
    # h = (1e308 + 1e308) - (1e308 + 1e308) = inf - inf = NaN
    ("dpo margin nan", lambda: dpo_loss([1e308], [1e308], [-1e308], [-1e308], 1.0), "dpo_loss", "NaN"),
    # z = 1e308 * -2 = -inf: -log sigma(-inf) = inf
    ("dpo loss inf", lambda: dpo_loss([-2.0], [0.0], [0.0], [0.0], 1e308), "dpo_loss", "inf"),
    # the same pair with weight 0 next to a finite one: 0 * inf = NaN in the weighted sum
    (
        "dpo loss nan",
        lambda: dpo_loss([-2.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], 1e308, weights=[0.0, 1.0]),
        "dpo_loss",
        "NaN",
    ),
]


@pytest.mark.parametrize("label, call, fname, kind", OVERFLOWS, ids=[o[0] for o in OVERFLOWS])
def test_every_reachable_overflow_is_a_silent_value_error_naming_the_function(label, call, fname, kind):
    overflows(fname, call, kind)


def test_a_margin_beyond_float64_in_the_winning_direction_is_the_saturated_loss():
    # h = (1e308 + 1e308) - 0 = inf: -log sigma(inf) = 0 with gradient 0, what float64 gives for
    # any margin beyond ~745; a reward margin of 1e308 + 1e308 likewise
    loss, (d_c, d_r) = silent(lambda: dpo_loss([1e308], [0.0], [-1e308], [0.0], 1.0))
    assert loss == 0.0 and d_c[0] == 0.0 and d_r[0] == 0.0
    loss, dr_phi = silent(lambda: reward_table_loss([[1e308, -1e308]], [0], [0], [1]))
    assert loss == 0.0 and not dr_phi.any()
    # the same margin under IPO is a squared error beyond float64: refused
    overflows("dpo_loss", lambda: dpo_loss([1e308], [0.0], [-1e308], [0.0], 1.0, variant="ipo"))


def test_an_overflow_message_gives_the_range_of_every_real_input():
    # IPO at beta = 5e-155: the target 1/(2 beta) = 1e154, e = h - 1e154, e^2 beyond float64
    msg = overflows("dpo_loss", lambda: dpo_loss([-1.5e154], [0.0], [0.0], [0.0], 5e-155, variant="ipo"))
    assert (
        "seq_logp_c in [-1.5e+154, -1.5e+154]" in msg and "beta = 5e-155" in msg and "label_smoothing = 0" in msg
    )
    msg = overflows("dpo_loss", lambda: dpo_loss([-1e308], [0.0], [0.0], [-1.7e308], 1.0))
    assert "seq_logp_ref_r in [-1.7e+308, -1.7e+308]" in msg


def test_reward_table_loss_id_messages_are_exact():
    r_phi = np.zeros((2, 3))  # 2 prompts (rows), 3 responses (columns)
    for ids, message in (
        (([2], [0], [1]), "prompt: expected ids < 2 (rows of r_phi), got 2"),
        (([0], [3], [1]), "chosen: expected ids < 3 (columns of r_phi), got 3"),
        (([0, 1], [0, 1], [1, 5]), "rejected: expected ids < 3 (columns of r_phi), got 5"),
    ):
        assert raises(ValueError, lambda: reward_table_loss(r_phi, *ids)) == message

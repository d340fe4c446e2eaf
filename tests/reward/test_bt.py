"""reward/bt.py: Bradley-Terry with margin and centering, the outcome model, linear models, fits."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm import tasks
from minirl_lm.core.policy import softmax_table
from minirl_lm.direct.dpo import bradley_terry_loss, bt_sample_preferences, reward_table_loss
from minirl_lm.reward.bt import (
    bt_margin_loss,
    bt_pair_law,
    error_off_constant,
    fit_bt,
    fit_outcome,
    linear_bt_loss,
    linear_outcome_loss,
    one_hot_features,
    outcome_loss,
)
from quiet import names, raises, silent


def overflows(fname, what, call):
    """The message of the result check: it names the function, the results and the inputs' ranges."""
    msg = raises(ValueError, call)
    assert msg.startswith(f"{fname}: expected a finite {what}") and " from " in msg, msg
    return msg


# Central differences at h = 1e-6 on losses of size ~1: truncation ~1e-12, rounding ~1e-10.
TOL = 1e-8


def _pairs(seed=0, P=7):
    rng = np.random.default_rng(seed)
    return rng.normal(size=P), rng.normal(size=P), rng.uniform(0, 1, P), rng.uniform(0.1, 1, P)


def test_bt_margin_loss_gradient_matches_finite_differences():
    r_c, r_r, m, w = _pairs()
    for c in (0.0, 0.3):
        _, (d_c, d_r) = bt_margin_loss(r_c, r_r, margin=m, center=c, weights=w)
        assert np.allclose(d_c, fd_grad(lambda v: bt_margin_loss(v, r_r, m, c, w)[0], r_c), atol=TOL)
        assert np.allclose(d_r, fd_grad(lambda v: bt_margin_loss(r_c, v, m, c, w)[0], r_r), atol=TOL)


def test_bt_margin_loss_is_dpo_bradley_terry_at_zero_margin():
    r_c, r_r, _, _ = _pairs(1)
    loss, (d_c, d_r) = bt_margin_loss(r_c, r_r, margin=None, center=0.0, weights=None)
    ref, (e_c, e_r) = bradley_terry_loss(r_c, r_r)
    assert loss == pytest.approx(ref, rel=1e-15) and np.allclose(d_c, e_c, rtol=1e-15, atol=0)
    assert np.allclose(d_r, e_r, rtol=1e-15, atol=0)
    assert bt_margin_loss(r_c, r_r, margin=np.zeros(7))[0] == loss  # default margin: 0


def test_bt_margin_loss_is_trl_1_16_0_reward_trainer():
    """TRL 1.16.0 trl/trainer/reward_trainer.py lines 789-795 (compute_loss), re-derived in NumPy:
    loss = -logsigmoid(rewards_chosen - rewards_rejected - margin).mean()
    loss += center_rewards_coefficient * mean((rewards_chosen + rewards_rejected) ** 2)."""
    r_c, r_r, m, _ = _pairs(2)
    coef = 0.01  # RewardConfig.center_rewards_coefficient, its docstring's recommended value
    z = r_c - r_r - m
    trl = -np.mean(np.log(1.0 / (1.0 + np.exp(-z)))) + coef * np.mean((r_c + r_r) ** 2)
    assert bt_margin_loss(r_c, r_r, margin=m, center=coef)[0] == pytest.approx(trl, rel=1e-13)
    trl_plain = -np.mean(np.log(1.0 / (1.0 + np.exp(-(r_c - r_r)))))  # no margin column, coefficient None
    assert bt_margin_loss(r_c, r_r)[0] == pytest.approx(trl_plain, rel=1e-13)


def test_bt_margin_loss_is_openrlhf_0_11_2_pairwise_loss():
    """OpenRLHF 0.11.2 openrlhf/models/loss.py lines 301-313 (PairWiseLoss.forward), re-derived:
    -logsigmoid(chosen_reward - reject_reward - margin).mean(); no centering term."""
    r_c, r_r, m, _ = _pairs(8)
    ref = np.mean(np.logaddexp(0.0, -(r_c - r_r - m)))
    assert bt_margin_loss(r_c, r_r, margin=m)[0] == pytest.approx(ref, rel=1e-14)


def test_bt_margin_loss_saturates_without_overflow_and_refuses_bad_input():
    loss, (d_c, _) = bt_margin_loss([1e3], [-1e3])
    assert loss == 0.0 and d_c[0] == -0.0
    assert bt_margin_loss([-1e3], [0.0])[0] == pytest.approx(1e3)
    names("r_rejected", "shape", lambda: bt_margin_loss([1.0, 2.0], [1.0]))
    names("margin", "shape", lambda: bt_margin_loss([1.0], [0.0], margin=[1.0, 2.0]))
    names("center", ">= 0", lambda: bt_margin_loss([1.0], [0.0], center=-1.0))
    names("weights", "entries >= 0", lambda: bt_margin_loss([1.0], [0.0], weights=[-1.0]))
    names("r_chosen", "non-empty", lambda: bt_margin_loss([], []))
    overflows("bt_margin_loss", "loss and gradients", lambda: bt_margin_loss([1e308], [1e308], center=1.0))


def test_outcome_loss_gradients_and_values():
    rng = np.random.default_rng(3)
    r, y, w = rng.normal(size=6), rng.uniform(0, 1, 6), rng.uniform(0.1, 1, 6)
    for kind in ("bce", "squared"):
        _, dr = outcome_loss(r, y, kind=kind, weights=w)
        assert np.allclose(dr, fd_grad(lambda v: outcome_loss(v, y, kind, w)[0], r), atol=TOL)
    bce = np.mean(-(y * np.log(1 / (1 + np.exp(-r))) + (1 - y) * np.log(1 / (1 + np.exp(r)))))
    assert outcome_loss(r, y)[0] == pytest.approx(bce, rel=1e-13)  # default: bce, the mean
    assert outcome_loss(r, y, "squared")[0] == pytest.approx(np.mean((r - y) ** 2) / 2, rel=1e-14)
    names("label", "entries <= 1", lambda: outcome_loss([0.0], [2.0]))
    names("kind", "one of", lambda: outcome_loss([0.0], [1.0], kind="hinge"))


def test_one_hot_features_is_the_table():
    phi = one_hot_features(2, 3)
    w = np.arange(6.0)
    assert phi.shape == (2, 3, 6) and np.array_equal(phi @ w, w.reshape(2, 3))
    names("Y", "N * Y <= 1000", lambda: one_hot_features(10, 101))  # as many features as a fit takes
    names("N", "<= 1000", lambda: one_hot_features(10**6, 2))
    assert one_hot_features(10, 100).shape == (10, 100, 1000)


def _linear_case(seed=4):
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(3, 4, 5))
    x, c, r = rng.integers(0, 3, 9), rng.integers(0, 4, 9), rng.integers(0, 4, 9)
    return rng, phi, x, c, r


def test_linear_bt_loss_gradient_and_the_tabular_case():
    rng, phi, x, c, r = _linear_case()
    w, m, wt = rng.normal(size=5), rng.uniform(0, 1, 9), rng.uniform(0.1, 1, 9)
    _, dw = linear_bt_loss(w, phi, x, c, r, margin=m, center=0.2, weights=wt, l2=0.5)
    f = lambda v: linear_bt_loss(v, phi, x, c, r, margin=m, center=0.2, weights=wt, l2=0.5)[0]  # noqa: E731
    assert np.allclose(dw, fd_grad(f, w), atol=TOL)
    # one-hot features, no margin, no centering: dpo.reward_table_loss on the table
    table = rng.normal(size=(3, 4))
    loss, dw = linear_bt_loss(table.ravel(), one_hot_features(3, 4), x, c, r)
    ref, dr = reward_table_loss(table, x, c, r)
    assert loss == pytest.approx(ref, rel=1e-14) and np.allclose(dw, dr.ravel(), atol=1e-15)


def test_linear_outcome_loss_gradient():
    rng, phi, x, c, _ = _linear_case(5)
    w, y = rng.normal(size=5), rng.uniform(0, 1, 9)
    for kind in ("bce", "squared"):
        _, dw = linear_outcome_loss(w, phi, x, c, y, kind=kind, weights=None, l2=0.3)
        f = lambda v, k=kind: linear_outcome_loss(v, phi, x, c, y, kind=k, weights=None, l2=0.3)[0]  # noqa: E731
        assert np.allclose(dw, fd_grad(f, w), atol=TOL)
    names("w", "shape", lambda: linear_outcome_loss(np.zeros(4), phi, x, c, y))


def test_newton_hessians_match_finite_differences_of_the_gradient():
    from minirl_lm.reward.bt import _bt_newton, _outcome_newton

    rng, phi, x, c, r = _linear_case(6)
    w, m, wt = rng.normal(size=5), rng.uniform(0, 1, 9), rng.uniform(0.1, 1, 9)
    H = _bt_newton(w, phi[x, c], phi[x, r], m, 0.2, wt, 0.5)[2]
    # the fit's loss (its line search) is the public loss, ridge included
    got = _bt_newton(w, phi[x, c], phi[x, r], m, 0.2, wt, 0.5)[0]
    assert got == linear_bt_loss(w, phi, x, c, r, margin=m, center=0.2, weights=wt, l2=0.5)[0]
    num = np.stack(
        [fd_grad(lambda v, i=i: _bt_newton(v, phi[x, c], phi[x, r], m, 0.2, wt, 0.5)[1][i], w) for i in range(5)]
    )
    assert np.allclose(H, num, atol=1e-7)
    y = rng.uniform(0, 1, 9)
    for kind in ("bce", "squared"):
        H = _outcome_newton(w, phi[x, c], y, kind, wt, 0.5)[2]
        assert (
            _outcome_newton(w, phi[x, c], y, kind, wt, 0.5)[0]
            == linear_outcome_loss(w, phi, x, c, y, kind=kind, weights=wt, l2=0.5)[0]
        )
        num = np.stack(
            [fd_grad(lambda v, i=i: _outcome_newton(v, phi[x, c], y, kind, wt, 0.5)[1][i], w) for i in range(5)]
        )
        assert np.allclose(H, num, atol=1e-7)


def test_bt_pair_law_is_the_sampler_law():
    R = np.array([[0.0, 1.0, -0.5], [2.0, 0.0, 0.3]])
    mu = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    x, c, r, p = bt_pair_law(R, mu, mu0=np.array([0.25, 0.75]))
    assert p.sum() == pytest.approx(1.0, abs=1e-15) and x.shape == (18,)
    n = 200_000
    px, pc, pr = bt_sample_preferences(R, mu, n, np.random.default_rng(0), mu0=np.array([0.25, 0.75]))
    freq = np.bincount((px * 3 + pc) * 3 + pr, minlength=18) / n
    assert np.abs(freq - p).max() < 5 * np.sqrt(0.25 / n)  # five standard errors at most
    assert np.allclose(bt_pair_law(R, mu)[3].reshape(2, 9).sum(1), 0.5)  # default: uniform mu0


def test_identifiability_tabular_fit_recovers_the_reward_up_to_a_constant():
    """The exact expected loss under a full-support pair law: the fit is R + k(x) to 1e-8."""
    R = tasks.reward_table("gold") + np.random.default_rng(7).normal(size=(4, 9))
    pi_ref = softmax_table(tasks.reference_theta())
    x, c, r, p = bt_pair_law(R, pi_ref)
    w = fit_bt(one_hot_features(4, 9), x, c, r, margin=None, center=0.0, weights=p, l2=0.0, iters=100)
    r_hat = w.reshape(4, 9)
    assert error_off_constant(r_hat, R) < 1e-8
    assert np.abs(r_hat.mean(axis=1)).max() < 1e-12  # the pseudo-inverse never moves the constant
    # centering (TRL's coefficient) pins the constant instead: r_c + r_r near 0 on the pairs
    w_c = fit_bt(one_hot_features(4, 9), x, c, r, center=0.01, weights=p)
    assert error_off_constant(w_c.reshape(4, 9), R) > 1e-6  # the centering term biases the fit


def test_fit_bt_with_a_margin_inflates_the_gap_and_fit_outcome_recovers_labels():
    R = np.array([[0.0, 1.0]])
    mu = np.array([[0.5, 0.5]])
    x, c, r, p = bt_pair_law(R, mu)
    hot = one_hot_features(1, 2)
    gap = lambda w: w[1] - w[0]  # noqa: E731
    assert gap(fit_bt(hot, x, c, r, weights=p)) == pytest.approx(1.0, abs=1e-10)
    m = np.abs(R[x, c] - R[x, r])
    assert gap(fit_bt(hot, x, c, r, margin=m, weights=p)) > 1.5  # the margin is added to the gap
    # outcome: labels 0.2 and 0.9 at the two responses; tabular bce recovers their logits
    w = fit_outcome(hot, np.array([0, 0]), np.array([0, 1]), np.array([0.2, 0.9]), kind="bce")
    assert np.allclose(1 / (1 + np.exp(-w)), [0.2, 0.9], atol=1e-12)
    w = fit_outcome(
        hot,
        np.array([0, 0]),
        np.array([0, 1]),
        np.array([0.2, 0.9]),
        kind="squared",
        weights=None,
        l2=0.0,
        iters=5,
    )
    assert np.allclose(w, [0.2, 0.9], atol=1e-14)
    names("iters", ">= 1", lambda: fit_outcome(hot, [0], [0], [1.0], iters=0))
    names("l2", ">= 0", lambda: fit_bt(hot, x, c, r, l2=-1.0))


def test_error_off_constant():
    R = np.array([[0.0, 1.0, 2.0]])
    assert error_off_constant(R + 5.0, R) == 0.0
    assert error_off_constant(R + np.array([[0.0, 0.0, 1.0]]), R) == 0.5  # the midrange
    names("r_hat", "shape", lambda: error_off_constant(np.zeros((1, 2)), R))


def test_overflow_is_named_never_warned():
    # a margin beyond float64 saturates the loss at 0 (no warning); a centering term that
    # overflows (0 * inf included) names the function and the range of every input
    assert silent(lambda: bt_margin_loss([1e308], [-1e308]))[0] == 0.0
    overflows("bt_margin_loss", "loss", lambda: bt_margin_loss([1e308], [1e308]))
    msg = overflows("bt_margin_loss", "loss", lambda: bt_margin_loss([1e308], [1e308], center=0.5))
    assert "r_chosen in [1e+308, 1e+308], r_rejected in [1e+308, 1e+308], center = 0.5" in msg
    # an overflow driven by r_rejected alone is not blamed on r_chosen
    msg = overflows("bt_margin_loss", "loss", lambda: bt_margin_loss([0.0], [1e308], center=1.0))
    assert "r_rejected in [1e+308, 1e+308]" in msg and not msg.startswith("r_chosen")
    overflows("outcome_loss", "loss", lambda: outcome_loss([1e200], [0.0], kind="squared"))
    assert silent(lambda: outcome_loss([-1e308], [0.0]))[0] == 0.0  # softplus(-inf) = 0
    phi = np.ones((1, 2, 1))
    overflows(
        "linear_bt_loss",
        "loss",
        lambda: linear_bt_loss([1e308], phi * [[[1.0]], [[-1.0]]][0], [0], [0], [1], center=1.0),
    )
    overflows(
        "linear_outcome_loss", "loss", lambda: linear_outcome_loss([1e200], phi, [0], [0], [0.0], kind="squared")
    )
    law = silent(lambda: bt_pair_law(np.array([[1e308, -1e308]]), np.array([[0.5, 0.5]])))
    assert law[3].tolist() == [0.25, 0.5, 0.0, 0.25]
    overflows(
        "error_off_constant",
        "error",
        lambda: error_off_constant(np.array([[1e308, -1e308]]), np.array([[-1e308, 1e308]])),
    )


def test_defaults_are_the_stated_ones():
    rng, phi, x, c, r = _linear_case(9)
    w, y = rng.normal(size=5), rng.uniform(0, 1, 9)
    r_c, r_r, _, _ = _pairs(9)
    assert bt_margin_loss(r_c, r_r)[0] == bt_margin_loss(r_c, r_r, None, 0.0, np.full(7, 1 / 7))[0]
    assert outcome_loss(r_c, y[:7])[0] == outcome_loss(r_c, y[:7], "bce", np.full(7, 1 / 7))[0]
    assert (
        linear_bt_loss(w, phi, x, c, r)[0]
        == linear_bt_loss(w, phi, x, c, r, margin=None, center=0.0, weights=None, l2=0.0)[0]
    )
    assert (
        linear_outcome_loss(w, phi, x, c, y)[0]
        == linear_outcome_loss(w, phi, x, c, y, kind="bce", weights=None, l2=0.0)[0]
    )
    a = fit_bt(phi, x, c, r, l2=0.1)
    assert np.array_equal(a, fit_bt(phi, x, c, r, margin=None, center=0.0, weights=None, l2=0.1, iters=100))
    b = fit_outcome(phi, x, c, y, l2=0.1)
    assert np.array_equal(b, fit_outcome(phi, x, c, y, kind="bce", weights=None, l2=0.1, iters=100))
    R = np.array([[0.0, 1.0], [2.0, 0.0]])
    mu = np.array([[0.5, 0.5], [0.2, 0.8]])
    assert np.array_equal(bt_pair_law(R, mu)[3], bt_pair_law(R, mu, np.array([0.5, 0.5]))[3])


def test_linear_losses_add_the_ridge_term_exactly():
    rng, phi, x, c, r = _linear_case(10)
    w, y = rng.normal(size=5), rng.uniform(0, 1, 9)
    base = linear_bt_loss(w, phi, x, c, r)[0]
    assert linear_bt_loss(w, phi, x, c, r, l2=2.0)[0] == pytest.approx(base + float(w @ w), rel=1e-14)
    bt = bt_margin_loss(phi[x, c] @ w, phi[x, r] @ w, margin=np.full(9, 0.3), center=0.2)[0]
    assert linear_bt_loss(w, phi, x, c, r, margin=np.full(9, 0.3), center=0.2)[0] == pytest.approx(bt, rel=1e-14)
    out = outcome_loss(phi[x, c] @ w, y, "squared")[0]
    assert linear_outcome_loss(w, phi, x, c, y, kind="squared", l2=2.0)[0] == pytest.approx(
        out + float(w @ w), rel=1e-14
    )


def test_fits_are_stationary_and_merge_repeated_rows():
    from minirl_lm.reward.bt import _merge

    rng, phi, x, c, r = _linear_case(11)
    m = rng.uniform(0, 1, 9)
    w = fit_bt(phi * 3.0, x, c, r, margin=m, center=0.1, l2=1e-3)  # steep: the line search acts
    assert np.abs(linear_bt_loss(w, phi * 3.0, x, c, r, margin=m, center=0.1, l2=1e-3)[1]).max() < 1e-10
    y = rng.uniform(0, 1, 9)
    for kind in ("bce", "squared"):
        w = fit_outcome(phi * 3.0, x, c, y, kind=kind, l2=1e-3)
        assert np.abs(linear_outcome_loss(w, phi * 3.0, x, c, y, kind=kind, l2=1e-3)[1]).max() < 1e-10
    # repeating every pair twice at half the weight changes nothing
    x2, c2, r2 = np.tile(x, 2), np.tile(c, 2), np.tile(r, 2)
    a = fit_bt(phi, x, c, r, l2=0.1)
    assert np.allclose(fit_bt(phi, x2, c2, r2, l2=0.1), a, atol=1e-12)
    (mx, mc), mw = _merge((np.array([1, 0, 1]), np.array([2, 2, 2])), np.array([0.25, 0.5, 0.25]))
    assert mx.tolist() == [0, 1] and mc.tolist() == [2, 2] and mw.tolist() == [0.5, 0.5]
    assert mx.dtype == np.int64
    one = fit_bt(phi, x, c, r, l2=0.1, iters=1)  # one full Newton step from 0
    g, H = linear_bt_loss(np.zeros(5), phi, x, c, r, l2=0.1)[1], None
    from minirl_lm.reward.bt import _bt_newton

    H = _bt_newton(np.zeros(5), phi[x, c], phi[x, r], np.zeros(9), 0.0, np.full(9, 1 / 9), 0.1)[2]
    assert np.allclose(one, -np.linalg.solve(H, g), atol=1e-12)


def test_error_off_constant_takes_the_worst_prompt():
    R = np.zeros((2, 3))
    r_hat = np.array([[0.0, 0.2, 0.4], [0.0, 1.0, -1.0]])
    assert error_off_constant(r_hat, R) == 1.0  # prompt 1: midrange 0, half-range 1
    assert error_off_constant(r_hat[:1], R[:1]) == pytest.approx(0.2, abs=1e-16)
    names("reward", "non-empty", lambda: error_off_constant(np.zeros((0, 2)), np.zeros((0, 2))))


def test_overflow_messages_and_zero_weights():
    # an overflow times a zero weight is 0 * inf = NaN: still reported, never warned
    msg = overflows("bt_margin_loss", "loss", lambda: bt_margin_loss([1e308], [1e308], center=0.5, weights=[0.0]))
    assert "got NaN" in msg and msg.endswith("weights in [0, 0]")
    assert "got NaN" in overflows("outcome_loss", "loss", lambda: outcome_loss([1e200], [0.0], "squared", [0.0]))
    phi = np.ones((1, 1, 1))
    overflows("linear_bt_loss", "loss", lambda: linear_bt_loss([1e308], phi, [0], [0], [0], center=1.0))
    msg = overflows(
        "linear_outcome_loss",
        "loss",
        lambda: linear_outcome_loss([1e200], phi, [0], [0], [0.0], kind="squared", weights=[0.0]),
    )
    assert "got NaN" in msg
    overflows("error_off_constant", "error", lambda: error_off_constant([[1e308, 1e308]], [[-1e308, -1e308]]))


def test_fits_beyond_float64_are_a_clear_error_not_lapack():
    # features near 1e160: the Hessian is inf. LAPACK is never called on it (it raised
    # LinAlgError, or hung, before): NaN weights, which the boundary reports by the function.
    phi = np.full((1, 2, 2), 1e160)
    phi[0, 1] = -1e160
    msg = overflows("fit_bt", "w", lambda: fit_bt(phi, [0], [0], [1]))
    assert "phi in [-1e+160, 1e+160]" in msg
    overflows("fit_outcome", "w", lambda: fit_outcome(phi, [0, 0], [0, 1], [1.0, 0.0]))
    huge = np.full((1, 2, 2), 1e308)
    overflows("fit_outcome", "w", lambda: fit_outcome(huge, [0, 0], [0, 1], [1.0, 0.0]))
    overflows("fit_bt", "w", lambda: fit_bt(huge, [0], [0], [1], center=1.0))
    assert np.isfinite(fit_bt(phi / 1e156, [0], [0], [1], l2=1.0)).all()  # large, in float64: a fit


def test_weights_enter_every_loss():
    rng, phi, x, c, r = _linear_case(12)
    w, y, wt = rng.normal(size=5), rng.uniform(0, 1, 9), rng.uniform(0.1, 1, 9)
    rr = phi[x, c] @ w  # (P,)
    bce = float(wt @ (np.logaddexp(0.0, rr) - y * rr))
    assert outcome_loss(rr, y, "bce", wt)[0] == pytest.approx(bce, rel=1e-14)
    assert linear_outcome_loss(w, phi, x, c, y, kind="bce", weights=wt)[0] == pytest.approx(bce, rel=1e-14)
    z = rr - phi[x, r] @ w
    assert linear_bt_loss(w, phi, x, c, r, weights=wt)[0] == pytest.approx(
        float(wt @ np.logaddexp(0.0, -z)), rel=1e-14
    )
    a = fit_outcome(phi, x, c, y, kind="squared", weights=wt, l2=0.1)
    assert np.abs(linear_outcome_loss(a, phi, x, c, y, kind="squared", weights=wt, l2=0.1)[1]).max() < 1e-12
    assert np.abs(linear_outcome_loss(a, phi, x, c, y, kind="squared", l2=0.1)[1]).max() > 1e-6


def test_the_relations_read_alone():
    from minirl_lm.reward.bt import _few_features, _few_pairs, _ids_in_phi, _one_hot_size

    phi, ids = np.zeros((2, 3, 1)), np.array([0, 1])
    assert _ids_in_phi(phi, ids, chosen=ids + 1, rejected=ids, response=ids + 1) is None  # ids 2 < Y = 3
    assert _ids_in_phi(phi, ids + 1) == "prompt: expected ids < 2 (phi's prompts), got max 2"
    assert _ids_in_phi(phi, ids, rejected=ids + 2) == "rejected: expected ids < 3 (phi's responses), got max 3"
    assert _ids_in_phi(phi, ids, response=ids + 2).startswith("response: expected ids < 3")
    assert _one_hot_size(10, 100) is None and _one_hot_size(10, 101).startswith("Y: expected N * Y <= 1000")
    assert (
        _few_features(np.zeros((1, 1, 1000)), 100) is None and _few_features(np.zeros((1, 1, 10)), 10000) is None
    )
    assert _few_features(np.zeros((1, 1, 1001)), 1) == (
        "phi: expected at most 1000 features (F x F Newton solves), got F = 1001"
    )
    assert _few_features(np.zeros((1, 1, 1000)), 101) == (
        "iters: expected iters * F**3 <= 1e+11 (F x F Newton solves), got 101 * 1000**3"
    )
    assert _few_pairs(np.zeros((10, 1000))) is None
    assert (
        _few_pairs(np.zeros((11, 1000)))
        == "reward: expected N * Y * Y <= 10000000 ordered pairs, got 11 * 1000 * 1000 = 11000000"
    )
    # the losses build no Hessian: 10**5 features are a gradient, not a 80 GB matrix
    big = np.zeros((1, 2, 10**5))
    assert linear_bt_loss(np.zeros(10**5), big, [0], [0], [1])[1].shape == (10**5,)
    assert linear_outcome_loss(np.zeros(10**5), big, [0], [1], [1.0])[1].shape == (10**5,)
    names("phi", "at most 1000 features", lambda: fit_bt(big, [0], [0], [1]))


def test_response_ids_beyond_phi_are_named_by_their_argument():
    phi, w, ids = np.zeros((2, 3, 1)), np.zeros(1), np.array([0, 1])
    msg = raises(ValueError, lambda: linear_bt_loss(w, phi, ids, ids + 2, ids))
    assert msg == "chosen: expected ids < 3 (phi's responses), got max 3"
    msg = raises(ValueError, lambda: linear_outcome_loss(w, phi, ids, ids + 2, np.ones(2)))
    assert msg == "response: expected ids < 3 (phi's responses), got max 3"
    msg = raises(ValueError, lambda: one_hot_features(3, 334))
    assert msg == "Y: expected N * Y <= 1000 features (Y <= 333 at N = 3), got Y = 334"

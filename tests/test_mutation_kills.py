"""Tests that kill the mutants the rest of the suite let survive, grouped by module.

Each test states an exact, hand-checked answer: defaults, hand-computed values, empty-batch
answers, error messages naming the argument, and the returned diagnostics.
"""

import numpy as np
import pytest
import warnings

from minirl_lm.pg import advantages as A
from minirl_lm.pg import clip
from minirl_lm.values import critic
from minirl_lm.direct import dpo
from minirl_lm.pg import grpo
from minirl_lm.pg import kl
from minirl_lm.values import optimum
from minirl_lm.pg import reinforce



# ---------------------------------------------------------------- advantages.py

def test_reinforce_pp_equal_returns_and_no_real_token_give_zeros_of_the_mask_shape():
    m = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    for rew, mask in ((np.zeros((2, 3)), m), (np.ones((2, 3)), np.zeros((2, 3)))):
        a = A.reinforce_pp(rew, mask, gamma=0.0)
        assert a.shape == (2, 3) and (a == 0).all()


def test_reinforce_pp_overflow_messages_are_exact_and_silent():
    with np.errstate(over="ignore"), pytest.raises(ValueError) as e:
        A.reinforce_pp([[1e308, 1e308]], [[1.0, 1.0]])
    assert str(e.value) == ("token_rewards: the returns to go overflow float64; "
                            "rescale the rewards")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:                   # finite returns, variance overflows
            A.reinforce_pp([[1e200, 0.0], [-1e200, 0.0]], [[1.0, 1.0], [1.0, 1.0]], gamma=0.0)
        assert str(e.value) == ("token_rewards: the batch variance of the returns overflows "
                                "float64; rescale the rewards")


def test_reinforce_pp_defaults_by_hand():
    """gamma = 1, eps = 1e-8, ddof = 1: returns to go [[3, 2], [1, 0]] over 3 real tokens."""
    r = np.array([[1.0, 2.0], [1.0, 0.0]])
    m = np.array([[1.0, 1.0], [1.0, 0.0]])
    G = np.array([3.0, 2.0, 1.0])
    c = G - 2.0
    want = c / np.sqrt((c ** 2).sum() / 2 + 1e-8)
    a = A.reinforce_pp(r, m)
    np.testing.assert_allclose(a[m > 0], want, rtol=1e-15)
    assert a[1, 1] == 0.0
    assert (A.reinforce_pp(r, m) == A.reinforce_pp(r, m, 1.0, 1e-8, 1)).all()


def test_reinforce_pp_baseline_defaults_by_hand_and_k1():
    r = np.array([[1.0, 3.0]])                                 # one group of K = 2: c = [-1, 1]
    m = np.array([[1.0, 1.0], [1.0, 0.0]])
    c = np.array([-1.0, -1.0, 1.0])                            # the real tokens, row by row
    want = (c - c.mean()) / np.sqrt(((c - c.mean()) ** 2).sum() / 2 + 1e-8)
    with warnings.catch_warnings():                           # padding is never divided by
        warnings.simplefilter("error")
        a = A.reinforce_pp_baseline(r, m)
    np.testing.assert_allclose(a[m > 0], want, rtol=1e-14)
    assert (a == A.reinforce_pp_baseline(r, m, 1e-8, 1)).all()
    z = A.reinforce_pp_baseline([[2.0], [5.0]], m)             # K = 1: exactly 0
    assert z.shape == (2, 2) and (z == 0).all()


def test_remax_bound_is_inclusive_and_the_message_exact():
    np.testing.assert_array_equal(A.remax([[0.0, 1.0]], [A.REWARD_MAX]),
                                  [[-A.REWARD_MAX, 1.0 - A.REWARD_MAX]])
    with pytest.raises(ValueError) as e:
        A.remax([[0.0, 1.0]], [2e150])
    assert str(e.value) == "greedy_rewards: expected |r| <= 1e+150, got max 2e+150"
    with pytest.raises(ValueError, match=r"^greedy_rewards: expected 1 dimension"):
        A.remax([[0.0, 1.0]], [[0.5]])


def test_opo_baselines_by_hand():
    # total length 1: the baseline is the one non-empty response's reward
    np.testing.assert_array_equal(A.opo([[1.0, 3.0]], [[1.0, 0.0]]), [[0.0, 2.0]])
    # fractional lengths are weights: baseline (0.25*1 + 0.25*3) / 0.5 = 2
    np.testing.assert_array_equal(A.opo([[1.0, 3.0]], [[0.25, 0.25]]), [[-1.0, 1.0]])
    # all-empty group: its own mean (2), not the batch's
    np.testing.assert_array_equal(A.opo([[1.0, 3.0], [5.0, 9.0]], [[0.0, 0.0], [1.0, 1.0]]),
                                  [[-1.0, 1.0], [-2.0, 2.0]])
    # equal rewards in a group: exactly 0, though the weighted mean has a floating residue
    a = A.opo([[0.1, 0.1], [0.0, 3.0]], [[1.0, 2.0], [1.0, 1.0]])
    assert (a[0] == 0.0).all()
    np.testing.assert_array_equal(a[1], [-1.5, 1.5])


def test_batch_std_defaults_by_hand_and_equal_batch():
    r = np.array([[0.0, 1.0]])
    want = np.array([[-0.5, 0.5]]) / (0.5 + 1e-8)              # ddof = 0: std 0.5; eps = 1e-8
    np.testing.assert_array_equal(A.batch_std(r), want)
    np.testing.assert_array_equal(A.batch_std(r, 0.0, 1), np.array([[-0.5, 0.5]]) / np.sqrt(0.5))
    small = A.batch_std([[0.0, 0.5], [0.25, 0.25]], eps=0.0)   # spread below 1
    dev = np.array([0.0, 0.5, 0.25, 0.25]) - 0.25
    np.testing.assert_allclose(small, [[-0.25, 0.25], [0.0, 0.0]] / np.sqrt((dev ** 2).mean()),
                               rtol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for eps in (0.0, 1e-8):
            z = A.batch_std([[2.0, 2.0], [2.0, 2.0]], eps=eps)
            assert z.shape == (2, 2) and (z == 0).all()
        z = A.batch_std([[2.0]], eps=0.0, ddof=1)
        assert z.shape == (1, 1) and (z == 0).all()


# ---------------------------------------------------------------- kl.py

LOGP = np.array([[-1.0, -2.0, -0.5], [-0.3, -1.2, 0.0]])
LOGP_REF = np.array([[-1.1, -1.9, -0.7], [-0.2, -1.0, 0.0]])
MASK = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])


def _k3(u):
    return np.exp(-u) - 1.0 + u


def test_kl_straight_through_defaults_and_constant_weights_by_hand():
    u = (LOGP - LOGP_REF) * MASK
    loss, g = kl.kl_penalty_straight_through(LOGP, LOGP_REF, MASK)    # k3, token_mean
    np.testing.assert_allclose(loss, (_k3(u) * MASK).sum() / 5, rtol=1e-14)
    np.testing.assert_allclose(g, u / 5, rtol=1e-14)
    loss, g = kl.kl_penalty_straight_through(LOGP, LOGP_REF, MASK, "k1", "constant", 5)
    np.testing.assert_allclose(loss, u.sum() / 10, rtol=1e-14)          # w = mask / (B max_len)
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
    logp[1, 2], logp_old[1, 2] = 0.0, -1000.0                         # padding: ratio e^1000
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
    assert str(e.value) == ("logp: rho = pi/pi_old or k3 overflows float64 "
                            "(log-ratio beyond ~709)")


def test_adaptive_kl_coef_edges_by_hand():
    assert kl.adaptive_kl_coef(0.1, 0.0, 0.2, 1.0, 5.0) == 0.0         # mult exactly 0: allowed
    assert kl.adaptive_kl_coef(0.1, 0.3, 0.2, 100.0, 0.0) == 0.1       # no step: unchanged
    assert kl.adaptive_kl_coef(0.0, 0.3, 0.2, 100.0, 8.0) == 0.0       # beta = 0 stays 0
    assert kl.adaptive_kl_coef(0.5, 0.21, 0.2, 0.5, 0.5) == 0.5 * (1.0 + (0.21 / 0.2 - 1.0))
    assert kl.adaptive_kl_coef(1.0, 0.4, 0.2, 10.0, 5.0) == 1.1        # error clipped at +0.2
    with pytest.raises(ValueError) as e:
        kl.adaptive_kl_coef(0.1, 0.0, 0.2, 1.0, 6.0)
    assert str(e.value) == ("n_steps: expected n_steps <= horizon / 0.2 = 5 "
                            "(else beta turns negative), got 6")


# ---------------------------------------------------------------- critic.py

def test_clipped_value_loss_one_token_and_one_sided_overflow():
    loss, d = critic.clipped_value_loss([[2.0, 9.0]], [[1.0, 9.0]], [[0.0, 0.0]], [[1.0, 0.0]],
                                        0.5)
    # v_clip = 1.5; max((2 - 0)^2, (1.5 - 0)^2) = 4 over M = 1 token
    assert loss == 2.0
    np.testing.assert_array_equal(d, [[2.0, 0.0]])
    with np.errstate(over="ignore"), pytest.raises(ValueError) as e:   # only l1 overflows
        critic.clipped_value_loss([[1e200]], [[0.0]], [[0.0]], [[1.0]], 0.2)
    assert str(e.value) == "vpreds: the squared value error overflows float64"


def test_kl_is_logp_old_shape_messages_are_exact():
    with pytest.raises(ValueError) as e:
        kl.kl_penalty_is(LOGP, [[0.0]], LOGP_REF, MASK)
    assert str(e.value) == "logp_old: expected the shape of logp (2, 3), got (1, 1)"
    with pytest.raises(ValueError) as e:
        kl.kl_penalty_is(LOGP, [0.0, 0.0, 0.0], LOGP_REF, MASK)
    assert str(e.value) == "logp_old: expected 2 dimensions, got shape (3,)"


def test_reinforce_pp_accepts_ddof_0():
    # returns to go [0, -1]: centred [0.5, -0.5], variance 0.25 with ddof = 0
    np.testing.assert_allclose(A.reinforce_pp([[1.0, -1.0]], np.ones((1, 2)), ddof=0),
                               [[0.5, -0.5]] / np.sqrt(0.25 + 1e-8), rtol=1e-15)
    # one group [1, 0]: centred [0.5, -0.5] on one token each, variance 0.25 with ddof = 0
    np.testing.assert_allclose(A.reinforce_pp_baseline([[1.0, 0.0]], [[1.0], [1.0]], ddof=0),
                               [[0.5], [-0.5]] / np.sqrt(0.25 + 1e-8), rtol=1e-15)


def test_error_messages_name_the_type_of_a_non_array_argument():
    from minirl_lm.core.checks import float_scalar
    with pytest.raises(TypeError) as e:
        float_scalar("abc", "beta")
    assert str(e.value) == "beta: expected a real number, got str 'abc'"
    with pytest.raises(TypeError) as e:
        kl.kl_penalty_is(LOGP, [["a", "b", "c"], ["d", "e", "f"]], LOGP_REF, MASK)
    assert str(e.value) == ("logp_old: expected a real-valued array, "
                            "got array of shape (2, 3) and dtype <U1")


def test_log_ratio_mask_shape_message_and_silent_overflow():
    with pytest.raises(ValueError) as e:
        kl.kl_per_token(LOGP, LOGP_REF, [[1.0, 1.0], [1.0, 0.0]])
    assert str(e.value) == "mask: expected the shape of logp (2, 3), got (2, 2)"
    for est in ("k1", "k2", "k3"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")              # the subtraction overflows: no warning
            with pytest.raises(ValueError) as e:
                kl.kl_per_token([[1e308]], [[-1e308]], [[1.0]], est)
        assert str(e.value).startswith("logp: ")


def test_conservative_dpo_without_smoothing_is_dpo_bitwise_even_on_overflow():
    # beta h = 1e308 * 2 overflows to +inf: -log sigma(+inf) = 0 exactly, and no 0 * inf
    for args in (([1.0], [-1.0], [0.0], [0.0], 1e308), ([0.3, -2.0], [0.1, 0.5], [0.2, 0.0],
                                                        [-0.4, 0.1], 0.7)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            want = dpo.dpo_loss(*args)
            got = dpo.dpo_loss(*args, variant="conservative", label_smoothing=0.0)
        assert got[0] == want[0]
        assert all(np.array_equal(g, w) for g, w in zip(got[1], want[1]))


def test_logit_spread_beyond_float64_is_an_error_naming_the_table():
    for theta, theta_ref, name in (([[1e308, -1e308]], [[0.0, 0.0]], "theta"),
                                   ([[0.0, 0.0]], [[1e308, -1e308]], "theta_ref")):
        for f in (kl.exact_kl_grad_theta, kl.exact_reverse_kl_grad_theta):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with pytest.raises(ValueError) as e:
                    f(theta, theta_ref)
            assert str(e.value) == (f"{name}: expected a value for which {name} - its row maximum "
                                    "is finite in float64, got one that makes it inf (overflow)")
    # a spread within float64 is fine: 1e308 - (-7e307) = 1.7e308
    g = kl.exact_kl_grad_theta([[1e308, -7e307]], [[0.0, 0.0]])
    assert np.isfinite(g).all()


def test_log_ratio_is_exactly_zero_at_padding_whatever_is_there():
    lp = np.array([[-1.0, 1e308, -5.0]])
    ref = np.array([[-2.0, -1e308, 7.0]])
    for est in ("k1", "k2", "k3"):
        k, dk = kl.kl_per_token(lp, ref, [[1.0, 0.0, 0.0]], est)
        assert (k[0, 1:] == 0).all() and (dk[0, 1:] == 0).all()


def test_clipped_surrogate_ignores_whatever_sits_at_padding():
    # padding holds huge log-probs and a huge negative advantage: rho is 1 there by definition,
    # so the clipped branch is A, weighted 0; nothing may leak into the loss, gradient or fraction
    logp, old, mask = [[-0.5, 300.0]], [[-0.7, -300.0]], [[1.0, 0.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = clip.clipped_surrogate(logp, old, [[2.0, -1e308]], mask)
        frac = clip.clip_fraction(logp, old, [[2.0, -1e308]], mask)
    want = clip.clipped_surrogate([[-0.5, 0.0]], [[-0.7, 0.0]], [[2.0, 0.0]], mask)
    # rho = exp(0.2) = 1.2214 > 1.2 with A = 2 > 0: clipped, f = 1.2 * 2 = 2.4, gradient 0
    assert got[0] == want[0] == -2.4 and np.array_equal(got[1], want[1])
    assert (got[1] == 0).all() and frac == 1.0


def test_a_one_after_a_zero_anywhere_in_a_row_is_left_padding():
    from minirl_lm.core.checks import mask_array
    for m, row in (([[1.0, 0.0, 1.0]], 0), ([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]], 1),
                   ([[0.0, 1.0]], 0)):
        with pytest.raises(ValueError) as e:
            mask_array(m, "mask")
        assert str(e.value) == ("mask: expected right padding (1s then 0s in each row), "
                                f"row {row} is {[int(v) for v in m[row]]}")
    assert mask_array([[1.0], [0.0]], "mask").shape == (2, 1)          # T = 1: nothing can rise


def test_overflowing_returns_and_value_errors_raise_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:                       # 1e308 + 1e308 = inf
            A.reinforce_pp([[1e308, 1e308]], np.ones((1, 2)))
        assert str(e.value) == ("token_rewards: the returns to go overflow float64; "
                                "rescale the rewards")
        with pytest.raises(ValueError) as e:                       # (1e200)^2 = inf
            critic.clipped_value_loss([[1e200]], [[0.0]], [[0.0]], [[1.0]], 0.2)
        assert str(e.value) == "vpreds: the squared value error overflows float64"
        # the lower bound v_old - clip = -1e308 - 1e308 overflows to -inf: harmless, v = 0 is
        # inside [-inf, 0], both errors are 0
        loss, d = critic.clipped_value_loss([[0.0]], [[-1e308]], [[0.0]], [[1.0]], 1e308)
    assert loss == 0.0 and np.array_equal(d, [[0.0]])

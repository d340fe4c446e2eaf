"""Exact answers of `minirl_lm.pg.kl`: the full text of every argument-check message (which argument
is named, in which order the checks run, `logp_ref` and `logp_old` named after the caller's
argument), the full text of every overflow message at each place an overflow can occur (the
log-ratio, k1, k2, k3, the KL penalty's sum, the reward shaping, the weighted gradient of the
exact KL, the importance ratio), the silence of all of them (no RuntimeWarning escapes, checked
with warnings turned into errors), hand-computed values of the importance-weighted k3 with
padding garbage, its default aggregation, the branch point of k3's series at `|u| = 0.05`, the
series' last coefficient at the last bit, and the tolerances and row-sum preview of `exact_kl`.
"""

from decimal import Decimal, localcontext

import numpy as np

from minirl_lm.pg import kl

from quiet import overflow as _overflow, raises as _raises, silent as _silent


ONE = [[1.0]]
K3_WHAT = "k3 = exp(-u) - 1 + u (u = logp - logp_ref)"


# ---- argument checks of the log-ratio (every public caller) ----------------------------------

def test_log_ratio_argument_messages_name_each_argument():
    f = kl.kl_per_token
    assert _raises(ValueError, lambda: f([0.0, 0.0], [[0.0, 0.0]], [[1.0, 1.0]])) == \
        "logp: expected 2 dimensions, got shape (2,)"
    assert _raises(ValueError, lambda: f([[np.nan]], [[0.0]], ONE)) == \
        "logp: expected no NaN, got 1 NaN entries"
    assert _raises(ValueError, lambda: f([[0.0, 0.0]], [0.0, 0.0], [[1.0, 1.0]])) == \
        "logp_ref: expected 2 dimensions, got shape (2,)"
    assert _raises(ValueError, lambda: f([[0.0]], [[np.nan]], ONE)) == \
        "logp_ref: expected no NaN, got 1 NaN entries"
    assert _raises(ValueError, lambda: f([[0.0, 0.0]], [[0.0, 0.0, 0.0]], [[1.0, 1.0]])) == \
        "logp_ref: expected the shape of logp (1, 2), got (1, 3)"
    assert _raises(ValueError, lambda: f([[0.0]], [[0.0]], [[0.5]])) == \
        "mask: expected only 0 and 1, got value 0.5"
    assert _raises(ValueError, lambda: f([[0.0, 0.0]], [[0.0, 0.0]], [[1.0, 1.0, 1.0]])) == \
        "mask: expected the shape of logp (1, 2), got (1, 3)"
    # logp is checked first, then logp_ref, then the mask, then the shapes
    assert _raises(ValueError, lambda: f([[np.nan]], [[np.nan]], [[0.5]])) == \
        "logp: expected no NaN, got 1 NaN entries"
    assert _raises(ValueError, lambda: f([[0.0]], [[np.nan]], [[0.5]])) == \
        "logp_ref: expected no NaN, got 1 NaN entries"
    assert _raises(ValueError, lambda: f([[0.0]], [[0.0, 0.0]], [[0.5]])) == \
        "mask: expected only 0 and 1, got value 0.5"


def test_log_ratio_three_dimensional_logp_is_rejected():
    z = np.zeros((1, 1, 1))
    assert _raises(ValueError, lambda: kl.kl_per_token(z, z, ONE)) == \
        "logp: expected 2 dimensions, got shape (1, 1, 1)"
    assert _raises(ValueError, lambda: kl.kl_per_token([[0.0]], z, ONE)) == \
        "logp_ref: expected 2 dimensions, got shape (1, 1, 1)"


def test_kl_penalty_is_names_logp_old_in_its_checks():
    f = kl.kl_penalty_is
    assert _raises(ValueError, lambda: f([[0.0]], [[np.nan]], [[0.0]], ONE)) == \
        "logp_old: expected no NaN, got 1 NaN entries"
    assert _raises(ValueError, lambda: f([[0.0]], [[0.0, 0.0]], [[0.0]], ONE)) == \
        "logp_old: expected the shape of logp (1, 1), got (1, 2)"
    assert _raises(ValueError, lambda: f([[0.0]], [0.0], [[0.0]], ONE)) == \
        "logp_old: expected 2 dimensions, got shape (1,)"
    # logp_ref (through the k3 estimate) is checked before logp_old
    assert _raises(ValueError, lambda: f([[0.0]], [[np.nan]], [[np.nan]], ONE)) == \
        "logp_ref: expected no NaN, got 1 NaN entries"
    assert _raises(ValueError, lambda: f([[0.0]], [[0.0]], [[0.0]], ONE, "bad")) == \
        "agg: expected one of ['constant', 'seq_mean_token_mean', 'seq_sum', 'token_mean'], " \
        "got 'bad'"


# ---- the log-ratio is masked: padding is never read ------------------------------------------

def test_log_ratio_padding_is_exactly_zero_and_never_computed():
    # padding holds log-probs whose difference overflows (1e308 - (-1e308)); it is not computed
    logp = np.array([[-1.0, 1e308], [-2.0, 5.0]])
    logp_ref = np.array([[-1.5, -1e308], [-1.0, 3.0]])
    mask = np.array([[1.0, 0.0], [1.0, 1.0]])
    for _ in range(20):                                 # fresh output buffers: padding stays 0
        junk = np.full((2, 2), 7.0)
        del junk
        k, dk = _silent(lambda: kl.kl_per_token(logp, logp_ref, mask, "k1"))
        assert k.tolist() == [[0.5, 0.0], [-1.0, 2.0]]   # -1 + 1.5, -2 + 1, 5 - 3
        assert dk.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    # a mask row of zeros: every entry is padding, u = 0
    k, _ = _silent(lambda: kl.kl_per_token([[3.0]], [[1.0]], [[0.0]], "k1"))
    assert k.tolist() == [[0.0]]


# ---- overflow: exact messages, no warnings ----------------------------------------------------

def test_k1_overflow_of_the_log_ratio_is_a_silent_error():
    # 1e308 - (-1e308) = 2e308 > 1.8e308: the subtraction itself overflows
    assert _raises(ValueError, lambda: kl.kl_per_token([[1e308]], [[-1e308]], ONE, "k1")) == \
        _overflow("logp", "logp - logp_ref")


def test_k2_overflow_of_the_square_is_a_silent_error():
    # u = 1e200: u^2 = 1e400 overflows, u itself does not
    assert _raises(ValueError, lambda: kl.kl_per_token([[1e200]], [[0.0]], ONE, "k2")) == \
        _overflow("logp", "k2 = u^2/2")


def test_k3_overflow_of_the_exponential_is_a_silent_error():
    # u = -800: exp(800) > e^709.78 overflows
    assert _raises(ValueError, lambda: kl.kl_per_token([[-800.0]], [[0.0]], ONE, "k3")) == \
        _overflow("logp", K3_WHAT)
    # u = -inf (the subtraction overflowed): exp(inf) + (-inf) is invalid (NaN), dk3 = -inf
    assert _raises(ValueError, lambda: kl.kl_per_token([[-1e308]], [[1e308]], ONE)) == \
        _overflow("logp", K3_WHAT)


def test_kl_penalty_overflow_of_the_sum_is_a_silent_error():
    # k1 = u = 1e308 at two tokens, seq_sum with B = 1: w = 1, the sum 2e308 overflows
    call = lambda: kl.kl_penalty([[1e308, 1e308]], [[0.0, 0.0]], [[1.0, 1.0]], "k1", "seq_sum")
    assert _raises(ValueError, call) == _overflow("logp", "the KL penalty")
    # 16 tokens u = +-1e308: the pairwise sum meets +inf and -inf (invalid: NaN)
    lp = np.zeros((1, 16))
    lp[0, [0, 8]], lp[0, [1, 9]] = 1e308, -1e308
    call = lambda: kl.kl_penalty(lp, np.zeros((1, 16)), np.ones((1, 16)), "k1", "seq_sum")
    assert _raises(ValueError, call) == _overflow("logp", "the KL penalty", "NaN")


def test_kl_in_reward_overflow_of_the_sum_over_tokens_is_a_silent_error():
    f = kl.kl_in_reward
    # sum_t u_t = 1e308 + 1e308 overflows
    assert _raises(ValueError, lambda: f([1.0], [[1e308, 1e308]], [[0.0, 0.0]],
                                         [[1.0, 1.0]], 1.0)) == \
        _overflow("logp", "sum_t (logp - logp_ref)")
    # u = [inf, -inf] (each subtraction overflows): their sum is NaN
    assert _raises(ValueError, lambda: f([1.0], [[1e308, -1e308]], [[-1e308, 1e308]],
                                         [[1.0, 1.0]], 1.0)) == \
        _overflow("logp", "sum_t (logp - logp_ref)", "NaN")
    # beta sum_t u_t = 1e308 * (-2): r - (-2e308) overflows
    assert _raises(ValueError, lambda: f([1.0], [[-2.0]], [[0.0]], ONE, 1e308)) == \
        _overflow("beta", "r - beta sum_t u_t")


def test_kl_in_reward_rewards_must_be_one_dimensional():
    assert _raises(ValueError, lambda: kl.kl_in_reward([[1.0]], [[0.0]], [[0.0]], ONE, 0.1)) == \
        "rewards: expected 1 dimension, got shape (1, 1)"
    assert _raises(ValueError, lambda: kl.kl_in_reward([1.0, 2.0], [[0.0]], [[0.0]], ONE,
                                                       0.1)) == \
        "rewards: expected shape (1,), got (2,)"


def test_kl_penalty_is_overflow_of_the_ratio_is_a_silent_error():
    # log rho = 0 - (-800) = 800: exp overflows
    assert _raises(ValueError, lambda: kl.kl_penalty_is([[0.0]], [[-800.0]], [[0.0]], ONE)) == \
        "logp: rho = pi/pi_old or k3 overflows float64 (log-ratio beyond ~709)"
    # the agg check comes before the ratio check
    assert _raises(ValueError, lambda: kl.kl_penalty_is([[0.0]], [[-800.0]], [[0.0]], ONE,
                                                        "bad")).startswith("agg: ")


def test_exact_kl_grad_theta_overflow_is_a_silent_error():
    # weights 1e308 times pi (diff - KL) of size ~2.5e4: inf
    call = lambda: kl.exact_kl_grad_theta([[0.0, 0.0]], [[0.0, -1e5]], [1e308])
    assert _raises(ValueError, call) == _overflow("weights", "the weighted gradient")
    # log pi = [0, -1.7e308], log pi_ref = [-1.7e308, 0]: diff = [1.7e308, -1.7e308],
    # KL = 1.7e308, diff - KL = [0, -3.4e308 -> -inf] (overflow), pi = [1, 0]: 0 * -inf is NaN
    call = lambda: kl.exact_kl_grad_theta([[0.0, -1.7e308]], [[-1.7e308, 0.0]])
    assert _raises(ValueError, call) == _overflow("weights", "the weighted gradient", "NaN")


# ---- importance-weighted k3 by hand -----------------------------------------------------------

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
    np.testing.assert_allclose(loss, 3 * e * (1 + e ** -2) / 8, rtol=1e-14)
    np.testing.assert_allclose(g, [[2 * e / 8, 2 * e / 8], [2 * e / 8, 0.0]], rtol=1e-14)


def test_kl_penalty_is_default_aggregation_is_token_mean():
    logp, logp_old, logp_ref, mask = _is_batch()
    loss, g = kl.kl_penalty_is(logp, logp_old, logp_ref, mask)
    loss_tm, g_tm = kl.kl_penalty_is(logp, logp_old, logp_ref, mask, "token_mean")
    assert loss == loss_tm and np.array_equal(g, g_tm)
    # seq_sum: w = 1/B = 1/2 instead of 1/3: a different answer
    loss_ss, _ = kl.kl_penalty_is(logp, logp_old, logp_ref, mask, "seq_sum")
    np.testing.assert_allclose(loss_ss, 3 * np.e * (1 + np.e ** -2) / 2, rtol=1e-14)
    assert loss_ss != loss


# ---- k3's series: where it applies, and its last coefficient ----------------------------------

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
            x = Decimal(u)                              # the float's exact value
            want = float((-x).exp() - 1 + x)
        k, _ = kl.kl_per_token([[u]], [[0.0]], ONE, "k3")
        assert k[0, 0] == want


# ---- exact_kl and the softmax tables: checks ---------------------------------------------------

def test_exact_kl_argument_messages():
    p = [[0.5, 0.5]]
    assert _raises(ValueError, lambda: kl.exact_kl(p, [0.5, 0.5])) == \
        "q: expected 2 dimensions, got shape (2,)"
    assert _raises(ValueError, lambda: kl.exact_kl(p, [[0.5, 0.25, 0.25]])) == \
        "q: expected the shape of p (1, 2), got (1, 3)"


def test_exact_kl_row_sum_tolerance_is_1e_9():
    # 1 + 5e-9 is off by more than 1e-9: rejected (numpy prints the sum as 1.)
    assert _raises(ValueError, lambda: kl.exact_kl([[0.5, 0.5 + 5e-9]], [[0.5, 0.5]])) == \
        "p: expected rows of probabilities (>= 0, summing to 1), got row sums [1.] and min 0.5"
    # 1 + 5e-10 is within: accepted; KL(p || p) = sum p (log p - log p) = 0 exactly
    out = kl.exact_kl([[0.5, 0.5 + 5e-10]], [[0.5, 0.5 + 5e-10]])
    assert out.tolist() == [0.0]


def test_exact_kl_message_shows_the_first_four_row_sums():
    p = [[0.5, 0.5]] * 4 + [[1.0, 1.0]]                 # the fifth row sums to 2
    assert _raises(ValueError, lambda: kl.exact_kl(p, [[0.5, 0.5]] * 5)) == \
        "p: expected rows of probabilities (>= 0, summing to 1), got row sums [1. 1. 1. 1.] " \
        "and min 0.5"


def test_softmax_table_argument_messages():
    for f in (kl.exact_kl_grad_theta, kl.exact_reverse_kl_grad_theta):
        assert _raises(ValueError, lambda: f([[0.0, 0.0]], [0.0, 0.0])) == \
            "theta_ref: expected 2 dimensions, got shape (2,)"
        assert _raises(ValueError, lambda: f([[0.0, 0.0]], [[0.0, 0.0, 0.0]])) == \
            "theta_ref: expected the shape of theta (1, 2), got (1, 3)"
        assert _raises(ValueError, lambda: f(np.zeros((1, 0)), np.zeros((1, 0)))) == \
            "theta: expected a non-empty array (every axis of length >= 1), got shape (1, 0)"
        assert _raises(ValueError, lambda: f([[0.0, 0.0]], [[0.0, 0.0]], [[1.0]])) == \
            "weights: expected 1 dimension, got shape (1, 1)"
        assert _raises(ValueError, lambda: f([[0.0, 0.0]], [[0.0, 0.0]], [1.0, 1.0])) == \
            "weights: expected shape (1,), got (2,)"
        assert _raises(ValueError, lambda: f([[-np.inf, -np.inf]], [[0.0, 0.0]])) == \
            "theta: expected a finite entry in every row, got an all -inf row"
        assert _raises(ValueError, lambda: f([[0.0, 0.0]], [[-np.inf, -np.inf]])) == \
            "theta_ref: expected a finite entry in every row, got an all -inf row"


def test_exact_kl_grad_theta_infinite_kl_message():
    # pi > 0 = pi_ref at the second token
    assert _raises(ValueError, lambda: kl.exact_kl_grad_theta([[0.0, 0.0]], [[0.0, -np.inf]])) \
        == ("theta_ref: expected a finite logit wherever theta has one "
            "(pi_ref > 0 wherever pi > 0, else the KL is infinite)")


def test_exact_reverse_kl_grad_theta_infinite_kl_message():
    # pi_ref > 0 = pi at the second token
    call = lambda: kl.exact_reverse_kl_grad_theta([[0.0, -np.inf]], [[0.0, 0.0]])
    assert _raises(ValueError, call) == \
        ("theta: expected a finite logit wherever theta_ref has one "
         "(pi > 0 wherever pi_ref > 0, else the KL is infinite)")


def test_exact_reverse_kl_grad_theta_extreme_weights_stay_finite_and_silent():
    # |d (pi - pi_ref)| <= |d|: the largest float weight cannot overflow
    big = np.finfo(np.float64).max
    # pi = [1, e^-1e4 = 0], pi_ref = [0, 1] (both finite KLs on the log scale)
    g = _silent(lambda: kl.exact_reverse_kl_grad_theta([[0.0, -1e4]], [[-1e4, 0.0]], [big]))
    assert g.tolist() == [[big, -big]]                  # pi - pi_ref = [1, -1]

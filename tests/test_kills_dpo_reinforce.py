"""Exact answers of `minirl_lm.direct.dpo` and `minirl_lm.pg.reinforce`: the full message of every argument
check and of every reachable overflow check (each with an input that overflows there, both the
`inf` and the `NaN` kind where both can occur), the silence of those overflows (no RuntimeWarning
escapes: each is a ValueError or, where the result stays finite, a value), hand-computed values
of single pairs, IPO's target `1/(2 beta)`, zero pair weights, the defaults of `token_weights`
and of `bt_sample_preferences`' prompt distribution, the lower bounds of `n_pairs` and
`max_len`, and the strict comparison of the Bradley-Terry coin.
"""

import math

import numpy as np
import pytest

from minirl_lm.direct import dpo

from minirl_lm.pg import reinforce

from quiet import overflow as _overflow, raises as _raises_silently, silent as _silently


# ---------------------------------------------------------------- bradley_terry_loss

def test_bradley_terry_single_pair_exact():
    # m = 0: loss = log(1 + e^0) = log 2; d_chosen = -sigma(0) / 1 = -0.5, d_rejected = +0.5
    loss, (d_c, d_r) = dpo.bradley_terry_loss([0.0], [0.0])
    assert loss == math.log(2.0)
    assert np.array_equal(d_c, [-0.5]) and np.array_equal(d_r, [0.5])


@pytest.mark.parametrize("r_c, r_r, msg", [
    ([0.0], [[0.0]], "r_rejected: expected 1 dimension, got shape (1, 1)"),
    ([0.0], 0.0, "r_rejected: expected 1 dimension, got shape ()"),
    ([0.0, 0.0], [0.0], "r_rejected: expected the shape of r_chosen (2,), got (1,)"),
    ([], [], "r_chosen: expected at least one pair, got shape (0,)"),
])
def test_bradley_terry_argument_messages(r_c, r_r, msg):
    assert _raises_silently(ValueError, lambda: dpo.bradley_terry_loss(r_c, r_r)) == msg


def test_bradley_terry_margin_overflow_is_a_silent_value_error():
    # m = -1e308 - 1e308 overflows to -inf: softplus(-m) = inf
    msg = _raises_silently(ValueError, lambda: dpo.bradley_terry_loss([-1e308], [1e308]))
    assert msg == _overflow("r_chosen", "the margin r_chosen - r_rejected", "inf")


def test_bradley_terry_margin_overflow_to_plus_inf_is_a_silent_zero():
    # m = +inf: softplus(-inf) = 0 and sigma(-inf) = 0, the loss and gradient are exactly 0
    loss, (d_c, d_r) = _silently(lambda: dpo.bradley_terry_loss([1e308], [-1e308]))
    assert loss == 0.0 and np.array_equal(d_c, [0.0]) and np.array_equal(d_r, [0.0])


# ---------------------------------------------------------------- reward_table_loss

def test_reward_table_loss_without_pairs_message():
    none = np.array([], dtype=np.int64)
    msg = _raises_silently(ValueError, lambda: dpo.reward_table_loss([[0.0]], none, none, none))
    assert msg == "prompt: expected at least one pair, got shape (0,)"


def test_reward_table_margin_overflow_is_a_silent_value_error():
    # m = r_phi[0, 0] - r_phi[0, 1] = 1e308 + 1e308 = inf
    msg = _raises_silently(ValueError,
                           lambda: dpo.reward_table_loss([[1e308, -1e308]], [0], [0], [1]))
    assert msg == _overflow("r_phi", "the reward margins", "inf")


# ---------------------------------------------------------------- dpo_loss

@pytest.mark.parametrize("args, msg", [
    (([0.0], [[0.0]], [0.0], [0.0]), "seq_logp_r: expected 1 dimension, got shape (1, 1)"),
    (([0.0], [0.0], [[0.0]], [0.0]), "seq_logp_ref_c: expected 1 dimension, got shape (1, 1)"),
    (([0.0], [0.0], [0.0], [[0.0]]), "seq_logp_ref_r: expected 1 dimension, got shape (1, 1)"),
    (([0.0, 0.0], [0.0], [0.0, 0.0], [0.0, 0.0]),
     "seq_logp_r: expected the shape of seq_logp_c (2,), got (1,)"),
    (([0.0, 0.0], [0.0, 0.0], [0.0], [0.0, 0.0]),
     "seq_logp_ref_c: expected the shape of seq_logp_c (2,), got (1,)"),
    (([0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0]),
     "seq_logp_ref_r: expected the shape of seq_logp_c (2,), got (1,)"),
    (([], [], [], []), "seq_logp_c: expected at least one pair, got shape (0,)"),
])
def test_dpo_argument_messages(args, msg):
    assert _raises_silently(ValueError, lambda: dpo.dpo_loss(*args, 1.0)) == msg


def test_dpo_zero_pair_weight_is_allowed_and_drops_the_pair():
    # h = 0 on both pairs: l = log 2, dl/dh = beta * -sigma(0) = -0.5; weights (0, 1)
    z = [0.0, 0.0]
    loss, (dc, dr) = dpo.dpo_loss(z, z, z, z, 1.0, weights=[0.0, 1.0])
    assert loss == math.log(2.0)
    assert np.array_equal(dc, [0.0, -0.5]) and np.array_equal(dr, [0.0, 0.5])


def test_dpo_negative_pair_weight_message():
    z = [0.0, 0.0]
    msg = _raises_silently(ValueError, lambda: dpo.dpo_loss(z, z, z, z, 1.0, weights=[-1.0, 1.0]))
    assert msg == "weights: expected nonnegative pair weights, got min -1.0"


def test_ipo_regresses_h_onto_one_over_two_beta():
    # h = 3, beta = 1/4: target 1/(2 beta) = 2, e = 1, loss = e^2 = 1, dl/dh = 2 e = 2 (P = 1)
    loss, (dc, dr) = dpo.dpo_loss([3.0], [0.0], [0.0], [0.0], 0.25, "ipo")
    assert loss == 1.0 and np.array_equal(dc, [2.0]) and np.array_equal(dr, [-2.0])
    # h = 0, beta = 1/4: e = -2, loss = 4, dl/dh = -4
    loss, (dc, dr) = dpo.dpo_loss([0.0], [0.0], [0.0], [0.0], 0.25, "ipo")
    assert loss == 4.0 and np.array_equal(dc, [-4.0]) and np.array_equal(dr, [4.0])


def test_dpo_saturated_margin_is_a_silent_exact_zero():
    # z = beta h = 1e308 * 2 overflows to +inf: -log sigma(+inf) = 0, sigma(-inf) = 0,
    # the gradient beta * -0 = -0: finite, returned, no warning
    loss, (dc, dr) = _silently(lambda: dpo.dpo_loss([2.0], [0.0], [0.0], [0.0], 1e308))
    assert loss == 0.0 and np.array_equal(dc, [0.0]) and np.array_equal(dr, [0.0])


def test_dpo_margin_overflow_messages():
    # h = (1e308 + 1e308) - 0 = inf
    msg = _raises_silently(ValueError,
                           lambda: dpo.dpo_loss([1e308], [0.0], [-1e308], [0.0], 1.0))
    assert msg == _overflow("seq_logp_c", "the log-ratio margin h", "inf")
    # h = (1e308 + 1e308) - (1e308 + 1e308) = inf - inf = NaN
    msg = _raises_silently(ValueError,
                           lambda: dpo.dpo_loss([1e308], [1e308], [-1e308], [-1e308], 1.0))
    assert msg == _overflow("seq_logp_c", "the log-ratio margin h", "NaN")


def test_dpo_loss_overflow_messages():
    # z = 1e308 * -2 = -inf: -log sigma(-inf) = inf
    msg = _raises_silently(ValueError, lambda: dpo.dpo_loss([-2.0], [0.0], [0.0], [0.0], 1e308))
    assert msg == _overflow("beta", "the loss", "inf")
    # the same pair with weight 0 next to a finite one: 0 * inf = NaN in the weighted sum
    msg = _raises_silently(ValueError, lambda: dpo.dpo_loss(
        [-2.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], 1e308, weights=[0.0, 1.0]))
    assert msg == _overflow("beta", "the loss", "NaN")


# ---------------------------------------------------------------- token_grad

def test_token_grad_exact():
    out = dpo.token_grad([2.0, -1.0], [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert np.array_equal(out, [[2.0, 2.0, 0.0], [-1.0, 0.0, 0.0]])


def test_token_grad_mask_shape_message():
    msg = _raises_silently(ValueError, lambda: dpo.token_grad([1.0, 2.0], [[1.0, 1.0]]))
    assert msg == "mask: expected shape (2, any), got (1, 2)"


# ---------------------------------------------------------------- bt_sample_preferences

def test_bt_sample_preferences_mu_shape_message():
    msg = _raises_silently(ValueError, lambda: dpo.bt_sample_preferences(
        np.zeros((1, 2)), [[0.5, 0.25, 0.25]], 1, np.random.default_rng(0)))
    assert msg == "mu: expected shape (1, 2), got (1, 3)"


def test_bt_sample_preferences_mu0_shape_message():
    msg = _raises_silently(ValueError, lambda: dpo.bt_sample_preferences(
        np.zeros((2, 2)), np.full((2, 2), 0.5), 1, np.random.default_rng(0),
        mu0=[0.5, 0.25, 0.25]))
    assert msg == "mu0: expected shape (2,), got (3,)"


def test_bt_sample_preferences_n_pairs_at_least_one():
    x, c, r = dpo.bt_sample_preferences(np.zeros((1, 2)), [[0.5, 0.5]], 1,
                                        np.random.default_rng(0))
    assert x.shape == c.shape == r.shape == (1,) and x[0] == 0
    msg = _raises_silently(ValueError, lambda: dpo.bt_sample_preferences(
        np.zeros((1, 2)), [[0.5, 0.5]], 0, np.random.default_rng(0)))
    assert msg == "n_pairs: expected an integer >= 1, got 0"


def test_bt_sample_preferences_prompts_follow_mu0_uniform_by_default():
    reward, mu = np.zeros((2, 2)), np.full((2, 2), 0.5)
    given = dpo.bt_sample_preferences(reward, mu, 50, np.random.default_rng(4), mu0=[0.0, 1.0])
    assert np.array_equal(given[0], np.ones(50))               # prompt 0 has probability 0
    default = dpo.bt_sample_preferences(reward, mu, 50, np.random.default_rng(4))
    uniform = dpo.bt_sample_preferences(reward, mu, 50, np.random.default_rng(4), mu0=[0.5, 0.5])
    for d, u in zip(default, uniform):
        assert np.array_equal(d, u)
    assert 0 < default[0].sum() < 50                           # both prompts drawn


def test_bt_coin_is_strict_a_draw_equal_to_sigma_goes_to_b():
    # Draw order (documented): x ~ mu0, a ~ mu[x], b ~ mu[x], then u ~ U[0, 1) and a wins iff
    # u < sigma(R(x, a) - R(x, b)). With seed 3, N = 1, Y = 2 and mu = (1/2, 1/2): a = 0, b = 1.
    r = np.random.default_rng(3)
    r.choice(1, size=1, p=[1.0])
    a, b = r.choice(2, size=1, p=[0.5, 0.5])[0], r.choice(2, size=1, p=[0.5, 0.5])[0]
    u = r.random(1)[0]
    assert (a, b) == (0, 1)
    d = math.log(u / (1.0 - u))                                # the logit of u
    # sigma(d) == u exactly: bradley_terry_loss([0], [d]) has d_rejected = sigma(0 - (-d))
    assert dpo.bradley_terry_loss([0.0], [d])[1][1][0] == u
    x, c, rj = dpo.bt_sample_preferences([[d, 0.0]], [[0.5, 0.5]], 1, np.random.default_rng(3))
    assert (x[0], c[0], rj[0]) == (0, 1, 0)                    # u < u is false: b wins
    x, c, rj = dpo.bt_sample_preferences([[d + 1e-9, 0.0]], [[0.5, 0.5]], 1,
                                         np.random.default_rng(3))
    assert (x[0], c[0], rj[0]) == (0, 0, 1)                    # sigma just above u: a wins


# ---------------------------------------------------------------- token_weights

MASK = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


def test_token_weights_default_agg_is_seq_sum():
    default = reinforce.token_weights(MASK)
    assert np.array_equal(default, reinforce.token_weights(MASK, agg="seq_sum"))
    assert np.array_equal(default, MASK / 2)                   # w = 1/B on real tokens
    assert not np.array_equal(default, reinforce.token_weights(MASK, agg="token_mean"))


def test_token_weights_max_len_one_is_allowed_zero_is_not():
    # constant: w = mask / (B max_len) = mask / (1 * 1)
    assert np.array_equal(reinforce.token_weights([[1.0, 0.0]], "constant", max_len=1),
                          [[1.0, 0.0]])
    msg = _raises_silently(ValueError,
                           lambda: reinforce.token_weights([[1.0, 0.0]], "constant", max_len=0))
    assert msg == "max_len: expected an integer >= 1, got 0"


# ---------------------------------------------------------------- reinforce_loss

def test_reinforce_loss_exact():
    # seq_sum, B = 2: w = [[1/2, 1/2], [1/2, 0]], A = (1, 2) per response
    # loss = -(1/2 * 1 * -1 + 1/2 * 1 * -2 + 1/2 * 2 * -3) = 4.5; grad = -w A
    loss, g = reinforce.reinforce_loss([[-1.0, -2.0], [-3.0, 0.0]], [1.0, 2.0],
                                       [[1.0, 1.0], [1.0, 0.0]])
    assert loss == 4.5 and np.array_equal(g, [[-0.5, -0.5], [-1.0, 0.0]])


def test_reinforce_loss_shape_messages():
    msg = _raises_silently(ValueError,
                           lambda: reinforce.reinforce_loss(np.zeros((1, 2)), [1.0], np.ones((1, 3))))
    assert msg == "mask: expected the shape of logp (1, 2), got (1, 3)"
    msg = _raises_silently(ValueError, lambda: reinforce.reinforce_loss(
        np.zeros((2, 3)), [1.0, 2.0, 3.0], np.ones((2, 3))))
    assert msg == "adv: expected shape (2,) or (2, 3), got (3,)"


def test_reinforce_loss_overflow_messages():
    # w = 1: A logp = 1e308 * -1e308 = -inf, loss = +inf
    msg = _raises_silently(ValueError,
                           lambda: reinforce.reinforce_loss([[-1e308]], [1e308], [[1.0]]))
    assert msg == _overflow("logp", "the loss -sum w A logp", "inf")
    # per-token A: the products are -inf and +inf, their sum NaN
    msg = _raises_silently(ValueError, lambda: reinforce.reinforce_loss(
        [[-1e308, -1e308]], [[1e308, -1e308]], [[1.0, 1.0]]))
    assert msg == _overflow("logp", "the loss -sum w A logp", "NaN")


# ---------------------------------------------------------------- sequence_reinforce_loss

@pytest.mark.parametrize("s, a, msg", [
    ([0.0], [[0.0]], "adv: expected 1 dimension, got shape (1, 1)"),
    ([0.0], 0.0, "adv: expected 1 dimension, got shape ()"),
    ([0.0, 0.0], [0.0], "adv: expected the shape of seq_logp (2,), got (1,)"),
    ([], [], "seq_logp: expected a non-empty array (every axis of length >= 1), got shape (0,)"),
])
def test_sequence_reinforce_argument_messages(s, a, msg):
    assert _raises_silently(ValueError, lambda: reinforce.sequence_reinforce_loss(s, a)) == msg


def test_sequence_reinforce_overflow_messages():
    # A s = -1e308 * 1e308 = -inf on both: loss = -(-inf) / 2 = inf
    msg = _raises_silently(ValueError, lambda: reinforce.sequence_reinforce_loss(
        [1e308, 1e308], [-1e308, -1e308]))
    assert msg == _overflow("seq_logp", "the loss -(1/B) sum A seq_logp", "inf")
    # A s = (+inf, -inf): the sum is NaN
    msg = _raises_silently(ValueError, lambda: reinforce.sequence_reinforce_loss(
        [1e308, 1e308], [1e308, -1e308]))
    assert msg == _overflow("seq_logp", "the loss -(1/B) sum A seq_logp", "NaN")

"""Exact answers of the token-MDP critic (minirl_lm/values/critic.py): the full overflow message of every
place a result can stop being finite in float64 (each reached by an input that overflows
there, and raised with no RuntimeWarning escaping first), the exact messages of the mask and
state-id checks, a padding entry that overflows in the value loss (NaN, named, silent),
per-token rewards that are 0 at padding whatever the log-probs hold there, the value loss
averaged over exactly one real token, and `fit_values`'s defaults (`lr=0.5`, `target="mc"`)
against hand-computed steps that another value changes.
"""

import numpy as np
import pytest

from minirl_lm.values.critic import (clipped_value_loss, fit_values, gae, monte_carlo_returns,
                              per_token_rewards, td_errors, value_loss)

from quiet import overflow as _overflow, raises as _raises, silent as _silently


# ---------------------------------------------------------------- overflow: one input per call site

OVERFLOW = [
    # u = logp - logp_ref = -1e308 - 1e308 = -2e308 > max float: -inf
    ("per_token_rewards logp",
     lambda: per_token_rewards([0.0], [[-1e308]], [[1e308]], [[1.0]], 1.0),
     _overflow("logp", "logp - logp_ref")),
    # u = -100 (finite); r = -1e307 * -100 = 1e309: inf
    ("per_token_rewards beta",
     lambda: per_token_rewards([0.0], [[-100.0]], [[0.0]], [[1.0]], 1e307),
     _overflow("beta", "beta (logp - logp_ref)")),
    # u = 0 - (-1e308) = 1e308, r = -1e308 (finite); r + R = -1e308 + -1e308 = -2e308: -inf
    ("per_token_rewards terminal_reward",
     lambda: per_token_rewards([-1e308], [[0.0]], [[-1e308]], [[1.0]], 1.0),
     _overflow("terminal_reward", "the last token's reward")),
    # delta = 1e308 + 1 * 0 - (-1e308) = 2e308: inf
    ("td_errors",
     lambda: td_errors([-1e308], [[0]], [[1e308]], [[1.0]]),
     _overflow("values", "delta = r + gamma V(s') - V(s)")),
    # A_2 = 1e308, A_1 = 1e308 + 1 * 1 * 1e308 = 2e308: inf
    ("gae",
     lambda: gae([[1e308, 1e308]], [[1.0, 1.0]]),
     _overflow("deltas", "the discounted sum")),
    # G_2 = 1e308, G_1 = 1e308 + 1 * 1e308 = 2e308: inf
    ("monte_carlo_returns",
     lambda: monte_carlo_returns([[1e308, 1e308]], [[1.0, 1.0]]),
     _overflow("rewards", "the discounted sum")),
    # err = 1e308 - (-1e308) = 2e308: inf, and so is the loss
    ("value_loss",
     lambda: value_loss([1e308], [[0]], [[-1e308]], [[1.0]]),
     _overflow("targets", "the squared error (V(s) - target)^2")),
    # err = 1e200 - 0 (finite); err^2 = 1e400: the loss is inf, driven by the value 1e200
    ("value_loss square",
     lambda: value_loss([1e200], [[0]], [[0.0]], [[1.0]]),
     _overflow("values", "the squared error (V(s) - target)^2")),
    # the Monte-Carlo target G_1 = 1e308 + 1e308 = 2e308: inf
    ("fit_values targets",
     lambda: fit_values([0.0], [[0, 0]], [[1e308, 1e308]], [[1.0, 1.0]]),
     _overflow("rewards", "the regression targets")),
    # the TD(0) target r_1 + V(s_2) = 1e308 + 1e308 = 2e308: inf
    ("fit_values td0 targets",
     lambda: fit_values([1e308], [[0, 0]], [[1e308, 0.0]], [[1.0, 1.0]], target="td0"),
     _overflow("rewards", "the regression targets")),
    # target G = -1e308 (finite); err = 1e308 - (-1e308) = 2e308: inf
    ("fit_values squared error",
     lambda: fit_values([1e308], [[0]], [[-1e308]], [[1.0]]),
     _overflow("rewards", "the squared error (V(s) - target)^2")),
    # err = 0 - 1e100, M = 1, dvalues = -1e100; lr * dvalues = -1e400: new value +inf
    ("fit_values lr",
     lambda: fit_values([0.0], [[0]], [[1e100]], [[1.0]], lr=1e300),
     _overflow("lr", "values - lr * dvalues")),
]


@pytest.mark.parametrize("label, call, message", OVERFLOW, ids=[o[0] for o in OVERFLOW])
def test_overflow_raises_the_exact_message_and_no_warning(label, call, message):
    assert _raises(ValueError, call) == message


def test_value_loss_overflow_at_a_padding_entry_is_a_nan_named_silently():
    # the real token: err = 1e308 - 1e308 = 0; the padding token: V - target = 1e308 + 1e308
    # overflows to inf, times mask 0 gives NaN (an invalid operation), and the loss is NaN
    call = lambda: value_loss([1e308], [[0, 0]], [[1e308, -1e308]], [[1.0, 0.0]])
    assert _raises(ValueError, call) == _overflow("targets", "the squared error (V(s) - target)^2",
                                               "NaN")


# ---------------------------------------------------------------- argument checks, exact messages

MASK_MSG = "mask: expected only 0 and 1, got value 0.5"

BAD = [
    ("per_token_rewards mask", lambda: per_token_rewards([0.0], [[0.0]], [[0.0]], [[0.5]], 0.1),
     MASK_MSG),
    ("td_errors mask", lambda: td_errors([0.0], [[0]], [[0.0]], [[0.5]]), MASK_MSG),
    ("value_loss mask", lambda: value_loss([0.0], [[0]], [[0.0]], [[0.5]]), MASK_MSG),
    ("fit_values mask", lambda: fit_values([0.0], [[0]], [[0.0]], [[0.5]]), MASK_MSG),
    ("gae mask", lambda: gae([[0.0]], [[0.5]]), MASK_MSG),
    ("monte_carlo_returns mask", lambda: monte_carlo_returns([[0.0]], [[0.5]]), MASK_MSG),
    ("clipped_value_loss mask",
     lambda: clipped_value_loss([[0.0]], [[0.0]], [[0.0]], [[0.5]], 0.5), MASK_MSG),
    # states of the wrong shape: the id check names the shape the mask fixes
    ("td_errors states shape",
     lambda: td_errors([0.0, 0.0, 0.0], np.zeros(3, np.int64), np.zeros((2, 3)),
                       np.ones((2, 3))),
     "states: expected shape (2, 3), got (3,)"),
    ("value_loss states shape",
     lambda: value_loss([0.0], np.zeros((1, 2), np.int64), np.zeros((2, 1)), np.ones((2, 1))),
     "states: expected shape (2, 1), got (1, 2)"),
    ("fit_values states shape",
     lambda: fit_values([0.0], np.zeros((2, 2), np.int64), np.zeros((2, 1)), np.ones((2, 1))),
     "states: expected shape (2, 1), got (2, 2)"),
]


@pytest.mark.parametrize("label, call, message", BAD, ids=[b[0] for b in BAD])
def test_bad_argument_raises_the_exact_message(label, call, message):
    assert _raises(ValueError, call) == message


# ---------------------------------------------------------------- per-token rewards at padding

def test_per_token_rewards_are_zero_at_padding_whatever_the_logps_there():
    # real token: r = -beta (logp - logp_ref) + R = -2 * (-1 - (-2)) + 0.5 = -2 + 0.5 = -1.5;
    # padding: 0 although logp - logp_ref = -5 - 3 = -8 there
    r = per_token_rewards([0.5], [[-1.0, -5.0]], [[-2.0, 3.0]], [[1.0, 0.0]], 2.0)
    assert np.array_equal(r, [[-1.5, 0.0]])


def test_per_token_rewards_ignore_an_overflowing_difference_at_padding():
    # logp - logp_ref = -1e308 - 1e308 would overflow, but only at padding: never computed
    r = _silently(lambda: per_token_rewards([1.0], [[0.0, -1e308]], [[0.0, 1e308]],
                                            [[1.0, 0.0]], 1.0))
    assert np.array_equal(r, [[1.0, 0.0]])


# ---------------------------------------------------------------- value loss over one real token

def test_value_loss_averages_over_exactly_one_real_token():
    # M = 1; err = 3 - 1 = 2; loss = 0.5 * 2^2 / 1 = 2.0; dV[0] = 2 / 1 = 2.0
    loss, d = value_loss([3.0], [[0]], [[1.0]], [[1.0]])
    assert loss == 2.0 and np.array_equal(d, [2.0])
    # a padding token does not count: the same numbers
    loss, d = value_loss([3.0], [[0, 0]], [[1.0, 7.0]], [[1.0, 0.0]])
    assert loss == 2.0 and np.array_equal(d, [2.0])


# ---------------------------------------------------------------- fit_values defaults

V = [0.0, 4.0]
S = [[0, 1]]
R = [[1.0, 2.0]]
MK = [[1.0, 1.0]]


def test_fit_values_default_lr_is_one_half():
    # one token, V = 3, r = 1: G = 1, err = 2, M = 1, loss = 0.5 * 4 = 2, dV = 2
    # lr = 0.5: 3 - 0.5 * 2 = 2.0; lr = 1.0: 3 - 1 * 2 = 1.0
    new, loss = fit_values([3.0], [[0]], [[1.0]], [[1.0]])
    assert np.array_equal(new, [2.0]) and loss == 2.0
    new_half, _ = fit_values([3.0], [[0]], [[1.0]], [[1.0]], lr=0.5)
    assert np.array_equal(new_half, new)
    new_one, _ = fit_values([3.0], [[0]], [[1.0]], [[1.0]], lr=1.0)
    assert np.array_equal(new_one, [1.0])


def test_fit_values_mc_target_is_the_default_and_differs_from_td0():
    # mc: G = [1 + 2, 2] = [3, 2]; err = V - G = [0 - 3, 4 - 2] = [-3, 2], M = 2
    #     loss = 0.5 * (9 + 4) / 2 = 3.25; dV = [-1.5, 1.0]; new = V - 0.5 dV = [0.75, 3.5]
    new, loss = fit_values(V, S, R, MK)
    assert loss == 3.25 and np.array_equal(new, [0.75, 3.5])
    new_mc, loss_mc = fit_values(V, S, R, MK, target="mc")
    assert loss_mc == loss and np.array_equal(new_mc, new)
    # td0: target = [r_1 + V(s_2), r_2 + 0] = [1 + 4, 2] = [5, 2]; err = [-5, 2]
    #      loss = 0.5 * (25 + 4) / 2 = 7.25; dV = [-2.5, 1.0]; new = [1.25, 3.5]
    new_td, loss_td = fit_values(V, S, R, MK, target="td0")
    assert loss_td == 7.25 and np.array_equal(new_td, [1.25, 3.5])

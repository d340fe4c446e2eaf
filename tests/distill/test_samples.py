"""Tests of minirl_lm/distill/samples.py: the teacher's NLL and the reverse KL as a reward.

The reward's coefficient is a stop-gradient: its derivative is checked with the coefficient held
(central differences in float64, atol 1e-8 against ~1e-10 rounding). Its expected gradient and
the NLL's are checked exactly in tests/distill/test_student.py.
"""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.distill.samples import nll_coef, reverse_kl_reward, reward_coef, teacher_nll
from quiet import raises

LOGP = np.array([[-1.0, -2.0, -0.5], [-0.3, -1.2, -0.7]])  # (B, T)
LOGP_T = np.array([[-0.4, -2.5, -0.1], [-1.3, -0.2, -0.9]])
MASK = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]])  # a hole in row 1


def test_teacher_nll_values_and_gradient():
    loss, g = teacher_nll(LOGP, MASK)
    assert loss == pytest.approx(-(LOGP * MASK).sum() / 2, rel=1e-15)
    np.testing.assert_array_equal(g, -MASK / 2)
    np.testing.assert_allclose(g, fd_grad(lambda x: teacher_nll(x, MASK)[0], LOGP), atol=1e-8)


@pytest.mark.parametrize("to_go", [False, True])
def test_reward_gradient_with_the_coefficient_held(to_go):
    loss, g = reverse_kl_reward(LOGP, LOGP_T, MASK, to_go=to_go)
    held = g * 2  # (B, T) mask c, held as data
    np.testing.assert_allclose(g, fd_grad(lambda x: (held * x).sum() / 2, LOGP), atol=1e-8)
    assert loss == pytest.approx((g * LOGP).sum(), rel=1e-15)
    assert (g[MASK == 0] == 0).all()


def test_reward_coefficients_by_hand():
    k = MASK * (LOGP - LOGP_T)  # prime-rl's -ref_kl, slime's reverse_kl per token
    _, g = reverse_kl_reward(LOGP, LOGP_T, MASK)
    np.testing.assert_allclose(g, k / 2, rtol=1e-15)
    _, g2 = reverse_kl_reward(LOGP, LOGP_T, MASK, to_go=True)
    to_go = np.array([[k[0].sum(), k[0, 1:].sum(), k[0, 2]], [k[1].sum(), 0.0, k[1, 2]]])
    np.testing.assert_allclose(g2, to_go / 2, rtol=1e-14)
    (a, ga), (b, gb) = reverse_kl_reward(LOGP, LOGP_T, MASK), reverse_kl_reward(LOGP, LOGP_T, MASK, to_go=False)
    assert a == b and np.array_equal(ga, gb)
    # the reward form is zero where student and teacher agree: no signal
    assert (reverse_kl_reward(LOGP, LOGP, MASK)[1] == 0).all()
    # the cores, per response (no 1/B): what the exact engine weighs each response by
    np.testing.assert_array_equal(reward_coef(LOGP, LOGP_T, MASK, True), to_go)
    np.testing.assert_array_equal(reward_coef(LOGP, LOGP_T, MASK, False), k)
    np.testing.assert_array_equal(nll_coef(MASK), -MASK)


def test_errors_name_the_argument():
    assert raises(ValueError, lambda: reverse_kl_reward(LOGP, LOGP_T[:, :2], MASK)).startswith("logp_teacher:")
    assert raises(TypeError, lambda: reverse_kl_reward(LOGP, LOGP_T, MASK, to_go=1)).startswith("to_go:")
    assert raises(ValueError, lambda: teacher_nll(LOGP, MASK * 0.5)).startswith("mask:")
    assert raises(TypeError, lambda: teacher_nll("x", MASK)).startswith("logp:")
    big = np.full((2, 3), -1e308)
    assert raises(ValueError, lambda: reverse_kl_reward(big, -big, MASK)).startswith("reverse_kl_reward:")


def test_overflow_messages():
    big = np.full((2, 3), -1e308)
    assert raises(ValueError, lambda: teacher_nll(big, MASK)) == (
        "teacher_nll: expected a finite loss, got inf (beyond float64) from logp in [-1e+308, -1e+308], "
        "mask in [0, 1]"
    )
    msg = raises(ValueError, lambda: reverse_kl_reward(big, -big, MASK))
    assert msg.startswith("reverse_kl_reward: expected a finite loss and dloss_dlogp, got "), msg
    assert msg.endswith(
        " (beyond float64) from logp in [-1e+308, -1e+308], logp_teacher in [1e+308, 1e+308], mask in [0, 1]"
    )

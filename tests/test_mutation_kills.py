"""Tests that kill the mutants the rest of the suite let survive, grouped by module.

Each test states an exact, hand-checked answer: defaults, hand-computed values, empty-batch
answers, error messages naming the argument, and the returned diagnostics.
"""

import numpy as np
import pytest
import warnings

from minirl_lm import advantages as A
from minirl_lm import clip, critic, dpo, grpo, kl, optimum, reinforce



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
    with pytest.raises(ValueError, match=r"^greedy_rewards: expected 1 dimensions"):
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

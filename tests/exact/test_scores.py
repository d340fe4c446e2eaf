"""minirl_lm.exact.scores: the score basis against the policy's own backward, the one-draw
moments against the dense enumeration."""

import numpy as np
import pytest

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.exact.scores import draw_moments, row_updates, token_scores


def _task(max_len=3, seed=0):
    mdp = TokenMDP(["ab", "b"], V=3, eos=0, max_len=max_len)
    pol = TabularPolicy(np.random.default_rng(seed).normal(size=(mdp.S, mdp.V)))
    return mdp, pol, mdp.all_responses()


def test_token_scores_are_the_policy_backward_of_one_token():
    # the independent check: TabularPolicy.backward with a one-hot dloss/dlogp gives the score
    mdp, pol, ro = _task()
    sc = token_scores(pol.probs(), ro.states, ro.tokens, ro.mask)
    B, T = ro.mask.shape
    for b in range(0, B, 3):
        for t in range(T):
            e = np.zeros((1, T))
            e[0, t] = 1.0
            ref = pol.backward(ro.states[b : b + 1], ro.tokens[b : b + 1], ro.mask[b : b + 1], e).ravel()
            np.testing.assert_allclose(sc[b, t], ref, rtol=0, atol=1e-15)


def test_row_updates_sum_the_scores():
    mdp, pol, ro = _task()
    c = np.random.default_rng(1).normal(size=ro.mask.shape)
    G = row_updates(pol.probs(), ro.states, ro.tokens, ro.mask, c)
    dense = np.einsum("bt,btd->bd", c * ro.mask, token_scores(pol.probs(), ro.states, ro.tokens, ro.mask))
    np.testing.assert_allclose(G, dense, rtol=0, atol=1e-14)


@pytest.mark.parametrize("max_len", [1, 3, 5])
def test_draw_moments_equal_the_dense_enumeration(max_len):
    mdp, pol, ro = _task(max_len, seed=max_len)
    rng = np.random.default_rng(2)
    c = rng.normal(size=ro.mask.shape)
    q = rng.dirichlet(np.ones(len(ro.mask)))
    mean, var = draw_moments(q, c, pol.probs(), ro.states, ro.tokens, ro.mask)
    G = row_updates(pol.probs(), ro.states, ro.tokens, ro.mask, c)  # (B, S V)
    Eg = q @ G
    assert np.abs(mean.ravel() - Eg).max() <= 1e-14
    assert var == pytest.approx(float(q @ ((G - Eg) ** 2).sum(1)), rel=1e-12)


def test_draw_moments_with_holes_and_a_row_of_probability_zero():
    mdp, pol, ro = _task()
    mask = ro.mask.copy()
    mask[ro.lengths == 3, 1] = 0.0  # a hole in the middle of the long responses
    q = np.exp(pol.logp(ro.states, ro.tokens, ro.mask)[1]) / 2
    q[0], q[1] = q[0] + q[1], 0.0
    c = np.ones(mask.shape)
    mean, var = draw_moments(q, c, pol.probs(), ro.states, ro.tokens, mask)
    G = row_updates(pol.probs(), ro.states, ro.tokens, mask, c)
    assert np.abs(mean.ravel() - q @ G).max() <= 1e-15
    assert var == pytest.approx(float(q @ ((G - q @ G) ** 2).sum(1)), rel=1e-12)


def test_draw_moments_refuses_a_row_that_visits_a_state_twice():
    probs = np.full((2, 2), 0.5)
    states = np.array([[0, 1, 0]])
    with pytest.raises(ValueError, match="^states: .*row 0 visits state 0 twice"):
        draw_moments(np.ones(1), np.ones((1, 3)), probs, states, np.zeros((1, 3), int), np.ones((1, 3)))
    # at padding a repeat does not count
    draw_moments(np.ones(1), np.ones((1, 3)), probs, states, np.zeros((1, 3), int), np.array([[1.0, 1.0, 0.0]]))


def test_a_deterministic_draw_has_zero_variance_exactly():
    probs = np.array([[0.25, 0.75], [0.5, 0.5]])
    mean, var = draw_moments(
        np.ones(1), np.array([[2.0, -1.0]]), probs, np.array([[0, 1]]), np.array([[1, 0]]), np.ones((1, 2))
    )
    assert var == 0.0 or var < 1e-15
    np.testing.assert_array_equal(mean, [[-0.5, 0.5], [-0.5, 0.5]])  # 2 (e_1 - p_0), -(e_0 - p_1)


def test_draw_moments_beyond_float64_name_the_function():
    # one row, one token, coef 1e200: the mean (1e200 times the score) is finite; E|g|^2 and
    # |E g|^2 are inf, and their difference NaN (it was returned before the declared boundary)
    probs, one = np.full((1, 2), 0.5), np.ones((1, 1))
    msg = str(pytest.raises(ValueError, draw_moments, [1.0], [[1e200]], probs, [[0]], [[0]], one).value)
    assert msg.startswith("draw_moments: expected a finite var, got NaN (beyond float64) from ")
    assert "coef in [1e+200, 1e+200]" in msg


def test_draw_moments_accepts_a_repeat_at_padding_only():
    probs, q, coef, tokens = np.full((3, 2), 0.5), np.ones(1), np.ones((1, 3)), np.zeros((1, 3), int)
    mean, _ = draw_moments(q, coef, probs, np.array([[0, 1, 1]]), tokens, np.array([[1.0, 1.0, 0.0]]))
    assert mean.shape == (3, 2)
    with pytest.raises(ValueError, match="^states: .*row 0 visits state 1 twice"):
        draw_moments(q, coef, probs, np.array([[0, 1, 1]]), tokens, np.ones((1, 3)))
    with pytest.raises(ValueError, match="^tokens: expected ids < V = 2"):
        draw_moments(q, coef, probs, np.array([[0, 1, 2]]), tokens + 2, np.ones((1, 3)))


def test_ids_beyond_the_table_and_the_row_visiting_a_state_twice_are_named():
    probs, q, coef, mask = np.full((2, 2), 0.5), np.full(2, 0.5), np.ones((2, 2)), np.ones((2, 2))
    tokens = np.zeros((2, 2), int)
    msg = str(
        pytest.raises(ValueError, draw_moments, q, coef, probs, np.array([[0, 1], [2, 0]]), tokens, mask).value
    )
    assert msg == "states: expected ids < S = 2 (the shape of probs), got max 2"
    msg = str(
        pytest.raises(ValueError, draw_moments, q, coef, probs, np.array([[0, 1], [1, 1]]), tokens, mask).value
    )
    assert msg.endswith("row 1 visits state 1 twice")  # the first row is a path, the second is not

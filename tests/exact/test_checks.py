"""minirl_lm.exact.checks: the engine's bundles, on what the bad-input battery cannot reach
(lists of arrays, the joint's size, a row that visits a state twice)."""

import numpy as np
import pytest

from minirl_lm.exact.checks import batch_args, draw_args, group_args, law_args, tree_args


def test_draw_args_accepts_a_repeat_at_padding_only():
    probs = np.full((3, 2), 0.5)
    ok = draw_args(
        np.ones(1),
        np.ones((1, 3)),
        probs,
        np.array([[0, 1, 1]]),
        np.zeros((1, 3), int),
        np.array([[1.0, 1.0, 0.0]]),
    )
    assert ok[0].shape == (1,)
    with pytest.raises(ValueError, match="^states: .*row 0 visits state 1 twice"):
        draw_args(
            np.ones(1), np.ones((1, 3)), probs, np.array([[0, 1, 1]]), np.zeros((1, 3), int), np.ones((1, 3))
        )


def test_law_args_shapes():
    with pytest.raises(ValueError, match=r"^p: expected a \(R,\) or \(N, R\) array"):
        law_args(np.full((2, 2, 2), 0.5), 2, probs=True)
    with pytest.raises(ValueError, match="^K: "):
        law_args(3, 65)
    assert law_args(3, 2) == (3, 2)


def test_group_args_shapes_must_agree():
    P, Y = np.array([0.5, 0.5]), np.zeros((2, 2), int)
    with pytest.raises(ValueError, match="^bases: expected arrays of one shape"):
        group_args(P, Y, [np.zeros((2, 2, 1))] * 2, [np.zeros((1, 1, 2)), np.zeros((1, 1, 3))])
    with pytest.raises(ValueError, match="^Y: expected 1 rows"):
        group_args(np.array([1.0]), Y, [np.zeros((2, 2, 1))], [np.zeros((1, 1, 2))])
    with pytest.raises(ValueError, match="^coefs: "):
        group_args(P, Y, [np.zeros((2, 2, 3))], [np.zeros((1, 1, 2))])


def test_batch_args_refuses_a_joint_too_large_and_a_bad_triple():
    p = np.full(1001, 1 / 1001)
    s = np.ones((4, 1001))
    parts = (np.zeros((1001, 1)),) * 3
    with pytest.raises(ValueError, match="^P: expected a joint outcome of at most 1e9 points"):
        batch_args([p] * 4, [s] * 4, [parts] * 4, "none", False, 1e-8, True, True)
    with pytest.raises(TypeError, match="^parts: expected a .* triple"):
        batch_args([p], [s], [parts[:2]], "none", False, 1e-8, True, True)
    with pytest.raises(TypeError, match="^token_mean: expected a bool"):
        batch_args([p], [s], [parts], "none", 1, 1e-8, True, True)


def test_tree_args_names_the_values_by_their_role():
    q = np.array([[0.5, 0.5]])
    with pytest.raises(ValueError, match="^h: expected finite values wherever q > 0"):
        tree_args(np.array([[-1, -1]]), np.array([0]), q, np.array([[np.inf, 0.0]]), "h")
    with pytest.raises(ValueError, match="^child: "):
        tree_args(np.array([[-2, -1]]), np.array([0]), q, np.zeros((1, 2)), "f")

"""minirl_lm.exact.groups: the multinomial law and the group moments against every ordered draw."""

import itertools
import math

import numpy as np
import pytest

from minirl_lm.exact.groups import group_law, group_moments, group_updates, iid_moments, multisets, ordered_groups


@pytest.mark.parametrize("R, K", [(1, 1), (3, 1), (4, 3), (5, 4)])
def test_multisets_count_and_coefficients(R, K):
    Y, counts, coef = multisets(R, K)
    assert len(Y) == math.comb(R + K - 1, K)
    assert (counts.sum(1) == K).all() and coef.sum() == R**K  # every ordered draw counted once
    assert not Y.flags.writeable


def test_group_law_equals_the_ordered_draws():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    Y, P = group_law(p, 3)
    brute = {}
    for draw in itertools.product(range(4), repeat=3):
        key = tuple(sorted(draw))
        brute[key] = brute.get(key, 0.0) + np.prod(p[list(draw)])
    for y, pr in zip(Y, P):
        assert pr == pytest.approx(brute[tuple(y)], rel=1e-14)
    _, P2 = group_law(np.stack([p, p[::-1]]), 3)  # (N, R): one law per row
    assert P2.shape == (2, len(Y)) and np.allclose(P2.sum(1), 1.0, rtol=0, atol=1e-15)


def _brute(p, K, coef_fn, bases):
    """E[g], E|g|^2 over every ordered draw, the update built slot by slot."""
    E, E2 = 0.0, 0.0
    for draw in itertools.product(range(len(p)), repeat=K):
        y = np.array(draw)
        g = sum(np.einsum("kt,ktd->d", c, b[y]) for c, b in zip(coef_fn(y), bases))
        pr = np.prod(p[y])
        E, E2 = E + pr * g, E2 + pr * g @ g
    return E, E2


def test_group_moments_and_updates_equal_every_ordered_draw():
    rng = np.random.default_rng(0)
    R, K, T, D = 4, 3, 2, 5
    p = rng.dirichlet(np.ones(R))
    r = rng.normal(size=R)
    bases = [rng.normal(size=(R, T, D)), rng.normal(size=(R, T, D))]

    def coef_fn(y):  # a group statistic: the centred reward of each slot, on each token
        A = r[y] - r[y].mean(axis=-1, keepdims=True)
        return [np.repeat(A[..., None], T, -1), np.ones(y.shape + (T,)) * 0.3]

    Y, P = group_law(p, K)
    coefs = coef_fn(Y)
    mean, second = group_moments(P, Y, coefs, bases)
    E, E2 = _brute(p, K, coef_fn, bases)
    np.testing.assert_allclose(mean, E, rtol=0, atol=1e-14)
    assert second == pytest.approx(E2, rel=1e-12)
    g = group_updates(Y, coefs, bases).sum(0)  # (F, M, D) -> (M, D)
    np.testing.assert_allclose(P @ g, E, rtol=0, atol=1e-14)
    assert float(P @ (g * g).sum(1)) == pytest.approx(E2, rel=1e-12)


def test_ordered_groups_cover_each_prompt():
    p = np.array([0.5, 0.5, 0.2, 0.3, 0.5])
    prompt = np.array([0, 0, 1, 1, 1])
    idx, prob = ordered_groups(np.log(p), prompt, 2)
    assert len(idx) == 2**2 + 3**2 and (prompt[idx[:, 0]] == prompt[idx[:, 1]]).all()
    np.testing.assert_allclose(np.bincount(prompt[idx[:, 0]], prob), 1.0, rtol=0, atol=1e-15)


def test_iid_moments_equal_every_ordered_draw():
    rng = np.random.default_rng(3)
    M, D, K = 4, 3, 3
    p, R, Sc = rng.dirichlet(np.ones(M)), rng.normal(size=M), rng.normal(size=(M, D))
    c = rng.normal(size=(K, K))
    first, second = iid_moments(p, R, Sc, c)
    E, E2 = 0.0, 0.0
    for draw in itertools.product(range(M), repeat=K):
        y = np.array(draw)
        g = np.einsum("kj,j,kd->d", c, R[y], Sc[y])
        pr = np.prod(p[y])
        E, E2 = E + pr * g, E2 + pr * g @ g
    np.testing.assert_allclose(first, E, rtol=0, atol=1e-13)
    assert second == pytest.approx(E2, rel=1e-12)


def test_bad_groups_are_named():
    with pytest.raises(ValueError, match="^P: expected probabilities >= 0 summing to at most 1"):
        group_moments(np.array([0.7, 0.7]), np.zeros((2, 1), int), [np.zeros((2, 1, 1))], [np.zeros((1, 1, 1))])
    with pytest.raises(ValueError, match="^coefs: expected one array per basis"):
        group_moments(np.array([1.0]), np.zeros((1, 1), int), [np.zeros((1, 1, 1))] * 2, [np.zeros((1, 1, 1))])
    with pytest.raises(TypeError, match="^coefs: expected a non-empty list"):
        group_moments(np.array([1.0]), np.zeros((1, 1), int), [], [np.zeros((1, 1, 1))])
    with pytest.raises(ValueError, match="^K: "):
        multisets(3, 0)

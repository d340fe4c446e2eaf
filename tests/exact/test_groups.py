"""minirl_lm.exact.groups: the multinomial law and the group moments against every ordered draw."""

import itertools
import math
import tracemalloc

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


def test_a_listing_too_large_is_refused_before_it_starts():
    tracemalloc.start()  # refused before listing: nothing of the listing's size is allocated
    msg = str(pytest.raises(ValueError, multisets, 50, 50).value)  # C(99, 50) = 5e28 multisets
    assert msg.startswith("K: expected at most 1e+07 entries in the multisets") and "got 5.04e+28 multisets" in msg
    for R, K, got in ((10**7, 64, "got ~1e359 multisets"), (10**4000, 2, "got >= ~1e4000 multisets")):
        assert got in str(pytest.raises(ValueError, multisets, R, K).value)  # no float overflow, no giant string
    assert str(pytest.raises(ValueError, group_law, np.full(50, 0.02), 50).value).startswith("K: ")
    assert len(multisets(5, 8)[0]) == math.comb(12, 8)  # the atlas' K = 8 still lists
    many = np.full(100, 0.01)  # 100^8 = 1e16 ordered 8-tuples of one prompt
    msg = str(pytest.raises(ValueError, ordered_groups, np.log(many), np.zeros(100, int), 8).value)
    assert msg.startswith("K: expected at most 1e+07 entries in the ordered K-tuples, got 1e+16")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**26


def test_a_prompt_id_near_the_top_of_int64_is_one_prompt_not_a_range():
    top = 2**63 - 1
    idx, prob = ordered_groups(np.log([0.5, 0.5, 1.0]), np.array([top, top, 3]), 2)
    assert idx.tolist() == [[2, 2], [0, 0], [0, 1], [1, 0], [1, 1]]  # prompt 3 first: the ids in order
    np.testing.assert_allclose(prob, [1.0, 0.25, 0.25, 0.25, 0.25], rtol=0, atol=1e-15)
    msg = str(pytest.raises(ValueError, ordered_groups, np.log([0.5, 0.4]), np.array([top, top]), 2).value)
    assert msg.startswith("logq: expected probabilities summing to 1 per prompt, got 0.9") and str(top) in msg


def test_iid_moments_beyond_float64_name_the_function():
    # R = 1e200: E[R^2] = 1e400 overflows in the second moment; the first, 1e200 S, is finite
    msg = str(pytest.raises(ValueError, iid_moments, [1.0], [1e200], [[1.0]], np.ones((2, 2))).value)
    assert msg.startswith("iid_moments: expected a finite second, got inf (beyond float64) from p in [1, 1]")
    assert "R in [1e+200, 1e+200]" in msg


def test_the_shapes_of_a_group_must_agree():
    P, Y = np.array([0.5, 0.5]), np.zeros((2, 2), int)
    with pytest.raises(ValueError, match=r"^p: expected shape \(R,\) or \(N, R\)"):
        group_law(np.full((2, 2, 2), 0.5), 2)
    with pytest.raises(ValueError, match="^K: "):
        multisets(3, 65)
    with pytest.raises(ValueError, match=r"^bases: expected shape \(1, 1, 2\)"):
        group_moments(P, Y, [np.zeros((2, 2, 1))] * 2, [np.zeros((1, 1, 2)), np.zeros((1, 1, 3))])
    with pytest.raises(ValueError, match=r"^Y: expected shape \(1, K\)"):
        group_moments(np.array([1.0]), Y, [np.zeros((2, 2, 1))], [np.zeros((1, 1, 2))])
    with pytest.raises(ValueError, match="^coefs: "):
        group_moments(P, Y, [np.zeros((2, 2, 3))], [np.zeros((1, 1, 2))])
    with pytest.raises(ValueError, match="^Y: expected ids < 1"):
        group_updates(Y + 1, [np.zeros((2, 2, 1))], [np.zeros((1, 1, 2))])


def test_a_law_may_sum_below_one_by_at_most_rounding_above_and_second_is_optional():
    Y, coefs, bases = np.zeros((1, 1), int), [np.ones((1, 1, 1))], [np.full((1, 1, 2), 2.0)]
    mean, second = group_moments(np.array([0.5]), Y, coefs, bases)  # g = (2, 2) with probability 0.5
    assert mean.tolist() == [1.0, 1.0] and second == 4.0
    assert group_moments(np.array([0.5]), Y, coefs, bases, second=False)[1] == 0.0
    assert group_moments(np.array([1 + 5e-10]), Y, coefs, bases)[0].tolist() == [2 + 1e-9, 2 + 1e-9]
    with pytest.raises(ValueError, match="^P: expected probabilities >= 0 summing to at most 1"):
        group_moments(np.array([1 + 2e-9]), Y, coefs, bases)


def test_a_coefs_that_is_not_a_list_is_named_with_its_repr_cut_at_120_characters():
    P, Y, bases = np.array([1.0]), np.zeros((1, 1), int), [np.zeros((1, 1, 1))]
    msg = str(pytest.raises(TypeError, group_moments, P, Y, "abc", bases).value)
    assert msg == "coefs: expected a non-empty list of arrays, got str 'abc'"
    msg = str(pytest.raises(TypeError, group_moments, P, Y, "a" * 200, bases).value)
    assert msg == "coefs: expected a non-empty list of arrays, got " + ("str '" + "a" * 200)[:120]


def test_a_refused_listing_names_R_K_and_the_number_of_laws():
    msg = str(pytest.raises(ValueError, multisets, 10**300, 2).value)  # 10^300 itself is written ~1e300
    assert msg.endswith("got >= ~1e300 multisets (R = ~1e300, K = 2, N = 1)")
    msg = str(pytest.raises(ValueError, multisets, 10**300, 1).value)  # C(R, 1) = R: counted, not bounded
    assert msg.endswith("got ~1e300 multisets (R = ~1e300, K = 1, N = 1)")
    msg = str(pytest.raises(ValueError, multisets, 10**7, 2).value)  # R = 1e7 is counted: C(1e7 + 1, 2)
    assert msg.endswith("got 5e+13 multisets (R = 1e+07, K = 2, N = 1)")
    msg = str(pytest.raises(ValueError, multisets, 10**7 + 1, 2).value)  # one more is bounded below by R
    assert msg.endswith("got >= 1e+07 multisets (R = 1e+07, K = 2, N = 1)")
    assert str(pytest.raises(ValueError, multisets, 50, 50).value).endswith("(R = 50, K = 50, N = 1)")
    assert str(pytest.raises(ValueError, group_law, np.full(50, 0.02), 50).value).endswith(
        "(R = 50, K = 50, N = 1)"
    )
    msg = str(pytest.raises(ValueError, group_law, np.full((3, 50), 0.02), 50).value)
    assert msg.endswith("got 5.04e+28 multisets (R = 50, K = 50, N = 3)")


def test_a_listing_of_exactly_max_entries_is_made_and_one_more_law_is_refused():
    # K = 1, R = 3125: M = 3125 multisets of 1 + R + N entries each, 3125 * 3200 = 1e7 at N = 74
    Y, P = group_law(np.full((74, 3125), 1 / 3125), 1)
    assert Y.shape == (3125, 1) and P.shape == (74, 3125)
    msg = str(pytest.raises(ValueError, group_law, np.full((75, 3125), 1 / 3125), 1).value)
    assert msg.endswith("got 3.12e+03 multisets (R = 3.12e+03, K = 1, N = 75)")  # C(R, 1) = R exactly


def test_one_response_and_ten_million_laws_are_refused_as_one_multiset():
    msg = str(pytest.raises(ValueError, group_law, np.ones((10**7 - 1, 1)), 1).value)  # 1 * (1 + 1 + N) > 1e7
    assert msg.endswith("got 1 multisets (R = 1, K = 1, N = 9999999)")  # not ">= 1": M is counted, not bounded


def test_a_law_summing_to_exactly_one_plus_1e9_is_accepted():
    mean, second = group_moments(
        np.array([1.0 + 1e-9]), np.zeros((1, 1), int), [np.ones((1, 1, 1))], [np.ones((1, 1, 1))]
    )
    assert mean.tolist() == [1.0 + 1e-9] and second == 1.0 + 1e-9


def test_ordered_groups_name_the_prompt_furthest_from_summing_to_one_with_tolerance_1e9():
    def refused(p, prompt):
        return str(pytest.raises(ValueError, ordered_groups, np.log(p), np.array(prompt), 1).value)

    head = "logq: expected probabilities summing to 1 per prompt, got "
    assert refused([0.5, 0.5, 0.9], [0, 0, 1]) == head + "0.9 for prompt 1"
    assert refused([0.5, 0.5, 0.55, 0.55], [0, 0, 1, 1]) == head + "1.1 for prompt 1"
    assert refused([1 + 1e-6], [0]) == head + "1.000001 for prompt 0"  # no relative tolerance
    assert refused([1 + 5e-9], [0]) == head + "1.000000005 for prompt 0"  # absolute tolerance 1e-9
    assert ordered_groups(np.log([1 + 5e-10]), np.array([0]), 1)[0].tolist() == [[0]]


def test_ordered_groups_list_up_to_max_entries_and_refuse_one_prompt_more():
    # K = 4, 200 prompts of 10 responses: 2e6 tuples of 4 ids and a probability, 1e7 entries exactly
    logq, prompt = np.full(2000, np.log(0.1)), np.repeat(np.arange(200), 10)
    idx, prob = ordered_groups(logq, prompt, 4)
    assert idx.shape == (2 * 10**6, 4) and prob.shape == (2 * 10**6,)
    msg = str(
        pytest.raises(
            ValueError, ordered_groups, np.full(2010, np.log(0.1)), np.repeat(np.arange(201), 10), 4
        ).value
    )
    assert msg == "K: expected at most 1e+07 entries in the ordered K-tuples, got 2.01e+06 tuples (K = 4)"


def test_iid_moments_take_a_square_c_of_at_most_16():
    p, R, Sc = np.array([0.5, 0.5]), np.array([1.0, 2.0]), np.ones((2, 1))
    for c in (np.ones((2, 3)), np.ones((17, 17))):
        msg = str(pytest.raises(ValueError, iid_moments, p, R, Sc, c).value)
        assert msg == f"c: expected a square (K, K) array with 1 <= K <= 16, got shape {c.shape}"
    first, second = iid_moments(p, R, Sc, np.ones((16, 16)))  # g = 16 (R_1 + ... + R_16) . S, S = 1
    assert first.tolist() == [384.0] and second == 148480.0  # 16 * 16 * 1.5; 256 (16 * 2.5 + 240 * 2.25)

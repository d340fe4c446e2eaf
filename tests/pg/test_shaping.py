"""Sampling and reward shaping (minirl_lm/pg/shaping.py): dynamic sampling against verl's
filter_groups, the resampling factor by enumeration, the overlong penalty against verl's reward
manager "dapo" and its default factor, and TRL's truncation mask (verl @ 1dda039b9c, TRL @
f2cd57710a)."""

import numpy as np
import pytest

from minirl_lm.pg.shaping import (
    acceptance_probability,
    filter_groups,
    mask_truncated,
    overlong_penalty,
    resample_factor,
    truncated,
)
from quiet import names, silent

# ---- folded from tests/test_framework_estimators.py ------------------------------------------


def test_filter_groups_matches_verl():
    r = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.5], [0.0, 0.0, 0.1]])
    want = [not (len(g) > 1 and float(np.std(g)) == 0.0) for g in r]
    assert filter_groups(r).tolist() == want
    assert filter_groups(np.array([[1.0], [0.0]])).all()  # K = 1 kept


def test_resample_factor_by_enumeration():
    import itertools

    for K in (2, 3, 5):
        for p in (0.1, 0.5, 0.8):
            acc = sum(
                np.prod([p if b else 1 - p for b in bits])
                for bits in itertools.product([0, 1], repeat=K)
                if 0 < sum(bits) < K
            )
            assert abs(acceptance_probability(p, K) - acc) < 1e-15
            assert abs(resample_factor(p, K) - 1 / acc) < 1e-12
    assert resample_factor(0.3, 1) == 1.0
    with pytest.raises(ValueError, match="^p"):
        resample_factor(1.0, 4)


def test_overlong_matches_verl():
    max_len, buf, f = 10, 4, 0.5
    L = np.arange(0, 11)
    want = [min(-(l - (max_len - buf)) / buf * f, 0) for l in L]
    np.testing.assert_array_equal(overlong_penalty(L, max_len, buf, f), want)
    with pytest.raises(ValueError, match="^buffer_len"):
        overlong_penalty(L, 10, 11)
    with pytest.raises(ValueError, match="^lengths"):
        overlong_penalty([11], 10, 4)


def test_truncation_mask_matches_trl():
    eos = 0
    tokens = np.array([[1, 2, 0], [1, 2, 1], [0, 0, 0], [2, 0, 0]])
    mask = np.array([[1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 1, 0.0]])
    # TRL: truncated iff the last generated id is not EOS (an empty completion is not truncated)
    lists = [list(t[m > 0]) for t, m in zip(tokens, mask)]
    want = [len(ids) > 0 and ids[-1] != eos for ids in lists]
    assert truncated(tokens, mask, eos).tolist() == want
    assert np.array_equal(mask_truncated(tokens, mask, eos), mask * ~np.array(want)[:, None])


# ---- defaults, bad input, and no overflow -------------------------------------------------


def test_overlong_penalty_default_factor_is_one():
    L = [5, 6, 8, 10]  # L_max = 10, L_buf = 4: from 6 on
    assert overlong_penalty(L, 10, 4).tolist() == [0.0, 0.0, -0.5, -1.0]
    assert overlong_penalty(L, 10, 4).tolist() == overlong_penalty(L, 10, 4, 1.0).tolist()
    assert str(overlong_penalty([0], 10, 4, 0.0)[0]) == "0.0"  # never -0.0


def test_overlong_penalty_far_below_the_buffer_is_silent():
    # -(|y| - (L_max - L_buf)) / L_buf * f = 1e18 * 1e300 overflowed before the min (a warning)
    assert silent(lambda: overlong_penalty([0, 10**18], 10**18, 1, 1e300)).tolist() == [0.0, -1e300]
    # L_max beyond int64 arithmetic is named (it was a raw OverflowError or a silent 0)
    names(
        "max_len", "expected an integer >= 1 and <= 4611686018427387904", lambda: overlong_penalty([0], 2**63, 1)
    )


def test_filter_and_acceptance_bad_input_named():
    names("rewards", "expected a non-empty array", lambda: filter_groups(np.zeros((2, 0))))
    names("rewards", "expected a non-empty array", lambda: filter_groups(np.zeros((0, 2))))
    names("p", "expected a number >= 0 and <= 1", lambda: acceptance_probability(1.5, 2))
    names("K", "expected an integer >= 1", lambda: acceptance_probability(0.5, 0))
    assert acceptance_probability(0.5, 1) == 1.0 and acceptance_probability(0.0, 3) == 0.0
    msg = names("p", "expected 0 < p < 1", lambda: resample_factor(0.0, 2))
    assert msg == (
        "p: expected 0 < p < 1 (at p = 0.0 every group of K = 2 has equal rewards and resampling never ends)"
    )


def test_truncation_bad_input_named_and_mask_not_mutated():
    tokens, mask = np.array([[1, 2]]), np.array([[1.0, 1.0]])
    out = mask_truncated(tokens, mask, 0)
    assert out.tolist() == [[0.0, 0.0]] and mask.tolist() == [[1.0, 1.0]] and out is not mask
    assert mask_truncated(tokens, mask, 2).tolist() == [[1.0, 1.0]]
    names("tokens", "expected shape (1, 2), got (1, 1)", lambda: truncated([[1]], mask, 0))
    names("eos", "expected an integer >= 0", lambda: truncated(tokens, mask, -1))
    names("mask", "expected only 0 and 1", lambda: mask_truncated(tokens, [[0.0, 0.5]], 0))


# ---- the edges a mutant would move ------------------------------------------------------------
def test_filter_groups_k1_keeps_every_group_as_bools_and_k2_drops_ties():
    keep = filter_groups(np.array([[0.0], [1.0], [1.0]]))
    assert keep.dtype == np.bool_ and keep.tolist() == [True, True, True]  # K = 1: all kept
    assert filter_groups(np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])).tolist() == [False, True, False]


def test_overlong_penalty_is_plus_zero_below_the_buffer():
    p = overlong_penalty(np.array([0, 3, 6]), 10, 4, 0.5)  # the buffer starts at 6
    assert p.tolist() == [0.0, 0.0, 0.0] and not np.signbit(p).any()  # +0.0, never -0.0
    assert overlong_penalty(np.array([8]), 10, 4, 1.0).tolist() == [-0.5]


def test_truncated_reads_the_last_real_token_only():
    eos = 2
    tokens = np.array([[0, 2], [2, 0], [1, 0], [2, 2], [0, 0]])
    mask = np.array([[1, 0], [1, 1], [1, 0], [1, 0], [0, 0]], dtype=float)
    # row 0: last real token 0 (the padding holds eos); row 1: ends in 0 after an eos; row 2: one
    # real non-eos token; row 3: one real eos; row 4: empty (not truncated)
    assert truncated(tokens, mask, eos).tolist() == [True, True, True, False, False]
    assert mask_truncated(tokens, mask, eos).tolist() == [[0, 0], [0, 0], [0, 0], [1, 0], [0, 0]]


def test_overlong_buffer_may_fill_the_whole_cap_and_a_zero_factor_gives_plus_zero():
    # buffer_len = max_len: the buffer starts at length 0
    assert overlong_penalty([0, 2, 4], 4, 4).tolist() == [0.0, -0.5, -1.0]
    # in the buffer with penalty_factor 0: -1 * 0.0 is -0.0, returned as +0.0
    assert not np.signbit(overlong_penalty([8, 10], 10, 4, 0.0)).any()

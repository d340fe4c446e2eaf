"""TODO docstring"""

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

# ---- folded from tests/test_framework_estimators.py ------------------------------------------

def test_filter_groups_matches_verl():
    r = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.5], [0.0, 0.0, 0.1]])
    want = [not (len(g) > 1 and float(np.std(g)) == 0.0) for g in r]
    assert filter_groups(r).tolist() == want
    assert filter_groups(np.array([[1.0], [0.0]])).all()       # K = 1 kept


def test_resample_factor_by_enumeration():
    import itertools
    for K in (2, 3, 5):
        for p in (0.1, 0.5, 0.8):
            acc = sum(np.prod([p if b else 1 - p for b in bits])
                      for bits in itertools.product([0, 1], repeat=K) if 0 < sum(bits) < K)
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

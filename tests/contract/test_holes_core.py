"""Masks with holes in the log-prob primitive and the tabular policy: each token is gathered (and
its gradient scattered) on its own, so a batch whose rows have holes (0s between 1s: tool outputs
inside a response) gives the token log-probs of its compacted rows, scattered back, bitwise; the
sequence log-probs are row sums (1e-12, `tests/holes.py`), and the policy's table gradient adds
the same nonzero terms in the same order (bitwise).
"""

import numpy as np
from holes import Pair, close
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.core.logprob import masked_mean, masked_sum, token_logp, token_logp_backward
from minirl_lm.core.policy import TabularPolicy

shapes = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 8))


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_masked_sums_and_token_logp(s):
    seed, B, T = s
    rng = np.random.default_rng(seed)
    pair = Pair(rng, B, T)
    x_h, x_c = pair.arrays(rng.normal(size=(B, T)))
    assert close(masked_sum(x_h, pair.mask), masked_sum(x_c, pair.packed))
    assert close(masked_mean(x_h, pair.mask), masked_mean(x_c, pair.packed))
    V = 4
    z = rng.normal(size=(B, T, V))
    z_h, z_c = np.empty_like(z), np.empty_like(z)
    for v in range(V):  # the logits of a trained position travel with it
        z_h[..., v], z_c[..., v] = pair.arrays(z[..., v])
    y_h, y_c = pair.ints(rng.integers(0, V, (B, T)), V)
    (lp_h, seq_h), (lp_c, seq_c) = token_logp(z_h, y_h, pair.mask), token_logp(z_c, y_c, pair.packed)
    assert np.array_equal(lp_h, pair.back(lp_c)) and close(seq_h, seq_c)
    g_h, g_c = pair.arrays(rng.normal(size=(B, T)))
    d_h, d_c = token_logp_backward(z_h, y_h, pair.mask, g_h), token_logp_backward(z_c, y_c, pair.packed, g_c)
    for v in range(V):
        assert np.array_equal(d_h[..., v], pair.back(d_c[..., v]))


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_tabular_policy_logp_and_backward(s):
    seed, B, T = s
    rng = np.random.default_rng(seed)
    pair = Pair(rng, B, T)
    S, V = 5, 3
    pol = TabularPolicy(rng.normal(size=(S, V)))
    st_h, st_c = pair.ints(rng.integers(0, S, (B, T)), S)
    y_h, y_c = pair.ints(rng.integers(0, V, (B, T)), V)
    (lp_h, seq_h), (lp_c, seq_c) = pol.logp(st_h, y_h, pair.mask), pol.logp(st_c, y_c, pair.packed)
    assert np.array_equal(lp_h, pair.back(lp_c)) and close(seq_h, seq_c)
    g_h, g_c = pair.arrays(rng.normal(size=(B, T)))
    assert np.array_equal(pol.backward(st_h, y_h, pair.mask, g_h), pol.backward(st_c, y_c, pair.packed, g_c))

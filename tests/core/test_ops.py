"""The shared pieces (minirl_lm/core/ops.py): each equal to its definition, exactly."""

import numpy as np

from minirl_lm.core import ops


def _mask(rng, B=5, T=4):
    return (np.arange(T)[None, :] < rng.integers(0, T + 1, (B, 1))).astype(float)


def test_agg_weights_are_the_five_aggregations():
    m = _mask(np.random.default_rng(0))
    B, T = m.shape
    n = m.sum(axis=1, keepdims=True)
    assert np.array_equal(ops.agg_weights(m, "seq_sum"), m / B)
    assert np.array_equal(ops.agg_weights(m, "token_mean"), m / m.sum())
    assert np.array_equal(ops.agg_weights(m, "seq_mean_token_mean"), m / (B * np.maximum(n, 1)))
    assert np.array_equal(ops.agg_weights(m, "constant"), m / (B * T))
    assert np.array_equal(ops.agg_weights(m, "constant", max_len=7), m / (B * 7))
    assert np.array_equal(ops.agg_weights(np.zeros((2, 3)), "token_mean"), np.zeros((2, 3)))
    w = ops.agg_weights(m, "token_sum")
    assert np.array_equal(w, m) and w is not m  # no normalizer; a fresh array


def test_token_sum_is_verls_agg_loss():
    """verl 0.9.1 verl/trainer/ppo/core_algos.py:1176-1180, loss_agg_mode="token-sum" on one
    process (dp_size = 1): masked_sum(loss_mat, loss_mask) * dp_size."""
    rng = np.random.default_rng(1)
    m = _mask(rng)
    loss_mat = rng.normal(size=m.shape)
    assert (ops.agg_weights(m, "token_sum") * loss_mat).sum() == (loss_mat * m).sum() * 1


def test_adv_tokens_puts_a_response_advantage_on_every_column():
    m = _mask(np.random.default_rng(1))
    a = np.arange(5.0)
    assert np.array_equal(ops.adv_tokens(a, m), np.repeat(a[:, None], 4, axis=1))
    full = np.ones((5, 4))
    assert ops.adv_tokens(full, m) is full


def test_log_ratio_is_exactly_zero_at_padding_whatever_it_holds():
    m = np.array([[1.0, 0.0]])
    u = ops.log_ratio(np.array([[-1.0, np.inf]]), np.array([[-3.0, np.nan]]), m)
    assert u.tolist() == [[2.0, 0.0]]


def test_sigmoid_and_log_softmax_at_the_tails():
    z = np.array([-800.0, -1.0, 0.0, 1.0, 800.0])
    s = ops.sigmoid(z)
    assert s[0] == 0.0 and s[2] == 0.5 and s[4] == 1.0
    assert abs(s[3] - 1 / (1 + np.exp(-1.0))) < 1e-16
    lp = ops.log_softmax(np.array([[0.0, -np.inf, 1000.0], [1.0, 1.0, 1.0]]))
    assert lp[0, 1] == -np.inf and lp[0, 2] == 0.0 and lp[0, 0] == -1000.0
    assert np.allclose(lp[1], -np.log(3.0), rtol=0, atol=1e-15)

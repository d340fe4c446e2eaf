"""kernels/chunk.py: the two chunk kernels of minirl_lm.scale.bigvocab against the dense kernels on
the same rows (the log-probs bit for bit; the gradient to a few ulp) and the NumPy twins."""

import numpy as np
import pytest
from kernel_cases import rel_err

from minirl_lm import kernels as K
from minirl_lm.core.logprob import token_logp, token_logp_backward


def chunk_case(seed, R=9, V=40, dtype=np.float64, neginf=False):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal((R, V)) * 3).astype(dtype)  # (R, V)
    if neginf:  # impossible tokens, never a whole row
        z[rng.random((R, V)) < 0.3] = -np.inf
        z[:, 0] = 0.0
    y = rng.integers(0, V, R)
    y[0] = 0
    w = rng.standard_normal(R)
    return z, y, w


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "kw", [dict(seed=0), dict(seed=1, V=1), dict(seed=2, neginf=True), dict(seed=3, R=1, V=100000)]
)
def test_chunk_kernels_equal_dense_kernels_and_twins(dtype, kw):
    z, y, w = chunk_case(dtype=dtype, **kw)
    R = z.shape[0]
    ones = np.ones((1, R))
    logp = K._chunk_logp(z, y, np.empty(R))
    assert np.array_equal(logp, K.dense_logp(z[None], y[None], ones)[0][0])  # same memory, bits
    G = K._chunk_grad_inplace(z.copy(), y, w)  # the same _row_grad; its reassociated sum
    ulp = 4 * np.finfo(dtype).eps  # may split differently at another alignment
    dense = K.dense_backward(z[None], y[None], ones, w[None])[0]
    assert np.abs(G - dense).max() <= ulp * max(np.abs(dense).max(), 1e-300)
    z64 = z.astype(np.float64)  # the NumPy twins, in float64 on the same numbers
    tol = 1e-12 if dtype == np.float64 else 1e-6
    assert rel_err(logp, token_logp(z64[None], y[None], ones)[0][0]) <= tol
    assert rel_err(G, token_logp_backward(z64[None], y[None], ones, w[None])[0]) <= tol


def test_grad_inplace_writes_its_input():
    z, y, w = chunk_case(4)
    buf = z.copy()
    out = K._chunk_grad_inplace(buf, y, w)
    assert out is buf or np.shares_memory(out, buf)
    assert np.allclose(buf.sum(axis=1), 0.0, atol=1e-12)  # each row: w (1 - sum p) = 0

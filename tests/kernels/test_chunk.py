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


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "kw", [dict(seed=5), dict(seed=6, V=1), dict(seed=7, neginf=True), dict(seed=8, R=2, V=100000)]
)
def test_exp_kept_pair_equals_the_two_kernels_and_twins(dtype, kw):
    """_chunk_logp_exp then _chunk_grad_from_exp (each entry exponentiated once) against
    _chunk_logp / _chunk_grad_inplace (the same loops: 4 ulp) and the NumPy twins in float64
    (1e-12, float32 1e-6: the float32 exponentials' rounding)."""
    z, y, w = chunk_case(dtype=dtype, **kw)
    R = z.shape[0]
    e, s = z.copy(), np.empty(R)
    logp = K.chunk._chunk_logp_exp(e, y, np.empty(R), s)
    z64 = z.astype(np.float64)
    m = z64.max(axis=1, keepdims=True)  # (R, 1)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    assert e.dtype == dtype and rel_err(e, np.exp(z64 - m)) <= tol  # the buffer: exp(z - max)
    assert rel_err(s, np.exp(z64 - m).sum(axis=1)) <= tol
    ulp = 4 * np.finfo(np.float64).eps
    assert np.abs(logp - K._chunk_logp(z, y, np.empty(R))).max() <= ulp * max(np.abs(logp).max(), 1.0)
    G = K.chunk._chunk_grad_from_exp(e, y, w, s)
    assert G is e or np.shares_memory(G, e)
    old = K._chunk_grad_inplace(z.copy(), y, w)
    assert np.abs(G - old).max() <= 4 * np.finfo(dtype).eps * max(np.abs(old).max(), 1e-300)
    ones = np.ones((1, R))
    assert rel_err(logp, token_logp(z64[None], y[None], ones)[0][0]) <= tol
    assert rel_err(G, token_logp_backward(z64[None], y[None], ones, w[None])[0]) <= tol


def test_exp_kept_pair_at_a_vocabulary_of_one_is_exactly_zero():
    z, y, w = chunk_case(9, V=1)
    s = np.empty(z.shape[0])
    logp = K.chunk._chunk_logp_exp(z, y, np.empty(z.shape[0]), s)
    assert np.all(logp == 0.0) and np.all(s == 1.0)
    assert np.all(K.chunk._chunk_grad_from_exp(z, y, w, s) == 0.0)  # w (1 - 1), exactly


def test_the_new_chunk_kernels_are_cached():
    """Both are module-level @njit(cache=True) functions (an on-disk cache, not numba's NullCache)."""
    for f in (K.chunk._chunk_logp_exp, K.chunk._chunk_grad_from_exp):
        assert type(f._cache).__name__ != "NullCache", f

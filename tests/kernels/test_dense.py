"""kernels/dense.py and its entries dense_logp, dense_backward: equal to the NumPy twins
(logprob.token_logp, logprob.token_logp_backward), threads equal to one thread bit for bit, the
out= buffer, padding never read, the digits at 1e4 logits, a gathered -inf logit, bad input."""

import numpy as np
import pytest
from kernel_cases import CASES, RTOL, RTOL32, case, rel_err

from minirl_lm import kernels as K
from minirl_lm.core.logprob import token_logp, token_logp_backward
from quiet import raises


@pytest.mark.parametrize("kw", CASES)
def test_dense(kw):
    _, logits, _, tokens, mask, w = case(**kw)
    logp, seq = K.dense_logp(logits, tokens, mask)
    ref_logp, ref_seq = token_logp(logits, tokens, mask)
    assert rel_err(logp, ref_logp) <= RTOL and rel_err(seq, ref_seq) <= RTOL
    got = K.dense_backward(logits, tokens, mask, w)
    assert np.isfinite(got).all()
    assert rel_err(got, token_logp_backward(logits, tokens, mask, w)) <= RTOL


@pytest.mark.parametrize("kw", CASES)
def test_dense_float32(kw):
    """float32 logits: float32 exponentials, float64 sums; logp float64, dlogits float32."""
    _, logits, _, tokens, mask, w = case(**kw)
    lg32 = logits.astype(np.float32)
    lg = lg32.astype(np.float64)  # the same numbers, for the twin
    logp, seq = K.dense_logp(lg32, tokens, mask)
    ref_logp, ref_seq = token_logp(lg, tokens, mask)
    assert logp.dtype == np.float64
    assert rel_err(logp, ref_logp) <= RTOL32 and rel_err(seq, ref_seq) <= RTOL32
    got = K.dense_backward(lg32, tokens, mask, w)
    assert got.dtype == np.float32 and np.isfinite(got).all()
    assert rel_err(got, token_logp_backward(lg, tokens, mask, w)) <= RTOL32


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kw", CASES + [dict(seed=9, B=13, T=5, V=300)])
def test_parallel_equals_serial(kw, dtype):
    _, logits, _, tokens, mask, w = case(**kw)
    logits = logits.astype(dtype)
    serial = K.dense_logp(logits, tokens, mask)
    for a, b in zip(K.dense_logp(logits, tokens, mask, parallel=True), serial, strict=True):
        assert np.array_equal(a, b)
    got = K.dense_backward(logits, tokens, mask, w, parallel=True)
    assert got.dtype == dtype
    assert np.array_equal(got, K.dense_backward(logits, tokens, mask, w))


def test_the_threaded_kernels_ran_on_the_sessions_pool(numba_threads_at_start):
    # the test above compares a run on Numba's pool with the serial one: on one thread it would
    # compare the serial run with itself (an import that set NUMBA_NUM_THREADS=1 once did that)
    import numba

    K.dense_logp(np.zeros((1, 1, 2)), np.zeros((1, 1), np.int64), np.ones((1, 1)), parallel=True)
    want = (
        numba.config.NUMBA_DEFAULT_NUM_THREADS if numba_threads_at_start is None else int(numba_threads_at_start)
    )
    assert numba.config.NUMBA_NUM_THREADS == want and numba.get_num_threads() == want


def test_backward_out_is_reused():
    """out= is written in full (padding rows too) and returned: garbage in it never leaks."""
    _, logits, _, tokens, mask, w = case(10)
    want = K.dense_backward(logits, tokens, mask, w)
    for parallel in (False, True):
        out = np.full_like(logits, np.nan)
        assert K.dense_backward(logits, tokens, mask, w, out=out, parallel=parallel) is out
        assert np.array_equal(out, want)


def test_entries_equal_their_cores():
    _, logits, _, tokens, mask, w = case(11)
    for a, b in zip(K.dense_logp(logits, tokens, mask), K._dense_logp(logits, tokens, mask), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(K.dense_backward(logits, tokens, mask, w), K._dense_backward(logits, tokens, mask, w))


def test_padding_never_read():
    _, logits, _, tokens, mask, w = case(7)
    bad = logits.copy()
    bad[mask == 0] = np.nan  # garbage where mask is 0
    tok = np.where(mask > 0, tokens, 10**9)  # ids out of range there too
    for parallel in (False, True):
        for a, b in zip(
            K.dense_logp(bad, tok, mask, parallel=parallel), K.dense_logp(logits, tokens, mask), strict=True
        ):
            assert np.array_equal(a, b)
        assert np.array_equal(
            K.dense_backward(bad, tok, mask, w * np.where(mask > 0, 1, np.nan), parallel=parallel),
            K.dense_backward(logits, tokens, mask, w),
        )


def test_large_logits_keep_their_digits():
    """Shift invariance at 1e4: the kernels must compute (z_y - m) - lse, not z_y - (m + lse),
    whose rounding at 1e4 (ulp 1.8e-12) would swamp the 1e-13 tolerance below. The offsets are
    multiples of 1/64, so 1e4 + offset is exact and both sides see the same numbers."""
    rng = np.random.default_rng(8)
    _, _, _, tokens, mask, _ = case(8, V=5)
    offsets = rng.integers(-400, 400, (5, 7, 5)) / 64.0  # (B, T, V)
    got = K.dense_logp(offsets + 1e4, tokens, mask)[0]
    assert np.abs(got - token_logp(offsets, tokens, mask)[0]).max() < 1e-13


def test_gathered_neginf_token():
    logits = np.array([[[0.0, -np.inf, 1.0]]])  # (1, 1, 3)
    tokens, mask, w = np.ones((1, 1), np.int64), np.ones((1, 1)), np.full((1, 1), 2.0)
    logp, seq = K.dense_logp(logits, tokens, mask)
    assert logp[0, 0] == -np.inf and seq[0] == -np.inf
    want = [-2 / (1 + np.e), 2.0, -2 * np.e / (1 + np.e)]
    np.testing.assert_allclose(K.dense_backward(logits, tokens, mask, w)[0, 0], want, rtol=1e-15)
    lg32 = logits.astype(np.float32)
    assert K.dense_logp(lg32, tokens, mask)[0][0, 0] == -np.inf
    np.testing.assert_allclose(K.dense_backward(lg32, tokens, mask, w)[0, 0], want, rtol=1e-6)


GOOD = dict(
    logits=np.zeros((2, 3, 4)),
    tokens=np.zeros((2, 3), np.int64),
    mask=np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
    w=np.ones((2, 3)),
)


def call(backward, **kw):
    a = {**GOOD, **kw}
    if backward:
        return K.dense_backward(
            a["logits"], a["tokens"], a["mask"], a["w"], out=a.get("out"), parallel=a.get("parallel", False)
        )
    return K.dense_logp(a["logits"], a["tokens"], a["mask"], parallel=a.get("parallel", False))


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize(
    "arg, bad, exc, start",
    [
        ("logits", np.zeros((2, 3, 4), np.float16), TypeError, "logits: expected dtype float64 or"),
        ("logits", np.full((2, 3, 4), np.nan), ValueError, "logits: expected rows with a finite"),
        ("logits", np.full((2, 3, 4), -np.inf), ValueError, "logits: expected rows with a finite"),
        ("tokens", np.zeros((2, 3)), TypeError, "tokens: expected dtype int64"),
        ("tokens", np.zeros((2, 2), np.int64), ValueError, "tokens: expected shape (2, 3)"),
        (
            "tokens",
            np.array([[0, 4, 0], [0, 0, 0]]),
            ValueError,
            "tokens: expected ids in [0, 4) at the real positions, got 4 at (0, 1)",
        ),
        ("mask", np.full((2, 3), 0.5), ValueError, "mask: expected only 0.0 and 1.0"),
        ("mask", np.ones((3, 3)), ValueError, "mask: expected shape (2, 3)"),
        ("parallel", 1, TypeError, "parallel: expected True or False"),
    ],
)
def test_bad_input_is_named(backward, arg, bad, exc, start):
    assert raises(exc, lambda: call(backward, **{arg: bad})).startswith(start)


@pytest.mark.parametrize(
    "arg, bad, exc, start",
    [
        (
            "w",
            np.array([[1.0, np.inf, np.nan], [1.0, 1.0, 1.0]]),
            ValueError,
            "w: expected finite weights at the real positions",
        ),
        ("w", np.ones((2, 3), np.float32), TypeError, "w: expected dtype float64"),
        ("out", np.zeros((2, 3, 4), np.float32), ValueError, "out: expected a float64 array"),
        ("out", np.zeros((2, 3, 8))[..., ::2], ValueError, "out: expected a writeable C-contiguous"),
        ("out", GOOD["logits"], ValueError, "out: expected an array not sharing memory"),
    ],
)
def test_bad_backward_input_is_named(arg, bad, exc, start):
    assert raises(exc, lambda: call(True, **{arg: bad})).startswith(start)


def test_weights_at_padding_are_never_read():
    w = np.array([[1.0, 1.0, np.nan], [1.0, np.inf, -np.inf]])  # garbage at mask 0
    assert np.array_equal(call(True, w=w), call(True, w=np.where(GOOD["mask"] > 0, w, 0.0)))

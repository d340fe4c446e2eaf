"""kernels/rows.py: the row kernels and `sequence_logp` against NumPy, and the premise of the guards (a bad row,
one with a NaN or +inf entry or no finite entry, has a NaN logsumexp and a NaN gradient row)."""

import numpy as np
import pytest
from kernel_cases import RTOL, RTOL32, rel_err

from minirl_lm.kernels.rows import _row_exp, _row_grad, _row_lse, _row_max, _row_scale, sequence_logp

ROWS = [
    np.array([0.5]),
    np.array([1.0, -np.inf, 3.0]),
    np.linspace(-5, 5, 17),
    np.random.default_rng(0).standard_normal(1000) * 3 + 1e4,
]


def twin_lse(z):
    m = z.max()
    return m, np.log(np.exp(z - m).sum())


@pytest.mark.parametrize("z", ROWS)
def test_row_max_and_lse_equal_numpy(z):
    assert _row_max(z) == z.max()
    m, lse = _row_lse(z)
    want_m, want_lse = twin_lse(z)
    assert m == want_m and abs(lse - want_lse) <= RTOL * max(abs(want_lse), 1.0)


@pytest.mark.parametrize("z", ROWS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_grad_equals_onehot_minus_softmax(z, dtype):
    z = z.astype(dtype)
    z64 = z.astype(np.float64)
    y, wb = z.shape[0] - 1, -1.7
    out = np.empty_like(z)
    _row_grad(z, y, wb, out)
    p = np.exp(z64 - z64.max())
    want = -wb * p / p.sum()
    want[y] += wb  # eq. (logsoftmax_grad)
    assert out.dtype == dtype
    assert rel_err(out, want) <= (RTOL if dtype == np.float64 else RTOL32)


@pytest.mark.parametrize("z", ROWS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_exp_then_scale_equals_row_grad_and_numpy(z, dtype):
    """_row_exp stores exp(z - m) in the row and returns (m, s); _row_scale finishes the gradient:
    the loops of _row_grad (4 ulp of it), and NumPy's exp, sum and logsumexp."""
    z = z.astype(dtype)
    z64 = z.astype(np.float64)
    y, wb = 0, 0.9
    e = z.copy()
    m, s = _row_exp(e)
    p = np.exp(z64 - z64.max())
    tol = RTOL if dtype == np.float64 else RTOL32
    assert m == z64.max() and e.dtype == dtype and rel_err(e, p) <= tol
    assert abs(s - p.sum()) <= tol * p.sum()
    assert abs(np.log(s) - _row_lse(z)[1]) <= 4 * np.finfo(np.float64).eps * max(abs(_row_lse(z)[1]), 1.0)
    _row_scale(e, y, wb, s)
    out = np.empty_like(z)
    _row_grad(z, y, wb, out)
    assert np.abs(e - out).max() <= 4 * np.finfo(dtype).eps * max(np.abs(out).max(), 1e-300)
    want = -wb * p / p.sum()
    want[y] += wb  # eq. (logsoftmax_grad)
    assert rel_err(e, want) <= tol


@pytest.mark.parametrize("bad", [[0.0, np.nan, 1.0], [0.0, np.inf, 1.0], [-np.inf, -np.inf]])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_bad_row_gives_nan_everywhere(bad, dtype):
    z = np.array(bad, dtype)
    assert np.isnan(_row_lse(z)[1])
    out = np.empty_like(z)
    _row_grad(z, 0, 0.0, out)  # even with a zero weight
    assert np.isnan(out).all()


def test_sequence_logp_is_the_masked_sum_in_order():
    rng = np.random.default_rng(0)
    logp = -rng.random((5, 7)) * 3  # (B, T)
    mask = (rng.random((5, 7)) < 0.6).astype(float)
    mask[2] = 0.0  # an empty row sums to 0
    logp[mask == 0.0] = np.nan  # padding is never read
    got = sequence_logp(logp, mask)
    want = [sum(logp[b, t] for t in range(7) if mask[b, t]) for b in range(5)]  # left to right
    assert got.tolist() == [float(x) for x in want] and got[2] == 0.0

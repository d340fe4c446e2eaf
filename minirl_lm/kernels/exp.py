"""A vectorizable exp: `_exp` (float64) and `_exp32` (float32), the exponentials of every kernel.

numba's `np.exp` is a scalar libm call on these wheels (no SVML): a fused kernel calling it per
element loses to NumPy, whose `exp` is SIMD. These are branch-free (range reduction
`x = k ln2 + r`, a polynomial for `e^r`, `2^k` by bit arithmetic), so LLVM vectorizes the loops
that call them: 4 float64 lanes, or 8 float32 lanes for `_exp32`. Each is within 1 ulp of
`np.exp` over its whole range (tests/kernels/test_exp.py). `_exp_array` and `_exp32_array` map
them over an array and count the NaN inputs (for tests and benchmarks; the validated entries
are `kernels.exp_array` and `kernels.exp32_array`).
"""

import numpy as np
from numba import njit

_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 split so that k * _LN2_HI is exact for |k| < 2^11
_LN2_LO = 1.9082149292705877e-10
_MAGIC = 6755399441055744.0  # 1.5 * 2^52: adding it puts an integer in the low mantissa bits
_MAGIC_BITS = 0x4338000000000000  # the bit pattern of _MAGIC


@njit(cache=True, fastmath={"contract"})
def _exp(x):
    """exp(x) for a float64 scalar, branch-free so that loops over it vectorize.

    x = k ln2 + r with k = round(x / ln2), |r| <= ln2 / 2; e^r by its degree-13 Taylor polynomial
    (truncation < 5e-18 relative); 2^k applied as two exact power-of-two factors 2^(k//2) 2^(k-k//2)
    so that the one final rounding also covers the subnormal range. x is clamped to [-746, 710]:
    exp(-inf) = 0, underflow to exactly 0.0 below -745.13, +inf above 709.78. NaN is not
    handled (the kernels never pass one). Measured error against np.exp: at most 1 ulp over
    the whole float64 range (tests/kernels/test_exp.py::test_exp_ulp).
    """
    x = min(max(x, -746.0), 710.0)
    kf = np.floor(x * _LOG2E + 0.5)
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = 1.0 + (r + r * r * p)  # 1 added last: the big term rounds once
    k = np.float64(kf + _MAGIC).view(np.int64) - _MAGIC_BITS
    k1 = k >> 1
    s1 = np.int64((k1 + 1023) << 52).view(np.float64)  # 2^k1, a normal number
    s2 = np.int64((k - k1 + 1023) << 52).view(np.float64)  # 2^(k - k1)
    return (p * s1) * s2


@njit(cache=True)
def _exp_array(x):
    """(``_exp`` over a 1-D float64 array, the number of NaN entries of x), for tests and
    benchmarks: the count is the entry's check, fused into the one pass (it costs a compare)."""
    out = np.empty_like(x)
    nan = 0
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])
        nan += x[i] != x[i]
    return out, nan


@njit(cache=True, fastmath={"contract"})
def _exp32(x):
    """exp(x) for a float32 scalar, float32 arithmetic, branch-free (vectorizes 8 lanes wide).

    Same scheme as ``_exp``: x = k ln2 + r, e^r by Cephes' degree-5 ``expf`` polynomial, 2^k as
    two power-of-two factors. x is clamped to [-104, 89]: exp(-inf) = 0, underflow to 0, +inf
    above 88.72. Measured error against np.exp rounded to float32: at most 1 ulp over the
    float32 range (tests/kernels/test_exp.py::test_exp32_ulp).
    """
    x = min(max(x, np.float32(-104.0)), np.float32(89.0))
    kf = np.floor(x * np.float32(1.44269504) + np.float32(0.5))
    r = (x - kf * np.float32(0.693359375)) - kf * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = np.float32(1.0) + (r + r * r * p)
    k = np.int32(kf)
    k1 = k >> 1
    s1 = np.int32((k1 + 127) << 23).view(np.float32)  # 2^k1, a normal number
    s2 = np.int32((k - k1 + 127) << 23).view(np.float32)  # 2^(k - k1)
    return (p * s1) * s2


@njit(cache=True)
def _exp32_array(x):
    """(``_exp32`` over a 1-D float32 array, the number of NaN entries of x), as ``_exp_array``."""
    out = np.empty_like(x)
    nan = 0
    for i in range(x.shape[0]):
        out[i] = _exp32(x[i])
        nan += x[i] != x[i]
    return out, nan

"""kernels/exp.py: the hand-written exponentials against np.exp over their whole range (at most
1 ulp, the bound their docstrings state), special values, and the validated entries."""

import numpy as np
import pytest

from minirl_lm import kernels as K
from minirl_lm.kernels.exp import _exp32_array, _exp_array
from quiet import raises


def ulps(a, b):
    """Distance in units in the last place between float64 arrays of equal sign (0 <= x)."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def ulps32(a, b):
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32))


def test_exp_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-750, 712, 400_000),
            rng.uniform(-1, 1, 200_000),
            rng.uniform(-745.2, -708, 100_000),  # subnormal results
            rng.uniform(700, 709.78, 50_000),
            np.linspace(-40, 40, 100_001),
        ]
    )
    with np.errstate(over="ignore"):
        u = ulps(K.exp_array(x), np.exp(x))
    assert u.max() <= 1, (u.max(), x[u.argmax()])


def test_exp_special_values():
    x = np.array([-np.inf, -1e300, -746.0, -745.2, -745.1, -0.0, 0.0, 1e-300, 709.78, 709.79, 1e300, np.inf])
    got = K.exp_array(x)
    with np.errstate(over="ignore"):
        want = np.exp(x)
    assert got[0] == 0.0 and got[-1] == np.inf and got[6] == 1.0 and got[5] == 1.0
    assert ulps(got, want).max() <= 1
    assert np.array_equal(got == np.inf, want == np.inf)


def test_exp32_ulp():
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            rng.uniform(-110, 90, 400_000),
            rng.uniform(-1, 1, 200_000),
            rng.uniform(-103.98, -87, 100_000),  # subnormal results
            np.linspace(-40, 40, 100_001),
        ]
    ).astype(np.float32)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)  # correctly rounded, nearly
        u = ulps32(K.exp32_array(x), want)
    assert u.max() <= 1, (u.max(), x[u.argmax()])


def test_exp32_special_values():
    x = np.array([-np.inf, -1e30, -104.0, -103.9, -0.0, 0.0, 1e-30, 88.72, 88.73, 1e30, np.inf], np.float32)
    got = K.exp32_array(x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert got[0] == 0.0 and got[-1] == np.inf and got[4] == 1.0 and got[5] == 1.0
    assert ulps32(got, want).max() <= 1
    assert np.array_equal(got == np.inf, want == np.inf)


@pytest.mark.parametrize("core, dtype", [(_exp_array, np.float64), (_exp32_array, np.float32)])
def test_cores_count_the_nan_they_propagate(core, dtype):
    """The entries' NaN check is the count the core makes in its one pass: a NaN in gives a NaN
    out (so the row kernels' logsumexp of a bad row is NaN, which the guards rely on)."""
    x = np.array([0.0, np.nan, 1.0, np.nan, -np.inf, np.inf], dtype)
    out, nan = core(x)
    assert nan == 2 and np.isnan(out[[1, 3]]).all() and np.isfinite(out[[0, 2, 4]]).all()
    assert core(np.zeros(3, dtype))[1] == 0


@pytest.mark.parametrize("entry, dtype", [(K.exp_array, np.float64), (K.exp32_array, np.float32)])
def test_entries_refuse_bad_x_and_name_it(entry, dtype):
    x = np.zeros(4, dtype)
    x[2] = np.nan
    assert raises(ValueError, lambda: entry(x)) == "x: expected no NaN"
    other = np.float32 if dtype == np.float64 else np.float64
    assert raises(TypeError, lambda: entry(np.zeros(4, other))).startswith(
        f"x: expected dtype {np.dtype(dtype).name}"
    )
    assert raises(TypeError, lambda: entry([0.0])).startswith("x: expected a numpy array")
    assert raises(ValueError, lambda: entry(np.zeros((2, 2), dtype))).startswith("x: expected shape (n,)")
    assert raises(ValueError, lambda: entry(np.zeros(0, dtype))).startswith("x: expected every")
    assert raises(ValueError, lambda: entry(np.zeros(8, dtype)[::2])).startswith(
        "x: expected a C-contiguous array"
    )

"""minirl_lm.kernels.batch: the joint-outcome walk and the grid sum, each equal to its NumPy twin."""

import numpy as np
import pytest

from minirl_lm.exact.batch import _grid_numpy, _marginals_kernel, _marginals_numpy
from minirl_lm.kernels.batch import (
    KINDS,
    _accumulate,
    _batch_marginals,
    _grid_marginals,
    _scalar_rows,
    _scalars,
    _walk_row,
)


@pytest.mark.parametrize("N", [1, 2, 3, 4])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("token_mean", [False, True])
def test_kernel_equals_its_numpy_twin(N, kind, token_mean):
    rng = np.random.default_rng(N)
    M = [4, 3, 5, 2][:N]
    P = [rng.dirichlet(np.ones(m)) for m in M]
    P[0][1] = 0.0  # an impossible outcome is skipped, and contributes 0 in the twin too
    P[0] /= P[0].sum()
    stats = [
        np.stack(
            [
                rng.integers(1, 4, m).astype(float),
                rng.normal(size=m),
                rng.random(m) + 1,
                rng.integers(0, 9, m).astype(float),
            ]
        )
        for m in M
    ]
    for nf in (3, 9):
        a = _marginals_kernel(P, stats, kind, token_mean, 1e-8, nf)
        b = _marginals_numpy(P, stats, kind, token_mean, 1e-8, nf)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-300)


def test_equal_statistics_whiten_to_zero_exactly():
    # every token equal: var = 0, the whitening scale is 0 (no division by zero)
    assert _scalars(2, False, 1e-8, 4.0, 2.0, 1.0, 4.0) == (0.0, 0.0, 1.0)
    P = np.array([[1.0]])
    W = _batch_marginals(P, np.array([[[4.0], [2.0], [1.0], [4.0]]]), np.array([1]), 2, False, 1e-8, 3)
    np.testing.assert_array_equal(W[0, :, 0], [0.0, 0.0, 1.0])


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_equal_real_values_whiten_as_in_the_twin(n):
    # n tokens of one real value r: S2 = n r r is rounded, and an FMA in S2 - S1 mu would keep that
    # rounding as a variance of ~1e-18, a scale of ~1/sqrt(eps) where the twin has var = 0, scale 0
    for r in (0.1, 0.3, -1.7, 1 / 3):
        stats = np.array([[[n], [n * r], [n * (r * r)], [n]]], dtype=float)  # (1 prompt, 4, 1 outcome)
        a = _marginals_kernel([np.ones(1)], [stats[0]], "whiten", False, 1e-8, 9)
        b = _marginals_numpy([np.ones(1)], [stats[0]], "whiten", False, 1e-8, 9)
        np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("kind", range(3))
@pytest.mark.parametrize("token_mean", [False, True])
def test_grid_kernel_equals_its_numpy_twin(kind, token_mean):
    rng = np.random.default_rng(kind)
    stat = lambda m: np.stack(  # noqa: E731
        [
            rng.integers(1, 4, m).astype(float),
            rng.normal(size=m),
            rng.random(m) + 1,
            rng.integers(0, 9, m).astype(float),
        ]
    )
    V, Z, pz = stat(5), stat(7), rng.dirichlet(np.ones(7))
    for nf in (3, 9):
        a = _grid_marginals(V, Z, pz, kind, token_mean, 1e-8, nf)
        b = _grid_numpy(V, Z, pz, kind, token_mean, 1e-8, nf)
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-300)


def test_scalar_rows_are_the_scalars_operation_for_operation():
    rng = np.random.default_rng(5)
    st = np.stack(
        [
            rng.integers(1, 9, 64).astype(float),
            rng.normal(size=64),
            rng.random(64) * 4,
            rng.integers(0, 9, 64).astype(float),
        ]
    )
    st[:, 0] = [2.0, 1.5, 0.75, 0.0]  # with base: cnt 4, S1 2, S2 1, var = 0: whitening 0, batch std 1 / eps
    base = np.array([2.0, 0.5, 0.25, 1.0])
    out = np.empty((3, 64))
    for kind in range(3):
        for token_mean in (False, True):
            _scalar_rows(kind, token_mean, 1e-8, base, st, 64, out)
            want = [_scalars(kind, token_mean, 1e-8, *(base + st[:, i])) for i in range(64)]
            np.testing.assert_array_equal(out.T, np.array(want))


def test_walk_row_is_scalar_rows_then_accumulate_to_rounding():
    rng = np.random.default_rng(7)
    st = np.stack(
        [
            rng.integers(1, 9, 64).astype(float),
            rng.normal(size=64),
            rng.random(64) * 4,
            rng.integers(0, 9, 64).astype(float),
        ]
    )
    st[:, 0] = [2.0, 1.5, 0.75, 0.0]  # with base: cnt 4, S1 2, S2 1, var = 0: whitening 0, batch std 1 / eps
    base, w = np.array([2.0, 0.5, 0.25, 1.0]), rng.random(64)
    for kind in range(3):
        for token_mean in (False, True):
            sc, row, acc = np.empty((3, 64)), rng.random((3, 64)), np.zeros(9)
            row_f, acc_f = row.copy(), np.zeros(9)
            _scalar_rows(kind, token_mean, 1e-8, base, st, 64, sc)
            _accumulate(w, sc, 64, 3, row, acc)
            _walk_row(kind, token_mean, 1e-8, base, st, 64, w, row_f, acc_f)
            # the same operations; a multiply-add may be fused in one and not the other (one rounding)
            np.testing.assert_allclose(row_f, row, rtol=1e-15, atol=0)
            np.testing.assert_allclose(acc_f, acc, rtol=1e-14, atol=0)  # their sums, maybe regrouped

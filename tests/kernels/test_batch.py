"""minirl_lm.kernels.batch: the joint-outcome kernel equal to its NumPy twin."""

import numpy as np
import pytest

from minirl_lm.exact.batch import _marginals_kernel, _marginals_numpy
from minirl_lm.kernels.batch import KINDS, _batch_marginals, _scalars


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

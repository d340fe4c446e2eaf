"""matmul.py: the 2-D product of a (B, L, k) array equals NumPy's batched one, and the weight
gradient equals the sum over rows of outer products, in both of its layouts."""

import numpy as np

from minirl_lm.nn.matmul import matmul, weight_grad


def test_matmul_is_the_batched_product():
    rng = np.random.default_rng(0)
    x, W = rng.normal(size=(3, 4, 5)), rng.normal(size=(5, 7))
    assert np.allclose(matmul(x, W), x @ W, rtol=0, atol=1e-13)
    assert matmul(x, W).shape == (3, 4, 7)
    assert np.allclose(matmul(x, W[:, :3].T.T), x @ W[:, :3], rtol=0, atol=1e-13)  # a strided W


def test_weight_grad_sums_outer_products_in_both_layouts():
    rng = np.random.default_rng(1)
    for k, n in ((3, 6), (6, 3), (4, 4)):  # wide, tall (returned transposed), square
        x, dy = rng.normal(size=(2, 5, k)), rng.normal(size=(2, 5, n))
        dW = weight_grad(x, dy)
        want = np.einsum("blk,bln->kn", x, dy)
        assert dW.shape == (k, n) and np.allclose(dW, want, rtol=0, atol=1e-13)
        assert dW.flags.c_contiguous == (k <= n) and (k <= n or dW.flags.f_contiguous)

"""mlp.py: the MLP's backward against central finite differences in float64 (tolerance 1e-7,
as in test_norm.py), and GELU's values."""

import numpy as np

from gradcheck import fd_grad
from minirl_lm.nn import mlp
from minirl_lm.nn.mlp import mlp_backward, mlp_forward
from quiet import raises


def test_mlp_backward_matches_finite_differences():
    rng = np.random.default_rng(2)
    x, W1, W2 = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 6)), rng.normal(size=(6, 4))
    C = rng.normal(size=(2, 3, 4))
    y, cache = mlp_forward(x, W1, W2)
    dx, dW1, dW2 = mlp_backward(C, cache)
    assert np.allclose(dx, fd_grad(lambda v: (C * mlp_forward(v, W1, W2)[0]).sum(), x), atol=1e-7)
    assert np.allclose(dW1, fd_grad(lambda v: (C * mlp_forward(x, v, W2)[0]).sum(), W1), atol=1e-7)
    assert np.allclose(dW2, fd_grad(lambda v: (C * mlp_forward(x, W1, v)[0]).sum(), W2), atol=1e-7)


def test_gelu_values():
    # with W1 = W2 = identity the MLP is GELU itself: gelu(0) = 0, gelu(u) ~ u for large u, ~0 for very negative u
    u = np.array([[[0.0, 10.0, -10.0, 1.0]]])
    y, _ = mlp_forward(u, np.eye(4), np.eye(4))
    assert y[0, 0, 0] == 0.0 and abs(y[0, 0, 1] - 10) < 1e-12 and abs(y[0, 0, 2]) < 1e-12
    assert abs(y[0, 0, 3] - 0.8411919906) < 1e-9  # the tanh form at 1


def test_mlp_errors():
    x = np.ones((1, 2, 3))
    assert raises(ValueError, lambda: mlp_forward(x, np.ones((2, 5)), np.ones((5, 3)))).startswith("W1:")
    assert raises(ValueError, lambda: mlp_forward(x, np.ones((3, 5)), np.ones((4, 3)))).startswith("W2:")


def test_blocks_of_the_gelu_give_the_whole_array_formula_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(6)
    x, W1, W2, C = (
        rng.normal(size=(3, 5, 4)),
        rng.normal(size=(4, 8)),
        rng.normal(size=(8, 4)),
        rng.normal(size=(3, 5, 4)),
    )
    monkeypatch.setattr(mlp, "CHUNK", 24)  # 3 rows of 8 a block: 5 blocks, the last one short
    y, cache = mlp.mlp_forward.core(x, W1, W2)
    dx, dW1, dW2 = mlp.mlp_backward.core(C, cache)
    u = x @ W1
    t = np.tanh((u * u * 0.044715 + 1.0) * u * np.sqrt(2 / np.pi))  # the forward's order of operations
    assert np.array_equal(cache[4], t) and np.array_equal(cache[5], (t + 1.0) * u * 0.5)
    c = np.sqrt(2 / np.pi)
    du = 0.5 * ((c + 3 * 0.044715 * c * u * u) * u * (1.0 - t) + 1.0) * (t + 1.0) * (C @ W2.T)
    assert np.allclose(dW1, np.einsum("bld,blm->dm", x, du), rtol=0, atol=1e-12)
    assert np.allclose(dx, du @ W1.T, rtol=0, atol=1e-12)
    assert np.array_equal(y, mlp_forward(x, W1, W2)[0])  # the checked entry runs the core


def test_a_row_wider_than_a_block_and_gelu_at_large_inputs(monkeypatch):
    rng = np.random.default_rng(8)
    x, W1, W2, C = (
        rng.normal(size=(2, 3, 4)) * 3,
        rng.normal(size=(4, 8)),
        rng.normal(size=(8, 4)),
        rng.normal(size=(2, 3, 4)),
    )
    u = x @ W1
    a = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u**3)))  # eq. (gelu)
    want = mlp_forward(x, W1, W2)
    monkeypatch.setattr(mlp, "CHUNK", 5)  # a block of one row, narrower than the row
    y, cache = mlp_forward(x, W1, W2)
    assert np.allclose(y, a @ W2, rtol=0, atol=1e-12) and np.array_equal(y, want[0])
    for g, w in zip(mlp_backward(C, cache), mlp_backward(C, want[1])):
        assert np.array_equal(g, w)
    assert np.allclose(
        mlp_backward(C, cache)[0], fd_grad(lambda v: (C * mlp_forward(v, W1, W2)[0]).sum(), x), atol=1e-6
    )


def test_overflow_names_the_function():
    x = np.full((1, 1, 2), 1e200)
    assert raises(ValueError, lambda: mlp_forward(x, np.full((2, 3), 1e200), np.ones((3, 2)))).startswith(
        "mlp_forward: expected a finite y"
    )

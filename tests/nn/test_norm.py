"""norm.py: RMSNorm's backward against central finite differences in float64.

h = 1e-6: truncation O(h^2 |f'''|) ~ 1e-11 and rounding ~ 1e-10 |f|: tolerance 1e-7 absolute on
gradients of order 1."""

import numpy as np

from gradcheck import fd_grad
from minirl_lm.nn import norm
from minirl_lm.nn.norm import rmsnorm_backward, rmsnorm_forward
from quiet import raises


def test_rmsnorm_backward_matches_finite_differences():
    rng = np.random.default_rng(1)
    x, g, C = rng.normal(size=(2, 3, 4)), rng.normal(size=4), rng.normal(size=(2, 3, 4))
    y, cache = rmsnorm_forward(x, g)
    dx, dg = rmsnorm_backward(C, cache)
    assert np.allclose(dx, fd_grad(lambda v: (C * rmsnorm_forward(v, g)[0]).sum(), x), atol=1e-7)
    assert np.allclose(dg, fd_grad(lambda v: (C * rmsnorm_forward(x, v)[0]).sum(), g), atol=1e-7)
    # each output row has root mean square |g| (eps aside)
    y1, _ = rmsnorm_forward(x, np.ones(4), eps=1e-12)
    assert np.allclose((y1**2).mean(-1), 1.0)


def test_rmsnorm_errors():
    assert raises(ValueError, lambda: rmsnorm_forward(np.ones((1, 2, 3)), np.ones(3), eps=0.0)).startswith("eps:")
    assert raises(ValueError, lambda: rmsnorm_forward(np.ones((1, 2, 3)), np.ones(2))).startswith("g:")
    _, cache = rmsnorm_forward(np.ones((1, 2, 3)), np.ones(3))
    assert raises(TypeError, lambda: rmsnorm_backward(np.ones((1, 2, 3)), ("mlp", 1, 2))).startswith("cache:")
    assert raises(ValueError, lambda: rmsnorm_backward(np.ones((1, 2, 4)), cache)).startswith("dy:")


def test_the_checked_entries_run_the_trusted_cores():
    rng = np.random.default_rng(7)
    x, g, C = rng.normal(size=(2, 3, 4)), rng.normal(size=4), rng.normal(size=(2, 3, 4))
    y, cache = norm.rmsnorm_forward.core(x, g, 1e-5)
    assert np.array_equal(y, rmsnorm_forward(x, g)[0])
    for a, b in zip(norm.rmsnorm_backward.core(C, cache), rmsnorm_backward(C, rmsnorm_forward(x, g)[1])):
        assert np.array_equal(a, b)


def test_eps_enters_the_mean_square():
    x, g = np.array([[[0.5, -1.0, 2.0]]]), np.array([1.0, 2.0, 3.0])
    y, _ = rmsnorm_forward(x, g, eps=1.0)
    assert np.allclose(y, g * x / np.sqrt((x**2).mean() + 1.0), rtol=0, atol=1e-15)
    assert (rmsnorm_forward(np.zeros((1, 1, 3)), g)[0] == 0).all()  # 0 / sqrt(eps): no NaN

"""block.py: a pre-norm block's backward against central finite differences in float64
(tolerance 1e-7 absolute, as in test_norm.py), and the trusted core on the positions start.. (the
model's last block) and the cached step against the full block."""

import numpy as np

from gradcheck import fd_grad
from minirl_lm.nn import block
from minirl_lm.nn.block import block_backward, block_forward
from quiet import raises


def _params(rng, d=4, m=8):
    return {
        "ln1": 1 + 0.1 * rng.normal(size=d),
        "qkv": rng.normal(size=(d, 3 * d)) * 0.5,
        "proj": rng.normal(size=(d, d)) * 0.5,
        "ln2": 1 + 0.1 * rng.normal(size=d),
        "fc": rng.normal(size=(d, m)) * 0.5,
        "out": rng.normal(size=(m, d)) * 0.5,
    }


def test_block_backward_matches_finite_differences():
    rng = np.random.default_rng(4)
    x, p, C = rng.normal(size=(2, 3, 4)), _params(rng), rng.normal(size=(2, 3, 4))
    y, cache = block_forward(x, p, 2)
    dx, g = block_backward(C, cache)
    assert np.allclose(dx, fd_grad(lambda v: (C * block_forward(v, p, 2)[0]).sum(), x), atol=1e-7)
    for k in p:

        def f(v, k=k):
            return (C * block_forward(x, {**p, k: v}, 2)[0]).sum()

        assert np.allclose(g[k], fd_grad(f, p[k]), atol=1e-7), k


def test_block_errors():
    rng = np.random.default_rng(4)
    p = _params(rng)
    assert raises(TypeError, lambda: block_forward(np.ones((1, 2, 4)), {"ln1": 1}, 2)).startswith(
        "p: expected a dict"
    )
    bad = {**p, "out": np.ones((7, 4))}
    assert raises(ValueError, lambda: block_forward(np.ones((1, 2, 4)), bad, 2)).startswith(
        "p: out: expected shape (8, 4)"
    )


def test_forward_from_start_and_the_step_give_the_last_rows_with_the_same_gradient():
    rng = np.random.default_rng(5)
    x, p, C = rng.normal(size=(2, 5, 4)), _params(rng), rng.normal(size=(2, 5, 4))
    y, cache = block.block_forward.core(x, p, 2)
    assert np.array_equal(y, block_forward(x, p, 2)[0])  # the checked entry runs the core
    C[:, :3] = 0.0  # the loss reads positions 3 and 4 only
    dx, g = block.block_backward.core(C, cache)
    ys, cs = block.block_forward.core(x, p, 2, start=3)
    assert ys.shape == (2, 2, 4) and np.allclose(ys, y[:, 3:], rtol=0, atol=1e-14)
    dxs, gs = block.block_backward.core(C[:, 3:], cs)
    assert np.allclose(dxs, dx, rtol=0, atol=1e-13)
    assert all(np.allclose(gs[k], g[k], rtol=0, atol=1e-13) for k in g)
    kv = np.zeros((2, 2, 2, 5, 2))  # the cached step: the prompt's last row, then one row at a time
    parts = [block.block_step(x[:, :3], p, 2, kv, 0, start=2)] + [
        block.block_step(x[:, i : i + 1], p, 2, kv, i) for i in (3, 4)
    ]
    assert np.allclose(np.concatenate(parts, axis=1), y[:, 2:], rtol=0, atol=1e-14)


def test_a_parameter_dict_is_named_by_its_type_or_its_keys_and_qkv_is_three_widths_wide():
    rng = np.random.default_rng(4)
    p, x = _params(rng), np.ones((1, 2, 4))
    keys = "('ln1', 'qkv', 'proj', 'ln2', 'fc', 'out')"
    assert raises(TypeError, lambda: block_forward(x, 3, 2)) == f"p: expected a dict with the keys {keys}, got int"
    assert (
        raises(TypeError, lambda: block_forward(x, {"ln1": 1, 2: 3}, 2))
        == f"p: expected a dict with the keys {keys}, got the keys ['2', 'ln1']"
    )
    bad, kv = {**p, "qkv": np.ones((4, 5))}, np.zeros((2, 1, 2, 4, 2))
    msg = raises(ValueError, lambda: block.block_step(x, bad, 2, kv, 0))
    assert msg == "p: qkv: expected shape (4, 12), got (4, 5)"

"""attention.py: causal self-attention's backward against central finite differences in
float64 (tolerance 1e-7, as in test_norm.py), causality, the cached step equal to the full
forward, and the trusted core on the positions start.. equal to those rows of the full map."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.nn import attention
from minirl_lm.nn.attention import attention_backward, attention_forward
from quiet import raises


def _args(seed=3, B=2, L=4, d=6):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(B, L, d)),
        rng.normal(size=(d, 3 * d)) * 0.5,
        rng.normal(size=(d, d)),
        rng.normal(size=(B, L, d)),
    )


def test_attention_backward_matches_finite_differences():
    x, Wqkv, Wo, C = _args()
    y, cache = attention_forward(x, Wqkv, Wo, 2)
    dx, dWqkv, dWo = attention_backward(C, cache)

    def f(x=x, Wqkv=Wqkv, Wo=Wo):
        return (C * attention_forward(x, Wqkv, Wo, 2)[0]).sum()

    assert np.allclose(dx, fd_grad(lambda v: f(x=v), x), atol=1e-7)
    assert np.allclose(dWqkv, fd_grad(lambda v: f(Wqkv=v), Wqkv), atol=1e-7)
    assert np.allclose(dWo, fd_grad(lambda v: f(Wo=v), Wo), atol=1e-7)


def test_attention_is_causal():
    x, Wqkv, Wo, _ = _args()
    y, _ = attention_forward(x, Wqkv, Wo, 3)
    x2 = x.copy()
    x2[:, 2:] += 1.0  # change positions 2, 3
    y2, _ = attention_forward(x2, Wqkv, Wo, 3)
    assert np.array_equal(y[:, :2], y2[:, :2]) and not np.allclose(y[:, 2:], y2[:, 2:])
    # position 0 attends only to itself: y_0 = v_0 Wo
    v0 = (x @ Wqkv)[:, 0, 12:]
    assert np.allclose(y[:, 0], v0 @ Wo, atol=1e-12)


def test_cached_step_equals_the_full_forward():
    x, Wqkv, Wo, _ = _args(L=5)
    y, _ = attention_forward(x, Wqkv, Wo, 2)
    kv = np.zeros((2, 2, 2, 5, 3))
    parts = [attention.attention_step(x[:, :3], Wqkv, Wo, 2, kv, 0)]
    parts += [attention.attention_step(x[:, i : i + 1], Wqkv, Wo, 2, kv, i) for i in (3, 4)]
    assert np.allclose(np.concatenate(parts, axis=1), y, atol=1e-12)


def test_forward_from_start_is_the_last_rows_and_its_backward_the_same_gradient():
    x, Wqkv, Wo, C = _args(L=5)
    y, cache = attention.attention_forward.core(x, Wqkv, Wo, 2)
    assert np.array_equal(y, attention_forward(x, Wqkv, Wo, 2)[0])  # the checked entry runs the core
    C[:, :3] = 0.0  # the loss reads positions 3 and 4 only
    full = attention.attention_backward.core(C, cache)
    ys, cs = attention.attention_forward.core(x, Wqkv, Wo, 2, start=3)
    assert ys.shape == (2, 2, 6) and np.allclose(ys, y[:, 3:], rtol=0, atol=1e-14)
    for g, want in zip(attention.attention_backward.core(C[:, 3:], cs), full):
        assert np.allclose(g, want, rtol=0, atol=1e-13)


def test_attention_errors():
    x, Wqkv, Wo, _ = _args()
    assert raises(ValueError, lambda: attention_forward(x, Wqkv, Wo, 4)).startswith("n_head: expected a divisor")
    assert raises(ValueError, lambda: attention_forward(x, Wqkv[:, :6], Wo, 2)) == (
        "Wqkv: expected shape (d, 3d) = (6, 18), got (6, 6)"
    )


@pytest.mark.parametrize("scale", [1.0, 20.0])  # 20: scores up to 1400, e^1400 beyond float64
def test_attention_matches_a_loop_over_heads_and_positions(scale):
    x, Wqkv, Wo, _ = _args(B=2, L=4, d=6)
    x = x * scale
    y, _ = attention_forward(x, Wqkv, Wo, 3)
    e, want = 2, np.zeros((2, 4, 6))
    for b in range(2):
        q, k, v = np.split(x[b] @ Wqkv, 3, axis=1)  # (L, d) each
        for h in range(3):
            c = slice(h * e, (h + 1) * e)
            for i in range(4):
                s = np.array([q[i, c] @ k[j, c] / np.sqrt(e) for j in range(i + 1)])
                a = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                want[b, i, c] = a @ v[: i + 1, c]
    assert np.allclose(y, want @ Wo, rtol=0, atol=1e-12 * scale)


def test_overflow_names_the_function():
    x, Wqkv, Wo, _ = _args()
    msg = raises(ValueError, lambda: attention_forward(x * 1e200, Wqkv, Wo, 2))
    assert msg.startswith("attention_forward: expected a finite y, got") and "x in [" in msg

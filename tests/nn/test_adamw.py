"""adamw.py: the AdamW step against the update written out for scalars, and its edge cases."""

import numpy as np

from minirl_lm.nn.adamw import AdamW
from quiet import raises


def test_adamw_matches_the_update_written_out():
    p = {"w": np.array([1.0, -2.0])}
    opt = AdamW(p, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.01)
    w, m, u = np.array([1.0, -2.0]), 0.0, 0.0
    for n, g in enumerate([np.array([0.5, -1.0]), np.array([0.1, 2.0]), np.array([-0.3, 0.0])], start=1):
        opt.step({"w": g})
        m = 0.9 * m + 0.1 * g
        u = 0.99 * u + 0.01 * g * g
        w = w - 0.1 * ((m / (1 - 0.9**n)) / (np.sqrt(u / (1 - 0.99**n)) + 1e-8) + 0.01 * w)
        assert np.allclose(p["w"], w, rtol=0, atol=1e-15)
    assert opt.n == 3


def test_first_step_moves_each_entry_by_lr_times_its_sign():
    p = {"a": np.zeros(3)}
    AdamW(p, lr=0.01, eps=1e-12).step({"a": np.array([3.0, -1e-3, 0.0])})
    assert np.allclose(p["a"], [-0.01, 0.01, 0.0])


def test_adamw_errors_change_nothing():
    p = {"a": np.zeros(3)}
    opt = AdamW(p)
    assert raises(ValueError, lambda: opt.step({"b": np.zeros(3)})).startswith("grads: expected the keys")
    assert raises(ValueError, lambda: opt.step({"a": np.array([1.0, np.nan, 0.0])})).startswith("grads:")
    assert opt.n == 0 and (p["a"] == 0).all()
    assert raises(TypeError, lambda: AdamW({"a": np.zeros(3, np.float32)})).startswith("params:")
    assert raises(ValueError, lambda: AdamW(p, beta1=1.5)).startswith("beta1:")

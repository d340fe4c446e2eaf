"""value.py and the model's value head: backward against central finite differences in float64.

h = 1e-6: truncation O(h^2 |f'''|) ~ 1e-11 and rounding ~ 1e-10 |f|: tolerance 1e-7 absolute on
gradients of order 1. The whole model's check drives both heads at once (a loss
sum C1 * logp + C2 * values), so it checks that the trunk adds the two gradients."""

import numpy as np

from gradcheck import fd_grad
from minirl_lm.nn import value
from minirl_lm.nn.model import Transformer
from minirl_lm.nn.value import value_backward, value_forward
from quiet import raises


def test_value_head_backward_matches_finite_differences():
    rng = np.random.default_rng(2)
    h, w, c, C = rng.normal(size=(2, 3, 4)), rng.normal(size=4), rng.normal(size=1), rng.normal(size=(2, 3))
    v, cache = value_forward(h, w, c)
    dh, dw, dc = value_backward(C, cache)
    assert np.allclose(v, h @ w + c[0])
    assert np.allclose(dh, fd_grad(lambda x: (C * value_forward(x, w, c)[0]).sum(), h), atol=1e-7)
    assert np.allclose(dw, fd_grad(lambda x: (C * value_forward(h, x, c)[0]).sum(), w), atol=1e-7)
    assert np.allclose(dc, fd_grad(lambda x: (C * value_forward(h, w, x)[0]).sum(), c), atol=1e-7)


PROMPT = np.array([[1, 2], [3, 0], [4, 4]])
TOKENS = np.array([[0, 1, 2], [2, 2, 4], [1, 3, 0]])
MASK = np.array([[1.0, 1, 1], [1, 1, 0], [1, 0, 0]])


def _tiny():
    m = Transformer(5, 4, 2, 2, 6, np.random.default_rng(5), init_scale=0.5, value_head=True)
    rng = np.random.default_rng(7)  # a value head away from its zero start
    m.params["vhead"][...], m.params["vbias"][...] = rng.normal(size=4), rng.normal(size=1)
    return m


def test_shared_trunk_gradient_is_the_sum_of_both_heads():
    model = _tiny()
    rng = np.random.default_rng(6)
    C1, C2 = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    grads = model.backward(PROMPT, TOKENS, MASK, C1, C2)
    only_logp, only_v = model.backward(PROMPT, TOKENS, MASK, C1), model.backward(PROMPT, TOKENS, MASK, 0 * C1, C2)
    for name, p in model.params.items():

        def f(x, name=name):
            m = model.copy()
            m.params[name][...] = x
            lp, v = m.logp_values(PROMPT, TOKENS, MASK)
            return float((C1 * lp).sum() + (C2 * v).sum())

        assert np.allclose(grads[name], fd_grad(f, p.copy()), atol=1e-7), name
        assert np.allclose(grads[name], only_logp[name] + only_v[name], atol=1e-12), name
    assert (only_logp["vhead"] == 0).all() and (only_v["head"] == 0).all()


def test_values_sit_on_the_states_and_start_at_zero():
    model = _tiny()
    lp, v = model.logp_values(PROMPT, TOKENS, MASK)
    assert np.array_equal(lp, model.logp(PROMPT, TOKENS, MASK)[0])
    assert (v[MASK == 0] == 0).all()
    # causal: v(s_t) reads x and y_<t only, so changing the last token moves no value
    t2 = TOKENS.copy()
    t2[:, 2] = (t2[:, 2] + 1) % 5
    assert np.array_equal(model.logp_values(PROMPT, t2, MASK)[1], v)
    fresh = Transformer(5, 4, 2, 2, 6, np.random.default_rng(5), init_scale=0.5, value_head=True)
    plain = Transformer(5, 4, 2, 2, 6, np.random.default_rng(5), init_scale=0.5)
    assert (fresh.logp_values(PROMPT, TOKENS, MASK)[1] == 0).all()
    assert all(np.array_equal(plain.params[k], fresh.params[k]) for k in plain.params)


def test_value_errors():
    plain = Transformer(5, 4, 2, 1, 6, np.random.default_rng(0))
    assert raises(ValueError, lambda: plain.logp_values(PROMPT, TOKENS, MASK)).startswith("model: expected")
    assert raises(ValueError, lambda: plain.backward(PROMPT, TOKENS, MASK, MASK, MASK)).startswith("dvalues:")
    assert raises(ValueError, lambda: _tiny().backward(PROMPT, TOKENS, MASK, MASK, np.ones(3))).startswith(
        "dvalues:"
    )
    assert raises(
        TypeError, lambda: Transformer(5, 4, 2, 1, 6, np.random.default_rng(0), value_head=1)
    ).startswith("value_head:")
    assert raises(ValueError, lambda: value_forward(np.ones((1, 2, 3)), np.ones(2), np.ones(1))).startswith("w:")
    _, cache = value_forward(np.ones((1, 2, 3)), np.ones(3), np.ones(1))
    assert raises(ValueError, lambda: value_backward(np.ones((1, 3)), cache)).startswith("dy:")


def test_the_checked_entries_run_the_trusted_cores():
    rng = np.random.default_rng(9)
    h, w, c, C = rng.normal(size=(2, 3, 4)), rng.normal(size=4), rng.normal(size=1), rng.normal(size=(2, 3))
    v, cache = value.value_forward.core(h, w, c)
    assert np.array_equal(v, value_forward(h, w, c)[0])
    for a, b in zip(value.value_backward.core(C, cache), value_backward(C, value_forward(h, w, c)[1])):
        assert np.array_equal(a, b)


def test_value_backward_overflow_names_the_function():
    _, cache = value_forward(np.full((1, 2, 3), 1e200), np.ones(3), np.zeros(1))
    msg = raises(ValueError, lambda: value_backward(np.full((1, 2), 1e200), cache))
    assert msg.startswith("value_backward: expected a finite dw") and "dy in [1e+200, 1e+200]" in msg

"""model.py: the whole model's gradient against central finite differences on a tiny
configuration (V = 5, d = 4, 2 heads, 2 blocks), float64, tolerance 1e-7 absolute (the loss is
O(1): truncation ~1e-11, rounding ~1e-10); the interface `TabularPolicy` has, driven by an
objective's `(loss, dloss_dlogp)` unchanged."""

import numpy as np

from gradcheck import fd_grad
from minirl_lm.nn.model import Transformer
from minirl_lm.pg.clip import clipped_surrogate
from quiet import raises


def _tiny(seed=5, n_layer=2):
    return Transformer(
        V=5, d=4, n_head=2, n_layer=n_layer, max_len=6, rng=np.random.default_rng(seed), init_scale=0.5
    )


PROMPT = np.array([[1, 2], [3, 0], [4, 4]])
TOKENS = np.array([[0, 1, 2], [2, 2, 4], [1, 3, 0]])
MASK = np.array([[1.0, 1, 1], [1, 1, 0], [1, 0, 0]])


def test_whole_model_gradient_matches_finite_differences():
    model = _tiny()
    C = np.random.default_rng(6).normal(size=(3, 3))
    grads = model.backward(PROMPT, TOKENS, MASK, C)

    for name, p in model.params.items():

        def f(v, name=name):
            m = model.copy()
            m.params[name][...] = v
            return float((C * m.logp(PROMPT, TOKENS, MASK)[0]).sum())

        assert grads[name].shape == p.shape
        assert np.allclose(grads[name], fd_grad(f, p.copy()), atol=1e-7), name
    assert (grads["wpe"][4:] == 0).all()  # the input has P + T - 1 = 4 positions
    assert set(grads) == set(model.params)


def test_logp_is_a_log_softmax_and_zero_at_padding():
    model = _tiny()
    lp, seq = model.logp(PROMPT, TOKENS, MASK)
    assert (lp[MASK == 0] == 0).all() and (lp[MASK == 1] < 0).all()
    assert np.allclose(seq, lp.sum(1))
    # the V continuations of one prefix sum to probability 1
    total = sum(np.exp(model.logp(PROMPT[:1], np.array([[0, 1, v]]), np.ones((1, 3)))[0][0, 2]) for v in range(5))
    assert abs(total - 1) < 1e-12
    # causal: a later token does not change an earlier log-prob
    t2 = TOKENS.copy()
    t2[:, 2] = (t2[:, 2] + 1) % 5
    assert np.array_equal(model.logp(PROMPT, t2, MASK)[0][:, :2], lp[:, :2])


def test_an_objective_drives_the_model_unchanged():
    model, old = _tiny(n_layer=1), _tiny(n_layer=1)
    lp_old = old.logp(PROMPT, TOKENS, MASK)[0]
    adv = np.array([1.0, -0.5, 0.25])
    loss, g = clipped_surrogate(model.logp(PROMPT, TOKENS, MASK)[0], lp_old, adv, MASK)
    grads = model.backward(PROMPT, TOKENS, MASK, g)

    def f(v):
        m = model.copy()
        m.params["head"][...] = v
        return clipped_surrogate(m.logp(PROMPT, TOKENS, MASK)[0], lp_old, adv, MASK)[0]

    assert np.allclose(grads["head"], fd_grad(f, model.params["head"].copy()), atol=1e-7)


def test_copy_is_independent_and_init_is_seeded():
    a, b = _tiny(), _tiny()
    assert all(np.array_equal(a.params[k], b.params[k]) for k in a.params)
    c = a.copy()
    c.params["head"] += 1
    assert not np.array_equal(a.params["head"], c.params["head"])
    assert _tiny(n_layer=0).params.keys() == {"wte", "wpe", "lnf", "head"}


def test_model_errors():
    model = _tiny()
    assert raises(ValueError, lambda: model.logp(PROMPT, np.ones((3, 6), int), np.ones((3, 6)))).startswith(
        "tokens: expected P + T - 1 <= max_len"
    )
    assert raises(ValueError, lambda: model.logp(PROMPT + 5, TOKENS, MASK)).startswith("prompt: expected ids < 5")
    assert raises(ValueError, lambda: model.backward(PROMPT, TOKENS, MASK, np.ones((3, 2)))).startswith("dlogp:")
    assert raises(ValueError, lambda: Transformer(5, 6, 4, 1, 4, np.random.default_rng(0))).startswith("n_head:")
    assert raises(TypeError, lambda: Transformer(5, 4, 2, 1, 4, 0)).startswith("rng:")


def test_sizes_are_bounded_and_read_before_any_draw():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for kw, name in [(dict(n_layer=10**12), "n_layer"), (dict(max_len=10**12), "max_len"), (dict(V=2**63), "V")]:
        args = dict(V=5, d=4, n_head=2, n_layer=1, max_len=6, rng=rng) | kw
        assert raises(ValueError, lambda args=args: Transformer(**args)).startswith(
            f"{name}: expected a model of at most"
        )
        assert rng.bit_generator.state == state  # nothing drawn
    assert raises(ValueError, lambda: Transformer(5, 4, 2, 1, 6, rng, init_scale=1e308)).startswith("init_scale:")
    assert rng.bit_generator.state == state


def test_a_gradient_beyond_float64_names_the_method_not_a_callback():
    model = _tiny()
    msg = raises(ValueError, lambda: model.backward(PROMPT, TOKENS, MASK, np.full((3, 3), 1e308)))
    assert msg.startswith("backward: expected a finite grads") and "dlogp in [1e+308, 1e+308]" in msg
    # the LM head runs on dlogp / 2^k and is scaled back: the same numbers bit for bit
    C = np.random.default_rng(1).normal(size=(3, 3))
    a, b = model.backward(PROMPT, TOKENS, MASK, C), model.backward(PROMPT, TOKENS, MASK, C * 2.0**40)
    assert all(np.array_equal(a[k] * 2.0**40, b[k]) for k in a)

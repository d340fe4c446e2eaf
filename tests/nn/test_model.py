"""model.py: the whole model's gradient against central finite differences on a tiny
configuration (V = 5, d = 4, 2 heads, 2 blocks), float64, tolerance 1e-7 absolute (the loss is
O(1): truncation ~1e-11, rounding ~1e-10); the interface `TabularPolicy` has, driven by an
objective's `(loss, dloss_dlogp)` unchanged."""

import numpy as np
import pytest

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


@pytest.mark.parametrize("n_layer", [2, 0])  # 0: no block, the embeddings straight into the head
def test_whole_model_gradient_matches_finite_differences(n_layer):
    model = _tiny(n_layer=n_layer)
    C = np.random.default_rng(6).normal(size=(3, 3))
    lp = model.logp(PROMPT, TOKENS, MASK)[0]
    assert lp.shape == (3, 3) and (lp[MASK == 1] < 0).all()
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


def test_the_value_head_reads_the_hidden_states_and_its_gradient_reaches_the_trunk():
    model = Transformer(5, 4, 2, 1, 6, np.random.default_rng(5), init_scale=0.5, value_head=True)
    vhead, vbias = model.params["vhead"], model.params["vbias"]
    assert np.array_equal(vhead, np.zeros(4)) and np.array_equal(vbias, np.zeros(1))
    rng = np.random.default_rng(7)  # a value head away from its zero start
    model.params["vhead"][...], model.params["vbias"][...] = rng.normal(size=4), rng.normal(size=1)
    lp, v = model.logp_values(PROMPT, TOKENS, MASK)
    h = model.hidden(np.concatenate([PROMPT, TOKENS[:, :-1]], axis=1), start=1)[0]  # (3, 3, 4)
    assert np.array_equal(lp, model.logp(PROMPT, TOKENS, MASK)[0])
    assert np.allclose(v, (h @ model.params["vhead"] + model.params["vbias"][0]) * MASK, rtol=0, atol=1e-14)
    C1, C2 = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    grads = model.backward(PROMPT, TOKENS, MASK, C1, C2)
    for name in ("vhead", "vbias", "lnf", "h0.qkv", "wte"):

        def f(x, name=name):
            m = model.copy()
            m.params[name][...] = x
            lp, v = m.logp_values(PROMPT, TOKENS, MASK)
            return float((C1 * lp).sum() + (C2 * v).sum())

        assert np.allclose(grads[name], fd_grad(f, model.params[name].copy()), atol=1e-7), name
    plain = model.backward(PROMPT, TOKENS, MASK, C1)  # dvalues None: the value head gets 0
    assert (plain["vhead"] == 0).all() and (plain["vbias"] == 0).all()
    assert plain["vhead"].shape == (4,) and plain["vbias"].shape == (1,)
    assert not np.allclose(plain["lnf"], grads["lnf"])
    no_head = Transformer(5, 4, 2, 1, 6, np.random.default_rng(5), init_scale=0.5)
    no_head.params.update({k: model.params[k] for k in no_head.params})
    assert all(np.array_equal(plain[k], no_head.backward(PROMPT, TOKENS, MASK, C1)[k]) for k in no_head.params)
    msg = raises(ValueError, lambda: no_head.logp_values(PROMPT, TOKENS, MASK))
    assert msg == "model: expected a Transformer built with value_head=True, got one without a value head"
    msg = raises(ValueError, lambda: no_head.backward(PROMPT, TOKENS, MASK, C1, C2))
    assert msg == "dvalues: expected None for a Transformer without a value head, got an array"


def test_init_draws_the_documented_normals_in_order():
    for n_layer in (1, 2):
        model = Transformer(5, 4, 2, n_layer, 6, np.random.default_rng(3), init_scale=0.5, value_head=True)
        rng, deep = np.random.default_rng(3), 0.5 / np.sqrt(2 * n_layer)
        want = {"wte": rng.normal(0, 0.5, (5, 4)), "wpe": rng.normal(0, 0.5, (6, 4))}
        for layer in range(n_layer):
            want[f"h{layer}.ln1"] = np.ones(4)
            want[f"h{layer}.qkv"] = rng.normal(0, 0.5, (4, 12))
            want[f"h{layer}.proj"] = rng.normal(0, deep, (4, 4))
            want[f"h{layer}.ln2"] = np.ones(4)
            want[f"h{layer}.fc"] = rng.normal(0, 0.5, (4, 16))
            want[f"h{layer}.out"] = rng.normal(0, deep, (16, 4))
        want.update(lnf=np.ones(4), head=rng.normal(0, 0.5, (5, 4)), vhead=np.zeros(4), vbias=np.zeros(1))
        assert model.params.keys() == want.keys()
        assert all(np.array_equal(model.params[k], want[k]) for k in want)


def test_the_trunk_and_the_blocks_name_their_bounds():
    model = _tiny()
    seq = np.array([[1, 2, 0, 1, 2, 4]])  # max_len = 6 positions: accepted
    h, cache = model.hidden(seq, start=5)
    assert h.shape == (1, 1, 4) and cache[0] == "trunk" and cache[1] == (1, 1, 4)
    assert np.allclose(h, model.hidden(seq)[0][:, 5:], rtol=0, atol=1e-14)
    assert raises(ValueError, lambda: model.hidden(np.zeros((1, 7), int))) == (
        "seq: expected at most max_len = 6 positions, got 7"
    )
    assert raises(ValueError, lambda: model.hidden(seq, start=6)) == "start: expected a position < L = 6, got 6"
    assert raises(ValueError, lambda: model.hidden(seq + 1)) == "seq: expected ids < 5, got max 5"
    assert raises(ValueError, lambda: model.block(2)) == "layer: expected a block index < n_layer = 2, got 2"
    p = model.block(1)
    assert list(p) == ["ln1", "qkv", "proj", "ln2", "fc", "out"]
    assert all(p[k] is model.params[f"h1.{k}"] for k in p)  # views, not copies


def test_a_batch_may_fill_max_len_and_its_ids_are_named():
    model = _tiny()
    tokens = np.array([[0, 1, 2, 3, 4]] * 3)  # P + T - 1 = 6 = max_len: accepted
    assert model.logp(PROMPT, tokens, np.ones((3, 5)))[0].shape == (3, 5)
    msg = raises(ValueError, lambda: model.logp(PROMPT, TOKENS + 1, MASK))
    assert msg == "tokens: expected ids < 5, got max 5"
    msg = raises(ValueError, lambda: model.logp(PROMPT, np.ones((3, 6), int), np.ones((3, 6))))
    assert msg == "tokens: expected P + T - 1 <= max_len = 6, got 2 + 6 - 1"


class _Refusing(np.random.Generator):
    """A generator that stops at its first draw: the sizes were accepted."""

    def normal(self, *args, **kwargs):
        raise LookupError("drawn")


def test_the_size_bound_counts_every_parameter_and_admits_exactly_max_params():
    rng = np.random.default_rng(0)
    cases = [
        (dict(n_layer=10**12), "n_layer", 200000000000080),
        (dict(max_len=10**12), "max_len", 4000000000256),
        (dict(V=2**63), "V", 2 * 2**63 * 4 + 24 + 200 + 16),
    ]
    for kw, name, total in cases:
        args = dict(V=5, d=4, n_head=2, n_layer=1, max_len=6, rng=rng) | kw
        assert raises(ValueError, lambda args=args: Transformer(**args)) == (
            f"{name}: expected a model of at most 134217728 parameters, got {total} "
            f"(V = {args['V']}, d = 4, n_layer = {args['n_layer']}, max_len = {args['max_len']})"
        )
    # d's own parameters (lnf and the gains) weigh most only at V = 1, max_len = 1, no block
    assert raises(ValueError, lambda: Transformer(1, 2**25, 1, 0, 1, rng)) == (
        "d: expected a model of at most 134217728 parameters, got 234881024 "
        "(V = 1, d = 33554432, n_layer = 0, max_len = 1)"
    )
    # 2 V d + max_len d + 4 d = 2 (2^26 - 3) + 2 + 4 = 2^27 exactly: accepted (the first draw is reached)
    stop = _Refusing(np.random.PCG64(0))
    assert raises(LookupError, lambda: Transformer(2**26 - 3, 1, 1, 0, 2, stop)) == "drawn"
    assert raises(ValueError, lambda: Transformer(2**26 - 2, 1, 1, 0, 2, stop)).startswith(
        "V: expected a model of at most 134217728 parameters, got 134217730 "
    )

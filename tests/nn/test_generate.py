"""generate.py: the cached sampler equal to recomputation, its log-probs equal to the model's,
its draws following the model's distribution, and eos padding."""

import numpy as np

from minirl_lm.nn.generate import generate, generate_recompute
from minirl_lm.nn.model import Transformer
from quiet import raises


def _model():
    return Transformer(V=6, d=8, n_head=2, n_layer=2, max_len=9, rng=np.random.default_rng(7), init_scale=0.5)


def test_cache_equals_recomputation():
    model, prompt = _model(), np.array([[1, 2, 3], [4, 5, 0]])
    a = generate(model, prompt, 6, np.random.default_rng(8))
    b = generate_recompute(model, prompt, 6, np.random.default_rng(8))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert np.allclose(a[2], b[2], rtol=0, atol=1e-12)
    lp = model.logp(prompt, a[0], a[1])[0]
    assert np.allclose(lp, a[2], rtol=0, atol=1e-12)


def test_draws_follow_the_model():
    model = _model()
    prompt = np.tile([[1, 2]], (4000, 1))
    y, _, _ = generate(model, prompt, 1, np.random.default_rng(9))
    probs = np.exp([model.logp(prompt[:1], np.array([[v]]), np.ones((1, 1)))[0][0, 0] for v in range(6)])
    freq = np.bincount(y[:, 0], minlength=6) / 4000
    assert np.abs(freq - probs).max() < 4 * np.sqrt(0.25 / 4000)  # 4 standard errors at most


def test_eos_pads_the_rest():
    model = _model()
    y, mask, lp = generate(model, np.array([[1, 2]] * 50), 5, np.random.default_rng(10), eos=0)
    first = np.argmax(np.concatenate([y == 0, np.ones((50, 1), bool)], axis=1), axis=1)
    for b in range(50):
        assert (mask[b, : first[b] + 1][:5] == 1).all() and (mask[b, first[b] + 1 :] == 0).all()
        assert (y[b, first[b] :] == 0).all() if first[b] < 5 else True
    assert (lp[mask == 0] == 0).all()


def test_generate_errors():
    model, rng = _model(), np.random.default_rng(0)
    assert raises(ValueError, lambda: generate(model, np.ones((1, 3), int), 8, rng)).startswith("T: expected")
    assert raises(TypeError, lambda: generate(None, np.ones((1, 3), int), 2, rng)).startswith("model:")
    assert raises(TypeError, lambda: generate_recompute(model, np.ones((1, 3), int), 2, 5)).startswith("rng:")


def test_each_row_draws_from_its_own_distribution_by_inversion():
    model = _model()
    prompt = np.array([[1, 2], [4, 5], [0, 3], [5, 5]] * 50)  # rows of different distributions
    y, _, lp = generate(model, prompt, 1, np.random.default_rng(3))
    U = np.random.default_rng(3).random(len(prompt))  # the one uniform per row of the step
    V = np.arange(6)
    probs = np.exp(
        np.stack(
            [model.logp(prompt, np.full((len(prompt), 1), v), np.ones((len(prompt), 1)))[0][:, 0] for v in V], 1
        )
    )
    want = (np.cumsum(probs, axis=1) <= U[:, None]).sum(axis=1)  # y = #{v : F_v <= U}
    assert np.array_equal(y[:, 0], want) and len(set(want.tolist())) > 1
    assert np.allclose(lp[:, 0], np.log(probs[np.arange(len(prompt)), want]), rtol=0, atol=1e-12)


def test_logits_of_order_1e4_draw_the_argmax_of_each_row_with_log_prob_zero():
    model = _model()
    model.params["head"] *= 1e4  # row maxima thousands apart: each row is shifted by its own max
    prompt = np.array([[1, 2, 3], [4, 5, 0], [2, 2, 2]])
    for sample in (generate, generate_recompute):
        y, mask, lp = sample(model, prompt, 3, np.random.default_rng(1))
        assert (lp == 0).all() and (model.logp(prompt, y, mask)[0] == 0).all()


def test_a_draw_at_the_longest_prompt_and_arguments_named_exactly():
    model, rng = _model(), np.random.default_rng(0)
    assert generate(model, np.ones((2, 3), int), 7, rng)[0].shape == (2, 7)  # P + T - 1 = max_len = 9
    assert raises(TypeError, lambda: generate("model", np.ones((1, 3), int), 2, rng)) == (
        "model: expected a minirl_lm.nn.model.Transformer, got str"
    )
    assert raises(ValueError, lambda: generate(model, np.ones((1, 3), int), 2, rng, eos=6)) == (
        "eos: expected a token id < V = 6, got 6"
    )
    assert (
        raises(ValueError, lambda: generate(model, np.array([[1, 6]]), 2, rng))
        == "prompt: expected ids < 6, got max 6"
    )


def test_a_model_driven_to_nan_is_named_and_leaves_the_generator_as_it_was():
    model = _model()
    model.params["head"][0, 0] = np.nan
    for sample in (generate, generate_recompute):
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        assert raises(ValueError, lambda s=sample: s(model, np.ones((1, 3), int), 2, rng)) == (
            "generate: expected a finite logp, got NaN (beyond float64) from params in [nan, nan]"
        )
        assert rng.bit_generator.state == state


def test_recomputation_pads_after_eos_as_the_cache_does():
    model, prompt = _model(), np.array([[1, 2]] * 20)
    a = generate(model, prompt, 5, np.random.default_rng(4), eos=0)
    b = generate_recompute(model, prompt, 5, np.random.default_rng(4), eos=0)
    assert (a[1] == 0).any() and np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert np.allclose(a[2], b[2], rtol=0, atol=1e-12)

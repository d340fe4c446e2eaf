"""The NumPy reference of the one primitive: values, hand-derived gradient, edge cases, bad input.

Gradient check: central finite differences in float64, step h = 1e-6, absolute tolerance 1e-8
(truncation ~h^2 and rounding ~1e-16 / h are both far below it for O(1) logits).
"""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.core.logprob import log_softmax, masked_mean, masked_sum, token_logp, token_logp_backward

H, ATOL = 1e-6, 1e-8
ROOT = Path(__file__).resolve().parents[2]


def batch(rng, B, T, V, lengths=None):
    logits = rng.standard_normal((B, T, V)) * 2.0  # (B, T, V)
    tokens = rng.integers(0, V, (B, T))  # (B, T)
    if lengths is None:
        lengths = rng.integers(0, T + 1, B)
    mask = (np.arange(T) < np.asarray(lengths)[:, None]).astype(float)  # (B, T)
    return logits, tokens, mask


def numeric_grad(logits, tokens, mask, dlogp):
    """d/dlogits of sum_bt dlogp[b, t] * logp[b, t] by central differences."""
    g = np.zeros_like(logits)
    for i in np.ndindex(logits.shape):
        zp, zm = logits.copy(), logits.copy()
        zp[i] += H
        zm[i] -= H
        fp = (dlogp * token_logp(zp, tokens, mask)[0]).sum()
        fm = (dlogp * token_logp(zm, tokens, mask)[0]).sum()
        g[i] = (fp - fm) / (2 * H)
    return g


# ---------------------------------------------------------------- values


def test_log_softmax_matches_definition():
    z = np.random.default_rng(0).standard_normal((3, 4, 7))
    ref = np.log(np.exp(z) / np.exp(z).sum(-1, keepdims=True))
    np.testing.assert_allclose(log_softmax(z), ref, rtol=0, atol=1e-14)


def test_token_logp_gathers_and_masks():
    rng = np.random.default_rng(1)
    logits, tokens, mask = batch(rng, 2, 5, 8, lengths=[5, 3])
    logp, seq_logp = token_logp(logits, tokens, mask)
    full = log_softmax(logits)
    for b in range(2):
        for t in range(5):
            want = full[b, t, tokens[b, t]] if mask[b, t] else 0.0
            assert logp[b, t] == want
    assert np.all(logp[1, 3:] == 0.0)
    assert np.array_equal(seq_logp, masked_sum(logp, mask))


def test_sum_and_mean_differ_by_length():
    x = np.array([[-1.0, -2.0, -3.0], [-4.0, 7.0, 0.0]])
    mask = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert masked_sum(x, mask).tolist() == [-6.0, -4.0]
    assert masked_mean(x, mask).tolist() == [-2.0, -4.0]
    assert masked_mean(x, np.zeros((2, 3))).tolist() == [0.0, 0.0]  # length 0: nothing


def test_padding_ignores_neginf_in_masked_sum():
    x = np.array([[-1.0, -np.inf]])
    assert masked_sum(x, np.array([[1.0, 0.0]]))[0] == -1.0


# ---------------------------------------------------------------- gradient


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_backward_finite_differences(seed):
    rng = np.random.default_rng(seed)
    logits, tokens, mask = batch(rng, 3, 4, 5)
    dlogp = rng.standard_normal((3, 4))
    got = token_logp_backward(logits, tokens, mask, dlogp)
    want = numeric_grad(logits, tokens, mask, dlogp)
    assert np.abs(got - want).max() < ATOL
    assert np.all(got[mask == 0] == 0.0)


def test_backward_with_repeated_token_and_padding_dlogp_ignored():
    rng = np.random.default_rng(3)
    logits, tokens, mask = batch(rng, 2, 3, 4, lengths=[3, 1])
    dlogp = rng.standard_normal((2, 3))
    dlogp2 = dlogp.copy()
    dlogp2[1, 1:] = 1e6  # padding entries of dlogp must not matter
    a = token_logp_backward(logits, tokens, mask, dlogp)
    b = token_logp_backward(logits, tokens, mask, dlogp2)
    assert np.array_equal(a, b)
    assert np.abs(a - numeric_grad(logits, tokens, mask, dlogp)).max() < ATOL


# ---------------------------------------------------------------- extreme logits


def test_large_logits_finite_and_exact():
    logits = np.full((1, 2, 4), 1e4)
    logits[0, 1, 2] += 1.0
    tokens = np.array([[0, 2]])
    logp, seq = token_logp(logits, tokens, np.ones((1, 2)))
    assert logp[0, 0] == pytest.approx(-np.log(4), abs=1e-14)
    assert logp[0, 1] == pytest.approx(1 - np.log(3 + np.e), abs=1e-14)
    g = token_logp_backward(logits, tokens, np.ones((1, 2)), np.ones((1, 2)))
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g.sum(-1), 0.0, atol=1e-15)


def test_neginf_logits():
    logits = np.array([[[0.0, -np.inf, 1.0], [-np.inf, 2.0, -np.inf]]])
    mask = np.ones((1, 2))
    logp, seq = token_logp(logits, np.array([[0, 1]]), mask)
    assert logp[0, 0] == pytest.approx(-np.log(1 + np.e), abs=1e-15)
    assert logp[0, 1] == 0.0  # the only possible token
    # a gathered -inf token: log-prob -inf, gradient finite (p_y = 0, so dlogp * (1 - 0))
    logp, seq = token_logp(logits, np.array([[1, 1]]), mask)
    assert logp[0, 0] == -np.inf and seq[0] == -np.inf
    g = token_logp_backward(logits, np.array([[1, 1]]), mask, np.array([[2.0, 1.0]]))
    assert not np.isnan(g).any()
    assert g[0, 0, 1] == 2.0
    np.testing.assert_allclose(g[0, 0], [-2 / (1 + np.e), 2.0, -2 * np.e / (1 + np.e)])
    assert np.all(g[0, 1] == 0.0)  # p = onehot: zero gradient


# ---------------------------------------------------------------- properties


@st.composite
def batches(draw):
    B, T, V = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 7))
    seed = draw(st.integers(0, 2**32 - 1))
    lengths = draw(st.lists(st.integers(0, T), min_size=B, max_size=B))
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0, 1e4]))
    logits, tokens, mask = batch(np.random.default_rng(seed), B, T, V, lengths)
    return logits * scale, tokens, mask


@settings(max_examples=60, deadline=None)
@given(batches())
def test_properties(args):
    logits, tokens, mask = args
    logp, seq = token_logp(logits, tokens, mask)
    assert np.all(logp[mask == 0] == 0.0)
    assert np.all(logp <= 0.0)
    assert np.array_equal(seq, masked_sum(logp, mask))
    np.testing.assert_allclose(np.exp(log_softmax(logits)).sum(-1), 1.0, rtol=1e-13)
    dlogp = np.random.default_rng(0).standard_normal(mask.shape)
    g = token_logp_backward(logits, tokens, mask, dlogp)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g.sum(-1), 0.0, atol=1e-12 * np.abs(dlogp).max())
    assert np.all(g[mask == 0] == 0.0)


@settings(max_examples=15, deadline=None)
@given(batches())
def test_properties_finite_differences(args):
    logits, tokens, mask = args
    logits = logits / np.maximum(np.abs(logits).max(), 1.0) * 3.0  # O(1) for differences
    dlogp = np.random.default_rng(1).standard_normal(mask.shape)
    got = token_logp_backward(logits, tokens, mask, dlogp)
    assert np.abs(got - numeric_grad(logits, tokens, mask, dlogp)).max() < ATOL


# ---------------------------------------------------------------- bad input


def good():
    logits, tokens, mask = batch(np.random.default_rng(0), 2, 3, 4, lengths=[3, 2])
    return logits, tokens, mask


def bad_cases():
    L, Y, M = good()
    nan, pinf, dead = L.copy(), L.copy(), L.copy()
    nan[0, 0, 0] = np.nan
    pinf[1, 1, 1] = np.inf
    dead[1, 2, :] = -np.inf
    big, neg = Y.copy(), Y.copy()
    big[0, 1] = 4
    neg[1, 0] = -1
    return [
        ("logits", ValueError, (L[0], Y, M)),  # wrong ndim
        ("logits", TypeError, ("abc", Y, M)),
        ("logits", ValueError, (nan, Y, M)),
        ("logits", ValueError, (pinf, Y, M)),
        ("logits", ValueError, (dead, Y, M)),  # all -inf row
        ("tokens", ValueError, (L, Y[:, :2], M)),  # mismatched shapes
        ("tokens", TypeError, (L, Y.astype(float), M)),  # non-integer tokens
        ("tokens", ValueError, (L, big, M)),  # token >= V
        ("tokens", ValueError, (L, neg, M)),  # negative token
        ("mask", ValueError, (L, Y, M[:1])),
        ("mask", ValueError, (L, Y, M * 0.5)),  # not 0/1
        ("mask", ValueError, (L, Y, M - 2.0)),  # not 0/1
    ]


@pytest.mark.parametrize("name,exc,args", bad_cases())
def test_bad_input_forward(name, exc, args):
    with pytest.raises(exc, match=f"^{name}:"):
        token_logp(*args)


@pytest.mark.parametrize("name,exc,args", bad_cases())
def test_bad_input_backward(name, exc, args):
    with pytest.raises(exc, match=f"^{name}:"):
        token_logp_backward(*args, np.zeros((2, 3)))


@pytest.mark.parametrize(
    "dlogp,exc",
    [
        (np.zeros((2, 4)), ValueError),
        (np.zeros(2), ValueError),
        (np.full((2, 3), np.nan), ValueError),
        (np.full((2, 3), -np.inf), ValueError),
        ("x", TypeError),
    ],
)
def test_bad_dlogp(dlogp, exc):
    with pytest.raises(exc, match="^dlogp:"):
        token_logp_backward(*good(), dlogp)


def test_bad_input_helpers():
    with pytest.raises(ValueError, match="^logits:"):
        log_softmax(np.array([0.0, -np.inf, np.nan]))
    with pytest.raises(ValueError, match="^logits:"):
        log_softmax(np.full((2, 3), -np.inf))
    with pytest.raises(ValueError, match="^logits:"):
        log_softmax(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="^mask:"):
        masked_sum(np.zeros((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="^x:"):
        masked_mean(np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="^x:"):
        masked_sum(np.full((1, 2), np.inf), np.ones((1, 2)))


# ---------------------------------------------------------------- examples/logprob.py as a program


def test_example_runs_and_prints_what_the_page_claims():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "logprob.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    diff = float(re.search(r"max \|seq_logp - masked sum of token log-probs\| = (\S+)", out).group(1))
    assert diff == 0.0 or diff < 1e-12
    kernel = float(re.search(r"kernels.dense_logp vs NumPy: max abs difference (\S+)", out).group(1))
    assert kernel < 1e-12
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+(-?[0-9.]+)\s+(-?[0-9.]+)$", out, re.M)
    assert [(int(b), int(n)) for b, n, _, _ in rows] == [(0, 5), (1, 3)]
    for _, n, summed, mean in rows:
        assert float(summed) != float(mean)  # sum and mean differ
        assert abs(float(summed) / int(n) - float(mean)) < 1e-3  # by the length (3 decimals)


def test_example_bad_seed_is_a_usage_error():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "logprob.py"), "--seed", "-1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--seed" in proc.stderr


def test_a_token_beyond_the_vocabulary_is_named_with_V_not_T():
    logits, mask = np.zeros((1, 2, 3)), np.ones((1, 2))  # T = 2, V = 3
    for f, args in ((token_logp, ()), (token_logp_backward, (np.ones((1, 2)),))):
        msg = str(pytest.raises(ValueError, f, logits, np.array([[0, 3]]), mask, *args).value)
        assert msg == "tokens: expected ids in [0, 3) (V, the logits' last axis), got 3"

"""kernels/tabular.py and its entries: equal to the NumPy twins (logprob.token_logp on
theta[states]; logprob.token_logp_backward scattered into rows with np.add.at), the per-token
forms too; unvisited rows; the digits at 1e4; a gathered -inf logit; the checks read only what the
core touches (a bad unvisited row is not an error) and the guard catches every non-finite dtheta."""

import numpy as np
import pytest
from kernel_cases import CASES, RTOL, case, rel_err

from minirl_lm import kernels as K
from minirl_lm.core.logprob import token_logp, token_logp_backward
from quiet import raises


def scatter_twin(theta, states, tokens, mask, w):
    d = token_logp_backward(theta[states], tokens, mask, w)  # (B, T, V)
    dtheta = np.zeros_like(theta)  # (S, V)
    np.add.at(dtheta, states, d)
    return dtheta


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("kernel", [K.tabular_logp, K.tabular_logp_per_token])
def test_tabular_logp(kernel, kw):
    theta, _, states, tokens, mask, _ = case(**kw)
    logp, seq = kernel(theta, states, tokens, mask)
    ref_logp, ref_seq = token_logp(theta[states], tokens, mask)
    assert rel_err(logp, ref_logp) <= RTOL and rel_err(seq, ref_seq) <= RTOL
    assert np.all(logp[mask == 0] == 0.0)


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("kernel", [K.tabular_backward, K.tabular_backward_per_token])
def test_tabular_backward(kernel, kw):
    theta, _, states, tokens, mask, w = case(**kw)
    got = kernel(theta, states, tokens, mask, w)
    assert np.isfinite(got).all()
    assert rel_err(got, scatter_twin(theta, states, tokens, mask, w)) <= RTOL
    unvisited = np.setdiff1d(np.arange(theta.shape[0]), states[mask > 0])
    assert np.all(got[unvisited] == 0.0)


def test_entries_equal_their_cores():
    theta, _, states, tokens, mask, w = case(12)
    for a, b in zip(
        K.tabular_logp(theta, states, tokens, mask), K._tabular_logp(theta, states, tokens, mask), strict=True
    ):
        assert np.array_equal(a, b)
    assert np.array_equal(
        K.tabular_backward(theta, states, tokens, mask, w), K._tabular_backward(theta, states, tokens, mask, w)
    )


def test_large_logits_keep_their_digits():
    """As the dense test: (theta_y - m) - lse at 1e4, exact offsets of 1/64."""
    rng = np.random.default_rng(8)
    _, _, states, tokens, mask, _ = case(8, V=5)
    theta_off = rng.integers(-400, 400, (6, 5)) / 64.0  # (S, V)
    got = K.tabular_logp(theta_off + 1e4, states, tokens, mask)[0]
    assert np.abs(got - token_logp(theta_off[states], tokens, mask)[0]).max() < 1e-13


def test_gathered_neginf_token():
    theta = np.array([[0.0, -np.inf, 1.0]])
    states, tokens, mask, w = (
        np.zeros((1, 1), np.int64),
        np.ones((1, 1), np.int64),
        np.ones((1, 1)),
        np.full((1, 1), 2.0),
    )
    logp, seq = K.tabular_logp(theta, states, tokens, mask)
    assert logp[0, 0] == -np.inf and seq[0] == -np.inf
    np.testing.assert_allclose(
        K.tabular_backward(theta, states, tokens, mask, w)[0],
        [-2 / (1 + np.e), 2.0, -2 * np.e / (1 + np.e)],
        rtol=1e-15,
    )


# ---------------------------------------------------------------- the checks and the guard

S1 = np.zeros((1, 2), np.int64)  # every token in state 0


def one_state(w, tokens):
    """A (1, T) batch in state 0 of a 3-state table whose other rows are bad (never visited)."""
    theta = np.zeros((3, 3))
    theta[1] = np.nan
    theta[2] = -np.inf
    T = len(w)
    return (theta, np.zeros((1, T), np.int64), np.array([tokens], np.int64), np.ones((1, T)), np.array([w], float))


def test_a_bad_unvisited_row_is_not_read():
    theta, states, tokens, mask, w = one_state([1.0, -2.0], [0, 2])
    logp, _ = K.tabular_logp(theta, states, tokens, mask)
    assert np.isfinite(logp).all()
    d = K.tabular_backward(theta, states, tokens, mask, w)
    assert np.isfinite(d).all() and (d[1:] == 0).all()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_bad_visited_row_is_named_theta(bad):
    theta, states, tokens, mask, w = one_state([1.0, -2.0], [0, 2])
    theta[0, 1] = bad  # an entry no token gathers
    for call in (
        lambda: K.tabular_logp(theta, states, tokens, mask),
        lambda: K.tabular_logp_per_token(theta, states, tokens, mask),
    ):
        assert raises(ValueError, call).startswith("theta: expected rows with a finite entry")
    for call in (
        lambda: K.tabular_backward(theta, states, tokens, mask, w),
        lambda: K.tabular_backward_per_token(theta, states, tokens, mask, w),
    ):
        assert raises(ValueError, call) == (
            "theta: expected rows with a finite entry and no NaN or +inf at the visited states, "
            "got a non-finite gradient"
        )


def test_an_overflowing_sum_of_finite_weights_is_named_after_the_entry():
    theta, states, tokens, mask, w = one_state([1e308, 1e308], [0, 1])  # c[s] = inf
    msg = raises(ValueError, lambda: K.tabular_backward(theta, states, tokens, mask, w))
    assert msg.startswith("tabular_backward: expected a finite dtheta, got ") and "w in [1e+308, 1e+308]" in msg


def test_an_overflow_in_one_gathered_entry_only_is_caught():
    """c[s] stays 0 (the weights cancel) while the scatter into token 1 overflows: the first
    token of the state gathers an entry that stays finite, so only the full look that a sum of
    |w| >= 1e307 triggers finds it."""
    theta, states, tokens, mask, w = one_state([0.0, 1e308, -1e308, 1e308, -1e308], [0, 1, 2, 1, 2])
    for kernel in (K._tabular_backward, K._tabular_backward_per_token):
        d = kernel(theta, states, tokens, mask, w)
        assert np.isfinite(d[0, 0]) and not np.isfinite(d[0, 1])  # the case it is
    for entry in (K.tabular_backward, K.tabular_backward_per_token):
        msg = raises(ValueError, lambda e=entry: e(theta, states, tokens, mask, w))
        assert msg.startswith(f"{entry.__name__}: expected a finite dtheta")


GOOD = dict(
    theta=np.zeros((3, 4)),
    states=np.zeros((2, 3), np.int64),
    tokens=np.zeros((2, 3), np.int64),
    mask=np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
    w=np.ones((2, 3)),
)


@pytest.mark.parametrize(
    "arg, bad, exc, start",
    [
        ("theta", np.zeros((3, 4), np.float32), TypeError, "theta: expected dtype float64"),
        ("theta", np.zeros((3, 8))[:, ::2], ValueError, "theta: expected a C-contiguous array"),
        (
            "states",
            np.array([[0, 0, 0], [3, 0, 0]]),
            ValueError,
            "states: expected ids in [0, 3) at the real positions, got 3 at (1, 0)",
        ),
        ("states", np.zeros((2, 3), np.int32), TypeError, "states: expected dtype int64"),
        (
            "tokens",
            np.array([[0, -1, 0], [0, 0, 0]]),
            ValueError,
            "tokens: expected ids in [0, 4) at the real positions, got -1 at (0, 1)",
        ),
        ("tokens", np.zeros((3, 3), np.int64), ValueError, "tokens: expected shape (2, 3)"),
        ("mask", np.array([[1.0, np.nan, 0.0], [1.0, 0.0, 0.0]]), ValueError, "mask: expected only 0.0 and 1.0"),
        (
            "w",
            np.array([[1.0, np.nan, 0.0], [1.0, 0.0, 0.0]]),
            ValueError,
            "w: expected finite weights at the real positions, got NaN or inf",
        ),
    ],
)
def test_bad_input_is_named(arg, bad, exc, start):
    a = {**GOOD, arg: bad}
    if arg != "w":
        assert raises(exc, lambda: K.tabular_logp(a["theta"], a["states"], a["tokens"], a["mask"])).startswith(
            start
        )
    assert raises(
        exc, lambda: K.tabular_backward(a["theta"], a["states"], a["tokens"], a["mask"], a["w"])
    ).startswith(start)


def test_ids_and_weights_at_padding_are_never_read():
    a = dict(
        GOOD,
        states=np.array([[0, 0, 7], [0, -5, 9]]),
        tokens=np.array([[0, 1, 99], [2, -1, 4]]),
        w=np.array([[1.0, 2.0, np.nan], [3.0, np.inf, -np.inf]]),
    )
    d = K.tabular_backward(a["theta"], a["states"], a["tokens"], a["mask"], a["w"])
    assert np.isfinite(d).all()
    assert np.isfinite(K.tabular_logp(a["theta"], a["states"], a["tokens"], a["mask"])[0]).all()

"""REINFORCE: aggregation weights, gradients against finite differences, and the token view equal
to the bandit view sample for sample (and what breaks the equality)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck import fd_grad
from minirl_lm.pg.reinforce import (
    AGGS,
    reinforce_loss,
    sequence_reinforce_loss,
    token_weights,
)


def random_batch(rng, B=6, T=5):
    """Right-padded mask with a length-0 row and a full row; logp (0 at padding); adv both signs."""
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)  # (B, T)
    logp = -rng.uniform(0.05, 3.0, size=(B, T)) * mask
    adv = rng.normal(size=B)
    adv[1], adv[2] = abs(adv[1]) + 0.1, -abs(adv[2]) - 0.1
    return logp, adv, mask


# ---- aggregation weights -----------------------------------------------------------------------


def test_token_weights_hand_values():
    mask = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    B = 3
    assert np.array_equal(token_weights(mask, "seq_sum"), mask / B)
    assert np.array_equal(token_weights(mask, "token_mean"), mask / 5)
    smtm = token_weights(mask, "seq_mean_token_mean")
    assert np.allclose(smtm[0, :4], 1 / 12) and smtm[1, 0] == 1 / 3 and (smtm[2] == 0).all()
    assert np.array_equal(token_weights(mask, "constant"), mask / (B * 4))
    assert np.array_equal(token_weights(mask, "constant", max_len=8), mask / (B * 8))


def test_all_padding_contributes_nothing():
    mask = np.zeros((2, 3))
    for agg in AGGS:
        w = token_weights(mask, agg)
        assert (w == 0).all() and not np.isnan(w).any()
        loss, d = reinforce_loss(np.zeros((2, 3)), np.array([1.0, -1.0]), mask, agg)
        assert loss == 0 and (d == 0).all()


masks_st = st.lists(st.integers(0, 6), min_size=1, max_size=7).map(
    lambda L: (np.arange(6)[None, :] < np.array(L)[:, None]).astype(float)
)


@settings(max_examples=60, deadline=None)
@given(masks_st)
def test_token_weight_properties(mask):
    B, lengths = mask.shape[0], mask.sum(axis=1)
    for agg in AGGS:
        w = token_weights(mask, agg)
        assert w.shape == mask.shape and (w[mask == 0] == 0).all() and (w >= 0).all()
    assert np.allclose(token_weights(mask, "seq_sum").sum(axis=1), lengths / B)
    if lengths.sum():
        assert np.isclose(token_weights(mask, "token_mean").sum(), 1.0)
    per_seq = token_weights(mask, "seq_mean_token_mean").sum(axis=1)
    assert np.allclose(per_seq[lengths > 0], 1 / B)  # every response weighs 1/B
    assert np.allclose(token_weights(mask, "constant").sum(axis=1), lengths / (B * 6))


# ---- gradients against finite differences ------------------------------------------------------


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("per_token", [False, True])
def test_reinforce_dlogp_matches_finite_differences(agg, per_token):
    rng = np.random.default_rng(1)
    logp, adv, mask = random_batch(rng)
    if per_token:
        adv = rng.normal(size=mask.shape)
    _, d = reinforce_loss(logp, adv, mask, agg)
    g = fd_grad(lambda x: reinforce_loss(x, adv, mask, agg)[0], logp)
    assert np.abs(d - g).max() < 1e-9  # loss is linear: rounding / h only
    assert (d[mask == 0] == 0).all()


def test_sequence_reinforce_matches_finite_differences():
    rng = np.random.default_rng(2)
    s, a = -rng.uniform(1, 5, size=5), rng.normal(size=5)
    _, d = sequence_reinforce_loss(s, a)
    g = fd_grad(lambda x: sequence_reinforce_loss(x, a)[0], s)
    assert np.abs(d - g).max() < 1e-9


# ---- through the policy: theta gradients, and the two views ------------------------------------


def _rollout(seed=0, N=2, K=6):
    from minirl_lm.core.mdp import TokenMDP
    from minirl_lm.core.policy import TabularPolicy

    rng = np.random.default_rng(seed)
    mdp = TokenMDP(["p", "q"][:N], V=3, eos=0, max_len=3)
    theta = rng.normal(size=(mdp.S, 3))
    theta[:, 0] -= 1.0  # EOS less likely: longer responses
    pol = TabularPolicy(theta)
    ro = mdp.rollout(pol, K, rng)
    assert (ro.lengths >= 2).sum() >= 3 and ro.lengths.max() == 3
    rewards = mdp.score(lambda x, y: (sum(y) % 3) - 0.7 * len(y) + (x == "p"), ro)
    return mdp, pol, ro, rewards, rng


@pytest.mark.parametrize("agg", AGGS)
def test_reinforce_theta_gradient_matches_finite_differences(agg):
    from minirl_lm.core.policy import TabularPolicy

    mdp, pol, ro, rewards, rng = _rollout(1)
    adv = rewards - rewards.mean()

    def loss(theta):
        logp, _ = TabularPolicy(theta).logp(ro.states, ro.tokens, ro.mask)
        return reinforce_loss(logp, adv, ro.mask, agg)[0]

    logp, _ = pol.logp(ro.states, ro.tokens, ro.mask)
    dtheta = pol.backward(ro.states, ro.tokens, ro.mask, reinforce_loss(logp, adv, ro.mask, agg)[1])
    g = fd_grad(loss, pol.theta.copy(), h=1e-5)
    assert np.abs(dtheta - g).max() < 1e-9  # FD truncation ~h^2, rounding ~1e-11


def complex_step_seq_grad(theta, states, tokens, mask, h=1e-30):
    """d seq_logp_b / d theta (B, S, V) by the complex step on the whole-sequence log-prob,
    log pi(y|x) = sum_t theta[s_t, y_t] - log sum_v exp theta[s_t, v] (no per-token backward)."""
    S, V = theta.shape
    out = np.zeros((states.shape[0], S, V))
    for s in range(S):
        for v in range(V):
            tc = theta.astype(complex)
            tc[s, v] += 1j * h
            z = tc[states]  # (B, T, V)
            lp = np.take_along_axis(z, tokens[..., None], -1)[..., 0] - np.log(np.exp(z).sum(-1))
            out[:, s, v] = ((lp * mask).sum(axis=1)).imag / h
    return out


def views_gap(adv_token_fn=None, seed=0):
    """Max over samples of |token-view dtheta - bandit-view dtheta|, each sample on its own.

    token view: reinforce_loss (per-token weights) -> policy.backward (per-token scatter);
    bandit view: sequence_reinforce_loss -> dloss/dseq times the complex-step gradient of the
    sequence log-prob. Default: terminal reward, prompt baseline b(x) on every token.
    adv_token_fn(ro, rewards, b_x, logp) -> (token adv (B, T), bandit adv (B,)) replaces it."""
    mdp, pol, ro, rewards, rng = _rollout(seed)
    b_x = rng.normal(size=mdp.N)[ro.prompt]  # (B,) prompt-dependent baseline
    logp, seq_logp = pol.logp(ro.states, ro.tokens, ro.mask)
    if adv_token_fn is None:
        A_tok, A_seq = rewards - b_x, rewards - b_x
    else:
        A_tok, A_seq = adv_token_fn(mdp, ro, rewards, b_x, logp, rng)
    G = complex_step_seq_grad(pol.theta, ro.states, ro.tokens, ro.mask)
    gap = 0.0
    for b in range(ro.mask.shape[0]):
        sl = slice(b, b + 1)
        _, d = reinforce_loss(logp[sl], A_tok[sl], ro.mask[sl], "seq_sum")
        token_view = pol.backward(ro.states[sl], ro.tokens[sl], ro.mask[sl], d)
        _, dseq = sequence_reinforce_loss(seq_logp[sl], A_seq[sl])
        bandit_view = dseq[0] * G[b]
        gap = max(gap, np.abs(token_view - bandit_view).max())
    return gap


def test_token_view_equals_bandit_view_sample_for_sample():
    assert views_gap() < 1e-12


def _prefix_baseline(mdp, ro, r, b_x, logp, rng):
    b_s = rng.normal(size=mdp.S)  # b(s_t): depends on the prefix
    return r[:, None] - b_s[ro.states], r - b_s[ro.states[:, 0]]


def _kl_shaping(mdp, ro, r, b_x, logp, rng, beta=0.5):
    from minirl_lm.core.policy import TabularPolicy

    logp_ref, _ = TabularPolicy(rng.normal(size=(mdp.S, mdp.V))).logp(ro.states, ro.tokens, ro.mask)
    u = (logp - logp_ref) * ro.mask  # (B, T)
    rt = -beta * u  # per-token reward
    rt[np.arange(len(r)), ro.lengths - 1] += r  # terminal score
    G = np.cumsum(rt[:, ::-1], axis=1)[:, ::-1]  # return-to-go
    return (G - b_x[:, None]) * ro.mask, r - beta * u.sum(axis=1) - b_x


def _discount(mdp, ro, r, b_x, logp, rng, gamma=0.9):
    steps_left = ro.lengths[:, None] - 1 - np.arange(ro.mask.shape[1])[None, :]
    G = gamma ** np.maximum(steps_left, 0) * r[:, None]  # G_t = gamma^(|y|-1-t) r
    return (G - b_x[:, None]) * ro.mask, G[:, 0] - b_x


@pytest.mark.parametrize("breaker", [_prefix_baseline, _kl_shaping, _discount])
def test_per_token_signals_break_the_equality(breaker):
    assert views_gap(breaker) > 1e-3


# ---- bad input ---------------------------------------------------------------------------------

M = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
L = -np.ones((2, 3)) * M
BAD = [
    (lambda: token_weights(np.ones(3)), ValueError, "mask"),
    (lambda: token_weights(M * 0.5), ValueError, "mask"),
    (lambda: token_weights(np.array([[0.0, -1.0]])), ValueError, "mask"),
    (lambda: token_weights(M, "mean"), ValueError, "agg"),
    (lambda: token_weights(M, "constant", max_len=1), ValueError, "max_len"),
    (lambda: token_weights(M, "constant", max_len=0), ValueError, "max_len"),
    (lambda: token_weights(M, "constant", max_len=2.5), TypeError, "max_len"),
    (lambda: reinforce_loss(L[0], np.ones(2), M), ValueError, "logp"),
    (lambda: reinforce_loss(L[:, :2], np.ones(2), M), ValueError, "mask"),
    (lambda: reinforce_loss(L, np.ones(3), M), ValueError, "adv"),
    (lambda: reinforce_loss(L, np.ones((2, 2)), M), ValueError, "adv"),
    (lambda: reinforce_loss(L, np.array([np.nan, 1.0]), M), ValueError, "adv"),
    (lambda: reinforce_loss(np.where(M > 0, np.nan, 0.0), np.ones(2), M), ValueError, "logp"),
    (lambda: reinforce_loss("x", np.ones(2), M), TypeError, "logp"),
    (lambda: reinforce_loss(L, np.ones(2), M, agg="sum"), ValueError, "agg"),
    (lambda: sequence_reinforce_loss(np.ones(3), np.ones(2)), ValueError, "adv"),
    (lambda: sequence_reinforce_loss(np.ones((3, 1)), np.ones(3)), ValueError, "seq_logp"),
    (lambda: sequence_reinforce_loss(np.ones(3), np.array([1.0, np.inf, 0.0])), ValueError, "adv"),
]


@pytest.mark.parametrize("call, exc, name", BAD)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


# ---- public defaults, pinned -------------------------------------------------------------------


def test_reinforce_defaults_are_token_mean():
    rng = np.random.default_rng(51)
    mask = (np.arange(4)[None, :] < rng.integers(1, 5, (6, 1))).astype(float)
    logp, adv = -rng.uniform(0.1, 2.0, (6, 4)), rng.normal(size=6)
    assert np.array_equal(token_weights(mask), mask / mask.sum())  # token_mean: 1 / sum_b |y_b|
    assert np.array_equal(token_weights(mask), token_weights(mask, "token_mean", None))
    loss, d = reinforce_loss(logp, adv, mask)
    want = reinforce_loss(logp, adv, mask, "token_mean", None)
    assert loss == want[0] and np.array_equal(d, want[1])
    assert loss != reinforce_loss(logp, adv, mask, "seq_sum")[0]


# ---- folded from tests/test_kills_dpo_reinforce.py ------------------------------------------
# Exact answers of token_weights, reinforce_loss and sequence_reinforce_loss: the default agg and
# the lower bound of max_len, a hand-computed loss, and every argument check and reachable
# overflow (the inf and the NaN kind) named, silently.

from quiet import raises  # noqa: E402

MASK_2x3 = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


def test_token_weights_default_agg_is_token_mean():
    default = token_weights(MASK_2x3)
    assert np.array_equal(default, token_weights(MASK_2x3, agg="token_mean"))
    assert np.array_equal(default, MASK_2x3 / 4)  # w = 1 / (4 real tokens)
    assert not np.array_equal(default, token_weights(MASK_2x3, agg="seq_sum"))


def test_token_weights_max_len_one_is_allowed_zero_is_not():
    # constant: w = mask / (B max_len) = mask / (1 * 1)
    assert np.array_equal(token_weights([[1.0, 0.0]], "constant", max_len=1), [[1.0, 0.0]])
    msg = raises(ValueError, lambda: token_weights([[1.0, 0.0]], "constant", max_len=0))
    assert msg == "max_len: expected an integer >= 1, got 0"


def test_reinforce_loss_exact():
    # seq_sum, B = 2: w = [[1/2, 1/2], [1/2, 0]], A = (1, 2) per response
    # loss = -(1/2 * 1 * -1 + 1/2 * 1 * -2 + 1/2 * 2 * -3) = 4.5; grad = -w A
    loss, g = reinforce_loss([[-1.0, -2.0], [-3.0, 0.0]], [1.0, 2.0], [[1.0, 1.0], [1.0, 0.0]], "seq_sum")
    assert loss == 4.5 and np.array_equal(g, [[-0.5, -0.5], [-1.0, 0.0]])


@pytest.mark.parametrize(
    "call, arg, fragment",
    [
        (
            lambda: reinforce_loss(np.zeros((1, 2)), [1.0], np.ones((1, 3))),
            "mask",
            "expected shape (1, 2), got (1, 3)",
        ),
        (
            lambda: reinforce_loss(np.zeros((2, 3)), [1.0, 2.0, 3.0], np.ones((2, 3))),
            "adv",
            "expected shape (2,) or (2, 3), got (3,)",
        ),
        (lambda: sequence_reinforce_loss([0.0], [[0.0]]), "adv", "expected shape (1,), got (1, 1)"),
        (lambda: sequence_reinforce_loss([0.0], 0.0), "adv", "expected shape (1,), got ()"),
        (
            lambda: sequence_reinforce_loss([0.0, 0.0], [0.0]),
            "adv",
            "expected shape (2,), got (1,)",
        ),
        (
            lambda: sequence_reinforce_loss([], []),
            "seq_logp",
            "expected a non-empty array (every axis of length >= 1), got shape (0,)",
        ),
    ],
)
def test_reinforce_argument_messages_name_the_argument(call, arg, fragment):
    msg = raises(ValueError, call)
    assert msg.startswith(f"{arg}: ") and fragment in msg


@pytest.mark.parametrize(
    "call, fname, kind",
    [
        # w = 1: A logp = 1e308 * -1e308 = -inf, loss = +inf
        (lambda: reinforce_loss([[-1e308]], [1e308], [[1.0]]), "reinforce_loss", "inf"),
        # per-token A: the products are -inf and +inf, their sum NaN
        (lambda: reinforce_loss([[-1e308, -1e308]], [[1e308, -1e308]], [[1.0, 1.0]]), "reinforce_loss", "NaN"),
        # A s = -1e308 * 1e308 = -inf on both: loss = -(-inf) / 2 = inf
        (lambda: sequence_reinforce_loss([1e308, 1e308], [-1e308, -1e308]), "sequence_reinforce_loss", "inf"),
        # A s = (+inf, -inf): the sum is NaN
        (lambda: sequence_reinforce_loss([1e308, 1e308], [1e308, -1e308]), "sequence_reinforce_loss", "NaN"),
    ],
)
def test_reinforce_overflow_is_a_silent_value_error_naming_the_function(call, fname, kind):
    # the gradient stays finite (-w A, -A / B): only the loss is named
    msg = raises(ValueError, call)
    assert msg.startswith(f"{fname}: expected a finite loss, got {kind} (beyond float64) from "), msg


def test_reinforce_overflow_message_sample():
    msg = raises(ValueError, lambda: reinforce_loss([[-1e308]], [1e308], [[1.0]]))
    assert msg == (
        "reinforce_loss: expected a finite loss, got inf (beyond float64) from logp in [-1e+308, -1e+308], "
        "adv in [1e+308, 1e+308], mask in [1, 1]"
    )


def test_reinforce_loss_uses_max_len_of_the_constant_aggregation():
    # w = mask / (B max_len) = 1/5 on the real tokens, not 1/T = 1/3
    loss, g = reinforce_loss([[-1.0, -2.0, 0.0]], [2.0], [[1.0, 1.0, 0.0]], agg="constant", max_len=5)
    assert loss == pytest.approx(1.2, rel=1e-15) and np.array_equal(g, [[-0.4, -0.4, 0.0]])

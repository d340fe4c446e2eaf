"""Clipped ratio: gradient against finite differences (clipped and unclipped tokens, both signs),
REINFORCE at rho = 1, clip-higher, the boundary convention and the clip fraction."""

import warnings

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core import ops
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg import clip
from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.reinforce import AGGS, reinforce_loss


def ratio_batch(rng, B=8, T=6, eps=0.2, eps_high=0.28):
    """logp, logp_old with log-ratios in [-0.6, 0.6], none within 1e-3 of a clip boundary."""
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp_old = -rng.uniform(0.1, 3.0, size=(B, T))
    d = rng.uniform(-0.6, 0.6, size=(B, T))
    for edge in (np.log(1 - eps), np.log(1 + eps), np.log(1 + eps_high)):
        near = np.abs(d - edge) < 1e-3
        d[near] += 3e-3  # away from the kink, by construction
    logp = (logp_old + d) * mask
    logp_old = logp_old * mask
    adv = rng.normal(size=(B, T))  # per-token, both signs
    return logp, logp_old, adv, mask


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("eps_high", [None, 0.28])
def test_clip_dlogp_matches_finite_differences(agg, eps_high):
    rng = np.random.default_rng(0)
    logp, logp_old, adv, mask = ratio_batch(rng)
    f = lambda x: clipped_surrogate(x, logp_old, adv, mask, 0.2, eps_high, agg)[0]
    _, d = clipped_surrogate(logp, logp_old, adv, mask, 0.2, eps_high, agg)
    g = fd_grad(f, logp)
    real = mask > 0
    assert (d[real] == 0).sum() >= 5 and (d[real] != 0).sum() >= 5  # both branches present
    assert (adv[real & (d == 0)] > 0).any() and (adv[real & (d == 0)] < 0).any()
    assert np.abs(d - g).max() < 1e-9  # FD error ~h^2 rho A + 1e-16/h
    assert (d[~real] == 0).all()


@pytest.mark.parametrize("agg", AGGS)
def test_at_rho_one_gradient_equals_reinforce(agg):
    rng = np.random.default_rng(1)
    logp, _, adv, mask = ratio_batch(rng)
    A = rng.normal(size=mask.shape[0])
    loss_c, d_clip = clipped_surrogate(logp, logp.copy(), A, mask, agg=agg)
    loss_r, d_rf = reinforce_loss(logp, A, mask, agg)
    assert np.array_equal(d_clip, d_rf)  # exactly: rho = exp(0) = 1
    assert clip_fraction(logp, logp.copy(), A, mask) == 0.0


def test_theta_gradient_through_the_policy():
    rng = np.random.default_rng(2)
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3)
    old = TabularPolicy(rng.normal(size=(mdp.S, 3)))
    ro = mdp.rollout(old, 5, rng)
    logp_old, _ = old.logp(ro.states, ro.tokens, ro.mask)
    theta = old.theta + rng.normal(scale=0.4, size=old.theta.shape)
    adv = rng.normal(size=ro.mask.shape[0])

    def loss(th):
        lp, _ = TabularPolicy(th).logp(ro.states, ro.tokens, ro.mask)
        return clipped_surrogate(lp, logp_old, adv, ro.mask)[0]

    pol = TabularPolicy(theta)
    lp, _ = pol.logp(ro.states, ro.tokens, ro.mask)
    rho = np.exp(lp - logp_old)[ro.mask > 0]
    assert np.abs(np.abs(rho - 1) - 0.2).min() > 1e-4  # no token at the kink
    assert clip_fraction(lp, logp_old, adv, ro.mask) > 0
    dtheta = pol.backward(ro.states, ro.tokens, ro.mask, clipped_surrogate(lp, logp_old, adv, ro.mask)[1])
    g = fd_grad(loss, theta.copy(), h=1e-6)
    assert np.abs(dtheta - g).max() < 1e-8


def test_clip_higher_and_fraction_hand_values():
    mask = np.ones((1, 4))
    logp_old = np.zeros((1, 4))
    logp = np.log(np.array([[1.25, 1.25, 0.7, 0.9]]))
    adv = np.array([[1.0, -1.0, -1.0, -1.0]])
    # symmetric eps=0.2: token 0 (A>0, rho>1.2) and token 2 (A<0, rho<0.8) are clipped
    _, d = clipped_surrogate(logp, logp_old, adv, mask, eps=0.2, agg="seq_sum")
    assert d[0, 0] == 0 and d[0, 2] == 0 and d[0, 1] != 0 and d[0, 3] != 0
    assert clip_fraction(logp, logp_old, adv, mask, eps=0.2) == 0.5
    # clip-higher eps_high=0.28 lets token 0 keep pulling; the low side is unchanged
    _, d = clipped_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=0.28, agg="seq_sum")
    assert d[0, 0] == -1.25 and d[0, 2] == 0
    assert clip_fraction(logp, logp_old, adv, mask, eps=0.2, eps_high=0.28) == 0.25


def test_boundary_takes_the_unclipped_derivative():
    for delta in np.linspace(0.05, 0.3, 200):  # find rho with 1 + (rho - 1) == rho
        rho = np.exp(delta)
        if 1.0 + (rho - 1.0) == rho:
            break
    eps = rho - 1.0
    logp = np.array([[delta]]) - 1.0
    _, d = clipped_surrogate(logp, np.array([[-1.0]]), np.array([2.0]), np.ones((1, 1)), eps=eps, agg="seq_sum")
    assert d[0, 0] == -rho * 2.0  # tie: rho A, documented
    assert clip_fraction(logp, np.array([[-1.0]]), np.array([2.0]), np.ones((1, 1)), eps=eps) == 0


def test_aggregation_weights_and_shared_pieces_are_core_ops():
    assert clip.agg_weights is ops.agg_weights and clip.AGGREGATION is ops.AGGREGATION  # eq. (pg_agg), once
    assert clip.log_ratio is ops.log_ratio


M = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
L = -np.ones((2, 3)) * M
A2 = np.ones(2)
BAD = [
    (lambda: clipped_surrogate(L[0], L, A2, M), ValueError, "logp"),
    (lambda: clipped_surrogate(L, L[:, :2], A2, M), ValueError, "logp_old"),
    (lambda: clipped_surrogate(L, L, A2, M[:, :2]), ValueError, "mask"),
    (lambda: clipped_surrogate(L, L, np.ones(3), M), ValueError, "adv"),
    (lambda: clipped_surrogate(L, L, A2, M * 2), ValueError, "mask"),
    (lambda: clipped_surrogate(L, L * np.nan, A2, M), ValueError, "logp_old"),
    (lambda: clipped_surrogate(L, L, A2, M, eps=0.0), ValueError, "eps"),
    (lambda: clipped_surrogate(L, L, A2, M, eps=1.5), ValueError, "eps"),
    (lambda: clipped_surrogate(L, L, A2, M, eps="0.2"), TypeError, "eps"),
    (lambda: clipped_surrogate(L, L, A2, M, eps_high=-0.1), ValueError, "eps_high"),
    (lambda: clipped_surrogate(L, L, A2, M, agg="mean"), ValueError, "agg"),
    (lambda: clipped_surrogate(L, L, A2, M, agg="constant", max_len=1), ValueError, "max_len"),
    (lambda: clip_fraction(L, L, A2, np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0]])), ValueError, "mask"),
    (lambda: clip_fraction(L, "x", A2, M), TypeError, "logp_old"),
]


@pytest.mark.parametrize("call, exc, name", BAD)
def test_bad_input(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


# ---------------------------------------------------------------- extreme ratios and padding


def test_reviewer_demos_give_no_nan():
    with np.errstate(all="raise"):  # no 0 * inf, no stray overflow
        loss, g = clipped_surrogate([[0.0]], [[-800.0]], [0.0], [[1.0]])
        assert loss == 0.0 and np.array_equal(g, [[0.0]])  # A = 0 contributes exactly 0
        loss, g = clipped_surrogate([[0.0, 0.0]], [[0.0, -800.0]], [-1.0], [[1.0, 0.0]])
        assert loss == 1.0 and np.array_equal(g, [[1.0, 0.0]])  # padding garbage ignored


@pytest.mark.parametrize("junk", [-800.0, 800.0, -1e300, 1.7e308])
def test_garbage_at_padding_changes_nothing(junk):
    rng = np.random.default_rng(3)
    logp, logp_old, adv, mask = ratio_batch(rng)
    pad = mask == 0
    clean = clipped_surrogate(logp, logp_old, adv, mask, eps_high=0.28)
    frac = clip_fraction(logp, logp_old, adv, mask, eps_high=0.28)
    lo, lp = logp_old.copy(), logp.copy()
    lo[pad], lp[pad] = junk, -junk  # finite garbage at padding
    with np.errstate(all="raise"):
        loss, g = clipped_surrogate(lp, lo, adv, mask, eps_high=0.28)
        f2 = clip_fraction(lp, lo, adv, mask, eps_high=0.28)
    assert loss == clean[0] and np.array_equal(g, clean[1])
    assert (g[pad] == 0).all() and f2 == frac


def test_overflowing_ratio_on_real_tokens():
    lp = np.zeros((1, 3))
    lo = np.array([[-800.0, -800.0, -800.0]])  # rho = exp(800) = inf in float64
    m = np.ones((1, 3))
    with np.errstate(all="raise"):
        # A > 0: min(rho A, (1 + eps) A) = (1 + eps) A, gradient 0; A = 0: exactly 0
        loss, g = clipped_surrogate(lp, lo, [[1.0, 0.0, 2.0]], m, eps=0.2, agg="seq_sum")
        assert loss == -(1.2 * 1.0 + 1.2 * 2.0) and np.array_equal(g, np.zeros((1, 3)))
        assert clip_fraction(lp, lo, [[1.0, 0.0, -1.0]], m) == 1 / 3  # A > 0 clipped, A < 0 not
    # A < 0: the true minimum is rho A = -inf: rejected, naming the function
    with pytest.raises(ValueError, match="^clipped_surrogate: "):
        clipped_surrogate(lp, lo, [[1.0, 0.0, -1.0]], m)
    # a finite rho whose product with A overflows is rejected the same way
    with pytest.raises(ValueError, match="^clipped_surrogate: "):
        clipped_surrogate([[0.0]], [[-700.0]], [-1e10], [[1.0]])


# ---- exact messages ---------------------------------------------------------------------------


def _msg(fn, *args):
    with pytest.raises(ValueError) as e:
        fn(*args)
    return str(e.value)


@pytest.mark.parametrize("fn", [clipped_surrogate, clip_fraction])
def test_clip_argument_messages(fn):
    # the shape letters (B, T) are fixed by logp, the first argument that uses them
    z, m = np.zeros((2, 3)), np.ones((2, 3))
    assert _msg(fn, z, np.zeros(3), [1.0, 1.0], m) == "logp_old: expected shape (2, 3), got (3,)"
    assert _msg(fn, z, np.zeros((1, 3)), [1.0, 1.0], m) == "logp_old: expected shape (2, 3), got (1, 3)"
    assert _msg(fn, z, z, [1.0, 1.0], np.ones((2, 2))) == "mask: expected shape (2, 3), got (2, 2)"
    assert _msg(fn, z, z, [1.0, 1.0], np.full((2, 3), 0.5)).startswith(
        "mask: expected only 0 and 1, got value "
    )  # the value's repr follows
    assert _msg(fn, z, z, np.ones(5), m) == "adv: expected shape (2,) or (2, 3), got (5,)"
    assert _msg(fn, np.zeros(3), z, [1.0, 1.0], m) == "logp: expected shape (B, T), got (3,)"


def test_overflow_message_names_the_function_what_overflowed_and_the_inputs():
    # only [1, 2] overflows: logp - logp_old = -0.5 - (-800.5) = 800 > 709.78, A = -1:
    # rho A = -inf. No argument is blamed: the message names the function and the inputs' ranges.
    logp = np.array([[-1.0, -1.0, -1.0], [-1.0, -1.0, -0.5]])
    logp_old = np.array([[-1.0, -1.0, -1.0], [-1.0, -1.0, -800.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            clipped_surrogate(logp, logp_old, [1.0, -1.0], np.ones((2, 3)))
    assert str(e.value) == (
        "clipped_surrogate: expected a finite loss and dloss_dlogp, got inf (beyond float64) from "
        "logp in [-1, -0.5], logp_old in [-800.5, -1], adv in [-1, 1], mask in [1, 1], eps = 0.2"
    )


def test_overflowing_sum_with_finite_tokens_names_the_loss_alone():
    # every token finite (rho = 1, A = 1.7e308, w = 1 under seq_sum, w f = 1.7e308), but the
    # sum of four of them overflows: the loss would be -inf while the gradient is finite. The
    # message says the loss overflowed (not the gradient), and nothing warns.
    adv = np.full((2, 2), 1.7e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            clipped_surrogate(np.zeros((2, 2)), np.zeros((2, 2)), adv, np.ones((2, 2)), agg="seq_sum")
    assert str(e.value).startswith("clipped_surrogate: expected a finite loss, got inf (beyond float64) from ")
    assert "adv in [1.7e+308, 1.7e+308]" in str(e.value)


def test_huge_finite_log_probs_overflow_silently_into_the_message():
    # logp - logp_old = 1.7e308 - (-1.7e308) overflows to +inf: rho = inf, with A = -1 the
    # unclipped branch is -inf: the one overflow message, and no RuntimeWarning on the way
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            clipped_surrogate([[1.7e308]], [[-1.7e308]], [-1.0], [[1.0]])
    assert str(e.value).startswith("clipped_surrogate: expected a finite loss and dloss_dlogp, got inf")
    assert "logp in [1.7e+308, 1.7e+308], logp_old in [-1.7e+308, -1.7e+308]" in str(e.value)


def test_branches_are_rho_and_the_two_surrogates():
    # rho = e^0.5 (A = 2: unclipped 2 rho, clipped 2 * 1.2), rho = 1 at padding, 0 where A = 0
    rho, s1, s2 = clip.branches(
        np.array([[0.5, 9.0]]), np.zeros((1, 2)), np.array([[2.0, 0.0]]), np.array([[1.0, 0.0]]), 0.2, 0.2
    )
    assert np.array_equal(rho, [[np.exp(0.5), 1.0]]) and np.array_equal(s1, [[2 * np.exp(0.5), 0.0]])
    assert np.array_equal(s2, [[2.4, 0.0]])


def test_the_body_is_reachable_without_the_boundary():
    # GRPO calls clipped_surrogate.core on its own checked arguments: the same numbers
    logp, logp_old, adv, mask = _wide_batch()
    got = clipped_surrogate.core(logp, logp_old, adv, mask, 0.2, None, "token_mean", None)
    want = clipped_surrogate(logp, logp_old, adv, mask)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert clip_fraction.core(logp, logp_old, adv, mask, 0.2, 0.2) == clip_fraction(logp, logp_old, adv, mask)


def test_clip_fraction_without_real_tokens_is_zero_and_silent():
    logp = np.array([[0.0, 0.7]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert clip_fraction(logp, np.zeros((1, 2)), [1.0], np.zeros((1, 2))) == 0.0


def test_clip_fraction_with_one_real_token():
    # rho = exp(log 2) = 2 > 1 + 0.2 with A = 1 > 0: clipped; 1 of 1 real token
    logp = np.array([[np.log(2.0), 0.0]])
    assert clip_fraction(logp, np.zeros((1, 2)), [1.0], np.array([[1.0, 0.0]])) == 1.0
    # rho = 1.1 inside the clip range: not clipped
    logp = np.array([[np.log(1.1), 0.0]])
    assert clip_fraction(logp, np.zeros((1, 2)), [1.0], np.array([[1.0, 0.0]])) == 0.0


# ---- folded from tests/test_mutation_kills.py ------------------------------------------------


def test_clipped_surrogate_ignores_whatever_sits_at_padding():
    # padding holds huge log-probs and a huge negative advantage: rho is 1 there by definition,
    # so the clipped branch is A, weighted 0; nothing may leak into the loss, gradient or fraction
    logp, old, mask = [[-0.5, 300.0]], [[-0.7, -300.0]], [[1.0, 0.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = clip.clipped_surrogate(logp, old, [[2.0, -1e308]], mask)
        frac = clip.clip_fraction(logp, old, [[2.0, -1e308]], mask)
    want = clip.clipped_surrogate([[-0.5, 0.0]], [[-0.7, 0.0]], [[2.0, 0.0]], mask)
    # rho = exp(0.2) = 1.2214 > 1.2 with A = 2 > 0: clipped, f = 1.2 * 2 = 2.4, gradient 0
    assert got[0] == want[0] == -2.4 and np.array_equal(got[1], want[1])
    assert (got[1] == 0).all() and frac == 1.0


# ---- public defaults, pinned (each default against a value that changes the answer) -----------


def _wide_batch(seed=21, B=6, T=5):
    """Ratios spread over [e^-0.6, e^0.6] (so eps = 0.2 and 0.3 clip differently), both signs of
    A, responses of different lengths."""
    rng = np.random.default_rng(seed)
    mask = (np.arange(T)[None, :] < rng.integers(1, T + 1, (B, 1))).astype(float)
    logp_old = -rng.uniform(0.5, 2.0, (B, T))
    return logp_old + rng.uniform(-0.6, 0.6, (B, T)), logp_old, rng.normal(size=B), mask


def _same(a, b):
    return (
        all(np.array_equal(x, y) for x, y in zip(np.atleast_1d(a), np.atleast_1d(b)))
        if not isinstance(a, tuple)
        else all(_same(x, y) for x, y in zip(a, b))
    )


def test_clip_defaults_are_the_documented_values():
    args = _wide_batch()
    base = clipped_surrogate(*args)
    assert _same(base, clipped_surrogate(*args, eps=0.2, eps_high=None, agg="token_mean", max_len=None))
    assert _same(base, clipped_surrogate(*args, eps_high=0.2))  # eps_high defaults to eps
    for kw in (dict(eps=0.3), dict(eps_high=0.3), dict(agg="seq_sum")):
        assert not _same(base, clipped_surrogate(*args, **kw)), kw
    f = clip_fraction(*args)
    assert f == clip_fraction(*args, eps=0.2, eps_high=0.2) > 0
    assert clip_fraction(*args, eps=0.3) < f and clip_fraction(*args, eps_high=0.5) < f


def test_the_bodies_overflow_to_inf_without_a_warning():
    # the boundary rejects a non-finite result; the bodies themselves (GRPO calls them) return it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rho, s1, s2 = clip.branches(
            np.array([[800.0]]), np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)), 0.2, 0.2
        )
        loss, g = clipped_surrogate.core(
            np.zeros((1, 2)), np.zeros((1, 2)), np.array([1e308]), np.ones((1, 2)), 0.2, 0.2, "token_sum", None
        )
    assert rho[0, 0] == np.inf and s1[0, 0] == np.inf and s2[0, 0] == 1.2
    assert loss == -np.inf and np.array_equal(g, [[-1e308, -1e308]])

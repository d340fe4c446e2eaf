"""The clip family of seqclip.py: dual-clip, GSPO (geometric and product ratio), CISPO.

Each gradient against central finite differences in float64 (tests/gradcheck.py, h = 1e-6:
truncation ~1e-12, rounding ~1e-10 |f|; losses here are O(1), so atol 1e-8). Each loss against
the framework's formula as its source states it, re-derived below in NumPy:
verl verl/trainer/ppo/core_algos.py @ 1dda039b9c (2026-08-22): compute_policy_loss_vanilla
(dual-clip, clip_ratio_c), compute_policy_loss_gspo, compute_policy_loss_cispo;
TRL trl/trainer/grpo_trainer.py @ f2cd57710a (2026-07-24): _compute_loss (delta,
importance_sampling_level="sequence", loss_type="cispo").
A stop-gradient sg[x] is re-derived by differentiating with x's inputs frozen."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core import ops
from minirl_lm.pg import seqclip
from minirl_lm.pg.reinforce import AGGS, reinforce_loss
from minirl_lm.pg.seqclip import (
    RATIOS,
    cispo_loss,
    dual_clip_surrogate,
    gspo_surrogate,
    luspo_surrogate,
    ratio_scale,
    sequence_ratio,
)
from quiet import names, silent

ATOL = 1e-8


def batch(rng, B=10, T=5, spread=0.8, edges=(0.8, 1.2, 1.28, 3.0)):
    """logp, logp_old, per-token adv, mask; log-ratios in [-spread, spread] away from the kinks."""
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp_old = -rng.uniform(0.1, 3.0, size=(B, T))
    d = rng.uniform(-spread, spread, size=(B, T))
    for e in edges:
        d[np.abs(d - np.log(e)) < 1e-3] += 3e-3
    return (logp_old + d) * mask, logp_old * mask, rng.normal(size=(B, T)), mask


# ---- dual-clip ---------------------------------------------------------------------------------
@pytest.mark.parametrize("agg", AGGS)
def test_dual_clip_gradient_matches_finite_differences(agg):
    rng = np.random.default_rng(0)
    logp, logp_old, adv, mask = batch(rng, spread=1.6, edges=(0.8, 1.2, 2.0))
    f = lambda x: dual_clip_surrogate(x, logp_old, adv, mask, eps=0.2, c=2.0, agg=agg)[0]
    _, d = dual_clip_surrogate(logp, logp_old, adv, mask, eps=0.2, c=2.0, agg=agg)
    rho = np.exp(logp - logp_old)
    assert ((adv < 0) & (rho > 2.0) & (mask > 0)).sum() >= 2  # the dual clip is exercised
    np.testing.assert_allclose(d, fd_grad(f, logp), atol=ATOL, rtol=0)


def verl_dual_clip(logp, logp_old, adv, mask, lo, hi, c):
    """compute_policy_loss_vanilla as verl states it, loss_agg_mode="token-mean"."""
    ratio = np.exp(np.clip(logp - logp_old, -20.0, 20.0))
    pg1 = -adv * ratio
    pg2 = -adv * np.clip(ratio, 1 - lo, 1 + hi)
    clip1 = np.maximum(pg1, pg2)
    pg3 = -adv * c
    clip2 = np.minimum(pg3, clip1)
    pg = np.where(adv < 0, clip2, clip1)
    return (pg * mask).sum() / mask.sum()


def trl_delta(logp, logp_old, adv, mask, eps, eps_high, delta):
    """TRL's two-sided GRPO loss (delta), loss_type="dapo" with one process and no accumulation."""
    coef_1 = np.exp(logp - logp_old)
    coef_2 = np.clip(coef_1, 1 - eps, 1 + eps_high)
    coef_1 = np.minimum(coef_1, delta)
    per_token = -np.minimum(coef_1 * adv, coef_2 * adv)
    return (per_token * mask).sum() / max(mask.sum(), 1.0)


def test_dual_clip_is_verls_clip_ratio_c_and_trls_delta():
    rng = np.random.default_rng(1)
    logp, logp_old, adv, mask = batch(rng, spread=1.6, edges=(0.8, 1.2, 1.28, 2.5))
    ours, d = dual_clip_surrogate(logp, logp_old, adv, mask, eps=0.2, eps_high=0.28, c=2.5)
    assert np.isclose(ours, verl_dual_clip(logp, logp_old, adv, mask, 0.2, 0.28, 2.5), rtol=1e-13, atol=0)
    g_verl = fd_grad(lambda x: verl_dual_clip(x, logp_old, adv, mask, 0.2, 0.28, 2.5), logp)
    np.testing.assert_allclose(d, g_verl, atol=ATOL, rtol=0)
    # TRL's delta (> 1 + eps_high) caps rho at delta for every sign: for A < 0 that is the dual
    # clip with c = delta, for A > 0 the PPO clip already binds first, so the losses agree
    assert np.isclose(ours, trl_delta(logp, logp_old, adv, mask, 0.2, 0.28, 2.5), rtol=1e-13)


def test_dual_clip_caps_an_overflowing_ratio():
    logp_old = np.array([[-800.0, -1.0]])
    logp = np.array([[-0.1, -1.0]])
    adv = np.array([[-1.5, 0.0]])
    loss, d = dual_clip_surrogate(logp, logp_old, adv, np.ones((1, 2)), c=3.0, agg="seq_sum")
    assert loss == 4.5 and np.all(d == 0)  # -(c A) = 4.5, gradient 0


@pytest.mark.parametrize("c", [1.0, 0.5, -2.0])
def test_dual_clip_rejects_c_at_most_one_and_says_why(c):
    logp, logp_old, adv, mask = batch(np.random.default_rng(2))
    with pytest.raises(ValueError, match=r"^c: expected a number > 1 .*rho = 1"):
        dual_clip_surrogate(logp, logp_old, adv, mask, c=c)


# ---- sequence ratios: GSPO --------------------------------------------------------------------
@pytest.mark.parametrize("ratio", ["geometric", "product"])
def test_gspo_gradient_matches_finite_differences(ratio):
    rng = np.random.default_rng(3)
    logp, logp_old, _, mask = batch(rng, spread=0.3)
    A = rng.normal(size=len(mask))
    eps = 0.05
    f = lambda x: gspo_surrogate(x, logp_old, A, mask, eps=eps, ratio=ratio)[0]
    _, d = gspo_surrogate(logp, logp_old, A, mask, eps=eps, ratio=ratio)
    s = sequence_ratio(logp, logp_old, mask, ratio)
    inside = (s > 1 - eps) & (s < 1 + eps)
    assert inside.any() and (~inside & (mask.sum(1) > 0)).any()  # clipped and unclipped rows
    assert np.abs(s - (1 - eps)).min() > 1e-4 and np.abs(s - (1 + eps)).min() > 1e-4  # no kink
    np.testing.assert_allclose(d, fd_grad(f, logp), atol=ATOL, rtol=0)


def test_sequence_ratios_are_the_product_and_its_geometric_mean():
    rng = np.random.default_rng(4)
    logp, logp_old, _, mask = batch(rng)
    prod = np.prod(np.where(mask > 0, np.exp(logp - logp_old), 1.0), axis=1)
    n = mask.sum(1)
    np.testing.assert_allclose(sequence_ratio(logp, logp_old, mask, "product"), prod, rtol=1e-13)
    geo = np.where(n > 0, prod ** (1 / np.maximum(n, 1)), 1.0)
    np.testing.assert_allclose(sequence_ratio(logp, logp_old, mask), geo, rtol=1e-13)


def verl_gspo(x, frozen, logp_old, adv, mask, lo, hi):
    """compute_policy_loss_gspo as verl states it (seq-mean-token-mean); `frozen` is the detached
    log_prob: s_bt = exp(sg[mean log ratio] + log_prob - sg[log_prob])."""
    n = np.maximum(mask.sum(-1), 1.0)
    seq = ((frozen - logp_old) * mask).sum(-1) / n  # detached
    log_s = np.minimum(x - frozen + seq[:, None], 10.0)
    s = np.exp(log_s)
    pg = np.maximum(-adv[:, None] * s, -adv[:, None] * np.clip(s, 1 - lo, 1 + hi))
    per_seq = (pg * mask).sum(-1) / n
    return per_seq.mean()


def trl_gspo(logp, logp_old, adv, mask, eps, eps_high):
    """TRL importance_sampling_level="sequence", loss_type="grpo" (no accumulation)."""
    n = np.maximum(mask.sum(-1, keepdims=True), 1.0)
    coef_1 = np.exp(((logp - logp_old) * mask).sum(-1, keepdims=True) / n)  # (B, 1)
    coef_2 = np.clip(coef_1, 1 - eps, 1 + eps_high)
    per_token = -np.minimum(coef_1 * adv[:, None], coef_2 * adv[:, None])  # (B, 1)
    return ((per_token * mask).sum(-1) / n[:, 0]).mean()


def test_gspo_is_verls_and_trls_sequence_level_loss():
    rng = np.random.default_rng(5)
    logp, logp_old, _, mask = batch(rng, spread=0.3)
    mask[0, 0] = 1.0  # verl's mean needs no empty rows
    A = rng.normal(size=len(mask))
    ours, d = gspo_surrogate(logp, logp_old, A, mask, eps=0.2, eps_high=0.28)
    assert np.isclose(ours, verl_gspo(logp, logp, logp_old, A, mask, 0.2, 0.28), rtol=1e-13)
    assert np.isclose(ours, trl_gspo(logp, logp_old, A, mask, 0.2, 0.28), rtol=1e-13)
    g_verl = fd_grad(lambda x: verl_gspo(x, logp, logp_old, A, mask, 0.2, 0.28), logp)
    np.testing.assert_allclose(d, g_verl, atol=ATOL, rtol=0)  # sg decomposition: same gradient
    g_trl = fd_grad(lambda x: trl_gspo(x, logp_old, A, mask, 0.2, 0.28), logp)
    np.testing.assert_allclose(d, g_trl, atol=ATOL, rtol=0)


def test_product_ratio_clips_long_responses_the_geometric_mean_does_not():
    rng = np.random.default_rng(6)
    B, T = 200, 64
    mask = np.ones((B, T))
    logp_old = -rng.uniform(0.5, 2.0, size=(B, T))
    logp = logp_old + rng.normal(scale=0.05, size=(B, T))  # each token ratio within ~5%
    prod = sequence_ratio(logp, logp_old, mask, "product")
    geo = sequence_ratio(logp, logp_old, mask, "geometric")
    out = lambda s: np.mean((s < 0.8) | (s > 1.2))
    assert out(geo) == 0.0 and out(prod) > 0.5


def test_gspo_overflow_raises_naming_the_function():
    logp_old = np.full((1, 2), -400.0)
    with pytest.raises(ValueError, match="^gspo_surrogate: expected a finite loss"):
        gspo_surrogate(np.zeros((1, 2)), logp_old, np.array([-1.0]), np.ones((1, 2)), ratio="product")


def test_gspo_rejects_per_token_advantages():
    logp, logp_old, adv, mask = batch(np.random.default_rng(7))
    with pytest.raises(ValueError, match=r"^adv: expected shape \(10,\)"):
        gspo_surrogate(logp, logp_old, adv, mask)


# ---- CISPO -------------------------------------------------------------------------------------
def held(f, logp, logp_old):
    """f's derivative with the weight sg[clip(rho)] held: shift logp_old with logp (rho fixed)."""
    return fd_grad(lambda x: f(x, logp_old + (x - logp)), logp)


@pytest.mark.parametrize("bounds", [(None, 1.1), (0.8, 1.28)])
@pytest.mark.parametrize("agg", AGGS)
def test_cispo_gradient_is_the_stop_gradient_one(bounds, agg):
    rng = np.random.default_rng(8)
    logp, logp_old, adv, mask = batch(rng)
    f = lambda x, lo: cispo_loss(x, lo, adv, mask, rho_min=bounds[0], rho_max=bounds[1], agg=agg)[0]
    _, d = cispo_loss(logp, logp_old, adv, mask, rho_min=bounds[0], rho_max=bounds[1], agg=agg)
    np.testing.assert_allclose(d, held(f, logp, logp_old), atol=ATOL, rtol=0)
    rho = np.exp(logp - logp_old)
    assert np.all(d[(mask > 0) & (rho > 1.28) & (adv != 0)] != 0)  # no token loses its gradient


def trl_cispo(x, frozen, logp_old, adv, mask, epsilon_high):
    clamped = np.minimum(np.exp(frozen - logp_old), epsilon_high)  # .detach()
    per_token = -clamped * adv * x
    return (per_token * mask).sum() / max(mask.sum(), 1.0)  # num_items_in_batch normalizer


def verl_cispo(x, frozen, logp_old, adv, mask, lo, hi):
    ratio = np.exp(np.clip(frozen - logp_old, -20.0, 20.0))
    clipped = np.clip(ratio, 1 - lo, 1 + hi)  # .detach()
    pg = -clipped * adv * x
    return (pg * mask).sum() / mask.sum()  # token-mean


def test_cispo_is_trls_and_verls():
    rng = np.random.default_rng(9)
    logp, logp_old, adv, mask = batch(rng)
    ours, d = cispo_loss(logp, logp_old, adv, mask, rho_min=None, rho_max=5.0)
    assert np.isclose(ours, trl_cispo(logp, logp, logp_old, adv, mask, 5.0), rtol=1e-13)
    np.testing.assert_allclose(
        d, fd_grad(lambda x: trl_cispo(x, logp, logp_old, adv, mask, 5.0), logp), atol=ATOL, rtol=0
    )
    ours, d = cispo_loss(logp, logp_old, adv, mask, rho_min=0.8, rho_max=1.28)
    assert np.isclose(ours, verl_cispo(logp, logp, logp_old, adv, mask, 0.2, 0.28), rtol=1e-13)
    np.testing.assert_allclose(
        d, fd_grad(lambda x: verl_cispo(x, logp, logp_old, adv, mask, 0.2, 0.28), logp), atol=ATOL, rtol=0
    )


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"rho_max": 0.2}, "^rho_max: expected a number >= 1"),
        ({"rho_min": 1.2}, "^rho_min: expected a number >= 0 and <= 1"),
        ({"rho_min": -0.1}, "^rho_min"),
        ({"agg": "x"}, "^agg"),
    ],
)
def test_cispo_bad_bounds(kw, msg):
    logp, logp_old, adv, mask = batch(np.random.default_rng(10))
    with pytest.raises(ValueError, match=msg):
        cispo_loss(logp, logp_old, adv, mask, **kw)


# ---- rho = 1: the whole family is REINFORCE ------------------------------------------------------
@pytest.mark.parametrize("agg", AGGS)
def test_at_rho_one_dual_clip_and_cispo_are_reinforce_bitwise(agg):
    rng = np.random.default_rng(11)
    logp, _, adv, mask = batch(rng)
    ref = reinforce_loss(logp, adv, mask, agg=agg)
    for _loss, d in (
        dual_clip_surrogate(logp, logp, adv, mask, agg=agg),
        cispo_loss(logp, logp, adv, mask, agg=agg),
        cispo_loss(logp, logp, adv, mask, rho_min=0.8, rho_max=1.28, agg=agg),
    ):
        assert np.array_equal(d, ref[1])
    assert cispo_loss(logp, logp, adv, mask, agg=agg)[0] == ref[0]
    A = adv[:, 0]
    _, d = gspo_surrogate(logp, logp, A, mask)  # GSPO: seq-mean-token-mean
    np.testing.assert_allclose(d, reinforce_loss(logp, A, mask, "seq_mean_token_mean")[1], rtol=1e-15, atol=0)


def test_aggregation_weights_and_shared_pieces_are_core_ops():
    assert seqclip.agg_weights is ops.agg_weights  # eq. (pg_agg), once
    assert seqclip.log_ratio is ops.log_ratio


@pytest.mark.parametrize("fn", [dual_clip_surrogate, cispo_loss])
def test_bad_inputs(fn):
    logp, logp_old, adv, mask = batch(np.random.default_rng(13))
    with pytest.raises(ValueError, match=r"^logp_old: expected shape \(10, 5\), got \(10, 4\)"):
        fn(logp, logp_old[:, :-1], adv, mask)
    bad = logp.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="^logp: expected no NaN"):
        fn(bad, logp_old, adv, mask)
    with pytest.raises(TypeError, match="^logp: expected a real-valued array"):
        fn("x", logp_old, adv, mask)
    with pytest.raises(ValueError, match="^mask: expected only 0 and 1"):
        fn(logp, logp_old, adv, mask * 0.5)


# ---- overflow named at its root --------------------------------------------------------------


def test_sequence_ratio_beyond_float64_is_an_error_not_inf():
    m = np.ones((1, 2))
    # the geometric mean of two log-ratios of 800: exp(800) (it returned inf)
    names(
        "sequence_ratio", "finite s, got inf", lambda: sequence_ratio(np.full((1, 2), 800.0), np.zeros((1, 2)), m)
    )
    names(
        "sequence_ratio",
        "finite s, got inf",
        lambda: sequence_ratio(np.full((1, 2), 400.0), np.zeros((1, 2)), m, "product"),
    )
    # a log-ratio of 1e308 - (-1e308) overflows the subtraction; inf - inf is NaN (it warned)
    lp, old = np.array([[1e308, -1e308]]), np.array([[-1e308, 1e308]])
    assert "NaN" in names("sequence_ratio", "logp in [-1e+308, 1e+308]", lambda: sequence_ratio(lp, old, m))
    # the same ratio inside GSPO: an A > 0 clips it to a finite loss, silently
    loss, d = silent(lambda: gspo_surrogate(np.full((1, 2), 800.0), np.zeros((1, 2)), [1.0], m))
    assert loss == -1.2 and (d == 0).all()
    names("gspo_surrogate", "finite loss", lambda: gspo_surrogate(lp, old, np.ones(1), m))


def test_dual_clip_and_cispo_overflow_are_named_and_silent():
    m, big = np.ones((1, 2)), np.full((1, 2), 1e308)
    names("cispo_loss", "finite loss", lambda: cispo_loss(big, np.zeros((1, 2)), [1e308], m, agg="seq_sum"))
    # rho = inf with A > 0 is clipped, and the dual clip never acts on A > 0: finite, silent
    loss, d = silent(lambda: dual_clip_surrogate(big, -big, np.ones(1), m))
    assert loss == -1.2 and (d == 0).all()


def test_dual_clip_default_c_is_three():
    # A = -1 and rho = 4 > c: the default caps the token's loss at c |A| = 3 (c = 10 would not)
    lp, old, m = np.log([[4.0]]), np.zeros((1, 1)), np.ones((1, 1))
    assert dual_clip_surrogate(lp, old, [-1.0], m)[0] == dual_clip_surrogate(lp, old, [-1.0], m, c=3.0)[0] == 3.0
    np.testing.assert_allclose(dual_clip_surrogate(lp, old, [-1.0], m, c=10.0)[0], 4.0, rtol=1e-15)


# ---- public defaults, pinned -------------------------------------------------------------------


def _wide_batch(seed=21, B=6, T=5):
    rng = np.random.default_rng(seed)
    mask = (np.arange(T)[None, :] < rng.integers(1, T + 1, (B, 1))).astype(float)
    logp_old = -rng.uniform(0.5, 2.0, (B, T))
    return logp_old + rng.uniform(-1.5, 1.5, (B, T)), logp_old, rng.normal(size=B), mask


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def test_seqclip_defaults_are_the_documented_values():
    logp, old, adv, mask = _wide_batch()
    base = dual_clip_surrogate(logp, old, adv, mask)
    assert _same(base, dual_clip_surrogate(logp, old, adv, mask, eps=0.2, eps_high=None, c=3.0, agg="token_mean"))
    for kw in (dict(eps=0.3), dict(eps_high=0.3), dict(c=2.0), dict(agg="seq_sum")):
        assert not _same(base, dual_clip_surrogate(logp, old, adv, mask, **kw)), kw
    base = gspo_surrogate(logp, old, adv, mask)
    assert _same(base, gspo_surrogate(logp, old, adv, mask, eps=0.2, eps_high=None, ratio="geometric"))
    for kw in (dict(eps=0.5), dict(eps_high=0.6), dict(ratio="product")):
        assert not _same(base, gspo_surrogate(logp, old, adv, mask, **kw)), kw
    assert np.array_equal(sequence_ratio(logp, old, mask), sequence_ratio(logp, old, mask, "geometric"))
    base = cispo_loss(logp, old, adv, mask)
    assert _same(base, cispo_loss(logp, old, adv, mask, rho_min=None, rho_max=5.0, agg="token_mean"))
    for kw in (dict(rho_min=0.5), dict(rho_max=2.0), dict(agg="seq_sum")):
        assert not _same(base, cispo_loss(logp, old, adv, mask, **kw)), kw


# ---- the mutants a sampled run left (max_len, overflow silence, ties, empty rows) -----------


def test_max_len_reaches_the_constant_aggregation():
    logp, old, adv, mask = _wide_batch()
    for fn in (dual_clip_surrogate, cispo_loss):
        T = mask.shape[1]
        loss_T, d_T = fn(logp, old, adv, mask, agg="constant")
        loss_10, d_10 = fn(logp, old, adv, mask, agg="constant", max_len=10)
        np.testing.assert_allclose(loss_10, loss_T * T / 10, rtol=1e-14)
        np.testing.assert_allclose(d_10, d_T * T / 10, rtol=1e-14)


def test_zero_advantage_and_overflowing_products_stay_finite_and_silent():
    m = np.ones((1, 1))
    far = np.full((1, 1), 800.0)  # rho = exp(800) = inf
    for fn in (dual_clip_surrogate, gspo_surrogate):
        loss, d = silent(lambda: fn(far, np.zeros((1, 1)), [0.0], m))  # A = 0: no 0 * inf
        assert loss == 0.0 and (d == 0).all()
    # rho = e^700 is finite, rho A = e^700 1e10 overflows: clipped (A > 0), finite, silent
    near = np.full((1, 1), 700.0)
    for fn in (dual_clip_surrogate, gspo_surrogate):
        loss, d = silent(lambda: fn(near, np.zeros((1, 1)), [1e10], m))
        assert loss == -1.2e10 and (d == 0).all()
    # an unbounded clip range lets the clipped branch overflow: named, with the loss's name
    names(
        "dual_clip_surrogate",
        "eps_high = 1e+308",
        lambda: dual_clip_surrogate(far, np.zeros((1, 1)), [1e10], m, eps_high=1e308),
    )
    names("sequence_ratio", "logp_old in [-800, -800]", lambda: sequence_ratio(np.zeros((1, 1)), -far, m))


def test_dual_clip_tie_at_c_keeps_the_gradient():
    # rho A == c A exactly: the cap is not strictly smaller, the unclipped gradient rho A stays
    lp, old, m = np.log([[3.0]]), np.zeros((1, 1)), np.ones((1, 1))
    rho = float(np.exp(lp[0, 0] - 0.0))
    loss, d = dual_clip_surrogate(lp, old, [-1.0], m, c=rho)
    assert loss == rho and d[0, 0] == rho  # -w rho A with w = 1, A = -1


def test_gspo_empty_responses_add_nothing_and_the_lower_clip_acts():
    m = np.array([[1.0], [0.0]])  # response 1 is empty
    for a in (1.0, -1.0):
        loss, d = gspo_surrogate(np.zeros((2, 1)), np.zeros((2, 1)), [a, -3.0 * a], m)
        assert loss == -a / 2 and d[1, 0] == 0.0  # only response 0, over B = 2
    # s = 0.5 < 1 - eps with A < 0: the clipped branch (1 - eps) A is the min, gradient 0
    loss, d = gspo_surrogate(np.log([[0.5]]), np.zeros((1, 1)), [-1.0], np.ones((1, 1)))
    assert loss == 0.8 and d[0, 0] == 0.0


def test_inf_minus_inf_in_the_sums_is_named_and_silent():
    # two tokens whose terms are +inf and -inf: the sum is NaN (an invalid operation), silently
    names(
        "cispo_loss",
        "got NaN",
        lambda: cispo_loss([[4.0, 4.0]], [[4.0, 4.0]], [[1e308, -1e308]], np.ones((1, 2))),
    )
    far = np.full((2, 1), 800.0)  # s = inf for both responses
    names(
        "gspo_surrogate",
        "finite loss",
        lambda: gspo_surrogate(far, np.zeros((2, 1)), [-1.0, 1e10], np.ones((2, 1)), eps_high=1e308),
    )


# ---- LUSPO -------------------------------------------------------------------------------------
def test_luspo_gradient_matches_finite_differences_and_is_reinforce_seq_sum_at_rho_one():
    rng = np.random.default_rng(21)
    logp, logp_old, _, mask = batch(rng, spread=0.3)
    adv = rng.normal(size=len(mask))
    s = sequence_ratio(logp, logp_old, mask)
    assert ((s > 1.2) | (s < 0.8)).any() and ((s < 1.2) & (s > 0.8)).any()  # both sides of the clip
    _, g = luspo_surrogate(logp, logp_old, adv, mask, 0.2)
    fd = fd_grad(lambda x: luspo_surrogate(x, logp_old, adv, mask, 0.2)[0], logp)
    np.testing.assert_allclose(g, fd, atol=ATOL, rtol=0)
    # at s = 1: every token gets the whole sequence term, REINFORCE with seq_sum
    _, g1 = luspo_surrogate(logp, logp, adv, mask)
    np.testing.assert_allclose(g1, reinforce_loss(logp, adv, mask, "seq_sum")[1], rtol=1e-15, atol=0)
    a, b = luspo_surrogate(logp, logp_old, adv, mask), luspo_surrogate(logp, logp_old, adv, mask, 0.2, 0.2)
    assert a[0] == b[0]
    names("eps", "<= 1", lambda: luspo_surrogate(logp, logp_old, adv, mask, 1.5))


def trl_luspo(logp, logp_old, adv, mask, lo, hi):
    """TRL 1.16.0 trl/trainer/grpo_trainer.py:3085-3095 (importance_sampling_level="sequence"),
    :3112-3119 (the clipped term, delta None) and :3175-3182 (loss_type="luspo": the (B, 1) loss
    summed over the mask, then the batch mean)."""
    log_ratio = logp - logp_old
    log_iw = ((log_ratio * mask).sum(-1) / np.maximum(mask.sum(-1), 1.0))[:, None]
    coef_1 = np.exp(log_iw)
    coef_2 = np.clip(coef_1, 1 - lo, 1 + hi)
    per_token_loss = -np.minimum(coef_1 * adv[:, None], coef_2 * adv[:, None])
    return (per_token_loss * mask).sum(-1).mean()


def test_luspo_against_trl():
    rng = np.random.default_rng(22)
    logp, logp_old, _, mask = batch(rng, spread=0.3)
    adv = rng.normal(size=len(mask))
    loss, g = luspo_surrogate(logp, logp_old, adv, mask, 0.2, 0.28)
    assert abs(loss - trl_luspo(logp, logp_old, adv, mask, 0.2, 0.28)) < 1e-13
    fd = fd_grad(lambda x: trl_luspo(x, logp_old, adv, mask, 0.2, 0.28), logp)  # autograd's, by FD
    np.testing.assert_allclose(g, fd, atol=ATOL, rtol=0)


@pytest.mark.parametrize("ratio", RATIOS)
def test_ratio_scale_is_the_derivative_of_the_log_sequence_ratio(ratio):
    rng = np.random.default_rng(23)
    logp, logp_old, _, mask = batch(rng, spread=0.3)
    mask[2, 1] = 0.0  # a hole: not counted in |y_b|
    g = fd_grad(lambda x: np.log(sequence_ratio(x, logp_old, mask, ratio)).sum(), logp)  # d log s_b / d logp
    np.testing.assert_allclose(
        g, np.broadcast_to(np.reshape(ratio_scale(mask, ratio), (-1, 1)), mask.shape) * mask, atol=ATOL
    )


def test_luspo_reads_eps_high_and_dual_clip_names_c():
    logp, zero, mask = np.log(np.full((1, 2), 1.5)), np.zeros((1, 2)), np.ones((1, 2))
    loss, g = seqclip.luspo_surrogate(logp, zero, [1.0], mask, eps=0.2, eps_high=0.6)  # s = 1.5 < 1.6
    assert loss == pytest.approx(-3.0, rel=1e-14) and np.allclose(g, -1.5, rtol=1e-14)
    assert seqclip.luspo_surrogate(logp, zero, [1.0], mask, eps=0.2)[0] == pytest.approx(-2.4, rel=1e-14)
    with pytest.raises(TypeError) as e:
        seqclip.dual_clip_surrogate(zero - 0.5, zero - 0.5, [-1.0], mask, c="x")
    assert str(e.value) == "c: expected a real number, got str 'x'"

"""The trust-region objectives of trust.py: SAPO, DPPO (TV, KL), GMPO, VESPO.

Gradients against central finite differences in float64 (tests/gradcheck.py, h = 1e-6:
truncation ~1e-12, rounding ~1e-10 |f|; the losses are O(1), so atol 1e-8), at points away from
every gate's edge (DPPO's bounds, GMPO's log-clip). A detached weight (DPPO's truncated ratio and
mask, VESPO's phi) is held by shifting logp_old together with logp. Each loss against the
framework's lines re-derived in NumPy (the file and line at the release in each docstring).
"""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.ops import AGGS, agg_weights
from minirl_lm.pg.trust import dppo_loss, dppo_mask, gmpo_loss, sapo_loss, vespo_loss, vespo_weight
from quiet import names, silent

ATOL = 1e-8


def batch(rng, B=8, T=5, spread=0.6, holes=True):
    """logp, logp_old, adv (B,), mask with an empty row, a full row and holes."""
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    if holes:
        mask[1:-1, 1] = 0.0  # a hole after the first token
    logp_old = -rng.uniform(0.05, 3.0, size=(B, T))
    logp = logp_old + rng.uniform(-spread, spread, size=(B, T))
    adv = rng.normal(size=B)
    return logp, logp_old, adv, mask


def held(f, logp, logp_old):
    """Finite differences of f(logp, logp_old) with logp_old shifted along: the ratio held."""
    return fd_grad(lambda x: f(x, logp_old + (x - logp)), logp)


# ---- SAPO --------------------------------------------------------------------------------------
@pytest.mark.parametrize("agg", AGGS)
def test_sapo_gradient_matches_finite_differences(agg):
    rng = np.random.default_rng(1)
    logp, logp_old, adv, mask = batch(rng, spread=1.5)
    A = rng.normal(size=logp.shape)  # per-token advantages
    _, g = sapo_loss(logp, logp_old, A, mask, tau_pos=1.0, tau_neg=1.05, agg=agg, max_len=9)
    np.testing.assert_allclose(
        g,
        fd_grad(lambda x: sapo_loss(x, logp_old, A, mask, tau_pos=1.0, tau_neg=1.05, agg=agg, max_len=9)[0], logp),
        atol=ATOL,
    )
    assert (g[mask == 0] == 0).all()


def test_sapo_is_reinforce_at_rho_one_and_its_gate_never_zero():
    rng = np.random.default_rng(2)
    logp, _, adv, mask = batch(rng)
    _, g = sapo_loss(logp, logp, adv, mask)
    w = agg_weights(mask, "seq_mean_token_mean")
    np.testing.assert_allclose(g, -w * adv[:, None], rtol=1e-15, atol=0)  # slope 4 (1/4) 1 = 1
    # far moves: the slope decays but stays positive (no token loses its gradient exactly)
    _, g2 = sapo_loss(logp, logp - 2.0 * mask, adv, mask, tau_pos=1.0, tau_neg=1.05, agg="token_mean")
    assert (np.abs(g2[mask > 0]) > 0).all() and (
        np.abs(g2[mask > 0]) < np.abs(adv[:, None] * mask)[mask > 0]
    ).all()
    # an overflowing ratio: the gate saturates at 4 / tau, the gradient is exactly 0
    loss, g3 = silent(
        lambda: sapo_loss([[0.0]], [[-800.0]], [2.0], [[1.0]], tau_pos=1.0, tau_neg=1.05, agg="seq_sum")
    )
    assert loss == -2.0 * 4.0 and g3[0, 0] == 0.0


def trl_sapo(logp, logp_old, A, mask, tau_pos, tau_neg):
    """TRL 1.16.0 trl/trainer/grpo_trainer.py:3121-3124 (the gate) and :3153-3154 (the per-
    sequence mean, loss_type="sapo"), importance_sampling_level="token"."""
    coef_1 = np.exp(logp - logp_old)
    temperatures = np.where(A > 0, tau_pos, tau_neg)
    soft_coef_1 = 1.0 / (1.0 + np.exp(-temperatures * (coef_1 - 1))) * 4 / temperatures
    per_token_loss = -soft_coef_1 * A
    return ((per_token_loss * mask).sum(-1) / np.maximum(mask.sum(-1), 1.0)).mean()


def test_sapo_against_trl():
    rng = np.random.default_rng(3)
    logp, logp_old, adv, mask = batch(rng, spread=1.0)
    A = np.broadcast_to(adv[:, None], logp.shape)
    loss, g = sapo_loss(logp, logp_old, adv, mask, tau_pos=1.0, tau_neg=1.05)
    assert abs(loss - trl_sapo(logp, logp_old, A, mask, 1.0, 1.05)) < 1e-14
    fd = fd_grad(lambda x: trl_sapo(x, logp_old, A, mask, 1.0, 1.05), logp)  # autograd's, by FD
    np.testing.assert_allclose(g, fd, atol=ATOL)


# ---- DPPO --------------------------------------------------------------------------------------
def dppo_batch(rng, B=12, T=6):
    """Probabilities moved by up to 0.5 either way, away from the bounds 0.1 and 0.05 (TV) and
    from the KL bound's edge."""
    logp, logp_old, adv, mask = batch(rng, B, T, spread=1.2)
    return np.minimum(logp, -0.01), logp_old, adv, mask  # log-probs: p <= 1


@pytest.mark.parametrize("divergence", ["tv", "kl"])
@pytest.mark.parametrize("agg", ["token_mean", "seq_sum"])
def test_dppo_gradient_holds_the_mask_and_the_ratio(divergence, agg):
    rng = np.random.default_rng(4)
    logp, logp_old, adv, mask = dppo_batch(rng)
    args = dict(divergence=divergence, delta=0.05, delta_high=0.1, c=2.0, agg=agg)
    _, g = dppo_loss(logp, logp_old, adv, mask, **args)
    keep = dppo_mask(logp, logp_old, adv, mask, divergence=divergence, delta=0.05, delta_high=0.1)
    assert 0 < keep[mask > 0].sum() < (mask > 0).sum()  # both sides of the gate present
    rho = np.exp(logp - logp_old)
    assert ((rho > 2.0) & (keep > 0)).any()  # the truncation acts
    fd = held(lambda x, xo: dppo_loss(x, xo, adv, mask, **args)[0], logp, logp_old)
    np.testing.assert_allclose(g, fd, atol=ATOL)
    np.testing.assert_array_equal(g == 0, (keep == 0) | (mask == 0) | (adv[:, None] == 0))


def test_dppo_is_reinforce_at_rho_one_and_masks_by_probability_not_ratio():
    rng = np.random.default_rng(5)
    logp, _, adv, mask = batch(rng)
    for d in ("tv", "kl"):
        assert (
            dppo_loss(logp, logp, adv, mask, divergence=d)[1].tolist()
            == (-agg_weights(mask, "token_mean") * adv[:, None]).tolist()
        )
    # a ratio of 10 on a rare token moves its probability by 9e-4: kept; a move of 0.3: masked
    lp_old = np.log([[1e-4, 0.3]])
    lp = np.log([[1e-3, 0.6]])
    assert dppo_mask(lp, lp_old, [1.0], [[1.0, 1.0]], divergence="tv", delta=0.2).tolist() == [[1.0, 0.0]]
    # the other side of the advantage is never masked by a move in its own direction
    assert dppo_mask(lp, lp_old, [-1.0], [[1.0, 1.0]], divergence="tv", delta=0.2).tolist() == [[1.0, 1.0]]
    assert dppo_mask(lp, lp_old, [-1.0], [[1.0, 1.0]], divergence="kl", delta=0.01).tolist() == [[1.0, 1.0]]


def verl_dppo(logp, logp_old, A, mask, divergence, low, high, c):
    """verl 0.9.1 verl/trainer/ppo/core_algos.py:1380-1457 (dppo_tv) and 1461-1545 (dppo_kl),
    loss_agg_mode="token-mean": the loss and the gradient autograd gives (the ratio detached)."""
    ratio = np.exp(np.clip(logp - logp_old, -20.0, 20.0))
    truncated_ratio = np.minimum(ratio, c)
    prob, old_prob = np.exp(logp), np.exp(logp_old)
    if divergence == "tv":
        pos, neg = (prob - old_prob) <= high, (prob - old_prob) >= -low
    else:
        binary_kl = old_prob * (logp_old - logp) + (1 - old_prob) * np.log(
            (1.0 - old_prob + 1e-8) / (1.0 - prob + 1e-8)
        )
        pos = (binary_kl <= high) | (prob <= old_prob)
        neg = (binary_kl <= low) | (prob >= old_prob)
    valid = np.where(A > 0, pos, neg).astype(float)
    n = mask.sum()
    return (-A * truncated_ratio * logp * valid * mask).sum() / n, -A * truncated_ratio * valid * mask / n


@pytest.mark.parametrize("divergence", ["tv", "kl"])
def test_dppo_against_verl(divergence):
    rng = np.random.default_rng(6)
    logp, logp_old, adv, mask = dppo_batch(rng)
    A = np.broadcast_to(adv[:, None], logp.shape)
    loss, g = dppo_loss(logp, logp_old, adv, mask, divergence=divergence, delta=0.05, delta_high=0.1, c=2.0)
    want, gw = verl_dppo(logp, logp_old, A, mask, divergence, 0.05, 0.1, 2.0)
    assert abs(loss - want) < 1e-14
    np.testing.assert_allclose(g, gw, rtol=1e-14, atol=1e-17)


def test_dppo_defaults_and_errors():
    rng = np.random.default_rng(7)
    logp, logp_old, adv, mask = dppo_batch(rng)
    assert (
        dppo_loss(logp, logp_old, adv, mask)[0]
        == dppo_loss(
            logp,
            logp_old,
            adv,
            mask,
            divergence="tv",
            delta=0.2,
            delta_high=0.2,
            c=3.0,
            agg="token_mean",
            max_len=None,
        )[0]
    )
    assert (
        dppo_loss(logp, logp_old, adv, mask, c=1e300)[1].tolist()
        == (
            -agg_weights(mask, "token_mean")
            * np.exp(logp - logp_old)
            * adv[:, None]
            * dppo_mask(logp, logp_old, adv, mask)
        ).tolist()
    )
    names("divergence", "'tv', 'kl'", lambda: dppo_loss(logp, logp_old, adv, mask, divergence="js"))
    names("c", ">= 1", lambda: dppo_loss(logp, logp_old, adv, mask, c=0.5))
    names("delta", "> 0", lambda: dppo_mask(logp, logp_old, adv, mask, divergence="tv", delta=0.0))


# ---- GMPO --------------------------------------------------------------------------------------
def test_gmpo_gradient_matches_finite_differences_away_from_the_log_clip():
    rng = np.random.default_rng(8)
    logp, logp_old, adv, mask = batch(rng, B=10, T=6, spread=0.5)
    u = logp - logp_old
    u[np.abs(np.abs(u) - 0.2) < 2e-3] += 5e-3
    logp = logp_old + u
    _, g = gmpo_loss(logp, logp_old, adv, mask, 0.2)
    np.testing.assert_allclose(g, fd_grad(lambda x: gmpo_loss(x, logp_old, adv, mask, 0.2)[0], logp), atol=ATOL)
    clipped = (mask > 0) & (g == 0)
    assert clipped.any() and ((mask > 0) & (g != 0)).any()  # both sides of the clip


def test_gmpo_at_rho_one_is_the_per_sequence_token_mean_of_reinforce():
    rng = np.random.default_rng(9)
    logp, _, adv, mask = batch(rng)
    _, g = gmpo_loss(logp, logp, adv, mask)
    np.testing.assert_allclose(g, -agg_weights(mask, "seq_mean_token_mean") * adv[:, None], rtol=1e-15, atol=0)
    a, b = gmpo_loss(logp, logp + 0.3, adv, mask), gmpo_loss(logp, logp + 0.3, adv, mask, 0.2, 0.2)
    assert a[0] == b[0] and (a[1] == b[1]).all()  # eps_high defaults to eps


def verl_gmpo(logp, logp_old, A, mask, low, high):
    """verl 0.9.1 verl/trainer/ppo/core_algos.py:1929-2003 (geo_mean), as it is written."""
    negative_approx_kl = logp - logp_old
    sgn_advantage = np.sign(A)
    clamp = np.clip(negative_approx_kl, -low, high)
    kl_min = sgn_advantage * np.minimum(sgn_advantage * negative_approx_kl, sgn_advantage * clamp)
    response_mask_sum = mask.sum(-1)
    ratio = np.exp((kl_min * mask).sum(-1) / (response_mask_sum + 1e-8))
    advantage = (A * mask).sum(-1) / (response_mask_sum + 1e-8)
    return np.mean(-advantage * ratio)


def test_gmpo_against_verl():
    rng = np.random.default_rng(10)
    logp, logp_old, adv, mask = batch(rng, spread=0.5, holes=False)
    A = np.broadcast_to(adv[:, None], logp.shape)
    loss, g = gmpo_loss(logp, logp_old, adv, mask, 0.2, 0.3)
    assert abs(loss - verl_gmpo(logp, logp_old, A, mask, 0.2, 0.3)) < 1e-7  # verl's 1e-8 in n
    np.testing.assert_allclose(g, fd_grad(lambda x: verl_gmpo(x, logp_old, A, mask, 0.2, 0.3), logp), atol=1e-7)


# ---- VESPO -------------------------------------------------------------------------------------
def test_vespo_gradient_holds_phi_and_phi_is_one_at_w_one():
    rng = np.random.default_rng(11)
    logp, logp_old, adv, mask = batch(rng, spread=0.3)
    for agg in AGGS:
        _, g = vespo_loss(logp, logp_old, adv, mask, agg=agg)
        fd = held(lambda x, xo: vespo_loss(x, xo, adv, mask, agg=agg)[0], logp, logp_old)
        np.testing.assert_allclose(g, fd, atol=ATOL)
    assert vespo_weight(logp, logp, adv, mask).tolist() == [1.0] * len(adv)  # exp(lam - lam)
    _, g1 = vespo_loss(logp, logp, adv, mask)
    assert g1.tolist() == (-agg_weights(mask, "token_mean") * adv[:, None]).tolist()


def test_vespo_weight_peaks_at_k_over_lambda_and_vanishes_far_away():
    lp = np.log(np.array([[2.0 / 3.0], [1e-30], [1.0]]))  # W = 2/3 (the peak for A >= 0), tiny, huge
    lo = np.array([[0.0], [0.0], [-800.0]])
    phi = silent(lambda: vespo_weight(lp, lo, [1.0, 1.0, 1.0], np.ones((3, 1))))
    assert phi[0] == pytest.approx(np.exp(3.0 - 2.0) * (2.0 / 3.0) ** 2) and phi[0] > 1.0
    assert phi[1] < 1e-50 and phi[2] == 0.0


def trl_vespo(logp, logp_old, A, mask, k_pos=2.0, lambda_pos=3.0, k_neg=3.0, lambda_neg=2.0):
    """TRL 1.16.0 trl/trainer/grpo_trainer.py:2972-3029 (get_gamma_weights, no vLLM ratio),
    :3125-3136 (the loss) and :3168-3174 (the sum over the batch's tokens / their number)."""
    lower_clamp = np.log(1e-8)
    seq_log_ratio = np.sum(np.clip(logp - logp_old, -20.0, 20.0) * mask, axis=-1, keepdims=True)
    log_w_seq = np.clip(seq_log_ratio, lower_clamp, 20.0)
    w_seq = np.exp(log_w_seq)
    nonneg = A[:, :1] >= 0
    k_seq = np.where(nonneg, k_pos, k_neg)
    lambda_seq = np.maximum(np.where(nonneg, lambda_pos, lambda_neg), 1e-4)
    phi_seq = np.exp(lambda_seq + k_seq * log_w_seq - lambda_seq * w_seq)
    per_token_loss = -phi_seq * A * logp
    return (per_token_loss * mask).sum() / max(mask.sum(), 1.0), -phi_seq * A * mask / max(mask.sum(), 1.0)


def test_vespo_against_trl_and_defaults():
    rng = np.random.default_rng(12)
    logp, logp_old, adv, mask = batch(rng, spread=0.4)
    logp_old[0] = logp[0]  # the empty row: W = 1 inside TRL's clamps
    A = np.broadcast_to(adv[:, None], logp.shape)
    loss, g = vespo_loss(logp, logp_old, adv, mask)
    want, gw = trl_vespo(logp, logp_old, A, mask)
    assert abs(loss - want) < 1e-13
    np.testing.assert_allclose(g, gw, rtol=1e-13, atol=1e-17)
    assert (
        vespo_loss(logp, logp_old, adv, mask)[0]
        == vespo_loss(
            logp,
            logp_old,
            adv,
            mask,
            k_pos=2.0,
            lam_pos=3.0,
            k_neg=3.0,
            lam_neg=2.0,
            agg="token_mean",
            max_len=None,
        )[0]
    )
    names("lam_pos", "> 0", lambda: vespo_weight(logp, logp_old, adv, mask, lam_pos=0.0))
    names("adv", "shape", lambda: vespo_loss(logp, logp_old, A, mask))  # one advantage per response


def test_sapo_and_gmpo_defaults_and_errors():
    rng = np.random.default_rng(13)
    logp, logp_old, adv, mask = batch(rng)
    a = sapo_loss(logp, logp_old, adv, mask)
    b = sapo_loss(logp, logp_old, adv, mask, tau_pos=1.0, tau_neg=1.05, agg="seq_mean_token_mean", max_len=None)
    assert a[0] == b[0]
    names("tau_neg", "> 0", lambda: sapo_loss(logp, logp_old, adv, mask, tau_pos=1.0, tau_neg=-1.0))
    names("eps_high", "> 0", lambda: gmpo_loss(logp, logp_old, adv, mask, 0.2, 0.0))
    names("gmpo_loss", "eps = 1e+06", lambda: gmpo_loss([[800.0]], [[0.0]], [1.0], [[1.0]], 1e6))


def test_an_overflow_names_the_function_not_a_neighbouring_argument():
    # 4 / tau beyond float64: the gate is inf; the error names sapo_loss and shows tau_pos
    msg = names("sapo_loss", "finite loss", lambda: sapo_loss([[0.0]], [[0.0]], [1.0], [[1.0]], tau_pos=5e-324))
    assert "tau_pos = 4.94066e-324" in msg


@pytest.mark.parametrize(
    "lp, k, lam",
    [
        (1.0, 1000.0, 1.0),  # log phi = 1 + 1000 - e 1 (the peak of a large k): phi beyond float64
        (-1.0, 0.0, 1e308),  # log phi = lam (1 - 1/e), finite, its exp is not
        (1.0, 1.79e308, 0.9e308),  # k log W and lam W both overflow; their true sum is +0.24e308
    ],
)
def test_vespo_weight_beyond_float64_is_an_error_never_inf_or_nan(lp, k, lam):
    m = np.ones((1, 1))
    names(
        "vespo_weight",
        "finite phi, got inf",
        lambda: vespo_weight([[lp]], [[0.0]], [1.0], m, k_pos=k, lam_pos=lam),
    )
    names("vespo_loss", "finite loss", lambda: vespo_loss([[lp]], [[0.0]], [1.0], m, k_pos=k, lam_pos=lam))


def test_vespo_weight_underflows_to_zero_where_its_terms_overflow():
    # log phi = 1e308 (1 - e^2) + 2e308 < 0: the terms k log W and lam W overflow, phi is 0
    m = np.ones((1, 1))
    phi = silent(lambda: vespo_weight([[2.0]], [[0.0]], [1.0], m, k_pos=1e308, lam_pos=1e308))
    assert phi[0] == 0.0
    # W beyond float64 (log W = 800): phi = 0 whatever k
    assert silent(lambda: vespo_weight([[800.0]], [[0.0]], [1.0], m, k_pos=5.0))[0] == 0.0


def test_max_len_reaches_the_constant_aggregation_of_each_loss():
    rng = np.random.default_rng(0)
    lp = -rng.random((3, 4))
    args = (lp, lp + rng.normal(scale=0.1, size=(3, 4)), np.array([1.0, -1.0, 0.5]), np.ones((3, 4)))
    for f in (sapo_loss, dppo_loss, vespo_loss):
        half = f(*args, agg="constant", max_len=8)[0]  # T_max = 8 = 2 T: every weight halved
        assert half == pytest.approx(f(*args, agg="constant")[0] / 2, rel=1e-14), f.__name__


def test_vespo_loss_passes_the_negative_side_shape_and_rate():
    rng = np.random.default_rng(1)
    lp = -rng.random((2, 3))
    args = (lp, lp + rng.normal(scale=0.1, size=(2, 3)), np.array([1.0, -1.0]), np.ones((2, 3)))
    base = vespo_loss(*args)[0]
    assert vespo_loss(*args, k_neg=5.0)[0] != base and vespo_loss(*args, lam_neg=5.0)[0] != base


def test_a_zero_advantage_takes_the_negative_side():
    # dppo: a token whose probability fell by 0.5 (beyond delta = 0.2) is masked when A <= 0
    lp = np.log(np.array([[0.4, 0.5], [0.5, 0.5]]))
    lp_old = np.log(np.array([[0.9, 0.5], [0.5, 0.5]]))
    assert dppo_mask(lp, lp_old, np.array([0.0, 1.0]), np.ones((2, 2))).tolist() == [[0.0, 1.0], [1.0, 1.0]]
    # sapo: tau_pos so small that 4 / tau_pos overflows is never used without a positive advantage
    loss, _ = sapo_loss(lp, lp_old, np.array([0.0, -1.0]), np.ones((2, 2)), tau_pos=1e-310)
    assert np.isfinite(loss)


def test_dppo_tv_bounds_are_inclusive():
    # p - p_old = +0.25 (A > 0) and -0.25 (A < 0), exactly at delta_high = delta = 0.25: kept
    lp, lp_old = np.log(np.array([[0.75], [0.25]])), np.log(np.array([[0.5], [0.5]]))
    keep = dppo_mask(lp, lp_old, np.array([1.0, -1.0]), np.ones((2, 1)), delta=0.25, delta_high=0.25)
    assert keep.tolist() == [[1.0], [1.0]]


def test_dppo_kl_keeps_a_probability_of_one_finite():
    # p = 1 (logp = 0) after p_old = 0.99: D = 0.99 log 0.99 + 0.01 log((0.01 + 1e-8) / 1e-8) = 0.128
    assert dppo_mask([[0.0]], np.log([[0.99]]), [1.0], [[1.0]], divergence="kl", delta=0.2).tolist() == [[1.0]]
    # p_old = 1 (logp_old = 0), p = e^-0.1: D = 0.1 <= delta, kept on the negative side
    assert dppo_mask([[-0.1]], [[0.0]], [-1.0], [[1.0]], divergence="kl", delta=0.2).tolist() == [[1.0]]


def test_dppo_kl_bounds_are_inclusive():
    # D exactly at delta_high (p rose, A > 0) and at delta (p fell, A < 0): kept
    def kl(lp, lp_old):
        p, p_old = np.exp(lp), np.exp(lp_old)
        return float(p_old * (lp_old - lp) + (1.0 - p_old) * np.log((1.0 - p_old + 1e-8) / (1.0 - p + 1e-8)))

    lo, hi = np.log(0.3), np.log(0.6)
    up = dppo_mask([[hi]], [[lo]], [1.0], [[1.0]], divergence="kl", delta=1.0, delta_high=kl(hi, lo))
    down = dppo_mask([[lo]], [[hi]], [-1.0], [[1.0]], divergence="kl", delta=kl(lo, hi))
    assert up.tolist() == [[1.0]] and down.tolist() == [[1.0]]


def test_dppo_masked_token_adds_exactly_zero_even_where_its_weight_overflows():
    # p moved from 0.5 to 0.9 (beyond delta = 0.2): masked; min(rho, c) A = 1.8e308 is inf
    loss, g = silent(lambda: dppo_loss(np.log([[0.9]]), np.log([[0.5]]), [1e308], [[1.0]]))
    assert loss == 0.0 and g.tolist() == [[0.0]]


def test_gmpo_log_clip_ties_are_unclipped():
    # u = eps_high = 0.25 with A > 0, u = -eps = -0.25 with A < 0: the gradient g A / |y| stays
    loss, g = gmpo_loss([[-0.5]], [[-0.75]], [1.0], [[1.0]], 0.1, 0.25)
    assert loss == -np.exp(0.25) and g.tolist() == [[-np.exp(0.25)]]
    loss, g = gmpo_loss([[-0.75]], [[-0.5]], [-1.0], [[1.0]], 0.25)
    assert loss == np.exp(-0.25) and g.tolist() == [[np.exp(-0.25)]]


def test_gmpo_rows_without_advantage_or_tokens_add_exactly_zero_in_a_large_batch():
    rng = np.random.default_rng(14)
    B, T = 256, 4
    logp = -rng.random((B, T))
    logp_old = logp + rng.normal(scale=0.1, size=(B, T))
    adv = rng.normal(size=B)
    adv[::2] = 0.0
    mask = np.ones((B, T))
    mask[1::4] = 0.0  # empty rows
    loss, g = gmpo_loss(logp, logp_old, adv, mask)
    dead = (adv == 0) | (mask.sum(axis=1) == 0)
    assert (g[dead] == 0).all() and (g[~dead] != 0).any()
    each = [gmpo_loss(logp[b : b + 1], logp_old[b : b + 1], adv[b : b + 1], mask[b : b + 1])[0] for b in range(B)]
    assert loss == pytest.approx(sum(each) / B, rel=1e-13, abs=0)


def test_vespo_weight_is_its_equation_and_a_zero_advantage_takes_the_positive_side():
    rng = np.random.default_rng(15)
    logp, logp_old, adv, mask = batch(rng, spread=0.3)
    phi = vespo_weight(logp, logp_old, adv, mask)
    logW = ((logp - logp_old) * mask).sum(axis=1)
    W = np.exp(logW)
    k, lam = np.where(adv >= 0, 2.0, 3.0), np.where(adv >= 0, 3.0, 2.0)
    assert phi.tolist() == np.exp(lam + k * logW - lam * W).tolist()  # eq. (vespo_weight) as written
    zero, pos, neg = (vespo_weight(logp, logp_old, [a] * len(adv), mask) for a in (0.0, 1.0, -1.0))
    assert zero.tolist() == pos.tolist() and (zero[1:] != neg[1:]).all()  # row 0 is empty: W = 1


@pytest.mark.parametrize("k", [0.0, 0.5, 1.0])
def test_vespo_weight_with_a_shape_at_most_one(k):
    lp, lo = np.array([[-0.5, -0.2]]), np.array([[-0.25, -0.3]])
    logW = -0.25 + (-0.2 + 0.3)
    want = np.exp(3.0 + k * logW - 3.0 * np.exp(logW))
    assert vespo_weight(lp, lo, [1.0], np.ones((1, 2)), k_pos=k)[0] == pytest.approx(want, rel=1e-14, abs=0)


def test_vespo_weight_is_zero_where_w_or_its_log_is_beyond_float64():
    m = np.ones((1, 2))
    # log W = +inf (two log-ratios of 1e308): lam W and k log W are both inf, phi = 0
    assert silent(lambda: vespo_weight([[1e308, 1e308]], [[0.0, 0.0]], [1.0], m))[0] == 0.0
    # log W = -inf: W = 0, phi = 0 for any k > 0
    assert silent(lambda: vespo_weight([[-1e308, -1e308]], [[0.0, 0.0]], [1.0], m, k_pos=1.0))[0] == 0.0
    # lam W overflows (lam = 1.7e308, W = 1.1): log phi = lam (1 - W) = -1.7e307, phi = 0
    phi = silent(lambda: vespo_weight([[np.log(1.1)]], [[0.0]], [1.0], m[:, :1], k_pos=0.0, lam_pos=1.7e308))
    assert phi[0] == 0.0

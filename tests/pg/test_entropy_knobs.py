"""The entropy identity and the entropy knobs (minirl_lm/pg/entropy_knobs.py): the identity's
first-order error falling linearly in the step, each knob's gradient by finite differences, each
definition against a NumPy transcription of the framework's released code (verl 0.9.1
`verl/trainer/ppo/core_algos.py`, TRL 1.16.0 `trl/trainer/grpo_trainer.py`), defaults, messages."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.entropy import entropy_table
from minirl_lm.pg.entropy_knobs import (
    adaptive_entropy_coef,
    clip_cov_loss,
    cov_terms,
    entropy_mask,
    entropy_masked_loss,
    entropy_step,
    kl_cov_loss,
)
from quiet import names, silent


def batch(seed, B=6, T=4, spread=0.1):
    rng = np.random.default_rng(seed)
    mask = (np.arange(T)[None, :] < rng.integers(1, T + 1, size=B)[:, None]).astype(float)
    logp = -rng.random((B, T)) * 2 * mask
    logp_old = (logp + spread * rng.normal(size=(B, T))) * mask
    return logp, logp_old, rng.normal(size=B), mask


# ---- the identity ----------------------------------------------------------------------------
def test_identity_first_order_error_falls_linearly_in_the_step():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(3, 6)) * 1.5
    theta[2, 4] = -np.inf
    d = rng.normal(size=(3, 6))
    etas = 10.0 ** -np.arange(2, 6)
    rel = []
    for eta in etas:
        exact, first, second = entropy_step(theta, eta * d)
        np.testing.assert_allclose(exact, entropy_table(theta + eta * d) - entropy_table(theta), atol=1e-15)
        rel.append(np.abs(exact - first) / np.abs(exact))
        # with the second-order term the residual is O(eta^3): relative O(eta^2)
        assert (np.abs(exact - first - second) / np.abs(exact) < 10 * eta**2).all()
    rel = np.array(rel)  # (4, S)
    slope = rel[:-1] / rel[1:]  # each tenfold smaller step: a tenfold smaller error
    np.testing.assert_allclose(slope, 10.0, rtol=0.03)


def test_identity_natural_and_vanilla_steps_are_minus_the_covariances():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=(1, 5))
    pi = np.exp(theta - theta.max()) / np.exp(theta - theta.max()).sum()
    R = rng.random(5)
    A = R - pi @ R[:, None]  # (1, 5) advantage under pi
    cov = lambda u: (pi * np.log(pi) * u).sum() - (pi * np.log(pi)).sum() * (pi * u).sum()
    _, first_nat, _ = entropy_step(theta, 1e-3 * A)
    _, first_van, _ = entropy_step(theta, 1e-3 * pi * A)
    np.testing.assert_allclose(first_nat, -1e-3 * cov(A), rtol=1e-12)
    np.testing.assert_allclose(first_van, -1e-3 * cov(pi * A), rtol=1e-12)


def test_identity_zero_step_and_messages():
    theta = np.zeros((2, 3))
    assert all((x == 0).all() for x in entropy_step(theta, np.zeros((2, 3))))
    names("delta", "expected shape (2, 3), got (2, 4)", lambda: entropy_step(theta, np.zeros((2, 4))))
    names("delta", "NaN", lambda: entropy_step(theta, np.full((2, 3), np.nan)))


# ---- the covariance term: verl 0.9.1 core_algos.py:1812-1814 and 1903 ----------------------------
def test_cov_terms_match_verl_transcription():
    logp, _, A, mask = batch(2)
    At = A[:, None] * np.ones_like(mask)
    mm = lambda x: (x * mask).sum() / mask.sum()  # verl_F.masked_mean
    verl = (At - mm(At)) * (logp - mm(logp))  # core_algos.py:1812-1814
    np.testing.assert_allclose(cov_terms(logp, A, mask), verl * mask, atol=1e-15)
    assert (cov_terms(logp, A, mask)[mask == 0] == 0).all()


# ---- Clip-Cov --------------------------------------------------------------------------------
def verl_clip_cov(logp, logp_old, A, mask, ratio, lb, ub, eps, eps_high, perm):
    """verl 0.9.1 core_algos.py:1797-1834 in NumPy, with the permutation given (torch.randperm)."""
    At = A[:, None] * np.ones_like(mask)
    r = np.exp(logp - logp_old)
    l1, l2 = -At * r, -At * np.clip(r, 1 - eps, 1 + eps_high)
    by_origin = (l2 > l1) & (mask > 0)
    mm = lambda x: (x * mask).sum() / mask.sum()
    cov = (At - mm(At)) * (logp - mm(logp))
    cov[mask == 0] = -np.inf
    cov[by_origin] = -np.inf
    num = max(int(ratio * mask.sum()), 1)
    idx = np.argwhere((cov < ub) & (cov > lb) & (mask > 0))
    idx = idx[perm(len(idx))[: min(num, len(idx))]]
    corr = np.ones_like(mask)
    corr[idx[:, 0], idx[:, 1]] = 0
    losses = np.maximum(l1, l2) * corr
    return (losses * mask).sum() / mask.sum(), corr  # token-mean


def test_clip_cov_matches_verl_transcription():
    logp, logp_old, A, mask = batch(3, B=8, T=5, spread=0.3)
    kw = dict(ratio=0.1, cov_lb=0.0, cov_ub=5.0, eps=0.2, eps_high=0.28)
    loss, g, corr = clip_cov_loss(logp, logp_old, A, mask, **kw, rng=np.random.default_rng(7))
    perm = np.random.default_rng(7).permutation  # the same draw, in verl's row-major band order
    vloss, vcorr = verl_clip_cov(logp, logp_old, A, mask, 0.1, 0.0, 5.0, 0.2, 0.28, perm)
    np.testing.assert_array_equal(corr * mask, vcorr * mask)
    np.testing.assert_allclose(loss, vloss, rtol=1e-13)
    assert (corr == 0).sum() == max(int(0.1 * mask.sum()), 1)


def test_clip_cov_expectation_is_the_mean_over_the_selection():
    logp, logp_old, A, mask = batch(4, B=5, T=3, spread=0.05)
    kw = dict(ratio=0.2, cov_lb=-0.05, cov_ub=5.0)
    loss, g, corr = clip_cov_loss(logp, logp_old, A, mask, **kw)
    draws = [clip_cov_loss(logp, logp_old, A, mask, **kw, rng=np.random.default_rng(s)) for s in range(4000)]
    band = corr < 1
    assert band.sum() > 2
    emp = np.mean([d[2] for d in draws], 0)
    np.testing.assert_allclose(emp[~band], 1.0)
    np.testing.assert_allclose(emp[band], corr[band], atol=0.03)  # binomial sd ~ 0.008
    np.testing.assert_allclose(np.mean([d[0] for d in draws]), loss, atol=0.01 * abs(loss) + 1e-3)


def test_clip_cov_gradient_by_finite_differences():
    # the band is data: away from its edges it is locally constant, so the loss is smooth
    for seed in range(3):
        logp, logp_old, A, mask = batch(10 + seed, spread=0.2)
        kw = dict(ratio=0.3, cov_lb=-0.02, cov_ub=0.5, eps=0.2, eps_high=0.28)
        for rng in (None, 5):
            call = lambda x: clip_cov_loss(
                x, logp_old, A, mask, **kw, rng=None if rng is None else np.random.default_rng(rng)
            )
            _, g, corr = call(logp)
            fd = fd_grad(lambda x: call(x)[0], logp) * mask
            np.testing.assert_allclose(g, fd, atol=1e-8)  # truncation 1e-12, rounding 1e-10
        assert (corr < 1).any()
    assert (g[mask == 0] == 0).all()


def test_clip_cov_defaults_and_messages():
    logp, logp_old, A, mask = batch(5)
    a = clip_cov_loss(logp, logp_old, A, mask)
    b = clip_cov_loss(
        logp,
        logp_old,
        A,
        mask,
        ratio=2e-4,
        cov_lb=1.0,
        cov_ub=5.0,
        eps=0.2,
        eps_high=None,
        agg="token_mean",
        max_len=None,
        rng=None,
    )
    assert a[0] == b[0] and (a[1] == b[1]).all()
    names("cov_ub", "expected > cov_lb", lambda: clip_cov_loss(logp, logp_old, A, mask, cov_lb=2.0, cov_ub=1.0))
    names("ratio", "", lambda: clip_cov_loss(logp, logp_old, A, mask, ratio=0.0))
    names("rng", "", lambda: clip_cov_loss(logp, logp_old, A, mask, rng=3), TypeError)


def test_clip_cov_with_no_band_is_the_clipped_surrogate():
    logp, logp_old, A, mask = batch(6)
    loss, g, corr = clip_cov_loss(logp, logp_old, A, mask, cov_lb=100.0, cov_ub=200.0)
    ref = clipped_surrogate(logp, logp_old, A, mask)
    assert (corr == 1).all() and loss == ref[0] and (g == ref[1]).all()


# ---- KL-Cov ----------------------------------------------------------------------------------
def verl_kl_cov(logp, logp_old, A, mask, ratio, coef):
    """verl 0.9.1 core_algos.py:1889-1912 in NumPy (topk ties: first index)."""
    At = A[:, None] * np.ones_like(mask)
    u = logp - logp_old
    l1 = -At * np.exp(u)
    lkl = l1 + coef * np.abs(u)
    losses = l1.copy()
    idx = np.flatnonzero(mask.reshape(-1) > 0)
    adv, lp = At.reshape(-1)[idx], logp.reshape(-1)[idx]
    cov = (adv - adv.mean()) * (lp - lp.mean())
    k = max(1, int(len(cov) * ratio))
    top = idx[np.argsort(-cov, kind="stable")[:k]]
    losses.reshape(-1)[top] = lkl.reshape(-1)[top]
    return (losses * mask).sum() / mask.sum()


def test_kl_cov_matches_verl_transcription_and_finite_differences():
    logp, logp_old, A, mask = batch(7, B=8, T=5, spread=0.3)
    loss, g, top = kl_cov_loss(logp, logp_old, A, mask, ratio=0.2, kl_coef=0.7)
    np.testing.assert_allclose(loss, verl_kl_cov(logp, logp_old, A, mask, 0.2, 0.7), rtol=1e-13)
    assert top.sum() == int(0.2 * mask.sum())
    fd = fd_grad(lambda x: kl_cov_loss(x, logp_old, A, mask, ratio=0.2, kl_coef=0.7)[0], logp) * mask
    np.testing.assert_allclose(g, fd, atol=1e-8)


def test_kl_cov_on_policy_is_reinforce():
    # sign(0) = 0: on the first step of a batch the penalty has no gradient
    logp, _, A, mask = batch(8)
    _, g, top = kl_cov_loss(logp, logp, A, mask, ratio=0.5, kl_coef=3.0)
    assert top.sum() > 0
    np.testing.assert_array_equal(g, clipped_surrogate(logp, logp, A, mask)[1])


def test_kl_cov_defaults_and_messages():
    logp, logp_old, A, mask = batch(9)
    a, b = (
        kl_cov_loss(logp, logp_old, A, mask),
        kl_cov_loss(logp, logp_old, A, mask, ratio=2e-4, kl_coef=1.0, agg="token_mean", max_len=None),
    )
    assert a[0] == b[0] and (a[2] == b[2]).all() and a[2].sum() == 1
    names("kl_coef", "", lambda: kl_cov_loss(logp, logp_old, A, mask, kl_coef=-1.0))
    names("ratio", "", lambda: kl_cov_loss(logp, logp_old, A, mask, ratio=1.5))


# ---- entropy-quantile masking: TRL 1.16.0 grpo_trainer.py:1380-1416, 3049-3052, 3143-3144 ------
def trl_high_entropy_mask(entropies, mask, threshold):
    local = entropies[mask > 0]
    if local.size == 0:
        return np.zeros_like(mask, dtype=bool)
    q = np.quantile(local, threshold)  # torch.quantile, linear interpolation
    return ((entropies * mask) >= q) & (mask > 0)


def test_entropy_mask_matches_trl_transcription():
    rng = np.random.default_rng(12)
    _, _, _, mask = batch(12)
    H = rng.random(mask.shape) * 2
    for rho in (0.0, 0.2, 0.5, 0.99):
        np.testing.assert_array_equal(entropy_mask(H, mask, rho), trl_high_entropy_mask(H, mask, 1 - rho))
    assert (entropy_mask(H, mask, 1.0) == mask).all()  # TRL skips the mask at 1.0
    assert entropy_mask(H, mask, 0.0).sum() == 1  # only the highest
    assert (entropy_mask(H, np.zeros_like(mask), 0.2) == 0).all()
    assert (entropy_mask(H, mask) == entropy_mask(H, mask, 0.2)).all()


def test_entropy_masked_loss_gradient_and_weights():
    logp, logp_old, A, mask = batch(13, spread=0.2)
    H = np.random.default_rng(13).random(mask.shape)
    loss, g, keep = entropy_masked_loss(logp, logp_old, A, mask, H, rho_h=0.4, eps_high=0.28)
    fd = (
        fd_grad(lambda x: entropy_masked_loss(x, logp_old, A, mask, H, rho_h=0.4, eps=0.2, eps_high=0.28)[0], logp)
        * mask
    )
    np.testing.assert_allclose(g, fd, atol=1e-8)
    full = clipped_surrogate(logp, logp_old, A, mask, eps_high=0.28)[1]  # w on the whole mask
    np.testing.assert_array_equal(g, full * keep)
    assert 0 < keep.sum() < mask.sum()
    d = entropy_masked_loss(logp, logp_old, A, mask, H)
    e = entropy_masked_loss(
        logp, logp_old, A, mask, H, rho_h=0.2, eps=0.2, eps_high=None, agg="token_mean", max_len=None
    )
    assert d[0] == e[0]
    names("entropies", "expected >= 0", lambda: entropy_mask(-H, mask))
    names("rho_h", "", lambda: entropy_mask(H, mask, 1.5))
    names("entropies", "expected shape", lambda: entropy_masked_loss(logp, logp_old, A, mask, H[:, :2]))


# ---- the adaptive coefficient: TRL 1.16.0 grpo_trainer.py:3206-3240 --------------------------
def test_adaptive_entropy_coef_matches_trl_controller():
    def trl(coef, last, H, target, delta, lo, hi):
        applied = coef if last <= target else 0.0  # :3206-3207, with the previous entropy
        coef = min(coef + delta, hi) if H <= target else max(coef - delta, lo)  # :3231-3238
        return coef, applied

    coef, last, ours = 0.01, float("inf"), 0.0  # TRL starts with last entropy inf (:853)
    for H in [0.5, 0.3, 0.1, 0.05, 0.2, 0.25, 0.1]:
        want_coef, want_applied = trl(coef, last, H, 0.2, 0.005, 0.0, 0.02)
        assert want_applied == ours  # our applied value came out of the previous step
        coef, ours = silent(lambda: adaptive_entropy_coef(coef, H, 0.2, 0.005, 0.0, 0.02))
        assert coef == want_coef
        last = H
    assert adaptive_entropy_coef(0.1, 0.3) == adaptive_entropy_coef(0.1, 0.3, 0.2, 0.005, 0.0, 1.0)
    assert adaptive_entropy_coef(1.0, 0.0) == (1.0, 1.0)  # clamped at coef_max
    assert adaptive_entropy_coef(0.0, 1.0) == (0.0, 0.0)  # clamped at coef_min


def test_adaptive_entropy_coef_messages():
    names("coef_max", "expected >= coef_min", lambda: adaptive_entropy_coef(0.1, 0.1, coef_min=0.5, coef_max=0.2))
    names("entropy", "", lambda: adaptive_entropy_coef(0.1, -0.1))
    names("coef", "", lambda: adaptive_entropy_coef(np.nan, 0.1))


@pytest.mark.parametrize("agg", ["token_mean", "seq_sum"])
def test_knobs_are_zero_at_padding(agg):
    logp, logp_old, A, mask = batch(14)
    H = np.ones_like(mask)
    for f in (
        lambda: clip_cov_loss(logp, logp_old, A, mask, agg=agg),
        lambda: kl_cov_loss(logp, logp_old, A, mask, agg=agg),
        lambda: entropy_masked_loss(logp, logp_old, A, mask, H, agg=agg),
    ):
        assert (silent(f)[1][mask == 0] == 0).all()


def test_max_len_reaches_the_constant_aggregation_of_each_loss():
    rng = np.random.default_rng(0)
    lp = -rng.random((3, 4))
    args = (lp, lp + rng.normal(scale=0.1, size=(3, 4)), rng.normal(size=3), np.ones((3, 4)))
    for f, more in ((clip_cov_loss, ()), (kl_cov_loss, ()), (entropy_masked_loss, (rng.random((3, 4)),))):
        half = f(*args, *more, agg="constant", max_len=8)[0]  # T_max = 8 = 2 T: every weight halved
        assert half == pytest.approx(f(*args, *more, agg="constant")[0] / 2, rel=1e-14), f.__name__


def test_the_edges_of_the_knobs_relations():
    lp, m = -np.ones((1, 2)), np.ones((1, 2))
    with pytest.raises(ValueError) as e:
        clip_cov_loss(lp, lp, [1.0], m, cov_lb=1.0, cov_ub=1.0)  # an empty band
    assert str(e.value) == "cov_ub: expected > cov_lb = 1.0, got 1.0"
    assert adaptive_entropy_coef(0.5, 0.1, coef_min=0.5, coef_max=0.5)[0] == 0.5  # a clamp of one point
    # entropies: 0 is allowed where trained, padding is not read, the message shows the trained minimum
    assert entropy_mask([[0.0, -3.0]], [[1.0, 0.0]]).tolist() == [[1.0, 0.0]]
    with pytest.raises(ValueError) as e:
        entropy_mask([[-0.5, -3.0]], [[1.0, 0.0]])
    assert str(e.value) == "entropies: expected >= 0 at trained tokens, got -0.5"


def test_small_batches_of_the_knobs():
    # one trained token: it is its own mean, so its covariance term is 0
    assert cov_terms([[-1.0, 0.0]], [2.0], [[1.0, 0.0]]).tolist() == [[0.0, 0.0]]
    # no trained token: the mask keeps nothing, at the mask's shape
    assert entropy_mask(np.ones((2, 2)), np.zeros((2, 2))).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # a kept token whose ratio is clipped (rho = e > 1.2, A > 0) gets no gradient
    assert entropy_masked_loss([[-0.1]], [[-1.1]], [1.0], [[1.0]], [[1.0]], rho_h=1.0)[1].tolist() == [[0.0]]

"""The frameworks' other advantages, KL gradient variants, adaptive coefficient, clipped value
loss, entropy bonus and DAPO shaping: finite differences, the frameworks' published definitions
(re-derived here in NumPy from verl core_algos.py @ 1dda039b9c (2026-08-22) and TRL
grpo_trainer.py @ f2cd57710a (2026-07-24)), edge cases and errors."""

import numpy as np
import pytest

from minirl_lm.pg.advantages import (batch_std, centred, opo, reinforce_pp, reinforce_pp_baseline,
                                  remax)
from minirl_lm.values.critic import clipped_value_loss
from minirl_lm.pg.entropy import entropy_bonus, entropy_grad_table, entropy_table
from minirl_lm.pg.kl import (adaptive_kl_coef, kl_penalty, kl_penalty_is,
                          kl_penalty_straight_through)
from minirl_lm.pg.reinforce import token_weights
from minirl_lm.pg.shaping import (acceptance_probability, filter_groups, mask_truncated,
                               overlong_penalty, resample_factor, truncated)

from gradcheck import fd_grad


def masks(rng, B, T, empty=True):
    L = rng.integers(1, T + 1, size=B)
    if empty:
        L[0] = 0
    L[-1] = T
    return (np.arange(T)[None, :] < L[:, None]).astype(float), L


# ---- verl's definitions, re-derived -----------------------------------------------------------

def verl_masked_whiten(x, m):
    """verl torch_functional.masked_whiten: mean/var with the +1e-8 denominators, Bessel var."""
    mean = (x * m).sum() / (m.sum() + 1e-8)
    var = (((x - mean) ** 2) * m).sum() / (m.sum() + 1e-8) * m.sum() / (m.sum() - 1)
    return (x - mean) / np.sqrt(var + 1e-8)


def test_reinforce_pp_matches_verl():
    rng = np.random.default_rng(0)
    mask, _ = masks(rng, 7, 5, empty=False)
    r = rng.normal(size=mask.shape) * mask
    for gamma in (1.0, 0.9):
        G = np.zeros_like(r)
        run = np.zeros(7)
        for t in reversed(range(5)):                           # verl's loop, mask carries
            new = r[:, t] + gamma * run
            G[:, t] = new * mask[:, t]
            run = new * mask[:, t] + run * (1 - mask[:, t])
        want = verl_masked_whiten(G, mask) * mask
        got = reinforce_pp(r, mask, gamma=gamma)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)   # verl's +1e-8 in means


def test_reinforce_pp_baseline_matches_verl():
    rng = np.random.default_rng(1)
    N, K, T = 3, 4, 5
    mask, _ = masks(rng, N * K, T, empty=False)
    r = rng.integers(0, 3, size=(N, K)) / 2.0
    s = r.reshape(-1) - np.repeat(r.mean(axis=1), K)           # id2mean subtracted
    want = verl_masked_whiten(s[:, None] * mask, mask) * mask
    np.testing.assert_allclose(reinforce_pp_baseline(r, mask), want, rtol=1e-7, atol=1e-9)


def test_remax_matches_verl():
    rng = np.random.default_rng(2)
    mask, _ = masks(rng, 6, 4)
    r = rng.normal(size=(3, 2))
    greedy = rng.normal(size=3)
    token_r = np.zeros_like(mask)                              # outcome reward on the last token
    L = mask.sum(1).astype(int)
    token_r[np.arange(6)[L > 0], L[L > 0] - 1] = r.reshape(-1)[L > 0]
    returns = np.flip(np.cumsum(np.flip(token_r * mask, -1), -1), -1)
    want = returns - np.repeat(greedy, 2)[:, None] * mask      # verl compute_remax_...
    got = remax(r, greedy).reshape(-1)[:, None] * mask
    np.testing.assert_allclose(got[L > 0], want[L > 0], rtol=0, atol=1e-15)


def test_opo_matches_verl():
    rng = np.random.default_rng(3)
    r = rng.normal(size=(4, 5))
    L = rng.integers(1, 9, size=(4, 5)).astype(float)
    bsl = (L * r).sum(1) / L.sum(1)
    np.testing.assert_allclose(opo(r, L), r - bsl[:, None], rtol=0, atol=1e-15)


def test_batch_std_matches_trl():
    rng = np.random.default_rng(4)
    r = rng.normal(size=(3, 4))
    std = r.reshape(-1).std(ddof=1)                            # nanstd: Bessel over the batch
    want = (r - r.mean(1, keepdims=True)) / (std + 1e-4)
    np.testing.assert_allclose(batch_std(r, eps=1e-4, ddof=1), want, rtol=1e-14)


def test_batch_std_is_the_centred_direction_scaled():
    r = np.array([[0.0, 1.0, 0.5], [1.0, 1.0, 0.0]])
    a = batch_std(r)
    c = centred(r)
    ratio = a[c != 0] / c[c != 0]
    assert np.allclose(ratio, ratio[0], rtol=1e-14) and ratio[0] > 0


# ---- edge cases -------------------------------------------------------------------------------

def test_k1_and_equal_rewards_are_exactly_zero():
    mask = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    assert not reinforce_pp_baseline(np.array([[1.0], [2.0], [3.0]]), mask).any()   # K = 1
    assert not reinforce_pp_baseline(np.full((1, 3), 0.7), mask).any()
    assert not reinforce_pp(np.full((3, 2), 0.3) * np.array([[0, 1], [1, 0], [0, 0]]),
                            mask).any()                        # equal returns on every real token
    assert not reinforce_pp(np.zeros((3, 2)), np.zeros((3, 2))).any()   # no real token
    assert not opo(np.array([[0.3], [0.1]]), np.array([[2], [0]])).any()
    assert not opo(np.full((2, 3), 0.1), np.ones((2, 3))).any()
    assert not batch_std(np.array([[1.0], [0.0]])).any()
    assert not batch_std(np.array([[1.0, 1.0], [0.0, 0.0]])).any()
    assert not batch_std(np.array([[2.0]]), ddof=1).any()
    assert not remax(np.array([[1.0, 1.0]]), np.array([1.0])).any()


def test_empty_responses_carry_nothing():
    rng = np.random.default_rng(5)
    mask, _ = masks(rng, 6, 4)                                 # row 0 is empty
    A = reinforce_pp(rng.normal(size=mask.shape), mask)
    assert not A[0].any() and not A[mask == 0].any()
    A = reinforce_pp_baseline(rng.normal(size=(2, 3)), mask)
    assert not A[0].any()
    r = np.array([[1.0, 0.0, 0.5]])
    assert np.array_equal(opo(r, [[0, 0, 0]]), r - r.mean())   # all empty: plain mean
    assert np.array_equal(opo(r, [[0, 1, 1]]), r - 0.25)       # empty one has no weight


@pytest.mark.parametrize("call,name", [
    (lambda: reinforce_pp(np.ones((2, 3)), np.ones((2, 2))), "token_rewards"),
    (lambda: reinforce_pp(np.ones((2, 2)), np.ones((2, 2)), gamma=1.5), "gamma"),
    (lambda: reinforce_pp(np.full((2, 2), np.nan), np.ones((2, 2))), "token_rewards"),
    (lambda: reinforce_pp_baseline(np.ones((2, 2)), np.ones((3, 2))), "mask"),
    (lambda: reinforce_pp_baseline(np.ones((1, 2)), np.ones((2, 2)), ddof=2), "ddof"),
    (lambda: remax(np.ones((2, 2)), np.ones(3)), "greedy_rewards"),
    (lambda: opo(np.ones((2, 2)), -np.ones((2, 2))), "lengths"),
    (lambda: opo(np.ones((2, 2)), np.ones((2, 3))), "lengths"),
    (lambda: batch_std(np.ones(4)), "rewards"),
    (lambda: batch_std(np.ones((2, 0))), "rewards"),
    (lambda: batch_std(np.ones((2, 2)), eps=-1.0), "eps"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises((ValueError, TypeError), match=f"^{name}"):
        call()


def test_whitening_overflow_is_an_error_not_inf():
    with pytest.raises(ValueError, match="^token_rewards"):
        reinforce_pp(np.array([[1e300, -1e300]]), np.ones((1, 2)))
    A = batch_std(np.array([[1e150, -1e150]] * 40))            # squares of the spread stay finite
    assert np.isfinite(A).all()


# ---- KL gradient variants ---------------------------------------------------------------------

def kl_batch(rng, B=5, T=4):
    mask, _ = masks(rng, B, T)
    logp = -rng.uniform(0.1, 2.0, size=(B, T)) * mask
    logp_ref = -rng.uniform(0.1, 2.0, size=(B, T)) * mask
    logp_old = -rng.uniform(0.1, 2.0, size=(B, T)) * mask
    return logp, logp_old, logp_ref, mask


@pytest.mark.parametrize("est", ["k1", "k3"])
@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean"])
def test_straight_through_value_of_estimator_gradient_of_k2(est, agg):
    rng = np.random.default_rng(6)
    logp, _, logp_ref, mask = kl_batch(rng)
    loss, d = kl_penalty_straight_through(logp, logp_ref, mask, est, agg)
    assert loss == kl_penalty(logp, logp_ref, mask, est, agg)[0]          # verl: forward value
    fd = fd_grad(lambda x: kl_penalty(x, logp_ref, mask, "k2", agg)[0], logp)   # k2's gradient
    np.testing.assert_allclose(d, fd, rtol=0, atol=1e-9)       # FD error ~1e-10 (gradcheck.py)
    u = (logp - logp_ref) * mask                               # verl: d/dlogp 0.5 u^2 = u
    np.testing.assert_array_equal(d, token_weights(mask, agg) * u)


def test_importance_weighted_k3_gradient_and_trl_definition():
    rng = np.random.default_rng(7)
    logp, logp_old, logp_ref, mask = kl_batch(rng)
    f = lambda x: kl_penalty_is(x, logp_old, logp_ref, mask)[0]
    loss, d = kl_penalty_is(logp, logp_old, logp_ref, mask)
    np.testing.assert_allclose(d, fd_grad(f, logp), rtol=0, atol=1e-9)
    u_trl = logp_ref - logp                                    # TRL: exp(ref - logp) - (ref - logp) - 1
    per_token = (np.exp(u_trl) - u_trl - 1) * np.exp(logp - logp_old)   # * coef_1
    want = (per_token * mask).sum() / mask.sum()               # token_mean
    assert abs(loss - want) < 1e-14


def test_importance_weighted_k3_at_rho_one_has_the_gradient_of_k2():
    rng = np.random.default_rng(8)
    logp, _, logp_ref, mask = kl_batch(rng)
    loss, d = kl_penalty_is(logp, logp, logp_ref, mask)       # first epoch: pi_old = pi
    assert loss == kl_penalty(logp, logp_ref, mask, "k3")[0]  # value: k3 (rho = 1 exactly)
    _, d2 = kl_penalty(logp, logp_ref, mask, "k2")            # eq. (kl_is_at_one): k3 + 1 - e^-u = u
    np.testing.assert_allclose(d, d2, rtol=0, atol=1e-15)


def test_kl_variants_errors():
    m = np.ones((1, 2))
    with pytest.raises(ValueError, match="^logp"):
        kl_penalty_is(np.array([[800.0, 0]]), np.zeros((1, 2)), np.zeros((1, 2)), m)
    with pytest.raises(ValueError, match="^logp_old"):
        kl_penalty_is(np.zeros((1, 2)), np.zeros((1, 3)), np.zeros((1, 2)), m)
    with pytest.raises(ValueError, match="^estimator"):
        kl_penalty_straight_through(np.zeros((1, 2)), np.zeros((1, 2)), m, "k4")


def test_adaptive_coefficient_matches_verl():
    def verl(value, kl, target, horizon, n):
        err = np.clip(kl / target - 1, -0.2, 0.2)
        return value * (1 + err * n / horizon)
    for kl in (0.0, 0.05, 0.1, 0.11, 0.5, 3.0):
        assert adaptive_kl_coef(0.001, kl, 0.1, 10000, 256) == verl(0.001, kl, 0.1, 10000, 256)
    assert adaptive_kl_coef(0.2, 0.1, 0.1, 100, 7) == 0.2      # on target: unchanged
    with pytest.raises(ValueError, match="^target_kl"):
        adaptive_kl_coef(0.1, 0.1, 0.0, 10, 1)
    with pytest.raises(ValueError, match="^n_steps"):
        adaptive_kl_coef(0.1, 0.0, 0.1, 10, 100)


# ---- clipped value loss -----------------------------------------------------------------------

def test_clipped_value_loss_gradient_and_verl_definition():
    rng = np.random.default_rng(9)
    mask, _ = masks(rng, 6, 5)
    v_old = rng.normal(size=mask.shape)
    G = rng.normal(size=mask.shape)
    v = v_old + rng.uniform(-1, 1, size=mask.shape)
    c = 0.3
    # keep away from kinks (|v - v_old| = c) and ties, where the loss has no derivative
    v = np.where(np.abs(np.abs(v - v_old) - c) < 1e-3, v + 0.01, v)
    loss, d = clipped_value_loss(v, v_old, G, mask, c)
    np.testing.assert_allclose(d, fd_grad(lambda x: clipped_value_loss(x, v_old, G, mask, c)[0], v),
                               rtol=0, atol=1e-9)
    vc = np.clip(v, v_old - c, v_old + c)                      # verl compute_value_loss, token-mean
    want = 0.5 * (np.maximum((v - G) ** 2, (vc - G) ** 2) * mask).sum() / mask.sum()
    assert abs(loss - want) < 1e-15
    assert (d[(mask > 0) & ((vc - G) ** 2 > (v - G) ** 2)] == 0).all()


def test_clipped_value_loss_edges():
    z = np.zeros((2, 2))
    loss, d = clipped_value_loss(z, z, z + 1, z, 0.5)          # all padding
    assert loss == 0.0 and not d.any()
    with pytest.raises(ValueError, match="^clip"):
        clipped_value_loss(z, z, z, np.ones((2, 2)), 0.0)
    with pytest.raises(ValueError, match="^returns"):
        clipped_value_loss(z, z, np.zeros((2, 3)), np.ones((2, 2)), 0.5)


# ---- entropy ----------------------------------------------------------------------------------

def test_entropy_gradient_by_finite_differences():
    rng = np.random.default_rng(10)
    theta = rng.normal(size=(4, 5))
    theta[1, 2] = -np.inf
    g = entropy_grad_table(theta)
    for s in range(4):
        fin = np.isfinite(theta[s])
        f = lambda x: entropy_table(np.where(fin, x, -np.inf)[None])[0]
        fd = fd_grad(f, np.where(fin, theta[s], 0.0))
        np.testing.assert_allclose(g[s][fin], fd[fin], rtol=0, atol=1e-9)
    assert g[1, 2] == 0.0


def test_entropy_matches_verl_entropy_from_logits():
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(6, 7)) * 3
    m = logits.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(1))
    p = np.exp(logits - lse[:, None])
    want = lse - (p * logits).sum(1)                           # logsumexp - sum softmax * logits
    np.testing.assert_allclose(entropy_table(logits), want, rtol=1e-13)


@pytest.mark.parametrize("agg", ["token_mean", "seq_sum", "seq_mean_token_mean", "constant"])
def test_entropy_bonus_backward_by_finite_differences(agg):
    rng = np.random.default_rng(12)
    S, V = 5, 4
    theta = rng.normal(size=(S, V))
    mask, _ = masks(rng, 4, 3)
    states = rng.integers(0, S, size=mask.shape)
    loss, dtheta = entropy_bonus(theta, states, mask, agg)
    fd = fd_grad(lambda x: entropy_bonus(x, states, mask, agg)[0], theta)
    np.testing.assert_allclose(dtheta, fd, rtol=0, atol=1e-9)
    H = entropy_table(theta)                                   # TRL: mean per-token entropy
    if agg == "token_mean":
        assert abs(-loss - (H[states] * mask).sum() / mask.sum()) < 1e-15


def test_entropy_bonus_edges():
    theta = np.zeros((2, 3))
    loss, d = entropy_bonus(theta, np.zeros((2, 2), int), np.zeros((2, 2)))
    assert loss == 0.0 and not d.any()                         # nothing visited
    assert np.allclose(entropy_table(theta), np.log(3))
    assert entropy_table(np.array([[0.0, -np.inf]]))[0] == 0.0
    with pytest.raises(ValueError, match="^theta"):
        entropy_table(np.array([[-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match="^states"):
        entropy_bonus(theta, np.full((1, 1), 5), np.ones((1, 1)))


# ---- shaping ----------------------------------------------------------------------------------

def test_filter_groups_matches_verl():
    r = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.5], [0.0, 0.0, 0.1]])
    want = [not (len(g) > 1 and float(np.std(g)) == 0.0) for g in r]
    assert filter_groups(r).tolist() == want
    assert filter_groups(np.array([[1.0], [0.0]])).all()       # K = 1 kept


def test_resample_factor_by_enumeration():
    import itertools
    for K in (2, 3, 5):
        for p in (0.1, 0.5, 0.8):
            acc = sum(np.prod([p if b else 1 - p for b in bits])
                      for bits in itertools.product([0, 1], repeat=K) if 0 < sum(bits) < K)
            assert abs(acceptance_probability(p, K) - acc) < 1e-15
            assert abs(resample_factor(p, K) - 1 / acc) < 1e-12
    assert resample_factor(0.3, 1) == 1.0
    with pytest.raises(ValueError, match="^p"):
        resample_factor(1.0, 4)


def test_overlong_matches_verl():
    max_len, buf, f = 10, 4, 0.5
    L = np.arange(0, 11)
    want = [min(-(l - (max_len - buf)) / buf * f, 0) for l in L]
    np.testing.assert_array_equal(overlong_penalty(L, max_len, buf, f), want)
    with pytest.raises(ValueError, match="^buffer_len"):
        overlong_penalty(L, 10, 11)
    with pytest.raises(ValueError, match="^lengths"):
        overlong_penalty([11], 10, 4)


def test_truncation_mask_matches_trl():
    eos = 0
    tokens = np.array([[1, 2, 0], [1, 2, 1], [0, 0, 0], [2, 0, 0]])
    mask = np.array([[1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 1, 0.0]])
    # TRL: truncated iff the last generated id is not EOS (an empty completion is not truncated)
    lists = [list(t[m > 0]) for t, m in zip(tokens, mask)]
    want = [len(ids) > 0 and ids[-1] != eos for ids in lists]
    assert truncated(tokens, mask, eos).tolist() == want
    assert np.array_equal(mask_truncated(tokens, mask, eos), mask * ~np.array(want)[:, None])

"""GRPO assembled: the loss is its parts, its gradient is checked, one epoch with beta = 0 is
REINFORCE with the standardized advantage, and the training step behaves."""

import re

import numpy as np
import pytest

from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.grpo import grpo_loss, grpo_step
from minirl_lm.pg.kl import ESTIMATORS, kl_penalty
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.reinforce import AGGS, reinforce_loss

from gradcheck import fd_grad


def batch(rng, B=8, T=5, eps=0.2):
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp_old = -rng.uniform(0.1, 3.0, size=(B, T))
    d = rng.uniform(-0.5, 0.5, size=(B, T))
    for edge in (np.log(1 - eps), np.log(1 + eps)):
        d[np.abs(d - edge) < 1e-3] += 3e-3                    # away from the kink
    logp = (logp_old + d) * mask
    logp_ref = -rng.uniform(0.1, 3.0, size=(B, T)) * mask
    return logp, logp_old * mask, logp_ref, rng.normal(size=B), mask


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean"])
def test_grpo_loss_is_its_parts_and_matches_finite_differences(estimator, agg):
    rng = np.random.default_rng(0)
    logp, logp_old, logp_ref, adv, mask = batch(rng)
    loss, d = grpo_loss(logp, logp_old, logp_ref, adv, mask, beta=0.1, kl_estimator=estimator,
                        agg=agg)
    lc, dc = clipped_surrogate(logp, logp_old, adv, mask, agg=agg)
    lk, dk = kl_penalty(logp, logp_ref, mask, estimator, agg)
    assert loss == lc + 0.1 * lk and np.array_equal(d, dc + 0.1 * dk)
    f = lambda x: grpo_loss(x, logp_old, logp_ref, adv, mask, beta=0.1, kl_estimator=estimator,
                            agg=agg)[0]
    assert np.abs(d - fd_grad(f, logp)).max() < 1e-9
    assert (d[mask == 0] == 0).all()


def _toy(seed=0):
    """Two prompts, V = 3 with EOS = 0, responses up to 3 tokens; reward 1 for length 2."""
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3)
    rng = np.random.default_rng(seed)
    pol = TabularPolicy(rng.normal(scale=0.5, size=(mdp.S, 3)))
    grader = lambda x, y: float(len(y) == 2) + 0.5 * (x == "a" and y[0] == 1)
    return mdp, pol, grader


def grpo_vs_reinforce_gap(agg="token_mean", seed=1, K=6):
    """|theta after grpo_step(mu=1, beta=0) - theta after one REINFORCE step with the
    group-standardized advantage|, same rollout (same seed)."""
    mdp, pol, grader = _toy(seed)
    ref = TabularPolicy(pol.theta + 1.0)                      # any reference: beta = 0
    p1, p2 = pol.copy(), pol.copy()
    grpo_step(p1, ref, mdp, grader, np.random.default_rng(7), K, mu=1, lr=0.5, beta=0.0, agg=agg)
    rng = np.random.default_rng(7)
    ro = mdp.rollout(p2, K, rng)
    A = standardized(mdp.score(grader, ro).reshape(-1, K)).reshape(-1)
    logp, _ = p2.logp(ro.states, ro.tokens, ro.mask)
    _, d = reinforce_loss(logp, A, ro.mask, agg)
    p2.theta -= 0.5 * p2.backward(ro.states, ro.tokens, ro.mask, d)
    assert np.abs(p1.theta - pol.theta).max() > 1e-3          # the step did move theta
    return np.abs(p1.theta - p2.theta).max()


@pytest.mark.parametrize("agg", AGGS)
def test_one_epoch_beta_zero_is_reinforce_with_standardized_advantage(agg):
    assert grpo_vs_reinforce_gap(agg) < 1e-12


def test_theta_gradient_through_the_policy():
    mdp, pol, _ = _toy(2)
    rng = np.random.default_rng(3)
    ro = mdp.rollout(pol, 5, rng)
    logp_old, _ = pol.logp(ro.states, ro.tokens, ro.mask)
    logp_ref, _ = TabularPolicy(pol.theta + rng.normal(size=pol.theta.shape)).logp(
        ro.states, ro.tokens, ro.mask)
    theta = pol.theta + rng.normal(scale=0.4, size=pol.theta.shape)
    adv = rng.normal(size=ro.mask.shape[0])

    def loss(th):
        lp, _ = TabularPolicy(th).logp(ro.states, ro.tokens, ro.mask)
        return grpo_loss(lp, logp_old, logp_ref, adv, ro.mask, beta=0.3)[0]

    p = TabularPolicy(theta)
    lp, _ = p.logp(ro.states, ro.tokens, ro.mask)
    rho = np.exp(lp - logp_old)[ro.mask > 0]
    assert np.abs(np.abs(rho - 1) - 0.2).min() > 1e-4 and (np.abs(rho - 1) > 0.2).any()
    dtheta = p.backward(ro.states, ro.tokens, ro.mask,
                        grpo_loss(lp, logp_old, logp_ref, adv, ro.mask, beta=0.3)[1])
    assert np.abs(dtheta - fd_grad(loss, theta.copy())).max() < 1e-8


@pytest.mark.parametrize("estimator", ["k2", "k3"])
def test_k1_group_leaves_theta_bitwise_at_the_reference(estimator):
    # K = 1: standardized A = 0; at theta = theta_ref, u = 0 and dk2 = dk3 = 0
    mdp, pol, grader = _toy(4)
    theta0 = pol.theta.copy()
    rng = np.random.default_rng(5)
    for _ in range(20):
        grpo_step(pol, pol.copy(), mdp, grader, rng, K=1, mu=2, lr=2.0, beta=0.04,
                  kl_estimator=estimator)
    assert np.array_equal(pol.theta, theta0)


def test_step_diagnostics_and_clipping_after_the_first_epoch():
    mdp, pol, grader = _toy(6)
    out = grpo_step(pol, pol.copy(), mdp, grader, np.random.default_rng(8), K=8, mu=4, lr=5.0)
    assert set(out) >= {"mean_reward", "loss", "clip_fraction", "kl", "rollout", "rewards",
                        "advantages"}
    assert len(out["loss"]) == 4 and len(out["clip_fraction"]) == 4
    assert out["clip_fraction"][0] == 0.0 and max(out["clip_fraction"][1:]) > 0
    assert out["kl"] == 0.0                                   # pi_old = pi_ref before the step
    assert out["mean_reward"] == out["rewards"].mean()


def test_training_improves_the_expected_reward():
    mdp, pol, grader = _toy(9)
    ref = pol.copy()
    rng = np.random.default_rng(10)
    first = [grpo_step(pol, ref, mdp, grader, rng, K=8, mu=2, lr=0.5)["mean_reward"]
             for _ in range(5)]
    for _ in range(60):
        grpo_step(pol, ref, mdp, grader, rng, K=8, mu=2, lr=0.5)
    last = [grpo_step(pol, ref, mdp, grader, rng, K=8, mu=2, lr=0.5)["mean_reward"]
            for _ in range(5)]
    assert np.mean(last) > np.mean(first) + 0.3


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("junk", [-800.0, 800.0, -1e300, 1.7e308])
def test_grpo_loss_ignores_garbage_at_padding(estimator, junk):
    logp, logp_old, logp_ref, adv, mask = batch(np.random.default_rng(2))
    clean = grpo_loss(logp, logp_old, logp_ref, adv, mask, beta=0.1, kl_estimator=estimator)
    pad = mask == 0
    lp, lo, lr = logp.copy(), logp_old.copy(), logp_ref.copy()
    lp[pad], lo[pad], lr[pad] = junk, -junk, -junk
    with np.errstate(all="raise"):
        loss, g = grpo_loss(lp, lo, lr, adv, mask, beta=0.1, kl_estimator=estimator)
    assert loss == clean[0] and np.array_equal(g, clean[1]) and (g[pad] == 0).all()


def test_grpo_loss_with_extreme_log_ratios_on_real_tokens():
    m = np.ones((1, 3))
    lp = np.zeros((1, 3))
    lo = np.full((1, 3), -800.0)                              # rho = inf on every token
    with np.errstate(all="raise"):
        loss, g = grpo_loss(lp, lo, lp, [[1.0, 0.0, 1.0]], m, beta=0.0, agg="seq_sum")
    assert loss == -2.4 and np.array_equal(g, np.zeros((1, 3)))   # A > 0 clipped, A = 0 nothing
    with pytest.raises(ValueError, match="logp"):                 # A < 0: rho A = -inf
        grpo_loss(lp, lo, lp, [[1.0, 0.0, -1.0]], m)
    # a huge ratio against the reference: k3 = exp(-u) - 1 + u stays finite for u > 0
    with np.errstate(all="raise"):
        loss, g = grpo_loss(lp, lp, lo, [[0.0, 0.0, 0.0]], m, beta=1.0, agg="seq_sum")
    assert loss == 3 * 799.0 and np.array_equal(g, np.ones((1, 3)))


def test_ref_policy_of_another_shape_is_rejected():
    mdp, pol, grader = _toy()
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    theta0 = pol.theta.copy()
    for shape in [(16, 7), (6, 3), (pol.S, 4), (pol.S - 1, 3)]:
        if shape == pol.theta.shape:
            continue
        bad = TabularPolicy(np.zeros(shape))
        with pytest.raises(ValueError, match=r"ref_policy: .*" + re.escape(str(shape))):
            grpo_step(pol, bad, mdp, grader, rng, K=2)
    assert rng.bit_generator.state == before and np.array_equal(pol.theta, theta0)


@pytest.mark.parametrize("kw, exc, name", [
    (dict(beta=-0.1), ValueError, "beta"),
    (dict(beta="x"), TypeError, "beta"),
    (dict(eps=0.0), ValueError, "eps"),
    (dict(eps=1.5), ValueError, "eps"),
    (dict(eps_high=-0.1), ValueError, "eps_high"),
    (dict(agg="sum"), ValueError, "agg"),
    (dict(kl_estimator="k5"), ValueError, "kl_estimator"),
    (dict(baseline="median"), ValueError, "baseline"),
    (dict(K=1, baseline="loo"), ValueError, "baseline"),
    (dict(adv_eps=-1.0), ValueError, "adv_eps"),
    (dict(ddof=True), TypeError, "ddof"),
    (dict(ddof=2), ValueError, "ddof"),
])
def test_bad_settings_are_rejected_before_the_rollout(kw, exc, name):
    mdp, pol, grader = _toy()
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    theta0 = pol.theta.copy()
    kw = {"K": 2, **kw}
    with pytest.raises(exc, match=name):
        grpo_step(pol, pol.copy(), mdp, grader, rng, **kw)
    assert rng.bit_generator.state == before                  # no random draw consumed
    assert np.array_equal(pol.theta, theta0)


M = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
L = -np.ones((2, 3)) * M
A2 = np.ones(2)
MDP, POL, GR = _toy()
RNG = np.random.default_rng(0)
BAD = [
    (lambda: grpo_loss(L, L, L, A2, M, beta=-0.1), ValueError, "beta"),
    (lambda: grpo_loss(L, L, L, A2, M, kl_estimator="k5"), ValueError, "kl_estimator"),
    (lambda: grpo_loss(L, L, L[:, :2], A2, M), ValueError, "logp_ref"),
    (lambda: grpo_loss(L, L[:1], L, A2, M), ValueError, "logp_old"),
    (lambda: grpo_loss(L, L, L, np.ones(5), M), ValueError, "adv"),
    (lambda: grpo_loss(L, L, L, A2, M, eps=0), ValueError, "eps"),
    (lambda: grpo_loss(L, L, L, A2, M, agg="sum"), ValueError, "agg"),
    (lambda: grpo_step(POL, POL.copy(), MDP, GR, RNG, K=0), ValueError, "K"),
    (lambda: grpo_step(POL, POL.copy(), MDP, GR, RNG, K=2.0), TypeError, "K"),
    (lambda: grpo_step(POL, POL.copy(), MDP, GR, RNG, K=2, mu=0), ValueError, "mu"),
    (lambda: grpo_step(POL, POL.copy(), MDP, GR, RNG, K=2, lr=0.0), ValueError, "lr"),
    (lambda: grpo_step(POL, POL.copy(), MDP, GR, 0, K=2), TypeError, "rng"),
    (lambda: grpo_step(POL, POL.copy(), MDP, GR, RNG, K=2, baseline="x"), ValueError, "baseline"),
    (lambda: grpo_step(POL, POL.copy(), MDP, GR, RNG, K=1, baseline="loo"), ValueError, "rewards"),
    (lambda: grpo_step(POL.theta, POL.copy(), MDP, GR, RNG, K=2), TypeError, "policy"),
    (lambda: grpo_step(POL, None, MDP, GR, RNG, K=2), TypeError, "ref_policy"),
    (lambda: grpo_step(POL, POL.copy(), MDP, "grader", RNG, K=2), TypeError, "grader"),
]


@pytest.mark.parametrize("call, exc, name", BAD)
def test_bad_input(call, exc, name):
    theta0 = POL.theta.copy()
    with pytest.raises(exc, match=name):
        call()
    POL.theta[...] = theta0                                   # a failing step may have rolled out

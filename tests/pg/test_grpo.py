"""GRPO assembled: the loss is its parts, its gradient is checked, one epoch with beta = 0 is
REINFORCE with the standardized advantage, and the training step behaves."""

import re
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.advantages import REWARD_MAX, standardized
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.grpo import grpo_loss, grpo_step
from minirl_lm.pg.kl import ESTIMATORS, kl_penalty
from minirl_lm.pg.reinforce import AGGS, reinforce_loss
from quiet import names, raises


def batch(rng, B=8, T=5, eps=0.2):
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp_old = -rng.uniform(0.1, 3.0, size=(B, T))
    d = rng.uniform(-0.5, 0.5, size=(B, T))
    for edge in (np.log(1 - eps), np.log(1 + eps)):
        d[np.abs(d - edge) < 1e-3] += 3e-3  # away from the kink
    logp = (logp_old + d) * mask
    logp_ref = -rng.uniform(0.1, 3.0, size=(B, T)) * mask
    return logp, logp_old * mask, logp_ref, rng.normal(size=B), mask


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean"])
def test_grpo_loss_is_its_parts_and_matches_finite_differences(estimator, agg):
    rng = np.random.default_rng(0)
    logp, logp_old, logp_ref, adv, mask = batch(rng)
    loss, d = grpo_loss(logp, logp_old, logp_ref, adv, mask, beta=0.1, kl_estimator=estimator, agg=agg)
    lc, dc = clipped_surrogate(logp, logp_old, adv, mask, agg=agg)
    lk, dk = kl_penalty(logp, logp_ref, mask, estimator, agg)
    assert loss == lc + 0.1 * lk and np.array_equal(d, dc + 0.1 * dk)
    f = lambda x: grpo_loss(x, logp_old, logp_ref, adv, mask, beta=0.1, kl_estimator=estimator, agg=agg)[0]
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
    ref = TabularPolicy(pol.theta + 1.0)  # any reference: beta = 0
    p1, p2 = pol.copy(), pol.copy()
    grpo_step(p1, ref, mdp, grader, np.random.default_rng(7), K, mu=1, lr=0.5, beta=0.0, agg=agg)
    rng = np.random.default_rng(7)
    ro = mdp.rollout(p2, K, rng)
    A = standardized(mdp.score(grader, ro).reshape(-1, K)).reshape(-1)
    logp, _ = p2.logp(ro.states, ro.tokens, ro.mask)
    _, d = reinforce_loss(logp, A, ro.mask, agg)
    p2.theta -= 0.5 * p2.backward(ro.states, ro.tokens, ro.mask, d)
    assert np.abs(p1.theta - pol.theta).max() > 1e-3  # the step did move theta
    return np.abs(p1.theta - p2.theta).max()


@pytest.mark.parametrize("agg", AGGS)
def test_one_epoch_beta_zero_is_reinforce_with_standardized_advantage(agg):
    assert grpo_vs_reinforce_gap(agg) < 1e-12


def test_theta_gradient_through_the_policy():
    mdp, pol, _ = _toy(2)
    rng = np.random.default_rng(3)
    ro = mdp.rollout(pol, 5, rng)
    logp_old, _ = pol.logp(ro.states, ro.tokens, ro.mask)
    logp_ref, _ = TabularPolicy(pol.theta + rng.normal(size=pol.theta.shape)).logp(ro.states, ro.tokens, ro.mask)
    theta = pol.theta + rng.normal(scale=0.4, size=pol.theta.shape)
    adv = rng.normal(size=ro.mask.shape[0])

    def loss(th):
        lp, _ = TabularPolicy(th).logp(ro.states, ro.tokens, ro.mask)
        return grpo_loss(lp, logp_old, logp_ref, adv, ro.mask, beta=0.3)[0]

    p = TabularPolicy(theta)
    lp, _ = p.logp(ro.states, ro.tokens, ro.mask)
    rho = np.exp(lp - logp_old)[ro.mask > 0]
    assert np.abs(np.abs(rho - 1) - 0.2).min() > 1e-4 and (np.abs(rho - 1) > 0.2).any()
    dtheta = p.backward(
        ro.states, ro.tokens, ro.mask, grpo_loss(lp, logp_old, logp_ref, adv, ro.mask, beta=0.3)[1]
    )
    assert np.abs(dtheta - fd_grad(loss, theta.copy())).max() < 1e-8


@pytest.mark.parametrize("estimator", ["k2", "k3"])
def test_k1_group_leaves_theta_bitwise_at_the_reference(estimator):
    # K = 1: standardized A = 0; at theta = theta_ref, u = 0 and dk2 = dk3 = 0
    mdp, pol, grader = _toy(4)
    theta0 = pol.theta.copy()
    rng = np.random.default_rng(5)
    for _ in range(20):
        grpo_step(pol, pol.copy(), mdp, grader, rng, K=1, mu=2, lr=2.0, beta=0.04, kl_estimator=estimator)
    assert np.array_equal(pol.theta, theta0)


def test_step_diagnostics_and_clipping_after_the_first_epoch():
    mdp, pol, grader = _toy(6)
    out = grpo_step(pol, pol.copy(), mdp, grader, np.random.default_rng(8), K=8, mu=4, lr=5.0)
    assert set(out) >= {"mean_reward", "loss", "clip_fraction", "kl", "rollout", "rewards", "advantages"}
    assert len(out["loss"]) == 4 and len(out["clip_fraction"]) == 4
    assert out["clip_fraction"][0] == 0.0 and max(out["clip_fraction"][1:]) > 0
    assert out["kl"] == 0.0  # pi_old = pi_ref before the step
    assert out["mean_reward"] == out["rewards"].mean()


def test_training_improves_the_expected_reward():
    mdp, pol, grader = _toy(9)
    ref = pol.copy()
    rng = np.random.default_rng(10)
    first = [grpo_step(pol, ref, mdp, grader, rng, K=8, mu=2, lr=0.5)["mean_reward"] for _ in range(5)]
    for _ in range(60):
        grpo_step(pol, ref, mdp, grader, rng, K=8, mu=2, lr=0.5)
    last = [grpo_step(pol, ref, mdp, grader, rng, K=8, mu=2, lr=0.5)["mean_reward"] for _ in range(5)]
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
    lo = np.full((1, 3), -800.0)  # rho = inf on every token
    with np.errstate(all="raise"):
        loss, g = grpo_loss(lp, lo, lp, [[1.0, 0.0, 1.0]], m, beta=0.0, agg="seq_sum")
    assert loss == -2.4 and np.array_equal(g, np.zeros((1, 3)))  # A > 0 clipped, A = 0 nothing
    with pytest.raises(ValueError, match="logp"):  # A < 0: rho A = -inf
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


@pytest.mark.parametrize(
    "kw, exc, name",
    [
        (dict(beta=-0.1), ValueError, "beta"),
        (dict(beta="x"), TypeError, "beta"),
        (dict(eps=0.0), ValueError, "eps"),
        (dict(eps=1.5), ValueError, "eps"),
        (dict(eps_high=-0.1), ValueError, "eps_high"),
        (dict(agg="sum"), ValueError, "agg"),
        (dict(kl_estimator="k5"), ValueError, "kl_estimator"),
        (dict(baseline="median"), ValueError, "baseline"),
        (dict(K=1, baseline="loo"), ValueError, "baseline"),
        (dict(std_eps=-1.0), ValueError, "std_eps"),
        (dict(ddof=True), TypeError, "ddof"),
        (dict(ddof=2), ValueError, "ddof"),
    ],
)
def test_bad_settings_are_rejected_before_the_rollout(kw, exc, name):
    mdp, pol, grader = _toy()
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    theta0 = pol.theta.copy()
    kw = {"K": 2, **kw}
    with pytest.raises(exc, match=name):
        grpo_step(pol, pol.copy(), mdp, grader, rng, **kw)
    assert rng.bit_generator.state == before  # no random draw consumed
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
    POL.theta[...] = theta0  # a failing step may have rolled out


# ---- folded from tests/test_kills_grpo_clip.py -----------------------------------------------


def _mdp():
    return TokenMDP(["a", "b"], V=3, eos=0, max_len=3)  # S = 14 states


def _grader(x, y):
    return float(len(y) == 2) + 0.5 * (x == "a" and y[0] == 1)


def _tables(seed=0):
    """theta and a different reference table, (14, 3)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(scale=0.5, size=(14, 3))
    return theta, theta + rng.normal(scale=0.5, size=(14, 3))


def _run(theta, theta_ref, seed=3, grader=_grader, **kw):
    """grpo_step on fresh copies of everything; returns (theta after, diagnostics)."""
    pol, ref = TabularPolicy(theta), TabularPolicy(theta_ref)
    out = grpo_step(pol, ref, _mdp(), grader, np.random.default_rng(seed), **kw)
    return pol.theta.copy(), out


def _same(a, b):
    (ta, oa), (tb, ob) = a, b
    assert np.array_equal(ta, tb)
    assert oa["loss"] == ob["loss"] and oa["clip_fraction"] == ob["clip_fraction"]
    assert oa["kl"] == ob["kl"] and np.array_equal(oa["advantages"], ob["advantages"])


DOCUMENTED = dict(
    mu=1,
    lr=0.1,
    eps=0.2,
    eps_high=None,
    beta=0.04,
    kl_estimator="k3",
    agg="token_mean",
    baseline="standardized",
    std_eps=1e-8,
    ddof=0,
)


def test_grpo_step_defaults_are_the_documented_values():
    theta, ref = _tables()
    default = _run(theta, ref, K=4)
    _same(default, _run(theta, ref, K=4, **DOCUMENTED))
    assert not np.array_equal(default[0], theta)  # the step moved theta


@pytest.mark.parametrize(
    "name, other",
    [
        ("mu", 2),
        ("lr", 0.3),
        ("beta", 0.5),
        ("kl_estimator", "k1"),
        ("agg", "seq_sum"),
        ("baseline", "mean"),
        ("std_eps", 0.5),
        ("ddof", 1),
    ],
)
def test_grpo_step_each_default_matters(name, other):
    theta, ref = _tables()
    default = _run(theta, ref, K=4)[0]
    assert not np.array_equal(_run(theta, ref, K=4, **{name: other})[0], default)


def test_grpo_step_clip_defaults_with_several_epochs():
    # eps and eps_high act from the second epoch on (rho = 1 in the first)
    theta, ref = _tables()
    base = dict(K=4, mu=3, lr=3.0)
    default = _run(theta, ref, **base)
    _same(default, _run(theta, ref, eps=0.2, eps_high=None, **base))
    _same(default, _run(theta, ref, eps=0.2, eps_high=0.2, **base))  # eps_high = eps
    assert max(default[1]["clip_fraction"]) > 0
    assert not np.array_equal(_run(theta, ref, eps=0.5, **base)[0], default[0])


def _hand_clip_fraction(theta1, theta0, out, eps, eps_high):
    """The fraction of real tokens with A > 0 and rho > 1 + eps_high or A < 0 and rho < 1 - eps,
    rho = pi_theta1 / pi_theta0 on the rollout."""
    ro = out["rollout"]
    lp1, _ = TabularPolicy(theta1).logp(ro.states, ro.tokens, ro.mask)
    lp0, _ = TabularPolicy(theta0).logp(ro.states, ro.tokens, ro.mask)
    rho = np.exp(lp1 - lp0)
    A = out["advantages"][:, None] * np.ones_like(ro.mask)
    real = ro.mask > 0
    clipped = real & (((A > 0) & (rho > 1 + eps_high)) | ((A < 0) & (rho < 1 - eps)))
    return clipped.sum() / ro.mask.sum()


def test_grpo_step_eps_high_reaches_the_loss_and_the_clip_fraction():
    theta, ref = _tables()
    theta1 = _run(theta, ref, K=4, mu=1, lr=3.0)[0]  # the first step: eps-free
    sym = _run(theta, ref, K=4, mu=2, lr=3.0, eps=0.2)
    high = _run(theta, ref, K=4, mu=2, lr=3.0, eps=0.2, eps_high=0.6)
    f_sym = _hand_clip_fraction(theta1, theta, sym[1], 0.2, 0.2)
    f_high = _hand_clip_fraction(theta1, theta, high[1], 0.2, 0.6)
    assert f_sym != f_high
    assert sym[1]["clip_fraction"] == [0.0, f_sym]
    assert high[1]["clip_fraction"] == [0.0, f_high]
    assert not np.array_equal(sym[0], high[0])  # the second step differs too


def test_grpo_step_ddof_reaches_the_advantages():
    theta, ref = _tables()
    for ddof in (0, 1):
        out = _run(theta, ref, K=4, ddof=ddof, std_eps=1e-8)[1]
        R = out["rewards"].reshape(-1, 4)
        assert R.std(axis=1).max() > 0  # a group varies
        hand = (R - R.mean(axis=1, keepdims=True)) / (R.std(axis=1, ddof=ddof, keepdims=True) + 1e-8)
        np.testing.assert_allclose(out["advantages"], hand.reshape(-1), rtol=1e-14, atol=0)


def test_grpo_step_loo_at_k_two():
    # K = 2 is allowed with "loo": A_1 = R_1 - R_2, A_2 = R_2 - R_1 (exact: rewards are halves)
    theta, ref = _tables()
    out = _run(theta, ref, K=2, baseline="loo")[1]
    R = out["rewards"].reshape(-1, 2)
    assert np.array_equal(out["advantages"].reshape(-1, 2), R - R[:, ::-1])


@pytest.mark.parametrize("estimator", ["k1", "k2"])
def test_grpo_step_kl_diagnostic_is_the_mean_per_token_estimate(estimator):
    # kl = sum over real tokens of k(u) / (number of real tokens), u = logp_old - logp_ref,
    # k1 = u, k2 = u^2 / 2
    theta, ref = _tables()
    out = _run(theta, ref, K=4, kl_estimator=estimator)[1]
    ro = out["rollout"]
    lo, _ = TabularPolicy(theta).logp(ro.states, ro.tokens, ro.mask)
    lr_, _ = TabularPolicy(ref).logp(ro.states, ro.tokens, ro.mask)
    u = (lo - lr_) * ro.mask
    k = u if estimator == "k1" else 0.5 * u * u
    assert ro.mask.sum() > 2
    np.testing.assert_allclose(out["kl"], k.sum() / ro.mask.sum(), rtol=1e-13, atol=0)


def test_grpo_step_kl_diagnostic_with_a_single_token():
    # one prompt, V = 2, max_len = 1, K = 1: one real token y, kl = logp_old[y] - logp_ref[y]
    mdp = TokenMDP(["a"], V=2, eos=0, max_len=1)
    theta, ref = np.array([[0.3, -0.2]]), np.array([[0.0, 0.5]])
    out = grpo_step(
        TabularPolicy(theta), TabularPolicy(ref), mdp, _grader, np.random.default_rng(0), K=1, kl_estimator="k1"
    )
    ro = out["rollout"]
    assert ro.mask.sum() == 1.0
    y = int(ro.tokens[0, 0])
    log_softmax = lambda t: t - np.log(np.exp(t).sum())
    np.testing.assert_allclose(out["kl"], log_softmax(theta[0])[y] - log_softmax(ref[0])[y], rtol=1e-13, atol=0)


def test_grpo_step_loss_diagnostic_is_each_epochs_loss():
    # mu = 1, beta = 0: rho = 1, so loss = -sum_{b,t} A_b mask[b,t] / (number of real tokens)
    theta, ref = _tables()
    out = _run(theta, ref, K=4, beta=0.0)[1]
    ro = out["rollout"]
    A_tok = out["advantages"][:, None] * ro.mask
    hand = -((ro.mask / ro.mask.sum()) * A_tok).sum()
    assert len(out["loss"]) == 1 and isinstance(out["loss"][0], float)
    np.testing.assert_allclose(out["loss"][0], hand, rtol=1e-15, atol=1e-17)
    out = _run(theta, ref, K=4, mu=3, lr=1.0)[1]
    assert len(out["loss"]) == 3 and all(isinstance(x, float) for x in out["loss"])
    assert len(set(out["loss"])) == 3  # one per epoch, each its own


class _CountingGrader:
    def __init__(self):
        self.calls = 0

    def __call__(self, prompt, response):
        self.calls += 1
        return _grader(prompt, response)


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(K=0, mu=0), "K: expected an integer >= 1, got 0"),  # K first
        (dict(K=2, lr=0.0), "lr: expected a number > 0, got 0.0"),
        (dict(K=2, eps=0.0), "eps: expected a number > 0 and <= 1, got 0.0"),
        (dict(K=2, eps=-0.5), "eps: expected a number > 0 and <= 1, got -0.5"),
        (dict(K=2, eps=1.5), "eps: expected a number > 0 and <= 1, got 1.5"),
        (dict(K=2, eps=2.5), "eps: expected a number > 0 and <= 1, got 2.5"),
        (dict(K=2, eps_high=0.0), "eps_high: expected a number > 0, got 0.0"),
        (dict(K=2, eps_high=-0.5), "eps_high: expected a number > 0, got -0.5"),
        (dict(K=2, beta=-0.1), "beta: expected a number >= 0, got -0.1"),
        (dict(K=2, std_eps=-1.0), "std_eps: expected a number >= 0, got -1.0"),
        (dict(K=2, ddof=-1), "ddof: expected an integer >= 0 and <= 1, got -1"),
        (dict(K=2, ddof=2), "ddof: expected an integer >= 0 and <= 1, got 2"),
        (
            dict(K=1, baseline="loo"),
            "baseline: 'loo' (leave-one-out) needs K >= 2 (at K = 1 the "
            "rewards of a group have no others to average), got K = 1",
        ),
    ],
)
def test_grpo_step_bad_settings_exact_message_before_any_grading(kw, message):
    theta, ref = _tables()
    pol = TabularPolicy(theta)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    grader = _CountingGrader()
    with pytest.raises(ValueError) as e:
        grpo_step(pol, TabularPolicy(ref), _mdp(), grader, rng, **kw)
    assert str(e.value) == message
    assert grader.calls == 0  # checked before the rollout
    assert rng.bit_generator.state == state and np.array_equal(pol.theta, theta)


def test_grpo_step_bad_objects_exact_messages():
    theta, ref = _tables()
    pol, rp, rng = TabularPolicy(theta), TabularPolicy(ref), np.random.default_rng(0)
    cases = [
        ((pol, rp, _mdp(), "grader"), "grader: expected a callable grader(prompt, response), got str 'grader'"),
        (
            (pol, rp, _mdp(), lambda x: 1.0),
            "grader: expected a callable grader(prompt, response) "
            "taking 2 positional arguments, got one with "
            "signature (x)",
        ),
        (
            (theta, rp, _mdp(), _grader),
            "policy: expected a TabularPolicy (with logp(), backward(), copy(), theta), "
            "got ndarray without logp, backward, theta",
        ),
        (
            (pol, 3, _mdp(), _grader),
            "ref_policy: expected a TabularPolicy (with logp(), theta), got int without logp, theta",
        ),
        (
            (pol, rp, 3, _grader),
            "mdp: expected a TokenMDP or an environment of your own (with rollout(), score(), S, V), "
            "got int without rollout, score, S, V",
        ),
    ]
    for args, message in cases:
        with pytest.raises(TypeError) as e:
            grpo_step(*args, rng, 2)
        assert str(e.value) == message
    with pytest.raises(TypeError) as e:
        grpo_step(pol, rp, _mdp(), _grader, 0, 2)
    assert str(e.value) == ("rng: expected a numpy.random.Generator (np.random.default_rng(seed)), got int 0")


def test_grpo_step_overflowing_update_exact_message_and_silent():
    # baseline "none" with a reward of 1e6: |dtheta| >> 1, and lr = 1e308 overflows the step
    theta, ref = _tables()
    pol, rng = TabularPolicy(theta), np.random.default_rng(0)
    state = rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            grpo_step(pol, TabularPolicy(ref), _mdp(), lambda x, y: 1e6, rng, K=2, baseline="none", lr=1e308)
    assert str(e.value) == (
        "grpo_step: expected a finite theta after epoch 1, got inf (beyond float64) "
        "from lr = 1e+308, eps = 0.2, beta = 0.04, std_eps = 1e-08"
    )
    assert np.array_equal(pol.theta, theta) and rng.bit_generator.state == state


def _loss_batch():
    rng = np.random.default_rng(1)
    mask = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    logp_old = -rng.uniform(0.1, 2.0, size=(3, 3)) * mask
    logp = (logp_old + rng.uniform(-0.5, 0.5, size=(3, 3))) * mask
    logp_ref = -rng.uniform(0.1, 2.0, size=(3, 3)) * mask
    return logp, logp_old, logp_ref, np.array([1.0, -0.5, 0.7]), mask


def test_grpo_loss_defaults_are_the_documented_values():
    args = _loss_batch()
    loss, d = grpo_loss(*args)
    loss2, d2 = grpo_loss(
        *args, eps=0.2, eps_high=None, beta=0.04, kl_estimator="k3", agg="token_mean", max_len=None
    )
    assert loss == loss2 and np.array_equal(d, d2)
    loss3, d3 = grpo_loss(*args, beta=0.5)
    assert loss3 != loss and not np.array_equal(d3, d)


def test_grpo_loss_max_len_reaches_both_terms():
    # B = 1, T = 2, logp = logp_old (rho = 1), A = 2, k1 = logp - logp_ref = 0.5 per token;
    # agg "constant" with max_len 5: w = 1 / (1 * 5) = 0.2 per token.
    # loss = -(0.2 * 2 + 0.2 * 2) + 1.0 * (0.2 * 0.5 + 0.2 * 0.5) = -0.8 + 0.2 = -0.6
    # dloss/dlogp = -0.2 * 2 + 1.0 * 0.2 * 1 = -0.2 per token
    logp, logp_ref, mask = np.array([[-1.0, -2.0]]), np.array([[-1.5, -2.5]]), np.ones((1, 2))
    loss, d = grpo_loss(
        logp, logp.copy(), logp_ref, [2.0], mask, beta=1.0, kl_estimator="k1", agg="constant", max_len=5
    )
    np.testing.assert_allclose(loss, -0.6, rtol=1e-15)
    np.testing.assert_allclose(d, [[-0.2, -0.2]], rtol=1e-15)


def test_grpo_step_keeps_minus_inf_logits_and_is_silent():
    # a -inf logit is a zero-probability token: never sampled, its gradient entry is 0, so the
    # update leaves it at -inf (no inf - inf) and every finite entry finite
    theta, ref = _tables()
    theta[::2, 2] = -np.inf
    pol = TabularPolicy(theta)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grpo_step(pol, TabularPolicy(ref), _mdp(), _grader, np.random.default_rng(3), K=4, mu=3, lr=2.0, beta=0.5)
    assert np.array_equal(np.isneginf(pol.theta), np.isneginf(theta))
    assert np.isfinite(pol.theta[np.isfinite(theta)]).all()
    assert not np.array_equal(pol.theta, theta)


# ---- overflow named at its root --------------------------------------------------------------


def test_grpo_loss_overflow_names_the_function_and_its_inputs_ranges():
    # u = logp - logp_ref = -1e308: k3 overflows; the message gives every input's range
    m, lp = np.ones((1, 2)), -np.ones((1, 2))
    msg = names(
        "grpo_loss", "logp_ref in [1e+308, 1e+308]", lambda: grpo_loss(lp, lp, np.full((1, 2), 1e308), [1.0], m)
    )
    assert msg.startswith("grpo_loss: expected a finite loss and dloss_dlogp, got inf (beyond float64) from logp")
    # an ordinary reference and a log-prob of -800 (pi(y) ~ e^-800)
    low = np.full((1, 2), -800.0)
    names("grpo_loss", "logp in [-800, -800]", lambda: grpo_loss(low, low, np.zeros((1, 2)), np.ones(1), m))


def test_grpo_loss_huge_beta_is_named_and_silent():
    # k3 = e^4 - 5 ~ 49.6 per token: beta = 1e308 overflows beta * KL (it returned inf)
    m, lp = np.ones((1, 2)), -np.ones((1, 2))
    names(
        "grpo_loss",
        "expected a finite loss, got inf (beyond float64) from",
        lambda: grpo_loss(lp, lp, np.full((1, 2), -5.0), np.ones(1), m, beta=1e308),
    )


def test_grpo_loss_reads_its_arguments_once():
    # the boundary reads them; the body (and the clip's and the KL's bodies it calls) trusts
    # them: a mask the boundary refuses goes through the body unread
    rng = np.random.default_rng(0)
    logp, logp_old, logp_ref, adv, mask = batch(rng)
    half = mask * 0.5
    names("mask", "expected only 0 and 1", lambda: grpo_loss(logp, logp_old, logp_ref, adv, half))
    loss, _ = grpo_loss.core(logp, logp_old, logp_ref, adv[:, None] * half, half)
    assert np.isfinite(loss)


def test_grpo_step_a_later_epoch_overflow_is_named_without_catching():
    # A < 0 on one response, lr = 1e4: the first step drives its log-probs far below pi_ref's,
    # so epoch 2's k3 = exp(-u) overflows; the step is refused (lr among its inputs), theta untouched
    mdp, pol, _ = _toy(0)
    ref = pol.copy()
    grader = lambda x, y: float(len(y) == 2)
    theta = pol.theta.copy()
    msg = names(
        "grpo_step",
        "expected a finite loss of epoch 2",
        lambda: grpo_step(pol, ref, mdp, grader, np.random.default_rng(0), K=6, mu=2, lr=1e4, beta=0.5),
    )
    assert "lr = 10000" in msg and np.array_equal(pol.theta, theta)


def test_grpo_step_rewards_beyond_the_domain_name_the_grader():
    # the rewards are the grader's output, not an argument (it named "rewards")
    mdp, pol, _ = _toy(0)
    theta, rng = pol.theta.copy(), np.random.default_rng(0)
    state = rng.bit_generator.state
    names(
        "grader",
        "expected rewards |R| <= 1e+150",
        lambda: grpo_step(pol, pol.copy(), mdp, lambda x, y: 1e200, rng, K=2),
    )
    assert np.array_equal(pol.theta, theta) and rng.bit_generator.state == state


# ---------------------------------------------------------------- the environment protocol


class UserEnv:
    """An environment of a user's own, no TokenMDP: one prompt per group, responses of 2 tokens
    drawn from states 0 (first token) and 1 + y_1 (second), V = 3; what grpo_step's docstring lists."""

    S, V = 4, 3

    def __init__(self, N=2):
        self.N, self.scored = N, 0

    def rollout(self, policy, K, rng):
        B = self.N * K
        first = policy.sample(np.zeros(B, np.int64), rng)  # (B,)
        second = policy.sample(1 + first, rng)  # (B,)
        return SimpleNamespace(
            states=np.stack([np.zeros(B, np.int64), 1 + first], axis=1),
            tokens=np.stack([first, second], axis=1),
            mask=np.ones((B, 2)),
        )

    def score(self, grader, rollout):
        self.scored += 1
        K = len(rollout.tokens) // self.N
        return np.array([grader(b // K, tuple(y)) for b, y in enumerate(rollout.tokens)], dtype=float)


def test_grpo_step_runs_on_a_users_own_environment():
    env, pol = UserEnv(), TabularPolicy(np.zeros((4, 3)))
    ref = pol.copy()
    rng = np.random.default_rng(0)
    out = grpo_step(pol, ref, env, lambda n, y: float(y[0] == 0), rng, K=4, lr=0.5)
    assert env.scored == 1 and len(out["loss"]) == 1 and out["rollout"].tokens.shape == (8, 2)
    ro, R = out["rollout"], out["rewards"]
    assert np.array_equal(R, ro.tokens[:, 0] == 0) and R.reshape(2, 4).std(axis=1).max() > 0
    assert np.array_equal(out["advantages"], standardized(R.reshape(-1, 4)).ravel())
    # the same step by hand on the same draws: grpo_loss at rho = 1, the policy's backward
    logp, _ = ref.logp(ro.states, ro.tokens, ro.mask)
    _, dlogp = grpo_loss(logp, logp, logp, out["advantages"], ro.mask)
    assert np.array_equal(pol.theta, ref.theta - 0.5 * ref.backward(ro.states, ro.tokens, ro.mask, dlogp))


def test_grpo_step_names_what_a_users_environment_lacks():
    pol, rng = TabularPolicy(np.zeros((4, 3))), np.random.default_rng(0)

    class NoScore:
        S, V = 4, 3

        def rollout(self, policy, K, rng):
            return None

    class HalfCheckpoint(UserEnv):
        def checkpoint(self):
            return 0

    class BadRollout(UserEnv):
        def rollout(self, policy, K, rng):
            return SimpleNamespace(states=0, tokens=0)

    class OddRows(UserEnv):
        def rollout(self, policy, K, rng):
            return SimpleNamespace(states=np.zeros((3, 1)), tokens=np.zeros((3, 1)), mask=np.ones((3, 1)))

    class ShortScore(UserEnv):
        def score(self, grader, rollout):
            return [1.0]

    cases = [
        (
            NoScore(),
            TypeError,
            "mdp: expected a TokenMDP or an environment of your own (with rollout(), score(), S, V), "
            "got NoScore without score",
        ),
        (
            HalfCheckpoint(),
            TypeError,
            "mdp: expected both checkpoint() and rollback(cp) or neither, got HalfCheckpoint",
        ),
        (
            BadRollout(),
            TypeError,
            "mdp: expected rollout() to return an object (with states, tokens, mask), "
            "got SimpleNamespace without mask",
        ),
        (
            OddRows(),
            ValueError,
            "mdp: expected rollout() to return a (B, T) mask with B = N*K rows (K = 2), got shape (3, 1)",
        ),
        (ShortScore(), ValueError, "mdp: expected shape (4,), got (1,)"),
    ]
    for env, exc, message in cases:
        state = rng.bit_generator.state
        with pytest.raises(exc) as e:
            grpo_step(pol, pol.copy(), env, _grader, rng, K=2)
        assert str(e.value) == message
        assert rng.bit_generator.state == state and (pol.theta == 0).all()


def test_grpo_step_rolls_a_users_environment_back_through_its_public_checkpoint():
    class Counting(UserEnv):
        """An environment with state: the number of rollouts, taken back on a failed step."""

        rollouts = 0

        def rollout(self, policy, K, rng):
            self.rollouts += 1
            return super().rollout(policy, K, rng)

        def checkpoint(self):
            return self.rollouts

        def rollback(self, cp):
            self.rollouts = cp

    env, pol, rng = Counting(), TabularPolicy(np.zeros((4, 3))), np.random.default_rng(0)
    with pytest.raises(ValueError, match="^mdp: expected no NaN"):  # score's rewards, after the rollout
        grpo_step(pol, pol.copy(), env, lambda n, y: np.nan, rng, K=2)
    assert env.rollouts == 0
    grpo_step(pol, pol.copy(), env, _grader, rng, K=2)
    assert env.rollouts == 1


def test_grpo_step_table_shape_messages_are_exact():
    theta, ref = _tables()  # (14, 3): the shape of _mdp()
    rng = np.random.default_rng(0)
    wide = TabularPolicy(np.zeros((14, 4)))
    msg = raises(ValueError, lambda: grpo_step(wide, wide.copy(), _mdp(), _grader, rng, K=2))
    assert msg == "policy: expected a table of shape (S, V) = (14, 3) for mdp, got (14, 4)"
    msg = raises(ValueError, lambda: grpo_step(TabularPolicy(theta), wide, _mdp(), _grader, rng, K=2))
    assert msg == "ref_policy: expected a table of the policy's shape (14, 3), got (14, 4)"


def test_grpo_step_overflow_message_shows_an_explicit_eps_high():
    theta, ref = _tables()
    msg = raises(
        ValueError,
        lambda: grpo_step(
            TabularPolicy(theta),
            TabularPolicy(ref),
            _mdp(),
            lambda x, y: 1e6,
            np.random.default_rng(0),
            K=2,
            baseline="none",
            lr=1e308,
            eps_high=0.3,
        ),
    )
    assert msg == (
        "grpo_step: expected a finite theta after epoch 1, got inf (beyond float64) "
        "from lr = 1e+308, eps = 0.2, eps_high = 0.3, beta = 0.04, std_eps = 1e-08"
    )


def test_grpo_step_rejects_a_one_dimensional_mask_whatever_K():
    class FlatMask(UserEnv):
        def rollout(self, policy, K, rng):
            ro = super().rollout(policy, K, rng)
            return SimpleNamespace(states=ro.states, tokens=ro.tokens, mask=np.ones(len(ro.tokens)))

    pol = TabularPolicy(np.zeros((4, 3)))
    for K in (1, 2):
        msg = raises(
            ValueError, lambda: grpo_step(pol, pol.copy(), FlatMask(), _grader, np.random.default_rng(0), K=K)
        )
        assert (
            msg
            == f"mdp: expected rollout() to return a (B, T) mask with B = N*K rows (K = {K}), got shape ({2 * K},)"
        )


def test_grpo_step_accepts_rewards_at_the_bound_of_the_domain():
    mdp, pol, _ = _toy(0)
    out = grpo_step(pol, pol.copy(), mdp, lambda x, y: REWARD_MAX, np.random.default_rng(0), K=2)
    assert (out["rewards"] == 1e150).all() and (out["advantages"] == 0).all()

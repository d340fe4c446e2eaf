"""Exact answers of grpo and clip: the defaults of `grpo_loss` and `grpo_step` (a default call is
bitwise the call with the documented value, and another value changes the result), the settings
`grpo_step` hands on to the advantages, the KL, the surrogate and the clip fraction (`ddof`,
`kl_estimator`, `eps_high`, `max_len`), its diagnostics (`loss`, `kl`) against hand-computed
values, the full text of every error message (argument checks, the overflow of the update, the
non-finite surrogate with the index of the offending token), that every argument is checked
before the grader is called, the edge cases of `clip_fraction` (no real token, one real token) and
the silence of an overflowing update."""

import warnings

import numpy as np
import pytest

from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.grpo import grpo_loss, grpo_step
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy


# ---------------------------------------------------------------- a toy task, fresh per call

def _mdp():
    return TokenMDP(["a", "b"], V=3, eos=0, max_len=3)        # S = 14 states


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


# ---------------------------------------------------------------- grpo_step: defaults

DOCUMENTED = dict(mu=1, lr=0.1, eps=0.2, eps_high=None, beta=0.04, kl_estimator="k3",
                  agg="token_mean", baseline="standardized", adv_eps=1e-8, ddof=0)


def test_grpo_step_defaults_are_the_documented_values():
    theta, ref = _tables()
    default = _run(theta, ref, K=4)
    _same(default, _run(theta, ref, K=4, **DOCUMENTED))
    assert not np.array_equal(default[0], theta)             # the step moved theta


@pytest.mark.parametrize("name, other", [
    ("mu", 2), ("lr", 0.3), ("beta", 0.5), ("kl_estimator", "k1"), ("agg", "seq_sum"),
    ("baseline", "mean"), ("adv_eps", 0.5), ("ddof", 1)])
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
    _same(default, _run(theta, ref, eps=0.2, eps_high=0.2, **base))   # eps_high = eps
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
    theta1 = _run(theta, ref, K=4, mu=1, lr=3.0)[0]          # the first step: eps-free
    sym = _run(theta, ref, K=4, mu=2, lr=3.0, eps=0.2)
    high = _run(theta, ref, K=4, mu=2, lr=3.0, eps=0.2, eps_high=0.6)
    f_sym = _hand_clip_fraction(theta1, theta, sym[1], 0.2, 0.2)
    f_high = _hand_clip_fraction(theta1, theta, high[1], 0.2, 0.6)
    assert f_sym != f_high
    assert sym[1]["clip_fraction"] == [0.0, f_sym]
    assert high[1]["clip_fraction"] == [0.0, f_high]
    assert not np.array_equal(sym[0], high[0])               # the second step differs too


# ---------------------------------------------------------------- grpo_step: what it hands on

def test_grpo_step_ddof_reaches_the_advantages():
    theta, ref = _tables()
    for ddof in (0, 1):
        out = _run(theta, ref, K=4, ddof=ddof, adv_eps=1e-8)[1]
        R = out["rewards"].reshape(-1, 4)
        assert R.std(axis=1).max() > 0                        # a group varies
        hand = (R - R.mean(axis=1, keepdims=True)) / (R.std(axis=1, ddof=ddof, keepdims=True)
                                                      + 1e-8)
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
    out = grpo_step(TabularPolicy(theta), TabularPolicy(ref), mdp, _grader,
                    np.random.default_rng(0), K=1, kl_estimator="k1")
    ro = out["rollout"]
    assert ro.mask.sum() == 1.0
    y = int(ro.tokens[0, 0])
    log_softmax = lambda t: t - np.log(np.exp(t).sum())
    np.testing.assert_allclose(out["kl"], log_softmax(theta[0])[y] - log_softmax(ref[0])[y],
                               rtol=1e-13, atol=0)


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
    assert len(set(out["loss"])) == 3                         # one per epoch, each its own


# ---------------------------------------------------------------- grpo_step: checks, messages

class _CountingGrader:
    def __init__(self):
        self.calls = 0

    def __call__(self, prompt, response):
        self.calls += 1
        return _grader(prompt, response)


@pytest.mark.parametrize("kw, message", [
    (dict(K=0, mu=0), "K: expected an integer >= 1, got 0"),        # K first
    (dict(K=2, lr=0.0), "lr: expected a number > 0.0, got 0.0"),
    (dict(K=2, eps=0.0), "eps: expected a number > 0.0, got 0.0"),
    (dict(K=2, eps=-0.5), "eps: expected a number > 0.0, got -0.5"),
    (dict(K=2, eps=1.5), "eps: expected a number <= 1.0, got 1.5"),
    (dict(K=2, eps=2.5), "eps: expected a number <= 1.0, got 2.5"),
    (dict(K=2, eps_high=0.0), "eps_high: expected a number > 0.0, got 0.0"),
    (dict(K=2, eps_high=-0.5), "eps_high: expected a number > 0.0, got -0.5"),
    (dict(K=2, beta=-0.1), "beta: expected a number >= 0.0, got -0.1"),
    (dict(K=2, adv_eps=-1.0), "adv_eps: expected a number >= 0.0, got -1.0"),
    (dict(K=2, ddof=-1), "ddof: expected an integer >= 0, got -1"),
    (dict(K=2, ddof=2), "ddof: expected an integer <= 1, got 2"),
    (dict(K=1, baseline="loo"), "baseline: 'loo' (leave-one-out) needs K >= 2 (at K = 1 the "
                                "rewards of a group have no others to average), got K = 1"),
])
def test_grpo_step_bad_settings_exact_message_before_any_grading(kw, message):
    theta, ref = _tables()
    pol = TabularPolicy(theta)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    grader = _CountingGrader()
    with pytest.raises(ValueError) as e:
        grpo_step(pol, TabularPolicy(ref), _mdp(), grader, rng, **kw)
    assert str(e.value) == message
    assert grader.calls == 0                                  # checked before the rollout
    assert rng.bit_generator.state == state and np.array_equal(pol.theta, theta)


def test_grpo_step_bad_objects_exact_messages():
    theta, ref = _tables()
    pol, rp, rng = TabularPolicy(theta), TabularPolicy(ref), np.random.default_rng(0)
    cases = [
        ((pol, rp, _mdp(), "grader"), "grader: expected a callable grader(prompt, response), "
                                      "got str 'grader'"),
        ((pol, rp, _mdp(), lambda x: 1.0), "grader: expected a callable grader(prompt, response) "
                                           "taking 2 positional arguments, got one with "
                                           "signature (x)"),
        ((theta, rp, _mdp(), _grader), "policy: expected a TabularPolicy, got ndarray"),
        ((pol, 3, _mdp(), _grader), "ref_policy: expected a TabularPolicy, got int"),
        ((pol, rp, 3, _grader), "mdp: expected a TokenMDP, got int"),
    ]
    for args, message in cases:
        with pytest.raises(TypeError) as e:
            grpo_step(*args, rng, 2)
        assert str(e.value) == message
    with pytest.raises(TypeError) as e:
        grpo_step(pol, rp, _mdp(), _grader, 0, 2)
    assert str(e.value) == ("rng: expected a numpy.random.Generator (np.random.default_rng(seed)), "
                            "got int 0")


def test_grpo_step_overflowing_update_exact_message_and_silent():
    # baseline "none" with a reward of 1e6: |dtheta| >> 1, and lr = 1e308 overflows the step
    theta, ref = _tables()
    pol, rng = TabularPolicy(theta), np.random.default_rng(0)
    state = rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            grpo_step(pol, TabularPolicy(ref), _mdp(), lambda x, y: 1e6, rng, K=2,
                      baseline="none", lr=1e308)
    assert str(e.value) == ("lr: expected a value for which theta - lr * dtheta is finite in "
                            "float64, got one that makes it inf (overflow)")
    assert np.array_equal(pol.theta, theta) and rng.bit_generator.state == state


# ---------------------------------------------------------------- grpo_loss

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
    loss2, d2 = grpo_loss(*args, eps=0.2, eps_high=None, beta=0.04, kl_estimator="k3",
                          agg="token_mean", max_len=None)
    assert loss == loss2 and np.array_equal(d, d2)
    loss3, d3 = grpo_loss(*args, beta=0.5)
    assert loss3 != loss and not np.array_equal(d3, d)


def test_grpo_loss_max_len_reaches_both_terms():
    # B = 1, T = 2, logp = logp_old (rho = 1), A = 2, k1 = logp - logp_ref = 0.5 per token;
    # agg "constant" with max_len 5: w = 1 / (1 * 5) = 0.2 per token.
    # loss = -(0.2 * 2 + 0.2 * 2) + 1.0 * (0.2 * 0.5 + 0.2 * 0.5) = -0.8 + 0.2 = -0.6
    # dloss/dlogp = -0.2 * 2 + 1.0 * 0.2 * 1 = -0.2 per token
    logp, logp_ref, mask = np.array([[-1.0, -2.0]]), np.array([[-1.5, -2.5]]), np.ones((1, 2))
    loss, d = grpo_loss(logp, logp.copy(), logp_ref, [2.0], mask, beta=1.0, kl_estimator="k1",
                        agg="constant", max_len=5)
    np.testing.assert_allclose(loss, -0.6, rtol=1e-15)
    np.testing.assert_allclose(d, [[-0.2, -0.2]], rtol=1e-15)


# ---------------------------------------------------------------- clip: argument messages

def _msg(fn, *args):
    with pytest.raises(ValueError) as e:
        fn(*args)
    return str(e.value)


@pytest.mark.parametrize("fn", [clipped_surrogate, clip_fraction])
def test_clip_argument_messages(fn):
    z, m = np.zeros((2, 3)), np.ones((2, 3))
    assert _msg(fn, z, np.zeros(3), [1.0, 1.0], m) == \
        "logp_old: expected 2 dimensions, got shape (3,)"
    assert _msg(fn, z, np.zeros((1, 3)), [1.0, 1.0], m) == \
        "logp_old: expected the shape of logp (2, 3), got (1, 3)"
    assert _msg(fn, z, z, [1.0, 1.0], np.ones((2, 2))) == \
        "mask: expected the shape of logp (2, 3), got (2, 2)"
    assert _msg(fn, z, z, [1.0, 1.0], np.full((2, 3), 0.5)).startswith(
        "mask: expected only 0 and 1, got value ")           # the value's repr follows
    assert _msg(fn, z, z, np.ones(5), m) == "adv: expected shape (2,) or (2, 3), got (5,)"


# ---------------------------------------------------------------- clip: the non-finite surrogate

def test_overflow_message_names_the_offending_token():
    # only [1, 2] overflows: logp - logp_old = -0.5 - (-800.5) = 800 > 709.78, A = -1:
    # rho A = -inf. The first real token [0, 0] is finite.
    logp = np.array([[-1.0, -1.0, -1.0], [-1.0, -1.0, -0.5]])
    logp_old = np.array([[-1.0, -1.0, -1.0], [-1.0, -1.0, -800.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            clipped_surrogate(logp, logp_old, [1.0, -1.0], np.ones((2, 3)))
    assert str(e.value) == (
        "logp: expected logp - logp_old small enough that the surrogate is finite; at [1, 2] "
        "logp - logp_old = 800.0 with A = -1.0 gives rho A = -inf (rho = exp(logp - logp_old) "
        "overflows float64 beyond ~709.78; with A < 0 the unclipped branch -inf is the minimum)")


def test_overflowing_sum_with_finite_tokens_is_rejected_naming_the_advantages():
    # every token finite (rho = 1, A = 1.7e308, w = 1 under seq_sum, w f = 1.7e308), but the
    # sum of four of them overflows: the loss would be -inf while every token and the gradient
    # are finite. No token is to blame: the message names the advantages, and nothing warns.
    adv = np.full((2, 2), 1.7e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            clipped_surrogate(np.zeros((2, 2)), np.zeros((2, 2)), adv, np.ones((2, 2)),
                              agg="seq_sum")
    assert str(e.value) == (
        "adv: expected a value for which the weighted sum of the surrogate over tokens is finite "
        "in float64, got one that makes it inf (overflow)")


def test_huge_finite_log_probs_overflow_silently_into_the_token_message():
    # logp - logp_old = 1.7e308 - (-1.7e308) overflows to +inf: rho = inf, with A = -1 the
    # unclipped branch is -inf: the per-token message, and no RuntimeWarning on the way
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as e:
            clipped_surrogate([[1.7e308]], [[-1.7e308]], [-1.0], [[1.0]])
    assert str(e.value).startswith("logp: expected logp - logp_old small enough that the "
                                   "surrogate is finite; at [0, 0] logp - logp_old = inf with "
                                   "A = -1.0 gives rho A = -inf")


# ---------------------------------------------------------------- clip_fraction edge cases

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


def test_grpo_step_keeps_minus_inf_logits_and_is_silent():
    # a -inf logit is a zero-probability token: never sampled, its gradient entry is 0, so the
    # update leaves it at -inf (no inf - inf) and every finite entry finite
    theta, ref = _tables()
    theta[::2, 2] = -np.inf
    pol = TabularPolicy(theta)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grpo_step(pol, TabularPolicy(ref), _mdp(), _grader, np.random.default_rng(3), K=4, mu=3,
                  lr=2.0, beta=0.5)
    assert np.array_equal(np.isneginf(pol.theta), np.isneginf(theta))
    assert np.isfinite(pol.theta[np.isfinite(theta)]).all()
    assert not np.array_equal(pol.theta, theta)

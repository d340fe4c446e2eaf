"""IPO (summed, averaged), SimPO, ORPO, KTO and online DPO: finite differences, TRL's definitions,
edge cases, the public defaults, bad input, overflows named after their driver, the grader behind
a judge, the pairs a judge is asked about, and a failing online step that changes nothing."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.core.validate import MAX_DRAWS
from minirl_lm.direct.dpo import dpo_loss
from minirl_lm.direct.preferences import (
    bradley_terry_judge,
    ipo_loss,
    kto_loss,
    online_dpo_step,
    orpo_loss,
    simpo_loss,
)
from minirl_lm.values.optimum import tilted_optimum
from quiet import raises, silent

FD_TOL = 1e-8  # central differences, h = 1e-6, float64: error ~ h^2 f''' + 1e-16 |f| / h ~ 1e-10


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _batch(rng, P=5, T=4, empty=False):
    """Token log-probs (P, T) <= 0 and right-padded masks of lengths 1..T (0 if empty)."""
    lengths = rng.integers(1, T + 1, size=P)
    if empty:
        lengths[1] = 0
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp = -rng.random((P, T)) * 2 - 0.05  # (P, T) in (-2.05, -0.05)
    return logp * mask + (1 - mask) * 7.0, mask  # padding holds junk: ignored


def _pair_data(seed, empty=False):
    rng = np.random.default_rng(seed)
    lc, mc = _batch(rng, empty=empty)
    lr, mr = _batch(rng, T=3)
    ref_c, ref_r = -rng.random(5) * 4, -rng.random(5) * 4
    return lc, mc, lr, mr, ref_c, ref_r


# ---------------------------------------------------------------- finite differences


def _check_fd(f, lc, lr, mc, mr):
    loss, (dc, dr) = f(lc, lr)
    fc = fd_grad(lambda x: f(x, lr)[0], lc)
    fr = fd_grad(lambda x: f(lc, x)[0], lr)
    tol = FD_TOL * max(1.0, abs(loss))
    assert np.abs(dc - fc * mc).max() < tol and np.abs(dr - fr * mr).max() < tol
    assert np.abs(fc * (1 - mc)).max() < tol  # padding: no effect on the loss
    assert (dc[mc == 0] == 0).all() and (dr[mr == 0] == 0).all()


@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_ipo_gradient_matches_finite_differences(average, weighted):
    lc, mc, lr, mr, ref_c, ref_r = _pair_data(0, empty=average)
    w = np.random.default_rng(9).random(5) if weighted else None
    _check_fd(lambda a, b: ipo_loss(a, mc, b, mr, ref_c, ref_r, 0.4, average=average, weights=w), lc, lr, mc, mr)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 3.0])
def test_simpo_gradient_matches_finite_differences(gamma):
    lc, mc, lr, mr, _, _ = _pair_data(1, empty=True)
    _check_fd(lambda a, b: simpo_loss(a, mc, b, mr, 2.0, gamma=gamma), lc, lr, mc, mr)


@pytest.mark.parametrize("lam", [0.0, 0.1, 2.0])
def test_orpo_gradient_matches_finite_differences(lam):
    lc, mc, lr, mr, _, _ = _pair_data(2)
    lc[0, :] = np.where(mc[0] > 0, -1e-3, lc[0])  # near probability 1: steep odds
    w = np.random.default_rng(3).random(5)
    _check_fd(lambda a, b: orpo_loss(a, mc, b, mr, lam=lam, weights=w), lc, lr, mc, mr)


@pytest.mark.parametrize("z0", [0.0, 0.7])
def test_kto_gradient_matches_finite_differences(z0):
    rng = np.random.default_rng(4)
    logp, mask = _batch(rng, P=6, empty=True)
    ref = -rng.random(6) * 3
    ref[1] = 0.0  # the empty response's reference
    des = np.array([True, False, True, False, False, True])
    f = lambda x: kto_loss(x, mask, ref, des, 0.8, z0=z0, lambda_d=1.3, lambda_u=0.6)
    loss, d = f(logp)
    assert np.abs(d - fd_grad(lambda x: f(x)[0], logp) * mask).max() < FD_TOL * max(1, loss)


# ---------------------------------------------------------------- TRL's definitions, re-derived
# trl/trainer/dpo_trainer.py, trl/experimental/cpo/cpo_trainer.py,
# trl/experimental/orpo/orpo_trainer.py, trl/trainer/kto_trainer.py
# @ f2cd57710a (2026-07-24)


def _sums(logp, mask):
    return (logp * mask).sum(1), mask.sum(1)


def test_ipo_average_is_trls_ipo_loss_type():
    lc, mc, lr, mr, ref_c, ref_r = _pair_data(5, empty=True)
    beta = 0.3
    (s_c, n_c), (s_r, n_r) = _sums(lc, mc), _sums(lr, mr)
    # dpo_trainer.py, loss_type "ipo": scores = logps - ref_logps (summed), divided by the
    # completion length clamped at 1, per-sequence (delta - 1/(2 beta))^2, then the mean
    delta = (s_c - ref_c) / np.maximum(n_c, 1) - (s_r - ref_r) / np.maximum(n_r, 1)
    trl = np.mean((delta - 1 / (2 * beta)) ** 2)
    loss, _ = ipo_loss(lc, mc, lr, mr, ref_c, ref_r, beta, average=True)
    assert loss == pytest.approx(trl, rel=1e-13)


def test_ipo_sum_is_dpo_py_ipo_and_trls_online_ipo():
    lc, mc, lr, mr, ref_c, ref_r = _pair_data(6)
    beta = 0.3
    (s_c, _), (s_r, _) = _sums(lc, mc), _sums(lr, mr)
    loss, (dc, dr) = ipo_loss(lc, mc, lr, mr, ref_c, ref_r, beta)
    l2, (sc, sr) = dpo_loss(s_c, s_r, ref_c, ref_r, beta, variant="ipo")
    assert loss == l2  # the same function, bit for bit
    np.testing.assert_array_equal(dc, sc[:, None] * mc)
    np.testing.assert_array_equal(dr, sr[:, None] * mr)
    # online_dpo_trainer.py "ipo": summed logprobs, (logits - 1/(2 beta))^2, mean
    trl = np.mean(((s_c - s_r) - (ref_c - ref_r) - 1 / (2 * beta)) ** 2)
    assert loss == pytest.approx(trl, rel=1e-13)


def test_simpo_is_trls_cpo_simpo():
    lc, mc, lr, mr, _, _ = _pair_data(7)
    beta, gamma = 2.0, 0.8
    (s_c, n_c), (s_r, n_r) = _sums(lc, mc), _sums(lr, mr)
    # cpo_trainer.py: average_log_prob for "simpo"; logits = (a_c - a_r) - gamma / beta;
    # losses = -logsigmoid(beta * logits) (label_smoothing 0); loss = mean (cpo_alpha = 0)
    logits = (s_c / n_c - s_r / n_r) - gamma / beta
    trl = np.mean(-np.log(_sig(beta * logits)))
    loss, _ = simpo_loss(lc, mc, lr, mr, beta, gamma=gamma)
    assert loss == pytest.approx(trl, rel=1e-13)


def _trl_orpo(lc, mc, lr, mr, beta):
    (s_c, n_c), (s_r, n_r) = _sums(lc, mc), _sums(lr, mr)
    a_c, a_r = s_c / n_c, s_r / n_r  # average_log_prob=True
    log1mexp = lambda x: np.log(1 - np.exp(x))
    log_odds = (a_c - a_r) - (log1mexp(a_c) - log1mexp(a_r))
    nll = -(lc * mc).sum() / mc.sum()  # CrossEntropyLoss over chosen tokens
    return nll - np.mean(beta * np.log(_sig(log_odds)))  # policy_nll_loss - losses.mean()


def test_orpo_is_trls_orpo_when_chosen_lengths_are_equal():
    lc, mc, lr, mr, _, _ = _pair_data(8)
    lc, mc = np.where(mc > 0, lc, -0.3), np.ones_like(mc)  # equal chosen lengths
    loss, _ = orpo_loss(lc, mc, lr, mr, lam=0.25)
    assert loss == pytest.approx(_trl_orpo(lc, mc, lr, mr, 0.25), rel=1e-13)


def test_orpo_nll_is_per_pair_not_per_token_when_lengths_differ():
    """The documented deviation: TRL's NLL is a token mean over the batch, ours a mean of means."""
    lc, mc, lr, mr, _, _ = _pair_data(8)
    assert len(set(mc.sum(1))) > 1
    loss, _ = orpo_loss(lc, mc, lr, mr, lam=0.25)
    s_c, n_c = _sums(lc, mc)
    shift = -np.mean(s_c / n_c) - (-(s_c.sum() / n_c.sum()))  # ours minus TRL's NLL
    assert loss == pytest.approx(_trl_orpo(lc, mc, lr, mr, 0.25) + shift, rel=1e-13)
    assert abs(shift) > 1e-3


def test_kto_is_trls_kto():
    rng = np.random.default_rng(10)
    logp, mask = _batch(rng, P=7)
    ref = -rng.random(7) * 3
    des = np.array([True, True, False, True, False, False, False])
    beta, kl, lam_d, lam_u = 0.5, 0.3, 1.5, 0.7
    s, _ = _sums(logp, mask)
    # kto_trainer.py, loss_type "kto": chosen 1 - sigmoid(beta (logratio - kl)), rejected
    # 1 - sigmoid(beta (kl - logratio)), cat(desirable_weight * ., undesirable_weight * .).nanmean()
    h = s - ref
    losses = np.concatenate([lam_d * (1 - _sig(beta * (h[des] - kl))), lam_u * (1 - _sig(beta * (kl - h[~des])))])
    loss, _ = kto_loss(logp, mask, ref, des, beta, z0=kl, lambda_d=lam_d, lambda_u=lam_u)
    assert loss == pytest.approx(losses.mean(), rel=1e-13)


# ---------------------------------------------------------------- edge cases


def test_empty_responses_average_to_zero_and_get_no_gradient():
    lc, mc, lr, mr, ref_c, ref_r = _pair_data(11, empty=True)  # pair 1: empty chosen
    ref_c[1] = 0.0
    loss, (dc, _) = ipo_loss(lc, mc, lr, mr, ref_c, ref_r, 0.5, average=True)
    assert (dc[1] == 0).all() and np.isfinite(loss)
    _, (dc, _) = simpo_loss(lc, mc, lr, mr, 1.0)
    assert (dc[1] == 0).all()
    with pytest.raises(ValueError, match="logp_c"):
        orpo_loss(lc, mc, lr, mr)


def test_orpo_rejects_probability_one():
    lc, mc, lr, mr, _, _ = _pair_data(12)
    lc[2] = 0.0
    with pytest.raises(ValueError, match="logp_c: expected a mean log-prob < 0"):
        orpo_loss(lc, mc, lr, mr)


def test_ties_move_nothing_through_the_margin():
    lc, mc, _, _, ref_c, _ = _pair_data(13)
    _, (dc, dr) = simpo_loss(lc, mc, lc, mc, 1.0, gamma=0.5)
    np.testing.assert_array_equal(dc, -dr)  # they cancel in the backward
    _, (dc, dr) = ipo_loss(lc, mc, lc, mc, ref_c, ref_c, 0.5, average=True)
    np.testing.assert_array_equal(dc, -dr)
    _, (dc, dr) = orpo_loss(lc, mc, lc, mc, lam=0.5)
    np.testing.assert_allclose(dc + dr, -(mc / mc.sum(1, keepdims=True)) / 5, rtol=1e-14)  # NLL


@pytest.mark.parametrize("scale", [1e3, 1e8, 1e300])
def test_saturating_losses_stay_finite(scale):
    mc = np.ones((2, 1))
    lc, lr = np.array([[-1.0], [-scale]]), np.array([[-scale], [-1.0]])
    loss, (dc, dr) = simpo_loss(lc, mc, lr, mc, 1.0, gamma=0.5)
    assert np.isfinite(loss) and np.isfinite(dc).all() and np.isfinite(dr).all()
    np.testing.assert_array_equal(dc[0], [0.0])  # saturated: sigma(-z) = 0
    loss, d = kto_loss(
        np.vstack([lc, lr]), np.ones((4, 1)), np.zeros(4), np.array([True, True, False, False]), 1.0
    )
    assert np.isfinite(loss) and np.isfinite(d).all()
    loss, (dc, _) = orpo_loss(lc, mc, lr, mc, lam=1.0)
    assert np.isfinite(loss) and np.isfinite(dc).all()


def test_ipo_overflow_is_a_value_error_not_inf():
    mc = np.ones((1, 1))
    with pytest.raises(ValueError, match="logp_c"):
        ipo_loss(np.array([[-1e200]]), mc, np.array([[-1.0]]), mc, [0.0], [0.0], 1.0)


# ---------------------------------------------------------------- bad input

Z = np.zeros((3, 2)) - 0.5
M = np.ones((3, 2))


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ipo_loss(Z, M, Z, M, np.zeros(3), np.zeros(3), 0.0), ValueError, "beta"),
        (lambda: ipo_loss(Z, M, Z, M, np.zeros(2), np.zeros(3), 1.0), ValueError, "seq_logp_ref_c"),
        (lambda: ipo_loss(Z, M, Z, M, np.zeros(3), np.zeros(3), 1.0, average=1), TypeError, "average"),
        (lambda: ipo_loss(Z, M, Z[:2], M[:2], np.zeros(3), np.zeros(3), 1.0), ValueError, "logp_r"),
        (lambda: ipo_loss(Z, [[1, 0], [0, 3], [1, 1]], Z, M, np.zeros(3), np.zeros(3), 1.0), ValueError, "mask_c"),
        (lambda: simpo_loss(Z, M, Z, M, 1.0, gamma=-1.0), ValueError, "gamma"),
        (lambda: simpo_loss(Z, M, Z, np.ones((3, 3)), 1.0), ValueError, "mask_r"),
        (lambda: simpo_loss(Z + 1.0, M, Z, M, 1.0), ValueError, "logp_c: expected log-probs <= 0"),
        (lambda: simpo_loss([[np.nan, 0]] * 3, M, Z, M, 1.0), ValueError, "logp_c"),
        (
            lambda: simpo_loss(np.zeros((0, 2)), np.zeros((0, 2)), Z, M, 1.0),
            ValueError,
            "logp_c: expected a non-empty",
        ),
        (lambda: simpo_loss(Z, M, Z, M, 1.0, weights=[1, -1, 1]), ValueError, "weights"),
        (lambda: orpo_loss(Z, M, Z, M, lam=-0.1), ValueError, "lam"),
        (lambda: orpo_loss("x", M, Z, M), TypeError, "logp_c"),
        (lambda: kto_loss(Z, M, np.zeros(3), [1, 0, 1], 1.0), TypeError, "desirable"),
        (lambda: kto_loss(Z, M, np.zeros(3), np.ones(2, bool), 1.0), ValueError, "desirable: expected shape (3,)"),
        (lambda: kto_loss(Z, M, np.zeros(3), np.ones(3, bool), 1.0, z0=-0.1), ValueError, "z0"),
        (lambda: kto_loss(Z, M, np.zeros(3), np.ones(3, bool), 1.0, lambda_u=-1), ValueError, "lambda_u"),
        (lambda: kto_loss(Z, M, np.zeros(4), np.ones(3, bool), 1.0), ValueError, "seq_logp_ref"),
    ],
)
def test_bad_input_is_rejected_with_the_argument_named(call, exc, match):
    msg = raises(exc, call)
    assert msg.startswith(match if ":" in match else f"{match}: ")


# ---------------------------------------------------------------- online DPO


def _online_setup():
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3)
    rng = np.random.default_rng(0)
    policy = TabularPolicy(rng.normal(size=(mdp.S, mdp.V)))
    ref = TabularPolicy(np.zeros((mdp.S, mdp.V)))
    grader = lambda prompt, y: float(sum(t == 1 for t in y))
    return mdp, policy, ref, grader


def test_online_step_is_one_dpo_step_on_the_pairs_it_reports():
    mdp, policy, ref, grader = _online_setup()
    theta0 = policy.theta.copy()
    out = online_dpo_step(
        mdp, policy, ref, bradley_terry_judge(grader), 0.5, 0.7, np.random.default_rng(1), pairs_per_prompt=3
    )
    # rebuild the step from the reported pairs: the rollout replayed with the same generator
    ro = mdp.rollout(TabularPolicy(theta0), 2, np.random.default_rng(1), prompts=np.repeat(np.arange(2), 3))
    resp = ro.responses()
    index = {(int(n), y): i for i, (n, y) in enumerate(zip(ro.prompt, resp))}
    c = np.array([index[(int(n), y)] for n, y in zip(out["prompt"], out["chosen"])])
    r = np.array([index[(int(n), y)] for n, y in zip(out["prompt"], out["rejected"])])
    old = TabularPolicy(theta0)
    _, seq = old.logp(ro.states, ro.tokens, ro.mask)
    _, seq_ref = ref.logp(ro.states, ro.tokens, ro.mask)
    loss, (dc, dr) = dpo_loss(seq[c], seq[r], seq_ref[c], seq_ref[r], 0.5)
    dseq = np.zeros(12)
    np.add.at(dseq, c, dc)
    np.add.at(dseq, r, dr)
    expect = theta0 - 0.7 * old.backward(ro.states, ro.tokens, ro.mask, dseq[:, None] * ro.mask)
    assert out["loss"] == loss
    np.testing.assert_allclose(policy.theta, expect, rtol=0, atol=1e-14)


def test_online_step_is_deterministic_given_the_seed():
    mdp, policy, ref, grader = _online_setup()
    p2 = policy.copy()
    judge = bradley_terry_judge(grader)
    for p in (policy, p2):
        rng = np.random.default_rng(5)
        for _ in range(3):
            online_dpo_step(mdp, p, ref, judge, 1.0, 1.0, rng, 2)
    np.testing.assert_array_equal(policy.theta, p2.theta)


@pytest.mark.parametrize(
    "judge,exc,match",
    [
        (lambda x, a, b: 1.5, ValueError, "judge: expected a number >= 0 and <= 1, got 1.5"),
        (lambda x, a, b: "yes", TypeError, "judge: expected a real number, got str 'yes'"),
        (lambda x, a, b: float("nan"), ValueError, "judge: expected a finite number, got nan"),
        (lambda x, a, b: 1 / 0, ZeroDivisionError, None),
    ],
)
def test_a_failing_online_step_changes_no_state(judge, exc, match):
    mdp, policy, ref, _ = _online_setup()
    theta0 = policy.theta.copy()
    rng = np.random.default_rng(3)
    msg = raises(exc, lambda: online_dpo_step(mdp, policy, ref, judge, 1.0, 1.0, rng))
    assert match is None or msg == match
    np.testing.assert_array_equal(policy.theta, theta0)
    assert rng.random() == np.random.default_rng(3).random()  # the generator did not advance


def _online_args(seed, pairs_per_prompt, kwargs):
    """(the toy's policy, the keyword arguments of one online_dpo_step, `kwargs` replacing any)."""
    mdp, policy, ref, grader = _online_setup()
    args = dict(
        mdp=mdp,
        policy=policy,
        ref=ref,
        judge=bradley_terry_judge(grader),
        beta=1.0,
        lr=1.0,
        rng=np.random.default_rng(seed),
        pairs_per_prompt=pairs_per_prompt,
    )
    args.update(kwargs)
    return policy, args  # the toy's policy, whose theta a refused call must leave as it was


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"beta": 0.0}, ValueError, "beta"),
        ({"lr": -1.0}, ValueError, "lr"),
        ({"rng": 3}, TypeError, "rng"),
        ({"pairs_per_prompt": 0}, ValueError, "pairs_per_prompt"),
        ({"judge": None}, TypeError, "judge"),
        ({"ref": TabularPolicy(np.zeros((2, 3)))}, ValueError, "ref"),
        ({"mdp": object()}, TypeError, "mdp"),
        ({"lr": float("inf")}, ValueError, "lr"),
    ],
)
def test_bad_online_arguments_change_no_state(kwargs, exc, match):
    policy, args = _online_args(3, 4, kwargs)
    theta0 = policy.theta.copy()
    assert raises(exc, lambda: online_dpo_step(**args)).startswith(f"{match}: ")
    np.testing.assert_array_equal(policy.theta, theta0)
    if isinstance(args["rng"], np.random.Generator):
        assert args["rng"].random() == np.random.default_rng(3).random()


def test_bradley_terry_judge_and_boolean_judges():
    judge = bradley_terry_judge(lambda x, y: float(len(y)))
    assert judge("p", (1, 1, 0), (0,)) == pytest.approx(_sig(2.0), rel=1e-15)
    mdp, policy, ref, _ = _online_setup()
    out = online_dpo_step(mdp, policy, ref, lambda x, a, b: True, 1.0, 1.0, np.random.default_rng(0))
    # a deterministic judge: the first response of every pair is chosen
    assert len(out["chosen"]) == 2
    with pytest.raises(TypeError, match="grader"):
        bradley_terry_judge(3)


# ---------------------------------------------------------------- where the losses land


def _example():
    path = Path(__file__).resolve().parents[2] / "examples" / "preferences.py"
    spec = importlib.util.spec_from_file_location("preferences_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def landing():
    ex = _example()
    mdp, ref, grader = ex.make_task()
    pop = ex.Population(mdp, ref, grader)
    return ex, mdp, ref, grader, pop


def _per_prompt(pop, v):
    """(N, Y) table of a per-response vector (every prompt has the same number of responses)."""
    return v.reshape(pop.N, -1)


def test_population_weights_are_the_pair_distribution(landing):
    ex, mdp, ref, grader, pop = landing
    assert pop.w.sum() == pytest.approx(1.0, abs=1e-14)  # mu_0 x pi_ref x pi_ref, both labels
    assert (pop.R.prompt[pop.c] == pop.R.prompt[pop.r]).all()


@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_dpo_lands_on_the_tilted_optimum(landing, beta):
    ex, mdp, ref, grader, pop = landing
    args = ex.parse_args(["--beta", str(beta)])
    policy, gmax, _ = ex.land(pop, "dpo", ref.theta, args)
    pi_ref = _per_prompt(pop, pop.probs(ref))
    pi_star = tilted_optimum(pi_ref, _per_prompt(pop, pop.reward), beta)  # closed form
    tv = 0.5 * np.abs(_per_prompt(pop, pop.probs(policy)) - pi_star).sum(1).mean()
    assert gmax < 1e-9 and tv < 1e-8


def test_ipo_sum_lands_on_its_closed_form(landing):
    """IPO with summed log-ratios regresses them onto (2 p - 1) / (2 beta): it lands on
    pi_ref exp(Psi / beta) / Z with Psi(a) = E_{b ~ pi_ref} P(a > b), not on pi*."""
    ex, mdp, ref, grader, pop = landing
    args = ex.parse_args([])
    policy, gmax, _ = ex.land(pop, "ipo_sum", ref.theta, args)
    pi_ref, r = _per_prompt(pop, pop.probs(ref)), _per_prompt(pop, pop.reward)
    psi = (_sig(r[:, :, None] - r[:, None, :]) * pi_ref[:, None, :]).sum(2)  # (N, Y)
    target = tilted_optimum(pi_ref, psi, args.beta)
    tv = 0.5 * np.abs(_per_prompt(pop, pop.probs(policy)) - target).sum(1).mean()
    assert gmax < 1e-9 and tv < 1e-8


def test_dpo_population_gradient_vanishes_at_pi_star_when_pairs_come_from_pi_star(landing):
    """Online DPO samples from the current policy: pi* is its fixed point as well."""
    ex, mdp, ref, grader, pop = landing
    pi_ref, r = _per_prompt(pop, pop.probs(ref)), _per_prompt(pop, pop.reward)
    star = TabularPolicy(np.log(ex.tilted_optimum_tree(mdp, ref.probs(), grader, 1.0)))
    np.testing.assert_allclose(_per_prompt(pop, pop.probs(star)), tilted_optimum(pi_ref, r, 1.0), rtol=1e-12)
    pop_star = ex.Population(mdp, star, grader)  # pairs drawn from pi* ...
    pop_star.seq_ref = pop.seq_ref  # ... the reference is still pi_ref
    _, g = pop_star.loss("dpo", star, 1.0, 0.5, 0.1, 0.0, 0.0)
    assert np.abs(g).max() < 1e-12
    _, g = pop.loss("dpo", ref, 1.0, 0.5, 0.1, 0.0, 0.0)  # and not elsewhere
    assert np.abs(g).max() > 1e-3


def test_ipo_avg_lands_on_its_closed_form_with_a_length_times_constant(landing):
    """Averaged IPO regresses per-token log-ratios q = rho / |y| onto the same targets, so
    q_a = Psi(a) / beta + C; the normalizer C is free in the loss (differences only) and is set
    by sum_y pi_ref(y) exp(|y| q_y) = 1, so it enters each response's log-ratio as |y| C."""
    ex, mdp, ref, grader, pop = landing
    args = ex.parse_args([])
    policy, gmax, _ = ex.land(pop, "ipo_avg", ref.theta, args)
    pi_ref, r = _per_prompt(pop, pop.probs(ref)), _per_prompt(pop, pop.reward)
    n = _per_prompt(pop, pop.R.lengths.astype(float))
    psi = (_sig(r[:, :, None] - r[:, None, :]) * pi_ref[:, None, :]).sum(2) - 0.5  # (N, Y)
    target = np.empty_like(pi_ref)
    for x in range(pop.N):
        lo, hi = -50.0, 50.0  # mass is increasing in C: bisect
        for _ in range(200):
            C = 0.5 * (lo + hi)
            mass = (pi_ref[x] * np.exp(n[x] * (psi[x] / args.beta + C))).sum()
            lo, hi = (C, hi) if mass < 1 else (lo, C)
        target[x] = pi_ref[x] * np.exp(n[x] * (psi[x] / args.beta + C))
    tv = 0.5 * np.abs(_per_prompt(pop, pop.probs(policy)) - target).sum(1).mean()
    assert gmax < 1e-9 and tv < 1e-8


# ---------------------------------------------------------------- an overflow names the function

M1, M2 = np.ones((1, 1)), np.ones((2, 1))


def overflows(fname, call, kind="inf"):
    """The message of the one overflow error of `call()`: it names the function `fname`, the
    kind of the non-finite value and the ranges of the inputs (the engine guesses no driver)."""
    msg = raises(ValueError, call)
    assert msg.startswith(f"{fname}: expected a finite ") and f", got {kind} (beyond float64) from " in msg, msg
    return msg


DRIVER = [
    # z = (-2 + 1) - 0.5 per pair, l = softplus(1.5) = 1.7: w l = 2.9e308
    (
        "simpo weights",
        lambda: simpo_loss([[-2.0]] * 2, M2, [[-1.0]] * 2, M2, 1.0, weights=[1.7e308, 1.7e308]),
        "simpo_loss",
    ),
    # z = 1e308 (-3 + 0.5) - 0.5 = -inf
    ("simpo beta", lambda: simpo_loss([[-3.0]], M1, [[-0.5]], M1, 1e308), "simpo_loss"),
    # IPO's target 1/(2 beta) = inf
    ("ipo beta", lambda: ipo_loss([[-1.0]], M1, [[-2.0]], M1, [0.0], [0.0], 5e-324), "ipo_loss"),
    ("ipo margin", lambda: ipo_loss([[-1e200]], M1, [[-1.0]], M1, [0.0], [0.0], 1.0), "ipo_loss"),
    ("ipo ref", lambda: ipo_loss([[-1.0]], M1, [[-1.0]], M1, [1e200], [0.0], 1.0), "ipo_loss"),
    # chosen worse than rejected: lam softplus(-z) = 1.7e308 * 1.2 = inf
    ("orpo lam", lambda: orpo_loss([[-2.0]], M1, [[-1.0]], M1, lam=1.7e308), "orpo_loss"),
    ("orpo weights", lambda: orpo_loss([[-2.0]], M1, [[-1.0]], M1, weights=[1.7e308]), "orpo_loss"),
    # w lam sigma(-u) = 1.7e308 * 2 * sigma(0) = 1.7e308
    (
        "kto weights",
        lambda: kto_loss(
            [[-1.0], [-2.0]],
            M2,
            [-1.0, 0.0],
            np.array([True, False]),
            1.0,
            lambda_d=2.0,
            weights=[1.7e308, 1.7e308],
        ),
        "kto_loss",
    ),
]


@pytest.mark.parametrize("label, call, fname", DRIVER, ids=[d[0] for d in DRIVER])
def test_an_overflow_names_the_function(label, call, fname):
    overflows(fname, call)


def test_an_overflow_sample_message_of_each_template():
    assert raises(ValueError, DRIVER[0][1]) == (
        "simpo_loss: expected a finite loss, got inf (beyond float64) from logp_c in [-2, -2], "
        "logp_r in [-1, -1], beta = 1, gamma = 0.5, weights in [1.7e+308, 1.7e+308]"
    )
    # the sum of two tokens of -1e308 is -inf: the loss is inf, the log-probs' range says why
    msg = overflows("simpo_loss", lambda: simpo_loss([[-1e308, -1e308]], np.ones((1, 2)), [[-0.5]], M1, 1.0))
    assert "logp_c in [-1e+308, -1e+308]" in msg


@pytest.mark.parametrize("side", ["c", "r"])
def test_orpo_odds_near_probability_one_overflow_the_gradient_of_that_side(side):
    # a = -5e-324: 1 / expm1(a) = -2e323, beyond float64, in the gradient of that side
    tiny, ok = [[-5e-324]], [[-1.0]]
    lc, lr = (tiny, ok) if side == "c" else (ok, tiny)
    msg = overflows("orpo_loss", lambda: orpo_loss(lc, M1, lr, M1, lam=1.0))
    assert f"expected a finite dloss_dlogp_{side}," in msg and f"logp_{side} in [-4.94066e-324, " in msg


def test_kto_at_a_huge_beta_is_silent_and_finite():
    # u = +-1.7e308 (h - z0) saturates sigma: loss and gradient finite, no warning
    loss, d = silent(lambda: kto_loss([[-1.0], [-2.0]], M2, [-1.0, 0.0], np.array([True, False]), 1.7e308))
    assert np.isfinite(loss) and np.isfinite(d).all()


# ---------------------------------------------------------------- the grader behind a judge


@pytest.mark.parametrize(
    "reward, exc, fragment",
    [
        ("1.0", TypeError, "got str '1.0'"),
        (None, TypeError, "got NoneType None"),
        (np.array([1.0]), TypeError, "got array of shape (1,) and dtype float64"),
        (True, TypeError, "got bool True"),
        (float("nan"), ValueError, "got nan"),
        (float("inf"), ValueError, "got inf"),
    ],
)
def test_bradley_terry_judge_rejects_a_grader_reward_that_is_not_a_finite_real(reward, exc, fragment):
    judge = bradley_terry_judge(lambda x, y: reward)
    msg = raises(exc, lambda: judge("p", (1,), (2, 0)))
    assert msg.startswith("grader: expected a ") and fragment in msg


def test_bradley_terry_judge_message_sample_and_a_margin_beyond_float64():
    judge = bradley_terry_judge(lambda x, y: float("nan"))
    assert raises(ValueError, lambda: judge("p", (1,), (2, 0))) == (
        "grader: expected a finite number, got nan (the reward of response (1,))"
    )
    huge = bradley_terry_judge(lambda x, y: 1e308 if len(y) == 1 else -1e308)
    assert silent(lambda: huge("p", (1,), (2, 0))) == 1.0  # sigma(2e308 = inf)
    assert silent(lambda: huge("p", (2, 0), (1,))) == 0.0


# ---------------------------------------------------------------- online DPO: the judge's pairs


def test_online_step_asks_the_judge_about_each_pair_in_order():
    """The judge gets (the prompt's text, row 2i, row 2i+1) of the rollout for pair i: replay
    the rollout with the same seed and compare every call; a judge saying 1.0 picks y_a."""
    mdp, policy, ref, _ = _online_setup()
    theta0 = policy.theta.copy()
    calls = []

    def judge(prompt, y_a, y_b):
        calls.append((prompt, y_a, y_b))
        return 1.0

    out = online_dpo_step(mdp, policy, ref, judge, 0.5, 0.7, np.random.default_rng(1), pairs_per_prompt=3)
    prompts = np.repeat(np.arange(2), 3)
    resp = mdp.rollout(TabularPolicy(theta0), 2, np.random.default_rng(1), prompts=prompts).responses()
    want = [(mdp.prompts[n], resp[2 * i], resp[2 * i + 1]) for i, n in enumerate(prompts)]
    assert calls == want
    assert any(a != b for _, a, b in want)  # a swap would be seen
    assert out["chosen"] == [a for _, a, _ in want] and out["rejected"] == [b for _, _, b in want]
    np.testing.assert_array_equal(out["prompt"], prompts)


def test_online_step_a_judge_saying_zero_picks_y_b():
    mdp, policy, ref, _ = _online_setup()
    calls = []
    out = online_dpo_step(
        mdp, policy, ref, lambda x, a, b: calls.append((a, b)) or 0.0, 1.0, 1.0, np.random.default_rng(2)
    )
    assert out["chosen"] == [b for _, b in calls] and out["rejected"] == [a for a, _ in calls]


@pytest.mark.parametrize(
    "kwargs, arg, fragment",
    [
        ({"pairs_per_prompt": 2**63}, "pairs_per_prompt", "expected an integer <= "),
        ({"beta": 1e308, "lr": 1e10}, "online_dpo_step", "beta = 1e+308, lr = 1e+10"),
    ],
)
def test_online_step_huge_sizes_and_coefficients_name_themselves_and_change_nothing(kwargs, arg, fragment):
    policy, args = _online_args(1, 1, kwargs)
    theta0 = policy.theta.copy()
    msg = raises(ValueError, lambda: online_dpo_step(**args))
    assert msg.startswith(f"{arg}: ") and fragment in msg
    np.testing.assert_array_equal(policy.theta, theta0)
    assert args["rng"].random() == np.random.default_rng(1).random()


def test_kto_ragged_desirable_is_a_type_error_naming_it():
    msg = raises(TypeError, lambda: kto_loss(Z, M, np.zeros(3), [[True], [True, False], [True]], 1.0))
    assert msg == "desirable: expected a bool array, got list"


# ---------------------------------------------------------------- the public defaults


def test_defaults_gamma_lam_z0_lambdas_average_and_weights():
    lc, mc, lr, mr, ref_c, ref_r = _pair_data(14)
    same = lambda a, b: a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1], b[1]))
    mean = np.full(5, 0.2)
    assert same(simpo_loss(lc, mc, lr, mr, 1.5), simpo_loss(lc, mc, lr, mr, 1.5, gamma=0.5, weights=mean))
    assert not same(simpo_loss(lc, mc, lr, mr, 1.5), simpo_loss(lc, mc, lr, mr, 1.5, gamma=0.0))
    assert same(orpo_loss(lc, mc, lr, mr), orpo_loss(lc, mc, lr, mr, lam=0.1, weights=mean))
    assert not same(orpo_loss(lc, mc, lr, mr), orpo_loss(lc, mc, lr, mr, lam=0.2))
    assert same(
        ipo_loss(lc, mc, lr, mr, ref_c, ref_r, 0.5),
        ipo_loss(lc, mc, lr, mr, ref_c, ref_r, 0.5, average=False, weights=mean),
    )
    assert not same(
        ipo_loss(lc, mc, lr, mr, ref_c, ref_r, 0.5), ipo_loss(lc, mc, lr, mr, ref_c, ref_r, 0.5, average=True)
    )
    des = np.array([True, False, True, False, True])
    k = kto_loss(lc, mc, ref_c, des, 0.8)
    kk = kto_loss(lc, mc, ref_c, des, 0.8, z0=0.0, lambda_d=1.0, lambda_u=1.0, weights=mean)
    assert k[0] == kk[0] and np.array_equal(k[1], kk[1])
    for other in ({"z0": 0.3}, {"lambda_d": 2.0}, {"lambda_u": 2.0}):
        assert kto_loss(lc, mc, ref_c, des, 0.8, **other)[0] != k[0]


def test_online_step_defaults_to_one_pair_per_prompt():
    mdp, policy, ref, grader = _online_setup()
    p2 = policy.copy()
    judge = bradley_terry_judge(grader)
    out = online_dpo_step(mdp, policy, ref, judge, 0.5, 0.5, np.random.default_rng(4))
    again = online_dpo_step(mdp, p2, ref, judge, 0.5, 0.5, np.random.default_rng(4), 1)
    np.testing.assert_array_equal(out["prompt"], [0, 1])
    assert out["chosen"] == again["chosen"] and out["loss"] == again["loss"]
    np.testing.assert_array_equal(policy.theta, p2.theta)


# ---------------------------------------------------------------- overflow: every stage and driver

NEG = [[-1e308, -1e308]]  # a sum beyond float64: -inf
M12 = np.ones((1, 2))


def test_ipo_margin_of_two_infinite_sums_is_a_silent_nan():
    # s_c = s_r = -inf: h = -inf - -inf = NaN
    overflows("ipo_loss", lambda: ipo_loss(NEG, M12, NEG, M12, [0.0], [0.0], 1.0), "NaN")


@pytest.mark.parametrize(
    "lc, lr, ref_c, ref_r",
    [
        ([[-1e308]], [[-1.0]], [1e308], [0.0]),  # s_c - ref_c = -2e308: overflow
        ([[-1.0]], NEG, [0.0], [0.0]),  # s_r = -inf: h = +inf
        ([[-1.0]], [[-1.0]], [0.0], [1e200]),  # h = 1e200, e^2 = inf
    ],
)
def test_ipo_overflow_of_the_margin_names_the_function(lc, lr, ref_c, ref_r):
    overflows(
        "ipo_loss", lambda: ipo_loss(lc, np.ones(np.shape(lc)), lr, np.ones(np.shape(lr)), ref_c, ref_r, 1.0)
    )


@pytest.mark.parametrize("average", [False, True])
def test_ipo_gradients_are_float64_arrays(average):
    lc, mc, lr, mr, ref_c, ref_r = _pair_data(15)
    _, (dc, dr) = ipo_loss(lc, mc, lr, mr, ref_c, ref_r, 0.5, average=average)
    assert dc.dtype == dr.dtype == np.float64 and dc.shape == lc.shape and dr.shape == lr.shape


def test_simpo_margin_of_two_infinite_sums_is_a_silent_error():
    overflows("simpo_loss", lambda: simpo_loss(NEG, M12, NEG, M12, 1.0), "NaN")


@pytest.mark.parametrize(
    "lc, beta, gamma",
    [
        ([[-1e308]], 1.0, 1.7e308),  # a_c - a_r = -1e308 + 0.5; z = 1 (-1e308) - 1.7e308 = -inf
        ([[-1e308]], 2.0, 0.5),  # z = 2 (-1e308) - 0.5 = -inf
    ],
)
def test_simpo_overflow_of_z_names_the_function_and_the_coefficients(lc, beta, gamma):
    msg = overflows("simpo_loss", lambda: simpo_loss(lc, M1, [[-0.5]], M1, beta, gamma=gamma))
    assert f"beta = {beta:g}, gamma = {gamma:g}" in msg


def test_orpo_overflow_of_the_log_odds_ratio():
    # s_c = -inf: z = -inf, lam softplus(inf) = inf
    overflows("orpo_loss", lambda: orpo_loss(NEG, M12, [[-1.0]], M1))
    # both -inf: z = NaN
    overflows("orpo_loss", lambda: orpo_loss(NEG, M12, NEG, M12, lam=2.0), "NaN")


@pytest.mark.parametrize(
    "kwargs, desirable",
    [
        # u = 0 (h = z0 = 0): |dl/dh| = w lam sigma(0)^2 beta = 0.5 * 1.7e308 * 0.25 * 16 = inf
        ({"lambda_d": 1.7e308, "beta": 16.0}, [True, True]),
        ({"lambda_u": 1.7e308, "beta": 16.0}, [False, False]),
        ({"lambda_d": 8.0, "beta": 1.7e308, "weights": [1.0, 1.0]}, [True, True]),
    ],
)
def test_kto_overflow_gives_every_coefficient(kwargs, desirable):
    msg = overflows(
        "kto_loss", lambda: kto_loss([[-1.0], [-1.0]], M2, [-1.0, -1.0], np.array(desirable), **kwargs)
    )
    assert all(f"{k} = {v:g}" in msg for k, v in kwargs.items() if k != "weights")


def test_kto_huge_weight_times_a_saturated_sigma_is_a_silent_error():
    # w lam = 1.7e308 * 2 = inf, times sigma(u) sigma(-u) = 0 at u = -inf: NaN
    call = lambda: kto_loss(  # noqa: E731
        [[-1e308, -1e308], [-1.0, -1.0]],
        np.ones((2, 2)),
        [0.0, 0.0],
        np.array([True, False]),
        1.0,
        lambda_d=2.0,
        weights=[1.7e308, 1.0],
    )
    assert "weights in [1, 1.7e+308]" in raises(ValueError, call).split(" from ")[1]
    raises(ValueError, call).startswith("kto_loss: expected a finite ")


def test_bradley_terry_judge_grader_messages_and_the_prompt_it_gets():
    assert raises(TypeError, lambda: bradley_terry_judge(3)) == (
        "grader: expected a callable grader(prompt, response), got int 3"
    )
    assert raises(TypeError, lambda: bradley_terry_judge(lambda y: 0.0)) == (
        "grader: expected a callable grader(prompt, response) taking 2 positional arguments, "
        "got one with signature (y)"
    )
    judge = bradley_terry_judge(lambda x, y: float(len(x) * len(y)))
    assert judge("abc", (1,), (1, 2)) == pytest.approx(_sig(3.0 - 6.0), rel=1e-15)


def test_online_step_labels_each_pair_with_one_uniform_draw_strictly_below_p():
    """After the rollout, one u ~ U[0, 1) per pair, in order; y_a wins iff u < p. A judge that
    answers p = u exactly (known by replaying the generator) loses every pair."""
    mdp, policy, ref, _ = _online_setup()
    theta0 = policy.theta.copy()
    prompts = np.repeat(np.arange(2), 3)
    replay = np.random.default_rng(6)
    resp = mdp.rollout(TabularPolicy(theta0), 2, replay, prompts=prompts).responses()
    u = replay.random(prompts.size)
    for shift, a_wins in ((0.0, False), (1e-9, True)):
        it = iter(u + shift)
        p2 = TabularPolicy(theta0.copy())
        out = online_dpo_step(
            mdp, p2, ref, lambda x, a, b: float(next(it)), 0.5, 0.5, np.random.default_rng(6), pairs_per_prompt=3
        )
        pick = 0 if a_wins else 1
        assert out["chosen"] == [resp[2 * i + pick] for i in range(prompts.size)]


def test_online_step_a_reference_forbidding_sampled_tokens_is_named():
    # the reference gives token 1 probability 0 everywhere; the policy samples token 1 often
    mdp, policy, _, grader = _online_setup()
    theta = np.zeros((mdp.S, mdp.V))
    theta[:, 1] = -np.inf
    rng = np.random.default_rng(0)
    theta0 = policy.theta.copy()
    msg = raises(
        ValueError,
        lambda: online_dpo_step(mdp, policy, TabularPolicy(theta), bradley_terry_judge(grader), 1.0, 1.0, rng, 8),
    )
    assert msg.startswith("ref: expected finite log-probs of the sampled responses, got -inf")
    np.testing.assert_array_equal(policy.theta, theta0)
    assert rng.random() == np.random.default_rng(0).random()


def test_online_step_whose_update_leaves_float64_names_the_function_and_lr():
    mdp, policy, ref, grader = _online_setup()
    theta0 = policy.theta.copy()
    msg = raises(
        ValueError,
        lambda: online_dpo_step(
            mdp, policy, ref, bradley_terry_judge(grader), 5.0, 1.7e308, np.random.default_rng(1)
        ),
    )
    assert msg == "online_dpo_step: expected a finite theta, got inf (beyond float64) from beta = 5, lr = 1.7e+308"
    np.testing.assert_array_equal(policy.theta, theta0)


def test_online_step_a_reference_far_below_the_policy_overflows_the_loss():
    """The reference puts log-prob -5e307 on token 1 (at most 3 of them: -1.5e308, finite); the
    judge prefers responses without it. A rejected response holding token 1 has a log-ratio of
    at least 5e307, so h <= -5e307 and beta h = -inf at beta = 4 while h is finite: the loss
    overflows."""
    mdp, policy, _, _ = _online_setup()
    theta = np.zeros((mdp.S, mdp.V))
    theta[:, 1] = -5e307
    has = lambda y: 1 in y  # noqa: E731
    judge = lambda x, a, b: 0.5 if has(a) == has(b) else float(has(b))  # noqa: E731
    msg = raises(
        ValueError,
        lambda: online_dpo_step(mdp, policy, TabularPolicy(theta), judge, 4.0, 1.0, np.random.default_rng(0), 8),
    )
    assert msg.startswith("online_dpo_step: expected a finite loss") and "beta = 4, lr = 1" in msg


def test_a_failing_online_step_takes_back_the_lazy_ids_it_handed_out():
    """A lazy TokenMDP hands out state ids during the rollout; a step that raises after it (a
    judge answering garbage) gives them back, as the generator and theta are given back."""
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3, ids="lazy", capacity=64)
    policy, ref = TabularPolicy(np.zeros((mdp.S, mdp.V))), TabularPolicy(np.zeros((mdp.S, mdp.V)))
    before = mdp.checkpoint()
    rng = np.random.default_rng(2)
    raises(ValueError, lambda: online_dpo_step(mdp, policy, ref, lambda x, a, b: 2.0, 1.0, 1.0, rng))
    assert mdp.checkpoint() == before and rng.random() == np.random.default_rng(2).random()
    out = online_dpo_step(mdp, policy, ref, lambda x, a, b: 1.0, 1.0, 1.0, np.random.default_rng(2))
    assert mdp.checkpoint() != before and np.isfinite(out["loss"])  # a step that succeeds keeps its ids


def test_log_prob_checks_name_the_argument_and_show_the_largest_real_entry():
    # padding holds 7.0, larger than the offending real token's 0.5: only real tokens are shown
    lp, m = np.array([[-1.0, 0.5, 7.0]]), np.array([[1.0, 1.0, 0.0]])
    ok = np.array([[-1.0, -1.0, 0.0]])
    msg = raises(ValueError, lambda: ipo_loss(ok, m, lp, m, [0.0], [0.0], 1.0))
    assert msg == "logp_r: expected log-probs <= 0 on real tokens, got max 0.5"
    msg = raises(ValueError, lambda: kto_loss(lp, m, [0.0], np.array([True]), 1.0))
    assert msg == "logp: expected log-probs <= 0 on real tokens, got max 0.5"


def test_orpo_odds_messages_name_the_side_and_the_pair():
    lp, m = np.full((3, 2), -0.5), np.ones((3, 2))
    empty = m.copy()
    empty[1] = 0.0
    msg = raises(ValueError, lambda: orpo_loss(lp, m, lp, empty))
    assert msg == (
        "logp_r: expected nonempty responses for ORPO (an empty response has probability 1), "
        "got an empty one at pair 1"
    )
    sure = lp.copy()
    sure[2] = 0.0
    msg = raises(ValueError, lambda: orpo_loss(lp, m, sure, m))
    assert (
        msg == "logp_r: expected a mean log-prob < 0 for ORPO (probability 1 has infinite odds), got 0 at pair 2"
    )


def test_kto_desirable_of_another_type_names_it():
    for desirable, got in (("abc", "str"), (np.array([1, 0, 1]), "ndarray of dtype int64")):
        msg = raises(TypeError, lambda: kto_loss(Z, M, np.zeros(3), desirable, 1.0))
        assert msg == f"desirable: expected a bool array, got {got}"


def test_overflow_messages_show_every_input_of_ipo_and_orpo():
    msg = raises(ValueError, lambda: ipo_loss([[-1e200]], M1, [[-1.0]], M1, [0.0], [0.0], 1.0, weights=[1.0]))
    assert msg == (
        "ipo_loss: expected a finite loss, got inf (beyond float64) from logp_c in [-1e+200, -1e+200], "
        "logp_r in [-1, -1], seq_logp_ref_c in [0, 0], seq_logp_ref_r in [0, 0], beta = 1, weights in [1, 1]"
    )
    msg = raises(ValueError, lambda: orpo_loss([[-2.0]], M1, [[-1.0]], M1, lam=1.7e308, weights=[1.0]))
    assert msg == (
        "orpo_loss: expected a finite loss and dloss_dlogp_r, got inf (beyond float64) from logp_c in [-2, -2], "
        "logp_r in [-1, -1], lam = 1.7e+308, weights in [1, 1]"
    )


def test_online_step_table_and_size_messages_are_exact():
    mdp = TokenMDP(["a"], V=3, eos=0, max_len=3)  # one prompt, S = 7
    pol, wide = TabularPolicy(np.zeros((7, 3))), TabularPolicy(np.zeros((7, 4)))
    judge, rng = (lambda x, a, b: 1.0), np.random.default_rng(0)
    msg = raises(ValueError, lambda: online_dpo_step(mdp, wide, pol, judge, 1.0, 1.0, rng))
    assert msg == "policy: expected a table of shape (S, V) = (7, 3) for mdp, got (7, 4)"
    msg = raises(ValueError, lambda: online_dpo_step(mdp, pol, wide, judge, 1.0, 1.0, rng))
    assert msg == "ref: expected a table of the policy's shape (7, 3), got (7, 4)"
    most = MAX_DRAWS // 2  # 2 N k responses with N = 1
    msg = raises(ValueError, lambda: online_dpo_step(mdp, pol, pol.copy(), judge, 1.0, 1.0, rng, most + 1))
    assert msg == f"pairs_per_prompt: expected an integer <= {most} (2 N k responses are drawn), got {most + 1}"


def test_online_step_runs_on_an_environment_without_checkpoints():
    class Plain:  # what online_dpo_step needs of an environment, and no checkpoint() or rollback()
        def __init__(self, mdp):
            self.mdp, self.prompts, self.N, self.S, self.V = mdp, mdp.prompts, mdp.N, mdp.S, mdp.V

        def rollout(self, policy, K, rng, prompts=None):
            return self.mdp.rollout(policy, K, rng, prompts=prompts)

    mdp, policy, ref, grader = _online_setup()
    theta = policy.theta.copy()
    judge = bradley_terry_judge(grader)
    online_dpo_step(Plain(mdp), policy, ref, judge, 1.0, 1.0, np.random.default_rng(0))
    again = TabularPolicy(theta)
    online_dpo_step(_online_setup()[0], again, ref, judge, 1.0, 1.0, np.random.default_rng(0))
    assert np.array_equal(policy.theta, again.theta) and not np.array_equal(theta, again.theta)

"""reward/prm.py: per-step labels on the calculator, the PRM's loss and fit, per-turn rewards."""

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.policy import softmax_table
from minirl_lm.multiturn.calculator import CALL, calculator, calculator_reference
from minirl_lm.multiturn.values import kl_objective, soft_optimum
from minirl_lm.reward.prm import fit_prm, prm_data, prm_loss, process_env, process_rewards
from quiet import names

COST = 0.1


def _setup(max_turns=2):
    env = calculator(0.8, COST, max_turns=max_turns)
    pi_ref = softmax_table(calculator_reference(env))
    ep = env.all_episodes()
    logp = np.log(pi_ref)[ep.states, ep.tokens] * ep.action_mask
    pr = np.exp(ep.log_env + logp.sum(axis=1))  # (B,)
    calls = ((ep.tokens == CALL) * ep.action_mask).sum(axis=1)
    right = np.clip((ep.R + COST * calls).round(12), 0, 1)
    return env, pi_ref, ep, pr, right


def test_prm_data_marks_the_last_token_of_each_turn():
    env, _, ep, _, right = _setup()
    steps, labels = prm_data(env, ep, right)
    # every turn reward sits on a step: the environment places it on each turn's last token
    assert np.all((ep.rewards != 0) <= (steps > 0))
    calls = ((ep.tokens == CALL) * ep.action_mask).sum(axis=1)
    assert np.array_equal(steps.sum(axis=1), calls + 1 - (calls == env.max_turns))  # calls + the last turn
    assert np.array_equal(labels, steps * right[:, None])
    names("outcome", "entries <= 1", lambda: prm_data(env, ep, right + 2))


def test_prm_loss_gradient_matches_finite_differences():
    env, _, ep, pr, right = _setup()
    steps, labels = prm_data(env, ep, right)
    r_phi = np.random.default_rng(0).normal(size=(env.S, env.V))
    _, g = prm_loss(r_phi, ep.states, ep.tokens, steps, labels, weights=pr)
    used = np.unique(ep.states[steps > 0] * env.V + ep.tokens[steps > 0])[:12]
    for i in used:  # the entries the steps reach; every other entry's gradient is exactly 0
        s, a = divmod(int(i), env.V)

        def f(v, s=s, a=a):
            t = r_phi.copy()
            t[s, a] = v[0]
            return prm_loss(t, ep.states, ep.tokens, steps, labels, pr)[0]

        assert g[s, a] == pytest.approx(fd_grad(f, np.array([r_phi[s, a]]))[0], abs=1e-9)
    mask = np.zeros((env.S, env.V), bool)
    mask[ep.states[steps > 0], ep.tokens[steps > 0]] = True
    assert np.all(g[~mask] == 0)
    default = prm_loss(r_phi, ep.states, ep.tokens, steps, labels)[0]  # weights 1/B
    assert default == pytest.approx(
        prm_loss(r_phi, ep.states, ep.tokens, steps, labels, np.full(len(pr), 1 / len(pr)))[0]
    )


def test_fit_prm_is_the_stationary_point_and_the_conditional_probability():
    env, _, ep, pr, right = _setup()
    steps, labels = prm_data(env, ep, right)
    p = fit_prm(env, ep.states, ep.tokens, steps, labels, weights=pr, l2=0.0)
    # eq. (prm_fit) by hand at one step: the first turn's digit 0 (guess) earns 1/2
    from minirl_lm.multiturn.calculator import D0, EOS

    s1 = env.children[0][D0][2]  # after writing 0, the turn goes on
    assert p[s1, EOS] == pytest.approx(0.5, abs=1e-15)
    assert p[0, EOS] == 0.0  # no digit: never right
    inner = np.clip(p, 1e-6, 1 - 1e-6)
    for l2 in (0.05,):
        q = fit_prm(env, ep.states, ep.tokens, steps, labels, weights=pr, l2=l2)
        r = np.log(q / (1 - q))
        _, g = prm_loss(r, ep.states, ep.tokens, steps, labels, pr)
        assert np.abs(g + l2 * r).max() < 1e-12  # eq. (prm_loss) stationary with its ridge
    for l2 in (1e-60, 1e-100, 1e-300):  # 2 n / l2 far beyond 2^200: the bisection still converges
        q = fit_prm(env, ep.states, ep.tokens, steps, labels, weights=pr, l2=l2)
        assert np.abs(q - p).max() < 1e-12  # a vanishing ridge: the fit at l2 = 0
    assert inner.shape == (env.S, env.V)
    never = np.ones((env.S, env.V), bool)
    never[ep.states[steps > 0], ep.tokens[steps > 0]] = False
    assert np.all(p[never] == 0.5)  # no data: the logit stays 0
    names("l2", ">= 0", lambda: fit_prm(env, ep.states, ep.tokens, steps, labels, l2=-1.0))


def test_progress_rewards_keep_the_outcome_optimum_and_direct_rewards_move_it():
    env, pi_ref, ep, pr, right = _setup(max_turns=3)
    steps, labels = prm_data(env, ep, right)
    p = fit_prm(env, ep.states, ep.tokens, steps, labels, weights=pr)
    price = np.zeros((env.S, env.V))
    price[:, CALL] = -COST
    gold = soft_optimum(env, pi_ref, 0.25)[2]
    prog = soft_optimum(process_env(env, p, "progress", price), pi_ref, 0.25)[2]
    assert np.abs(prog - gold)[env.is_policy].max() < 1e-12
    direct = soft_optimum(process_env(env, p, mode="direct", extra=price), pi_ref, 0.25)[2]
    assert kl_objective(env, direct, pi_ref, 0.25) < kl_objective(env, gold, pi_ref, 0.25) - 1e-3
    # the rewards: progress telescopes to the last step's p along every episode
    r_prog = process_rewards(env, p, mode="progress")
    r_dir = process_rewards(env, p)  # default: progress
    assert np.array_equal(r_prog, r_dir)
    tot = (r_prog[ep.states, ep.tokens] * steps).sum(axis=1)
    last = np.array([p[ep.states[b], ep.tokens[b]][steps[b] > 0][-1] for b in range(len(pr))])
    assert np.allclose(tot, last, atol=1e-15)
    assert env.children[0][CALL][0].max() == -COST  # process_env left env alone
    names("mode", "one of", lambda: process_env(env, p, "both"))
    names("p_step", "entries <= 1", lambda: process_rewards(env, p + 1))


def test_the_declared_boundary():
    from minirl_lm.reward.prm import _episodes_of_env, _multiturn_env, _one_outcome_per_episode, _steps_in_table

    env, _, ep, _, _ = _setup(1)
    dims = {}
    assert _multiturn_env(env, "env", dims) is env and dims == {"S": env.S, "V": env.V}
    assert _episodes_of_env(env, ep) is None
    B = ep.mask.shape[0]
    assert _one_outcome_per_episode(ep, np.zeros(B)) is None
    assert _one_outcome_per_episode(ep, np.zeros(B + 1)) == (
        f"outcome: expected shape ({B},), one label per episode of ep, got ({B + 1},)"
    )
    ids = np.array([[0, 1]])
    assert _steps_in_table(ids, ids, r_phi=np.zeros((2, 2))) is None
    assert _steps_in_table(ids, ids + 1, r_phi=np.zeros((2, 2))) == (
        "tokens: expected ids < 2 (the table's tokens), got max 2"
    )
    assert _steps_in_table(ids + env.S - 1, ids, env=env).startswith(f"states: expected ids < {env.S}")
    names("outcome", "one label per episode", lambda: prm_data(env, ep, np.zeros(B + 1)))
    names("states", "ids <", lambda: prm_loss(np.zeros((2, 2)), ids + 1, ids, ids * 0 + 1.0, ids * 0.0))
    names("env", "MultiTurnMDP", lambda: process_rewards(object(), np.zeros((1, 1))), TypeError)


def test_direct_rewards_are_the_step_scores_and_process_env_adds_extra_at_the_steps_only():
    env, pi_ref, ep, pr, right = _setup()
    steps, labels = prm_data(env, ep, right)
    p = fit_prm(env, ep.states, ep.tokens, steps, labels, weights=pr)
    r = process_rewards(env, p, "direct")
    at_steps = np.zeros((env.S, env.V), bool)
    at_steps[ep.states[steps > 0], ep.tokens[steps > 0]] = True
    assert np.array_equal(r[at_steps], p[at_steps]) and not r[~at_steps].any()
    extra = np.full((env.S, env.V), 0.25)
    for given, added in ((None, 0.0), (extra, 0.25)):
        new = process_env(env, p, "direct", given)
        for s, kids in new.children.items():
            for a, (reward, kind, _) in enumerate(kids):
                want = 0.0 if kind == "turn" else r[s, a] + added  # inside a turn: no reward, no extra
                assert reward.tolist() == [want] * env.W, (s, a, kind)
    msg = str(pytest.raises(TypeError, process_rewards, object(), np.zeros((1, 1))).value)
    assert msg.startswith("env: expected a MultiTurnMDP (with children, is_policy")
    bad = ep.states.copy()
    bad[0, 0] = env.S
    msg = str(pytest.raises(ValueError, prm_loss, np.zeros((env.S, env.V)), bad, ep.tokens, steps, labels).value)
    assert msg == f"states: expected ids < {env.S} (the table's states), got max {env.S}"

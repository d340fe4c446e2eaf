"""Multi-turn episodes: the environment, the action mask, values with chance nodes, returns/GAE."""

import importlib.util
import itertools
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.values.critic import gae, td_errors
from minirl_lm.multiturn.calculator import CALL, D0, D1, EQ, calculator, calculator_reference
from minirl_lm.multiturn.env import Episodes, MultiTurnMDP, action_view, scatter
from minirl_lm.multiturn.values import (gae_actions, kl_objective, policy_values,
                                        returns_actions, soft_optimum, turn_values)
from minirl_lm.core.policy import TabularPolicy, softmax_table

_spec = importlib.util.spec_from_file_location(
    "multi_turn_example", Path(__file__).resolve().parents[2] / "examples" / "multi_turn.py")
ex = importlib.util.module_from_spec(_spec)                      # the example's exact tools
_spec.loader.exec_module(ex)


def setup(q=0.8, seed=0, **kw):
    env = calculator(q, **kw)
    rng = np.random.default_rng(seed)
    pol = TabularPolicy(calculator_reference(env) + rng.normal(size=(env.S, env.V)))
    ep = env.all_episodes()
    s, y, m, r, pos = action_view(env, ep)
    _, seq = pol.logp(s, y, m)
    return env, pol, ep, (s, y, m, r, pos), np.exp(seq + ep.log_env)


# ---- the environment ---------------------------------------------------------------------------
@pytest.mark.parametrize("q", [0.0, 0.3, 0.8, 1.0])
def test_every_trajectory_enumerated_probabilities_sum_to_one(q):
    env, pol, ep, _, p = setup(q)
    assert abs(p.sum() - 1.0) < 1e-12
    assert (p > 0).all()                                          # zero-probability rows dropped
    assert env.is_policy.sum() + (~env.is_policy).sum() == env.S


def test_rollouts_are_trajectories_of_the_enumeration_with_their_probability():
    env, pol, ep, _, p = setup(0.7)
    ro = env.rollout(pol, 400, np.random.default_rng(3))
    env.check(ro)                                                 # parses, masks right
    table = {(tuple(ep.tokens[b]), int(ep.world[b])): p[b] for b in range(len(p))}
    seen = {}
    for b in range(400):
        key = (tuple(ro.tokens[b]), int(ro.world[b]))
        assert key in table
        seen[key] = seen.get(key, 0) + 1
    top = max(table, key=table.get)                               # the likeliest trajectory
    assert abs(seen.get(top, 0) / 400 - table[top]) < 4 * np.sqrt(table[top] / 400) + 0.01
    again = env.rollout(pol, 400, np.random.default_rng(3))       # same seed, same bits
    assert np.array_equal(again.tokens, ro.tokens) and np.array_equal(again.world, ro.world)


def test_rollout_masks_rewards_and_log_env():
    env, pol, *_ = setup(0.8)
    ro = env.rollout(pol, 64, np.random.default_rng(0))
    assert ((ro.action_mask <= ro.mask)).all()
    obs = (ro.mask > 0) & (ro.action_mask == 0)
    assert obs.any() and (ro.rewards[obs] == 0).all()
    assert set(np.unique(ro.tokens[obs])) <= {EQ, D0, D1}        # the tool's reply "= d"
    calls = ((ro.tokens == CALL) & (ro.action_mask > 0)).sum(1)
    digits = (ro.action_mask > 0) & ((ro.tokens == D0) | (ro.tokens == D1))
    for b in range(64):
        d = ro.tokens[b][digits[b]]
        right = float(d.size > 0 and d[-1] == D0 + ro.world[b])
        assert abs(ro.R[b] - (right - 0.1 * calls[b])) < 1e-12
        spans = [ro.tokens[b, t + 2] for t in range(env.T - 2)
                 if obs[b, t + 1] and ro.tokens[b, t + 1] == EQ]
        want = np.log(0.5) + sum(np.log(0.8 if o == D0 + ro.world[b] else 0.2) for o in spans)
        assert abs(ro.log_env[b] - want) < 1e-12


def test_action_view_and_scatter_round_trip():
    env, pol, ep, (s, y, m, r, pos), _ = setup()
    x = np.arange(m.size, dtype=float).reshape(m.shape) * m
    full = scatter(x, pos, m, env.T)
    assert np.array_equal(full[ep.action_mask == 0], np.zeros((ep.action_mask == 0).sum()))
    assert np.array_equal(np.take_along_axis(full, pos, 1) * m, x)
    assert np.array_equal(scatter(r, pos, m, env.T), ep.rewards)


# ---- bad input -------------------------------------------------------------------------------
def test_action_mask_marking_an_observation_token_is_an_error():
    env, pol, *_ = setup()
    ro = env.rollout(pol, 32, np.random.default_rng(1))
    obs = np.argwhere((ro.mask > 0) & (ro.action_mask == 0))
    bad = Episodes(ro.states, ro.tokens, ro.mask, ro.action_mask.copy(), ro.rewards, ro.world,
                   ro.log_env)
    bad.action_mask[tuple(obs[0])] = 1.0
    with pytest.raises(ValueError, match=r"^action_mask: .*observation token"):
        env.check(bad)
    with pytest.raises(ValueError, match=r"^action_mask: .*observation token"):
        action_view(env, bad)
    bad.action_mask = ro.mask.copy()                              # mask passed as action mask
    with pytest.raises(ValueError, match=r"^action_mask:"):
        env.check(bad)
    bad.action_mask = ro.action_mask.copy()
    bad.action_mask[0, 0] = 0.0                                   # a policy token marked 0
    with pytest.raises(ValueError, match=r"^action_mask: .*policy token"):
        env.check(bad)


def _env(**kw):
    args = dict(V=5, eos=0, calls=(1,), spans=[(2, 3), (2, 4)],
                p_obs=[[0.8, 0.2], [0.2, 0.8]], prior=[0.5, 0.5],
                turn_reward=lambda w, turns, done: 0.0, max_turns=2, turn_len=2)
    args.update(kw)
    return MultiTurnMDP(**args)


@pytest.mark.parametrize("spans", [[(2, 5), (2, 4)], [(2, 3), (-1,)], [(2, 3), ()]])
def test_observation_tokens_outside_the_vocabulary_are_an_error(spans):
    with pytest.raises(ValueError, match=r"^spans: expected non-empty spans of token ids in "
                                         r"\[0, 5\)"):
        _env(spans=spans)


@pytest.mark.parametrize("cap", [0, -1])
def test_turn_cap_must_be_positive(cap):
    with pytest.raises(ValueError, match=r"^max_turns: expected an integer >= 1"):
        _env(max_turns=cap)
    with pytest.raises(ValueError, match=r"^max_turns: expected an integer >= 1"):
        calculator(0.8, max_turns=cap)


def test_other_bad_environments():
    with pytest.raises(ValueError, match="^spans: expected no span to be a prefix"):
        _env(spans=[(2,), (2, 4)], p_obs=[[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match="^p_obs:"):
        _env(p_obs=[[0.8, 0.3], [0.2, 0.8]])
    with pytest.raises(ValueError, match="^calls:"):
        _env(calls=(0,))
    with pytest.raises(ValueError, match="^turn_len:"):
        _env(turn_len=0)
    with pytest.raises(ValueError, match="^q:"):
        calculator(1.5)
    with pytest.raises(ValueError, match="^turn_reward:"):
        _env(turn_reward=lambda w, turns, done: np.nan)


def test_bad_episode_arrays_and_helpers():
    env, pol, ep, (s, y, m, r, pos), _ = setup()
    empty = Episodes(ep.states[:2], ep.tokens[:2], ep.mask[:2].copy(), ep.action_mask[:2].copy(),
                     ep.rewards[:2], ep.world[:2], ep.log_env[:2])
    empty.mask[1], empty.action_mask[1] = 0.0, 0.0
    with pytest.raises(ValueError, match="^mask: row 1 is empty"):
        env.check(empty)
    obs = (ep.mask > 0) & (ep.action_mask == 0)
    b = int(np.flatnonzero(obs.any(1))[0])                        # a row with a tool reply
    sl = slice(b, b + 1)
    wrong = Episodes(ep.states[sl], ep.tokens[sl].copy(), ep.mask[sl], ep.action_mask[sl],
                     ep.rewards[sl], ep.world[sl], ep.log_env[sl])
    t = int(np.flatnonzero(obs[b])[0])                            # an observation position
    wrong.tokens[0, t] = CALL                                     # not a span of the tool
    with pytest.raises(ValueError, match="^tokens: row 0"):
        env.check(wrong)
    with pytest.raises(ValueError, match="^pos:"):
        scatter(m, pos[:, :1], m, env.T)
    with pytest.raises(TypeError, match="^env:"):
        calculator_reference(_env(V=6, p_obs=[[0.8, 0.2], [0.2, 0.8]]))


def test_bad_rollout_arguments_change_no_state():
    env, pol, *_ = setup()
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="^policy:"):
        env.rollout(TabularPolicy(np.zeros((3, 5))), 4, rng)
    with pytest.raises(ValueError, match="^K:"):
        env.rollout(pol, 0, rng)
    assert rng.bit_generator.state == before


def test_returns_and_gae_reject_rewards_on_observation_tokens():
    env, pol, ep, *_ = setup()
    r = ep.rewards.copy()
    r[(ep.mask > 0) & (ep.action_mask == 0)] = 1.0
    with pytest.raises(ValueError, match="^rewards: expected rewards on policy tokens only"):
        returns_actions(r, ep.mask, ep.action_mask)
    with pytest.raises(ValueError, match="^action_mask:"):
        gae_actions(np.zeros(ep.mask.shape), ep.rewards, ep.mask, ep.mask + 1.0)


# ---- values with chance nodes ----------------------------------------------------------------
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_policy_values_are_the_enumerated_expectations(q):
    env, pol, ep, (s, y, m, r, pos), p = setup(q)
    values, Q = policy_values(env, pol.probs())
    assert abs(values[0] - p @ ep.R) < 1e-12                      # V^pi(x) = E R
    G = returns_actions(ep.rewards, ep.mask, ep.action_mask)
    key = (ep.states * env.V + ep.tokens)[ep.action_mask > 0]
    pt = np.broadcast_to(p[:, None], ep.mask.shape)[ep.action_mask > 0]
    cm, mass = ex.conditional_mean(pt, key, G[ep.action_mask > 0], env.S * env.V)
    assert np.abs(cm - Q.ravel())[mass > 0].max() < 1e-12        # Q(s, a) = E[G_t | s, a]


def test_soft_optimum_is_the_maximum_and_the_gap_is_a_trajectory_kl():
    env, pol, ep, (s, y, m, r, pos), p = setup(0.8)
    pi_ref = softmax_table(calculator_reference(env))
    beta = 0.1
    v_star, _, pi_star = soft_optimum(env, pi_ref, beta)
    assert abs(kl_objective(env, pi_star, pi_ref, beta) - v_star[0]) < 1e-12
    pi = pol.probs()
    gap = v_star[0] - kl_objective(env, pi, pi_ref, beta)
    _, lp = pol.logp(s, y, m)
    _, lp_star = TabularPolicy(np.log(pi_star)).logp(s, y, m)
    kl = p @ (lp - lp_star)                                        # env factors cancel
    assert gap > 0 and abs(gap - beta * kl) < 1e-12


def test_soft_optimum_calls_iff_the_tool_beats_guessing_by_the_cost():
    for q, calls in ((0.55, False), (0.65, True), (0.9, True)):
        env = calculator(q, cost=0.1)
        pi_ref = np.full((env.S, env.V), 1.0 / env.V)
        _, _, pi_star = soft_optimum(env, pi_ref, 1e-3)             # nearly the argmax
        assert (np.argmax(pi_star[0]) == CALL) == calls, q


# ---- 1. the score identity; the exact gradient, against finite differences ----------------------
def test_action_mask_reinforce_equals_trajectory_estimator_sample_for_sample():
    env, pol, *_ = setup()
    ro = env.rollout(pol, 12, np.random.default_rng(5))
    s, y, m, _, _ = action_view(env, ro)
    for b in range(12):
        g_tok = pol.backward(s[b:b + 1], y[b:b + 1], m[b:b + 1], ro.R[b] * m[b:b + 1])

        def logP(theta):                                          # eq. (traj_prob), whole row
            z = theta[ro.states[b]]                               # (T, V)
            lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
            lp = z[np.arange(env.T), ro.tokens[b]] - lse
            return ro.log_env[b] + (lp * ro.action_mask[b]).sum()

        rows = np.unique(ro.states[b][ro.mask[b] > 0])
        g_traj = np.zeros_like(pol.theta)
        for st in rows:                                           # complex step: exact to rounding
            for v in range(env.V):
                th = pol.theta.astype(complex)
                th[st, v] += 1e-30j
                g_traj[st, v] = ro.R[b] * logP(th).imag / 1e-30
        assert np.abs(g_tok - g_traj).max() < 1e-12


def test_exact_policy_gradient_matches_finite_differences_of_the_expected_return():
    env = calculator(0.8, max_turns=2)
    rng = np.random.default_rng(0)
    theta = calculator_reference(env) + rng.normal(size=(env.S, env.V))
    ep = env.all_episodes()
    s, y, m, _, _ = action_view(env, ep)
    pol = TabularPolicy(theta)
    _, seq = pol.logp(s, y, m)
    p = np.exp(seq + ep.log_env)
    g = pol.backward(s, y, m, (p * ep.R)[:, None] * m)           # E[R sum_{action} score]
    J = lambda th: policy_values(env, softmax_table(th))[0][0]    # noqa: E731
    rows = np.flatnonzero(env.is_policy)[:12]
    sub = lambda x: theta_with(theta, rows, x)                    # noqa: E731
    fd = fd_grad(lambda x: J(sub(x)), theta[rows].copy())
    # truncation ~1e-12, rounding ~1e-10 |J| / 1: tolerance 1e-8
    assert np.abs(fd - g[rows]).max() < 1e-8


def theta_with(theta, rows, x):
    out = theta.copy()
    out[rows] = x
    return out


def test_row_grads_are_the_policy_backward_row_by_row():
    env, pol, ep, (s, y, m, r, pos), p = setup()
    A = np.random.default_rng(2).normal(size=m.shape) * m
    H = ex.row_grads(pol.probs(), s, y, m, A)
    for b in (0, 7, len(p) - 1):
        want = pol.backward(s[b:b + 1], y[b:b + 1], m[b:b + 1], A[b:b + 1])
        assert np.abs(H[b] - want.ravel()).max() < 1e-13


# ---- 2, 3. the observation-token bug; returns and GAE across spans -------------------------------
def test_observation_tokens_in_the_loss_bias_the_gradient_and_only_chance_rows():
    env, pol, ep, (s, y, m, r, pos), p = setup()
    P = pol.probs()
    values, _ = policy_values(env, P)
    A = ep.R - values[0]
    g_true = p @ ex.row_grads(P, s, y, m, A[:, None] * m)
    g_bug = p @ ex.row_grads(P, ep.states, ep.tokens, ep.mask, A[:, None] * ep.mask)
    diff = (g_bug - g_true).reshape(env.S, env.V)
    assert np.linalg.norm(diff) / np.linalg.norm(g_true) > 1e-2
    assert np.abs(diff[env.is_policy]).max() < 1e-15              # policy rows untouched


def verl_gae(rewards, values, response_mask, gamma, lam):
    """verl compute_gae_advantage_return @ 1dda039b9c (2026-08-22), re-derived in NumPy."""
    nextvalues, lastgaelam, out = 0.0, 0.0, []
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam_ = delta + gamma * lam * lastgaelam
        nextvalues = values[:, t] * response_mask[:, t] + (1 - response_mask[:, t]) * nextvalues
        lastgaelam = lastgaelam_ * response_mask[:, t] + (1 - response_mask[:, t]) * lastgaelam
        out.append(lastgaelam)
    return np.stack(out[::-1], 1)


def reinforce_pp_returns_before_fix(rewards, response_mask, gamma):
    """verl REINFORCE++ return scan before the #7300 fix, as its PR states it, in NumPy."""
    running, out = np.zeros(rewards.shape[0]), np.zeros(rewards.shape)
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + gamma * running
        out[:, t] = running
        running = running * response_mask[:, t]
    return out


@pytest.mark.parametrize("gamma,lam", [(1.0, 1.0), (1.0, 0.9), (0.9, 0.5), (1.0, 0.0)])
def test_carried_gae_is_single_turn_gae_on_the_compact_rows_and_verls(gamma, lam):
    env, pol, ep, (s, y, m, r, pos), _ = setup()
    values = np.random.default_rng(1).normal(size=env.S)
    v_tok = values[ep.states] * ep.action_mask
    A = gae_actions(v_tok, ep.rewards, ep.mask, ep.action_mask, gamma, lam)
    compact = gae(td_errors(values, s, r, m, gamma), m, gamma, lam)
    assert np.abs(np.take_along_axis(A, pos, 1) * m - compact).max() < 1e-13
    verl = verl_gae(ep.rewards, v_tok, ep.action_mask, gamma, lam) * ep.action_mask
    assert np.abs(A - verl).max() < 1e-13
    G = returns_actions(ep.rewards, ep.mask, ep.action_mask, gamma, carry=False)
    old = reinforce_pp_returns_before_fix(ep.rewards, ep.action_mask, gamma) * ep.action_mask
    assert np.abs(G - old).max() < 1e-13


def test_carried_advantages_are_unbiased_and_reset_ones_are_not():
    env, pol, ep, (s, y, m, r, pos), p = setup()
    values, Q = policy_values(env, pol.probs())
    v_tok = values[ep.states] * ep.action_mask
    on = ep.action_mask > 0
    key = (ep.states * env.V + ep.tokens)[on]
    pt = np.broadcast_to(p[:, None], ep.mask.shape)[on]
    exact = (Q - values[:, None]).ravel()
    for carry, ok in ((True, True), (False, False)):
        for A in (gae_actions(v_tok, ep.rewards, ep.mask, ep.action_mask, 1.0, 0.7, carry),
                  (returns_actions(ep.rewards, ep.mask, ep.action_mask, carry=carry) - v_tok)
                  * ep.action_mask):
            cm, mass = ex.conditional_mean(pt, key, A[on], env.S * env.V)
            bias = np.abs(cm - exact)[mass > 0].max()
            assert (bias < 1e-12) if ok else (bias > 0.1)


def test_turn_values_hold_the_value_of_each_turns_first_state():
    env, pol, ep, *_ = setup()
    values = np.arange(env.S, dtype=float)
    tv = turn_values(values, ep.states, ep.mask, ep.action_mask)
    for b in (0, 100, 2000):
        starts = [t for t in range(env.T)
                  if ep.action_mask[b, t] and (t == 0 or not ep.action_mask[b, t - 1])]
        for t in range(env.T):
            if ep.action_mask[b, t]:
                first = max(u for u in starts if u <= t)
                assert tv[b, t] == values[ep.states[b, first]]


# ---- 4. baselines: exact group moments, and the ordering -----------------------------------------
@pytest.mark.parametrize("K", [2, 3])
def test_group_moments_match_brute_force_over_every_group(K):
    env = calculator(0.7, max_turns=1)                            # small: every K-tuple
    rng = np.random.default_rng(0)
    pol = TabularPolicy(calculator_reference(env) + rng.normal(size=(env.S, env.V)))
    ep = env.all_episodes()
    s, y, m, _, _ = action_view(env, ep)
    _, seq = pol.logp(s, y, m)
    p = np.exp(seq + ep.log_env)
    Sc = ex.row_grads(pol.probs(), s, y, m, m)
    R = ep.R
    c_loo = (np.eye(K) * (1 + 1 / (K - 1)) - 1 / (K - 1)) / K
    first, second = ex.group_moments(p, R, Sc, c_loo)
    E1, E2 = 0.0, 0.0
    for tup in itertools.product(range(len(p)), repeat=K):
        idx = np.array(tup)
        g = (c_loo @ R[idx]) @ Sc[idx]
        w = np.prod(p[idx])
        E1, E2 = E1 + w * g, E2 + w * g @ g
    assert np.abs(first - E1).max() < 1e-12 and abs(second - E2) < 1e-12 * max(1.0, E2)


@pytest.mark.parametrize("q,seed,K", [(0.5, 0, 2), (0.8, 1, 8), (1.0, 2, 4)])
def test_variance_ordering_gae_per_turn_loo(q, seed, K):
    out = ex_run("--q", str(q), "--seed", str(seed), "--K", str(K), "--iters", "1")
    var = {name: float(v) for name, v in
           re.findall(r"update variance, (.+?) \(K = \d+\): ([0-9.e+-]+),", out)}
    gae_v = next(v for k, v in var.items() if k.startswith("GAE"))
    turn, loo = var["per-turn value baseline (exact)"], var["leave-one-out"]
    mean = var["group mean"]
    assert gae_v < turn < loo
    assert abs(mean - ((K - 1) / K) ** 2 * loo) < 1e-3 * loo        # printed to 4 digits


def ex_run(*args):
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(root / "examples" / "multi_turn.py"), *args],
                         cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout

"""Multi-turn episodes (minirl_lm/multiturn/env.py): the environment, the action mask, the score
identity and the exact gradient, the example's baselines; bad input. Values, returns and GAE with
chance nodes are tested in test_values.py."""

import importlib.util
import itertools
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.policy import TabularPolicy, softmax_table
from minirl_lm.multiturn.calculator import CALL, D0, D1, EQ, calculator, calculator_reference
from minirl_lm.multiturn.env import Episodes, MultiTurnMDP, action_view, scatter
from minirl_lm.multiturn.values import policy_values
from quiet import raises

_spec = importlib.util.spec_from_file_location(
    "multi_turn_example", Path(__file__).resolve().parents[2] / "examples" / "multi_turn.py"
)
ex = importlib.util.module_from_spec(_spec)  # the example's exact tools
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
    assert (p > 0).all()  # zero-probability rows dropped
    assert env.is_policy.sum() + (~env.is_policy).sum() == env.S


def test_rollouts_are_trajectories_of_the_enumeration_with_their_probability():
    env, pol, ep, _, p = setup(0.7)
    ro = env.rollout(pol, 400, np.random.default_rng(3))
    env.check(ro)  # parses, masks right
    table = {(tuple(ep.tokens[b]), int(ep.world[b])): p[b] for b in range(len(p))}
    seen = {}
    for b in range(400):
        key = (tuple(ro.tokens[b]), int(ro.world[b]))
        assert key in table
        seen[key] = seen.get(key, 0) + 1
    top = max(table, key=table.get)  # the likeliest trajectory
    assert abs(seen.get(top, 0) / 400 - table[top]) < 4 * np.sqrt(table[top] / 400) + 0.01
    again = env.rollout(pol, 400, np.random.default_rng(3))  # same seed, same bits
    assert np.array_equal(again.tokens, ro.tokens) and np.array_equal(again.world, ro.world)


def test_rollout_masks_rewards_and_log_env():
    env, pol, *_ = setup(0.8)
    ro = env.rollout(pol, 64, np.random.default_rng(0))
    assert (ro.action_mask <= ro.mask).all()
    obs = (ro.mask > 0) & (ro.action_mask == 0)
    assert obs.any() and (ro.rewards[obs] == 0).all()
    assert set(np.unique(ro.tokens[obs])) <= {EQ, D0, D1}  # the tool's reply "= d"
    calls = ((ro.tokens == CALL) & (ro.action_mask > 0)).sum(1)
    digits = (ro.action_mask > 0) & ((ro.tokens == D0) | (ro.tokens == D1))
    for b in range(64):
        d = ro.tokens[b][digits[b]]
        right = float(d.size > 0 and d[-1] == D0 + ro.world[b])
        assert abs(ro.R[b] - (right - 0.1 * calls[b])) < 1e-12
        spans = [ro.tokens[b, t + 2] for t in range(env.T - 2) if obs[b, t + 1] and ro.tokens[b, t + 1] == EQ]
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
    bad = Episodes(ro.states, ro.tokens, ro.mask, ro.action_mask.copy(), ro.rewards, ro.world, ro.log_env)
    bad.action_mask[tuple(obs[0])] = 1.0
    with pytest.raises(ValueError, match=r"^action_mask: .*observation token"):
        env.check(bad)
    with pytest.raises(ValueError, match=r"^action_mask: .*observation token"):
        action_view(env, bad)
    bad.action_mask = ro.mask.copy()  # mask passed as action mask
    with pytest.raises(ValueError, match=r"^action_mask:"):
        env.check(bad)
    bad.action_mask = ro.action_mask.copy()
    bad.action_mask[0, 0] = 0.0  # a policy token marked 0
    with pytest.raises(ValueError, match=r"^action_mask: .*policy token"):
        env.check(bad)


def _env(**kw):
    args = dict(
        V=5,
        eos=0,
        calls=(1,),
        spans=[(2, 3), (2, 4)],
        p_obs=[[0.8, 0.2], [0.2, 0.8]],
        prior=[0.5, 0.5],
        turn_reward=lambda w, turns, done: 0.0,
        max_turns=2,
        turn_len=2,
    )
    args.update(kw)
    return MultiTurnMDP(**args)


@pytest.mark.parametrize("spans", [[(2, 5), (2, 4)], [(2, 3), (-1,)], [(2, 3), ()]])
def test_observation_tokens_outside_the_vocabulary_are_an_error(spans):
    with pytest.raises(
        ValueError,
        match=r"^spans: expected non-empty spans of token ids in "
        r"\[0, 5\)",
    ):
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
    empty = Episodes(
        ep.states[:2],
        ep.tokens[:2],
        ep.mask[:2].copy(),
        ep.action_mask[:2].copy(),
        ep.rewards[:2],
        ep.world[:2],
        ep.log_env[:2],
    )
    empty.mask[1], empty.action_mask[1] = 0.0, 0.0
    with pytest.raises(ValueError, match="^mask: row 1 is empty"):
        env.check(empty)
    obs = (ep.mask > 0) & (ep.action_mask == 0)
    b = int(np.flatnonzero(obs.any(1))[0])  # a row with a tool reply
    sl = slice(b, b + 1)
    wrong = Episodes(
        ep.states[sl],
        ep.tokens[sl].copy(),
        ep.mask[sl],
        ep.action_mask[sl],
        ep.rewards[sl],
        ep.world[sl],
        ep.log_env[sl],
    )
    t = int(np.flatnonzero(obs[b])[0])  # an observation position
    wrong.tokens[0, t] = CALL  # not a span of the tool
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


# ---- 1. the score identity; the exact gradient, against finite differences ----------------------
def test_action_mask_reinforce_equals_trajectory_estimator_sample_for_sample():
    env, pol, *_ = setup()
    ro = env.rollout(pol, 12, np.random.default_rng(5))
    s, y, m, _, _ = action_view(env, ro)
    for b in range(12):
        g_tok = pol.backward(s[b : b + 1], y[b : b + 1], m[b : b + 1], ro.R[b] * m[b : b + 1])

        def logP(theta):  # eq. (traj_prob), whole row
            z = theta[ro.states[b]]  # (T, V)
            lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
            lp = z[np.arange(env.T), ro.tokens[b]] - lse
            return ro.log_env[b] + (lp * ro.action_mask[b]).sum()

        rows = np.unique(ro.states[b][ro.mask[b] > 0])
        g_traj = np.zeros_like(pol.theta)
        for st in rows:  # complex step: exact to rounding
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
    g = pol.backward(s, y, m, (p * ep.R)[:, None] * m)  # E[R sum_{action} score]
    J = lambda th: policy_values(env, softmax_table(th))[0][0]  # noqa: E731
    rows = np.flatnonzero(env.is_policy)[:12]
    sub = lambda x: theta_with(theta, rows, x)  # noqa: E731
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
        want = pol.backward(s[b : b + 1], y[b : b + 1], m[b : b + 1], A[b : b + 1])
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
    assert np.abs(diff[env.is_policy]).max() < 1e-15  # policy rows untouched


# ---- 4. baselines: exact group moments, and the ordering -----------------------------------------
@pytest.mark.parametrize("K", [2, 3])
def test_group_moments_match_brute_force_over_every_group(K):
    env = calculator(0.7, max_turns=1)  # small: every K-tuple
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


def _argv(*args):
    return [sys.executable, str(Path(__file__).resolve().parents[2] / "examples" / "multi_turn.py"), *args]


VARIANCE_CASES = [(0.5, 0, 2), (0.8, 1, 8), (1.0, 2, 4)]
# started when the session starts (tests/conftest.py), forked warm; the tests read their results
EXAMPLE_RUNS = [
    _argv("--q", str(q), "--seed", str(seed), "--K", str(K), "--iters", "1") for q, seed, K in VARIANCE_CASES
]


def ex_run(*args):
    import example_runs

    out = example_runs.run(_argv(*args), cwd=Path(__file__).resolve().parents[2], timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("q,seed,K", VARIANCE_CASES)
def test_variance_ordering_gae_per_turn_loo(q, seed, K):
    out = ex_run("--q", str(q), "--seed", str(seed), "--K", str(K), "--iters", "1")
    var = {name: float(v) for name, v in re.findall(r"update variance, (.+?) \(K = \d+\): ([0-9.e+-]+),", out)}
    gae_v = next(v for k, v in var.items() if k.startswith("GAE"))
    turn, loo = var["per-turn value baseline (exact)"], var["leave-one-out"]
    mean = var["group mean"]
    assert gae_v < turn < loo
    assert abs(mean - ((K - 1) / K) ** 2 * loo) < 1e-3 * loo  # printed to 4 digits


# ---- the residue of bad input: each class fixed where it arises
@pytest.mark.parametrize(
    "kw, exc, msg",
    [
        (dict(spans=[(True, 3), (2, 4)]), TypeError, "spans: expected integer token ids, got True in (True, 3)"),
        (dict(spans=[(2, np.bool_(True)), (2, 4)]), TypeError, "spans: expected integer token ids"),
        (dict(calls=(2, True)), TypeError, "calls: expected integer token ids, got True in (2, True)"),
        (dict(calls=np.array([True])), TypeError, "calls: expected integer token ids, got np.True_"),
    ],
)
def test_bool_token_ids_are_refused(kw, exc, msg):
    assert raises(exc, lambda: _env(**kw)).startswith(msg)


def test_check_verifies_the_state_ids_at_observation_positions():
    env, pol, ep, *_ = setup()
    obs = np.argwhere((ep.mask > 0) & (ep.action_mask == 0))
    b, t = obs[0]
    bad = Episodes(ep.states.copy(), ep.tokens, ep.mask, ep.action_mask, ep.rewards, ep.world, ep.log_env)
    bad.states[b, t] = (bad.states[b, t] + 1) % env.S
    assert (
        raises(ValueError, lambda: env.check(bad))
        == f"states: row {b}, position {t}: expected state {ep.states[b, t]}, got {bad.states[b, t]}"
    )
    assert env.check(ep) is ep


@pytest.mark.parametrize("K", [10**12, 2**31])
def test_a_huge_rollout_is_refused_before_the_first_episode(K):
    env, pol, *_ = setup()
    t0 = time.perf_counter()
    msg = raises(ValueError, lambda: env.rollout(pol, K, np.random.default_rng(0)))
    assert msg.startswith("K: expected episodes whose (K, T) arrays are of at most 2**31"), msg
    assert time.perf_counter() - t0 < 1.0


def test_scatter_refuses_a_width_beyond_memory_before_allocating():
    x = np.zeros((2, 3))
    msg = raises(ValueError, lambda: scatter(x, np.zeros((2, 3), np.int64), np.ones((2, 3)), 2**63))
    assert msg == f"T: expected a width whose (B, T) output is of at most 2**31 entries, got {2**64}"
    assert scatter(x + 1, np.array([[0, 2, 4], [1, 2, 3]]), np.ones((2, 3)), 5).sum() == 6


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(max_turns=10**6), "max_turns"),
        (dict(turn_len=2000), "turn_len"),
        (dict(max_turns=9), "max_turns"),
        (dict(turn_len=40, V=8), "turn_len"),
        (dict(V=2**40, turn_len=1, max_turns=1), "V"),  # a small tree, each state with 2**40 children
        (
            dict(V=1000, prior=np.full(2**20, 2.0**-20), p_obs=np.full((2**20, 2), 0.5), turn_len=1, max_turns=1),
            "prior",
        ),
    ],
)
def test_trees_too_large_to_enumerate_are_refused_at_once(kw, name):
    t0 = time.perf_counter()
    msg = raises(ValueError, lambda: _env(**kw))
    assert msg.startswith(f"{name}: expected") and time.perf_counter() - t0 < 1.0, msg


def test_episodes_R_is_the_sum_of_the_turn_rewards():
    env, pol, ep, *_ = setup()
    assert np.array_equal(ep.R, ep.rewards.sum(axis=1))
    assert env.S == len(env.prefixes) and env.T == ep.mask.shape[1]


# ---- the part's kinds and relations (what values.py and the process rewards read arguments with)
def test_the_kinds_and_relations_of_the_part():
    from minirl_lm.boundary import right_padded
    from minirl_lm.multiturn.env import (
        ACTION_MASK,
        EPISODES,
        MULTITURN_MDP,
        TRAJECTORY,
        actions_on_the_trajectory,
        episodes_of,
    )

    env, pol, ep, *_ = setup()
    dims = {}
    assert MULTITURN_MDP(env, "env", dims) is env and dims == {"S": env.S, "V": env.V}
    assert EPISODES(ep, "ep", {}) is ep and episodes_of(env, ep) is None
    m = TRAJECTORY(ep.mask, "mask", {})
    assert m.dtype == np.float64 and m is not ep.mask and np.array_equal(m, ep.mask)
    holes = [[1.0, 0.0, 1.0]]
    assert ACTION_MASK(holes, "action_mask", {}).tolist() == holes  # the action mask has holes
    msg = raises(ValueError, lambda: right_padded("B T", "the rows", "elsewhere")(holes, "mask", {}))
    assert msg == (
        "mask: expected right padding (1s then 0s in each row) for the rows, row 0 is [1, 0, 1]; "
        "a mask with holes (tool outputs) is accepted by the token-level objectives; here use elsewhere"
    )
    one, act = np.array([[1.0, 1.0, 0.0]]), np.array([[1.0, 0.0, 0.0]])
    assert actions_on_the_trajectory(one, act) is None
    assert actions_on_the_trajectory(act, one).startswith("action_mask: expected 1 only where mask is 1")
    bad = Episodes(ep.states, ep.tokens, ep.mask, ep.action_mask.copy(), ep.rewards, ep.world, ep.log_env)
    bad.action_mask[0, 0] = 0.0
    assert episodes_of(env, bad).startswith("action_mask: row 0, position 0 holds a policy token")


def test_many_spans_are_checked_for_prefixes_at_once():
    spans = [(2, i) for i in range(3, 20003)]  # 20000 spans: no pair is compared twice
    t0 = time.perf_counter()
    msg = raises(ValueError, lambda: _env(V=20003, spans=spans + [(2,)], p_obs=np.full((2, 20001), 1 / 20001)))
    assert msg == "spans: expected no span to be a prefix of another, got (2,) and (2, 3)"
    assert time.perf_counter() - t0 < 1.0


def test_no_spans_and_bool_ids_are_named():
    from minirl_lm.multiturn.env import ids

    assert raises(ValueError, lambda: _env(spans=[])).startswith("spans: expected at least one span")
    assert raises(TypeError, lambda: scatter([[1.0]], np.array([[True]]), [[1.0]], 2)) == (
        "pos: expected an integer array of ids, got an array of dtype bool"
    )
    assert ids("B T", low=0)([[1, 2]], "pos", {}).dtype == np.int64


def test_scatter_refuses_a_position_equal_to_the_width_even_at_padding():
    x, mask = np.ones((1, 2)), np.array([[1.0, 0.0]])
    assert (
        raises(ValueError, lambda: scatter(x, np.array([[0, 3]]), mask, 3))
        == "pos: expected positions < T=3, got max 3"
    )

"""Multi-turn episodes (minirl_lm/multiturn/env.py): the environment, the action mask, the score
identity and the exact gradient, the example's baselines; bad input. Values, returns and GAE with
chance nodes are tested in test_values.py."""

import importlib.util
import itertools
import re
import sys
import time
import tracemalloc
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


def _refused(call):
    """The message of the ValueError `call()` raises, and the peak of memory traced meanwhile."""
    tracemalloc.start()
    try:
        msg = raises(ValueError, call)
        return msg, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("K", [10**12, 2**31])
def test_a_huge_rollout_is_refused_before_the_first_episode(K):
    env, pol, *_ = setup()
    msg, peak = _refused(lambda: env.rollout(pol, K, np.random.default_rng(0)))
    assert msg.startswith("K: expected episodes whose (K, T) arrays are of at most 2**31"), msg
    assert peak < 2**26  # refused before any (K, T) array: under 64 MiB traced


def test_a_rollout_just_beyond_2_31_entries_is_refused():
    env, pol, *_ = setup()
    K = 2**31 // env.T + 1  # K * T in (2**31, 2**31 + T]
    msg, peak = _refused(lambda: env.rollout(pol, K, np.random.default_rng(0)))
    assert msg == f"K: expected episodes whose (K, T) arrays are of at most 2**31 entries, got {K * env.T}"
    assert 2**31 < K * env.T <= 2**32 and peak < 2**26


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
    msg, peak = _refused(lambda: _env(**kw))
    assert msg.startswith(f"{name}: expected") and peak < 2**26, (msg, peak)  # before the tree is grown


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
    t0 = time.process_time()
    msg = raises(ValueError, lambda: _env(V=20003, spans=spans + [(2,)], p_obs=np.full((2, 20001), 1 / 20001)))
    assert msg == "spans: expected no span to be a prefix of another, got (2,) and (2, 3)"
    # a hang detector, not a timing: the sorted check takes about 0.1 s of CPU, comparing every
    # pair (2e8 of them in Python) would take minutes
    assert time.process_time() - t0 < 30.0


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


@pytest.mark.parametrize(
    "field, edit, exc, msg",
    [
        (
            "tokens",
            lambda ep, env: np.where(ep.mask > 0, ep.tokens, env.V),
            ValueError,
            "expected entries <= 4, got max 5",
        ),
        (
            "tokens",
            lambda ep, env: np.where(ep.mask > 0, ep.tokens, -1),
            ValueError,
            "expected entries >= 0, got min -1",
        ),
        ("tokens", lambda ep, env: ep.tokens[:, :-1], ValueError, "expected shape (2410, 10), got (2410, 9)"),
        (
            "tokens",
            lambda ep, env: ep.tokens + 0.5,
            TypeError,
            "expected an integer array, got array of shape (2410, 10) and dtype float64",
        ),
        (
            "states",
            lambda ep, env: np.where(ep.mask > 0, ep.states, env.S),
            ValueError,
            "expected entries <= 363, got max 364",
        ),
        (
            "states",
            lambda ep, env: np.where(ep.mask > 0, ep.states, -1),
            ValueError,
            "expected entries >= 0, got min -1",
        ),
        ("states", lambda ep, env: ep.states[:-1], ValueError, "expected shape (2410, 10), got (2409, 10)"),
        (
            "states",
            lambda ep, env: ep.states > 0,
            TypeError,
            "expected an integer array of ids, got an array of dtype bool",
        ),
        (
            "action_mask",
            lambda ep, env: ep.action_mask[:, :-1],
            ValueError,
            "expected shape (2410, 10), got (2410, 9)",
        ),
        (
            "action_mask",
            lambda ep, env: ep.action_mask[:-1],
            ValueError,
            "expected shape (2410, 10), got (2409, 10)",
        ),
        ("rewards", lambda ep, env: ep.rewards[:, :-1], ValueError, "expected shape (2410, 10), got (2410, 9)"),
        ("rewards", lambda ep, env: ep.rewards[:-1], ValueError, "expected shape (2410, 10), got (2409, 10)"),
    ],
)
def test_episodes_of_names_the_field_of_a_bad_range_dtype_or_shape(field, edit, exc, msg):
    import dataclasses

    from minirl_lm.multiturn.env import episodes_of

    env, pol, ep, *_ = setup()
    bad = dataclasses.replace(ep, **{field: edit(ep, env)})
    assert raises(exc, lambda: episodes_of(env, bad)) == f"{field}: {msg}"
    assert raises(exc, lambda: env.check(bad)) == f"{field}: {msg}"


def test_episodes_of_names_the_first_bad_action_mask_position_of_any_row():
    from minirl_lm.multiturn.env import episodes_of

    env, pol, ep, *_ = setup()
    B, T = ep.mask.shape
    assert B > T  # every row is read, not the first T
    obs = (ep.mask > 0) & (ep.action_mask == 0)
    b = int(np.flatnonzero(obs.any(1))[-1])  # the last row with a tool reply
    n = int(ep.mask[b].sum())
    assert n < T
    t = int(np.flatnonzero(obs[b])[0])

    def edit(*cells, value):
        bad = Episodes(ep.states, ep.tokens, ep.mask, ep.action_mask.copy(), ep.rewards, ep.world, ep.log_env)
        for c in cells:
            bad.action_mask[b, c] = value
        return episodes_of(env, bad)

    assert edit(t, t + 1, value=1.0) == (
        f"action_mask: row {b}, position {t} holds an observation token (written by the environment), "
        "expected 0, got 1.0"
    )
    assert (
        edit(t - 1, n - 1, value=0.0)
        == f"action_mask: row {b}, position {t - 1} holds a policy token, expected 1, got 0.0"
    )
    assert edit(n, T - 1, value=0.5) == f"action_mask: row {b}, position {n} is padding, expected 0, got 0.5"
    assert edit(0, value=1.0) is None


def test_episodes_of_names_a_mask_that_is_not_0_1():
    import dataclasses

    from minirl_lm.multiturn.env import episodes_of

    env, pol, ep, *_ = setup()
    bad = dataclasses.replace(ep, mask=ep.mask * 2)
    assert raises(ValueError, lambda: episodes_of(env, bad)) == "mask: expected only 0 and 1, got value 2.0"


def test_the_environment_kind_names_the_argument_and_fixes_S_and_V():
    env, pol, ep, *_ = setup()
    assert raises(TypeError, lambda: action_view(object(), ep)) == (
        "env: expected a MultiTurnMDP (with children, is_policy, loglik, p_obs, spans, S, V), "
        "got object without children, is_policy, loglik, p_obs, spans, S, V"
    )
    # the policy table after it is (S, V) of that environment
    assert raises(ValueError, lambda: policy_values(env, np.full((env.S, 4), 0.25))) == (
        "probs: expected shape (364, 5), got (364, 4)"
    )
    assert raises(ValueError, lambda: policy_values(env, np.full((env.S + 1, 5), 0.2))) == (
        "probs: expected shape (364, 5), got (365, 5)"
    )


def test_check_names_the_chance_node_at_each_position_of_a_span():
    env, pol, ep, *_ = setup()
    obs = np.argwhere((ep.mask > 0) & (ep.action_mask == 0))
    b, t = obs[0]
    assert ep.action_mask[b, t + 1] == 0  # a span of two tokens: its second chance node
    bad = Episodes(ep.states.copy(), ep.tokens, ep.mask, ep.action_mask, ep.rewards, ep.world, ep.log_env)
    bad.states[b, t + 1] = (bad.states[b, t + 1] + 1) % env.S
    assert raises(ValueError, lambda: env.check(bad)) == (
        f"states: row {b}, position {t + 1}: expected state {ep.states[b, t + 1]}, got {bad.states[b, t + 1]}"
    )


def _cut(ep, b, n):
    """`ep` with row b's mask (and action mask) cut to its first n tokens."""
    cut = Episodes(ep.states, ep.tokens, ep.mask.copy(), ep.action_mask.copy(), ep.rewards, ep.world, ep.log_env)
    cut.mask[b, n:], cut.action_mask[b, n:] = 0.0, 0.0
    return cut


def test_check_refuses_a_mask_that_ends_inside_an_observation_span():
    env, pol, ep, *_ = setup()
    obs = (ep.mask > 0) & (ep.action_mask == 0)
    b = int(np.flatnonzero(obs.any(1))[0])
    t = int(np.flatnonzero(obs[b])[0])  # the span's first token
    assert raises(ValueError, lambda: env.check(_cut(ep, b, t + 1))) == (
        f"tokens: row {b}, position {t}: expected an observation span [(2, 3), (2, 4)] after the call, "
        f"got [{ep.tokens[b, t]}]"
    )


@pytest.mark.parametrize("where", ["mid-turn", "after a span"])
def test_check_refuses_a_mask_that_ends_before_the_episode_does(where):
    """A row is a whole episode: cut after a policy token that is not terminal, or right after an
    observation span, its turn's reward and the rest are missing, so it is refused, not read."""
    env, pol, ep, *_ = setup()
    obs = (ep.mask > 0) & (ep.action_mask == 0)
    if where == "after a span":
        b = int(np.flatnonzero(obs.any(1))[0])
        n = int(np.flatnonzero(obs[b])[-1]) + 1  # the span's last token, then the policy's turn
    else:
        long = ep.action_mask[:, 1] > 0  # the first turn has two policy tokens at least
        b, n = int(np.flatnonzero(long)[0]), 1
    assert ep.mask[b, n] == 1.0  # the episode goes on after the cut
    msg = (
        f"mask: row {b}: expected the whole episode (to its EOS, turn length or turn cap), "
        f"got a mask that stops at position {n}, mid-episode"
    )
    assert raises(ValueError, lambda: env.check(_cut(ep, b, n))) == msg
    assert raises(ValueError, lambda: action_view(env, _cut(ep, b, n))) == msg


def test_rollout_draws_the_world_from_the_prior_and_the_span_from_p_obs():
    env = _env(prior=[1.0, 0.0], p_obs=[[0.0, 1.0], [1.0, 0.0]], max_turns=3)
    pol = TabularPolicy(np.zeros((env.S, env.V)))  # uniform: every token, calls included
    ro = env.rollout(pol, 64, np.random.default_rng(0))
    assert (ro.world == 0).all() and (ro.log_env == 0.0).all()
    obs = (ro.mask > 0) & (ro.action_mask == 0)
    assert obs.sum() > 20 and set(ro.tokens[obs].tolist()) == {2, 4}  # always spans[1] = (2, 4)


def test_huge_sizes_are_named_with_their_exact_count():
    env, pol, *_ = setup()
    assert raises(ValueError, lambda: env.rollout(pol, 10**12, np.random.default_rng(0))) == (
        "K: expected episodes whose (K, T) arrays are of at most 2**31 entries, got 10000000000000"
    )
    x = np.zeros((2, 1))  # (B, T) = (2, 2**31) is too many entries, though (J, T) would not be
    assert raises(ValueError, lambda: scatter(x, np.zeros((2, 1), np.int64), np.ones((2, 1)), 2**31)) == (
        f"T: expected a width whose (B, T) output is of at most 2**31 entries, got {2**32}"
    )


LONG_CALLS = tuple(range(1, 5)) * 20 + (True,)  # a message cut at 200 characters
LONG_SPAN = tuple([2] * 100 + [9])


@pytest.mark.parametrize(
    "kw, exc, msg",
    [
        (dict(eos=5), ValueError, "eos: expected an integer >= 0 and <= 4, got 5"),
        (dict(eos=-1), ValueError, "eos: expected an integer >= 0 and <= 4, got -1"),
        (dict(eos=1.5), TypeError, "eos: expected an integer, got float 1.5"),
        (dict(V=1), ValueError, "V: expected an integer >= 2, got 1"),
        (dict(V=2.5), TypeError, "V: expected an integer, got float 2.5"),
        (dict(calls=5), TypeError, "calls: expected a sequence of integer token ids, got int"),
        (dict(calls="ab"), TypeError, "calls: expected a sequence of integer token ids, got str"),
        (dict(calls=(7,)), ValueError, "calls: expected token ids in [0, 5), got 7 in (7,)"),
        (dict(calls=(1.5,)), TypeError, "calls: expected integer token ids, got 1.5 in (1.5,)"),
        (
            dict(calls=LONG_CALLS),
            TypeError,
            f"calls: expected integer token ids, got True in {LONG_CALLS!r}"[:200],
        ),
        (
            dict(spans=[LONG_SPAN], p_obs=[[1.0], [1.0]]),
            ValueError,
            f"spans: expected non-empty spans of token ids in [0, 5), got 9 in {LONG_SPAN!r}"[:200],
        ),
        (dict(spans=5), TypeError, "spans: expected a sequence of tuples of token ids, got int"),
        (dict(spans=[5]), TypeError, "spans: expected each span a tuple of token ids, got 5"),
        (dict(spans=[10**300]), TypeError, f"spans: expected each span a tuple of token ids, got {10**300}"[:200]),
        (dict(spans=["ab"]), TypeError, "spans: expected each span a tuple of token ids, got 'ab'"),
        (
            dict(spans=[(2, 3), ()]),
            ValueError,
            "spans: expected non-empty spans of token ids in [0, 5), got an empty span",
        ),
        (
            dict(spans=[(2, 3), (2, 3)]),
            ValueError,
            "spans: expected no span to be a prefix of another, got (2, 3) and (2, 3)",
        ),
        (dict(p_obs=[[0.5, 0.25, 0.25]] * 2), ValueError, "p_obs: expected shape (2, 2), got (2, 3)"),
    ],
)
def test_bad_tokens_calls_and_spans_are_named_exactly(kw, exc, msg):
    assert raises(exc, lambda: _env(**kw)) == msg


def test_the_edges_of_the_vocabulary_are_accepted():
    assert _env(eos=4).eos == 4  # the last token can end the episode
    assert _env(spans=[(0, 3), (2, 4)]).spans == [(0, 3), (2, 4)]  # token 0 in a reply
    two = _env(V=2, eos=0, calls=(1,), spans=[(0,), (1,)])  # the smallest vocabulary
    assert (two.V, two.S, two.T) == (2, 4, 3)


def test_action_view_gathers_exact_arrays_and_keeps_the_id_dtype():
    env, pol, ep, *_ = setup()
    obs = (ep.mask > 0) & (ep.action_mask == 0)
    b = int(np.flatnonzero(obs.any(1))[0])
    one = Episodes(
        *(x[[0]] for x in (ep.states, ep.tokens, ep.mask, ep.action_mask, ep.rewards, ep.world, ep.log_env))
    )
    s, y, m, r, pos = action_view(env, one)  # row 0: EOS at once, one policy token
    assert [a.shape for a in (s, y, m, r, pos)] == [(1, 1)] * 5
    sub = Episodes(
        *(x[[0, b]] for x in (ep.states, ep.tokens, ep.mask, ep.action_mask, ep.rewards, ep.world, ep.log_env))
    )
    s, y, m, r, pos = action_view(env, sub)
    cols = np.flatnonzero(ep.action_mask[b])
    n = cols.size
    assert s.dtype == y.dtype == pos.dtype == np.int64 and m.dtype == r.dtype == np.float64
    assert m.tolist() == [[1.0] + [0.0] * (n - 1), [1.0] * n]
    assert pos.tolist() == [[0] * n, cols.tolist()]
    assert s.tolist() == [[0] * n, ep.states[b, cols].tolist()]
    assert y.tolist() == [[int(ep.tokens[0, 0])] + [0] * (n - 1), ep.tokens[b, cols].tolist()]
    assert r.tolist() == [[float(ep.rewards[0, 0])] + [0.0] * (n - 1), ep.rewards[b, cols].tolist()]


def _wide(V, turn_len=1, max_turns=1, calls=(), M=1, W=1):
    """An environment of V tokens with M one-token replies 2, 3, ...: only the bounds matter."""
    spans = [(2 + m,) for m in range(M)]
    return lambda: _env(
        V=V,
        calls=calls,
        spans=spans,
        p_obs=np.full((W, M), 1 / M),
        prior=np.full(W, 1 / W),
        turn_len=turn_len,
        max_turns=max_turns,
    )


TREE = "expected a tree of at most 2**24 states, got a bound above it (max_turns={}, turn_len={}); " + (
    "the tree is enumerated in full"
)
REWARDS = (
    "expected at most 2**28 (state, token, world) rewards in the tree, got a bound of {} states x {} tokens x {} "
    + ("worlds; the tree is enumerated in full")
)
EPISODE = "expected max_turns * (turn_len + the longest span) <= 900 tokens per episode, got {} * ({} + {})"


@pytest.mark.parametrize(
    "make, msg",
    [
        # one turn of two tokens over 2**24 - 1 continuing tokens: exactly 2**24 prefixes, within the bound
        (_wide(2**24, turn_len=2), "V: " + REWARDS.format(2**24, 2**24, 1)),
        (_wide(2**24, turn_len=3), "turn_len: " + TREE.format(1, 3)),
        (_wide(2**24 + 1, turn_len=2), "turn_len: " + TREE.format(1, 2)),
        # two turns, 4095 replies to one call: (1 + 4095)**2 = 2**24 states at most, within the bound
        (_wide(4097, max_turns=2, calls=(1,), M=4095), "V: " + REWARDS.format(2**24, 4097, 1)),
        (_wide(4098, max_turns=2, calls=(1,), M=4096), "max_turns: " + TREE.format(2, 1)),
        (_wide(1000, W=2**20), "prior: " + REWARDS.format(1, 1000, 2**20)),
        # a call among the tokens: 2**23 - 1 continuing ones, (1 + 2**23) * (1 + 1) = 2**24 states at most
        (_wide(2**23 + 1, turn_len=2, calls=(1,)), "V: " + REWARDS.format(2**24, 2**23 + 1, 1)),
        (_wide(2**23 + 2, turn_len=2, calls=(1,)), "turn_len: " + TREE.format(1, 2)),
        # two calls, two replies of two tokens, two turns of two tokens: 2 * (1 + 8) * (1 + 8) states
        (
            lambda: _env(
                V=4,
                calls=(1, 2),
                spans=[(3, 3), (0, 0)],
                p_obs=np.full((2**19, 2), 0.5),
                prior=np.full(2**19, 2.0**-19),
            ),
            "prior: " + REWARDS.format(162, 4, 2**19),
        ),
        (lambda: _env(V=3, turn_len=450, spans=[(2,), (0,)]), "max_turns: " + EPISODE.format(2, 450, 1)),
        (lambda: _env(V=3, turn_len=1, spans=[(2,) * 450, (0,)]), "max_turns: " + EPISODE.format(2, 1, 450)),
        (
            lambda: _env(V=3, turn_len=1, max_turns=1, spans=[(2,) * 900, (0,)]),
            "turn_len: " + EPISODE.format(1, 1, 900),
        ),
    ],
)
def test_the_bounds_of_the_tree_are_exact(make, msg):
    assert raises(ValueError, make) == msg


def test_an_episode_of_900_tokens_at_most_is_accepted():
    env = _env(V=3, turn_len=1, max_turns=2, spans=[(2,) * 449, (0,)])  # 2 * (1 + 449) = 900
    assert (env.S, env.T) == (452, 451)


def test_the_environment_kind_fixes_S_and_V_for_the_arguments_after_it():
    """What `policy_values(env, probs)` relies on to read `probs` as `(S, V)` (values.py builds its
    declarations with `MULTITURN_MDP` at import, so the kind is made anew here)."""
    from minirl_lm.multiturn.env import _env_kind

    env, *_ = setup()
    dims = {"B": 3}
    assert _env_kind("an environment", "S V")(env, "env", dims) is env
    assert dims == {"B": 3, "S": 364, "V": 5}


def test_a_chance_node_carries_the_loglik_of_the_policy_state_before_the_call():
    env, pol, ep, *_ = setup()
    index = {p: s for s, p in enumerate(env.prefixes)}
    chance = np.flatnonzero(~env.is_policy)
    assert chance.size == 72
    for s in chance:
        parent = index[env.prefixes[s][:-1]]  # the call's state, or the span's chance node before
        assert np.array_equal(env.loglik[s], env.loglik[parent])


def test_the_world_of_an_episode_is_an_integer_id():
    env, pol, ep, *_ = setup()
    ro = env.rollout(pol, 4, np.random.default_rng(0))
    assert ep.world.dtype == ro.world.dtype == np.int64
    assert ep.tokens.dtype == ep.states.dtype == np.int64 and ep.log_env.dtype == np.float64


def test_the_rewards_bound_admits_exactly_2_to_the_28():
    """One turn of two tokens without calls has V states at most, so V**2 (state, token) rewards
    for one world: V = 2**14 is exactly 2**28 and admitted, one more token is refused. The bound is
    read without growing the tree (2**28 rewards would take minutes), so `_enumerable` is called
    directly: no public path reaches this edge in a test's time."""
    from minirl_lm.multiturn.env import _enumerable

    at = lambda V: _enumerable(V, (), [(2,)], np.ones(1), 3, 2)  # noqa: E731
    assert at(2**14) is None
    assert at(2**14 + 1) == "V: " + REWARDS.format(2**14 + 1, 2**14 + 1, 1)
